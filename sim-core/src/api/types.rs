//! The API objects the fake server stores, with serde shaped like the Go structs (field order =
//! Go struct order, empty values omitted) so JSON texts match the real server's (apiserver.md §1).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::microtime::{MicroTime, Time};

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// "" = unset; otherwise the decimal of a u64 (the global revision counter).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Stored and returned as sent (after `labels`, as the apiserver's ObjectMeta orders them);
    /// no elector writes any, but a PUT of a cached object carries them back.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

/// `clone_from` field by field: a copy made into an old one keeps its texts' and managedFields'
/// buffers (a LeaseCandidate's renewal or ping is written into a recycled copy, see
/// `ApiServer::recycle_candidate`). The fields are named so that a new one cannot be forgotten.
impl Clone for ObjectMeta {
    fn clone(&self) -> ObjectMeta {
        let ObjectMeta {
            name,
            namespace,
            uid,
            resource_version,
            creation_timestamp,
            labels,
            annotations,
            managed_fields,
        } = self;
        ObjectMeta {
            name: name.clone(),
            namespace: namespace.clone(),
            uid: uid.clone(),
            resource_version: resource_version.clone(),
            creation_timestamp: *creation_timestamp,
            labels: labels.clone(),
            annotations: annotations.clone(),
            managed_fields: managed_fields.clone(),
        }
    }

    fn clone_from(&mut self, source: &ObjectMeta) {
        let ObjectMeta {
            name,
            namespace,
            uid,
            resource_version,
            creation_timestamp,
            labels,
            annotations,
            managed_fields,
        } = source;
        self.name.clone_from(name);
        self.namespace.clone_from(namespace);
        self.uid.clone_from(uid);
        self.resource_version.clone_from(resource_version);
        self.creation_timestamp = *creation_timestamp;
        // (Nearly always both empty: a comparison of two maps is an iterator over each.)
        if !(self.labels.is_empty() && labels.is_empty()) && self.labels != *labels {
            self.labels.clone_from(labels);
        }
        if !(self.annotations.is_empty() && annotations.is_empty()) && self.annotations != *annotations {
            self.annotations.clone_from(annotations);
        }
        self.managed_fields.clone_from(managed_fields);
    }
}

/// serde's omitempty test for a shared name.
fn str_is_empty(value: &Arc<str>) -> bool {
    value.is_empty()
}

fn is_null(value: &Arc<serde_json::Value>) -> bool {
    value.is_null()
}

/// One `metadata.managedFields` entry. The names are `Arc<str>`: shared, not copied, by every
/// copy of the object's metadata (each write's copy-on-write, each client's copy to send back).
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ManagedFieldsEntry {
    #[serde(skip_serializing_if = "str_is_empty")]
    pub manager: Arc<str>,
    /// `Apply` or `Update`.
    #[serde(skip_serializing_if = "str_is_empty")]
    pub operation: Arc<str>,
    #[serde(skip_serializing_if = "str_is_empty")]
    pub api_version: Arc<str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<Time>,
    /// Always `FieldsV1`.
    #[serde(skip_serializing_if = "str_is_empty")]
    pub fields_type: Arc<str>,
    /// The trie, e.g. `{"f:spec":{"f:holderIdentity":{}}}`.
    /// Shared with the manager state it was rendered from (see `ManagerState`).
    #[serde(rename = "fieldsV1", skip_serializing_if = "is_null")]
    pub fields_v1: Arc<serde_json::Value>,
    #[serde(skip_serializing_if = "str_is_empty")]
    pub subresource: Arc<str>,
}

/// `to` made `from`'s: a clone of it, unless it already is that very one. A copy made into an
/// old version of the same object then moves no reference count (an atomic increment and
/// decrement each, tens of cycles on some cores).
fn share<T: ?Sized>(to: &mut Arc<T>, from: &Arc<T>) {
    if !Arc::ptr_eq(to, from) {
        *to = Arc::clone(from);
    }
}

