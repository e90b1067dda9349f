//! `leasesim sweep`, `merge` and `envelope`, end to end on tiny grids (a few seeds of short
//! shipped scenarios). The full shipped sweeps run behind `--ignored`.

use sim_cli::sweep::{RunOptions, Shard, SweepArgs, SweepSpec, merge, run_sweep};
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Candidate clock drift across client-go's tolerance (1.25×) with the leader partitioned.
fn drift_spec(drifts: &str, seeds: &str) -> SweepSpec {
    let args = SweepArgs {
        scenario: Some(workspace().join("scenarios/clock-rate-skew-above.toml")),
        grid: vec![format!("nodes.widget-operator-1.clock.drift_ppm={drifts}")],
        seeds: Some(seeds.into()),
        ..Default::default()
    };
    SweepSpec::from_args(&args).expect("valid sweep")
}

fn opts(out: &Path, jobs: usize) -> RunOptions {
    RunOptions {
        out: out.to_path_buf(),
        jobs,
        shard: None,
        resume: false,
        quiet: true,
        max_runs: None,
        max_events: sim_cli::run::DEFAULT_MAX_EVENTS,
        resume_command: None,
    }
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{}/{name}: {e}", dir.display()))
}

const OUTPUTS: [&str; 5] = ["runs.csv", "aggregate.csv", "sweep.json", "dual_probability.svg", "dual_seconds.svg"];

fn assert_same_outputs(a: &Path, b: &Path) {
    for name in OUTPUTS {
        assert!(read(a, name) == read(b, name), "{name} differs between {} and {}", a.display(), b.display());
    }
}

#[test]
fn outputs_do_not_depend_on_the_number_of_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = drift_spec("150000,1000000", "1..=4");
    let one = tmp.path().join("one");
    let two = tmp.path().join("two");
    run_sweep(&spec, &opts(&one, 1)).unwrap();
    run_sweep(&spec, &opts(&two, 2)).unwrap();
    assert_same_outputs(&one, &two);
    let runs = String::from_utf8(read(&one, "runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 1 + 8);
    let first = runs.lines().nth(1).unwrap();
    assert!(first.starts_with("0,0,150000,1,"), "{first}");
    assert!(
        first.ends_with("--seed 1 --set nodes.widget-operator-1.clock.drift_ppm=150000"),
        "the replay command ends the row: {first}"
    );
    let aggregate = String::from_utf8(read(&one, "aggregate.csv")).unwrap();
    assert_eq!(aggregate.lines().count(), 1 + 2);
}

#[test]
fn a_resumed_sweep_equals_an_uninterrupted_one() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = drift_spec("100000,500000,1000000", "1..=3");
    let whole = tmp.path().join("whole");
    run_sweep(&spec, &opts(&whole, 2)).unwrap();

    let resumed = tmp.path().join("resumed");
    let first = run_sweep(&spec, &RunOptions { max_runs: Some(4), ..opts(&resumed, 2) }).unwrap();
    assert_eq!((first.ran, first.done, first.total), (4, 4, 9));
    assert!(!resumed.join("aggregate.csv").exists());
    // The interruption cut a row in half.
    let runs = resumed.join("runs.csv");
    let mut text = std::fs::read_to_string(&runs).unwrap();
    text.push_str("4,1,500000,2,0.5,1");
    std::fs::write(&runs, text).unwrap();
    // Without --resume the directory is refused and left alone.
    let refused = run_sweep(&spec, &opts(&resumed, 2)).unwrap_err();
    assert!(refused.message.contains("--resume"), "{refused}");
    let second = run_sweep(&spec, &RunOptions { resume: true, ..opts(&resumed, 1) }).unwrap();
    assert_eq!((second.ran, second.done), (5, 9));
    assert_same_outputs(&whole, &resumed);
}

