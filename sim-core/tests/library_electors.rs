//! Parity tests for the library electors (controller-runtime, fabric8, the Java and C# clients,
//! nestjs) and the world's `stop_acting`, each named after the behaviour it pins, with the
//! source line it comes from (as docs/sources/<library>.md records them).

use sim_core::elector::{AfterLost, Algorithm, Note};
use sim_core::model::{FaultKind, StopActing, Target, TimedFault, WorldSpec};
use sim_core::net::{Cut, PartitionMode};
use sim_core::time::{Nanos, as_secs_f64, millis, secs};
use sim_core::trace::{TraceEvent, TraceKind};
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

/// Times of the writes of `node` the server applied with 200 (verb "update" or "patch").
fn applied_writes(trace: &[TraceEvent], node: usize) -> Vec<f64> {
    let mut verbs = BTreeMap::new();
    let mut out = Vec::new();
    for e in trace {
        match &e.kind {
            TraceKind::Request { id, verb, origin: "elector", .. } if e.node == Some(node) => {
                verbs.insert(*id, *verb);
            }
            TraceKind::Applied { id, code: 200, .. } if matches!(verbs.get(id), Some(&"update" | &"patch")) => {
                out.push(as_secs_f64(e.t))
            }
            _ => {}
        }
    }
    out
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance
}

// ---- fabric8 -------------------------------------------------------------------------------

/// fabric8 LeaderElector.java:152-168 (release) writes `holderIdentity: null`, which the merge
/// patch leaves out (`LeaseSpec` is `@JsonInclude(NON_NULL)`, LeaseSpec.java:52): the server
/// keeps holder = self with leaseDurationSeconds 1; transitions are kept (LE:243-248).
#[test]
fn fabric8_release_leaves_holder_set_with_ld_1() {
    let mut s = spec(2, Algorithm::Fabric8, millis(30_500));
    s.nodes[0].elector_mut().release_on_cancel = true;
    s.faults.push(fault(secs(30), 0, FaultKind::Stop));
    let (r, lease) = World::new(s).unwrap().run_and_peek(NS, LEASE);
    let lease = lease.expect("the Lease exists");
    assert_eq!(lease.spec.holder_identity.as_deref(), Some("widget-operator-0"));
    assert_eq!(lease.spec.lease_duration_seconds, Some(1));
    assert_eq!(lease.spec.lease_transitions, Some(0));
    // Acting ends when the release patch's answer comes back (updateObserved self → null).
    let released = notes(&r, 0, Note::Released);
    assert_eq!(released.len(), 1);
    assert!(close(acting(&r, 0)[0].1, released[0], 1e-6), "{:?} {released:?}", acting(&r, 0));
}

/// ... and a candidate takes it over once renewTime + 1 s has passed (LE:278-281: the record's
/// duration, wall clock), with leaseTransitions + 1.
#[test]
fn fabric8_released_lease_is_taken_over_after_its_one_second() {
    let mut s = spec(2, Algorithm::Fabric8, secs(40));
    s.nodes[0].elector_mut().release_on_cancel = true;
    s.faults.push(fault(secs(30), 0, FaultKind::Stop));
    let (r, lease) = World::new(s).unwrap().run_and_peek(NS, LEASE);
    let lease = lease.unwrap();
    assert_eq!(lease.spec.holder_identity.as_deref(), Some("widget-operator-1"));
    assert_eq!(lease.spec.lease_transitions, Some(1));
    let took = acting(&r, 1)[0].0;
    // Not before renewTime + 1 s; within one jittered acquire delay (≤ 2.2·RP) after it.
    assert!(took > 31.0 && took < 31.0 + 4.4 + 0.1, "node 1 acts from {took}");
}

