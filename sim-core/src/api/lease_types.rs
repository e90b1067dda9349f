//! The typed Lease path's values: the numbers a Lease and a caller go by, the compact state the
//! server keeps for each Lease it serves in place, and what a typed request carries and its
//! answer returns. The path that serves them is `super::typed`.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::microtime::MicroTime;
use super::types::{Lease, LeaseSpec, Verb};
use crate::sym::{Sym, Symbols};

/// A Lease the typed path addresses, by number (see [`ApiServer::lease_ref`](super::ApiServer::lease_ref)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeaseRef(pub u32);

/// A caller of the typed path, by number (see [`ApiServer::user_id`](super::ApiServer::user_id)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UserId(pub u32);

/// A Lease the typed path addresses: its name, and while it exists its record slot and the
/// compact state the typed path reads and writes (kept together so that a renewal touches one
/// place in memory).
#[derive(Clone)]
pub(crate) struct LeaseRefEntry {
    pub(crate) namespace: String,
    pub(crate) name: String,
    /// The record slot of the Lease while it exists.
    pub(crate) slot: Option<usize>,
    /// Cached RBAC decisions of the Lease's callers.
    pub(crate) authz: AuthzCache,
    /// Set exactly when `slot` is.
    pub(crate) live: Option<LeaseMirror>,
}

/// A few RBAC decisions for one Lease, valid for one RBAC generation (a Lease has a handful of
/// callers; a caller pushed out is asked again). Eight, not four: three electors on a Lease each
/// Get and Update it, and with four slots the six decisions pushed each other out in turn, so
/// every request scanned the namespace's RoleBindings (with one per elector, a scan over the
/// whole fleet per request).
#[derive(Clone, Debug, Default)]
pub(crate) struct AuthzCache {
    generation: u64,
    /// `(user << 8 | verb) + 1` of each decision, 0 for an empty slot: one integer compare a
    /// slot (the lookup is on every request, and comparing tuples of options cost ~45
    /// instructions of it).
    keys: [u64; 8],
    /// Bit `i`: the decision in slot `i` allowed.
    allowed: u8,
    next: u8,
}

impl AuthzCache {
    #[inline]
    fn key(user: UserId, verb: Verb) -> u64 {
        ((u64::from(user.0) << 8) | verb as u64) + 1
    }

    #[inline]
    pub(crate) fn get(&self, user: UserId, verb: Verb, generation: u64) -> Option<bool> {
        if self.generation != generation {
            return None;
        }
        let key = Self::key(user, verb);
        // Keys are unique (a decision is put only after a miss): at most one slot matches.
        // Every slot is compared (a few vector compares), with no branch on which one matched.
        let matches = self.keys.iter().enumerate().fold(0u8, |m, (i, &k)| m | (u8::from(k == key) << i));
        (matches != 0).then_some(self.allowed & matches != 0)
    }

    pub(crate) fn put(&mut self, user: UserId, verb: Verb, allowed: bool, generation: u64) {
        if self.generation != generation {
            *self = AuthzCache { generation, ..Default::default() };
        }
        let slot = usize::from(self.next);
        self.keys[slot] = Self::key(user, verb);
        self.allowed = (self.allowed & !(1 << slot)) | (u8::from(allowed) << slot);
        self.next = ((slot + 1) % self.keys.len()) as u8;
    }
}

/// A renewal the typed path took but has not yet written into the stored object: the
/// resourceVersion, spec and writer's managedFields time are brought up to date (from the
/// record's `rv` and mirror) before anything else reads the object. Renewals are most of all
/// writes, and this way one touches a few words of the record, not the object's strings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingRenewal {
    /// The writer's index in the record's managers.
    pub(super) writer: usize,
    pub(super) time_secs: i64,
}

/// Who renewed last and what the managers owned then, so that the next renewal by the same
/// writer is recognised without comparing names; dropped whenever ownership changes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RenewalHint {
    pub(super) manager: Sym,
    pub(super) writer: usize,
    pub(super) writer_mask: u8,
    pub(super) others_mask: u8,
}

impl RenewalHint {
    /// Whether a write by `manager` changing the fields `changed` is a renewal it recognises:
    /// the same manager, every changed field its own already, none another's.
    pub(super) fn covers(&self, manager: Sym, changed: u8) -> bool {
        self.manager == manager && changed & !self.writer_mask == 0 && changed & self.others_mask == 0
    }
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
    /// Needs no validation: a positive duration, non-negative transitions, no coordinated
    /// fields (the only ways an elector's spec can be invalid).
    pub(super) fn is_simple(&self) -> bool {
        self.lease_duration_seconds.is_none_or(|d| d > 0)
            && self.lease_transitions.is_none_or(|t| t >= 0)
            && self.strategy.is_none()
            && self.preferred_holder.is_none()
    }

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

    /// The renewTime's bit in [`Self::diff`]'s masks.
    pub(super) const RENEW_TIME: u8 = 8;

    /// `lease_diff` as bit masks over `LEASE_SPEC_PATHS` (`managed_fields`): (changed, removed).
    pub(super) fn diff(&self, before: &LeaseSpecC) -> (u8, u8) {
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
        field(Self::RENEW_TIME, &before.renew_time, &self.renew_time, &mut masks);
        field(16, &before.lease_transitions, &self.lease_transitions, &mut masks);
        field(32, &before.strategy, &self.strategy, &mut masks);
        field(64, &before.preferred_holder, &self.preferred_holder, &mut masks);
        masks
    }
}

