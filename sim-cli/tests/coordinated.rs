//! Coordinated leader election (KEP-4355) end to end: LeaseCandidates, the apiserver's election
//! controller (kubernetes `leaderelection_controller.go`@ac7a95ef, docs/sources/kubernetes.md), the
//! holder's `tryCoordinatedRenew` (client-go leaderelection.go@32ce75a7) and the candidates'
//! `LeaseCandidate` loop (leasecandidate.go@32ce75a7).

use sim_cli::run::{self, RunOutput};
use sim_cli::scenario_file;
use sim_core::trace::TraceKind;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn run_file(path: &str, sets: &[&str]) -> RunOutput {
    let source = std::fs::read_to_string(repo().join(path)).unwrap();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let loaded = scenario_file::load(path, &source, &sets).unwrap_or_else(|e| panic!("{}", e.message));
    run::run(&loaded, None, true).unwrap_or_else(|e| panic!("{}", e.message))
}

fn node(out: &RunOutput, name: &str) -> usize {
    out.result.node_names.iter().position(|n| n == name).unwrap()
}

/// The first time `pred` holds for a trace event after `from`.
fn first(out: &RunOutput, from: u64, pred: impl Fn(&sim_core::trace::TraceEvent) -> bool) -> Option<u64> {
    out.result.trace.iter().find(|e| e.t >= from && pred(e)).map(|e| e.t)
}

/// The rollback in coordinated-upgrade: the controller prefers the 1.33 pod, sets preferredHolder;
/// the 1.34 holder's tryCoordinatedRenew answers "end of term" (no write), it stops leading at
/// its round's deadline, its lease expires, the controller installs the electee with a 5 s lease
/// and the electee starts leading. The reference's estimate at 15/10/2: 15–27 s.
#[test]
fn a_preferred_holder_hands_over_through_expiry_within_the_reference_window() {
    let out = run_file("scenarios/coordinated-upgrade.toml", &[]);
    let set = first(
        &out,
        0,
        |e| matches!(&e.kind, TraceKind::Election(x) if x.preferred.as_deref() == Some("cle-b-1.33-rollback")),
    )
    .expect("preferredHolder set");
    let holder = node(&out, "cle-c-1.34");
    let end_of_term = first(&out, set, |e| {
        e.node == Some(holder) && matches!(&e.kind, TraceKind::Note { note } if note.name() == "end-of-term")
    })
    .expect("the holder stops renewing");
    let stopped = first(&out, set, |e| e.node == Some(holder) && matches!(e.kind, TraceKind::StoppedLeading)).unwrap();
    let installed = first(
        &out,
        set,
        |e| matches!(&e.kind, TraceKind::Election(x) if x.installed.as_deref() == Some("cle-b-1.33-rollback")),
    )
    .expect("the electee installed");
    let electee = node(&out, "cle-b-1.33-rollback");
    let leads = first(&out, set, |e| e.node == Some(electee) && matches!(e.kind, TraceKind::StartedLeading)).unwrap();
    assert!(end_of_term - set <= 2_200_000_000, "end of term at the holder's next try");
    // It keeps acting until its round's deadline (RD after the round started, RP + RD at most).
    assert!(stopped - set <= 12_100_000_000 && stopped > end_of_term);
    assert!(installed > stopped, "the controller waits for the lease to expire");
    let handover = (leads - set) as f64 / 1e9;
    assert!((15.0..=27.0).contains(&handover), "handover {handover} s");
    assert_eq!(out.result.metrics.dual_leader_seconds, 0.0);
}

/// kubernetes/kubernetes#138066: the preferred candidate is deleted; the re-elected holder is the
/// existing one, so the controller writes nothing and preferredHolder is never cleared: no leader.
#[test]
fn a_preferred_holder_naming_a_deleted_candidate_stalls_the_lease() {
    let out = run_file("scenarios/coordinated-stall.toml", &[]);
    let m = &out.result.metrics.leases;
    assert!(m["kube-system/kube-scheduler"].leaderless_seconds > 100.0);
    assert!(m["kube-system/plain-scheduler"].leaderless_seconds < 20.0);
    let a = node(&out, "sched-a-1.34");
    let leads = out.result.trace.iter().filter(|e| e.node == Some(a) && matches!(e.kind, TraceKind::StartedLeading));
    assert_eq!(leads.count(), 1, "the holder never leads again");
}

