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
//! The values it takes and returns are in `super::lease_types`.

use std::sync::Arc;

use super::errors::ApiError;
use super::lease_types::{Labels, LeaseMirror, LeaseOp, LeaseRef, LeaseSpecC, LeaseView, RenewalHint, UserId, shared};
use super::managed_fields::{FieldDiff, LEASE_SPEC_PATHS, record_update, renewal_writer, sync_renewal_time};
use super::microtime::MicroTime;
use super::object::{Body, FieldValidation, Object, Request, Stored};
use super::server::ApiServer;
use super::types::{Kind, Lease, LeaseSpec, ObjectMeta, Verb};
use super::validation::validate_lease_spec;
use crate::sym::{Sym, Symbols};
use crate::time::Nanos;

/// Two of a Lease's metadata maps (labels, annotations) as the typed path holds them.
fn same_map(a: &Option<Arc<Labels>>, b: &Option<Arc<Labels>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => Arc::ptr_eq(x, y) || x == y,
        _ => false,
    }
}

/// Writes `rev` in decimal into `out` (reusing its buffer: no allocation on the renewal path).
pub(super) fn write_decimal(out: &mut String, rev: u64) {
    out.clear();
    out.push_str(crate::digits::decimal(rev, &mut [0; 20]));
}

impl ApiServer {
    /// One typed request of `user` for `lease`, with `field_manager` (interned) as the writer's
    /// manager.
    pub fn lease_request(
        &mut self,
        now: Nanos,
        lease: LeaseRef,
        user: UserId,
        field_manager: Sym,
        op: &LeaseOp,
    ) -> Result<LeaseView, ApiError> {
        match self.typed(now, lease, user, field_manager, op) {
            Some(Ok(())) => Ok(self.live_view(lease)),
            Some(Err(e)) => Err(e),
            None => self.generic(now, lease, user, field_manager, op),
        }
    }

    /// [`Self::lease_request`] with the Lease of its answer written into `answer` (the slot of
    /// the message the answer goes back in), and only the status code of an error kept. A view
    /// returned by value was copied into the slot by 16-byte loads of the narrower stores that
    /// had just built it, which cannot be forwarded and wait for them to drain: a third of an
    /// arrival's time. Here it is copied from the server's mirror of the Lease, straight in.
    #[inline(always)]
    pub fn lease_request_into(
        &mut self,
        now: Nanos,
        lease: LeaseRef,
        user: UserId,
        field_manager: Sym,
        op: &LeaseOp,
        answer: &mut Result<LeaseView, u16>,
    ) -> Result<(), u16> {
        let outcome = match self.typed(now, lease, user, field_manager, op) {
            Some(Ok(())) => {
                let live = self.lease_refs[lease.0 as usize].live.as_ref().expect("a Lease answered is live");
                *answer = Ok(live.view());
                return Ok(());
            }
            Some(Err(e)) => Err(e),
            None => self.generic(now, lease, user, field_manager, op),
        };
        match outcome {
            Ok(view) => {
                *answer = Ok(view);
                Ok(())
            }
            Err(e) => {
                *answer = Err(e.code);
                Err(e.code)
            }
        }
    }

    /// A Get or a common Update served in place: `Ok` when the Lease as the server now holds it
    /// is the answer; `None` when the generic path must answer.
    #[inline(always)]
    fn typed(
        &mut self,
        now: Nanos,
        lease: LeaseRef,
        user: UserId,
        field_manager: Sym,
        op: &LeaseOp,
    ) -> Option<Result<(), ApiError>> {
        if self.audit_on() || self.changes_on() {
            return None;
        }
        match op {
            LeaseOp::Get => Some(self.typed_get(lease, user)),
            LeaseOp::Update { resource_version, spec, labels, annotations } => {
                self.typed_update(now, lease, user, field_manager, *resource_version, spec, (labels, annotations))
            }
            _ => None,
        }
    }

    /// The request `op` through the generic path, as a client would send it.
    fn generic(
        &mut self,
        now: Nanos,
        lease: LeaseRef,
        user: UserId,
        field_manager: Sym,
        op: &LeaseOp,
    ) -> Result<LeaseView, ApiError> {
        let request = self.generic_lease_request(lease, user, field_manager, op);
        match self.handle(now, &request)? {
            Object::Lease(l) => Ok(self.view_of(&l)),
            _ => Err(ApiError::internal("a Lease request answered with another kind")),
        }
    }

