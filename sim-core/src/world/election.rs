//! Coordinated leader election (KEP-4355): the leader-election controller inside the simulated
//! kube-apiserver, as kubernetes/kubernetes `pkg/controlplane/controller/leaderelection/
//! leaderelection_controller.go` (ac7a95ef, v1beta1, plus #130533's parallel pings) runs it,
//! on the **apiserver's own clock**. Facts and line-level notes: docs/sources/kubernetes.md (the coordinated election controller);
//! docs/algorithms.md "Coordinated leader election".
//!
//! One worker, one queue of Lease keys: a key is queued at most once and waits in the delaying
//! queue at most once (`AddAfter` keeps the earliest time; an immediate `Add` does not cancel
//! a waiting one, which still runs when it comes due). The controller reads and writes
//! through the server directly (its loopback client; no network), as `system:masters`.
//!
//! `reconcileElectionStep`, as the source has it:
//! 1. candidates = LeaseCandidates of the Lease not expired (renewTime + 30 min ≥ now: the
//!    source's `Before` keeps one at the instant itself); none →
//!    no requeue;
//! 2. `electionNeeded`: no Lease, an expired or holder-less Lease, a candidate older than 15 min
//!    (forced re-election), or a best candidate that is not the holder; not needed → 5 s;
//! 3. ping every candidate whose renewTime is more than 5 s old and that has no pending ping
//!    (pingTime = now); a pending ping (pingTime + 5 s > now, not acked) or a ping just sent → 5 s;
//! 4. acked = renewTime + 5 s > now; none → "no available candidates", no requeue;
//! 5. the electee: oldest emulation version, then oldest binary version, then oldest creation
//!    (a tie keeps the current electee); create the Lease `{holder: electee, LD 5 s, renewTime:
//!    now, strategy}`, or on AlreadyExists: install the electee if the Lease has no holder or has
//!    expired, else set `preferredHolder = electee`; 5 s.
//!
//! Not modelled: the nil dereferences of a holder-less Lease with a custom strategy (they crash
//! the real kube-apiserver), the lister's random order (candidates are read in name order, so a
//! creation-time tie is decided by name, not at random), custom strategies, the controller's own
//! election among several apiservers (one apiserver), and the 10-minute informer resync.

use crate::api::object::Stored;
use crate::api::{
    ApiServer, Body, CandidateTime, FieldValidation, Kind, LeaseCandidate, MicroTime, Request, Time, User, Verb,
    Version,
};
use crate::time::Nanos;
use serde_json::json;
use std::sync::Arc;

pub(super) const REQUEUE: Nanos = 5_000_000_000;
const ELECTION_WINDOW_NS: i64 = 5_000_000_000;
const CANDIDATE_VALID_NS: i64 = 30 * 60 * 1_000_000_000;
const FORCED_REELECTION_NS: i64 = CANDIDATE_VALID_NS / 2;
/// The lease the controller installs: "time to acquire", not a real lease (jefftree on #134486).
const INSTALL_LEASE_SECONDS: i32 = 5;
pub(super) const GC_PERIOD: Nanos = 30 * 60 * 1_000_000_000;
const STRATEGY: &str = "OldestEmulationVersion";

/// A LeaseCandidate as the controller reads it.
#[derive(Clone, Debug)]
pub(super) struct Candidate {
    pub(super) name: String,
    ping: Option<i64>,
    renew: Option<i64>,
    /// `semver.ParseTolerant` of each; `None` when it does not parse (the candidate is then
    /// never the electee: `validLeaseCandidateForOldestEmulationVersion`).
    binary: Option<Version>,
    emulation: Option<Version>,
    /// creationTimestamp, whole seconds (metav1.Time).
    created: i64,
    /// The stored object, shared: copied only if the controller pings it.
    object: Arc<LeaseCandidate>,
}

impl Candidate {
    fn of(object: &Arc<LeaseCandidate>) -> Candidate {
        let spec = &object.spec;
        Candidate {
            name: object.metadata.name.clone(),
            ping: spec.ping_time.map(MicroTime::unix_nanos),
            renew: spec.renew_time.map(MicroTime::unix_nanos),
            // An absent field is Go's "", which does not parse.
            binary: Version::parse_tolerant(&spec.binary_version).ok(),
            emulation: Version::parse_tolerant(&spec.emulation_version).ok(),
            // metav1.Time: whole seconds.
            created: object.metadata.creation_timestamp.map_or(0, Time::unix_secs),
            object: Arc::clone(object),
        }
    }

