//! Behaviour of the electors in whole runs, each test named after what it shows.

use sim_core::elector::{AfterLost, Algorithm};
use sim_core::model::{FaultKind, FieldManager, ReconcileMode, Target, TimedFault, WorldSpec};
use sim_core::net::Cut;
use sim_core::time::{as_secs_f64, millis, secs};
use sim_core::trace::TraceKind;
use sim_core::world::{RunResult, World};

fn run(spec: WorldSpec) -> RunResult {
    World::new(spec).expect("valid spec").run()
}

fn fault(at: u64, target: usize, kind: FaultKind) -> TimedFault {
    TimedFault { at, target: Target::Node(target), kind }
}

/// The first node to acquire in a run (the holder when faults start).
fn first_leader(r: &RunResult) -> usize {
    r.spans.iter().filter(|s| s.kind == sim_core::world::SpanKind::Leader).min_by_key(|s| s.from).unwrap().node
}

#[test]
fn steady_three_nodes_make_one_acquisition_and_no_dual_leader_time() {
    for seed in 0..5 {
        let r = run(WorldSpec::basic(seed, 3, Algorithm::ClientGo, secs(120)));
        let acquisitions: u64 = r.metrics.nodes.values().map(|n| n.acquisitions).sum();
        assert_eq!(acquisitions, 1, "seed {seed}");
        assert_eq!(r.metrics.dual_leader_seconds, 0.0);
        assert_eq!(r.metrics.lease_transitions, 0);
        assert_eq!(r.metrics.leader_changes, 0);
        // The first node to start creates the Lease at t≈0 and leads for the whole run.
        let leader = &r.metrics.nodes["widget-operator-0"];
        assert!(leader.acting_leader_seconds > 119.9, "{}", leader.acting_leader_seconds);
    }
}

/// Bounds implied by client-go: a follower's observedTime is at most one jittered poll
/// (2.2·RP) older than the crash, it expires LD after that, and it notices within one more
/// jittered poll: failover ∈ [LD − 2.2·RP, LD + 2.2·RP + round trips].
#[test]
fn crash_of_the_leader_fails_over_within_client_go_bounds() {
    let (ld, rp) = (15.0, 2.0);
    for seed in 0..20 {
        let mut spec = WorldSpec::basic(seed, 3, Algorithm::ClientGo, secs(90));
        spec.faults.push(fault(secs(30), 0, FaultKind::Crash));
        let r = run(spec);
        assert_eq!(r.metrics.failover_seconds.len(), 1, "seed {seed}");
        let f = r.metrics.failover_seconds[0];
        assert!(f >= ld - 2.2 * rp && f <= ld + 2.2 * rp + 0.01, "seed {seed}: failover {f}s");
        assert_eq!(r.metrics.dual_leader_seconds, 0.0);
        assert_eq!(r.metrics.lease_transitions, 1);
    }
}

#[test]
fn graceful_stop_with_release_hands_over_within_one_jittered_retry_period() {
    for seed in 0..20 {
        let mut spec = WorldSpec::basic(seed, 3, Algorithm::ClientGo, secs(60));
        for n in &mut spec.nodes {
            n.elector_mut().release_on_cancel = true;
        }
        spec.faults.push(fault(secs(30), 0, FaultKind::Stop));
        let r = run(spec);
        let f = r.metrics.failover_seconds[0];
        assert!(f <= 2.2 * 2.0 + 0.01, "seed {seed}: failover {f}s");
        assert_eq!(r.metrics.dual_leader_seconds, 0.0);
        // The released record: empty holder, duration 1, then the new holder's +1.
        assert_eq!(r.metrics.lease_transitions, 1);
        assert_eq!(r.metrics.leader_changes, 1);
    }
}

#[test]
fn partition_of_the_leader_with_renew_deadline_below_lease_duration_gives_no_dual_leader_time() {
    for seed in 0..20 {
        let mut spec = WorldSpec::basic(seed, 3, Algorithm::ClientGo, secs(120));
        spec.faults.push(fault(
            secs(30),
            0,
            FaultKind::Partition { duration: secs(40), cut: Cut::Both, mode: sim_core::net::PartitionMode::Drop },
        ));
        let r = run(spec);
        assert_eq!(r.metrics.dual_leader_seconds, 0.0, "seed {seed}");
        assert!(r.metrics.leader_changes >= 1);
    }
}