/// fabric8 before 7.5.0 (`2e72b95aba`): the release wrote holder `""`, so the Lease is free
/// at once; since, `null` leaves the holder set (the test above).
#[test]
fn fabric8_6_9_release_empties_the_holder() {
    let mut s = spec(2, Algorithm::Fabric8, millis(30_500));
    s.nodes[0].elector_mut().release_on_cancel = true;
    s.nodes[0].elector_mut().version = 2; // "6.9.0"
    s.faults.push(fault(secs(30), 0, FaultKind::Stop));
    let (_, lease) = World::new(s).unwrap().run_and_peek(NS, LEASE);
    let lease = lease.unwrap();
    assert_eq!(lease.spec.holder_identity.as_deref(), Some(""));
    assert_eq!(lease.spec.lease_duration_seconds, Some(1));
}

/// fabric8 before 6.9.0 (v6.8.1 LE:117-154; fixed by `0f6c696509`, #5463): with
/// releaseOnCancel, `stopLeading` only calls `release()`, whose Get is outside its try. A leader
/// partitioned past its renew deadline: the Get times out, the exception leaves `stopLeading`,
/// `onStopLeading` never runs and the work goes on beside the standby that took the Lease.
/// 6.9.0 catches it and calls `onStopLeading`.
#[test]
fn fabric8_6_8_skips_on_stop_leading_when_the_release_read_fails() {
    let stops = |version: u8| {
        let mut s = spec(2, Algorithm::Fabric8, secs(120));
        s.nodes[0].elector_mut().release_on_cancel = true;
        s.nodes[0].elector_mut().version = version;
        s.faults.push(fault(secs(30), 0, partition(secs(40), PartitionMode::Drop)));
        let r = run(s);
        (acting(&r, 0), r.metrics.dual_leader_seconds)
    };
    let (terms, dual) = stops(3); // "6.8.1"
    assert_eq!(terms.len(), 1);
    assert!(terms[0].1 >= 119.9, "6.8.1 acts to the end: {terms:?}");
    assert!(dual > 60.0, "{dual}");
    let (terms, dual) = stops(2); // "6.9.0"
    assert!(terms[0].1 < 60.0, "6.9.0 stops: {terms:?}");
    assert!(dual < 10.0, "{dual}");
}

/// fabric8 before 7.7.0 (v7.6.1 LE:221-250, fixed by `094ff8c999`, #7350): a Get naming self
/// is observed before the write, so a process restarted under the same name starts leading
/// before its patch is even sent; 7.7.0 starts leading only once the write is answered.
#[test]
fn fabric8_7_5_starts_leading_before_its_write_and_7_7_after() {
    let started_vs_write = |version: u8| {
        let mut s = spec(1, Algorithm::Fabric8, secs(30));
        s.nodes[0].elector_mut().version = version;
        s.faults.push(fault(secs(10), 0, FaultKind::Restart { delay: secs(1) }));
        let r = run(s);
        let started: Vec<f64> = r
            .trace
            .iter()
            .filter(|e| e.t > secs(11) && matches!(e.kind, TraceKind::StartedLeading))
            .map(|e| as_secs_f64(e.t))
            .collect();
        let first_write = applied_writes(&r.trace, 0).into_iter().find(|&t| t > 11.0).unwrap();
        (started[0], first_write)
    };
    let (started, write) = started_vs_write(1);
    assert!(started < write, "7.5.0: onStartLeading at {started}, before the patch lands at {write}");
    let (started, write) = started_vs_write(0);
    assert!(started > write, "7.7.0: onStartLeading at {started}, after the patch landed at {write}");
}

/// fabric8 LE:195-219: `if wall_ms > renewBy: stop` is checked only at the start of a tick.
/// A partition makes the tick after the last renewal block in its Get for the 10 s request
/// timeout (not retried: a Vert.x TimeoutException is not an IOException); the overdue next
/// tick starts at once and only then sees the deadline: the leader stops RP + 10 s after its
/// last success, not RD (10 s) after it.
#[test]
fn fabric8_checks_the_renew_deadline_only_at_tick_start() {
    let mut s = spec(1, Algorithm::Fabric8, secs(60));
    s.faults.push(fault(millis(20_500), 0, partition(secs(30), PartitionMode::Drop)));
    let r = run(s);
    let renewed = notes(&r, 0, Note::RenewedLease);
    let last_ok = renewed.iter().copied().filter(|&t| t < 20.5).fold(0.0, f64::max);
    let stopped = acting(&r, 0)[0].1;
    assert!(close(stopped - last_ok, 12.0, 0.01), "last renewal {last_ok}, stopped {stopped}");
}

