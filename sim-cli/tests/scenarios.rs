//! The shipped scenarios, end to end through the `leasesim` binary: every expectation passes,
//! outputs are byte-identical run to run, and bad input gets a located message, exit 2, and no
//! output directory.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn leasesim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim")).current_dir(repo()).args(args).output().expect("leasesim runs")
}

/// `scenarios/*.toml` and `scenarios/incidents/*.toml`.
fn shipped() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = ["scenarios", "scenarios/incidents"]
        .iter()
        .flat_map(|d| std::fs::read_dir(repo().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

/// Every incident scenario names its upstream report (or says it comes from code reading) and
/// runs the faulty and the fixed behaviour on at least two Leases.
#[test]
fn incidents_name_their_source_and_compare_two_leases() {
    assert!(sim_cli::shipped::INCIDENTS.len() >= 10, "{:?}", sim_cli::shipped::INCIDENTS);
    for name in sim_cli::shipped::INCIDENTS {
        let path = repo().join(format!("scenarios/incidents/{name}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let l = sim_cli::scenario_file::load(name, &text, &[]).unwrap();
        let d = &l.scenario.description;
        assert!(d.contains('#') || d.contains("Code reading"), "{name}: names no upstream issue");
        assert!(sim_cli::run::lease_keys(&l.scenario).len() >= 2, "{name}: one Lease, no side-by-side fix");
        assert!(!l.scenario.expect.is_empty(), "{name}: no expectations");
    }
}

#[test]
fn every_shipped_scenario_meets_its_expectations() {
    let tmp = tempfile::tempdir().unwrap();
    let files = shipped();
    assert!(files.len() >= 9, "expected the shipped library, found {files:?}");
    for file in files {
        let out = tmp.path().join(file.file_stem().unwrap());
        let o = leasesim(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{}: exit {:?}\n{stdout}\n{}",
            file.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!stdout.contains("FAIL"), "{stdout}");
        for name in ["summary.json", "trace.jsonl", "trace.perfetto.json"] {
            assert!(out.join(name).exists(), "{} lacks {name}", file.display());
        }
    }
}

#[test]
fn the_same_scenario_and_seed_give_byte_identical_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    for dir in [&a, &b] {
        let o = leasesim(&["run", "scenarios/split-brain.toml", "--seed", "7", "--out", dir.to_str().unwrap()]);
        assert!(o.status.success());
    }
    for name in ["summary.json", "trace.jsonl", "trace.perfetto.json"] {
        assert_eq!(std::fs::read(a.join(name)).unwrap(), std::fs::read(b.join(name)).unwrap(), "{name} differs");
    }
    let o = leasesim(&["run", "scenarios/split-brain.toml", "--check-determinism", "--out", a.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("determinism check passed"));
}

#[test]
fn the_perfetto_trace_is_a_valid_trace_event_file_with_nesting_slices() {
    let tmp = tempfile::tempdir().unwrap();
    let o = leasesim(&["run", "split-brain", "--out", tmp.path().to_str().unwrap()]);
    assert!(o.status.success());
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("trace.perfetto.json")).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let mut by_track: std::collections::BTreeMap<u64, Vec<(f64, f64)>> = Default::default();
    for e in events {
        let ph = e["ph"].as_str().unwrap();
        assert!(["M", "X", "i", "C"].contains(&ph), "unexpected phase {ph}");
        if ph == "X" {
            by_track
                .entry(e["tid"].as_u64().unwrap())
                .or_default()
                .push((e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()));
        }
    }
    // Slices on one track must not partially overlap (Perfetto's nesting rule).
    for (tid, mut slices) in by_track {
        slices.sort_by(|a, b| a.partial_cmp(b).unwrap());
        for w in slices.windows(2) {
            let (a, b) = (w[0], w[1]);
            let nested = b.0 + b.1 <= a.0 + a.1;
            assert!(b.0 >= a.0 + a.1 - 1e-6 || nested, "track {tid}: {a:?} and {b:?} overlap");
        }
    }
    assert!(events.iter().any(|e| e["name"].as_str().is_some_and(|n| n.starts_with("DUAL LEADERS"))));
    assert!(events.iter().any(|e| e["ph"] == "C" && e["name"] == "leaseTransitions"));
}

#[test]
fn trace_jsonl_starts_with_a_header_and_every_line_is_json() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(leasesim(&["run", "expire", "--out", tmp.path().to_str().unwrap()]).status.success());
    let text = std::fs::read_to_string(tmp.path().join("trace.jsonl")).unwrap();
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["kind"], "header");
    assert!(header["replay"].as_str().unwrap().starts_with("leasesim run "));
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["t_ns"].is_u64() && v["kind"].is_string());
    }
}