/// `clone_from` keeps what the old entry already shares with `source` (a recycled copy of the
/// same object: every name and the trie, the time aside).
impl Clone for ManagedFieldsEntry {
    fn clone(&self) -> ManagedFieldsEntry {
        let ManagedFieldsEntry { manager, operation, api_version, time, fields_type, fields_v1, subresource } = self;
        ManagedFieldsEntry {
            manager: Arc::clone(manager),
            operation: Arc::clone(operation),
            api_version: Arc::clone(api_version),
            time: *time,
            fields_type: Arc::clone(fields_type),
            fields_v1: Arc::clone(fields_v1),
            subresource: Arc::clone(subresource),
        }
    }

    fn clone_from(&mut self, source: &ManagedFieldsEntry) {
        let ManagedFieldsEntry { manager, operation, api_version, time, fields_type, fields_v1, subresource } = source;
        share(&mut self.manager, manager);
        share(&mut self.operation, operation);
        share(&mut self.api_version, api_version);
        self.time = *time;
        share(&mut self.fields_type, fields_type);
        share(&mut self.fields_v1, fields_v1);
        share(&mut self.subresource, subresource);
    }
}

/// `coordination.k8s.io/v1` LeaseSpec; every field optional (Go pointers with omitempty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LeaseSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder_identity: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_duration_seconds: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acquire_time: Option<MicroTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<MicroTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_transitions: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preferred_holder: Option<String>,
}

/// A Lease. `apiVersion`/`kind` are added on the wire by [`super::to_json`]; they are not fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Lease {
    pub metadata: ObjectMeta,
    pub spec: LeaseSpec,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConfigMap {
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Namespace {
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "NamespaceSpec::is_empty")]
    pub spec: NamespaceSpec,
    #[serde(skip_serializing_if = "NamespaceStatus::is_empty")]
    pub status: NamespaceStatus,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NamespaceSpec {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
}