    /// Pinged and not acked, the ping less than 5 s old: its answer is awaited.
    fn pending(&self, now: i64) -> bool {
        matches!((self.ping, self.renew), (Some(p), Some(r)) if p + ELECTION_WINDOW_NS > now && r < p)
    }
}

/// `compare`: lower emulation version, then lower binary version (blang/semver's order,
/// prereleases below their release); equal → the older creation wins, and a tie keeps the
/// current one (`lhs.CreationTimestamp.After(rhs) ? 1 : -1`).
fn better(a: &Candidate, b: &Candidate) -> bool {
    (&a.emulation, &a.binary, a.created) < (&b.emulation, &b.binary, b.created)
}

/// `pickBestLeaderOldestEmulationVersion`: candidates whose versions do not parse are skipped.
fn pick_best(candidates: &[Candidate]) -> Option<&Candidate> {
    let mut best: Option<&Candidate> = None;
    for c in candidates.iter().filter(|c| c.emulation.is_some() && c.binary.is_some()) {
        best = match best {
            None => Some(c),
            Some(b) if better(c, b) => Some(c),
            keep => keep,
        };
    }
    best
}

/// What one reconcile did, for the trace and the world.
#[derive(Debug, Default)]
pub(super) struct Step {
    /// `Some(d)`: requeue after d; `None`: no requeue.
    pub(super) requeue: Option<Nanos>,
    /// Candidates pinged (their nodes will see the write through their watch).
    pub(super) pinged: Vec<String>,
    /// The Lease was written: created/installed (`holder`) or a preferred holder set.
    pub(super) installed: Option<String>,
    pub(super) preferred: Option<String>,
    pub(super) error: Option<String>,
}

pub(super) struct Controller {
    user: Arc<User>,
    /// The Leases the controller has seen a candidate for: (namespace, name).
    pub(super) keys: Vec<(String, String)>,
    /// Per key: the server's number for the Lease, once it has one (Lease writes are matched
    /// by it).
    pub(super) lease_refs: Vec<Option<crate::api::LeaseRef>>,
    /// Per key, client-go's workqueue as two entries (true time, generation): `[0]` the key
    /// queued now (`Add`: dirty, at most once), `[1]` the delaying queue's waiting entry
    /// (`AddAfter`: the earliest time kept). An `Add` does not cancel a waiting entry
    /// (`delaying_queue.go`; docs/sources/kubernetes.md, Disagreements 1).
    pub(super) due: Vec<[Option<(Nanos, u32)>; 2]>,
    generation: u32,
}

impl Controller {
    pub(super) fn new() -> Controller {
        Controller {
            user: Arc::new(User::admin()),
            keys: Vec::new(),
            lease_refs: Vec::new(),
            due: Vec::new(),
            generation: 0,
        }
    }

    pub(super) fn key(&mut self, namespace: &str, name: &str) -> usize {
        match self.keys.iter().position(|(n, l)| n == namespace && l == name) {
            Some(i) => i,
            None => {
                self.keys.push((namespace.to_string(), name.to_string()));
                self.lease_refs.push(None);
                self.due.push([None, None]);
                self.keys.len() - 1
            }
        }
    }

    /// `queue.Add` (`at == now`) or `queue.AddAfter` (`at > now`): returns the (time,
    /// generation) to schedule, if anything new is pending. An `Add` of a key already queued
    /// is a no-op; an `AddAfter` keeps the earlier of its entry's times; neither touches the
    /// other's entry.
    pub(super) fn enqueue(&mut self, key: usize, at: Nanos, now: Nanos) -> Option<(Nanos, u32)> {
        let slot = usize::from(at > now);
        if let Some((due, _)) = self.due[key][slot]
            && due <= at
        {
            return None;
        }
        self.generation = self.generation.wrapping_add(1);
        self.due[key][slot] = Some((at, self.generation));
        self.due[key][slot]
    }

    /// The queued run at `generation` fired: is it a run? A waiting entry coming due is an
    /// `Add`: no run of its own when the key is already queued.
    pub(super) fn take(&mut self, key: usize, generation: u32) -> bool {
        let [queued, waiting] = &mut self.due[key];
        if queued.is_some_and(|(_, g)| g == generation) {
            *queued = None;
            true
        } else if waiting.is_some_and(|(_, g)| g == generation) {
            *waiting = None;
            queued.is_none()
        } else {
            false
        }
    }

