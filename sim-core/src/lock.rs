//! `LeaseLock`: turns an elector's lock operations into API requests and responses back into
//! records, keeping the cached Lease whose resourceVersion the next Update carries
//! (client-go `resourcelock/leaselock.go`).

use crate::api::{ApiError, Body, Kind, Lease, LeaseSpec, MicroTime, Object, ObjectMeta, Request, User, Verb};
use crate::elector::{LockError, LockOp, LockResult, Record};
use std::sync::Arc;

#[derive(Debug)]
pub struct LeaseLock {
    user: Arc<User>,
    namespace: Arc<str>,
    name: Arc<str>,
    field_manager: Arc<str>,
    /// The last Lease received (client-go keeps every response; the Python client keeps only
    /// what Get and Create return).
    cached: Option<Arc<Lease>>,
    /// The Python client's LeaseLock: it edits the fetched spec in place (never writing
    /// `leaseTransitions`), does not cache Update responses, and sends times via `isoformat()`.
    python_style: bool,
}

impl LeaseLock {
    pub fn new(user: Arc<User>, namespace: &str, name: &str, field_manager: &str, python_style: bool) -> Self {
        LeaseLock {
            user,
            namespace: namespace.into(),
            name: name.into(),
            field_manager: field_manager.into(),
            cached: None,
            python_style,
        }
    }

    pub fn cached(&self) -> Option<&Arc<Lease>> {
        self.cached.as_ref()
    }

    fn spec_of(&self, record: &Record, previous: Option<&LeaseSpec>) -> LeaseSpec {
        let transitions = if !self.python_style {
            Some(record.leader_transitions)
        } else {
            previous.and_then(|p| p.lease_transitions)
        };
        LeaseSpec {
            holder_identity: Some(record.holder_identity.clone()),
            lease_duration_seconds: Some(record.lease_duration_seconds),
            acquire_time: record.acquire_time_micros.map(MicroTime::from_unix_micros),
            renew_time: record.renew_time_micros.map(MicroTime::from_unix_micros),
            lease_transitions: transitions,
            // client-go's LeaderElectionRecordToLeaseSpec builds a fresh spec (its records carry
            // no strategy here), so a PUT erases them; the Python client edits the fetched spec.
            strategy: if !self.python_style { None } else { previous.and_then(|p| p.strategy.clone()) },
            preferred_holder: if !self.python_style { None } else { previous.and_then(|p| p.preferred_holder.clone()) },
        }
    }

    /// The Python client serialises datetimes with `isoformat()`, which drops the fraction when
    /// the microseconds are zero (`2026-01-01T00:00:02+00:00`); the server's MicroTime parser
    /// then refuses the body with a 400. Such a write is sent as the JSON the client would send,
    /// so the server gives its real answer; every other write stays typed.
    fn python_body(&self, lease: &Lease) -> Option<Body> {
        if !self.python_style {
            return None;
        }
        let whole_second = |t: Option<MicroTime>| t.is_some_and(|t| t.unix_micros().rem_euclid(1_000_000) == 0);
        if !whole_second(lease.spec.acquire_time) && !whole_second(lease.spec.renew_time) {
            return None;
        }
        let mut json = crate::api::to_json(&crate::api::Object::Lease(Arc::new(lease.clone())));
        for key in ["acquireTime", "renewTime"] {
            if let Some(v) = json["spec"].get_mut(key)
                && let Some(text) = v.as_str()
            {
                *v = serde_json::json!(isoformat(text));
            }
        }
        Some(Body::Json(json))
    }

    /// The request for `op`, or an immediate error (client-go refuses an Update before any Get
    /// or Create: `lease not initialized, call get or create first`).
    pub fn request(&self, op: &LockOp) -> Result<Request, LockError> {
        let (verb, body) = match op {
            LockOp::Get => (Verb::Get, Body::None),
            LockOp::Create(record) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: self.name.to_string(),
                        namespace: self.namespace.to_string(),
                        ..Default::default()
                    },
                    spec: self.spec_of(record, None),
                };
                (Verb::Create, self.python_body(&lease).unwrap_or_else(|| Body::Lease(Arc::new(lease))))
            }
            LockOp::Update(record) => {
                let Some(cached) = &self.cached else { return Err(LockError::Status(0)) };
                let mut lease = Lease::clone(cached);
                lease.spec = self.spec_of(record, Some(&cached.spec));
                (Verb::Update, self.python_body(&lease).unwrap_or_else(|| Body::Lease(Arc::new(lease))))
            }
            LockOp::MergePatch(record) => {
                let spec = serde_json::to_value(self.spec_of(record, None)).expect("a LeaseSpec always serialises");
                (Verb::Patch, Body::Json(serde_json::json!({ "spec": spec })))
            }
        };
        Ok(Request {
            user: self.user.clone(),
            verb,
            kind: Kind::Lease,
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            body,
            field_manager: Some(self.field_manager.clone()),
            force: false,
        })
    }

    /// Interprets the server's answer to `op`.
    pub fn response(&mut self, op_verb: Verb, result: Result<Object, ApiError>) -> LockResult {
        match result {
            Ok(Object::Lease(lease)) => {
                let record = record_of(&lease.spec);
                if op_verb != Verb::Update || !self.python_style {
                    self.cached = Some(lease);
                }
                Ok(record)
            }
            Ok(_) => Err(LockError::Status(500)),
            Err(e) if e.code == 404 => Err(LockError::NotFound),
            Err(e) if e.code == 409 => Err(LockError::Conflict),
            Err(e) => Err(LockError::Status(e.code)),
        }
    }
}

/// client-go's `LeaseSpecToLeaderElectionRecord`: absent fields read as zero values.
pub fn record_of(spec: &LeaseSpec) -> Record {
    Record {
        holder_identity: spec.holder_identity.clone().unwrap_or_default(),
        lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
        acquire_time_micros: spec.acquire_time.map(|t| t.unix_micros()),
        renew_time_micros: spec.renew_time.map(|t| t.unix_micros()),
        leader_transitions: spec.lease_transitions.unwrap_or(0),
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
