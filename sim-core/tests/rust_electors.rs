//! Parity tests for the Rust crates' electors (kube-lease-manager, kube-coordinate, kubert,
//! kube-leader-election), each named after the behaviour it pins, with the source line it comes
//! from (as docs/sources/kube-leader-election.md, kube-lease-manager.md, kube-coordinate.md and kubert.md records them; the sources were read again at the commits
//! in each module's header).

use sim_core::elector::{Algorithm, ElectorConfig, Note};
use sim_core::model::Target;
use sim_core::model::{FaultKind, TimedFault, WorldSpec};
use sim_core::net::{Cut, PartitionMode};
use sim_core::time::{Nanos, as_secs_f64, millis, secs};
use sim_core::trace::TraceKind;
use sim_core::world::{RunResult, SpanKind, World};
use std::collections::BTreeMap;

const NS: &str = "op-leader";
const LEASE: &str = "widget-operator";

fn spec(n: usize, algorithm: Algorithm, duration: Nanos) -> WorldSpec {
    let mut s = WorldSpec::basic(1, n, algorithm, duration);
    s.trace = true;
    // Node 0 leads: the others start a little later.
    for (i, node) in s.nodes.iter_mut().enumerate() {
        node.start_at = secs(i as u64);
    }
    s
}

/// The Lease exists before the run, with this spec (kubert needs one: `init` GETs it).
fn with_lease(s: &mut WorldSpec, spec: serde_json::Value) {
    std::sync::Arc::make_mut(&mut s.setup_objects).push(serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": LEASE, "namespace": NS},
        "spec": spec,
    }));
}

fn run(spec: WorldSpec) -> RunResult {
    World::new(spec).expect("valid spec").run()
}

fn fault(at: Nanos, node: usize, kind: FaultKind) -> TimedFault {
    TimedFault { at, target: Target::Node(node), kind }
}

fn partition(duration: Nanos, mode: PartitionMode) -> FaultKind {
    FaultKind::Partition { duration, cut: Cut::Both, mode }
}

/// The leader spans of `node`, as (from, until) in seconds.
fn acting(r: &RunResult, node: usize) -> Vec<(f64, f64)> {
    r.spans
        .iter()
        .filter(|s| s.node == node && s.kind == SpanKind::Leader)
        .map(|s| (as_secs_f64(s.from), as_secs_f64(s.until)))
        .collect()
}

fn notes(r: &RunResult, node: usize, note: Note) -> Vec<f64> {
    r.trace
        .iter()
        .filter(|e| e.node == Some(node) && matches!(e.kind, TraceKind::Note { note: n } if n == note))
        .map(|e| as_secs_f64(e.t))
        .collect()
}

/// The elector requests of `node` with `verb`: (sent at, status code the server answered, if
/// it handled it).
fn requests(r: &RunResult, node: usize, verb: &str) -> Vec<(f64, Option<u16>)> {
    let mut sent = BTreeMap::new();
    let mut codes = BTreeMap::new();
    for e in &r.trace {
        match &e.kind {
            TraceKind::Request { id, verb: v, origin: "elector", .. } if e.node == Some(node) && *v == verb => {
                sent.insert(*id, as_secs_f64(e.t));
            }
            TraceKind::Applied { id, code, .. } => {
                codes.insert(*id, *code);
            }
            _ => {}
        }
    }
    sent.into_iter().map(|(id, t)| (t, codes.get(&id).copied())).collect()
}

fn exceptions(r: &RunResult, node: usize) -> Vec<f64> {
    r.trace
        .iter()
        .filter(|e| e.node == Some(node) && matches!(e.kind, TraceKind::Exception { .. }))
        .map(|e| as_secs_f64(e.t))
        .collect()
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance
}

// ---- defaults and validation ---------------------------------------------------------------