/// fabric8 LE:195-219: renewals every RP without jitter (the fixed-rate chain, Utils:510-538),
/// and the renew loop starts at once after the acquisition (a second Get + patch).
#[test]
fn fabric8_renews_every_retry_period_without_jitter() {
    let r = run(spec(1, Algorithm::Fabric8, secs(21)));
    let renewed = notes(&r, 0, Note::RenewedLease);
    assert_eq!(renewed.len(), 11, "{renewed:?}");
    for (k, t) in renewed.iter().enumerate() {
        assert!(close(*t, 2.0 * k as f64, 0.01), "renewal {k} at {t}");
    }
}

// ---- the Java client -----------------------------------------------------------------------

/// kubernetes-client/java LeaderElector.java:338-344: a follower judges expiry by its *own*
/// configured LeaseDuration from its observedTime. A node with LD 15 s takes a Lease whose
/// holder (LD 60 s, renewing every RP = 20 s) is healthy, and both act.
#[test]
fn java_client_uses_its_own_ld_so_a_shorter_ld_node_steals() {
    let mut s = spec(2, Algorithm::JavaClient, secs(60));
    let leader = s.nodes[0].elector_mut();
    (leader.lease_duration, leader.renew_deadline, leader.retry_period) = (secs(60), secs(40), secs(20));
    let r = run(s);
    let first = acting(&r, 1);
    assert!(!first.is_empty(), "the short-LD node never acquired");
    assert!(first[0].0 > 15.0 && first[0].0 < 21.0, "it steals ~15 s after observing: {first:?}");
    assert!(r.metrics.dual_leader_seconds > 1.0, "{}", r.metrics.dual_leader_seconds);
}

/// kubernetes-client/java LeaderElector.java:220-274: after a failed round `run()` returns
/// (stopLeadingHook in its finally) and nothing re-acquires: with `after_lost = exit` (the
/// default) the node never leads again.
#[test]
fn java_client_run_returns_after_losing_and_is_not_called_again() {
    let mut s = spec(2, Algorithm::JavaClient, secs(120));
    assert_eq!(s.nodes[0].elector.after_lost, AfterLost::Exit);
    s.faults.push(fault(secs(30), 0, partition(secs(20), PartitionMode::Refuse)));
    let r = run(s);
    assert_eq!(acting(&r, 0).len(), 1);
    assert!(acting(&r, 0)[0].1 < 30.0 + 10.0 + 0.1);
    assert!(!acting(&r, 1).is_empty());
}

// ---- the C# client -------------------------------------------------------------------------

/// kubernetes-client/csharp LeaderElector.cs:194-200: `observedTime + LD > Now`, with the
/// record's LD since 06c216b9 and the own configured LD before. A follower with LD 15 s and a
/// holder with LD 60 s renewing every 20 s: before the change the follower steals, after it
/// does not.
#[test]
fn csharp_pre_2026_and_post_differ_exactly_on_mixed_lds() {
    let outcome = |algorithm: Algorithm| {
        let mut s = spec(2, algorithm, secs(60));
        let leader = s.nodes[0].elector_mut();
        (leader.lease_duration, leader.renew_deadline, leader.retry_period) = (secs(60), secs(40), secs(20));
        let r = run(s);
        (acting(&r, 1), r.metrics.dual_leader_seconds)
    };
    let (pre, pre_dual) = outcome(Algorithm::CSharpClientPre2026);
    let (post, post_dual) = outcome(Algorithm::CSharpClient);
    assert!(!pre.is_empty() && pre[0].0 > 15.0 && pre[0].0 < 21.0, "{pre:?}");
    assert!(pre_dual > 1.0);
    assert!(post.is_empty(), "{post:?}");
    assert_eq!(post_dual, 0.0);
    // Same LDs everywhere: the two versions agree.
    let same = |algorithm: Algorithm| {
        let r = run(spec(2, algorithm, secs(60)));
        (acting(&r, 0), acting(&r, 1))
    };
    assert_eq!(same(Algorithm::CSharpClientPre2026), same(Algorithm::CSharpClient));
    // `version = "18.0.13"` on csharp-client is the pre-2026 behaviour, to the byte.
    let mut s = spec(2, Algorithm::CSharpClient, secs(60));
    for node in &mut s.nodes {
        node.elector_mut().version = 1;
    }
    let leader = s.nodes[0].elector_mut();
    (leader.lease_duration, leader.renew_deadline, leader.retry_period) = (secs(60), secs(40), secs(20));
    let r = run(s);
    assert_eq!((acting(&r, 1), r.metrics.dual_leader_seconds), (pre, pre_dual));
}

