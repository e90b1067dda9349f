//! The typed Lease path: what electors send and receive, without JSON and without copying
//! whole objects.
//!
//! An elector reads and writes five to seven fields of one Lease, thousands of times a run. Here
//! a request names its Lease and caller by number ([`LeaseRef`], [`UserId`]), carries a
//! [`LeaseSpecC`] (the spec with its strings interned) and gets back a [`LeaseView`]. A Get and
//! the common Update (the caller's resourceVersion is current, its labels unchanged) are served
//! in place: the stored object is edited where it lies, managedFields keep their entries and only
//! the writer's time moves. Everything else — creates, merge patches, an Update of a Lease that
//! is gone, audited servers — is turned into the [`Request`] the generic path takes, so the
//! answer is the generic path's by construction. `server_tests` pins that both paths agree.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::errors::ApiError;
use super::managed_fields::{FieldDiff, LEASE_SPEC_PATHS, fast_renewal, record_update, sync_renewal_time};
use super::microtime::MicroTime;
use super::server::{ApiServer, Body, Object, Request, Stored};
use super::types::{Kind, Lease, LeaseSpec, ObjectMeta, Verb};
use super::validation::validate_lease_spec;
use crate::sym::{Sym, Symbols};
use crate::time::Nanos;

/// A Lease the typed path addresses, by number (see [`ApiServer::lease_ref`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeaseRef(pub u32);

/// A caller of the typed path, by number (see [`ApiServer::user_id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UserId(pub u32);

pub(crate) struct LeaseRefEntry {
    pub(crate) namespace: String,
    pub(crate) name: String,
    /// The record slot of the Lease while it exists.
    pub(crate) slot: Option<usize>,
}

pub type Labels = BTreeMap<String, String>;

/// A Lease spec with its strings interned: what an elector reads and writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeaseSpecC {
    pub holder_identity: Option<Sym>,
    pub lease_duration_seconds: Option<i32>,
    pub acquire_time: Option<MicroTime>,
    pub renew_time: Option<MicroTime>,
    pub lease_transitions: Option<i32>,
    pub strategy: Option<Sym>,
    pub preferred_holder: Option<Sym>,
}

impl LeaseSpecC {
    pub fn of(spec: &LeaseSpec, symbols: &mut Symbols) -> LeaseSpecC {
        LeaseSpecC {
            holder_identity: spec.holder_identity.as_deref().map(|h| symbols.intern(h)),
            lease_duration_seconds: spec.lease_duration_seconds,
            acquire_time: spec.acquire_time,
            renew_time: spec.renew_time,
            lease_transitions: spec.lease_transitions,
            strategy: spec.strategy.as_deref().map(|s| symbols.intern(s)),
            preferred_holder: spec.preferred_holder.as_deref().map(|p| symbols.intern(p)),
        }
    }

    pub fn to_spec(&self, symbols: &Symbols) -> LeaseSpec {
        let text = |s: Option<Sym>| s.map(|s| symbols.name(s).to_string());
        LeaseSpec {
            holder_identity: text(self.holder_identity),
            lease_duration_seconds: self.lease_duration_seconds,
            acquire_time: self.acquire_time,
            renew_time: self.renew_time,
            lease_transitions: self.lease_transitions,
            strategy: text(self.strategy),
            preferred_holder: text(self.preferred_holder),
        }
    }

    /// `lease_diff` as bit masks over [`LEASE_SPEC_PATHS`]: (changed, removed).
    fn diff(&self, before: &LeaseSpecC) -> (u8, u8) {
        fn field<T: PartialEq>(bit: u8, before: &Option<T>, after: &Option<T>, masks: &mut (u8, u8)) {
            match (before, after) {
                (_, Some(a)) if before.as_ref() != Some(a) => masks.0 |= bit,
                (Some(_), None) => masks.1 |= bit,
                _ => {}
            }
        }
        let mut masks = (0, 0);
        field(1, &before.holder_identity, &self.holder_identity, &mut masks);
        field(2, &before.lease_duration_seconds, &self.lease_duration_seconds, &mut masks);
        field(4, &before.acquire_time, &self.acquire_time, &mut masks);
        field(8, &before.renew_time, &self.renew_time, &mut masks);
        field(16, &before.lease_transitions, &self.lease_transitions, &mut masks);
        field(32, &before.strategy, &self.strategy, &mut masks);
        field(64, &before.preferred_holder, &self.preferred_holder, &mut masks);
        masks
    }
}

/// The compact copy of a stored Lease that the typed path reads (kept by every commit).
#[derive(Clone, Debug)]
pub(crate) struct LeaseMirror {
    pub(crate) spec: LeaseSpecC,
    /// `None` when the Lease has no labels.
    pub(crate) labels: Option<Arc<Labels>>,
}

impl LeaseMirror {
    pub(crate) fn of(lease: &Lease, symbols: &mut Symbols) -> LeaseMirror {
        LeaseMirror {
            spec: LeaseSpecC::of(&lease.spec, symbols),
            labels: (!lease.metadata.labels.is_empty()).then(|| Arc::new(lease.metadata.labels.clone())),
        }
    }
}