#[test]
fn three_merged_shards_equal_one_machine() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = drift_spec("150000,500000", "1..=4");
    let whole = tmp.path().join("whole");
    run_sweep(&spec, &opts(&whole, 2)).unwrap();
    let shard_dirs: Vec<PathBuf> = (0..3).map(|i| tmp.path().join(format!("shard-{i}"))).collect();
    for (i, dir) in shard_dirs.iter().enumerate() {
        let shard = Some(Shard::new(i, 3).unwrap());
        run_sweep(&spec, &RunOptions { shard, ..opts(dir, 1) }).unwrap();
        assert!(!dir.join("aggregate.csv").exists(), "a shard cannot aggregate on its own");
    }
    let merged = tmp.path().join("merged");
    // Shards may be named in any order.
    merge(&[shard_dirs[2].clone(), shard_dirs[0].clone(), shard_dirs[1].clone()], &merged).unwrap();
    assert_same_outputs(&whole, &merged);

    // Refusals: a missing shard, a duplicated one, a shard of another sweep, a used --out.
    let e = merge(&shard_dirs[..2], &tmp.path().join("m1")).unwrap_err();
    assert!(e.message.contains("missing shard(s) 2 of 3"), "{e}");
    let e = merge(&[shard_dirs[0].clone(), shard_dirs[0].clone(), shard_dirs[1].clone()], &tmp.path().join("m2"))
        .unwrap_err();
    assert!(e.message.contains("given twice"), "{e}");
    let other = tmp.path().join("other");
    let other_spec = drift_spec("150000,500000", "1..=5");
    run_sweep(&other_spec, &RunOptions { shard: Some(Shard::new(2, 3).unwrap()), ..opts(&other, 1) }).unwrap();
    let e = merge(&[shard_dirs[0].clone(), shard_dirs[1].clone(), other], &tmp.path().join("m3")).unwrap_err();
    assert!(e.message.contains("different sweeps"), "{e}");
    let e = merge(&shard_dirs, &merged).unwrap_err();
    assert!(e.message.contains("not empty"), "{e}");
    for name in ["m1", "m2", "m3"] {
        assert!(!tmp.path().join(name).exists(), "a refused merge leaves nothing behind");
    }
}

#[test]
fn an_unfinished_shard_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = drift_spec("150000", "1..=4");
    let dirs: Vec<PathBuf> = (0..2).map(|i| tmp.path().join(format!("s{i}"))).collect();
    run_sweep(&spec, &RunOptions { shard: Some(Shard::new(0, 2).unwrap()), ..opts(&dirs[0], 1) }).unwrap();
    let partial = RunOptions { shard: Some(Shard::new(1, 2).unwrap()), max_runs: Some(1), ..opts(&dirs[1], 1) };
    run_sweep(&spec, &partial).unwrap();
    let e = merge(&dirs, &tmp.path().join("m")).unwrap_err();
    assert!(e.message.contains("unfinished"), "{e}");
}

/// A finished shard whose runs.csv was cut short afterwards (its last row has no newline) is
/// refused: merged, the short row would skew aggregate.csv. (Found by probing for data loss.)
#[test]
fn a_shard_with_a_cut_off_last_row_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = drift_spec("150000", "1..=4");
    let dirs: Vec<PathBuf> = (0..2).map(|i| tmp.path().join(format!("s{i}"))).collect();
    for (i, dir) in dirs.iter().enumerate() {
        run_sweep(&spec, &RunOptions { shard: Some(Shard::new(i, 2).unwrap()), ..opts(dir, 1) }).unwrap();
    }
    let rows = dirs[1].join("runs.csv");
    let text = std::fs::read(&rows).unwrap();
    std::fs::write(&rows, &text[..text.len() - 20]).unwrap();
    let e = merge(&dirs, &tmp.path().join("m")).unwrap_err();
    assert!(e.message.contains("last row is cut off"), "{e}");
    assert!(!tmp.path().join("m").exists());
}