/// kubernetes-client/csharp LeaderElector.cs:58-114: when `Delay(RD)` wins the race the renew
/// task is not cancelled; it keeps trying every RP and renews the Lease after the node has
/// stopped leading. A server slowed by 11 s per request (RD 10 s): node 0 stops acting, then its
/// orphaned task's PUT lands, and for that time nobody acts.
#[test]
fn csharp_orphan_renew_keeps_the_lease_held_after_delay_rd_wins() {
    let mut s = spec(2, Algorithm::CSharpClient, secs(70));
    s.faults.push(TimedFault {
        at: millis(20_500),
        target: Target::Server,
        kind: FaultKind::ServerSlow { duration: secs(30), extra: secs(11) },
    });
    let r = run(s);
    let lost = acting(&r, 0)[0].1;
    assert!(lost > 20.5 && lost < 33.0, "node 0 stops acting at {lost}");
    let late = applied_writes(&r.trace, 0).into_iter().filter(|&t| t > lost).collect::<Vec<_>>();
    assert!(!late.is_empty(), "no renewal after node 0 stopped leading");
    // Nobody acts while the orphan holds the Lease.
    let first_late = late[0];
    assert!(acting(&r, 1).iter().all(|&(from, _)| from > first_late), "{:?}", acting(&r, 1));
}

/// kubernetes-client/csharp LeaderElector.cs:259-274 (`MaybeReportTransition`): OnNewLeader
/// fires once per change from the last reported holder, after each AcquireAsync attempt (its
/// `finally`, :252-255; a false attempt reports after its RP wait) and never after a renew. The
/// leader reports itself before OnStartedLeading; the standby reports the leader after its first
/// false attempt's RP wait, and itself when it takes over.
#[test]
fn csharp_reports_each_new_leader_once_as_maybe_report_transition_does() {
    let mut s = spec(2, Algorithm::CSharpClient, secs(60));
    s.faults.push(fault(secs(20), 0, FaultKind::Crash));
    let r = run(s);
    let reports = |node: usize| -> Vec<(f64, String)> {
        r.trace
            .iter()
            .filter(|e| e.node == Some(node))
            .filter_map(|e| match &e.kind {
                TraceKind::NewLeader { holder } => Some((as_secs_f64(e.t), holder.to_string())),
                _ => None,
            })
            .collect()
    };
    let leader = reports(0);
    assert_eq!(leader.len(), 1, "{leader:?}");
    assert_eq!(leader[0].1, "widget-operator-0");
    let started = r.trace.iter().find(|e| e.node == Some(0) && matches!(e.kind, TraceKind::StartedLeading)).unwrap();
    assert!(leader[0].0 <= as_secs_f64(started.t), "reported before OnStartedLeading");
    let standby = reports(1);
    let holders: Vec<&str> = standby.iter().map(|(_, h)| h.as_str()).collect();
    assert_eq!(holders, ["widget-operator-0", "widget-operator-1"], "{standby:?}");
    // Its first attempt (at 1 s) is false; the report follows the RP wait of 2 s.
    assert!((standby[0].0 - 3.0).abs() < 0.1, "{standby:?}");
    let took_over = acting(&r, 1)[0].0;
    assert!((standby[1].0 - took_over).abs() < 1e-6, "the new holder reports itself as it starts leading: {standby:?}");
}