    /// The live Lease `lease` as an answer carries it.
    fn live_view(&self, lease: LeaseRef) -> LeaseView {
        self.lease_refs[lease.0 as usize].live.as_ref().expect("a Lease answered is live").view()
    }

    /// A hint that `lease` is about to be asked for (see `World::prefetch_next`).
    pub fn prefetch_lease(&self, lease: LeaseRef) {
        crate::prefetch::prefetch(&self.lease_refs[lease.0 as usize]);
    }

    /// The Lease `lease` as a Get would answer it now, if it exists (a watch event's content).
    pub fn lease_view(&self, lease: LeaseRef) -> Option<LeaseView> {
        self.lease_refs[lease.0 as usize].live.as_ref().map(LeaseMirror::view)
    }

    /// The Lease `lease` as the typed path sees it now, if it exists.
    pub fn lease_spec(&self, lease: LeaseRef) -> Option<&LeaseSpecC> {
        self.lease_refs[lease.0 as usize].live.as_ref().map(|m| &m.spec)
    }

    /// A typed view of a Lease object (from the generic path).
    pub fn view_of(&mut self, lease: &Lease) -> LeaseView {
        LeaseView {
            resource_version: lease.metadata.resource_version.parse().unwrap_or(0),
            spec: LeaseSpecC::of(&lease.spec, &mut self.symbols),
            labels: shared(&lease.metadata.labels),
            annotations: shared(&lease.metadata.annotations),
        }
    }

    /// The request the generic path takes for `op` (what a client library would send).
    pub fn generic_lease_request(&self, lease: LeaseRef, user: UserId, field_manager: Sym, op: &LeaseOp) -> Request {
        let entry = &self.lease_refs[lease.0 as usize];
        let object = |spec: &LeaseSpecC,
                      resource_version: Option<u64>,
                      labels: &Option<Arc<Labels>>,
                      annotations: &Option<Arc<Labels>>| Lease {
            metadata: ObjectMeta {
                name: entry.name.clone(),
                namespace: entry.namespace.clone(),
                resource_version: resource_version.map(|rv| rv.to_string()).unwrap_or_default(),
                labels: labels.as_deref().cloned().unwrap_or_default(),
                annotations: annotations.as_deref().cloned().unwrap_or_default(),
                ..Default::default()
            },
            spec: spec.to_spec(&self.symbols),
        };
        let body = match op {
            LeaseOp::Get => Body::None,
            LeaseOp::Create { spec, labels } => Body::Lease(Arc::new(object(spec, None, labels, &None))),
            // A PUT sends the cached object with its spec (and labels) edited.
            LeaseOp::Update { resource_version, spec, labels, annotations } => {
                Body::Lease(Arc::new(object(spec, Some(*resource_version), labels, annotations)))
            }
            LeaseOp::MergePatch { spec } => {
                let spec = serde_json::to_value(spec.to_spec(&self.symbols)).expect("a LeaseSpec always serialises");
                Body::Json(serde_json::json!({ "spec": spec }))
            }
            LeaseOp::Patch { spec, resource_version, nulls } => {
                let mut spec =
                    serde_json::to_value(spec.to_spec(&self.symbols)).expect("a LeaseSpec always serialises");
                let keys = ["holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions"];
                for (bit, key) in keys.iter().enumerate() {
                    if nulls & (1 << bit) != 0 {
                        spec[*key] = serde_json::Value::Null;
                    }
                }
                let mut body = serde_json::json!({ "spec": spec });
                if let Some(rv) = resource_version {
                    body["metadata"] = serde_json::json!({ "resourceVersion": rv.to_string() });
                }
                Body::Json(body)
            }
            LeaseOp::Apply { spec, resource_version, labels, annotations, .. } => {
                Body::Lease(Arc::new(object(spec, *resource_version, labels, annotations)))
            }
        };
        Request {
            user: self.user(user).clone(),
            verb: op.verb(),
            kind: Kind::Lease,
            namespace: entry.namespace.as_str().into(),
            name: entry.name.as_str().into(),
            body,
            field_manager: Some(self.symbols.name(field_manager).as_ref().into()),
            force: matches!(op, LeaseOp::Apply { force: true, .. }),
            field_validation: FieldValidation::Ignore,
        }
    }