impl NamespaceSpec {
    fn is_empty(&self) -> bool {
        self.finalizers.is_empty()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NamespaceStatus {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub phase: String,
}

impl NamespaceStatus {
    fn is_empty(&self) -> bool {
        self.phase.is_empty()
    }
}

impl Namespace {
    /// What the namespace registry adds on create: the `kubernetes.io/metadata.name` label
    /// (owned by the creator, it is in the object the field manager sees), and, after the
    /// managed fields are taken, the `kubernetes` finalizer and phase `Active` (owned by no one).
    pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

    pub fn set_server_defaults(&mut self) {
        self.spec.finalizers = vec!["kubernetes".to_string()];
        self.status.phase = "Active".to_string();
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServiceAccount {
    pub metadata: ObjectMeta,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Role {
    pub metadata: ObjectMeta,
    /// Go's `Rules []PolicyRule json:"rules"` has no omitempty: emitted even when empty (as null
    /// in Go; we emit `[]`).
    pub rules: Vec<PolicyRule>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RoleRef {
    pub api_group: String,
    pub kind: String,
    pub name: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RoleBinding {
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<Subject>,
    pub role_ref: RoleRef,
}

/// `coordination.k8s.io/v1beta1` LeaseCandidateSpec as the server decodes a body into it and
/// encodes it again (kubernetes/api@10b39a39 `coordination/v1beta1/types.go:116-153`): its
/// fields in that order, `leaseName` and `binaryVersion` always written, the others omitted
/// when empty; the times are `metav1.MicroTime` (a text that does not parse is the decode
/// error the Lease's times give); unknown fields are dropped. The texts are shared: a
/// candidate's renewal and the controller's ping copy the object to set one time.
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LeaseCandidateSpec {
    pub lease_name: Arc<str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ping_time: Option<MicroTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<MicroTime>,
    pub binary_version: Arc<str>,
    #[serde(skip_serializing_if = "str_is_empty")]
    pub emulation_version: Arc<str>,
    #[serde(skip_serializing_if = "str_is_empty")]
    pub strategy: Arc<str>,
}

impl Clone for LeaseCandidateSpec {
    fn clone(&self) -> LeaseCandidateSpec {
        let LeaseCandidateSpec { lease_name, ping_time, renew_time, binary_version, emulation_version, strategy } =
            self;
        LeaseCandidateSpec {
            lease_name: Arc::clone(lease_name),
            ping_time: *ping_time,
            renew_time: *renew_time,
            binary_version: Arc::clone(binary_version),
            emulation_version: Arc::clone(emulation_version),
            strategy: Arc::clone(strategy),
        }
    }

    fn clone_from(&mut self, source: &LeaseCandidateSpec) {
        let LeaseCandidateSpec { lease_name, ping_time, renew_time, binary_version, emulation_version, strategy } =
            source;
        share(&mut self.lease_name, lease_name);
        self.ping_time = *ping_time;
        self.renew_time = *renew_time;
        share(&mut self.binary_version, binary_version);
        share(&mut self.emulation_version, emulation_version);
        share(&mut self.strategy, strategy);
    }
}

impl LeaseCandidateSpec {
    /// The same texts (leaseName, versions, strategy) as `other`: shared, or equal.
    pub fn same_texts(&self, other: &LeaseCandidateSpec) -> bool {
        let same = |a: &Arc<str>, b: &Arc<str>| Arc::ptr_eq(a, b) || a == b;
        same(&self.lease_name, &other.lease_name)
            && same(&self.binary_version, &other.binary_version)
            && same(&self.emulation_version, &other.emulation_version)
            && same(&self.strategy, &other.strategy)
    }
}

/// A `coordination.k8s.io/v1beta1` LeaseCandidate, typed as the server stores it (its Go type:
/// TypeMeta, ObjectMeta, Spec; any other field of a body is dropped on decode). `apiVersion`
/// and `kind` are added on the wire by [`super::to_json`].
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeaseCandidate {
    pub metadata: ObjectMeta,
    pub spec: LeaseCandidateSpec,
}

/// `clone_from` keeps the old copy's buffers (see [`ObjectMeta`]'s); the fields are named.
impl Clone for LeaseCandidate {
    fn clone(&self) -> LeaseCandidate {
        let LeaseCandidate { metadata, spec } = self;
        LeaseCandidate { metadata: metadata.clone(), spec: spec.clone() }
    }

    fn clone_from(&mut self, source: &LeaseCandidate) {
        let LeaseCandidate { metadata, spec } = source;
        self.metadata.clone_from(metadata);
        self.spec.clone_from(spec);
    }
}

/// An object the server keeps as JSON beyond its metadata (core/v1 Events): fields after
/// `metadata` in their order, as the client sent them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JsonObject {
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Shared: the server's copy-on-write of an object for its metadata (a write's
    /// resourceVersion, uid, managedFields) copies the metadata alone, not the fields.
    #[serde(flatten)]
    pub rest: std::sync::Arc<serde_json::Map<String, serde_json::Value>>,
}

/// An authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct User {
    pub name: String,
    /// Shared: the server keeps one list for every caller with the same groups (a fleet's
    /// electors in one namespace all have the same three).
    pub groups: Arc<[String]>,
}

impl User {
    /// `system:serviceaccount:<ns>:<name>` with its three groups (apiserver.md §6).
    pub fn service_account(ns: &str, name: &str) -> User {
        User {
            name: format!("system:serviceaccount:{ns}:{name}"),
            groups: Arc::from([
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{ns}"),
                "system:authenticated".to_string(),
            ]),
        }
    }

    /// The kubeadm admin: member of `system:masters`, which is always allowed.
    pub fn admin() -> User {
        User {
            name: "kubernetes-admin".to_string(),
            groups: Arc::from(["system:masters".to_string(), "system:authenticated".to_string()]),
        }
    }

    /// Any other named user, in `system:authenticated`.
    pub fn named(name: &str) -> User {
        User { name: name.to_string(), groups: Arc::from(["system:authenticated".to_string()]) }
    }

    pub fn is_system_master(&self) -> bool {
        self.groups.iter().any(|g| g == "system:masters")
    }
}

/// The resource kinds the fake server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Lease,
    ConfigMap,
    Namespace,
    ServiceAccount,
    Role,
    RoleBinding,
    Event,
    LeaseCandidate,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Lease,
        Kind::ConfigMap,
        Kind::Namespace,
        Kind::ServiceAccount,
        Kind::Role,
        Kind::RoleBinding,
        Kind::Event,
        Kind::LeaseCandidate,
    ];

    /// Kept as JSON beyond the metadata ([`JsonObject`]).
    pub fn is_json(self) -> bool {
        matches!(self, Kind::Event | Kind::LeaseCandidate)
    }

    /// The plural resource name (`leases`).
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Lease => "leases",
            Kind::ConfigMap => "configmaps",
            Kind::Namespace => "namespaces",
            Kind::ServiceAccount => "serviceaccounts",
            Kind::Role => "roles",
            Kind::RoleBinding => "rolebindings",
            Kind::Event => "events",
            Kind::LeaseCandidate => "leasecandidates",
        }
    }

    /// The API group (`""` for core).
    pub fn group(self) -> &'static str {
        match self {
            Kind::Lease | Kind::LeaseCandidate => "coordination.k8s.io",
            Kind::ConfigMap | Kind::Namespace | Kind::ServiceAccount | Kind::Event => "",
            Kind::Role | Kind::RoleBinding => "rbac.authorization.k8s.io",
        }
    }