/// A Lease as a typed response carries it.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseView {
    pub resource_version: u64,
    pub spec: LeaseSpecC,
    pub labels: Option<Arc<Labels>>,
}

/// What a caller of the typed path asks of its Lease.
#[derive(Clone, Debug, PartialEq)]
pub enum LeaseOp {
    Get,
    Create {
        spec: LeaseSpecC,
        labels: Option<Arc<Labels>>,
    },
    /// PUT with the caller's cached resourceVersion and labels.
    Update {
        resource_version: u64,
        spec: LeaseSpecC,
        labels: Option<Arc<Labels>>,
    },
    /// JSON merge patch of the spec (no resourceVersion: last write wins).
    MergePatch {
        spec: LeaseSpecC,
    },
}

impl LeaseOp {
    pub fn verb(&self) -> Verb {
        match self {
            LeaseOp::Get => Verb::Get,
            LeaseOp::Create { .. } => Verb::Create,
            LeaseOp::Update { .. } => Verb::Update,
            LeaseOp::MergePatch { .. } => Verb::Patch,
        }
    }
}

fn same_labels(a: &Option<Arc<Labels>>, b: &Option<Arc<Labels>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => Arc::ptr_eq(x, y) || x == y,
        _ => false,
    }
}

/// Writes `rev` in decimal into `out` (reusing its buffer: no allocation on the renewal path).
fn write_decimal(out: &mut String, mut rev: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (rev % 10) as u8;
        rev /= 10;
        if rev == 0 {
            break;
        }
    }
    out.clear();
    out.push_str(std::str::from_utf8(&digits[i..]).expect("ascii digits"));
}

impl ApiServer {
    /// One typed request of `user` for `lease`, with `field_manager` as the writer's manager.
    pub fn lease_request(
        &mut self,
        now: Nanos,
        lease: LeaseRef,
        user: UserId,
        field_manager: &str,
        op: &LeaseOp,
    ) -> Result<LeaseView, ApiError> {
        if !self.audit_on() {
            match op {
                LeaseOp::Get => return self.typed_get(lease, user),
                LeaseOp::Update { resource_version, spec, labels } => {
                    if let Some(answer) =
                        self.typed_update(now, lease, user, field_manager, *resource_version, spec, labels)
                    {
                        return answer;
                    }
                }
                _ => {}
            }
        }
        let request = self.generic_lease_request(lease, user, field_manager, op);
        match self.handle(now, &request)? {
            Object::Lease(l) => Ok(self.view_of(&l)),
            _ => Err(ApiError::internal("a Lease request answered with another kind")),
        }
    }

    /// The Lease `lease` as the typed path sees it now, if it exists.
    pub fn lease_spec(&self, lease: LeaseRef) -> Option<&LeaseSpecC> {
        let slot = self.lease_refs[lease.0 as usize].slot?;
        self.record_at(slot).lease.as_ref().map(|m| &m.spec)
    }

    /// A typed view of a Lease object (from the generic path).
    pub fn view_of(&mut self, lease: &Lease) -> LeaseView {
        LeaseView {
            resource_version: lease.metadata.resource_version.parse().unwrap_or(0),
            spec: LeaseSpecC::of(&lease.spec, &mut self.symbols),
            labels: (!lease.metadata.labels.is_empty()).then(|| Arc::new(lease.metadata.labels.clone())),
        }
    }

    /// The request the generic path takes for `op` (what a client library would send).
    pub fn generic_lease_request(&self, lease: LeaseRef, user: UserId, field_manager: &str, op: &LeaseOp) -> Request {
        let entry = &self.lease_refs[lease.0 as usize];
        let object = |spec: &LeaseSpecC, resource_version: Option<u64>, labels: &Option<Arc<Labels>>| Lease {
            metadata: ObjectMeta {
                name: entry.name.clone(),
                namespace: entry.namespace.clone(),
                resource_version: resource_version.map(|rv| rv.to_string()).unwrap_or_default(),
                labels: labels.as_deref().cloned().unwrap_or_default(),
                ..Default::default()
            },
            spec: spec.to_spec(&self.symbols),
        };
        let body = match op {
            LeaseOp::Get => Body::None,
            LeaseOp::Create { spec, labels } => Body::Lease(Arc::new(object(spec, None, labels))),
            LeaseOp::Update { resource_version, spec, labels } => {
                Body::Lease(Arc::new(object(spec, Some(*resource_version), labels)))
            }
            LeaseOp::MergePatch { spec } => {
                let spec = serde_json::to_value(spec.to_spec(&self.symbols)).expect("a LeaseSpec always serialises");
                Body::Json(serde_json::json!({ "spec": spec }))
            }
        };
        Request {
            user: self.user(user).clone(),
            verb: op.verb(),
            kind: Kind::Lease,
            namespace: entry.namespace.as_str().into(),
            name: entry.name.as_str().into(),
            body,
            field_manager: Some(field_manager.into()),
            force: false,
        }
    }