    fn forbidden(&self, lease: LeaseRef, user: UserId, verb: &str) -> ApiError {
        let entry = &self.lease_refs[lease.0 as usize];
        ApiError::forbidden(Kind::Lease, &entry.name, &self.user(user).name, verb, &entry.namespace)
    }

    /// A Get: `Ok` when the caller may read the Lease and it exists (the answer is its mirror).
    fn typed_get(&mut self, lease: LeaseRef, user: UserId) -> Result<(), ApiError> {
        if !self.is_authorized_cached(user, Verb::Get, lease) {
            return Err(self.forbidden(lease, user, "get"));
        }
        let entry = &self.lease_refs[lease.0 as usize];
        match &entry.live {
            Some(_) => Ok(()),
            None => Err(ApiError::not_found(Kind::Lease, &entry.name)),
        }
    }

    /// An Update served in place (`Ok`: the Lease's mirror is now the answer), or `None` when
    /// the generic path must answer (the Lease is gone, the labels differ).
    #[allow(clippy::too_many_arguments)]
    fn typed_update(
        &mut self,
        now: Nanos,
        lease: LeaseRef,
        user: UserId,
        field_manager: Sym,
        resource_version: u64,
        spec: &LeaseSpecC,
        (labels, annotations): (&Option<Arc<Labels>>, &Option<Arc<Labels>>),
    ) -> Option<Result<(), ApiError>> {
        if !self.is_authorized_cached(user, Verb::Update, lease) {
            return Some(Err(self.forbidden(lease, user, "update")));
        }
        let index = lease.0 as usize;
        let slot = self.lease_refs[index].slot?;
        let live = self.lease_refs[index].live.as_ref().expect("a live Lease has its mirror");
        if resource_version != live.resource_version {
            let name = &self.lease_refs[index].name;
            return Some(Err(ApiError::optimistic_lock_conflict(Kind::Lease, name)));
        }
        if !same_map(labels, &live.labels) || !same_map(annotations, &live.annotations) {
            return None;
        }
        if !spec.is_simple() {
            let errors = validate_lease_spec(&spec.to_spec(&self.symbols));
            if !errors.is_empty() {
                let name = &self.lease_refs[index].name;
                return Some(Err(ApiError::invalid(Kind::Lease.group(), Kind::Lease.kind_name(), name, &errors)));
            }
        }
        let (changed, removed) = spec.diff(&live.spec);
        if changed == 0 && removed == 0 {
            // apiserver.md §4: a write that changes nothing is not persisted; RV unchanged.
            return Some(Ok(()));
        }
        let wall_secs = self.wall_secs(now);
        let api_version = Kind::Lease.api_version();
        // A renewal: the writer owns every changed field already, nobody else owns any, nothing
        // goes away. Ownership stays; only the writer's time moves, and that is written later.
        let hinted = live.hint.filter(|h| h.covers(field_manager, changed));
        let manager: &str = match &**self.symbols.name(field_manager) {
            "" => "kubectl-replace",
            name => name,
        };
        let (writer, hint) = match (removed, hinted) {
            (0, Some(h)) => (Some(h.writer), None),
            (0, None) => match renewal_writer(&self.record_at(slot).managers, manager, api_version, changed) {
                Some((writer, writer_mask, others_mask)) => {
                    (Some(writer), Some(RenewalHint { manager: field_manager, writer, writer_mask, others_mask }))
                }
                None => (None, None),
            },
            _ => (None, None),
        };
        let manager = if writer.is_none() { manager.to_string() } else { String::new() };
        if let Some(writer) = writer {
            if live.pending.is_some_and(|p| p.writer != writer) {
                self.materialize(lease);
            }
            self.revision_bump();
            let revision = self.resource_version();
            let live = self.lease_refs[index].live.as_mut().expect("a live Lease has its mirror");
            if hint.is_some() {
                live.hint = hint;
            }
            live.renew(revision, *spec, writer, wall_secs);
            return Some(Ok(()));
        }
        // Ownership moves: written through now.
        self.materialize(lease);
        self.revision_bump();
        let revision = self.resource_version();
        let symbols = &self.symbols;
        let record = self.records[slot].as_mut().expect("a live slot");
        let mut diff = FieldDiff::default();
        for (i, path) in LEASE_SPEC_PATHS.iter().enumerate() {
            if changed & (1 << i) != 0 {
                diff.changed.insert(path.to_string());
            }
            if removed & (1 << i) != 0 {
                diff.removed.insert(path.to_string());
            }
        }
        record_update(Arc::make_mut(&mut record.managers), &manager, api_version, &diff, wall_secs);
        record.rv = revision;
        let Stored::Lease(object) = &mut record.object else { unreachable!("a Lease slot holds a Lease") };
        let object = Arc::make_mut(object);
        write_decimal(&mut object.metadata.resource_version, revision);
        super::managed_fields::sync_managed_fields(&mut object.metadata.managed_fields, &record.managers);
        write_spec(&mut object.spec, spec, symbols);
        let live = self.lease_refs[index].live.as_mut().expect("a live Lease has its mirror");
        live.resource_version = revision;
        live.spec = *spec;
        live.hint = None;
        Some(Ok(()))
    }