/// The apiserver's clock ahead of the candidates': the reference reads that a still-acting
/// holder is replaced beyond LD − RP − RD = 3 s. The controller never replaces it; instead its
/// pings are answered with renewTimes before the ping, the candidates rewrite in a tight loop,
/// and from +3 s the newcomer is never elected (docs/findings.md 8).
#[test]
fn an_apiserver_clock_ahead_stalls_the_election_instead_of_replacing_the_holder() {
    let base = "scenarios/sweeps/bases/coordinated-skew.toml";
    let in_step = run_file(base, &["server.clock.steps.0.delta=0s", "duration=60s"]);
    let ahead = run_file(base, &["server.clock.steps.0.delta=5s", "duration=60s"]);
    let acquisitions = |o: &RunOutput| o.result.metrics.nodes["sched-b-1.33"].acquisitions;
    assert_eq!(acquisitions(&in_step), 1);
    assert_eq!(acquisitions(&ahead), 0);
    assert_eq!(ahead.result.metrics.dual_leader_seconds, 0.0);
    assert!(ahead.result.metrics.api_requests > 100 * in_step.result.metrics.api_requests, "the write storm");
}

/// client-go's `Coordinated` arrived in v0.31 (20993758b); the versions are validated as the
/// API server validates a LeaseCandidate.
#[test]
fn coordinated_nodes_need_client_go_v0_31_and_valid_versions() {
    let source = std::fs::read_to_string(repo().join("scenarios/coordinated-stall.toml")).unwrap();
    let refused = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        match scenario_file::load("t.toml", &source, &sets) {
            Err(e) => e.message,
            Ok(l) => run::run(&l, None, false).err().expect("refused").message,
        }
    };
    assert!(refused(&["defaults.client_go=v0.30"]).contains("needs client-go v0.31 or later"));
    let e = refused(&["nodes.0.binary_version=\"1.34\""]);
    // emulationVersion defaults to the binary version, so both are invalid; the first is named.
    assert!(e.contains("Invalid value: \"1.34\": must be a valid semantic version"), "{e}");
}

/// Issue 33: the election controller's writes were drawn as faults (▼, "fault" in the legend).
/// They get their own mark, colour and legend entry, and their line ends at the Lease written.
#[test]
fn the_election_controllers_writes_have_their_own_mark_and_legend_entry() {
    let out = run_file("scenarios/coordinated-upgrade.toml", &[]);
    let meta = sim_cli::report::PlotMeta {
        scenario: "coordinated-upgrade".into(),
        subtitle: String::new(),
        unsafe_mode: false,
        leases: Vec::new(),
    };
    let svg = sim_cli::report::timeline_svg(&out.result, &meta).unwrap();
    assert!(svg.contains("\nelection controller writes the Lease\n</text>"), "legend entry");
    assert!(svg.contains("\ncontroller installs cle-a-1.33\n</text>"), "the controller's label");
    // Navy (30, 50, 150) is the controller's alone: its labels, lines and dots.
    assert!(svg.contains("#1E3296"), "the controller's colour");
    let election = out.result.faults.iter().filter(|f| f.kind == "election").count();
    assert!(election >= 3, "{election} controller writes");
    // The faults (stops) keep ▼ and the "fault" entry.
    assert!(svg.contains("\nfault\n</text>"));
}

/// A LeaseCandidate's writes carry no fieldManager (client-go `leasecandidate.go`@32ce75a7
/// creates and updates with empty options), so kube-apiserver names their manager after the
/// user agent's first word (`handlers/create.go` `managerOrUserAgent`), the process's: the same
/// manager as its Lease's writes and its Events (`lease_field_manager`), not kubectl's names.
/// The election controller's ping is its own manager's. As `kubectl get leasecandidate -o
/// yaml` shows them through `leasesim serve`.
#[test]
fn a_candidates_writes_are_its_processs_field_manager() {
    let path = "scenarios/sweeps/bases/coordinated-skew.toml";
    let source = std::fs::read_to_string(repo().join(path)).unwrap();
    let sets = ["server.clock={ steps = [{ at = \"20s\", delta = \"5s\" }] }".to_string(), "duration=60s".into()];
    let loaded = scenario_file::load(path, &source, &sets).unwrap_or_else(|e| panic!("{}", e.message));
    let (prepared, mut world) =
        run::prepare(&loaded, None, false, u64::MAX).unwrap_or_else(|e| panic!("{}", e.message));
    world.advance_to(60_000_000_000).unwrap();
    for node in &prepared.spec.nodes {
        let (ns, identity) = (&node.elector.lease_namespace, &node.elector.identity);
        let candidate = world.server_mut().peek_json(sim_core::api::Kind::LeaseCandidate, ns, identity);
        let candidate = candidate.unwrap_or_else(|| panic!("{identity} keeps a LeaseCandidate"));
        let managers: Vec<(&str, &str)> = candidate["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["manager"].as_str().unwrap(), e["operation"].as_str().unwrap()))
            .collect();
        assert!(managers.contains(&(node.lease_field_manager.as_str(), "Update")), "{identity}: {managers:?}");
        assert!(managers.iter().all(|(m, _)| *m == node.lease_field_manager || *m == "leader-election-controller"));
    }
}
