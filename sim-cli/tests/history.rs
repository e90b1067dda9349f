//! The protected object's history end to end (docs/history.md): the same unsafe overlap
//! (split-brain.toml, 50–400 ms latency) under each reconciler mode, the checks' verdicts,
//! `history.jsonl` beside the trace, and a hunt for a lost update.

use sim_cli::run::{self, RunOutput};
use sim_cli::scenario_file;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn split_brain(mode: &str) -> RunOutput {
    let path = repo().join("scenarios/split-brain.toml");
    let source = std::fs::read_to_string(&path).unwrap();
    let sets = vec![
        format!("defaults.reconciler.mode={mode}"),
        "defaults.network={ latency = { uniform = [\"50ms\", \"400ms\"] } }".to_string(),
    ];
    let loaded = scenario_file::load("split-brain.toml", &source, &sets).unwrap_or_else(|e| panic!("{}", e.message));
    run::run(&loaded, Some(1), true).unwrap_or_else(|e| panic!("{}", e.message))
}

/// `update` (read, then write with no precondition): the deposed leader's writes land while the
/// Lease names the new holder, and some overwrite the new holder's writes unseen.
#[test]
fn an_unguarded_read_modify_write_loses_updates_and_the_overlap_corrupts() {
    let out = split_brain("update");
    let h = sim_cli::outputs::history_report(&out).expect("a traced run with a reconciler has a history");
    assert!(!h.non_holder_writes.is_empty(), "{h:?}");
    assert!(!h.lost_updates.is_empty(), "{h:?}");
    assert_eq!((h.corrupting_windows, h.harmless_windows), (1, 0));
    // Each lost update: the victim is another node's applied write inside the overwriter's
    // read-to-write span.
    for &(v, w) in &h.lost_updates {
        let (victim, writer) = (&out.result.history[v], &out.result.history[w]);
        assert_ne!(victim.node, writer.node);
        assert!(victim.rv_after > writer.based_on && victim.rv_after <= writer.rv_before, "{victim:?} {writer:?}");
    }
}

/// `fenced-update` checks the Lease and its token, then writes with the read's
/// resourceVersion: the same overlap leaves the object intact.
#[test]
fn a_fenced_update_makes_the_same_overlap_harmless() {
    let out = split_brain("fenced-update");
    assert!(out.result.metrics.dual_leader_seconds > 5.0);
    let h = sim_cli::outputs::history_report(&out).unwrap();
    assert_eq!(h.violations(), 0, "{h:?}");
    assert_eq!((h.corrupting_windows, h.harmless_windows), (0, 1));
}

/// Blind writes read nothing, so they cannot lose an update; the deposed leader's applies
/// still land while the Lease names the new holder.
#[test]
fn blind_applies_are_non_holder_writes_but_not_lost_updates() {
    let out = split_brain("apply-force");
    let h = sim_cli::outputs::history_report(&out).unwrap();
    assert!(h.lost_updates.is_empty());
    assert!(!h.non_holder_writes.is_empty());
    assert!(out.result.history.iter().all(|op| op.based_on.is_none()));
}

/// `leasesim run` writes history.jsonl beside the trace, one line per applied request with the
/// checks' marks, and summary.json's `history` block.
#[test]
fn run_writes_history_jsonl_and_the_summary_block() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .current_dir(repo())
        .args(["run", "split-brain", "--set", "defaults.reconciler.mode=update", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("protected object"));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join("history.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() > 10);
    assert!(lines.iter().any(|l| l["non_holder_write"] == true));
    assert!(lines.iter().all(|l| l["applied_ns"].as_u64() >= l["sent_ns"].as_u64()));
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["history"]["ops"].as_u64(), Some(lines.len() as u64));
}

/// `leasesim hunt --property no-lost-update`: with an unguarded update and latency within
/// 400 ms, the search finds a schedule that loses an update.
#[test]
fn hunt_finds_a_lost_update_from_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let file = repo().join("scenarios/hunts/lost-update.toml");
    let out = tmp.path().join("out");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .current_dir(repo())
        .args(["hunt", file.to_str().unwrap(), "--budget", "500", "-q", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("lost update"), "{stdout}");
}

/// Issue 32: two Leases, each reconciler updating its own object, one crash failover, no
/// overlap, never two writers on one object: the history read 231 lost updates out of 202
/// operations, pairing one object's resourceVersions with the other's reads. Keyed by object,
/// it finds none, and each line of history.jsonl names its object.
#[test]
fn two_objects_with_one_writer_each_lose_nothing() {
    let source = r#"
name = "two-objects"
description = "two Leases, a reconciler each on its own object, one crash failover"
duration = "60s"
[lease]
namespace = "op"
name = "first"
[defaults]
reconciler = { mode = "update", period = "1s", field = "phase" }
[[nodes]]
identity = "a1"
reconciler = { mode = "update", period = "1s", object = "one", field = "phase" }
[[nodes]]
identity = "a2"
start_at = "1s"
reconciler = { mode = "update", period = "1s", object = "one", field = "phase" }
[[nodes]]
identity = "b1"
lease_name = "second"
reconciler = { mode = "update", period = "1s", object = "two", field = "phase" }
[[faults]]
at = "20s"
node = "a1"
kind = "crash"
"#;
    let loaded = scenario_file::load("two-objects.toml", source, &[]).unwrap_or_else(|e| panic!("{}", e.message));
    let out = run::run(&loaded, Some(1), true).unwrap_or_else(|e| panic!("{}", e.message));
    assert_eq!(out.result.metrics.dual_leader_seconds, 0.0);
    assert_eq!(out.result.metrics.leader_changes, 1, "one failover");
    let h = sim_cli::outputs::history_report(&out).unwrap();
    assert!(out.result.history.len() > 50, "{}", out.result.history.len());
    assert!(h.lost_updates.is_empty(), "{} lost of {} operations", h.lost_updates.len(), out.result.history.len());
    let objects: std::collections::BTreeSet<&str> = out.result.history.iter().map(|o| o.object.as_str()).collect();
    assert_eq!(objects.into_iter().collect::<Vec<_>>(), ["op/one", "op/two"]);
    // Each node's overwrites metric compares against its own object's last writer: b1 alone
    // writes its object; a2 replaces a1's value once, at the failover.
    let overwrites = |n: &str| out.result.metrics.nodes[n].overwrites;
    assert_eq!((overwrites("a1"), overwrites("a2"), overwrites("b1")), (0, 1, 0));
}
