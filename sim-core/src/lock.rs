//! `LeaseLock`: turns an elector's lock operations into API requests and responses back into
//! records, keeping the cached Lease whose resourceVersion the next Update carries
//! (client-go `resourcelock/leaselock.go`).
//!
//! Requests go by the API server's typed path ([`LeaseOp`]): the cache is a [`LeaseView`] (the
//! resourceVersion, the spec with interned strings, the labels), which is all of the cached
//! object that a write of it can depend on — the server takes uid, creationTimestamp and
//! managedFields from the stored object, not from the body. The view keeps the cached
//! annotations too, though no elector reads them: a PUT of the cached Lease sends them back.

use crate::api::{
    ApiServer, Body, Kind, Labels, LeaseOp, LeaseRef, LeaseSpecC, LeaseView, MicroTime, Request, UserId, Verb,
};
use crate::elector::{Fields, LockError, LockOp, LockResult, Record, WriteVerb};
use crate::sym::Sym;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct LeaseLock {
    lease: LeaseRef,
    user: UserId,
    /// The field manager of its writes (interned).
    field_manager: Sym,
    /// The last Lease received (client-go keeps every response; the Python client keeps only
    /// what Get and Create return).
    cached: Option<LeaseView>,
    /// The Python client's LeaseLock: it edits the fetched spec in place (never writing
    /// `leaseTransitions`), does not cache Update responses, and sends times via `isoformat()`.
    python_style: bool,
    /// `LeaseLock.Labels` (client-go ≥ v0.34, `NewWithLabels`).
    labels: Option<Arc<Labels>>,
    /// v0.34.0–v0.34.1: writing labels into a cached Lease without any panics.
    labels_panic_without_map: bool,
    /// fabric8's `LeaseLock` discards a patch's response: the resourceVersion it sends is the
    /// one of its last Get or Create (ResourceLock:47-65).
    ignore_patch_responses: bool,
}

/// A lock operation as a request: the typed path, or (for the Python client's JSON with a
/// whole-second time) the request the generic path takes.
#[derive(Clone, Debug)]
pub enum LockRequest {
    Typed(LeaseOp),
    Generic(Box<Request>),
}

impl LockRequest {
    pub fn verb(&self) -> Verb {
        match self {
            LockRequest::Typed(op) => op.verb(),
            LockRequest::Generic(r) => r.verb,
        }
    }
}

impl LeaseLock {
    pub fn new(lease: LeaseRef, user: UserId, field_manager: Sym, python_style: bool) -> Self {
        LeaseLock {
            lease,
            user,
            field_manager,
            cached: None,
            python_style,
            labels: None,
            labels_panic_without_map: false,
            ignore_patch_responses: false,
        }
    }

    /// Keep only Get and Create responses (fabric8).
    pub fn ignore_patch_responses(&mut self) {
        self.ignore_patch_responses = true;
    }

    /// The labels the lock sets: on create as they are, on every update merged into the cached
    /// Lease's labels (its own keys overwritten, every other key kept: client-go
    /// `LeaseLock.Update`).
    pub fn set_labels(&mut self, labels: Arc<Labels>, panic_without_map: bool) {
        self.labels = Some(labels);
        self.labels_panic_without_map = panic_without_map;
    }

    /// The labels an Update carries: the cached ones with the lock's merged in. The cached map
    /// is reused when it already holds them (every renewal after the first write), so the
    /// hot path allocates nothing.
    #[inline(always)]
    fn update_labels(&self, cached: &Option<Arc<Labels>>) -> Result<Option<Arc<Labels>>, LockError> {
        let Some(mine) = &self.labels else { return Ok(cached.clone()) };
        match cached {
            None if self.labels_panic_without_map => Err(LockError::Panic),
            Some(c) if mine.iter().all(|(k, v)| c.get(k) == Some(v)) => Ok(Some(Arc::clone(c))),
            _ => {
                let mut merged = cached.as_deref().cloned().unwrap_or_default();
                merged.extend(mine.iter().map(|(k, v)| (k.clone(), v.clone())));
                Ok(Some(Arc::new(merged)))
            }
        }
    }