    fn request(&self, verb: Verb, kind: Kind, namespace: &str, name: &str, body: Body) -> Request {
        Request {
            user: self.user.clone(),
            verb,
            kind,
            namespace: namespace.into(),
            name: name.into(),
            body,
            field_manager: Some("leader-election-controller".into()),
            force: false,
            field_validation: FieldValidation::Ignore,
        }
    }

    /// The LeaseCandidates of one Lease (all of them, expired included), in name order, as the
    /// real controller's informer lister gives them: read from the store, no request made (the
    /// controller is the admin, so RBAC never hid one, and a world keeps no audit).
    fn candidates(&self, server: &ApiServer, namespace: &str, lease: &str) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = server
            .stored_in(Kind::LeaseCandidate, namespace)
            .filter_map(Stored::lease_candidate)
            .filter(|object| &*object.spec.lease_name == lease)
            .map(Candidate::of)
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// `reconcileElectionStep` at true time `t`, the apiserver's clock reading `now` (unix ns).
    pub(super) fn reconcile(&mut self, server: &mut ApiServer, t: Nanos, now: i64, key: usize) -> Step {
        let (namespace, lease_name) = self.keys[key].clone();
        let mut step = Step::default();
        let candidates: Vec<Candidate> = self
            .candidates(server, &namespace, &lease_name)
            .into_iter()
            .filter(|c| c.renew.is_some_and(|r| r + CANDIDATE_VALID_NS >= now))
            .collect();
        if candidates.is_empty() {
            return step;
        }
        let lease = server.peek_lease(&namespace, &lease_name).cloned();
        let expired = |l: &crate::api::Lease| match (l.spec.renew_time, l.spec.lease_duration_seconds) {
            (Some(r), Some(d)) => r.unix_nanos() + d as i64 * 1_000_000_000 < now,
            _ => true,
        };
        let holder = lease.as_ref().and_then(|l| l.spec.holder_identity.clone()).unwrap_or_default();
        let needed = match &lease {
            None => true,
            Some(l) if expired(l) || holder.is_empty() => true,
            Some(_) => {
                candidates.iter().any(|c| c.renew.is_some_and(|r| r + FORCED_REELECTION_NS < now))
                    || pick_best(&candidates).is_some_and(|b| b.name != holder)
            }
        };
        if !needed {
            step.requeue = Some(REQUEUE);
            return step;
        }
        let mut can_vote = true;
        for c in &candidates {
            if c.pending(now) {
                can_vote = false;
                continue;
            }
            if c.renew.is_some_and(|r| r + ELECTION_WINDOW_NS > now) {
                continue;
            }
            let never_acked_old_ping = matches!((c.ping, c.renew), (Some(p), Some(r)) if r < p);
            if c.ping.is_none() || (c.ping.is_some_and(|p| p + ELECTION_WINDOW_NS < now) && !never_acked_old_ping) {
                let time = Some(CandidateTime::Ping(MicroTime::from_unix_nanos(now)));
                let body = Body::LeaseCandidate { object: Arc::clone(&c.object), time };
                let req = self.request(Verb::Update, Kind::LeaseCandidate, &namespace, &c.name, body);
                match server.handle_for_effect(t, &req) {
                    Ok(()) => step.pinged.push(c.name.clone()),
                    Err(e) => step.error = Some(e.message),
                }
                can_vote = false;
            }
        }
        if step.error.is_some() || !can_vote {
            step.requeue = Some(REQUEUE);
            return step;
        }
        let acked: Vec<Candidate> =
            candidates.into_iter().filter(|c| c.renew.is_some_and(|r| r + ELECTION_WINDOW_NS > now)).collect();
        let Some(electee) = pick_best(&acked).map(|c| c.name.clone()) else {
            step.error = Some("no available candidates".into());
            return step;
        };
        match lease {
            None => {
                let stamp = MicroTime::from_unix_nanos(now).to_rfc3339();
                let body = json!({
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": lease_name, "namespace": namespace},
                    "spec": {"holderIdentity": electee, "leaseDurationSeconds": INSTALL_LEASE_SECONDS,
                             "renewTime": stamp, "strategy": STRATEGY},
                });
                let req = self.request(Verb::Create, Kind::Lease, &namespace, &lease_name, Body::Json(body));
                match server.handle_for_effect(t, &req) {
                    Ok(()) => {
                        step.installed = Some(electee);
                        step.requeue = Some(REQUEUE);
                    }
                    Err(e) => step.error = Some(e.message),
                }
            }
            Some(existing) => {
                // Typed: what the real controller changes on its copy (`:391-410`), compared
                // field by field as `reflect.DeepEqual` does (`:412`).
                let mut spec = existing.spec.clone();
                if spec.strategy.as_deref() != Some(STRATEGY) {
                    spec.strategy = Some(STRATEGY.into());
                }
                if holder.is_empty() || (expired(&existing) && holder != electee) {
                    spec.preferred_holder = None;
                    spec.acquire_time = None;
                    spec.holder_identity = Some(electee.clone());
                    spec.renew_time = Some(MicroTime::from_unix_nanos(now));
                    spec.lease_duration_seconds = Some(INSTALL_LEASE_SECONDS);
                    step.installed = Some(electee.clone());
                } else if holder != electee {
                    spec.preferred_holder = Some(electee.clone());
                    step.preferred = Some(electee.clone());
                }
                if spec == existing.spec {
                    // Nothing to change: the electee already holds it or is already preferred.
                    step.installed = None;
                    step.preferred = None;
                } else {
                    let mut updated = crate::api::Lease::clone(&existing);
                    updated.spec = spec;
                    let body = Body::Lease(Arc::new(updated));
                    let req = self.request(Verb::Update, Kind::Lease, &namespace, &lease_name, body);
                    if let Err(e) = server.handle_for_effect(t, &req) {
                        step.error = Some(e.message);
                        step.installed = None;
                        step.preferred = None;
                        return step;
                    }
                }
                step.requeue = Some(REQUEUE);
            }
        }
        step
    }