/// A sweep stopped while it wrote sweep.json or shard.json (each goes through a `.partial`
/// beside it) has run nothing: the folder starts afresh, sharded or not, with or without
/// --resume, instead of refusing both. (Found by probing for data loss.)
#[test]
fn a_sweep_stopped_before_its_first_row_starts_again_in_the_same_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = drift_spec("150000", "1..=2");
    let whole = tmp.path().join("whole");
    run_sweep(&spec, &opts(&whole, 1)).unwrap();
    let sweep_json = read(&whole, "sweep.json");
    // Unsharded, stopped before sweep.json was renamed into place.
    let a = tmp.path().join("a");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::write(a.join(".leasesim-sweep.lock"), "").unwrap();
    std::fs::write(a.join("sweep.partial"), &sweep_json).unwrap();
    run_sweep(&spec, &RunOptions { resume: true, ..opts(&a, 1) }).unwrap();
    assert_same_outputs(&whole, &a);
    assert!(!a.join("sweep.partial").exists(), "the stale partial is written over and renamed");
    // Sharded, stopped before shard.json was renamed into place: --resume and a new start
    // both go on.
    for resume in [true, false] {
        let b = tmp.path().join(format!("b-{resume}"));
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join(".leasesim-sweep.lock"), "").unwrap();
        std::fs::write(b.join("sweep.json"), &sweep_json).unwrap();
        std::fs::write(b.join("shard.partial"), "{").unwrap();
        let shard = Some(Shard::new(0, 2).unwrap());
        run_sweep(&spec, &RunOptions { shard, resume, ..opts(&b, 1) }).unwrap();
        assert!(String::from_utf8(read(&b, "shard.json")).unwrap().contains("\"complete\": true"));
    }
    // A user's own sweep.json (not a sweep's) is not taken for one: refused, left as it was.
    let c = tmp.path().join("c");
    std::fs::create_dir_all(&c).unwrap();
    std::fs::write(c.join("sweep.json"), "{\"mine\": true}").unwrap();
    let e = run_sweep(&spec, &opts(&c, 1)).unwrap_err();
    assert!(e.message.contains("holds another sweep"), "{e}");
    assert_eq!(read(&c, "sweep.json"), b"{\"mine\": true}");
}

/// The safety envelope predicts the sweep: 1.10× and 1.15× are inside client-go's tolerance
/// LD/(RD+RP) = 1.25 (never dual), 1.5× and 2× outside (dual in most runs).
#[test]
fn the_envelope_boundary_separates_safe_and_dual_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    let spec = drift_spec("100000,150000,500000,1000000", "1..=10");
    run_sweep(&spec, &opts(&out, 2)).unwrap();
    let summaries = sim_cli::sweep::finish(&out).unwrap();
    let dual: Vec<usize> = summaries.iter().map(|s| s.dual_runs).collect();
    assert_eq!(&dual[..2], &[0, 0], "inside the envelope: {dual:?}");
    // 1.5× leaves a 2 s margin (LD/r = 10 s < RP + RD = 12 s), which the candidate's polling
    // lag eats in some runs; 2× leaves 4.5 s.
    assert!(dual[2] > 5 && dual[3] >= 9, "outside: most runs dual, got {dual:?}");
    let sweep = String::from_utf8(read(&out, "sweep.json")).unwrap();
    assert!(sweep.contains("\"boundaries\": ["), "the drift axis gets the envelope boundary: {sweep}");
    let svg = String::from_utf8(read(&out, "dual_probability.svg")).unwrap();
    assert!(svg.contains("envelope: rate 1.250× = LD/(RD+RP)"), "the plot draws and labels the boundary");
    // Drift reads as a rate ratio beside the ppm value.
    for (ppm, ratio) in [("100000", "1.1×"), ("500000", "1.5×"), ("1000000", "2×")] {
        assert!(text_x(&svg, ppm).is_some() && text_x(&svg, ratio).is_some(), "{ppm} with {ratio}");
    }
}