    pub fn lease(&self) -> LeaseRef {
        self.lease
    }

    pub fn user(&self) -> UserId {
        self.user
    }

    pub fn cached(&self) -> Option<&LeaseView> {
        self.cached.as_ref()
    }

    /// A watch event showed this Lease: it is the last one received (kube-coordinate applies
    /// the Lease it last saw, with that resourceVersion).
    pub fn observe(&mut self, view: LeaseView) {
        self.cached = Some(view);
    }

    fn spec_of(&self, record: &Record, previous: Option<&LeaseSpecC>) -> LeaseSpecC {
        let transitions = if !self.python_style {
            Some(record.leader_transitions)
        } else {
            previous.and_then(|p| p.lease_transitions)
        };
        LeaseSpecC {
            holder_identity: Some(record.holder_identity),
            lease_duration_seconds: Some(record.lease_duration_seconds),
            acquire_time: record.acquire_time_micros.map(MicroTime::from_unix_micros),
            renew_time: record.renew_time_micros.map(MicroTime::from_unix_micros),
            lease_transitions: transitions,
            // client-go's LeaderElectionRecordToLeaseSpec builds a fresh spec from the record, so
            // a PUT erases strategy and preferredHolder unless the record carries them (only
            // `tryCoordinatedRenew` keeps the strategy; no client-go write carries a preferred
            // holder); the Python client edits the fetched spec.
            strategy: if !self.python_style {
                (record.strategy != Sym::EMPTY).then_some(record.strategy)
            } else {
                previous.and_then(|p| p.strategy)
            },
            preferred_holder: if !self.python_style { None } else { previous.and_then(|p| p.preferred_holder) },
        }
    }

    /// The renewTime of the Update this lock sends for `record` right after the one for
    /// `previous` was answered with the Lease it wrote, when the two Updates differ in that
    /// alone: client-go builds the spec from the record only ([`Self::spec_of`]) and takes the
    /// resourceVersion, labels and annotations from the answer, so records equal but for
    /// their renewTime give such Updates. `None` otherwise, and always for the Python client's
    /// lock (it edits the spec it fetched and keeps no Update's answer).
    pub fn renewal_like(&self, previous: &Record, record: &Record) -> Option<MicroTime> {
        let renew = record.renew_time_micros?;
        (!self.python_style && Record { renew_time_micros: previous.renew_time_micros, ..*record } == *previous)
            .then(|| MicroTime::from_unix_micros(renew))
    }

    /// The request for `op`, or an immediate error (client-go refuses an Update before any Get
    /// or Create: `lease not initialized, call get or create first`).
    pub fn request(&self, op: &LockOp, server: &ApiServer) -> Result<LockRequest, LockError> {
        let mut typed = LeaseOp::Get;
        self.write_typed(op, &mut typed)?;
        Ok(match self.python_body(&typed, server) {
            Some(request) => LockRequest::Generic(Box::new(request)),
            None => LockRequest::Typed(typed),
        })
    }

    /// Whether every request of this lock goes by the typed path (all but the Python client's,
    /// some of whose writes go as JSON): then [`Self::write_typed`] builds them.
    pub fn typed_only(&self) -> bool {
        !self.python_style
    }

    /// The typed request for `op`, written into `dest` (the message slot where it will wait: a
    /// request built on the stack and moved into place was read back by wide loads before its
    /// narrow stores had drained, a stall on every request), and its verb; or an immediate
    /// error, leaving `dest` as it was.
    #[inline(always)]
    pub fn write_typed(&self, op: &LockOp, dest: &mut LeaseOp) -> Result<Verb, LockError> {
        match op {
            LockOp::Get => dest.overwrite(LeaseOp::Get),
            LockOp::Create(record) => {
                dest.overwrite(LeaseOp::Create { spec: self.spec_of(record, None), labels: self.labels.clone() })
            }
            LockOp::Update(record) => {
                let Some(cached) = &self.cached else { return Err(LockError::Status(0)) };
                let labels = self.update_labels(&cached.labels)?;
                dest.overwrite(LeaseOp::Update {
                    resource_version: cached.resource_version,
                    spec: self.spec_of(record, Some(&cached.spec)),
                    labels,
                    annotations: cached.annotations.clone(),
                });
            }
            LockOp::Write(record, shape) => dest.overwrite(self.shaped(record, shape)?),
        }
        Ok(dest.verb())
    }