/// The compact copy of a stored Lease that the typed path reads (rebuilt by every commit, and
/// ahead of the stored object while a renewal is pending).
#[derive(Clone, Debug)]
pub(crate) struct LeaseMirror {
    pub(crate) resource_version: u64,
    pub(crate) spec: LeaseSpecC,
    /// `None` when the Lease has no labels.
    pub(crate) labels: Option<Arc<Labels>>,
    /// `None` when it has no annotations.
    pub(crate) annotations: Option<Arc<Labels>>,
    pub(crate) pending: Option<PendingRenewal>,
    pub(crate) hint: Option<RenewalHint>,
}

impl LeaseMirror {
    pub(crate) fn of(lease: &Lease, resource_version: u64, symbols: &mut Symbols) -> LeaseMirror {
        LeaseMirror {
            resource_version,
            spec: LeaseSpecC::of(&lease.spec, symbols),
            labels: shared(&lease.metadata.labels),
            annotations: shared(&lease.metadata.annotations),
            pending: None,
            hint: None,
        }
    }
}

/// A map of a Lease's metadata as the typed path holds it: shared, `None` when empty.
pub(crate) fn shared(map: &Labels) -> Option<Arc<Labels>> {
    (!map.is_empty()).then(|| Arc::new(map.clone()))
}

/// A Lease as a typed response carries it.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseView {
    pub resource_version: u64,
    pub spec: LeaseSpecC,
    pub labels: Option<Arc<Labels>>,
    /// No elector reads or writes them, but its PUT of the cached Lease sends them back (and a
    /// PUT that recreates a deleted Lease stores them again).
    pub annotations: Option<Arc<Labels>>,
}

impl LeaseView {
    /// Whether dropping it frees nothing (see [`LeaseOp::holds_nothing`]).
    #[inline]
    pub fn holds_nothing(&self) -> bool {
        self.labels.is_none() && self.annotations.is_none()
    }
}

impl LeaseMirror {
    /// A renewal that keeps ownership, written here only: the Lease at `resource_version` with
    /// `spec`, the writer's managedFields time pending for the stored object.
    pub(crate) fn renew(&mut self, resource_version: u64, spec: LeaseSpecC, writer: usize, time_secs: i64) {
        self.resource_version = resource_version;
        self.spec = spec;
        self.pending = Some(PendingRenewal { writer, time_secs });
    }

    /// The Lease as a response carries it, at `resource_version` with `spec`.
    pub(crate) fn view_at(&self, resource_version: u64, spec: LeaseSpecC) -> LeaseView {
        LeaseView { resource_version, spec, labels: self.labels.clone(), annotations: self.annotations.clone() }
    }

    pub(crate) fn view(&self) -> LeaseView {
        self.view_at(self.resource_version, self.spec)
    }
}

/// What a caller of the typed path asks of its Lease.
#[derive(Clone, Debug, PartialEq)]
pub enum LeaseOp {
    Get,
    Create {
        spec: LeaseSpecC,
        labels: Option<Arc<Labels>>,
    },
    /// PUT with the caller's cached resourceVersion, labels and annotations.
    Update {
        resource_version: u64,
        spec: LeaseSpecC,
        labels: Option<Arc<Labels>>,
        annotations: Option<Arc<Labels>>,
    },
    /// JSON merge patch of the spec (no resourceVersion: last write wins).
    MergePatch {
        spec: LeaseSpecC,
    },
    /// A merge patch of the spec as other libraries send it: with the cached resourceVersion
    /// in the body's metadata when there is one (the server then checks it: 409 on a
    /// mismatch), and `null` for the fields in `nulls` (bits as `elector::Fields`: holder,
    /// duration, acquireTime, renewTime, leaseTransitions), which deletes them.
    Patch {
        spec: LeaseSpecC,
        resource_version: Option<u64>,
        nulls: u8,
    },
    /// Server-side apply of a Lease with this spec (absent fields left out), `force`, and the
    /// resourceVersion as a precondition when there is one; `labels` and `annotations` in its
    /// metadata (the cached Lease's, when a library applies that whole: kube-coordinate).
    Apply {
        spec: LeaseSpecC,
        resource_version: Option<u64>,
        force: bool,
        labels: Option<Arc<Labels>>,
        annotations: Option<Arc<Labels>>,
    },
}

impl LeaseOp {
    /// Whether dropping it frees nothing (it holds no labels or annotations): the request
    /// path then overwrites it without calling its drop glue, an out-of-line call a request.
    #[inline]
    pub fn holds_nothing(&self) -> bool {
        match self {
            LeaseOp::Get | LeaseOp::MergePatch { .. } | LeaseOp::Patch { .. } => true,
            LeaseOp::Create { labels, .. } => labels.is_none(),
            LeaseOp::Update { labels, annotations, .. } | LeaseOp::Apply { labels, annotations, .. } => {
                labels.is_none() && annotations.is_none()
            }
        }
    }

    /// Writes `new` over `self`, in place; what held nothing is overwritten without a call to
    /// its drop glue (see [`Self::holds_nothing`]).
    #[inline(always)]
    pub fn overwrite(&mut self, new: LeaseOp) {
        if self.holds_nothing() {
            // The old value owns nothing, so forgetting it leaks nothing.
            std::mem::forget(std::mem::replace(self, new));
        } else {
            *self = new;
        }
    }

    pub fn verb(&self) -> Verb {
        match self {
            LeaseOp::Get => Verb::Get,
            LeaseOp::Create { .. } => Verb::Create,
            LeaseOp::Update { .. } => Verb::Update,
            LeaseOp::MergePatch { .. } | LeaseOp::Patch { .. } => Verb::Patch,
            LeaseOp::Apply { .. } => Verb::Apply,
        }
    }
}