#[test]
fn two_axes_get_lines_per_value_and_a_heatmap() {
    let tmp = tempfile::tempdir().unwrap();
    let args = SweepArgs {
        scenario: Some(workspace().join("scenarios/clock-rate-skew-above.toml")),
        grid: vec!["defaults.renew_deadline=8s,10s".into(), "nodes.widget-operator-1.clock.drift_ppm=0,1000000".into()],
        seeds: Some("1..3".into()),
        ..Default::default()
    };
    let spec = SweepSpec::from_args(&args).unwrap();
    assert_eq!((spec.point_count(), spec.run_count()), (4, 8));
    let out = tmp.path().join("o");
    run_sweep(&spec, &opts(&out, 2)).unwrap();
    let aggregate = String::from_utf8(read(&out, "aggregate.csv")).unwrap();
    let points: Vec<&str> = aggregate.lines().skip(1).map(|l| l.splitn(4, ',').take(3).last().unwrap()).collect();
    assert_eq!(points, ["0", "1000000", "0", "1000000"], "the last axis varies fastest");
    let heatmap = String::from_utf8(read(&out, "dual_probability_heatmap.svg")).unwrap();
    assert!(heatmap.contains("2/2") && heatmap.contains("0/2"), "cells say k/n");
    let lines = String::from_utf8(read(&out, "dual_probability.svg")).unwrap();
    assert!(
        lines.contains("\ndrift_ppm:\n") && text_x(&lines, "0").is_some() && text_x(&lines, "1000000").is_some(),
        "one line per value of the other axis, under a heading naming it"
    );
}

/// Issue 33: over a categorical axis (library names) no line joins the categories, every
/// category is labelled, each of the 13 series has a style of its own and sits beside the
/// others, the legend names the keys (a zipped pair by both), and coinciding series say so.
#[test]
fn a_categorical_sweep_draws_apart_what_lines_would_join() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("matrix");
    let args = SweepArgs {
        file: Some(workspace().join("scenarios/sweeps/mixed-fleet-matrix.toml")),
        seeds: Some("1".into()),
        ..Default::default()
    };
    run_sweep(&SweepSpec::from_args(&args).unwrap(), &opts(&out, 2)).unwrap();
    let svg = String::from_utf8(read(&out, "dual_seconds.svg")).unwrap();
    // Plotters draws every line as a <polyline>: here only the two-point interval bars and
    // their caps, and the axes.
    for line in svg.split("<polyline").skip(1) {
        let points = line.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
        assert!(points.split_whitespace().count() <= 2, "a line joins categories: {points}");
    }
    let libraries = ["client-go", "controller-runtime", "kube-leader-election", "csharp-client-pre-2026", "renew-time"];
    for library in libraries {
        // Whole, or wrapped at hyphens into texts one after another.
        let texts: Vec<&str> = svg.split("\n</text>").map(|t| t.rsplit('\n').next().unwrap()).collect();
        let found = (0..texts.len()).any(|i| (i + 1..=texts.len()).any(|j| texts[i..j].concat() == library));
        assert!(found, "{library}: no tick label");
    }
    assert!(svg.contains("\nnodes.leader.algorithm\n</text>"), "the x axis is named");
    assert!(svg.contains("\nfollower-1.algorithm &amp; follower-2.algorithm:\n</text>"), "the legend names the keys");
    assert!(svg.contains("(identical to "), "series that coincide say so");
    let heatmap = String::from_utf8(read(&out, "dual_probability_heatmap.svg")).unwrap();
    assert!(
        heatmap.contains("nodes.follower-1.algorithm &amp; nodes.follower-2.algorithm"),
        "a zipped axis names all its keys"
    );
}