    /// Writes a pending renewal of `lease` into the stored object.
    pub(crate) fn materialize(&mut self, lease: LeaseRef) {
        let entry = &mut self.lease_refs[lease.0 as usize];
        let (Some(slot), Some(live)) = (entry.slot, entry.live.as_mut()) else { return };
        let Some(pending) = live.pending.take() else { return };
        let record = self.records[slot].as_mut().expect("a live slot");
        let writer = &mut Arc::make_mut(&mut record.managers)[pending.writer];
        writer.time_secs = pending.time_secs;
        record.rv = live.resource_version;
        let Stored::Lease(object) = &mut record.object else { unreachable!("a Lease slot holds a Lease") };
        let object = Arc::make_mut(object);
        write_decimal(&mut object.metadata.resource_version, record.rv);
        let api_version = Kind::Lease.api_version();
        sync_renewal_time(&mut object.metadata.managed_fields, &writer.manager, api_version, pending.time_secs);
        write_spec(&mut object.spec, &live.spec, &self.symbols);
    }

    /// Brings the stored Lease `ns/name` up to date before the generic path reads it.
    pub(crate) fn materialize_named(&mut self, ns: &str, name: &str) {
        if let Some(lease) = self.slot_of(Kind::Lease, ns, name).and_then(|slot| self.record_at(slot).lease_ref) {
            self.materialize(lease);
        }
    }

    /// Brings every stored Lease of `ns` (all namespaces if empty) up to date.
    pub(crate) fn materialize_all(&mut self, ns: &str) {
        let leases: Vec<LeaseRef> = self
            .store
            .get(&Kind::Lease)
            .into_iter()
            .flat_map(|by_ns| by_ns.iter())
            .filter(|(record_ns, _)| ns.is_empty() || record_ns.as_str() == ns)
            .flat_map(|(_, by_name)| by_name.values())
            .filter_map(|&slot| self.record_at(slot).lease_ref)
            .collect();
        for lease in leases {
            self.materialize(lease);
        }
    }
}

/// Writes a compact spec into a stored one, allocating only for strings that changed.
fn write_spec(out: &mut LeaseSpec, spec: &LeaseSpecC, symbols: &Symbols) {
    fn text(out: &mut Option<String>, sym: Option<Sym>, symbols: &Symbols) {
        match sym {
            None => *out = None,
            Some(sym) => {
                let name = symbols.name(sym);
                if out.as_deref() != Some(&**name) {
                    *out = Some(name.to_string());
                }
            }
        }
    }
    text(&mut out.holder_identity, spec.holder_identity, symbols);
    out.lease_duration_seconds = spec.lease_duration_seconds;
    out.acquire_time = spec.acquire_time;
    out.renew_time = spec.renew_time;
    out.lease_transitions = spec.lease_transitions;
    text(&mut out.strategy, spec.strategy, symbols);
    text(&mut out.preferred_holder, spec.preferred_holder, symbols);
}

/// A Lease as a quiet stretch sees it (see `world/quiet.rs`): what a Get would answer at each
/// moment, while only its holder renews it through [`ApiServer::quiet_renewal`]. Nothing of
/// the server is changed through it; the stretch then writes what its kept renewals leave
/// through [`ApiServer::quiet_commit`].
#[derive(Clone, Debug)]
pub struct QuietLease {
    /// The server's revision counter (only this Lease is written in a stretch).
    pub revision: u64,
    /// The Lease as a Get answers it now.
    pub view: LeaseView,
    /// The writer of the renewal that waits to be written into the stored object.
    pending_writer: Option<usize>,
}

