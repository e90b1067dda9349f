//! The workloads of the performance benchmarks (docs/performance.md), shared by the bench
//! binaries and the instruction-count guard: the flap family, the fleet scale series, and the
//! bare binary-heap loop every figure is measured against in the same process.

use sim_core::elector::Algorithm;
use sim_core::model::WorldSpec;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;

/// The flap family's drift bounds D (ppm): each node's drift is drawn uniformly in ±D.
pub const FLAP_DRIFTS_PPM: [u64; 5] = [0, 1_000, 10_000, 100_000, 300_000];

/// `benches/flap/flap.toml` with drift bound `d_ppm` and `seed`, as a world spec.
pub fn flap_spec(d_ppm: u64, seed: u64, trace: bool) -> WorldSpec {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/flap/flap.toml");
    let source = std::fs::read_to_string(path).expect("benches/flap/flap.toml");
    let overrides = [format!("defaults.clock.drift_ppm_dist={{ uniform = [-{d_ppm}, {d_ppm}] }}")];
    let mut loaded = sim_cli::scenario_file::load(path, &source, &overrides).expect("the flap scenario loads");
    loaded.scenario.seed = seed;
    loaded.scenario.to_world_spec(trace).expect("the flap scenario is valid")
}

/// The flap family: every drift bound × seeds `1..=seeds` (500 runs with 100 seeds).
pub fn flap_family(seeds: u64, trace: bool) -> Vec<WorldSpec> {
    FLAP_DRIFTS_PPM.iter().flat_map(|&d| (1..=seeds).map(move |seed| flap_spec(d, seed, trace))).collect()
}

/// `electors` client-go nodes, three per Lease, for one simulated hour (the fleet series).
pub fn scale_spec(electors: usize) -> WorldSpec {
    let mut spec = WorldSpec::basic(1, electors, Algorithm::ClientGo, sim_core::time::secs(3600));
    for (i, node) in spec.nodes.iter_mut().enumerate() {
        node.elector_mut().lease_name = format!("lease-{}", i / 3);
    }
    spec
}

/// Runs each spec to its end; returns the events processed in all.
pub fn run_all(specs: Vec<WorldSpec>) -> u64 {
    specs
        .into_iter()
        .map(|spec| black_box(sim_core::world::World::new(spec).expect("valid").run()).events_processed)
        .sum()
}

/// The reference: a bare `BinaryHeap` loop of `timers` periodic timers keyed by (time, seq),
/// each re-arming itself with a pseudo-random period of 1 ms to 4 s and a one-word state update,
/// until `events` have fired. This is the least any discrete-event simulator of the same queue
/// size can do per event.
pub fn bare_heap_loop(events: u64, timers: usize) -> u64 {
    let mut heap = BinaryHeap::with_capacity(timers);
    let mut state = vec![0u64; timers];
    let mut seq = 0u64;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..timers {
        heap.push(Reverse((i as u64 * 1_000_003, seq, i as u32)));
        seq += 1;
    }
    let mut fired = 0;
    while let Some(Reverse((now, _, id))) = heap.pop() {
        state[id as usize] = state[id as usize].wrapping_add(now);
        fired += 1;
        if fired == events {
            break;
        }
        // xorshift: a cheap, deterministic period in [1 ms, 4 s].
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let period = 1_000_000 + x % 4_000_000_000;
        heap.push(Reverse((now + period, seq, id)));
        seq += 1;
    }
    black_box(state.iter().sum::<u64>()) ^ fired
}