/// Each crate's defaults: kube-lease-manager LD 30 s, grace 5 s (manager.rs:24-26), no read
/// timeout (kube ≥ 4.0.0); kube-coordinate 15/10/2 and api_timeout 5 s (lib.rs:152-165); kubert
/// LD 30 s, grace 1 s (lease.rs:118-125), API_TIMEOUT 10 s (:164); kube-leader-election
/// ttl 15 s polled every 5 s (README, examples/shared-lease.rs:40, :49), kube 3's 295 s read
/// timeout.
#[test]
fn rust_crates_have_their_own_defaults() {
    let c = ElectorConfig::new("a", Algorithm::KubeLeaseManager);
    assert_eq!((c.lease_duration, c.grace, c.request_timeout), (secs(30), secs(5), None));
    let c = ElectorConfig::new("a", Algorithm::KubeCoordinate);
    assert_eq!((c.lease_duration, c.renew_deadline, c.retry_period), (secs(15), secs(10), secs(2)));
    assert_eq!(c.request_timeout, Some(secs(5)));
    let c = ElectorConfig::new("a", Algorithm::Kubert);
    assert_eq!((c.lease_duration, c.grace, c.request_timeout), (secs(30), secs(1), Some(secs(10))));
    let c = ElectorConfig::new("a", Algorithm::KubeLeaderElection);
    assert_eq!((c.lease_duration, c.retry_period, c.request_timeout), (secs(15), secs(5), Some(secs(295))));
    assert_eq!(Algorithm::parse("renew-time-unfenced"), Some(Algorithm::RenewTimeUnfenced));
    assert!(!Algorithm::RenewTimeUnfenced.runs_client_go_loop());
}

/// kube-lease-manager manager.rs:317-335 (`LeaseParams::new` panics unless 0 < grace < LD);
/// kube-coordinate lib.rs:240-286 (`Config::validate`, in its order and words); kubert and
/// kube-leader-election check nothing.
#[test]
fn rust_crates_validate_as_their_sources_do() {
    let with = |algorithm, ld: Nanos, rd: Nanos, rp: Nanos, grace: Nanos| {
        let mut c = ElectorConfig::new("a", algorithm);
        (c.lease_duration, c.renew_deadline, c.retry_period, c.grace) = (ld, rd, rp, grace);
        c.validate()
    };
    let klm = Algorithm::KubeLeaseManager;
    assert_eq!(with(klm, secs(30), 0, 0, secs(5)), Ok(()));
    assert_eq!(
        with(klm, secs(30), 0, 0, secs(30)).unwrap_err().message,
        "grace period should be less than lease lock duration"
    );
    assert_eq!(
        with(klm, secs(30), 0, 0, millis(500)).unwrap_err().message,
        "duration and grace period should be greater than zero"
    );
    let kc = Algorithm::KubeCoordinate;
    assert_eq!(with(kc, secs(15), secs(10), secs(2), 0), Ok(()));
    assert_eq!(
        with(kc, secs(10), secs(10), secs(2), 0).unwrap_err().message,
        "lease_duration must be greater than renew_deadline"
    );
    assert_eq!(
        with(kc, secs(15), millis(2_400), secs(2), 0).unwrap_err().message,
        "renew_deadline must be greater than retry_period*1.2"
    );
    assert_eq!(
        with(kc, secs(15), secs(10), millis(800), 0).unwrap_err().message,
        "retry_period must be at least 1 second"
    );
    assert_eq!(with(Algorithm::Kubert, secs(5), secs(10), secs(20), secs(9)), Ok(()));
    assert_eq!(with(Algorithm::KubeLeaderElection, secs(5), secs(10), secs(20), 0), Ok(()));
}

// ---- kube-lease-manager --------------------------------------------------------------------

/// kube-lease-manager manager.rs:703-710 (the holder sleeps until `expiry − grace`, then
/// `lock(Soft)`) and state.rs:159-224 (renew = strategic patch of renewTime and LD, then
/// `sync(Force)`): with LD 30 s and grace 5 s the leader renews every 25 s. The acquisition is an
/// SSA apply followed by a separate `{leaseTransitions: 1}` patch of the empty Lease it created
/// (state.rs:308-339).
#[test]
fn kube_lease_manager_renews_at_expiry_minus_grace() {
    let (r, lease) = World::new(spec(1, Algorithm::KubeLeaseManager, secs(100))).unwrap().run_and_peek(NS, LEASE);
    let renewed = notes(&r, 0, Note::RenewedLease);
    assert_eq!(renewed.len(), 3, "{renewed:?}");
    for (k, t) in renewed.iter().enumerate() {
        assert!(close(*t, 25.0 * (k + 1) as f64, 0.05), "renewal {k} at {t}");
    }
    assert_eq!(requests(&r, 0, "create").len(), 1, "the empty Lease of AutoCreate");
    assert_eq!(requests(&r, 0, "apply").len(), 1, "one SSA acquisition");
    // Three renewals plus the transitions patch; none carries a resourceVersion, all land.
    let patches = requests(&r, 0, "patch");
    assert_eq!(patches.len(), 4);
    assert!(patches.iter().all(|&(_, code)| code == Some(200)), "{patches:?}");
    let lease = lease.unwrap();
    assert_eq!(lease.spec.holder_identity.as_deref(), Some("widget-operator-0"));
    assert_eq!(lease.spec.lease_transitions, Some(1));
    assert_eq!(lease.spec.lease_duration_seconds, Some(30));
    assert!(close(acting(&r, 0)[0].0, 0.0, 0.05));
}

