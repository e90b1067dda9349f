//! The in-memory fake kube-apiserver: Leases, ConfigMaps, RBAC objects; resourceVersion,
//! merge patch, server-side apply with managedFields, RBAC, and the exact error texts and
//! kubectl renderings of `shared/reference/apiserver.md`.
//!
//! **Invariants:** no wall clock (the server's clock is `epoch + true time`), no OS randomness
//! (uids come from a counter), no HashMap whose order reaches an output, no panics on bad input
//! (every malformed request is an [`ApiError`]).

// The contract fixes `Result<Object, ApiError>` with an unboxed `ApiError` (a Status with
// details); errors are the cold path, so its size does not matter.
#![allow(clippy::result_large_err)]

mod access;
mod discovery;
mod errors;
mod go_text;
mod json_patch;
mod kubectl;
mod lease_types;
mod managed_fields;
mod merge_patch;
mod microtime;
pub(crate) mod object;
mod rbac;
mod schema;
mod selectors;
mod semver;
mod server;
mod table;
mod typed;
mod types;
mod validation;

pub use access::ResourceAttributes;
pub use discovery::{
    RESOURCES, Resource, aggregated, api_group_list, api_resource_list, api_versions, resource as served_resource,
    version as version_info,
};
pub use errors::{
    ApiError, FieldError, OPTIMISTIC_LOCK_ERROR_MSG, Reason, StatusCause, StatusDetails, kubectl_apply_conflict_stderr,
};
pub use go_text::{go_json_marshal, go_percent_v, go_quote};
pub use kubectl::{
    kubectl_auth_can_i, kubectl_patched_stdout, kubectl_serverside_applied_stdout, kubectl_yaml, to_json, to_json_bytes,
};
pub use lease_types::{Labels, LeaseOp, LeaseRef, LeaseSpecC, LeaseView, UserId};
pub use managed_fields::{ManagerState, Operation};
pub use merge_patch::merge_patch;
pub use microtime::{MICRO_TIME_LAYOUT, MicroTime, TIME_LAYOUT, Time};
pub use object::{Body, CandidateTime, FieldValidation, FrozenJson, Object, Request, object_json};
pub use rbac::{Attributes, rule_allows};
pub use selectors::{FieldSelector, LabelSelector};
pub use semver::{Version, VersionError, VersionPart};
pub(crate) use server::identical_json_slices;
pub use server::{ApiServer, AuditRecord, Change, ChangeType, typed_body_from_text};
pub use table::{human_duration, table};
pub use typed::QuietLease;
pub use types::{
    ConfigMap, JsonObject, Kind, Lease, LeaseCandidate, LeaseCandidateSpec, LeaseSpec, ManagedFieldsEntry, Namespace,
    ObjectMeta, PolicyRule, Role, RoleBinding, RoleRef, ServiceAccount, Subject, User, Verb,
};
pub use validation::validate_lease_candidate_spec;
pub use validation::{check_label, validate_lease_spec, validate_name};

#[cfg(test)]
mod parity_tests;
#[cfg(test)]
mod server_tests;
