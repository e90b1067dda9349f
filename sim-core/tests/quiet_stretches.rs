//! Quiet stretches (`world/quiet.rs`) change nothing a run produces: over random worlds —
//! node counts, timings, client-go releases, latencies, drifts, loss, timeouts and fault
//! schedules — a run that steps over them and one that handles every event through the queue
//! give the same result, field by field, and leave the same Lease on the server, byte for byte.
//! (The whole output corpus, `benches/corpus.sh`, and the shipped scenarios through the CLI,
//! `sim-cli/tests/scenarios.rs`, are compared the same way.)

use proptest::prelude::*;
use sim_core::elector::{Algorithm, ClientGoVersion};
use sim_core::model::{DurationDist, FaultKind, RandomFault, RandomFaultKind, Target, TimedFault, WorldSpec};
use sim_core::net::{Cut, Latency, PartitionMode};
use sim_core::time::{millis, secs};
use sim_core::world::World;

mod common;
use common::fingerprint;

fn cases(default: u32) -> ProptestConfig {
    common::cases("QUIET_CASES", default)
}

/// The run with and without stretches: the same result and the same Lease.
fn same_either_way(spec: WorldSpec) -> Result<u64, TestCaseError> {
    let mut plain = spec.clone();
    plain.skip_quiet = false;
    let (plain_spec, skip_spec) = (plain.clone(), spec.clone());
    let (a, lease_a) = World::new(plain).unwrap().run_and_peek("op-leader", "widget-operator");
    let (b, lease_b) = World::new(spec).unwrap().run_and_peek("op-leader", "widget-operator");
    prop_assert_eq!(fingerprint(&a), fingerprint(&b));
    prop_assert_eq!(format!("{lease_a:?}"), format!("{lease_b:?}"));
    prop_assert_eq!(a.events_stepped, 0);
    // The events still queued at the end, each under the sequence number it had: every number
    // a stretch counted for the events it stepped over was the one the queue would have given.
    let (_, queued_a, next_a) = World::new(plain_spec).unwrap().run_and_queue();
    let (_, queued_b, next_b) = World::new(skip_spec).unwrap().run_and_queue();
    prop_assert_eq!(queued_a, queued_b);
    prop_assert_eq!(next_a, next_b);
    Ok(b.events_stepped)
}

#[derive(Debug, Clone)]
enum F {
    Crash(u64, usize),
    Restart(u64, usize, u64),
    Pause(u64, usize, u64),
    HolderPause(u64, u64),
    RandomPause(u64, u64),
    Partition(u64, usize, u64),
    Step(u64, usize, i64),
    Outage(u64, u64),
    Stop(u64, usize),
}

/// `schedule` as the spec's timed faults, in time order (node numbers wrap to the world's).
fn add_faults(spec: &mut WorldSpec, schedule: &[F]) {
    let nodes = spec.nodes.len();
    for f in schedule {
        let node = |n: usize| Target::Node(n % nodes);
        let (at, target, kind) = match *f {
            F::Crash(t, n) => (t, node(n), FaultKind::Crash),
            F::Restart(t, n, d) => (t, node(n), FaultKind::Restart { delay: secs(d) }),
            F::Pause(t, n, d) => (t, node(n), FaultKind::Pause { duration: secs(d) }),
            F::HolderPause(t, d) => (t, Target::Holder, FaultKind::Pause { duration: millis(d) }),
            F::RandomPause(t, d) => (t, Target::Random, FaultKind::Pause { duration: millis(d) }),
            F::Partition(t, n, d) => {
                (t, node(n), FaultKind::Partition { duration: secs(d), cut: Cut::Both, mode: PartitionMode::Drop })
            }
            F::Step(t, n, d) => (t, node(n), FaultKind::ClockStep { delta_ns: d * 1_000_000_000 }),
            F::Outage(t, d) => (t, node(0), FaultKind::ServerOutage { duration: secs(d), mode: PartitionMode::Hold }),
            F::Stop(t, n) => (t, node(n), FaultKind::Stop),
        };
        spec.faults.push(TimedFault { at: secs(at), target, kind });
    }
    spec.faults.sort_by_key(|f| f.at);
}