/// The elector requests of `node` in flight at once, at most (a request ends with its answer
/// or its timeout).
fn most_in_flight(trace: &[TraceEvent], node: usize) -> usize {
    let mut open = std::collections::BTreeSet::new();
    let mut most = 0;
    for e in trace.iter().filter(|e| e.node == Some(node)) {
        match &e.kind {
            TraceKind::Request { id, origin: "elector", .. } => {
                open.insert(*id);
            }
            TraceKind::Response { id, .. } | TraceKind::Timeout { id } => {
                open.remove(id);
            }
            _ => {}
        }
        most = most.max(open.len());
    }
    most
}

/// kubernetes-client/csharp LeaderElector.cs:67-107 and :226-257, MetaObjectLock.cs:27-95: a
/// renew round that `Delay(RD)` beats leaves its task running, and so does an acquire attempt
/// that loses its race; nothing bounds how many, and nothing serialises their requests with
/// the main loop's. A server slowed by 6 s a request (a GET and a PUT outlast RD 10 s and
/// every race delay): node 0 has three requests in flight at once, its left-running tasks keep
/// renewing the Lease while it does not lead, and node 1 never leads meanwhile.
#[test]
fn csharp_tasks_left_running_are_unbounded_and_not_serialised() {
    let mut s = spec(2, Algorithm::CSharpClient, secs(120));
    s.faults.push(TimedFault {
        at: secs(20),
        target: Target::Server,
        kind: FaultKind::ServerSlow { duration: secs(30), extra: secs(6) },
    });
    let r = run(s);
    assert!(most_in_flight(&r.trace, 0) >= 3, "{} in flight at most", most_in_flight(&r.trace, 0));
    let terms = acting(&r, 0);
    assert!(terms.len() >= 2, "{terms:?}");
    let (lost, back) = (terms[0].1, terms[1].0);
    assert!(lost > 25.0 && back > lost + 10.0, "{terms:?}");
    let held_idle = applied_writes(&r.trace, 0).into_iter().filter(|&t| t > lost && t < back).count();
    assert!(held_idle >= 2, "{held_idle} writes of node 0 applied while it did not lead");
    assert!(acting(&r, 1).is_empty(), "{:?}", acting(&r, 1));
}

/// kubernetes-client/csharp LeaderElector.cs:240-249: an acquire attempt that loses its race
/// is not cancelled; its one try goes on, and when it succeeds the Lease is taken with nobody
/// leading (no OnStartedLeading) until a later attempt finds the record naming itself. One
/// node starting against a server slowed by 6 s a request: the Lease is created at 12 s by the
/// first attempt, left running since its race delay ended at 2.4–4.8 s, and the node leads only
/// once requests are fast again.
#[test]
fn csharp_an_acquire_attempt_left_running_takes_the_lease_without_leading() {
    let mut s = spec(1, Algorithm::CSharpClient, secs(60));
    s.faults.push(TimedFault {
        at: 0,
        target: Target::Server,
        kind: FaultKind::ServerSlow { duration: secs(30), extra: secs(6) },
    });
    let r = run(s);
    let created = r
        .trace
        .iter()
        .find(|e| matches!(e.kind, TraceKind::Applied { code: 201, .. }))
        .map(|e| as_secs_f64(e.t))
        .expect("the Lease is created");
    assert!((created - 12.0).abs() < 0.1, "created at {created}");
    let leads = acting(&r, 0)[0].0;
    assert!(leads > 30.0, "leads at {leads}, the Lease held since {created}");
}