/// kube-lease-manager manager.rs:649-682: the flag changes only when a successful read shows
/// another holder; an API or network error ends `changed()` with `Err` and `watch()` retries
/// after its back-off (:617-627) with the flag untouched. A leader cut off (connections refused)
/// from 20 s to 80 s keeps acting the whole time, while the follower takes the expired Lease
/// (force-release, then SSA) soon after 30 s.
#[test]
fn kube_lease_manager_keeps_its_flag_through_api_errors() {
    let mut s = spec(2, Algorithm::KubeLeaseManager, secs(120));
    s.faults.push(fault(secs(20), 0, partition(secs(60), PartitionMode::Refuse)));
    let r = run(s);
    let leader = acting(&r, 0);
    assert!(leader[0].1 >= 80.0, "the cut-off leader stopped acting at {}", leader[0].1);
    let next = acting(&r, 1);
    // The Lease written at ~0 s expires at 30 s; node 1 wakes then, force-releases, sleeps
    // U[100, 1000] ms and locks.
    assert!(next[0].0 > 30.1 && next[0].0 < 31.1, "{next:?}");
    assert!(r.metrics.dual_leader_seconds > 49.0, "{}", r.metrics.dual_leader_seconds);
    assert!(!notes(&r, 0, Note::FailedToRenew).is_empty());
}

/// kube-lease-manager state.rs:95-97 (`is_expired` on the wall clock) and manager.rs:715-728
/// (an expired lock is force-released): a follower whose wall clock is 10 s ahead — more than
/// the 5 s grace — sees a healthy Lease expire 20 s after its renewal, nulls it and locks it.
/// The old holder learns only at its own renew point (25 s), where its patch without
/// resourceVersion extends the new holder's Lease and its `sync(Force)` shows the new holder.
#[test]
fn kube_lease_manager_follower_ahead_by_more_than_grace_takes_a_healthy_lease() {
    let mut s = spec(2, Algorithm::KubeLeaseManager, secs(60));
    s.nodes[1].clock_mut().offset_ns = 10_000_000_000;
    let (r, lease) = World::new(s).unwrap().run_and_peek(NS, LEASE);
    let next = acting(&r, 1);
    assert!(next[0].0 > 20.1 && next[0].0 < 21.1, "{next:?}");
    let leader = acting(&r, 0);
    assert!(close(leader[0].1, 25.0, 0.05), "{leader:?}");
    let dual = r.metrics.dual_leader_seconds;
    assert!(dual > 3.8 && dual < 5.0, "{dual}");
    // Node 0's last renewal landed on node 1's Lease.
    let patches = requests(&r, 0, "patch");
    assert!(patches.iter().any(|&(t, code)| close(t, 25.0, 0.05) && code == Some(200)), "{patches:?}");
    let lease = lease.unwrap();
    assert_eq!(lease.spec.holder_identity.as_deref(), Some("widget-operator-1"));
    assert_eq!(lease.spec.lease_transitions, Some(2));
}

/// kube-lease-manager manager.rs:595-602 and state.rs:226-248: a graceful stop (the receivers
/// dropped) releases by nulling holder, LD and both times (transitions kept). Followers sleep to
/// the expiry they cached, so the release does not bring the takeover forward: node 1 locks at
/// the old expiry (the renewal at 25 s + 30 s).
#[test]
fn kube_lease_manager_release_nulls_the_lease_and_followers_still_wait_for_the_cached_expiry() {
    let mut s = spec(2, Algorithm::KubeLeaseManager, secs(45));
    s.faults.push(fault(secs(40), 0, FaultKind::Stop));
    let (r, lease) = World::new(s).unwrap().run_and_peek(NS, LEASE);
    let lease = lease.unwrap();
    assert_eq!(lease.spec.holder_identity, None);
    assert_eq!(lease.spec.lease_duration_seconds, None);
    assert_eq!(lease.spec.renew_time, None);
    assert_eq!(lease.spec.acquire_time, None);
    assert_eq!(lease.spec.lease_transitions, Some(1));
    assert!(close(acting(&r, 0)[0].1, 40.0, 1e-6));
    assert_eq!(notes(&r, 0, Note::Released).len(), 1);

    let mut s = spec(2, Algorithm::KubeLeaseManager, secs(70));
    s.faults.push(fault(secs(40), 0, FaultKind::Stop));
    let r = run(s);
    let next = acting(&r, 1);
    assert!(next[0].0 > 55.0 && next[0].0 < 55.1, "{next:?}");
}