    /// `LeaseCandidateGCController.gc`: delete every candidate expired on the apiserver's clock.
    pub(super) fn gc(&mut self, server: &mut ApiServer, t: Nanos, now: i64) -> Vec<String> {
        let mut deleted = Vec::new();
        for (namespace, lease) in self.keys.clone() {
            for c in self.candidates(server, &namespace, &lease) {
                if c.renew.is_none_or(|r| r + CANDIDATE_VALID_NS < now) {
                    let req = self.request(Verb::Delete, Kind::LeaseCandidate, &namespace, &c.name, Body::None);
                    if server.handle_for_effect(t, &req).is_ok() {
                        deleted.push(c.name);
                    }
                }
            }
        }
        deleted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// client-go's delaying queue: an `AddAfter` waits with the earliest time it was given; an
    /// immediate `Add` neither cancels nor moves it; a waiting entry coming due while the key is
    /// queued adds no second run (`delaying_queue.go`; docs/sources/kubernetes.md,
    /// Disagreements 1: leasesim replaced the waiting entry, so an install could come 5 s late).
    #[test]
    fn an_add_keeps_the_waiting_requeue_and_addafter_keeps_the_earliest() {
        let mut c = Controller::new();
        let k = c.key("ns", "l");
        let (w, gw) = c.enqueue(k, 5_000, 0).expect("AddAfter 5 s waits");
        assert_eq!(w, 5_000);
        assert_eq!(c.enqueue(k, 7_000, 0), None, "a later AddAfter keeps the earlier time");
        let (q, gq) = c.enqueue(k, 1_000, 1_000).expect("an Add at 1 s queues now");
        assert_eq!(q, 1_000);
        assert_eq!(c.enqueue(k, 1_000, 1_000), None, "queued once");
        assert!(c.take(k, gq), "the Add runs at 1 s");
        assert!(c.take(k, gw), "and the waiting requeue still runs at 5 s");
        // A waiting entry that comes due while the key is queued runs once, not twice.
        let (_, gw) = c.enqueue(k, 9_000, 6_000).unwrap();
        let (_, gq) = c.enqueue(k, 9_000, 9_000).unwrap();
        assert!(!c.take(k, gw), "due while queued: no run of its own");
        assert!(c.take(k, gq));
    }

    /// The controller reads its candidates as its informer's lister would: from the store,
    /// with no request (an audited server records none), and they are exactly what a List of
    /// LeaseCandidates says: the same candidates of the Lease in the same order, the same
    /// fields, and the same body to send back with a ping.
    #[test]
    fn the_controller_reads_its_candidates_as_a_list_would_give_them() {
        let mut server = ApiServer::new(crate::time::DEFAULT_EPOCH_UNIX_NANOS);
        let candidates = [
            (
                "kube-system",
                "b",
                "kube-scheduler",
                json!({"binaryVersion": "1.34.0", "emulationVersion": "1.33.0",
                "renewTime": "2026-01-01T00:00:01.000000Z", "pingTime": "2026-01-01T00:00:02.000000Z"}),
            ),
            (
                "kube-system",
                "a",
                "kube-scheduler",
                json!({"binaryVersion": "1.33.0", "emulationVersion": "1.33.0-rc.1", "renewTime": "2026-01-01T00:00:03.500000Z"}),
            ),
            ("kube-system", "c", "other", json!({"binaryVersion": "1.33.0", "emulationVersion": "1.33.0"})),
            ("default", "d", "kube-scheduler", json!({"binaryVersion": "1.33.0", "emulationVersion": "1.33.0"})),
        ];
        for (i, (namespace, name, lease, spec)) in candidates.into_iter().enumerate() {
            let mut spec = spec;
            spec["leaseName"] = json!(lease);
            spec["strategy"] = json!(STRATEGY);
            let body = json!({"apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate",
                              "metadata": {"name": name, "namespace": namespace, "labels": {"n": name}}, "spec": spec});
            server.seed(i as u64 * 1_500_000_000, body).unwrap();
        }
        server.set_audit(true);
        let controller = Controller::new();
        let read = controller.candidates(&server, "kube-system", "kube-scheduler");
        assert!(server.audit().is_empty(), "the lister made a request: {:?}", server.audit());
        let list = controller.request(Verb::List, Kind::LeaseCandidate, "kube-system", "", Body::None);
        let Ok(crate::api::Object::Json(list)) = server.handle(0, &list) else { panic!("a list") };
        let micros = |v: &serde_json::Value| v.as_str().map(|s| MicroTime::parse(s).unwrap().unix_nanos());
        let listed: Vec<&serde_json::Value> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["spec"]["leaseName"] == "kube-scheduler")
            .collect();
        let summary =
            |c: &Candidate| (c.name.clone(), c.ping, c.renew, c.binary.clone(), c.emulation.clone(), c.created);
        let expected: Vec<_> = listed
            .iter()
            .map(|item| {
                let spec = &item["spec"];
                let version = |key: &str| Version::parse_tolerant(spec[key].as_str().unwrap_or("")).ok();
                let created = Time::parse(item["metadata"]["creationTimestamp"].as_str().unwrap()).unwrap();
                (
                    item["metadata"]["name"].as_str().unwrap().to_string(),
                    micros(&spec["pingTime"]),
                    micros(&spec["renewTime"]),
                    version("binaryVersion"),
                    version("emulationVersion"),
                    created.unix_secs(),
                )
            })
            .collect();
        assert_eq!(read.iter().map(summary).collect::<Vec<_>>(), expected);
        assert_eq!(read.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["a", "b"], "name order");
        // The typed ping is the list item with pingTime set, sent back as JSON (what the
        // controller sent before): the same answer, stored object and resourceVersion, for a
        // candidate pinged before and one never pinged.
        for (c, item) in read.iter().zip(listed) {
            let stamp = "2026-01-01T00:00:09.250000Z";
            let time = Some(CandidateTime::Ping(MicroTime::parse(stamp).unwrap()));
            let outcome = |body: Body| {
                let mut server = server.clone();
                let req = controller.request(Verb::Update, Kind::LeaseCandidate, "kube-system", &c.name, body);
                let answer = server.handle(2_000, &req).map(|o| crate::api::to_json(&o));
                (answer.map_err(|e| e.message), server.peek_json(Kind::LeaseCandidate, "kube-system", &c.name))
            };
            let mut json = item.clone();
            json["spec"]["pingTime"] = json!(stamp);
            let (answer, stored) = outcome(Body::LeaseCandidate { object: Arc::clone(&c.object), time });
            assert_eq!(stored.as_ref().unwrap()["spec"]["pingTime"], stamp);
            assert_eq!((answer, stored), outcome(Body::Json(json)), "{}", c.name);
        }
    }