fn faults(nodes: usize) -> impl Strategy<Value = Vec<F>> {
    let one = prop_oneof![
        (5u64..580, 0..nodes).prop_map(|(t, n)| F::Crash(t, n)),
        (5u64..580, 0..nodes, 0u64..20).prop_map(|(t, n, d)| F::Restart(t, n, d)),
        (5u64..580, 0..nodes, 1u64..20).prop_map(|(t, n, d)| F::Pause(t, n, d)),
        (5u64..580, 1u64..20_000).prop_map(|(t, d)| F::HolderPause(t, d)),
        (5u64..580, 1u64..20_000).prop_map(|(t, d)| F::RandomPause(t, d)),
        (5u64..580, 0..nodes, 1u64..40).prop_map(|(t, n, d)| F::Partition(t, n, d)),
        (5u64..580, 0..nodes, -30i64..30).prop_map(|(t, n, d)| F::Step(t, n, d)),
        (5u64..580, 1u64..20).prop_map(|(t, d)| F::Outage(t, d)),
        (5u64..580, 0..nodes).prop_map(|(t, n)| F::Stop(t, n)),
    ];
    proptest::collection::vec(one, 0..5)
}

/// A random process pausing a node (`Some(n)`, wrapped to the world's) or the holder (`None`)
/// every `mean` seconds on average for up to `max` milliseconds: as the flap family's.
fn add_random_pauses(spec: &mut WorldSpec, pauses: Option<(Option<usize>, u64, u64)>) {
    let Some((node, mean, max)) = pauses else { return };
    spec.random_faults.push(RandomFault {
        key: "pauses".into(),
        mean_interval: secs(mean),
        from: 0,
        until: spec.duration,
        target: node.map_or(Target::Holder, |n| Target::Node(n % spec.nodes.len())),
        kind: RandomFaultKind::Pause { duration: DurationDist::Uniform { min: millis(1), max: millis(max) } },
    });
}

fn random_pauses() -> impl Strategy<Value = Option<(Option<usize>, u64, u64)>> {
    prop::option::of((prop::option::of(0usize..5), 5u64..120, 1u64..20_000))
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn stepping_over_quiet_stretches_changes_nothing(
        seed in any::<u64>(),
        nodes in 1usize..6,
        knobs in common::knobs(),
        drifts in proptest::collection::vec(prop_oneof![Just(0i64), -300_000i64..300_000], 5),
        schedule in faults(5),
        pauses in random_pauses(),
    ) {
        let mut spec = WorldSpec::basic(seed, nodes, Algorithm::ClientGo, secs(600));
        for (i, n) in spec.nodes.iter_mut().enumerate() {
            knobs.apply(n, drifts[i]);
        }
        spec.unsafe_mode = true;
        add_faults(&mut spec, &schedule);
        add_random_pauses(&mut spec, pauses);
        same_either_way(spec)?;
    }
}

/// A quiet hour of three electors: almost every event is stepped over, and the result is the
/// same (the fingerprint includes the events counted).
#[test]
fn a_quiet_hour_is_the_same_either_way() {
    let mut spec = WorldSpec::basic(7, 3, Algorithm::ClientGo, secs(3600));
    for n in spec.nodes.iter_mut() {
        let lat = Latency::Uniform { min: millis(1), max: millis(20) };
        n.link_mut().up.latency = lat.clone();
        n.link_mut().down.latency = lat;
    }
    let stepped = same_either_way(spec).unwrap();
    let r = World::new(WorldSpec::basic(7, 3, Algorithm::ClientGo, secs(3600))).unwrap().run();
    assert!(stepped * 10 > r.events_processed * 8, "only {stepped} of {} events stepped over", r.events_processed);
}