/// Writes `body` to a scenario file and runs `leasesim run` on it into a fresh output path.
fn run_bad(body: &str, extra: &[&str]) -> (String, i32, bool) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.toml");
    std::fs::write(&file, body).unwrap();
    let out = tmp.path().join("out");
    let mut args = vec!["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = leasesim(&args);
    (String::from_utf8_lossy(&o.stderr).to_string(), o.status.code().unwrap_or(-1), out.exists())
}

const GOOD_HEAD: &str = "name = \"t\"\ndescription = \"d\"\nduration = \"1m\"\n";

#[test]
fn bad_input_gets_a_located_message_exit_2_and_no_output() {
    let cases: Vec<(String, &str, &[&str])> = vec![
        ("name = \n".into(), ":1:8:", &[]),
        (
            format!("{GOOD_HEAD}[[nodes]]\nidentity = \"a\"\nrenew_dedline = \"5s\"\n"),
            "did you mean \"renew_deadline\"",
            &[],
        ),
        (format!("{GOOD_HEAD}[[nodes]]\nidentity = \"a\"\nlease_duration = 15\n"), ":6:18:", &[]),
        (format!("{GOOD_HEAD}[[nodes]]\nidentity = \"a\"\nretry_period = \"-2s\"\n"), "negative", &[]),
        (
            format!(
                "{GOOD_HEAD}[[nodes]]\nidentity = \"a\"\n[[faults]]\nat = \"5s\"\nnode = \"b\"\nkind = \"crash\"\n"
            ),
            ":8:8: faults[0].node: no node is named \"b\"",
            &[],
        ),
        (
            format!(
                "{GOOD_HEAD}[[nodes]]\nidentity = \"a\"\n[[faults]]\nat = \"5m\"\nnode = \"a\"\nkind = \"crash\"\n"
            ),
            "beyond the run's duration",
            &[],
        ),
        (
            // The apiserver's clock steps are checked as a node's are.
            format!(
                "{GOOD_HEAD}[server]\nclock = {{ steps = [{{ at = \"5m\", delta = \"5s\" }}] }}\n[[nodes]]\nidentity = \"a\"\ncoordinated = true\n"
            ),
            "server.clock.steps[0].at: is beyond the run's duration",
            &[],
        ),
        (
            format!("{GOOD_HEAD}[[nodes]]\nidentity = \"a\"\nrenew_deadline = \"20s\"\n"),
            "leaseDuration must be greater than renewDeadline",
            &[],
        ),
        (
            format!("{GOOD_HEAD}expect = [\"dual_leader_secs == 0\"]\n[[nodes]]\nidentity = \"a\"\n"),
            "did you mean \"dual_leader_seconds\"",
            &[],
        ),
        (
            format!("{GOOD_HEAD}[[nodes]]\nidentity = \"a\"\n"),
            "did you mean \"renew_deadline\"",
            &["--set", "defaults.renew_dedline=3s"],
        ),
    ];
    for (body, needle, extra) in cases {
        let (stderr, code, wrote) = run_bad(&body, extra);
        assert_eq!(code, 2, "{body}\n{stderr}");
        assert!(stderr.contains(needle), "expected {needle:?} in:\n{stderr}");
        assert!(!wrote, "an output directory was left behind for {body}");
        assert!(!stderr.contains("panicked"));
    }
    let o = leasesim(&["run", "no/such/file.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no such file"));
}

#[test]
fn an_unsafe_configuration_runs_only_when_opted_in_and_says_so_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let o = leasesim(&["run", "split-brain", "--out", tmp.path().to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("UNSAFE"));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["unsafe_mode"], true);
    let trace = std::fs::read_to_string(tmp.path().join("trace.jsonl")).unwrap();
    assert!(trace.lines().next().unwrap().contains("\"unsafe_mode\":true"));
    let perfetto = std::fs::read_to_string(tmp.path().join("trace.perfetto.json")).unwrap();
    assert!(perfetto.contains("UNSAFE"));
    let o = leasesim(&["run", "split-brain", "--set", "unsafe=false", "--out", tmp.path().join("x").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("leaseDuration must be greater than renewDeadline"));
}