/// kubernetes-client/java before 12.0.0 (11.0.3 LE:268-273 and :347-351; changed by
/// `4797b083d6`, PR #1460): `close()` releases nothing, and a record with a null holder or
/// time goes to `createLock` — a 409 on the existing Lease, for ever. So an 11.0.3 leader's
/// standby waits out the Lease after a graceful stop, and an 11.0.3 standby never takes a Lease
/// released by a newer leader.
#[test]
fn java_11_neither_releases_nor_takes_a_released_lease() {
    let handover = |leader: u8, standby: u8| {
        let mut s = spec(2, Algorithm::JavaClient, secs(60));
        s.nodes[0].elector_mut().release_on_cancel = true;
        s.nodes[0].elector_mut().version = leader;
        s.nodes[1].elector_mut().version = standby;
        s.faults.push(fault(secs(20), 0, FaultKind::Stop));
        acting(&run(s), 1).first().map(|&(from, _)| from)
    };
    let released = handover(0, 0).expect("27.0.0 takes the released Lease");
    assert!(released < 24.0, "27.0.0 ← 27.0.0: {released}");
    let waited = handover(1, 0).expect("the Lease expires");
    assert!(waited > 33.0, "no release by 11.0.3: the standby waits out the Lease ({waited})");
    assert_eq!(handover(0, 1), None, "11.0.3 never takes a Lease with a null holder");
}

/// kubernetes-client/csharp LeaderElector.cs:171-184: a Lease with a null holder (the Java
/// client's close() writes one) is "created" again: POST → 409, for ever.
#[test]
fn csharp_cannot_take_a_lease_released_by_the_java_client() {
    let mut s = spec(2, Algorithm::JavaClient, secs(60));
    s.nodes[0].elector_mut().release_on_cancel = true;
    s.nodes[1].elector = sim_core::elector::ElectorConfig {
        identity: "widget-operator-1".into(),
        lease_namespace: NS.into(),
        lease_name: LEASE.into(),
        ..sim_core::elector::ElectorConfig::new("widget-operator-1", Algorithm::CSharpClient)
    }
    .into();
    s.faults.push(fault(secs(20), 0, FaultKind::Stop));
    let (r, lease) = World::new(s).unwrap().run_and_peek(NS, LEASE);
    assert!(acting(&r, 1).is_empty(), "{:?}", acting(&r, 1));
    let lease = lease.unwrap();
    assert_eq!(lease.spec.holder_identity, None);
    // Every try after the release is a Create answered 409 (one per Delay(RP) after a false
    // attempt, plus the race delay's share: about one per 2 s over 40 s).
    let mut creates = BTreeMap::new();
    let mut conflicts = 0;
    for e in &r.trace {
        match &e.kind {
            TraceKind::Request { id, verb: "create", origin: "elector", .. } if e.node == Some(1) => {
                creates.insert(*id, e.t);
            }
            TraceKind::Applied { id, code: 409, .. } if creates.get(id).is_some_and(|&t| t > secs(20)) => {
                conflicts += 1
            }
            _ => {}
        }
    }
    assert!(conflicts > 10, "{conflicts} conflicts");
}

// ---- nestjs --------------------------------------------------------------------------------

/// nestjs-k8s-leader-election leader-election.service.ts:143-168: any error in `renewLease`
/// calls `loseLeadership` at once; followers poll only at startup (:83-99), so nobody takes
/// the Lease until one of them does.
#[test]
fn nestjs_loses_on_one_failed_renew() {
    let mut s = spec(2, Algorithm::NestJs, secs(60));
    // Renewals come every renewalInterval + 2 s (the watch handler's delay): at ~12 s.
    s.faults.push(fault(secs(11), 0, partition(secs(3), PartitionMode::Refuse)));
    let r = run(s);
    let spans = acting(&r, 0);
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert!(spans[0].1 > 11.9 && spans[0].1 < 12.2, "{spans:?}");
    // Node 1's last startup try (1 s + 2·LD/2 = 21 s) finds the Lease expired (renewTime ~0 + 20 s).
    let next = acting(&r, 1);
    assert_eq!(next.len(), 1, "{next:?}");
    assert!(next[0].0 > 21.0 && next[0].0 < 21.2, "{next:?}");
}

// ---- controller-runtime --------------------------------------------------------------------