    /// A write in another library's wire shape (see [`crate::elector::WriteShape`]).
    fn shaped(&self, record: &Record, shape: &crate::elector::WriteShape) -> Result<LeaseOp, LockError> {
        let mut spec = LeaseSpecC {
            holder_identity: Some(record.holder_identity),
            lease_duration_seconds: Some(record.lease_duration_seconds),
            acquire_time: record.acquire_time_micros.map(MicroTime::from_unix_micros),
            renew_time: record.renew_time_micros.map(MicroTime::from_unix_micros),
            lease_transitions: Some(record.leader_transitions),
            strategy: None,
            preferred_holder: None,
        };
        let cached = self.cached.as_ref();
        let put = shape.verb == WriteVerb::Put;
        // A PUT sends the cached object with its spec edited: a kept field keeps the
        // cached value; a patch leaves a kept field out. A null field is absent.
        let old = if put { cached.map(|c| c.spec).unwrap_or_default() } else { LeaseSpecC::default() };
        let pick = |bit: Fields| !(shape.keep.has(bit) || shape.nulls.has(bit));
        if !pick(Fields::HOLDER) {
            spec.holder_identity = if shape.nulls.has(Fields::HOLDER) { None } else { old.holder_identity };
        }
        if !pick(Fields::DURATION) {
            spec.lease_duration_seconds =
                if shape.nulls.has(Fields::DURATION) { None } else { old.lease_duration_seconds };
        }
        if !pick(Fields::ACQUIRE) {
            spec.acquire_time = if shape.nulls.has(Fields::ACQUIRE) { None } else { old.acquire_time };
        }
        if !pick(Fields::RENEW) {
            spec.renew_time = if shape.nulls.has(Fields::RENEW) { None } else { old.renew_time };
        }
        if !pick(Fields::TRANSITIONS) {
            spec.lease_transitions = if shape.nulls.has(Fields::TRANSITIONS) { None } else { old.lease_transitions };
        }
        Ok(match shape.verb {
            WriteVerb::Post => LeaseOp::Create { spec, labels: self.labels.clone() },
            WriteVerb::Put => {
                let Some(cached) = cached else { return Err(LockError::Status(0)) };
                spec.strategy = cached.spec.strategy;
                spec.preferred_holder = cached.spec.preferred_holder;
                LeaseOp::Update {
                    resource_version: cached.resource_version,
                    spec,
                    labels: cached.labels.clone(),
                    annotations: cached.annotations.clone(),
                }
            }
            WriteVerb::Patch { with_rv } => LeaseOp::Patch {
                spec,
                resource_version: if with_rv { cached.map(|c| c.resource_version) } else { None },
                nulls: shape.nulls.0,
            },
            WriteVerb::Apply { force, with_rv, cached_metadata } => {
                let metadata = cached.filter(|_| cached_metadata);
                LeaseOp::Apply {
                    spec,
                    resource_version: if with_rv { cached.map(|c| c.resource_version) } else { None },
                    force,
                    labels: metadata.and_then(|c| c.labels.clone()),
                    annotations: metadata.and_then(|c| c.annotations.clone()),
                }
            }
        })
    }