proptest! {
    #![proptest_config(cases(48))]

    /// The same over the knobs a loop elector has: every library that runs client-go's loop
    /// (mixed on one Lease, with now and then a library that does not), labels on the lock
    /// (client-go ≥ v0.34), Events recorded, no jitter, the expiry rule and the fast path
    /// overridden, faults as above.
    #[test]
    fn stepping_over_quiet_stretches_changes_nothing_whatever_the_loop(
        seed in any::<u64>(),
        picks in proptest::collection::vec(0usize..64, 1..5),
        minor in prop::sample::select(vec![30u8, 33, 34, 36, 37]),
        labels in any::<bool>(),
        events in any::<bool>(),
        jitter in prop::sample::select(vec![1.2f64, 0.0, 0.5]),
        expiry in prop::sample::select(vec![None, Some("renew-time"), Some("observed-time")]),
        fast_path in prop::option::of(any::<bool>()),
        drifts in proptest::collection::vec(-100_000i64..100_000, 5),
        schedule in faults(5),
        pauses in random_pauses(),
    ) {
        let loops: Vec<Algorithm> = Algorithm::ALL.iter().copied().filter(|a| a.runs_client_go_loop()).collect();
        let others: Vec<Algorithm> = Algorithm::ALL.iter().copied().filter(|a| !a.runs_client_go_loop()).collect();
        let nodes = picks.len();
        let mut spec = WorldSpec::basic(seed, nodes, Algorithm::ClientGo, secs(600));
        spec.unsafe_mode = true;
        for (i, n) in spec.nodes.iter_mut().enumerate() {
            // One pick in eight is a library with its own loop.
            n.elector_mut().algorithm = if picks[i] % 8 == 7 { others[picks[i] % others.len()] } else { loops[picks[i] % loops.len()] };
            n.elector_mut().client_go = ClientGoVersion { minor, patch: None };
            if labels {
                n.elector_mut().labels = vec![("app".into(), "widget".into())];
            }
            n.elector_mut().record_events = events;
            // (A zero jitter makes some other libraries retry at once, forever: not this test's.)
            if n.elector.algorithm.runs_client_go_loop() {
                n.elector_mut().jitter_factor = jitter;
            }
            n.elector_mut().expiry = expiry.and_then(sim_core::elector::ExpiryRule::parse);
            n.elector_mut().fast_path = fast_path;
            n.clock_mut().drift_ppb = drifts[i] * 1000;
            let lat = Latency::Uniform { min: millis(1), max: millis(40) };
            n.link_mut().up.latency = lat.clone();
            n.link_mut().down.latency = lat;
        }
        add_faults(&mut spec, &schedule);
        add_random_pauses(&mut spec, pauses);
        if spec.validate().is_ok() {
            same_either_way(spec)?;
        }
    }
}

/// The events of `spec`'s run that went through the queue, and all its events (the run the
/// same with and without stretches).
fn through_the_queue(spec: impl Fn() -> WorldSpec) -> (u64, u64) {
    let stepped = same_either_way(spec()).unwrap();
    let r = World::new(spec()).unwrap().run();
    (r.events_processed - stepped, r.events_processed)
}

/// Three client-go nodes, 1–20 ms links each way, seed 11, ten minutes.
fn three_nodes_for_ten_minutes() -> WorldSpec {
    let mut spec = WorldSpec::basic(11, 3, Algorithm::ClientGo, secs(600));
    for n in spec.nodes.iter_mut() {
        let lat = Latency::Uniform { min: millis(1), max: millis(20) };
        n.link_mut().up.latency = lat.clone();
        n.link_mut().down.latency = lat;
    }
    spec
}

/// A paused holder takes no step until it resumes, so its pause is as quiet as any renewal
/// period for the others: the candidates' polls during it are stepped over, the pause and its
/// resume are carried out inside the stretch (the holder's timer due in the pause put aside and
/// fired at the resume, as the queue would), and the result is the same. Ten 9-second pauses of
/// the holder, each 50 s after the last, 1,937 events: 26 go through the queue (the first
/// steps, and where a plan's look-ahead ends); 66 when each resume ended a stretch, 111 when
/// each pause did too, 260 when the candidates' polls in each pause were not stepped over.
#[test]
fn a_paused_holder_s_pause_is_stepped_over_too() {
    let spec = || {
        let mut spec = three_nodes_for_ten_minutes();
        for k in 1..=10 {
            spec.faults.push(TimedFault {
                at: secs(50 * k) + millis(7 * k),
                target: Target::Holder,
                kind: FaultKind::Pause { duration: secs(9) },
            });
        }
        spec
    };
    let (queued, events) = through_the_queue(spec);
    assert!(queued <= 26, "{queued} of {events} events went through the queue");
}