fn unsafe_split_brain(mode: ReconcileMode, manager: FieldManager) -> RunResult {
    // RD 20 s ≥ LD 15 s: the deposed leader keeps acting until its round deadline, and the
    // partition heals (at 50 s) before that.
    let mut spec = WorldSpec::basic(1, 2, Algorithm::ClientGo, secs(120)).with_reconcilers(mode, manager, secs(1));
    spec.unsafe_mode = true;
    spec.trace = true;
    for n in &mut spec.nodes {
        n.elector_mut().renew_deadline = secs(30);
        n.elector_mut().after_lost = AfterLost::Exit;
    }
    spec.faults.push(fault(
        secs(30),
        0,
        FaultKind::Partition { duration: secs(20), cut: Cut::Both, mode: sim_core::net::PartitionMode::Drop },
    ));
    run(spec)
}

#[test]
fn unsafe_renew_deadline_and_a_healed_partition_give_a_dual_leader_window_with_split_brain_writes() {
    let r = unsafe_split_brain(ReconcileMode::Apply { force: false }, FieldManager::Identity);
    assert!(r.metrics.dual_leader_windows >= 1);
    assert!(r.metrics.dual_leader_seconds > 1.0, "{}", r.metrics.dual_leader_seconds);
    let old = &r.metrics.nodes["widget-operator-0"];
    let new = &r.metrics.nodes["widget-operator-1"];
    assert!(old.split_brain_writes > 0, "{old:?}");
    assert!(old.writes_accepted > 0 && new.acquisitions == 1);
    // The new leader's apply meets the old leader's field manager.
    assert!(new.conflicts > 0, "{new:?}");
    let named = r.trace.iter().any(|e| match &e.kind {
        sim_core::trace::TraceKind::ReconcileWrite { message, .. } => {
            message.contains("conflict with \"widget-operator-0\"") && message.contains(".data.phase")
        }
        _ => false,
    });
    assert!(named, "an SSA conflict names the other's manager");
}

#[test]
fn fenced_reconciler_writes_make_no_split_brain_writes_in_the_same_run() {
    let r = unsafe_split_brain(ReconcileMode::FencedUpdate, FieldManager::Identity);
    assert!(r.metrics.dual_leader_seconds > 1.0);
    let old = &r.metrics.nodes["widget-operator-0"];
    assert_eq!(old.split_brain_writes, 0, "{old:?}");
    assert!(old.fenced_rejections > 0, "{old:?}");
}

/// A constant offset larger than the lease lets a `renew-time` node whose clock runs ahead take
/// a healthy leader's lease at once; client-go, which compares only local observations, never
/// notices.
#[test]
fn a_clock_offset_of_minutes_lets_a_renew_time_node_steal_a_healthy_lease_but_not_a_client_go_one() {
    let run_with = |algorithm| {
        let mut spec = WorldSpec::basic(3, 3, algorithm, secs(120));
        spec.nodes[1].clock_mut().offset_ns = 120 * 1_000_000_000;
        spec.nodes[2].clock_mut().offset_ns = -120 * 1_000_000_000;
        spec.nodes[1].start_at = secs(1);
        spec.nodes[2].start_at = secs(1);
        run(spec)
    };
    let go = run_with(Algorithm::ClientGo);
    assert_eq!((go.metrics.lease_transitions, go.metrics.dual_leader_seconds), (0, 0.0));
    let naive = run_with(Algorithm::RenewTime);
    assert_eq!(naive.metrics.lease_transitions, 1, "the ahead node takes over once, then holds");
    assert!(naive.metrics.nodes["widget-operator-1"].acting_leader_seconds > 100.0);
}

/// Offsets of minutes that change (NTP steps back and forth on two nodes, in opposite phase):
/// whoever is ahead at the moment sees the holder's renewTime as ancient and takes over, so
/// `renew-time` leadership flaps and leaseTransitions climbs; client-go's decisions run on the
/// monotonic clock, which steps do not move.
#[test]
fn clock_offsets_of_minutes_that_move_leave_client_go_alone_but_make_renew_time_flap() {
    let run_with = |algorithm| {
        let mut spec = WorldSpec::basic(3, 3, algorithm, secs(300));
        for (node, phase) in [(1usize, 0u64), (2, 10)] {
            let mut sign = 1i64;
            for k in 0..14u64 {
                let at = secs(20 + phase + 20 * k);
                spec.nodes[node]
                    .clock_mut()
                    .steps
                    .push(sim_core::clock::ClockStep { at, delta_ns: sign * 150_000_000_000 });
                sign = -sign;
            }
        }
        run(spec)
    };
    let go = run_with(Algorithm::ClientGo);
    assert_eq!((go.metrics.lease_transitions, go.metrics.dual_leader_seconds), (0, 0.0));
    let naive = run_with(Algorithm::RenewTime);
    assert!(naive.metrics.lease_transitions >= 8, "transitions {}", naive.metrics.lease_transitions);
    assert!(naive.metrics.leader_changes >= 8);
}