    fn forbidden(&self, lease: LeaseRef, user: UserId, verb: &str) -> ApiError {
        let entry = &self.lease_refs[lease.0 as usize];
        ApiError::forbidden(Kind::Lease, &entry.name, &self.user(user).name, verb, &entry.namespace)
    }

    fn typed_get(&mut self, lease: LeaseRef, user: UserId) -> Result<LeaseView, ApiError> {
        if !self.is_authorized_cached(user, "get", lease) {
            return Err(self.forbidden(lease, user, "get"));
        }
        let entry = &self.lease_refs[lease.0 as usize];
        let Some(slot) = entry.slot else { return Err(ApiError::not_found(Kind::Lease, &entry.name)) };
        let record = self.record_at(slot);
        let mirror = record.lease.as_ref().expect("a Lease record has its mirror");
        Ok(LeaseView { resource_version: record.rv, spec: mirror.spec, labels: mirror.labels.clone() })
    }

    /// An Update served in place, or `None` when the generic path must answer (the Lease is
    /// gone, the labels differ, ownership moves in a way the shortcut does not cover).
    #[allow(clippy::too_many_arguments)]
    fn typed_update(
        &mut self,
        now: Nanos,
        lease: LeaseRef,
        user: UserId,
        field_manager: &str,
        resource_version: u64,
        spec: &LeaseSpecC,
        labels: &Option<Arc<Labels>>,
    ) -> Option<Result<LeaseView, ApiError>> {
        if !self.is_authorized_cached(user, "update", lease) {
            return Some(Err(self.forbidden(lease, user, "update")));
        }
        let slot = self.lease_refs[lease.0 as usize].slot?;
        let record = self.record_at(slot);
        let mirror = record.lease.as_ref().expect("a Lease record has its mirror");
        if resource_version != record.rv {
            let name = &self.lease_refs[lease.0 as usize].name;
            return Some(Err(ApiError::optimistic_lock_conflict(Kind::Lease, name)));
        }
        if !same_labels(labels, &mirror.labels) {
            return None;
        }
        let simple = spec.lease_duration_seconds.is_none_or(|d| d > 0)
            && spec.lease_transitions.is_none_or(|t| t >= 0)
            && spec.strategy.is_none()
            && spec.preferred_holder.is_none();
        if !simple {
            let errors = validate_lease_spec(&spec.to_spec(&self.symbols));
            if !errors.is_empty() {
                let name = &self.lease_refs[lease.0 as usize].name;
                return Some(Err(ApiError::invalid(Kind::Lease.group(), Kind::Lease.kind_name(), name, &errors)));
            }
        }
        let (changed, removed) = spec.diff(&mirror.spec);
        if changed == 0 && removed == 0 {
            // apiserver.md §4: a write that changes nothing is not persisted; RV unchanged.
            return Some(Ok(LeaseView {
                resource_version: record.rv,
                spec: mirror.spec,
                labels: mirror.labels.clone(),
            }));
        }
        let manager = if field_manager.is_empty() { "kubectl-replace" } else { field_manager };
        let api_version = Kind::Lease.api_version();
        let wall_secs = self.wall_secs(now);
        self.revision_bump();
        let revision = self.resource_version();
        let symbols = &self.symbols;
        let record = self.records[slot].as_mut().expect("a live slot");
        let renewal = removed == 0 && fast_renewal(&mut record.managers, manager, api_version, changed, wall_secs);
        if !renewal {
            let mut diff = FieldDiff::default();
            for (i, path) in LEASE_SPEC_PATHS.iter().enumerate() {
                if changed & (1 << i) != 0 {
                    diff.changed.insert(path.to_string());
                }
                if removed & (1 << i) != 0 {
                    diff.removed.insert(path.to_string());
                }
            }
            record_update(&mut record.managers, manager, api_version, &diff, wall_secs);
        }
        let Stored::Lease(object) = &mut record.object else { unreachable!("a Lease slot holds a Lease") };
        let object = Arc::make_mut(object);
        write_decimal(&mut object.metadata.resource_version, revision);
        if renewal {
            sync_renewal_time(&mut object.metadata.managed_fields, manager, api_version, wall_secs);
        } else {
            super::managed_fields::sync_managed_fields(&mut object.metadata.managed_fields, &record.managers);
        }
        let text = |s: Option<Sym>| s.map(|s| symbols.name(s).to_string());
        let old = &mut object.spec;
        if (changed | removed) & 1 != 0 {
            old.holder_identity = text(spec.holder_identity);
        }
        old.lease_duration_seconds = spec.lease_duration_seconds;
        old.acquire_time = spec.acquire_time;
        old.renew_time = spec.renew_time;
        old.lease_transitions = spec.lease_transitions;
        if (changed | removed) & 32 != 0 {
            old.strategy = text(spec.strategy);
        }
        if (changed | removed) & 64 != 0 {
            old.preferred_holder = text(spec.preferred_holder);
        }
        record.rv = revision;
        let mirror = record.lease.as_mut().expect("a Lease record has its mirror");
        mirror.spec = *spec;
        Some(Ok(LeaseView { resource_version: revision, spec: *spec, labels: mirror.labels.clone() }))
    }
}