fn leasesim(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_leasesim")).args(args).current_dir(workspace()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn bad_input_exits_2_with_a_clear_message_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    let o = out.to_str().unwrap();
    let base = ["sweep", "--scenario", "clock-rate-skew-above", "--quiet", "--out", o];
    let cases: [(&[&str], &str); 5] = [
        (&["--grid", "defaults.renew_dedline=8s,10s", "--seeds", "1..3"], "did you mean \"renew_deadline\""),
        (&["--grid", "defaults.renew_deadline=8s", "--seeds", "5..2"], "below the start"),
        (&["--grid", "defaults.renew_deadline=8s", "--seeds", "3..3"], "empty"),
        (&["--grid", "defaults.renew_deadline=8s", "--seeds", "1..3", "--shard", "3/3"], "below the count"),
        (
            &["--grid", "defaults.renew_deadline=8s,nonsense", "--seeds", "1..3"],
            "grid point 1 (defaults.renew_deadline=nonsense)",
        ),
    ];
    for (extra, expected) in cases {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let (code, text) = leasesim(&args);
        assert_eq!(code, 2, "{args:?}: {text}");
        assert!(text.contains(expected), "{args:?}: expected {expected:?} in {text}");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
    // A directory holding another sweep is refused, even with --resume, and left as it was.
    let ok: Vec<&str> =
        base.iter().chain(&["--grid", "defaults.renew_deadline=8s", "--seeds", "1..3"]).copied().collect();
    assert_eq!(leasesim(&ok).0, 0);
    let before = read(&out, "runs.csv");
    for resume in [false, true] {
        let mut other: Vec<&str> =
            base.iter().chain(&["--grid", "defaults.renew_deadline=9s", "--seeds", "1..3"]).copied().collect();
        if resume {
            other.push("--resume");
        }
        let (code, text) = leasesim(&other);
        assert_eq!(code, 2, "{text}");
        assert!(text.contains("holds another sweep"), "{text}");
    }
    assert_eq!(read(&out, "runs.csv"), before);
    // A sweep file with an empty range points at the line.
    let file = tmp.path().join("bad.toml");
    let text =
        "scenario = \"x.toml\"\nseeds = \"1..3\"\n[grid]\n\"defaults.retry_period\" = { from = 5, to = 1, step = 1 }\n";
    std::fs::write(&file, text).unwrap();
    let (code, text) = leasesim(&["sweep", file.to_str().unwrap(), "--out", o]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("is empty") && text.contains("bad.toml:4:"), "{text}");
}

#[test]
fn envelope_prints_the_bounds_and_judges_the_configuration() {
    let config = ["envelope", "--lease-duration", "15s", "--renew-deadline", "10s", "--retry-period", "2s"];
    let (code, text) = leasesim(&config);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("r* = LD / (RD + RP + latency) = 1.2500"), "{text}");
    let with = |extra: &[&'static str]| leasesim(&config.iter().chain(extra).copied().collect::<Vec<_>>());
    let (code, text) = with(&["--rate-ratio", "1.5"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("OUTSIDE"), "{text}");
    let (code, text) = with(&["--pause", "4s"]);
    assert_eq!(code, 1, "a 4 s pause while renewals fail outlasts LD − (RD + RP) = 3 s: {text}");
}

#[test]
fn the_shipped_sweeps_are_valid() {
    let dir = workspace().join("scenarios/sweeps");
    // Sweep files only: bases/ holds the scenarios some of them sweep.
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    files.sort();
    assert!(files.len() >= 3);
    for file in files {
        let spec = SweepSpec::from_args(&SweepArgs { file: Some(file.clone()), ..Default::default() })
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        spec.validate().unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
}

/// Every shipped sweep, in full (`cargo test -p sim-cli --test sweep -- --ignored`).
#[test]
#[ignore]
fn the_shipped_sweeps_run_in_full() {
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "clock-rate-tolerance",
        "offset-skew-by-rule",
        "renew-deadline-vs-lease-duration",
        "valid-but-unsafe",
        "mixed-fleet-matrix",
        "mixed-fleet-versions",
    ] {
        let file = workspace().join(format!("scenarios/sweeps/{name}.toml"));
        let spec = SweepSpec::from_args(&SweepArgs { file: Some(file), ..Default::default() }).unwrap();
        let outcome = run_sweep(&spec, &opts(&tmp.path().join(name), 2)).unwrap();
        assert!(outcome.complete());
    }
}

/// The x of the SVG text element whose content is exactly `text`.
fn text_x(svg: &str, text: &str) -> Option<f64> {
    let needle = format!("\n{text}\n</text>");
    let end = svg.find(&needle)?;
    let start = svg[..end].rfind("<text")?;
    let tag = &svg[start..end];
    let x = tag.split("x=\"").nth(1)?.split('"').next()?;
    x.parse().ok()
}

/// Issue 12: a numeric axis is spaced by value (−60, −20, 0, 10, 20, 60 s were equidistant:
/// negative offsets did not parse as numbers), and an axis drawn for two lease durations gets
/// one envelope per line, named for its line.
#[test]
fn sweep_plots_space_values_by_value_and_draw_an_envelope_per_line() {
    let tmp = tempfile::tempdir().unwrap();
    let args = SweepArgs {
        scenario: Some(workspace().join("scenarios/renew.toml")),
        grid: vec!["nodes.widget-operator-1.clock.offset=-60s,-20s,0s,10s,20s,60s".into()],
        seeds: Some("1..2".into()),
        set: vec!["duration=30s".into()],
        ..Default::default()
    };
    let out = tmp.path().join("offset");
    run_sweep(&SweepSpec::from_args(&args).unwrap(), &opts(&out, 1)).unwrap();
    sim_cli::sweep::finish(&out).unwrap();
    let svg = String::from_utf8(read(&out, "dual_seconds.svg")).unwrap();
    let x: Vec<f64> = ["-60", "-20", "0", "10", "20", "60"].iter().map(|t| text_x(&svg, t).expect(t)).collect();
    let per_second = (x[5] - x[0]) / 120.0;
    for (value, px) in [-60.0, -20.0, 0.0, 10.0, 20.0, 60.0].iter().zip(&x) {
        assert!((x[0] + (value + 60.0) * per_second - px).abs() <= 1.5, "{value} s at {px}, ticks {x:?}");
    }

    let args = SweepArgs {
        scenario: Some(workspace().join("scenarios/split-brain.toml")),
        grid: vec!["defaults.lease_duration=15s,20s".into(), "defaults.renew_deadline=10s,20s".into()],
        seeds: Some("1..2".into()),
        set: vec!["duration=1m".into()],
        ..Default::default()
    };
    let mut spec = SweepSpec::from_args(&args).unwrap();
    spec.plot_x = Some("defaults.renew_deadline".into());
    let out = tmp.path().join("rd");
    run_sweep(&spec, &opts(&out, 1)).unwrap();
    sim_cli::sweep::finish(&out).unwrap();
    let svg = String::from_utf8(read(&out, "dual_seconds.svg")).unwrap();
    assert!(svg.contains("envelope: RD = LD − RP = 13s (for lease_duration=15s)"), "{svg}");
    assert!(svg.contains("envelope: RD = LD − RP = 18s (for lease_duration=20s)"));
}

/// A sweep begun with a relative scenario path resumes from another working directory given
/// the same scenario by its absolute path: the same file is the same sweep. (Before, the
/// relative spelling could not be resolved there, the sweep_id differed and the sweep was
/// refused as "another sweep".)
#[test]
fn a_sweep_resumes_from_another_working_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let (whole, resumed) = (tmp.path().join("whole"), tmp.path().join("resumed"));
    let args = |out: &Path, scenario: &str| -> Vec<String> {
        ["sweep", "--scenario", scenario, "--grid", "nodes.widget-operator-1.clock.drift_ppm=0,300000"]
            .iter()
            .map(|s| s.to_string())
            .chain(["--seeds", "1..4", "--quiet", "--out", out.to_str().unwrap()].map(String::from))
            .collect()
    };
    let relative = "scenarios/clock-rate-skew-above.toml";
    let absolute = workspace().join(relative);
    let run = |dir: &Path, args: Vec<String>| {
        let out = Command::new(env!("CARGO_BIN_EXE_leasesim")).args(&args).current_dir(dir).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    run(&workspace(), args(&whole, relative));
    let mut first = args(&resumed, relative);
    first.extend(["--max-runs".to_string(), "2".to_string()]);
    run(&workspace(), first);
    assert!(!resumed.join("aggregate.csv").exists(), "stopped after two runs");
    let mut again = args(&resumed, absolute.to_str().unwrap());
    again.push("--resume".to_string());
    run(tmp.path(), again);
    for file in ["runs.csv", "aggregate.csv", "sweep.json"] {
        assert_eq!(read(&whole, file), read(&resumed, file), "{file}");
    }
}

/// A key both set and swept, or one `--grid` given twice, would silently overwrite the other in
/// every run: refused, exit 2, nothing written (issue 33).
#[test]
fn a_key_both_set_and_swept_or_swept_twice_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    let base = ["sweep", "--scenario", "split-brain", "--seeds", "1..=2", "--out", out.to_str().unwrap()];
    let twice =
        [&base[..], &["--grid", "defaults.renew_deadline=10s,20s", "--grid", "defaults.renew_deadline=30s"]].concat();
    let (code, text) = leasesim(&twice);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("is given twice"), "{text}");
    let both = [&base[..], &["--grid", "defaults.renew_deadline=10s,20s", "--set", "defaults.renew_deadline=\"12s\""]]
        .concat();
    let (code, text) = leasesim(&both);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("is both set") && text.contains("grid axis"), "{text}");
    assert!(!out.exists());
}