impl ApiServer {
    /// The Lease `lease` as a quiet stretch starts from, if the typed path serves it (it exists,
    /// no audit, no change log) and `readers` may all Get it by the decisions the server has
    /// already cached (a stretch makes no new one).
    pub fn quiet_lease(&self, lease: LeaseRef, readers: &[UserId]) -> Option<QuietLease> {
        if self.audit_on() || self.changes_on() {
            return None;
        }
        let entry = &self.lease_refs[lease.0 as usize];
        entry.slot?;
        let live = entry.live.as_ref()?;
        let generation = self.rbac_generation;
        if !readers.iter().all(|&user| entry.authz.get(user, Verb::Get, generation) == Some(true)) {
            return None;
        }
        Some(QuietLease {
            revision: self.resource_version(),
            view: live.view(),
            pending_writer: live.pending.map(|p| p.writer),
        })
    }

    /// Whether the Update `op` of `user` would be served as a plain renewal by `typed_update`
    /// (allowed by a cached decision, the current resourceVersion, the same labels and
    /// annotations, a simple spec, its changes all the renewing manager's own, recognised by
    /// the Lease's hint, no other writer's renewal pending): then `state` moves as the server
    /// would (one revision, the new spec) and `Some` is returned, `Some(true)` when the write
    /// changed the renewTime alone (see [`Self::quiet_renewal_again`]). `None` changes nothing:
    /// the stretch ends before this renewal.
    pub fn quiet_renewal(
        &self,
        lease: LeaseRef,
        user: UserId,
        field_manager: Sym,
        op: &LeaseOp,
        state: &mut QuietLease,
    ) -> Option<bool> {
        let LeaseOp::Update { resource_version, spec, labels, annotations } = op else { return None };
        let entry = &self.lease_refs[lease.0 as usize];
        if entry.authz.get(user, Verb::Update, self.rbac_generation) != Some(true) {
            return None;
        }
        let live = entry.live.as_ref()?;
        if *resource_version != state.view.resource_version
            || !same_map(labels, &live.labels)
            || !same_map(annotations, &live.annotations)
        {
            return None;
        }
        if !spec.is_simple() {
            return None;
        }
        let (changed, removed) = spec.diff(&state.view.spec);
        if changed == 0 && removed == 0 {
            return Some(false); // not persisted: nothing moves
        }
        let hint = live.hint.filter(|h| removed == 0 && h.covers(field_manager, changed))?;
        if state.pending_writer.is_some_and(|w| w != hint.writer) {
            return None;
        }
        state.revision += 1;
        state.view.resource_version = state.revision;
        state.view.spec = *spec;
        state.pending_writer = Some(hint.writer);
        Some(changed == LeaseSpecC::RENEW_TIME)
    }

    /// The renewal after one that [`Self::quiet_renewal`] allowed with `Some(true)` (it
    /// changed the renewTime alone), whose Update is that one's with the renewTime
    /// `renew_time` (the same writer, resourceVersion as answered, labels, annotations and
    /// spec but that): every check `quiet_renewal` made holds again, so the renewTime alone
    /// decides — the same microsecond is not persisted, another is written as that one was.
    /// Returns whether it wrote.
    pub fn quiet_renewal_again(state: &mut QuietLease, renew_time: MicroTime) -> bool {
        if state.view.spec.renew_time == Some(renew_time) {
            return false;
        }
        state.revision += 1;
        state.view.resource_version = state.revision;
        state.view.spec.renew_time = Some(renew_time);
        true
    }
}

impl ApiServer {
    /// The Lease as the renewals [`Self::quiet_renewal`] allowed leave it — what
    /// `typed_update`'s renewal branch does, once per renewal: the server's revision at
    /// `revision`, the Lease at `view`, the last written renewal (arriving at `last_write`)
    /// pending for the stored object.
    pub fn quiet_commit(&mut self, lease: LeaseRef, revision: u64, view: &LeaseView, last_write: Nanos) {
        let wall_secs = self.wall_secs(last_write);
        self.set_revision(revision);
        let live = self.lease_refs[lease.0 as usize].live.as_mut().expect("a renewed Lease is live");
        let writer = live.hint.expect("a quiet renewal is recognised by its hint").writer;
        live.renew(view.resource_version, view.spec, writer, wall_secs);
    }
}