    /// Step 5c's typed update (the stored Lease with the controller's spec) is what the JSON
    /// body it replaced decodes to: the same answer, stored Lease and resourceVersion, for an
    /// install over an expired holder and for a preferredHolder.
    #[test]
    fn the_typed_lease_update_of_step_5c_is_the_json_body_decoded() {
        let mut server = ApiServer::new(crate::time::DEFAULT_EPOCH_UNIX_NANOS);
        server
            .seed(
                1_000,
                json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "l", "namespace": "kube-system", "labels": {"a": "b"}},
                "spec": {"holderIdentity": "old", "leaseDurationSeconds": 15, "leaseTransitions": 3,
                         "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": "2026-01-01T00:00:01.250000Z"}}),
            )
            .unwrap();
        let existing = server.peek_lease("kube-system", "l").cloned().unwrap();
        let controller = Controller::new();
        let install = crate::api::LeaseSpec {
            holder_identity: Some("new".into()),
            lease_duration_seconds: Some(INSTALL_LEASE_SECONDS),
            renew_time: Some(MicroTime::from_unix_nanos(1_767_225_609_123_456_789)),
            acquire_time: None,
            preferred_holder: None,
            strategy: Some(STRATEGY.into()),
            ..existing.spec.clone()
        };
        let prefer = crate::api::LeaseSpec {
            preferred_holder: Some("new".into()),
            strategy: Some(STRATEGY.into()),
            ..existing.spec.clone()
        };
        for spec in [install, prefer] {
            let outcome = |body: Body| {
                let mut server = server.clone();
                let req = controller.request(Verb::Update, Kind::Lease, "kube-system", "l", body);
                let answer = server.handle(2_000, &req).map(|o| crate::api::to_json(&o));
                (answer.map_err(|e| e.message), server.peek_json(Kind::Lease, "kube-system", "l"))
            };
            let mut updated = crate::api::Lease::clone(&existing);
            updated.spec = spec.clone();
            let mut json = serde_json::to_value(existing.as_ref()).unwrap();
            json["spec"] = serde_json::to_value(&spec).unwrap();
            json["apiVersion"] = json!("coordination.k8s.io/v1");
            json["kind"] = json!("Lease");
            let typed = outcome(Body::Lease(Arc::new(updated)));
            assert_eq!(typed.1.as_ref().unwrap()["spec"], json["spec"]);
            assert_eq!(typed, outcome(Body::Json(json)));
        }
    }

    fn candidate(name: &str, binary: &str, emulation: &str, created: i64) -> Candidate {
        Candidate {
            name: name.into(),
            ping: None,
            renew: None,
            binary: Version::parse_tolerant(binary).ok(),
            emulation: Version::parse_tolerant(emulation).ok(),
            created,
            object: Arc::default(),
        }
    }

    /// `pickBestLeaderOldestEmulationVersion` and `compare` (election.go v1beta1, lines in
    /// docs/sources/kubernetes.md): a candidate whose version does not parse by
    /// `ParseTolerant` is skipped, not taken as the oldest; a prerelease is below its release;
    /// equal versions → the older creation, and a tie keeps the first.
    #[test]
    fn the_electee_skips_unparsable_versions_and_orders_prereleases_first() {
        let pick = |cs: &[Candidate]| pick_best(cs).map(|c| c.name.clone());
        let cs = [candidate("a", "1.34.0", "1.33.0", 10), candidate("b", "1.33.0", "", 5)];
        assert_eq!(pick(&cs).as_deref(), Some("a"), "an empty emulation version does not parse: skipped");
        let cs = [candidate("a", "1.34.0", "1.34.0", 10), candidate("b", "1.34.0-rc.1", "1.34.0-rc.1", 20)];
        assert_eq!(pick(&cs).as_deref(), Some("b"), "1.34.0-rc.1 is older than 1.34.0");
        let cs = [candidate("a", "v1.33", "1.33", 20), candidate("b", "1.33.0", "1.33.0", 10)];
        assert_eq!(pick(&cs).as_deref(), Some("b"), "the same versions: the older creation");
        let cs = [candidate("a", "1.33.0", "1.33.0", 10), candidate("b", "1.33.0", "1.33.0", 10)];
        assert_eq!(pick(&cs).as_deref(), Some("a"), "a tie keeps the current electee");
        let cs = [candidate("a", "1.33.0", "x", 10)];
        assert_eq!(pick(&cs), None, "no candidate with versions that parse");
    }
}