/// A path in a sweep file's `set` is taken from the sweep file's folder, as its `scenario` is
/// (issue 33: it was taken from the working directory, and the error blamed --from-cluster).
#[test]
fn a_sweep_files_from_cluster_is_found_beside_it_from_any_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let sub = tmp.path().join("sub");
    let other = tmp.path().join("other");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let dump = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: coordination.k8s.io/v1\n  kind: Lease\n  metadata:\n    \
                name: leasesim\n    namespace: default\n  spec:\n    holderIdentity: x\n    leaseDurationSeconds: 15\n    \
                renewTime: \"2026-01-01T00:00:00.000000Z\"\n    acquireTime: \"2026-01-01T00:00:00.000000Z\"\n    \
                leaseTransitions: 3\n";
    std::fs::write(sub.join("dump.yaml"), dump).unwrap();
    std::fs::write(
        sub.join("s.toml"),
        "name = \"fc\"\ndescription = \"t\"\nduration = \"30s\"\n[[nodes]]\nidentity = \"a\"\n",
    )
    .unwrap();
    std::fs::write(
        sub.join("sw.toml"),
        "scenario = \"s.toml\"\nseeds = \"1..=2\"\nset = [\"from_cluster=dump.yaml\"]\n[grid]\n\"defaults.renew_deadline\" = [\"8s\", \"10s\"]\n",
    )
    .unwrap();
    for (dir, file) in [(&other, "../sub/sw.toml"), (&sub, "sw.toml")] {
        let o =
            Command::new(env!("CARGO_BIN_EXE_leasesim")).args(["validate", file]).current_dir(dir).output().unwrap();
        assert!(o.status.success(), "from {}: {}", dir.display(), String::from_utf8_lossy(&o.stderr));
    }
    std::fs::remove_file(sub.join("dump.yaml")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .args(["validate", "../sub/sw.toml"])
        .current_dir(&other)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("sub/dump.yaml") && !err.contains(": --from-cluster:"), "{err}");
}

