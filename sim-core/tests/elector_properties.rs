//! Properties of whole runs over random seeds, latencies and fault schedules.

use proptest::prelude::*;
use sim_core::elector::{AfterLost, Algorithm};
use sim_core::model::{FaultKind, Target, TimedFault, WorldSpec};
use sim_core::net::{Cut, Latency};
use sim_core::time::{millis, secs};
use sim_core::trace::TraceKind;
use sim_core::world::World;

#[derive(Debug, Clone)]
enum F {
    Crash(u64, usize),
    Restart(u64, usize, u64),
    Partition(u64, usize, u64),
}

fn faults() -> impl Strategy<Value = Vec<F>> {
    let one = prop_oneof![
        (5u64..280, 0usize..3).prop_map(|(t, n)| F::Crash(t, n)),
        (5u64..280, 0usize..3, 0u64..20).prop_map(|(t, n, d)| F::Restart(t, n, d)),
        (5u64..280, 0usize..3, 1u64..60).prop_map(|(t, n, d)| F::Partition(t, n, d)),
    ];
    proptest::collection::vec(one, 0..6)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// With no drift and no pauses, RenewDeadline + RetryPeriod + the worst one-way latency below
    /// LeaseDuration keeps client-go to one acting leader, whatever the partitions, crashes,
    /// restarts and clock offsets; and leaseTransitions only rises, and only on a new holder.
    #[test]
    fn safe_configurations_never_have_two_acting_leaders(
        seed in any::<u64>(),
        rp_ms in 500u64..3000,
        rd_extra_ms in 100u64..4000,
        margin_ms in 1u64..5000,
        latency_max_ms in 0u64..400,
        offsets in proptest::collection::vec(-300i64..300, 3),
        schedule in faults(),
    ) {
        let rp = millis(rp_ms);
        let rd = rp * 12 / 10 + millis(rd_extra_ms);
        let ld = rd + rp + millis(latency_max_ms) + millis(margin_ms);
        let ld = ld.div_ceil(secs(1)) * secs(1); // the Lease holds whole seconds
        let mut spec = WorldSpec::basic(seed, 3, Algorithm::ClientGo, secs(300));
        spec.trace = true;
        for (i, n) in spec.nodes.iter_mut().enumerate() {
            n.elector_mut().lease_duration = ld;
            n.elector_mut().renew_deadline = rd;
            n.elector_mut().retry_period = rp;
            n.elector_mut().request_timeout = Some((rd / 2).max(secs(1)));
            n.elector_mut().after_lost = AfterLost::Restart { delay: secs(3) };
            n.clock_mut().offset_ns = offsets[i] * 1_000_000_000;
            let lat = Latency::Uniform { min: 0, max: millis(latency_max_ms) };
            n.link_mut().up.latency = lat.clone();
            n.link_mut().down.latency = lat;
        }
        for f in &schedule {
            let (at, node, kind) = match *f {
                F::Crash(t, n) => (t, n, FaultKind::Crash),
                F::Restart(t, n, d) => (t, n, FaultKind::Restart { delay: secs(d) }),
                F::Partition(t, n, d) => (t, n, FaultKind::Partition { duration: secs(d), cut: Cut::Both, mode: sim_core::net::PartitionMode::Drop }),
            };
            spec.faults.push(TimedFault { at: secs(at), target: Target::Node(node), kind });
        }
        let r = World::new(spec).unwrap().run();
        prop_assert_eq!(r.metrics.dual_leader_seconds, 0.0, "LD {} RD {} RP {} windows {:?}", ld, rd, rp, r.dual_windows);
        let mut last: Option<(std::sync::Arc<str>, i32)> = None;
        for e in &r.trace {
            if let TraceKind::LeaseChanged { holder, transitions, .. } = &e.kind {
                if let Some((h, t)) = &last {
                    prop_assert!(transitions >= t, "leaseTransitions went down: {} -> {}", t, transitions);
                    if transitions > t {
                        prop_assert!(holder != h && !holder.is_empty(), "transitions rose without a new holder");
                    }
                }
                last = Some((holder.clone(), *transitions));
            }
        }
    }
}