/// controller-runtime internal.go:464-466, 545-598: on a graceful stop the leader-election
/// context is cancelled only after the runnables drain or gracefulShutdownTimeout (30 s); with
/// ReleaseOnCancel a 40 s drain gets the Lease released at 30 s while the work still runs
/// (controller-runtime#1132). It stops when the process exits, after the release.
#[test]
fn controller_runtime_drain_over_30s_releases_while_work_runs() {
    let run_with_drain = |drain: Nanos| {
        let mut s = spec(2, Algorithm::ControllerRuntime, secs(80));
        for n in &mut s.nodes {
            n.elector_mut().release_on_cancel = true;
            n.elector_mut().drain = drain;
        }
        s.faults.push(fault(secs(30), 0, FaultKind::Stop));
        let r = run(s);
        (notes(&r, 0, Note::Released), acting(&r, 0), acting(&r, 1))
    };
    let (released, leader, next) = run_with_drain(secs(40));
    assert_eq!(released.len(), 1);
    assert!(close(released[0], 60.0, 0.01), "released at {released:?}");
    assert!(leader[0].1 >= released[0], "the work ended at {} before the release", leader[0].1);
    assert!(next[0].0 > 60.0 && next[0].0 < 60.0 + 4.5, "{next:?}");
    // A 5 s drain: the work ends at 35 s, then the release.
    let (released, leader, _) = run_with_drain(secs(5));
    assert!(close(leader[0].1, 35.0, 1e-6), "{leader:?}");
    assert!(close(released[0], 35.0, 0.01), "{released:?}");
    // No drain: client-go's graceful stop exactly.
    let (released, leader, _) = run_with_drain(0);
    assert!(close(leader[0].1, 30.0, 1e-6) && close(released[0], 30.0, 0.01), "{leader:?} {released:?}");
}

/// controller-runtime leader_election.go:102-108 and the v0.24.1 go.mod: client-go v0.36 by
/// default, the manager's timeout max(RD/2, 1 s), ReleaseOnCancel off.
#[test]
fn controller_runtime_defaults_are_client_go_v0_36_with_its_timeouts() {
    let c = sim_core::elector::ElectorConfig::new("a", Algorithm::ControllerRuntime);
    assert_eq!(c.client_go_version().map(|v| v.name()), Some("v0.36".to_string()));
    assert_eq!(c.request_timeout, Some(secs(5)));
    assert!(!c.release_on_cancel);
    assert_eq!((c.lease_duration, c.renew_deadline, c.retry_period), (secs(15), secs(10), secs(2)));
}

// ---- stop_acting ---------------------------------------------------------------------------

/// `stop_acting`: the leader's work after its elector reports it stopped leading. A client-go
/// leader partitioned at 30 s loses its lease at the round's RD; its work stops then
/// (`at-once`), 8 s later with a blocking hook (cilium/cilium#42920; the exit waits too), or
/// not at all while the process lives on (`never`, argoproj/argo-rollouts#2117).
#[test]
fn stop_acting_never_at_once_and_a_duration() {
    let outcome = |stop: StopActing, after_lost: AfterLost| {
        let mut s = spec(2, Algorithm::ClientGo, secs(90));
        s.nodes[0].stop_acting = stop;
        s.nodes[0].elector_mut().after_lost = after_lost;
        s.faults.push(fault(secs(30), 0, partition(secs(20), PartitionMode::Drop)));
        let r = run(s);
        let exits: Vec<f64> = r
            .trace
            .iter()
            .filter(|e| e.node == Some(0) && matches!(e.kind, TraceKind::ProcessExit))
            .map(|e| as_secs_f64(e.t))
            .collect();
        (acting(&r, 0), notes(&r, 0, Note::FailedToRenew), exits, r.metrics.dual_leader_seconds)
    };
    let restart = AfterLost::Restart { delay: secs(10) };
    let (spans, failed, exits, dual) = outcome(StopActing::AtOnce, restart);
    let lost = failed[0];
    assert!(close(spans[0].1, lost, 1e-6));
    assert!(close(exits[0], lost, 1e-6));
    assert_eq!(dual, 0.0);

    let (spans, failed, exits, dual8) = outcome(StopActing::After(secs(8)), restart);
    assert!(close(failed[0], lost, 1e-6));
    assert!(close(spans[0].1, lost + 8.0, 1e-6), "{spans:?}");
    assert!(close(exits[0], lost + 8.0, 1e-6), "{exits:?}");
    assert!(dual8 > 0.0, "the new leader is elected before the hook returns");

    let (spans, _, exits, dual_never) = outcome(StopActing::Never, AfterLost::Rejoin);
    assert!(close(spans[0].1, 90.0, 1e-6), "{spans:?}");
    assert!(close(exits[0], lost, 1e-6));
    assert!(dual_never > dual8);
    // With an exit on losing, `never` ends with the process.
    let (spans, ..) = outcome(StopActing::Never, restart);
    assert!(close(spans[0].1, lost, 1e-6));
}