/// A zip group whose values agree at some points only: no legend heading (it would name the
/// keys of the first series alone); each series names its own keys.
#[test]
fn series_with_different_keys_name_their_own() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("zt.toml");
    std::fs::write(
        &file,
        format!(
            "scenario = \"{}\"\nseeds = \"1..=2\"\nplot_x = \"defaults.renew_deadline\"\n[grid]\n\"defaults.renew_deadline\" = [\"8s\", \"10s\"]\n\
             [[zip]]\n\"nodes.widget-operator-1.algorithm\" = [\"client-go\", \"fabric8\"]\n\"nodes.widget-operator-2.algorithm\" = [\"client-go\", \"renew-time\"]\n",
            workspace().join("scenarios/renew.toml").display()
        ),
    )
    .unwrap();
    let out = tmp.path().join("o");
    let spec = SweepSpec::from_args(&SweepArgs { file: Some(file), ..Default::default() }).unwrap();
    run_sweep(&spec, &opts(&out, 1)).unwrap();
    let svg = String::from_utf8(read(&out, "dual_probability.svg")).unwrap();
    assert!(!svg.contains("algorithm:\n</text>"), "a heading naming one series' keys");
    assert!(svg.contains("\nwidget-operator-1.algorithm &amp; widget-operator-2.algorithm=client-go"), "{svg}");
    assert!(svg.contains("\nwidget-operator-1.algorithm=fabric8, widget-operator-2.algorithm=renew-time"), "{svg}");
}