/// Leader cut off at 30 s. Its last renewal lands at t_r; it gives up at t_r + RP + RD (its own
/// clock is perfect). A candidate running r times fast saw that renewal at t_o ≥ t_r and takes
/// over LD/r true seconds later. A dual window needs LD/r < RP + RD, i.e. r > LD/(RD + RP) =
/// 15/12 = 1.25 with the defaults (client-go's doc rounds this to LD/RD = 1.5).
#[test]
fn a_fast_candidate_clock_beyond_the_rate_tolerance_makes_dual_leaders_and_below_it_none() {
    let run_with = |drift_ppb: i64, seed| {
        let mut spec = WorldSpec::basic(seed, 2, Algorithm::ClientGo, secs(90));
        spec.nodes[1].clock_mut().drift_ppb = drift_ppb;
        spec.nodes[1].start_at = millis(500);
        spec.faults.push(fault(
            secs(30),
            0,
            FaultKind::Partition { duration: secs(60), cut: Cut::Both, mode: sim_core::net::PartitionMode::Drop },
        ));
        run(spec)
    };
    let mut above = 0;
    for seed in 0..10 {
        assert_eq!(run_with(150_000_000, seed).metrics.dual_leader_seconds, 0.0, "1.15× is inside the tolerance");
        if run_with(1_000_000_000, seed).metrics.dual_leader_seconds > 0.0 {
            above += 1;
        }
    }
    assert!(above >= 9, "2× should make dual leaders in nearly every run, got {above}/10");
}

#[test]
fn a_leader_pause_longer_than_the_lease_gives_a_dual_leader_window_even_with_a_valid_configuration() {
    let mut spec = WorldSpec::basic(5, 3, Algorithm::ClientGo, secs(90));
    spec.faults.push(fault(secs(30), 0, FaultKind::Pause { duration: secs(25) }));
    let r = run(spec);
    assert!(r.metrics.dual_leader_windows >= 1);
    // The paused leader still acts when it resumes at 55 s: its expired timers fire, the Until
    // loop starts a fresh round, finds the new holder, and only gives up at that round's
    // deadline (≤ RD after the resume).
    let w = &r.dual_windows[0];
    assert!(w.until >= secs(55) && w.until <= secs(65), "window ends at {}", w.until);
    assert!(as_secs_f64(w.until - w.from) > 5.0);
}

#[test]
fn renew_time_unfenced_double_acquires_with_perfect_clocks_when_candidates_race() {
    let mut doubles = 0;
    for seed in 0..30 {
        let race = |algorithm| {
            let mut spec = WorldSpec::basic(seed, 5, algorithm, secs(60));
            // A slow path (50–500 ms each way) widens the window between a candidate's GET and
            // its write, so two candidates that both saw the lease expire often overlap.
            for n in &mut spec.nodes {
                let slow = sim_core::net::Latency::Uniform { min: millis(50), max: millis(500) };
                n.link_mut().up.latency = slow.clone();
                n.link_mut().down.latency = slow;
            }
            spec.faults.push(fault(secs(20), 0, FaultKind::Crash));
            run(spec)
        };
        if race(Algorithm::RenewTimeUnfenced).metrics.dual_leader_seconds > 0.0 {
            doubles += 1;
        }
        // The same race with a resourceVersion precondition: one candidate gets a 409.
        assert_eq!(race(Algorithm::RenewTime).metrics.dual_leader_seconds, 0.0, "seed {seed}");
    }
    assert!(doubles >= 2, "only {doubles} double acquisitions in 30 racing runs");
}

#[test]
fn same_seed_gives_the_same_run_and_a_different_seed_a_different_one() {
    let spec = |seed| {
        let mut s = WorldSpec::basic(seed, 3, Algorithm::ClientGo, secs(60));
        s.trace = true;
        s.faults.push(fault(secs(20), 0, FaultKind::Crash));
        s
    };
    let a = run(spec(7));
    let b = run(spec(7));
    let c = run(spec(8));
    assert_eq!(a.trace, b.trace);
    assert_ne!(a.trace, c.trace);
    assert_eq!(first_leader(&a), 0);
}