#[test]
fn a_failed_expectation_exits_1_and_prints_the_replay_command() {
    let tmp = tempfile::tempdir().unwrap();
    let o = leasesim(&[
        "run",
        "renew",
        "--set",
        "defaults.renew_deadline=9s",
        "--set",
        "expect=[\"lease_transitions > 5\"]",
        "--out",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("leasesim run scenarios/renew.toml --seed 1 --set defaults.renew_deadline=9s"), "{stderr}");
}

#[test]
fn list_shows_every_shipped_scenario_with_its_description() {
    let o = leasesim(&["list"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    for f in shipped() {
        assert!(stdout.contains(f.file_stem().unwrap().to_str().unwrap()));
    }
    assert!(!stdout.contains("invalid"), "{stdout}");
}

#[test]
fn the_complete_example_in_docs_scenarios_md_runs_and_meets_its_expectations() {
    let doc = std::fs::read_to_string(repo().join("docs/scenarios.md")).unwrap();
    // The block under "A complete example" (the others are fragments).
    let section = doc.find("## A complete example").expect("docs/scenarios.md has a complete example");
    let start = section + doc[section..].find("```toml\n").unwrap() + "```toml\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("example.toml");
    std::fs::write(&file, &doc[start..end]).unwrap();
    let o = leasesim(&["run", file.to_str().unwrap(), "--out", tmp.path().join("out").to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The committed reports/ are what the current code produces: a change of behaviour or of
/// determinism shows up here as a diff. (Regenerate with `leasesim reports`.)
#[test]
fn committed_reports_match_a_fresh_regeneration_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let fresh = tmp.path().join("reports");
    let o = leasesim(&["reports", "--out", fresh.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    fn files(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() { out.extend(files(&p)) } else { out.push(p) }
        }
        out.sort();
        out
    }
    let committed = repo().join("reports");
    let rel = |base: &Path, v: Vec<PathBuf>| {
        v.into_iter().map(|p| p.strip_prefix(base).unwrap().to_path_buf()).collect::<Vec<_>>()
    };
    let want = rel(&committed, files(&committed));
    assert_eq!(rel(&fresh, files(&fresh)), want, "the set of report files changed: run `leasesim reports`");
    for f in want {
        assert!(
            std::fs::read(committed.join(&f)).unwrap() == std::fs::read(fresh.join(&f)).unwrap(),
            "reports/{} is stale: run `cargo run --release --bin leasesim -- reports` and commit",
            f.display()
        );
    }
}

/// A real cluster's Leases as the starting point: the dumped holder (a pod that is gone) keeps
/// the Lease until client-go candidates, who have never observed it, wait a full LeaseDuration;
/// the takeover continues the dumped leaseTransitions.
#[test]
fn run_from_cluster_starts_from_the_dumped_leases() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = repo().join("sim-cli/tests/fixtures/cluster-leases.yaml");
    let o = leasesim(&[
        "run",
        "renew",
        "--from-cluster",
        dump.to_str().unwrap(),
        "--set",
        "expect=[\"lease_transitions == 5\", \"failover_seconds.count == 0\"]",
        "-o",
        "json",
        "--out",
        tmp.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(summary["replay"].as_str().unwrap().contains("--set from_cluster="));
    assert_eq!(summary["config"]["epoch"], "2026-03-01T09:00:00.250000Z");
    // The first acquisition comes one LeaseDuration (15 s) after the candidates first saw the
    // dumped record, not at once, although its renewTime is already 0 s old.
    let trace = std::fs::read_to_string(tmp.path().join("trace.jsonl")).unwrap();
    let first = trace.lines().find(|l| l.contains("\"kind\":\"started-leading\"")).expect("someone leads");
    let v: serde_json::Value = serde_json::from_str(first).unwrap();
    let t = v["t_ns"].as_u64().unwrap();
    assert!((15_000_000_000..20_000_000_000).contains(&t), "first acquisition at {t} ns");
    let bad = leasesim(&["run", "renew", "--from-cluster", "sim-cli/tests/fixtures/bad-renew-time.yaml"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("renewTime"));
}

#[test]
fn an_existing_folder_that_is_not_leasesim_output_is_never_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let notes = tmp.path().join("mine");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("notes.txt"), "keep me").unwrap();
    let o = leasesim(&["run", "renew", "--out", notes.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("refusing to replace it"));
    assert_eq!(std::fs::read_to_string(notes.join("notes.txt")).unwrap(), "keep me");
    let file = tmp.path().join("README.md");
    std::fs::write(&file, "x").unwrap();
    let o = leasesim(&["lab", "--out", file.to_str().unwrap(), "--epoch", "2026-01-01T00:00:00Z"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    // Its own earlier output is replaced.
    let own = tmp.path().join("own");
    assert!(leasesim(&["run", "renew", "--out", own.to_str().unwrap()]).status.success());
    assert!(leasesim(&["run", "renew", "--out", own.to_str().unwrap()]).status.success());
}

#[test]
fn shipped_scenarios_run_by_name_from_any_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let run_in = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_leasesim")).current_dir(tmp.path()).args(args).output().unwrap()
    };
    let o = run_in(&["run", "takeover", "--out", "o"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run_in(&["list"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("split-brain"));
    let o = run_in(&["run", "split-brian"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did you mean \"split-brain\""));
}

#[test]
fn the_built_in_scenarios_are_the_files_in_scenarios() {
    let embedded: Vec<(String, String)> =
        sim_cli::shipped::SHIPPED.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    let mut on_disk: Vec<(String, String)> = shipped()
        .iter()
        .map(|p| (p.file_stem().unwrap().to_string_lossy().to_string(), std::fs::read_to_string(p).unwrap()))
        .collect();
    on_disk.sort();
    let names = |v: &[(String, String)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&embedded), names(&on_disk), "update sim-cli/src/shipped.rs to match scenarios/");
    assert!(embedded == on_disk, "sim-cli/src/shipped.rs embeds a stale copy");
}

#[test]
fn a_timeline_fault_aimed_at_a_random_node_picks_one_from_the_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("rt.toml");
    std::fs::write(
        &file,
        format!("{GOOD_HEAD}[[nodes]]\nidentity = \"a\"\n[[nodes]]\nidentity = \"b\"\n[[faults]]\nat = \"20s\"\ntarget = \"random\"\nkind = \"crash\"\n[[faults]]\nat = \"30s\"\ntarget = \"non-holder\"\nkind = \"pause\"\nduration = \"5s\"\n"),
    )
    .unwrap();
    let o = leasesim(&["run", file.to_str().unwrap(), "-o", "json", "--out", tmp.path().join("o").to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A traced run routes every output of its electors through `process_outputs`, an untraced
/// one carries a request's outputs out as the elector asks for them (`world::Direct`): both
/// must be the same run. Every shipped scenario, at two seeds, with the trace on and off: the
/// same metrics, spans, windows, faults, actions and event count.
#[test]
fn traced_and_untraced_runs_of_every_shipped_scenario_are_the_same_run() {
    for (name, text) in sim_cli::shipped::SHIPPED {
        let loaded = sim_cli::scenario_file::load(name, text, &[]).unwrap();
        for seed in [1, 7] {
            let run = |trace| sim_cli::run::run_judged(&loaded, Some(seed), trace).unwrap().result;
            let (on, off) = (run(true), run(false));
            let what = format!("{name}, seed {seed}");
            assert_eq!(on.metrics, off.metrics, "{what}: metrics");
            assert_eq!(on.spans, off.spans, "{what}: spans");
            assert_eq!(on.dual_windows, off.dual_windows, "{what}: dual windows");
            assert_eq!(on.faults, off.faults, "{what}: faults");
            assert_eq!(on.actions, off.actions, "{what}: actions");
            assert_eq!(on.transitions_series, off.transitions_series, "{what}: transitions");
            assert_eq!(on.acting_series, off.acting_series, "{what}: acting");
            assert_eq!(on.events_processed, off.events_processed, "{what}: events");
            assert!(!on.trace.is_empty() && off.trace.is_empty(), "{what}: traced only when asked");
        }
    }
}

/// Issue 32: `leaderless_seconds` counts from the first leader on, so a Lease nobody ever led
/// read "0 s leaderless" like a healthy one. The run says which Leases were never elected,
/// when each Lease first had a leader, and an expectation can ask.
#[test]
fn a_lease_nobody_ever_led_is_reported_as_never_elected() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("never.toml");
    std::fs::write(
        &file,
        r#"name = "never"
description = "one Lease led, one whose only candidate is cut off from the start"
duration = "30s"
expect = ["leases_never_elected == 1", "leases.op/cut.elected == 0", "leases.op/ok.first_leader_seconds < 1"]
[lease]
namespace = "op"
name = "ok"
[[nodes]]
identity = "a"
[[nodes]]
identity = "b"
lease_name = "cut"
[[faults]]
at = "0s"
node = "b"
kind = "partition"
duration = "30s"
"#,
    )
    .unwrap();
    let o = leasesim(&["run", file.to_str().unwrap(), "--out", tmp.path().join("o").to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("never elected      1 Lease(s): op/cut"), "{text}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("o/summary.json")).unwrap()).unwrap();
    let cut = &summary["metrics"]["leases"]["op/cut"];
    assert_eq!((cut["elected"].as_bool(), cut["first_leader_seconds"].as_f64()), (Some(false), Some(30.0)), "{cut}");
}

/// `--check-determinism --trace off` compares what it has (metrics and event counts) and says
/// so, instead of claiming identical traces (issue 33).
#[test]
fn check_determinism_says_what_it_compared() {
    let tmp = tempfile::tempdir().unwrap();
    let off = leasesim(&[
        "run",
        "takeover",
        "--check-determinism",
        "--trace",
        "off",
        "--out",
        tmp.path().join("a").to_str().unwrap(),
    ]);
    let on = leasesim(&[
        "run",
        "takeover",
        "--check-determinism",
        "--trace",
        "on",
        "--out",
        tmp.path().join("b").to_str().unwrap(),
    ]);
    let (off, on) = (String::from_utf8_lossy(&off.stderr), String::from_utf8_lossy(&on.stderr));
    assert!(off.contains("identical metrics and event counts") && off.contains("the trace was off"), "{off}");
    assert!(on.contains("identical traces"), "{on}");
}

/// `validate` and `envelope` say what each of their arguments is (issue 33).
#[test]
fn validate_and_envelope_explain_their_arguments() {
    let v = leasesim(&["validate", "--help"]);
    let e = leasesim(&["envelope", "--help"]);
    let (v, e) = (String::from_utf8_lossy(&v.stdout), String::from_utf8_lossy(&e.stdout));
    assert!(v.contains("<SCENARIO>  A scenario file, a shipped scenario's name, or a sweep or hunt file"), "{v}");
    assert!(v.contains("Change one key before checking"), "{v}");
    for text in ["LeaseDuration, such as 15s", "RenewDeadline, such as 10s", "RetryPeriod, such as 2s"] {
        assert!(e.contains(text), "{e}");
    }
}

/// Every shipped scenario's expectations hold at any seed a user passes (issue 33): where a
/// lesson needs a particular schedule it is pinned in the file (fault times, jitter, the length
/// of a stall), not left to the seed. Seeds 1–20, trace off.
#[test]
fn every_shipped_scenario_holds_at_twenty_seeds() {
    let mut failures = Vec::new();
    for path in shipped() {
        let text = std::fs::read_to_string(&path).unwrap();
        let loaded = sim_cli::scenario_file::load(&path.to_string_lossy(), &text, &[]).unwrap();
        for seed in 1..=20 {
            let out = sim_cli::run::run(&loaded, Some(seed), false).unwrap();
            for e in out.expectations.iter().filter(|e| !e.passed) {
                failures.push(format!("{} --seed {seed}: {} ({})", path.display(), e.text, e.seen));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The work estimate knows the coordinated rewrite loop (issue 33): with the apiserver's clock
/// ahead it bounds the run's real count from above and prices it at the loop's cost, where it
/// used to say ~272 events for a run of 240,000.
#[test]
fn the_estimate_bounds_a_coordinated_run_with_the_apiserver_ahead() {
    let base = std::fs::read_to_string(repo().join("scenarios/sweeps/bases/coordinated-skew.toml")).unwrap();
    for (delta, loops) in [("0s", false), ("5s", true)] {
        let source = base.replace("delta = \"0s\"", &format!("delta = \"{delta}\""));
        let loaded = sim_cli::scenario_file::load("skew.toml", &source, &[]).unwrap();
        let (prepared, _) = sim_cli::run::prepare(&loaded, None, false, u64::MAX).unwrap();
        let estimate = prepared.estimate;
        let out = sim_cli::run::run(&loaded, None, false).unwrap();
        let real = out.result.events_processed;
        if loops {
            assert!(estimate.events >= real, "{delta}: estimate {} below the real {real}", estimate.events);
            assert!(real > 100_000 && estimate.events < 2 * real, "{delta}: {} vs {real}", estimate.events);
            assert!(estimate.seconds > 0.5, "{delta}: priced at the loop's cost: {}", estimate.seconds);
        } else {
            // Within the estimate's usual 1.5× (the candidates' own writes are not counted).
            assert!(
                real < 3 * estimate.events / 2 && estimate.events < 1_000,
                "{delta}: {} vs {real}",
                estimate.events
            );
        }
    }
}

/// Stepping over quiet stretches (`sim-core/src/world/quiet.rs`) moves no output byte: every
/// shipped scenario, untraced (stretches are taken only then), writes the same files with and
/// without `--no-skip`.
#[test]
fn quiet_stretches_move_no_output_byte() {
    let tmp = tempfile::tempdir().unwrap();
    for file in shipped() {
        let stem = file.file_stem().unwrap().to_str().unwrap().to_string();
        let (a, b) = (tmp.path().join(format!("{stem}-skip")), tmp.path().join(format!("{stem}-no-skip")));
        for (dir, extra) in [(&a, None), (&b, Some("--no-skip"))] {
            let mut args = vec!["run", file.to_str().unwrap(), "--trace", "off", "--out", dir.to_str().unwrap()];
            args.extend(extra);
            let o = leasesim(&args);
            assert!(o.status.success(), "{stem}: {}", String::from_utf8_lossy(&o.stderr));
        }
        let mut names: Vec<_> = std::fs::read_dir(&a).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert!(names.iter().any(|n| n == "summary.json"), "{stem}: no summary");
        for name in names {
            let (x, y) = (std::fs::read(a.join(&name)).unwrap(), std::fs::read(b.join(&name)).unwrap());
            assert!(x == y, "{stem}: {name:?} differs with --no-skip");
        }
    }
}

/// A sweep builds a grid point's world spec once and, for its other seeds, draws again only
/// what the seed draws (`Scenario::to_world_spec_from`): for every shipped scenario, as it is,
/// with every node's clock offset, drift and start drawn, and with a wander that a slow enough
/// drawn drift makes run backwards (an error some seeds meet and others do not), that spec, or
/// that error, is the one built afresh at each seed.
#[test]
fn a_spec_drawn_again_for_another_seed_is_the_one_built_afresh() {
    let drawn = [
        "defaults.clock.offset_seconds_dist={ uniform = [-2, 2] }",
        "defaults.clock.drift_ppm_dist={ normal = [0, 300000] }",
        "defaults.start_at={ uniform = [\"0s\", \"3s\"] }",
    ];
    let backwards = [
        "defaults.clock.wander={ amplitude = \"100ms\", period = \"1s\" }",
        "defaults.clock.drift_ppm_dist={ uniform = [-500000, 500000] }",
    ];
    let (mut compared, mut drawn_compared, mut errors) = (0, 0, 0);
    for file in shipped() {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.to_str().unwrap();
        for sets in [&[][..], &drawn[..], &backwards[..]] {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let Ok(loaded) = sim_cli::scenario_file::load(name, &text, &sets) else { continue };
            let mut scenario = loaded.scenario.clone();
            // The template is the first seed's spec that builds.
            let Some(template) = (1..=40).find_map(|seed| {
                scenario.seed = seed;
                scenario.to_world_spec(false).ok()
            }) else {
                continue;
            };
            for seed in 1..=40 {
                scenario.seed = seed;
                let fresh = scenario.to_world_spec(false);
                errors += usize::from(fresh.is_err());
                assert_eq!(scenario.to_world_spec_from(&template), fresh, "{name} {sets:?} seed {seed}");
                compared += 1;
                drawn_compared += usize::from(!sets.is_empty());
            }
        }
    }
    assert!(compared >= 1000 && drawn_compared >= 500, "{compared} compared, {drawn_compared} with draws");
    assert!(errors >= 20, "only {errors} seeds met the backwards wander");
}