// ---- mixed fleets --------------------------------------------------------------------------

/// Nodes on one Lease may run different libraries: a steady fleet of client-go v0.30,
/// controller-runtime, fabric8, the Java and C# clients and nestjs elects one leader and keeps
/// it, and each library reads the others' records.
#[test]
fn a_mixed_fleet_on_one_lease_keeps_one_leader() {
    let algorithms = [
        Algorithm::ClientGo,
        Algorithm::ControllerRuntime,
        Algorithm::Fabric8,
        Algorithm::JavaClient,
        Algorithm::CSharpClient,
        Algorithm::CSharpClientPre2026,
        Algorithm::NestJs,
    ];
    for first in 0..algorithms.len() {
        let mut s = spec(algorithms.len(), Algorithm::ClientGo, secs(90));
        for (i, node) in s.nodes.iter_mut().enumerate() {
            let algorithm = algorithms[(first + i) % algorithms.len()];
            let mut e = sim_core::elector::ElectorConfig::new(&node.elector.identity, algorithm);
            e.lease_namespace = NS.into();
            e.lease_name = LEASE.into();
            if algorithm == Algorithm::ClientGo {
                e.client_go = sim_core::elector::ClientGoVersion::parse("v0.30").unwrap();
            }
            node.elector = e.into();
        }
        let r = run(s);
        let acquisitions: u64 = r.metrics.nodes.values().map(|n| n.acquisitions).sum();
        assert_eq!(acquisitions, 1, "leader {:?}", algorithms[first]);
        assert_eq!(r.metrics.dual_leader_seconds, 0.0, "leader {:?}", algorithms[first]);
        assert!(acting(&r, 0)[0].1 > 89.9, "leader {:?}: {:?}", algorithms[first], acting(&r, 0));
    }
}

/// fabric8 LeaderElectorBuilder.java:46-72 (docs/sources/fabric8.md): exact Durations for the
/// orderings against RP + ceil(1.2·⌊RP⌋ms) ms, its own words ("renewDeadLine",
/// "JITTER_FACTOR"), and `toMillis()` for the zero checks, each with its own message.
#[test]
fn fabric8_validation_uses_its_own_words_and_nanoseconds() {
    use sim_core::elector::ElectorConfig;
    let config = |ld: Nanos, rd: Nanos, rp: Nanos| {
        let mut c = ElectorConfig::new("a", Algorithm::Fabric8);
        (c.lease_duration, c.renew_deadline, c.retry_period) = (ld, rd, rp);
        c.validate().err().map(|e| e.to_string())
    };
    let says = |r: Option<String>, text: &str| assert!(r.as_deref().is_some_and(|m| m.contains(text)), "{r:?}");
    says(config(secs(10), secs(10), secs(2)), "leaseDuration must be greater than renewDeadLine");
    // RP 2 s: the bound is 2 s + 2400 ms = 4.4 s; 4.4 s is refused, 1 ns more is not.
    says(
        config(secs(15), millis(4_400), secs(2)),
        "renewDeadline must be greater than retryPeriod + retryPeriod*JITTER_FACTOR",
    );
    assert_eq!(config(secs(15), millis(4_400) + 1, secs(2)), None);
    // A sub-millisecond retry period: toMillis() is 0.
    says(config(secs(15), secs(10), 900_000), "retryPeriod must be greater than zero");
    assert_eq!(config(secs(15), secs(10), 1_500_000), None, "1.5 ms is accepted");
}