    /// The Python client serialises datetimes with `isoformat()`, which drops the fraction when
    /// the microseconds are zero (`2026-01-01T00:00:02+00:00`); the server's MicroTime parser
    /// then refuses the body with a 400. Such a write is sent as the JSON the client would send,
    /// so the server gives its real answer; every other write stays typed.
    fn python_body(&self, op: &LeaseOp, server: &ApiServer) -> Option<Request> {
        if !self.python_style {
            return None;
        }
        let spec = match op {
            LeaseOp::Create { spec, .. } | LeaseOp::Update { spec, .. } => spec,
            _ => return None,
        };
        let whole_second = |t: Option<MicroTime>| t.is_some_and(|t| t.unix_micros().rem_euclid(1_000_000) == 0);
        if !whole_second(spec.acquire_time) && !whole_second(spec.renew_time) {
            return None;
        }
        let mut request = server.generic_lease_request(self.lease, self.user, self.field_manager, op);
        let Body::Lease(lease) = &request.body else { return None };
        let mut json = crate::api::object_json(Kind::Lease, lease.as_ref());
        for key in ["acquireTime", "renewTime"] {
            if let Some(v) = json["spec"].get_mut(key)
                && let Some(text) = v.as_str()
            {
                *v = serde_json::json!(isoformat(text));
            }
        }
        request.body = Body::Json(json);
        Some(request)
    }

    /// Interprets the server's answer to a request of `verb`: the Lease, or the status code of
    /// the error (500 when the answer was not a Lease).
    ///
    /// The answer is read where the server wrote it (the message's slot): the cache takes a
    /// copy of the Lease, nothing else is moved.
    #[inline(always)]
    pub fn response(&mut self, verb: Verb, result: Result<&LeaseView, u16>) -> LockResult {
        match result {
            Ok(view) => {
                let record = record_of(&view.spec);
                let ignored =
                    (verb == Verb::Update && self.python_style) || (verb == Verb::Patch && self.ignore_patch_responses);
                if !ignored {
                    match &mut self.cached {
                        // Neither holds labels or annotations (every election's Lease): the
                        // resourceVersion and the spec are the whole of it, copied in place.
                        Some(cached) if cached.holds_nothing() && view.holds_nothing() => {
                            cached.resource_version = view.resource_version;
                            cached.spec = view.spec;
                        }
                        cached => *cached = Some(view.clone()),
                    }
                }
                Ok(record)
            }
            Err(404) => Err(LockError::NotFound),
            Err(409) => Err(LockError::Conflict),
            Err(code) => Err(LockError::Status(code)),
        }
    }
}

/// client-go's `LeaseSpecToLeaderElectionRecord`: absent fields read as zero values.
pub fn record_of(spec: &LeaseSpecC) -> Record {
    Record {
        holder_identity: spec.holder_identity.unwrap_or(Sym::EMPTY),
        lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
        acquire_time_micros: spec.acquire_time.map(|t| t.unix_micros()),
        renew_time_micros: spec.renew_time.map(|t| t.unix_micros()),
        leader_transitions: spec.lease_transitions.unwrap_or(0),
        strategy: spec.strategy.unwrap_or(Sym::EMPTY),
        preferred_holder: spec.preferred_holder.unwrap_or(Sym::EMPTY),
        absent: Fields(
            spec.holder_identity.is_none() as u8
                | (spec.lease_duration_seconds.is_none() as u8) << 1
                | (spec.acquire_time.is_none() as u8) << 2
                | (spec.renew_time.is_none() as u8) << 3
                | (spec.lease_transitions.is_none() as u8) << 4,
        ),
    }
}

/// Python's `datetime.isoformat()` of a UTC time given as MicroTime text
/// (`2026-01-01T00:00:02.000000Z` → `2026-01-01T00:00:02+00:00`; a non-zero fraction is kept).
fn isoformat(micro_time: &str) -> String {
    let body = micro_time.trim_end_matches('Z');
    let body = body.strip_suffix(".000000").unwrap_or(body);
    format!("{body}+00:00")
}

#[cfg(test)]
mod tests {
    use super::isoformat;

    #[test]
    fn python_isoformat_drops_a_zero_fraction() {
        assert_eq!(isoformat("2026-01-01T00:00:02.000000Z"), "2026-01-01T00:00:02+00:00");
        assert_eq!(isoformat("2026-01-01T00:00:02.000100Z"), "2026-01-01T00:00:02.000100+00:00");
    }
}