// ---- kube-coordinate -----------------------------------------------------------------------

/// kube-coordinate lib.rs:420-467 and :544-578: the leader renews RD after its last success
/// (its `Instant`), with a server-side apply of its cached Lease and **no GET**; the first
/// acquisition of a missing Lease applies a fresh object (leaseTransitions 1).
#[test]
fn kube_coordinate_leader_renews_every_renew_deadline_without_a_get() {
    let (r, lease) = World::new(spec(1, Algorithm::KubeCoordinate, secs(50))).unwrap().run_and_peek(NS, LEASE);
    let renewed = notes(&r, 0, Note::RenewedLease);
    assert_eq!(renewed.len(), 4, "{renewed:?}");
    for (k, t) in renewed.iter().enumerate() {
        assert!(close(*t, 10.0 * (k + 1) as f64, 0.05), "renewal {k} at {t}");
    }
    assert_eq!(requests(&r, 0, "get").len(), 1, "only the first try GETs");
    assert_eq!(requests(&r, 0, "apply").len(), 5);
    let lease = lease.unwrap();
    assert_eq!(lease.spec.lease_transitions, Some(1));
    assert_eq!(lease.spec.lease_duration_seconds, Some(15));
}

/// kube-coordinate lib.rs:362-381: every member watches the Lease, and each event of a changed
/// Lease restarts its follower's `last_updated`; its timer (LD + U(0.01, 1)·1.2·LD, :551-556)
/// never runs out while the leader renews every RD. A follower of a healthy leader GETs once
/// (its first try) and never writes.
#[test]
fn kube_coordinate_follower_follows_renewals_through_its_watch() {
    let r = run(spec(2, Algorithm::KubeCoordinate, secs(120)));
    assert_eq!(requests(&r, 1, "get").len(), 1);
    assert_eq!(requests(&r, 1, "apply").len(), 0);
    assert!(acting(&r, 1).is_empty());
    assert_eq!(acting(&r, 0).len(), 1);
}

/// kube-coordinate lib.rs:551-556 and :580-591: after the leader dies, a follower takes over
/// `LD + U(0.01, 1.0)·1.2·LD` after the last renewal its watch showed, GETs (nothing changed)
/// and applies the cached Lease with its resourceVersion.
#[test]
fn kube_coordinate_follower_takes_over_ld_plus_jitter_after_the_last_watched_renewal() {
    let mut delays = Vec::new();
    for seed in 1..=8 {
        let mut s = spec(2, Algorithm::KubeCoordinate, secs(70));
        s.seed = seed;
        s.faults.push(fault(secs(25), 0, FaultKind::Crash));
        let r = run(s);
        let last_renewal = requests(&r, 0, "apply").last().unwrap().0;
        let took = acting(&r, 1)[0].0;
        // The watch event arrives 2 ms after the apply is sent; the takeover's GET and apply
        // take 4 ms more.
        let delay = took - (last_renewal + 0.002) - 15.0 - 0.004;
        assert!((0.18 - 1e-3..=18.0 + 1e-3).contains(&delay), "seed {seed}: jitter {delay}");
        delays.push(delay);
    }
    assert!(delays.iter().any(|&d| d > 4.0) && delays.iter().any(|&d| d < 14.0), "{delays:?}");
}

