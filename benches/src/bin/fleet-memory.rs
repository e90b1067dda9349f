//! `fleet-memory [N ...]` — where a fleet's memory goes, phase by phase, per elector.
//!
//! The fleet of issue 35 (client-go 15/10/2, three electors per Lease, the default network),
//! ten simulated minutes, trace off, built as `leasesim run` builds it (the scenario
//! deserialised from its document and cloned as the one run, then `to_world_spec`,
//! `World::new`, the run), with every allocation counted: the bytes live after each phase and
//! the most live during the run. Two
//! sizes give the cost of one more elector (the difference over the difference), free of what
//! any run has whatever its size. Heap bytes only (the binary and the stacks are not in them),
//! through the system allocator (`leasesim` itself uses mimalloc, whose pages round up).
//!
//! Run: `cargo run --release -p leasesim-benches --bin fleet-memory -- 1000 3000`

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only counters are kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(live, Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
            let live = LIVE.fetch_add(new_size, Relaxed) + new_size;
            PEAK.fetch_max(live, Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The scenario document of `n` electors, as `benches/fleet.sh` writes it in TOML.
fn fleet(n: usize) -> serde_json::Value {
    let nodes: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({ "identity": format!("e-{i}"), "lease_name": format!("lease-{}", i / 3) }))
        .collect();
    serde_json::json!({
        "name": format!("fleet-{n}"),
        "description": "fleet",
        "duration": "10m",
        "seed": 1,
        "lease": { "name": "lease-0" },
        "defaults": { "algorithm": "client-go", "lease_duration": "15s", "renew_deadline": "10s", "retry_period": "2s" },
        "nodes": nodes,
    })
}

/// Bytes live after each phase, and the most live while the world ran.
struct Phases {
    setup_peak: usize,
    scenario: usize,
    spec: usize,
    world: usize,
    run_peak: usize,
    result: usize,
}

fn measure(n: usize) -> Phases {
    let base = LIVE.load(Relaxed);
    let live = || LIVE.load(Relaxed) - base;
    PEAK.store(LIVE.load(Relaxed), Relaxed);
    let doc = fleet(n);
    let mut scenario: sim_core::scenario::Scenario = serde_json::from_value(doc).expect("a valid scenario");
    // As `scenario_file::load` keeps it.
    std::sync::Arc::make_mut(&mut scenario.nodes).shrink_to_fit();
    // `leasesim run` keeps the file's scenario and the one it runs (`run::check` clones it and
    // sets the seed): both live until the outputs are written.
    let effective = scenario.clone();
    let scenario_bytes = live();
    let spec = scenario.to_world_spec(false).expect("a valid scenario");
    let spec_bytes = live();
    let world = sim_core::world::World::new(spec).expect("a valid world");
    let world_bytes = live();
    let setup_peak = PEAK.load(Relaxed) - base;
    PEAK.store(LIVE.load(Relaxed), Relaxed);
    let result = world.run();
    let run_peak = PEAK.load(Relaxed) - base;
    let result_bytes = live();
    drop(result);
    drop((scenario, effective));
    Phases {
        setup_peak,
        scenario: scenario_bytes,
        spec: spec_bytes,
        world: world_bytes,
        run_peak,
        result: result_bytes,
    }
}

fn main() {
    let mut sizes: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("N: electors")).collect();
    if sizes.is_empty() {
        sizes = vec![1000, 3000];
    }
    println!("heap bytes live, cumulative (the scenario is kept through the run, as `leasesim run` keeps it)");
    println!(
        "{:>9} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "electors", "scenario", "+spec", "+world", "setup peak", "run peak", "+result"
    );
    let rows: Vec<(usize, Phases)> = sizes.iter().map(|&n| (n, measure(n))).collect();
    for (n, p) in &rows {
        println!(
            "{n:>9} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
            p.scenario, p.spec, p.world, p.setup_peak, p.run_peak, p.result
        );
    }
    for w in rows.windows(2) {
        let ((a, pa), (b, pb)) = (&w[0], &w[1]);
        let per = |x: usize, y: usize| (y as f64 - x as f64) / (*b as f64 - *a as f64);
        println!(
            "per elector ({a} → {b}): scenario {:.0} B, +spec {:.0} B, +world {:.0} B, setup peak {:.0} B, run peak {:.0} B, +result {:.0} B",
            per(pa.scenario, pb.scenario),
            per(pa.spec, pb.spec),
            per(pa.world, pb.world),
            per(pa.setup_peak, pb.setup_peak),
            per(pa.run_peak, pb.run_peak),
            per(pa.result, pb.result)
        );
    }
}
