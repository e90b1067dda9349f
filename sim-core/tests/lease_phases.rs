//! A world run one Lease at a time (`world/phases.rs`) produces what the whole world run at once
//! produces: over random fleets — Leases interleaved in node order, every library, client-go
//! releases, timings, fixed latencies (whose instants meet across Leases) and random ones,
//! loss, drifts that make two leaders at once, request timeouts, restarts with a new identity,
//! Events recorded — the two runs give the same result, field by field. Worlds that may not be
//! split (a fault, a watch) are compared too: they run whole either way.

use proptest::prelude::*;
use sim_core::elector::{AfterLost, Algorithm, ClientGoVersion};
use sim_core::model::{FaultKind, Target, TimedFault, WorldSpec};
use sim_core::net::Latency;
use sim_core::time::{millis, secs};
use sim_core::world::{RunResult, World};

/// Everything a run hands back that an output is made of, as text.
fn fingerprint(r: &RunResult) -> String {
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{}",
        r.metrics,
        r.spans,
        r.dual_windows,
        r.transitions_series,
        r.lease_transitions,
        r.acting_series,
        r.faults,
        r.actions,
        r.node_names,
        r.node_leases,
        r.events_processed,
    )
}

/// The run Lease by Lease (if this world may be split) and the whole world at once
/// (`skip_quiet` off, as `--no-skip`): the same result. Returns whether it was split.
fn same_either_way(spec: WorldSpec) -> Result<bool, TestCaseError> {
    let mut whole = spec.clone();
    whole.skip_quiet = false;
    let world = World::new(spec).unwrap();
    let split = world.runs_lease_by_lease();
    let a = World::new(whole).unwrap().run();
    let b = world.run();
    prop_assert_eq!(fingerprint(&a), fingerprint(&b));
    for node in a.clock_offsets.nodes() {
        prop_assert_eq!(a.clock_offsets.of(node), b.clock_offsets.of(node));
    }
    prop_assert_eq!(a.clock_offsets.nodes().collect::<Vec<_>>(), b.clock_offsets.nodes().collect::<Vec<_>>());
    Ok(split)
}

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PHASE_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default);
    ProptestConfig { cases, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(cases(96))]

    #[test]
    fn a_fleet_run_lease_by_lease_is_the_whole_run(
        seed in any::<u64>(),
        leases_of in proptest::collection::vec(0usize..4, 2..10),
        picks in proptest::collection::vec(0usize..64, 10),
        minor in prop::sample::select(vec![26u8, 29, 31, 34, 37]),
        rp_ms in 300u64..3000,
        rd_extra_ms in 0u64..4000,
        ld_extra_s in 0u64..10,
        latency in (0u64..30, 0u64..200),
        fixed in any::<bool>(),
        loss in prop::sample::select(vec![0.0, 0.0, 0.02]),
        drifts in proptest::collection::vec(prop_oneof![Just(0i64), -300_000i64..300_000], 10),
        timeout_ms in prop::option::of(200u64..5000),
        release in any::<bool>(),
        events in any::<bool>(),
        new_identity in any::<bool>(),
        fault in prop::option::weighted(0.2, (0u64..300, 0usize..10)),
    ) {
        let rp = millis(rp_ms);
        let rd = rp + millis(rd_extra_ms);
        let ld = (rd + rp).div_ceil(secs(1)) * secs(1) + secs(ld_extra_s);
        let nodes = leases_of.len();
        let mut spec = WorldSpec::basic(seed, nodes, Algorithm::ClientGo, secs(300));
        spec.unsafe_mode = true;
        for (i, n) in spec.nodes.iter_mut().enumerate() {
            // Mostly client-go's loop; one pick in eight another library (some watch the Lease,
            // and then the world runs whole).
            let pick = picks[i];
            n.elector_mut().algorithm = if pick % 8 == 7 { Algorithm::ALL[pick % Algorithm::ALL.len()] } else { Algorithm::ClientGo };
            n.elector_mut().lease_name = format!("lease-{}", leases_of[i]);
            n.elector_mut().client_go = ClientGoVersion { minor, patch: None };
            n.elector_mut().lease_duration = ld;
            n.elector_mut().renew_deadline = rd;
            n.elector_mut().retry_period = rp;
            n.elector_mut().request_timeout = timeout_ms.map(millis);
            n.elector_mut().release_on_cancel = release;
            n.elector_mut().record_events = events;
            n.elector_mut().after_lost = AfterLost::Restart { delay: secs(2) };
            n.identity_per_start = new_identity;
            n.clock_mut().drift_ppb = drifts[i] * 1000;
            let lat = if fixed {
                Latency::Fixed(millis(latency.0))
            } else {
                Latency::Uniform { min: millis(latency.0), max: millis(latency.0 + latency.1) }
            };
            n.link_mut().up.latency = lat.clone();
            n.link_mut().down.latency = lat;
            n.link_mut().up.loss = loss;
        }
        if let Some((at, node)) = fault {
            let target = Target::Node(node % nodes);
            spec.faults.push(TimedFault { at: secs(at), target, kind: FaultKind::Crash });
        }
        if spec.validate().is_ok() {
            same_either_way(spec)?;
        }
    }
}

/// The fleet shape, small: 30 client-go electors, three a Lease, 15/10/2 s, the
/// default 1 ms links (every Lease's leader renews at the same instants), ten minutes. It is
/// split, and the result is the whole run's.
#[test]
fn a_lockstep_fleet_is_split_and_the_same() {
    let mut spec = WorldSpec::basic(3, 30, Algorithm::ClientGo, secs(600));
    for (i, n) in spec.nodes.iter_mut().enumerate() {
        n.elector_mut().lease_name = format!("lease-{}", i / 3);
    }
    assert!(same_either_way(spec.clone()).unwrap(), "a fleet of ten Leases runs Lease by Lease");
    // With one Lease, or the trace on, or `--no-skip`, it runs whole.
    let one = WorldSpec::basic(3, 3, Algorithm::ClientGo, secs(600));
    assert!(!World::new(one).unwrap().runs_lease_by_lease());
    let mut traced = spec.clone();
    traced.trace = true;
    assert!(!World::new(traced).unwrap().runs_lease_by_lease());
    spec.skip_quiet = false;
    assert!(!World::new(spec).unwrap().runs_lease_by_lease());
}