    /// `GroupResource.String()`: `resource` for core, `resource.group` otherwise (apiserver.md §3).
    pub fn group_resource(self) -> &'static str {
        match self {
            Kind::Lease => "leases.coordination.k8s.io",
            Kind::ConfigMap => "configmaps",
            Kind::Namespace => "namespaces",
            Kind::ServiceAccount => "serviceaccounts",
            Kind::Role => "roles.rbac.authorization.k8s.io",
            Kind::RoleBinding => "rolebindings.rbac.authorization.k8s.io",
            Kind::Event => "events",
            Kind::LeaseCandidate => "leasecandidates.coordination.k8s.io",
        }
    }

    /// The `kind` on the wire (`Lease`).
    pub fn kind_name(self) -> &'static str {
        match self {
            Kind::Lease => "Lease",
            Kind::ConfigMap => "ConfigMap",
            Kind::Namespace => "Namespace",
            Kind::ServiceAccount => "ServiceAccount",
            Kind::Role => "Role",
            Kind::RoleBinding => "RoleBinding",
            Kind::Event => "Event",
            Kind::LeaseCandidate => "LeaseCandidate",
        }
    }

    /// `GroupKind.String()`: `Lease.coordination.k8s.io`, `ConfigMap`.
    pub fn group_kind(self) -> String {
        if self.group().is_empty() {
            self.kind_name().to_string()
        } else {
            format!("{}.{}", self.kind_name(), self.group())
        }
    }

    /// The `apiVersion` on the wire (`coordination.k8s.io/v1`, `v1`).
    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Lease => "coordination.k8s.io/v1",
            Kind::LeaseCandidate => "coordination.k8s.io/v1beta1",
            Kind::ConfigMap | Kind::Namespace | Kind::ServiceAccount | Kind::Event => "v1",
            Kind::Role | Kind::RoleBinding => "rbac.authorization.k8s.io/v1",
        }
    }

    /// `kubectl`'s singular resource name (`lease.coordination.k8s.io/NAME patched`).
    pub fn kubectl_singular(self) -> &'static str {
        match self {
            Kind::Lease => "lease.coordination.k8s.io",
            Kind::ConfigMap => "configmap",
            Kind::Namespace => "namespace",
            Kind::ServiceAccount => "serviceaccount",
            Kind::Role => "role.rbac.authorization.k8s.io",
            Kind::RoleBinding => "rolebinding.rbac.authorization.k8s.io",
            Kind::Event => "event",
            Kind::LeaseCandidate => "leasecandidate.coordination.k8s.io",
        }
    }

    pub fn is_namespaced(self) -> bool {
        !matches!(self, Kind::Namespace)
    }

    /// What `kubectl` accepts as a resource argument: singular, plural, short name, `plural.group`.
    pub fn parse(s: &str) -> Option<Kind> {
        let lower = s.to_ascii_lowercase();
        Kind::ALL.into_iter().find(|kind| {
            let singular = kind.kind_name().to_ascii_lowercase();
            let short = match kind {
                Kind::ConfigMap => "cm",
                Kind::Namespace => "ns",
                Kind::ServiceAccount => "sa",
                Kind::Event => "ev",
                _ => "",
            };
            lower == singular
                || lower == kind.resource()
                || (!short.is_empty() && lower == short)
                || lower == kind.group_resource()
                || lower == format!("{singular}.{}", kind.group())
                || lower == kind.kind_name()
        })
    }

    /// The kind named by a body's `kind` field (`Lease`).
    pub fn from_kind_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.kind_name() == name)
    }
}