/// kube-coordinate lib.rs:580-591: followers judge expiry by their **own** LD from the
/// `Instant` they last saw a change. A member configured with LD 5 s (RD 4 s) times out between
/// the leader's renewals (every 10 s) and takes the healthy Lease with its cached
/// resourceVersion; the old leader sees the new holder through its watch at once.
#[test]
fn kube_coordinate_follower_with_a_shorter_ld_steals_a_healthy_lease() {
    let mut s = spec(2, Algorithm::KubeCoordinate, secs(60));
    let e = s.nodes[1].elector_mut();
    (e.lease_duration, e.renew_deadline, e.retry_period) = (secs(5), secs(4), secs(2));
    let (r, lease) = World::new(s).unwrap().run_and_peek(NS, LEASE);
    let next = acting(&r, 1);
    assert!(!next.is_empty(), "the short-LD member never took the Lease");
    let stop = acting(&r, 0)[0].1;
    assert!(close(stop, next[0].0, 0.01), "old leader stopped at {stop}, new started at {}", next[0].0);
    assert!(r.metrics.dual_leader_seconds < 0.01, "{}", r.metrics.dual_leader_seconds);
    assert_eq!(lease.unwrap().spec.holder_identity.as_deref(), Some("widget-operator-1"));
}

/// kube-coordinate lib.rs:372-377 and :455-463: a renewal slower than `api_timeout` (5 s) is an
/// error, and an error of a timer-driven try drops the leader to Standby at once. The server
/// still applies that renewal; its watch event names the node, which makes it Leading again.
#[test]
fn kube_coordinate_slow_renewal_drops_to_standby_at_the_api_timeout() {
    let mut s = spec(1, Algorithm::KubeCoordinate, secs(40));
    s.faults.push(TimedFault {
        at: secs(15),
        target: Target::Server,
        kind: FaultKind::ServerSlow { duration: secs(10), extra: secs(6) },
    });
    let r = run(s);
    let spans = acting(&r, 0);
    assert_eq!(spans.len(), 2, "{spans:?}");
    // The renewal sent at ~20.006 s times out 5 s later; it is applied at ~26.007 s and its
    // event arrives 1 ms after.
    assert!(close(spans[0].1, 25.006, 0.01), "{spans:?}");
    assert!(close(spans[1].0, 26.008, 0.01), "{spans:?}");
    assert_eq!(notes(&r, 0, Note::FailedToRenew).len(), 1);
}

/// kube-coordinate lib.rs:433-448 and :511-515: a Lease whose holder is `""` is `Standby`, and
/// a Standby acquisition applies a fresh object without resourceVersion, which resets
/// leaseTransitions to 1.
#[test]
fn kube_coordinate_standby_acquisition_resets_transitions() {
    let mut s = spec(1, Algorithm::KubeCoordinate, secs(5));
    with_lease(&mut s, serde_json::json!({"holderIdentity": "", "leaseDurationSeconds": 15, "leaseTransitions": 7}));
    let (r, lease) = World::new(s).unwrap().run_and_peek(NS, LEASE);
    assert!(close(acting(&r, 0)[0].0, 0.004, 0.002), "{:?}", acting(&r, 0));
    let lease = lease.unwrap();
    assert_eq!(lease.spec.holder_identity.as_deref(), Some("widget-operator-0"));
    assert_eq!(lease.spec.lease_transitions, Some(1));
}

// ---- kubert --------------------------------------------------------------------------------

/// kubert lease.rs:170-181: `init` GETs the Lease and a 404 is an error; the program exits
/// (and is restarted), nobody creates the Lease. With the Lease present (an empty spec: no
/// claim, :555-566) the first `ensure_claimed` acquires at once.
#[test]
fn kubert_needs_an_existing_lease() {
    let r = run(spec(1, Algorithm::Kubert, secs(30)));
    assert!(acting(&r, 0).is_empty());
    assert!(requests(&r, 0, "create").is_empty() && requests(&r, 0, "apply").is_empty());
    // At 0 s, then after each 10 s restart.
    assert_eq!(exceptions(&r, 0).len(), 3, "{:?}", exceptions(&r, 0));

    let mut s = spec(1, Algorithm::Kubert, secs(30));
    with_lease(&mut s, serde_json::json!({}));
    let (r, lease) = World::new(s).unwrap().run_and_peek(NS, LEASE);
    assert!(close(acting(&r, 0)[0].0, 0.004, 0.002), "{:?}", acting(&r, 0));
    let lease = lease.unwrap();
    assert_eq!(lease.spec.holder_identity.as_deref(), Some("widget-operator-0"));
    assert_eq!(lease.spec.lease_transitions, Some(1));
}