#[test]
fn adding_a_node_does_not_change_the_draws_of_the_others() {
    let spec = |n: usize| {
        // The same setup objects (RBAC for three) either way: only the third process differs.
        let mut s = WorldSpec::basic(11, 3, Algorithm::ClientGo, secs(120));
        s.nodes.truncate(n);
        s.trace = true;
        for node in &mut s.nodes {
            let lat = sim_core::net::Latency::Uniform { min: millis(1), max: millis(40) };
            node.link_mut().up.latency = lat.clone();
            node.link_mut().down.latency = lat;
        }
        s.faults.push(fault(secs(20), 0, FaultKind::Crash));
        if n == 3 {
            s.nodes[2].start_at = secs(100); // joins late: nothing before 100 s may change
        }
        s
    };
    let two = run(spec(2));
    let three = run(spec(3));
    let before = |r: &RunResult| r.trace.iter().filter(|e| e.t < secs(100)).cloned().collect::<Vec<_>>();
    assert!(before(&two).len() > 50);
    let (a, b) = (before(&two), before(&three));
    let first_difference = a.iter().zip(&b).position(|(x, y)| x != y);
    assert!(a == b, "runs diverge at event {first_difference:?} before the third node starts");
}

#[test]
fn random_fault_processes_are_drawn_from_the_seed_and_hit_the_current_holder() {
    use sim_core::model::{DurationDist, RandomFault, RandomFaultKind};
    let spec = |seed| {
        let mut s = WorldSpec::basic(seed, 3, Algorithm::ClientGo, secs(1800));
        s.random_faults.push(RandomFault {
            key: "gc".into(),
            mean_interval: secs(120),
            from: 0,
            until: secs(1800),
            target: Target::Holder,
            kind: RandomFaultKind::Pause { duration: DurationDist::Uniform { min: secs(5), max: secs(30) } },
        });
        s.random_faults.push(RandomFault {
            key: "oom".into(),
            mean_interval: secs(600),
            from: 0,
            until: secs(1800),
            target: Target::Random,
            kind: RandomFaultKind::CrashRestart { restart_after: DurationDist::Exponential { mean: secs(10) } },
        });
        s
    };
    let a = run(spec(3));
    let b = run(spec(3));
    let c = run(spec(4));
    assert_eq!(a.faults, b.faults);
    assert_ne!(a.faults, c.faults);
    let pauses = a.faults.iter().filter(|f| f.kind == "pause").count();
    assert!((5..=30).contains(&pauses), "{pauses} pauses in 30 min at one per 2 min");
    // Pauses longer than the lease hit the acting leader: some give dual-leader windows.
    assert!(a.metrics.dual_leader_windows >= 1);
    assert!(!a.metrics.failover_seconds.is_empty());
}

/// The server applies a request when it arrives, whatever becomes of the answer: a renewal
/// slowed past the client's timeout lands on the server while the leader sees a timeout.
#[test]
fn a_request_can_be_applied_while_the_client_sees_a_timeout() {
    let mut spec = WorldSpec::basic(2, 1, Algorithm::ClientGo, secs(60));
    spec.trace = true;
    // Requests arriving in [20 s, 30 s) take 6 s more than the 5 s request timeout allows.
    spec.server.slowdowns.push((secs(20), secs(30), secs(6)));
    let r = run(spec);
    let timed_out: Vec<u64> =
        r.trace.iter().filter_map(|e| if let TraceKind::Timeout { id } = e.kind { Some(id) } else { None }).collect();
    assert!(!timed_out.is_empty());
    let applied_ok =
        |id: u64| r.trace.iter().any(|e| matches!(e.kind, TraceKind::Applied { id: i, code: 200, .. } if i == id));
    assert!(timed_out.iter().any(|&id| applied_ok(id)), "no timed-out request was applied");
}

fn first_wait_after_failed_acquire(r: &RunResult, node: usize) -> Vec<u64> {
    // Gaps between a node's consecutive acquire attempts (its GETs while it does not lead).
    let gets: Vec<u64> = r
        .trace
        .iter()
        .filter(|e| e.node == Some(node) && matches!(&e.kind, TraceKind::Request { verb: "get", .. }))
        .map(|e| e.t)
        .collect();
    gets.windows(2).map(|w| w[1] - w[0]).collect()
}

