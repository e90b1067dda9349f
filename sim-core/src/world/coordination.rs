//! Coordinated leader election in the loop: the candidates' side (client-go
//! `tools/leaderelection/leasecandidate.go`) and the routing to and from the election
//! controller (`election.rs`) that runs inside the simulated kube-apiserver.
//!
//! A coordinated node keeps a LeaseCandidate named after its identity in its Lease's namespace,
//! as client-go's `LeaseCandidate` does:
//! - `ensureLease` on start, then every 5 minutes: create it if its cache has none, else update
//!   `renewTime` (its own wall clock) on the cached object; versions and strategy are not
//!   refreshed;
//! - a failure is retried after 5 ms·2ⁿ (n failures so far, capped at 1000 s): `Forget` is never
//!   called, so the count never resets;
//! - its informer (only `UpdateFunc`) sees the controller's ping one down-latency later and, if
//!   `pingTime > renewTime`, ensures at once. The informer is modelled as delivering the object
//!   as it is when the event arrives.
//!
//! The controller runs on the apiserver's clock (`[server] clock`); its queue's runs are events.

use super::World;
use super::election::GC_PERIOD;
use super::event::{Event, Origin};
use super::network::{Payload, Response};
use crate::api::{Body, CandidateTime, FieldValidation, Kind, LeaseCandidateSpec, MicroTime, Object, Request, Verb};
use crate::net::{Delivery, Direction};
use crate::time::Nanos;
use crate::trace::TraceKind;
use serde_json::json;
use std::sync::Arc;

const RENEW_INTERVAL: Nanos = 5 * 60 * 1_000_000_000;
const MAX_BACKOFF: Nanos = 1000 * 1_000_000_000;

/// `pingTime > renewTime`: the controller is waiting for this candidate's answer.
fn ping_pending(spec: &LeaseCandidateSpec) -> bool {
    match (spec.ping_time, spec.renew_time) {
        (Some(p), Some(r)) => p > r,
        (Some(_), None) => true,
        _ => false,
    }
}

impl World {
    /// A coordinated process starts: its informer syncs and `ensureLease` runs once at once.
    #[cold]
    #[inline(never)]
    pub(super) fn candidate_start(&mut self, now: Nanos, node: usize) {
        let Some(cle) = self.cle.as_mut() else { return };
        let Some(c) = cle.candidates[node].as_mut() else { return };
        // A new process has an empty cache and a fresh rate limiter; it lists what exists.
        c.cache = self
            .server
            .peek_stored(Kind::LeaseCandidate, &c.namespace, &self.procs[node].identity)
            .and_then(|object| object.lease_candidate().cloned());
        c.failures = 0;
        c.in_flight = None;
        self.candidate_schedule(now, node, 0);
    }

    #[cold]
    #[inline(never)]
    fn candidate_schedule(&mut self, now: Nanos, node: usize, after: Nanos) {
        let Some(c) = self.cle.as_mut().and_then(|cle| cle.candidates[node].as_mut()) else { return };
        c.generation = c.generation.wrapping_add(1);
        let event = Event::CandidateEnsure {
            node: node as u32,
            incarnation: self.procs[node].incarnation,
            generation: c.generation,
        };
        let at = self.procs[node].timer_fires_at(now, after);
        self.queue.schedule(at, event);
    }

    /// `ensureLease`.
    #[cold]
    #[inline(never)]
    pub(super) fn candidate_ensure(&mut self, now: Nanos, node: usize, generation: u32) {
        let wall = self.procs[node].clock.wall(now);
        let identity = self.procs[node].identity.clone();
        let user = self.server.user(self.procs[node].user).clone();
        let timeout = self.spec.nodes[node].elector.request_timeout;
        // No fieldManager is sent (`metav1.CreateOptions{}`, `UpdateOptions{}`): the server
        // takes the user agent's first word, the process's, as for its Lease and its Events.
        let manager = Arc::clone(self.server.symbols().name(self.procs[node].field_manager));
        let Some(c) = self.cle.as_mut().and_then(|cle| cle.candidates[node].as_mut()) else { return };
        if c.generation != generation || c.in_flight.is_some() {
            return;
        }
        let renew = MicroTime::from_unix_nanos(wall);
        let (verb, body) = match &c.cache {
            None => (
                Verb::Create,
                Body::Json(json!({
                    "apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate",
                    "metadata": {"name": identity.as_ref(), "namespace": c.namespace},
                    "spec": {"leaseName": c.lease, "binaryVersion": c.binary_version,
                             "emulationVersion": c.emulation_version, "strategy": "OldestEmulationVersion",
                             "renewTime": renew.to_rfc3339()},
                })),
            ),
            Some(cached) => {
                let object = Arc::clone(cached);
                (Verb::Update, Body::LeaseCandidate { object, time: Some(CandidateTime::Renew(renew)) })
            }
        };
        let request = Request {
            user,
            verb,
            kind: Kind::LeaseCandidate,
            namespace: Arc::clone(&c.namespace),
            name: identity,
            body,
            field_manager: Some(manager),
            force: false,
            field_validation: FieldValidation::Ignore,
        };
        let id = self.net.next_id();
        c.in_flight = Some(id);
        self.send(
            now,
            node,
            id,
            Origin::Candidate,
            Payload::Generic(Box::new(request)),
            (verb, Kind::LeaseCandidate),
            timeout,
        );
    }