/// kubert lease.rs:229-236 and :384-396: the holder waits until `expiry − grace` (1 s) and
/// renews then; the claim's expiry is the renewTime it wrote plus its LD (:503-506). With LD
/// 30 s: renewals every 29 s.
#[test]
fn kubert_renews_one_grace_before_its_expiry() {
    let mut s = spec(1, Algorithm::Kubert, secs(100));
    with_lease(&mut s, serde_json::json!({}));
    let r = run(s);
    let renewed = notes(&r, 0, Note::RenewedLease);
    assert_eq!(renewed.len(), 3, "{renewed:?}");
    for (k, t) in renewed.iter().enumerate() {
        assert!(close(*t, 29.0 * (k + 1) as f64, 0.05), "renewal {k} at {t}");
    }
    assert_eq!(acting(&r, 0).len(), 1);
}

/// kubert lease.rs:137-140: the consumer acts while `wall_now < claim.expiry`; the leader
/// renews only 1 s before it. A renewal that takes 2 s (a slow server) lets the claim lapse at
/// 30 s until the renewed claim is published at ~31 s.
#[test]
fn kubert_claim_lapses_when_a_renewal_takes_longer_than_the_grace() {
    let mut s = spec(1, Algorithm::Kubert, secs(45));
    with_lease(&mut s, serde_json::json!({}));
    s.faults.push(TimedFault {
        at: secs(28),
        target: Target::Server,
        kind: FaultKind::ServerSlow { duration: secs(3), extra: secs(2) },
    });
    let r = run(s);
    let spans = acting(&r, 0);
    assert_eq!(spans.len(), 2, "{spans:?}");
    assert!(close(spans[0].1, 30.002, 0.005), "{spans:?}");
    assert!(close(spans[1].0, 31.004, 0.005), "{spans:?}");
}

/// kubert lease.rs:374-414 with backon's defaults (the intended back-off is discarded,
/// :376-378): `ensure_claimed` is retried 3 times, 1 s apart for the holder (max_delay = grace);
/// then the task returns the error, and nothing renews, acquires or vacates again. A leader
/// whose connections are refused from 25 s stops acting at its claim's expiry (30 s), its task
/// dies at 32 s, and it never leads again after the cut heals; node 1 acquires at 30 s with the
/// resourceVersion it cached.
#[test]
fn kubert_task_dies_after_three_retries_and_never_vacates() {
    let mut s = spec(2, Algorithm::Kubert, secs(90));
    with_lease(&mut s, serde_json::json!({}));
    s.faults.push(fault(secs(25), 0, partition(secs(20), PartitionMode::Refuse)));
    let r = run(s);
    assert_eq!(acting(&r, 0).len(), 1);
    assert!(close(acting(&r, 0)[0].1, 30.002, 0.005), "{:?}", acting(&r, 0));
    let died = exceptions(&r, 0);
    assert_eq!(died.len(), 1);
    assert!(close(died[0], 32.002, 0.005), "{died:?}");
    // Four attempts (29, 30, 31, 32 s), then silence.
    let patches = requests(&r, 0, "patch");
    assert_eq!(patches.len(), 4, "{patches:?}");
    assert!(
        r.trace
            .iter()
            .filter(|e| e.node == Some(0) && e.t > secs(33))
            .all(|e| !matches!(e.kind, TraceKind::Request { .. }))
    );
    assert!(close(acting(&r, 1)[0].0, 30.004, 0.005), "{:?}", acting(&r, 1));
}

/// kubert lease.rs:266-288: a follower does not GET before acquiring: at its cached claim's
/// expiry it applies with the cached resourceVersion; the leader renewed 1 s earlier, so the
/// apply is a 409, followed by a GET and the renewed claim. One 409 per lease period.
#[test]
fn kubert_follower_acquires_blind_at_the_cached_expiry_and_gets_a_conflict() {
    let mut s = spec(2, Algorithm::Kubert, secs(100));
    with_lease(&mut s, serde_json::json!({}));
    let r = run(s);
    assert!(acting(&r, 1).is_empty());
    let applies = requests(&r, 1, "apply");
    assert_eq!(applies.len(), 3, "{applies:?}");
    for (k, &(t, code)) in applies.iter().enumerate() {
        assert_eq!(code, Some(409));
        assert!(close(t, 30.0 + 29.0 * k as f64, 0.05), "apply {k} at {t}");
    }
    // init's GET and one after each conflict.
    assert_eq!(requests(&r, 1, "get").len(), 4);
}

