//! A fixed, small workload for the instruction-count guard (`benches/instructions.sh`): run
//! under callgrind, its instruction count is the same on every run of the same binary, whatever
//! else the machine is doing. Kept short (about a second natively counted, well under a minute
//! under valgrind).
//!
//! `instruction-workload [flap|scale|scale-whole|trace|coordinated]` — one workload; with no
//! argument, all five.
//! `instruction-workload fleet N` — N electors (three per Lease) for one simulated hour, trace
//! off: not part of the guard, a whole-process workload to time two builds against each other.
//! `instruction-workload family N` — the flap family with seeds 1..=N (5·N one-hour runs), the
//! same way: two builds' event loops timed in pairs, without a sweep's files.

use leasesim_benches::{flap_family, flap_spec, run_all, scale_spec};

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let mut events = 0;
    if which == "fleet" {
        let n = std::env::args().nth(2).and_then(|n| n.parse().ok()).expect("fleet N");
        events += run_all(vec![scale_spec(n)]);
    }
    if which == "family" {
        let n = std::env::args().nth(2).and_then(|n| n.parse().ok()).expect("family N");
        events += run_all(flap_family(n, false));
    }
    if which == "flap" || which == "all" {
        // Two drifting three-node hours with holder pauses.
        events += run_all(vec![flap_spec(100_000, 1, false), flap_spec(300_000, 2, false)]);
    }
    if which == "scale" || which == "all" {
        // Three hundred electors on a hundred Leases, two simulated minutes.
        let mut spec = scale_spec(300);
        spec.duration = sim_core::time::secs(120);
        events += run_all(vec![spec]);
    }
    if which == "scale-whole" || which == "all" {
        // The same fleet run as one world (`--no-skip`, or a fleet with faults): the path a
        // fleet took before it was run Lease by Lease (`world/phases.rs`).
        let mut spec = scale_spec(300);
        spec.duration = sim_core::time::secs(120);
        spec.skip_quiet = false;
        events += run_all(vec![spec]);
    }
    if which == "trace" || which == "all" {
        events += run_all(vec![flap_spec(100_000, 3, true)]);
    }
    if which == "coordinated" || which == "all" {
        // The shipped coordinated-upgrade scenario (the election controller in kube-apiserver
        // and seven LeaseCandidates beside plain client-go), stretched to half an hour.
        let loaded = sim_cli::shipped::load_named("coordinated-upgrade", &["duration=30m".into()]).expect("shipped");
        events += run_all(vec![loaded.scenario.to_world_spec(false).expect("valid")]);
    }
    println!("{events} events");
}