/// A pause of the holder while it is paused already changes nothing (`apply_fault` returns at
/// once): a stretch carries it out as a no-op, its pause and resume around it. Ten pauses of
/// 9 s, each with two more inside it (and once one at its resume's instant, left to the
/// queue's order), 1,957 events: 31 go through the queue (34 before a stretch cut by its
/// look-ahead was followed at once by the next); 144 when each no-op ended a stretch.
#[test]
fn a_pause_inside_a_pause_is_stepped_over_too() {
    let spec = || {
        let mut spec = three_nodes_for_ten_minutes();
        for k in 1..=10 {
            let at = secs(50 * k) + millis(7 * k);
            for (after, duration) in
                [(0, secs(9)), (secs(3), secs(4)), (if k == 5 { secs(9) } else { secs(5) }, secs(2))]
            {
                spec.faults.push(TimedFault {
                    at: at + after,
                    target: Target::Holder,
                    kind: FaultKind::Pause { duration },
                });
            }
        }
        spec
    };
    let (queued, events) = through_the_queue(spec);
    assert!(queued <= 31, "{queued} of {events} events went through the queue");
}

/// A pause that begins outside a stretch (its node drawn at random, which a stretch leaves to
/// the queue): the stretches that start while the node is paused give it a lane paused from
/// the start, its timer put aside or queued, and carry out the resume queued before them.
/// Ten 9-second pauses of a node drawn at random, each 50 s after the last, 1,958 events: 77 go
/// through the queue; 109 when each such resume ended a stretch.
#[test]
fn a_resume_queued_before_a_stretch_is_stepped_over() {
    let spec = || {
        let mut spec = three_nodes_for_ten_minutes();
        for k in 1..=10 {
            spec.faults.push(TimedFault {
                at: secs(50 * k) + millis(7 * k),
                target: Target::Random,
                kind: FaultKind::Pause { duration: secs(9) },
            });
        }
        spec
    };
    let (queued, events) = through_the_queue(spec);
    assert!(queued <= 77, "{queued} of {events} events went through the queue");
}

/// A timer due at the very instant its node resumes: armed before the pause, it leaves the
/// queue before the resume, is put aside, and fires once the resume has queued it again (an
/// event and a sequence number more than a timer due after the resume). Fixed 5 ms links and
/// no drift put the leader's rounds on exact instants; each 1-second pause of the holder ends
/// on one, so its rounds are those of the run without pauses.
#[test]
fn a_timer_due_at_its_resume_is_put_aside_first() {
    use sim_core::elector::TimerKind;
    use sim_core::trace::TraceKind;
    let base = || {
        let mut spec = WorldSpec::basic(3, 3, Algorithm::ClientGo, secs(300));
        for n in spec.nodes.iter_mut() {
            n.link_mut().up.latency = Latency::Fixed(millis(5));
            n.link_mut().down.latency = Latency::Fixed(millis(5));
        }
        spec
    };
    let mut traced = base();
    traced.trace = true;
    let rounds: Vec<_> = World::new(traced)
        .unwrap()
        .run()
        .trace
        .iter()
        .filter(|e| matches!(e.kind, TraceKind::Timer { kind: TimerKind::NextRound }))
        .map(|e| e.t)
        .collect();
    assert!(rounds.len() > 100, "{} rounds", rounds.len());
    let spec = || {
        let mut spec = base();
        for k in [10, 40, 70, 100] {
            let kind = FaultKind::Pause { duration: secs(1) };
            spec.faults.push(TimedFault { at: rounds[k] - secs(1), target: Target::Holder, kind });
        }
        spec
    };
    let (queued, events) = through_the_queue(spec);
    assert!(queued < 40, "{queued} of {events} events went through the queue");
}