/// kubert lease.rs:308-353: on shutdown (receivers dropped) the holder vacates with a
/// strategic patch carrying its cached resourceVersion that nulls holder, LD and both times;
/// transitions are kept. The follower still waits for its cached expiry (59 s), whose apply
/// then conflicts, re-reads an unclaimed Lease and acquires.
#[test]
fn kubert_vacate_nulls_the_lease() {
    let mut s = spec(2, Algorithm::Kubert, secs(45));
    with_lease(&mut s, serde_json::json!({}));
    s.faults.push(fault(secs(40), 0, FaultKind::Stop));
    let (r, lease) = World::new(s).unwrap().run_and_peek(NS, LEASE);
    let lease = lease.unwrap();
    assert_eq!(lease.spec.holder_identity, None);
    assert_eq!(lease.spec.lease_duration_seconds, None);
    assert_eq!(lease.spec.renew_time, None);
    assert_eq!(lease.spec.lease_transitions, Some(1));
    assert_eq!(notes(&r, 0, Note::Released).len(), 1);
    assert!(close(acting(&r, 0)[0].1, 40.0, 1e-6));

    let mut s = spec(2, Algorithm::Kubert, secs(70));
    with_lease(&mut s, serde_json::json!({}));
    s.faults.push(fault(secs(40), 0, FaultKind::Stop));
    let r = run(s);
    let next = acting(&r, 1);
    assert!(close(next[0].0, 59.008, 0.01), "{next:?}");
}

// ---- kube-leader-election ------------------------------------------------------------------

/// kube-leader-election lease.rs:250-270 and examples/shared-lease.rs:44-50: polled every 5 s
/// (the sleep after each call), the holder's call is a GET and a merge patch of renewTime and
/// LD only, without resourceVersion.
#[test]
fn kube_leader_election_polls_every_five_seconds_and_patches_renew_time_only() {
    let (r, lease) = World::new(spec(1, Algorithm::KubeLeaderElection, secs(30))).unwrap().run_and_peek(NS, LEASE);
    let renewed = notes(&r, 0, Note::RenewedLease);
    assert_eq!(renewed.len(), 5, "{renewed:?}");
    for (k, t) in renewed.iter().enumerate() {
        // Each cycle is the 5 s sleep plus a GET and a patch (2 ms each).
        assert!(close(*t, 5.0 * (k + 1) as f64 + 0.004 * (k + 2) as f64, 0.002), "renewal {k} at {t}");
    }
    assert_eq!(requests(&r, 0, "create").len(), 1);
    let lease = lease.unwrap();
    assert_eq!(lease.spec.lease_transitions, Some(0));
    assert_eq!(lease.spec.lease_duration_seconds, Some(15));
}

/// kube-leader-election examples/shared-lease.rs:45-48: an `Err` leaves the flag as it was. A
/// leader whose connections are refused from 12 s to 42 s acts throughout; a follower takes the
/// Lease once its renewTime + 15 s has passed, and the old leader stops only at its first poll
/// after the heal (`NotAcquired`).
#[test]
fn kube_leader_election_keeps_its_flag_on_errors() {
    let mut s = spec(2, Algorithm::KubeLeaderElection, secs(60));
    s.faults.push(fault(secs(12), 0, partition(secs(30), PartitionMode::Refuse)));
    let r = run(s);
    let leader = acting(&r, 0);
    assert!(leader[0].1 > 42.0 && leader[0].1 < 47.1, "{leader:?}");
    let next = acting(&r, 1);
    assert!(next[0].0 > 25.0 && next[0].0 < 31.1, "{next:?}");
    assert!(r.metrics.dual_leader_seconds > 11.0);
}

/// kube-leader-election lease.rs:212-247: acquisitions are merge patches without
/// resourceVersion and the response is not checked, so two candidates polling in step both see
/// the expired Lease, both patch, and both are `Acquired` until their next poll; both wrote
/// `leaseTransitions: old + 1`, so the count went up once for two acquisitions.
#[test]
fn kube_leader_election_racing_acquirers_both_get_acquired() {
    let mut s = spec(3, Algorithm::KubeLeaderElection, secs(60));
    s.nodes[2].start_at = secs(1);
    s.faults.push(fault(secs(12), 0, FaultKind::Crash));
    let (r, lease) = World::new(s).unwrap().run_and_peek(NS, LEASE);
    assert_eq!(acting(&r, 1).len(), 1);
    assert_eq!(acting(&r, 2).len(), 1);
    let dual = r.metrics.dual_leader_seconds;
    assert!(close(dual, 5.0, 0.01), "{dual}");
    assert_eq!(lease.unwrap().spec.lease_transitions, Some(1));
}