/// Request verbs. `Apply` is a PATCH with `application/apply-patch+yaml`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    Get,
    List,
    Create,
    Update,
    Delete,
    Patch,
    Apply,
}

impl Verb {
    /// The RBAC verb: apply is authorised as `patch` (it is an HTTP PATCH).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Apply => "patch",
            other => other.name(),
        }
    }

    /// The verb as scenarios, traces and metrics write it (`apply` apart from `patch`): what
    /// [`Verb::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Delete => "delete",
            Verb::Patch => "patch",
            Verb::Apply => "apply",
        }
    }

    /// A verb as scenarios write it (`apply` for server-side apply).
    pub fn parse(text: &str) -> Option<Verb> {
        match text {
            "get" => Some(Verb::Get),
            "list" => Some(Verb::List),
            "create" => Some(Verb::Create),
            "update" => Some(Verb::Update),
            "delete" => Some(Verb::Delete),
            "patch" => Some(Verb::Patch),
            "apply" => Some(Verb::Apply),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_spec_serialises_in_go_struct_order_and_omits_unset_fields() {
        let spec = LeaseSpec {
            holder_identity: Some("a".into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime::from_unix_micros(1_767_225_600_000_000)),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        };
        assert_eq!(
            serde_json::to_string(&spec).unwrap(),
            r#"{"holderIdentity":"a","leaseDurationSeconds":15,"renewTime":"2026-01-01T00:00:00.000000Z","leaseTransitions":0}"#
        );
    }

    #[test]
    fn kind_parse_accepts_what_kubectl_accepts() {
        for s in ["lease", "leases", "leases.coordination.k8s.io", "Lease", "lease.coordination.k8s.io"] {
            assert_eq!(Kind::parse(s), Some(Kind::Lease), "{s}");
        }
        assert_eq!(Kind::parse("cm"), Some(Kind::ConfigMap));
        assert_eq!(Kind::parse("configmaps"), Some(Kind::ConfigMap));
        assert_eq!(Kind::parse("sa"), Some(Kind::ServiceAccount));
        assert_eq!(Kind::parse("pods"), None);
        assert_eq!(Kind::Role.group_kind(), "Role.rbac.authorization.k8s.io");
        assert_eq!(Kind::ConfigMap.group_kind(), "ConfigMap");
    }

    #[test]
    fn service_account_users_carry_their_three_groups() {
        let u = User::service_account("ns1", "elector");
        assert_eq!(u.name, "system:serviceaccount:ns1:elector");
        assert_eq!(*u.groups, ["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"]);
        assert!(User::admin().is_system_master());
    }
}