#[test]
fn client_go_jitters_its_retries_and_the_python_client_does_not() {
    let run_with = |algorithm| {
        let mut spec = WorldSpec::basic(9, 2, algorithm, secs(60));
        spec.trace = true;
        for n in &mut spec.nodes {
            n.link = Default::default();
            n.link_mut().up.latency = sim_core::net::Latency::Fixed(0);
            n.link_mut().down.latency = sim_core::net::Latency::Fixed(0);
        }
        run(spec)
    };
    let go = first_wait_after_failed_acquire(&run_with(Algorithm::ClientGo), 1);
    assert!(go.iter().all(|&g| (secs(2)..secs(2) * 22 / 10).contains(&g)), "{go:?}");
    assert!(go.windows(2).any(|w| w[0] != w[1]), "client-go waits are drawn fresh each time");
    let py = first_wait_after_failed_acquire(&run_with(Algorithm::PythonClient), 1);
    assert!(py.iter().all(|&g| g == secs(2)), "the Python client sleeps exactly RetryPeriod: {py:?}");
}

/// The Python client's API calls have no timeout: when the leader's responses stop coming back
/// (the down direction is cut) its renewal hangs, it never checks its deadline, and it keeps
/// leading — while a candidate takes the lease.
#[test]
fn a_python_leader_whose_call_hangs_keeps_leading() {
    let mut spec = WorldSpec::basic(4, 2, Algorithm::PythonClient, secs(120));
    spec.faults.push(TimedFault {
        at: secs(30),
        target: Target::Holder,
        kind: FaultKind::Partition { duration: secs(90), cut: Cut::Down, mode: sim_core::net::PartitionMode::Drop },
    });
    let r = run(spec);
    let longest = r.metrics.nodes.values().map(|n| n.acting_leader_seconds).fold(0.0, f64::max);
    assert!(longest > 110.0, "the hung leader should lead to the end: {longest}");
    assert!(r.metrics.dual_leader_seconds > 60.0, "{}", r.metrics.dual_leader_seconds);
    // leaseTransitions is never written by the Python client.
    assert_eq!(r.metrics.lease_transitions, 0);
    assert!(r.metrics.leader_changes >= 1);
}

/// client-go before v0.27 used the follower's own LeaseDuration, not the record's: a leader
/// configured with a 60 s lease is taken over by a legacy follower (15 s) about 15 s after it
/// crashes, by a current follower only after about 60 s.
#[test]
fn client_go_legacy_uses_its_own_duration_and_current_client_go_the_records() {
    let failover = |algorithm| {
        let mut spec = WorldSpec::basic(6, 2, algorithm, secs(150));
        spec.nodes[0].elector_mut().lease_duration = secs(60);
        spec.nodes[0].elector_mut().renew_deadline = secs(40);
        spec.nodes[1].start_at = secs(1);
        spec.faults.push(fault(secs(30), 0, FaultKind::Crash));
        run(spec).metrics.failover_seconds[0]
    };
    let legacy = failover(Algorithm::ClientGoLegacy);
    let current = failover(Algorithm::ClientGo);
    assert!((15.0 - 4.4..15.0 + 4.5).contains(&legacy), "legacy failover {legacy}");
    assert!((60.0 - 4.4..60.0 + 4.5).contains(&current), "current failover {current}");
}

/// A graceful stop cancels the run context, the leader context's parent: the leader stops
/// acting at once, even though release (a Get and an Update) takes a round trip or more.
#[test]
fn a_graceful_stop_ends_acting_at_once_and_releases_afterwards() {
    let mut spec = WorldSpec::basic(3, 2, Algorithm::ClientGo, secs(60));
    spec.trace = true;
    for n in &mut spec.nodes {
        n.elector_mut().release_on_cancel = true;
        n.link_mut().up.latency = sim_core::net::Latency::Fixed(millis(300));
        n.link_mut().down.latency = sim_core::net::Latency::Fixed(millis(300));
    }
    spec.faults.push(fault(secs(30), 0, FaultKind::Stop));
    let r = run(spec);
    let leader_span = r.spans.iter().find(|s| s.node == 0 && s.kind == sim_core::world::SpanKind::Leader).unwrap();
    assert_eq!(leader_span.until, secs(30));
    let released = r
        .trace
        .iter()
        .any(|e| e.node == Some(0) && matches!(e.kind, TraceKind::Note { note: sim_core::elector::Note::Released }));
    assert!(released);
}