/// kube-leader-election lease.rs:147-161: a Lease without holderIdentity is an error on every
/// call (`TraverseLease`), not a free Lease: it is never acquired.
#[test]
fn kube_leader_election_cannot_take_a_lease_without_holder() {
    let mut s = spec(1, Algorithm::KubeLeaderElection, secs(30));
    with_lease(&mut s, serde_json::json!({}));
    let r = run(s);
    assert!(acting(&r, 0).is_empty());
    assert!(requests(&r, 0, "patch").is_empty());
    assert_eq!(requests(&r, 0, "get").len(), 6);
}

/// kube-leader-election lease.rs:273-319 (`step_down`): GET, then a merge patch `{holder: "",
/// LD: 1, times now}`; lease.rs:164-186 has no empty-holder shortcut, so a follower polling
/// within that second leaves it, and takes it at its next poll.
#[test]
fn kube_leader_election_step_down_and_no_empty_holder_shortcut() {
    let mut s = spec(2, Algorithm::KubeLeaderElection, secs(21));
    s.nodes[0].elector_mut().release_on_cancel = true;
    s.faults.push(fault(millis(20_500), 0, FaultKind::Stop));
    let (_, lease) = World::new(s.clone()).unwrap().run_and_peek(NS, LEASE);
    let lease = lease.unwrap();
    assert_eq!(lease.spec.holder_identity.as_deref(), Some(""));
    assert_eq!(lease.spec.lease_duration_seconds, Some(1));
    assert_eq!(lease.spec.lease_transitions, Some(0));

    s.duration = secs(30);
    let r = run(s);
    assert!(close(acting(&r, 0)[0].1, 20.502, 0.005), "{:?}", acting(&r, 0));
    // Node 1 polls at ~21.008 (held by "" until 21.502) and ~26.010.
    let next = acting(&r, 1);
    assert!(close(next[0].0, 26.014, 0.005), "{next:?}");
}

/// `renew-time-unfenced` is kube-leader-election under its old name.
#[test]
fn renew_time_unfenced_runs_kube_leader_election() {
    let outcome = |algorithm| {
        let mut s = spec(3, algorithm, secs(60));
        s.faults.push(fault(secs(12), 0, FaultKind::Crash));
        let r = run(s);
        (acting(&r, 0), acting(&r, 1), acting(&r, 2), r.metrics.dual_leader_seconds)
    };
    assert_eq!(outcome(Algorithm::RenewTimeUnfenced), outcome(Algorithm::KubeLeaderElection));
    // And what is kube-leader-election's own, so the pair cannot agree by both being another
    // elector: its leader renews with a JSON merge patch (lease.rs renew_lease), never a PUT.
    let r = run(spec(3, Algorithm::RenewTimeUnfenced, secs(60)));
    let requests = &r.metrics.api_requests_by_verb_status;
    assert!(requests.get("patch 200").is_some_and(|&n| n >= 10), "{requests:?}");
    assert!(!requests.keys().any(|k| k.starts_with("update")), "{requests:?}");
}

// ---- mixed -------------------------------------------------------------------------------

/// The crates read each other's records (notes §7): a kubert leader vacates (holder, times and
/// LD null); a kube-leader-election node can never take that Lease (lease.rs:147-161), while a
/// kube-lease-manager node reads an unlocked Lease and locks it.
#[test]
fn a_vacated_lease_is_taken_by_kube_lease_manager_but_not_kube_leader_election() {
    let outcome = |follower: Algorithm| {
        let mut s = spec(2, Algorithm::Kubert, secs(120));
        with_lease(&mut s, serde_json::json!({}));
        let mut e = ElectorConfig::new("widget-operator-1", follower);
        e.lease_namespace = NS.into();
        e.lease_name = LEASE.into();
        s.nodes[1].elector = e.into();
        s.faults.push(fault(secs(20), 0, FaultKind::Stop));
        run(s)
    };
    let r = outcome(Algorithm::KubeLeaderElection);
    assert!(acting(&r, 1).is_empty(), "{:?}", acting(&r, 1));
    let r = outcome(Algorithm::KubeLeaseManager);
    assert_eq!(acting(&r, 1).len(), 1);
}