    /// The answer to `ensureLease`'s write (or its timeout: `response` is `None`).
    #[cold]
    #[inline(never)]
    pub(super) fn candidate_response(&mut self, now: Nanos, node: usize, id: u64, response: Option<Response>) {
        let Some(c) = self.cle.as_mut().and_then(|cle| cle.candidates[node].as_mut()) else { return };
        if c.in_flight != Some(id) {
            return;
        }
        c.in_flight = None;
        let after = match response {
            Some(Response::Object(Ok(Object::LeaseCandidate(object)))) => {
                if let Some(old) = c.cache.replace(object) {
                    self.server.recycle_candidate(old);
                }
                if std::mem::take(&mut c.dirty) { 0 } else { RENEW_INTERVAL }
            }
            _ => {
                // `AddRateLimited`: 5 ms·2ⁿ, n failures ever.
                let backoff = 5_000_000u64.saturating_mul(1u64 << c.failures.min(40)).min(MAX_BACKOFF);
                c.failures = c.failures.saturating_add(1);
                backoff
            }
        };
        self.candidate_schedule(now, node, after);
    }

    /// A write to `node`'s LeaseCandidate reaches its informer one down-latency later.
    #[cold]
    #[inline(never)]
    pub(super) fn candidate_notify(&mut self, now: Nanos, node: usize) {
        if !self.procs[node].is_running() {
            return;
        }
        let incarnation = self.procs[node].incarnation;
        match self.net.send(node, Direction::Down, now) {
            Delivery::Arrives(at) | Delivery::Held(at) => {
                self.queue.schedule(at, Event::CandidateWatch { node: node as u32, incarnation })
            }
            // Missed: the 5-minute resync or the next write brings it.
            _ => {}
        }
    }

    /// The informer's `UpdateFunc`: a pending ping enqueues `ensureLease` at once.
    #[cold]
    #[inline(never)]
    pub(super) fn candidate_watch(&mut self, now: Nanos, node: usize) {
        let Some(c) = self.cle.as_mut().and_then(|cle| cle.candidates[node].as_mut()) else { return };
        let stored = self.server.stored_ref(Kind::LeaseCandidate, &c.namespace, &self.procs[node].identity);
        let candidate = stored.and_then(|o| o.lease_candidate());
        let pending = candidate.is_some_and(|o| ping_pending(&o.spec));
        if stored.is_some()
            && let Some(old) = std::mem::replace(&mut c.cache, candidate.cloned())
        {
            self.server.recycle_candidate(old);
        }
        if pending {
            if c.in_flight.is_some() {
                c.dirty = true;
            } else {
                self.candidate_schedule(now, node, 0);
            }
        }
    }

    // ---- the controller --------------------------------------------------------------------

    /// `queue.Add` (at = now) or `queue.AddAfter` of a Lease key.
    #[cold]
    #[inline(never)]
    fn election_enqueue(&mut self, key: usize, at: Nanos, now: Nanos) {
        let Some(cle) = self.cle.as_mut() else { return };
        if let Some((at, generation)) = cle.controller.enqueue(key, at, now) {
            self.queue.schedule(at, Event::Election { key: key as u32, generation });
        }
    }

    /// A Lease was written (the controller's informer handles every Lease; only the Leases
    /// with candidates have a key). By number: no strings on a renewal's path.
    #[cold]
    #[inline(never)]
    pub(super) fn election_lease_written(&mut self, now: Nanos, lease: crate::api::LeaseRef) {
        let Some(cle) = self.cle.as_mut() else { return };
        if let Some(key) = cle.controller.lease_refs.iter().position(|r| *r == Some(lease)) {
            self.election_enqueue(key, now, now);
        }
    }

    /// A LeaseCandidate was written: `enqueueCandidate` (a pending ping is ignored); the
    /// owner's informer hears of it.
    #[cold]
    #[inline(never)]
    pub(super) fn election_candidate_written(&mut self, now: Nanos, namespace: &str, name: &str) {
        let stored = self.server.stored_ref(Kind::LeaseCandidate, namespace, name);
        let Some(candidate) = stored.and_then(|o| o.lease_candidate()) else { return };
        let (lease, pending) = (&candidate.spec.lease_name, ping_pending(&candidate.spec));
        let Some(cle) = self.cle.as_mut() else { return };
        let key = cle.controller.key(namespace, lease);
        if cle.controller.lease_refs[key].is_none() {
            cle.controller.lease_refs[key] = self.server.find_lease_ref(namespace, lease);
        }
        if !pending {
            self.election_enqueue(key, now, now);
        }
        let owners = self.cle.as_ref().and_then(|c| c.owners.get(name)).cloned();
        for &n in owners.iter().flat_map(|o| o.iter()) {
            self.candidate_notify(now, n);
        }
    }