/// The Python client takes a lease with an empty holder at once (its get_lock_object turns
/// `""` into None), so a client-go leader's release hands over within one retry period.
#[test]
fn the_python_client_takes_a_released_lease_at_once() {
    let mut spec = WorldSpec::basic(5, 2, Algorithm::ClientGo, secs(60));
    spec.nodes[0].elector_mut().release_on_cancel = true;
    spec.nodes[1].elector = sim_core::elector::ElectorConfig {
        algorithm: Algorithm::PythonClient,
        request_timeout: None,
        ..(*spec.nodes[1].elector).clone()
    }
    .into();
    spec.nodes[1].start_at = millis(500);
    spec.faults.push(fault(secs(30), 0, FaultKind::Stop));
    let r = run(spec);
    let f = r.metrics.failover_seconds[0];
    assert!(f <= 2.1, "python failover after a release took {f}s");
}

/// Python's isoformat() drops a zero fraction, and the server refuses such a MicroTime: a
/// Python client writing at a whole second gets a 400 with the real decode message.
#[test]
fn a_python_write_at_a_whole_second_is_refused_by_the_microtime_parser() {
    let mut spec = WorldSpec::basic(1, 1, Algorithm::PythonClient, secs(10));
    spec.trace = true;
    spec.nodes[0].link_mut().up.latency = sim_core::net::Latency::Fixed(0);
    spec.nodes[0].link_mut().down.latency = sim_core::net::Latency::Fixed(0);
    let r = run(spec);
    let refused = r.trace.iter().any(|e| match &e.kind {
        TraceKind::Applied { code: 400, message, .. } => {
            message.contains("cannot be handled as a Lease")
                && message.contains("cannot parse \"+00:00\" as \".000000\"")
        }
        _ => false,
    });
    assert!(refused, "no 400 for a whole-second write");
    assert_eq!(r.metrics.nodes["widget-operator-0"].acquisitions, 0, "every attempt lands on a whole second");
}

/// The streaming trace writer (what trace.jsonl is written with) gives exactly the bytes of the
/// JSON tree rendering, for every kind of event a busy run produces.
#[test]
fn trace_events_write_the_same_json_as_their_tree() {
    let mut spec = WorldSpec::basic(3, 3, Algorithm::ClientGo, secs(300)).with_reconcilers(
        ReconcileMode::Apply { force: false },
        FieldManager::Identity,
        secs(1),
    );
    spec.trace = true;
    spec.unsafe_mode = true;
    for n in &mut spec.nodes {
        n.elector_mut().renew_deadline = secs(30);
        n.elector_mut().after_lost = AfterLost::Exit;
    }
    spec.faults.push(fault(
        secs(30),
        0,
        FaultKind::Partition { duration: secs(20), cut: Cut::Both, mode: sim_core::net::PartitionMode::Drop },
    ));
    spec.faults.push(fault(secs(100), 1, FaultKind::Pause { duration: secs(25) }));
    spec.faults.push(fault(secs(150), 2, FaultKind::ClockStep { delta_ns: -3_000_000_000 }));
    let r = run(spec);
    let mut kinds = std::collections::BTreeSet::new();
    for e in &r.trace {
        let mut bytes = Vec::new();
        e.write_json(&r.node_names, &mut bytes).unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), e.to_json(&r.node_names).to_string());
        kinds.insert(e.kind.name());
    }
    assert!(kinds.len() >= 15, "{kinds:?}");
}

/// A world started from a setup cache is the world `World::new` builds: the same run, event for
/// event, whether the cache held this setup, another one, or nothing.
#[test]
fn a_world_from_the_setup_cache_runs_as_a_fresh_one() {
    use sim_core::world::SetupCache;
    let spec = |seed: u64, setup: &str| {
        let mut spec = WorldSpec::basic(seed, 3, Algorithm::ClientGo, secs(60));
        spec.trace = true;
        spec.faults.push(fault(secs(20), 0, FaultKind::Crash));
        std::sync::Arc::make_mut(&mut spec.setup_objects).push(serde_json::json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": { "name": setup, "namespace": "op-leader" }
        }));
        spec
    };
    let fingerprint = |r: &RunResult| {
        format!("{:?} {:?} {:?} {:?} {}", r.metrics, r.spans, r.trace, r.transitions_series, r.events_processed)
    };
    let mut cache: Option<SetupCache> = None;
    for (seed, setup) in [(1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "a")] {
        let fresh = fingerprint(&run(spec(seed, setup)));
        let cached = World::new_cached(spec(seed, setup), &mut cache).expect("valid spec").run();
        assert_eq!(fingerprint(&cached), fresh, "seed {seed}, setup {setup}");
    }
}