    /// One run of `reconcileElectionStep`.
    #[cold]
    #[inline(never)]
    pub(super) fn election_run(&mut self, now: Nanos, key: usize, generation: u32) {
        let Some(cle) = self.cle.as_mut() else { return };
        if !cle.controller.take(key, generation) {
            return;
        }
        let server_now = cle.clock.wall(now);
        let step = cle.controller.reconcile(&mut self.server, now, server_now, key);
        let (namespace, lease) = cle.controller.keys[key].clone();
        let acted =
            step.installed.is_some() || step.preferred.is_some() || !step.pinged.is_empty() || step.error.is_some();
        if self.obs.tracing() && acted {
            let kind = TraceKind::Election(Box::new(crate::trace::ElectionTrace {
                lease: format!("{namespace}/{lease}"),
                installed: step.installed.clone(),
                preferred: step.preferred.clone(),
                pinged: step.pinged.len() as u32,
                error: step.error.clone(),
            }));
            trace!(self, now, None, kind);
        }
        if step.installed.is_some() || step.preferred.is_some() {
            let detail = match (&step.installed, &step.preferred) {
                (Some(h), _) => format!("installs {h}"),
                (_, Some(p)) => format!("preferredHolder → {p}"),
                _ => String::new(),
            };
            self.obs.record_fault(super::FaultRecord {
                at: now,
                node: None,
                kind: "election",
                detail: super::FaultDetail::Election { lease: format!("{namespace}/{lease}"), text: detail },
            });
            self.lease_written_by_name(now, &namespace, &lease);
        }
        for name in &step.pinged {
            self.election_candidate_written(now, &namespace, name);
        }
        if let Some(after) = step.requeue {
            self.election_enqueue(key, now + after, now);
        }
    }

    /// The LeaseCandidate garbage collector, every 30 minutes of the apiserver's clock.
    #[cold]
    #[inline(never)]
    pub(super) fn election_gc(&mut self, now: Nanos) {
        let Some(cle) = self.cle.as_mut() else { return };
        let server_now = cle.clock.wall(now);
        let deleted = cle.controller.gc(&mut self.server, now, server_now);
        if self.obs.tracing() && !deleted.is_empty() {
            trace!(self, now, None, TraceKind::CandidatesCollected { names: deleted });
        }
        let at = self.cle.as_ref().map_or(now, |c| c.clock.timer_fires_at(now, GC_PERIOD));
        self.queue.schedule(at, Event::ElectionGc {});
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ApiServer, User};
    use serde_json::Value;

    /// The typed update `ensureLease` sends is what the JSON body it replaced decodes to: the
    /// same answers, the same stored object and resourceVersion, from a candidate with and
    /// without a pingTime, labels and an earlier writer's managedFields.
    #[test]
    fn the_typed_candidate_update_is_the_json_body_decoded() {
        let create = |spec: Value, labels: Value| {
            json!({"apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate",
                   "metadata": {"name": "a", "namespace": "default", "labels": labels}, "spec": spec})
        };
        let spec = json!({"leaseName": "l", "binaryVersion": "1.33.0", "emulationVersion": "1.33.0",
                          "strategy": "OldestEmulationVersion", "renewTime": "2026-01-01T00:00:00.000000Z"});
        let mut pinged = spec.clone();
        pinged["pingTime"] = json!("2026-01-01T00:00:03.000000Z");
        let mut no_renew = spec.clone();
        no_renew.as_object_mut().unwrap().shift_remove("renewTime");
        for (spec, labels) in [(spec, json!({})), (pinged, json!({"x": "1"})), (no_renew, json!({"y": ""}))] {
            let request = |verb, body| Request {
                user: Arc::new(User::admin()),
                verb,
                kind: Kind::LeaseCandidate,
                namespace: "default".into(),
                name: "a".into(),
                body,
                field_manager: None,
                force: false,
                field_validation: FieldValidation::Ignore,
            };
            let mut server = ApiServer::new(crate::time::DEFAULT_EPOCH_UNIX_NANOS);
            server.handle(1_000, &request(Verb::Create, Body::Json(create(spec, labels)))).unwrap();
            let stored = server
                .peek_stored(Kind::LeaseCandidate, "default", "a")
                .and_then(|o| o.lease_candidate().cloned())
                .unwrap();
            let renew = "2026-01-01T00:00:05.123456Z";
            let mut body = crate::api::object_json(Kind::LeaseCandidate, stored.as_ref());
            body["spec"]["renewTime"] = json!(renew);
            body["apiVersion"] = json!("coordination.k8s.io/v1beta1");
            body["kind"] = json!("LeaseCandidate");
            let outcome = |body: Body| {
                let mut server = server.clone();
                let answer = server.handle(2_000, &request(Verb::Update, body)).map(|o| crate::api::to_json(&o));
                (answer.map_err(|e| e.message), server.peek_json(Kind::LeaseCandidate, "default", "a"))
            };
            let time = Some(CandidateTime::Renew(MicroTime::parse(renew).unwrap()));
            let typed = Body::LeaseCandidate { object: Arc::clone(&stored), time };
            assert_eq!(outcome(typed), outcome(Body::Json(body)));
        }
    }
}
