//! Plots and report pages for three kinds of run: each renders, is deterministic, and says what
//! a reader needs. Set `LEASESIM_PLOT_DIR=/some/dir` to keep the files for looking at.

use sim_cli::report::{
    ImageFormat, PlotMeta, ReportParts, index_html, node_metric_table, render_plot_files, report_html,
    subtitle_from_spec, summary_metric_rows, timeline_png, timeline_svg, transitions_png, transitions_svg,
};
use sim_core::clock::ClockStep;
use sim_core::elector::{AfterLost, Algorithm};
use sim_core::model::{FaultKind, FieldManager, ReconcileMode, Target, TimedFault, WorldSpec};
use sim_core::net::Cut;
use sim_core::time::{millis, secs};
use sim_core::world::{RunResult, World};

fn run(spec: WorldSpec) -> RunResult {
    World::new(spec).expect("valid spec").run()
}

fn steady() -> (RunResult, PlotMeta) {
    let mut spec = WorldSpec::basic(1, 3, Algorithm::ClientGo, secs(120));
    spec.trace = true;
    let meta = PlotMeta {
        scenario: "steady".into(),
        subtitle: "3 nodes · client-go · LD 15s · RD 10s · RP 2s".into(),
        unsafe_mode: false,
        leases: Vec::new(),
    };
    (run(spec), meta)
}

/// Renew deadline 30 s ≥ lease 15 s and a 20 s partition of the first leader: it keeps acting
/// while another node takes over, then the partition heals.
fn split_brain() -> (RunResult, PlotMeta) {
    let mut spec = WorldSpec::basic(1, 3, Algorithm::ClientGo, secs(120)).with_reconcilers(
        ReconcileMode::Apply { force: false },
        FieldManager::Identity,
        secs(1),
    );
    spec.unsafe_mode = true;
    spec.trace = true;
    for n in &mut spec.nodes {
        n.elector_mut().renew_deadline = secs(30);
        n.elector_mut().after_lost = AfterLost::Exit;
    }
    spec.faults.push(TimedFault {
        at: secs(30),
        target: Target::Node(0),
        kind: FaultKind::Partition { duration: secs(20), cut: Cut::Both, mode: sim_core::net::PartitionMode::Drop },
    });
    let meta = PlotMeta {
        scenario: "split-brain".into(),
        subtitle: "3 nodes · client-go · LD 15s · RD 30s · RP 2s · partition 20s".into(),
        unsafe_mode: true,
        leases: Vec::new(),
    };
    (run(spec), meta)
}

/// Clocks that differ (a constant offset, steps back and forth, drift), a paused leader, a
/// restart and a server outage.
fn clocks_and_pause() -> (RunResult, PlotMeta) {
    let mut spec = WorldSpec::basic(3, 3, Algorithm::ClientGo, secs(180));
    spec.trace = true;
    spec.nodes[1].clock_mut().offset_ns = 120_000_000_000;
    spec.nodes[2].clock_mut().drift_ppb = 50_000_000;
    spec.nodes[2].clock_mut().steps.push(ClockStep { at: secs(60), delta_ns: -90_000_000_000 });
    spec.nodes[2].clock_mut().steps.push(ClockStep { at: secs(120), delta_ns: 60_000_000_000 });
    spec.faults.push(TimedFault {
        at: secs(40),
        target: Target::Holder,
        kind: FaultKind::Pause { duration: secs(25) },
    });
    spec.faults.push(TimedFault {
        at: secs(100),
        target: Target::Holder,
        kind: FaultKind::Restart { delay: secs(10) },
    });
    spec.faults.push(TimedFault {
        at: secs(140),
        target: Target::Server,
        kind: FaultKind::ServerOutage { duration: millis(8_000), mode: sim_core::net::PartitionMode::Drop },
    });
    let meta = PlotMeta {
        scenario: "clocks-and-pause".into(),
        subtitle: "3 nodes · client-go · skew +120s · drift +50000 ppm · pause 25s".into(),
        unsafe_mode: false,
        leases: Vec::new(),
    };
    (run(spec), meta)
}

fn parts(r: &RunResult, meta: &PlotMeta) -> ReportParts {
    ReportParts {
        scenario: meta.scenario.clone(),
        description: format!("Test run: {}.", meta.subtitle),
        parameters: vec![
            ("nodes".into(), r.node_names.len().to_string()),
            ("duration".into(), format!("{} s", r.duration / 1_000_000_000)),
        ],
        metrics: summary_metric_rows(&r.metrics),
        node_table: node_metric_table(&r.metrics),
        lease_table: Vec::new(),
        expectations: vec![
            ("runs to the end".into(), true, "ok".into()),
            (
                "no dual-leader time".into(),
                r.metrics.dual_leader_seconds == 0.0,
                format!("{:.3} s", r.metrics.dual_leader_seconds),
            ),
        ],
        replay_command: format!("leasesim run scenarios/{}.toml --seed 1", meta.scenario),
        unsafe_mode: meta.unsafe_mode,
        timeline_svg: timeline_svg(r, meta).expect("timeline svg"),
        transitions_svg: transitions_svg(r, meta).expect("transitions svg"),
    }
}

/// Renders everything twice, checks the bytes match, and returns (timeline svg, report html).
fn render_all_twice(r: &RunResult, meta: &PlotMeta) -> (String, String) {
    let first = render_plot_files(r, meta, ImageFormat::Both).expect("render");
    let second = render_plot_files(r, meta, ImageFormat::Both).expect("render");
    assert_eq!(first.len(), 4);
    for (a, b) in first.iter().zip(&second) {
        assert!(!a.bytes.is_empty(), "{} is empty", a.file_name);
        assert!(a.bytes == b.bytes, "{} differs between two renders", a.file_name);
    }
    assert!(first[1].bytes.starts_with(b"\x89PNG"), "timeline.png is a PNG");
    assert_eq!(timeline_png(r, meta).unwrap(), first[1].bytes);
    assert_eq!(transitions_png(r, meta).unwrap(), first[3].bytes);
    let html = report_html(&parts(r, meta));
    assert_eq!(html, report_html(&parts(r, meta)));
    if let Some(dir) = std::env::var_os("LEASESIM_PLOT_DIR") {
        let dir = std::path::Path::new(&dir).join(&meta.scenario);
        std::fs::create_dir_all(&dir).unwrap();
        for f in &first {
            std::fs::write(dir.join(&f.file_name), &f.bytes).unwrap();
        }
        std::fs::write(dir.join("report.html"), &html).unwrap();
    }
    (String::from_utf8(first[0].bytes.clone()).unwrap(), html)
}

#[test]
fn a_steady_run_renders_deterministically_without_dual_windows() {
    let (r, meta) = steady();
    let (svg, html) = render_all_twice(&r, &meta);
    assert!(svg.contains("steady — timeline"));
    assert!(!svg.contains("UNSAFE"));
    assert!(html.contains("<svg") && !html.contains("<script") && !html.contains("http://fonts"));
    assert!(html.contains("leasesim run scenarios/steady.toml --seed 1"));
}

#[test]
fn a_split_brain_run_shades_and_labels_its_dual_leader_window() {
    let (r, meta) = split_brain();
    assert!(!r.dual_windows.is_empty(), "the scenario makes a dual-leader window");
    let (svg, html) = render_all_twice(&r, &meta);
    assert!(svg.contains("split-brain — timeline"));
    assert!(svg.contains("UNSAFE configuration (teaching mode)"));
    let seconds = r.dual_windows[0].seconds();
    // One rule for every window label: one decimal, a trailing ".0" dropped.
    let label = format!("{seconds:.1}");
    let label = format!("{} s", label.strip_suffix(".0").unwrap_or(&label));
    assert!(svg.contains(&format!("\n{label}\n</text>")), "dual window label {label:?}");
    assert!(html.contains("UNSAFE configuration (teaching mode)"));
    assert!(html.contains("FAIL"), "the no-dual-leader expectation fails here");
}

#[test]
fn a_run_with_clock_offsets_and_a_pause_shows_clock_strips_and_the_pause() {
    let (r, meta) = clocks_and_pause();
    assert!(r.clock_offsets.nodes().next().is_some());
    assert!(r.spans.iter().any(|s| s.kind == sim_core::world::SpanKind::Paused));
    let (svg, _) = render_all_twice(&r, &meta);
    assert!(svg.contains("clocks-and-pause — timeline"));
    assert!(svg.contains("clock +120 s"), "a constant offset is labelled with its value");
    assert!(svg.contains("pause "), "the pause fault is annotated");
}

/// Many faults close together, unsafe timings: labels must stack into lanes or be left out,
/// never drawn over each other.
fn crowded() -> (RunResult, PlotMeta) {
    let mut spec = WorldSpec::basic(7, 5, Algorithm::ClientGo, secs(240)).with_reconcilers(
        ReconcileMode::Apply { force: false },
        FieldManager::Identity,
        secs(1),
    );
    spec.unsafe_mode = true;
    spec.trace = true;
    for n in &mut spec.nodes {
        n.elector_mut().renew_deadline = secs(30);
    }
    spec.nodes[3].clock_mut().offset_ns = -30_000_000_000;
    for k in 0..24u64 {
        let kind = match k % 4 {
            0 => FaultKind::Partition { duration: secs(18), cut: Cut::Both, mode: sim_core::net::PartitionMode::Drop },
            1 => FaultKind::Pause { duration: secs(4) },
            2 => FaultKind::Restart { delay: secs(3) },
            _ => FaultKind::ClockStep { delta_ns: 20_000_000_000 },
        };
        spec.faults.push(TimedFault { at: secs(10 + 9 * k), target: Target::Node((k % 5) as usize), kind });
    }
    let meta = PlotMeta {
        scenario: "crowded".into(),
        subtitle: "5 nodes · 24 faults · RD 30s".into(),
        unsafe_mode: true,
        leases: Vec::new(),
    };
    (run(spec), meta)
}

#[test]
fn a_crowded_run_still_renders_deterministically() {
    let (r, meta) = crowded();
    let (svg, _) = render_all_twice(&r, &meta);
    assert!(svg.contains("crowded — timeline"));
}

#[test]
fn a_run_without_a_trace_says_its_markers_are_missing() {
    let r = run(WorldSpec::basic(2, 3, Algorithm::ClientGo, secs(60)));
    let meta =
        PlotMeta { scenario: "untraced".into(), subtitle: String::new(), unsafe_mode: false, leases: Vec::new() };
    let (svg, _) = render_all_twice(&r, &meta);
    assert!(svg.contains("Run without a trace"));
}

#[test]
fn a_long_title_moves_the_unsafe_banner_to_its_own_line() {
    let (r, mut meta) = split_brain();
    meta.scenario = "a-very-long-scenario-name-that-fills-most-of-the-title-line-on-its-own".into();
    meta.subtitle =
        "3 nodes · client-go · LD 15s · RD 30s · RP 2s · partition 20s · and a long tail of parameters".into();
    let (svg, _) = render_all_twice(&r, &meta);
    assert!(svg.contains("UNSAFE configuration (teaching mode)"));
}

#[test]
fn the_subtitle_names_the_key_parameters() {
    let mut spec = WorldSpec::basic(1, 3, Algorithm::ClientGo, secs(60));
    spec.nodes[1].clock_mut().offset_ns = 120_000_000_000;
    spec.nodes[2].elector_mut().renew_deadline = secs(30);
    assert_eq!(subtitle_from_spec(&spec), "3 nodes · client-go · LD 15s · RD 10s/30s · RP 2s · skew +2m0s");
}

#[test]
fn the_index_lists_runs_with_their_verdicts() {
    let html = index_html(&[
        ("steady".into(), "one leader, no faults".into(), "steady/report.html".into(), true),
        ("split <brain>".into(), "unsafe".into(), "split-brain/report.html".into(), false),
    ]);
    assert!(html.contains("href=\"steady/report.html\""));
    assert!(html.contains("split &lt;brain&gt;"));
    assert!(html.contains("1 with failed expectations"));
}

/// The instructor's demo, two Leases side by side (issue 12): every picture and table tells
/// the same story per Lease. Before: one transitions lane for the first Lease only (one ▲, the
/// unsafe takeover had none), a transitions plot of 1 against a summary of 2, no per-Lease rows.
#[test]
fn the_two_lease_demo_shows_each_lease_in_every_picture_and_table() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("rd");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
        .args(["run", "renew-deadline-vs-lease-duration", "--trace", "on", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let timeline = std::fs::read_to_string(out.join("timeline.svg")).unwrap();
    let transitions = std::fs::read_to_string(out.join("transitions.svg")).unwrap();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let trace = std::fs::read_to_string(out.join("trace.jsonl")).unwrap();

    // Group labels, and a ▲ per takeover: one in each Lease's lane, one in the legend.
    assert!(timeline.contains("Lease op-leader/safe-operator: RD 10s + RP 2s &lt; LD 15s — safe"), "{timeline}");
    assert!(timeline.contains("Lease op-leader/unsafe-operator: RD 25s &gt; LD 15s — unsafe"));
    let triangles = timeline.lines().filter(|l| l.starts_with("<polygon") && l.contains("#1F77B4")).count();
    assert_eq!(triangles, 3, "two transitions and the legend's ▲");
    // The transitions plot agrees with the summary: 1 + 1 = 2.
    assert!(transitions.contains("leaseTransitions at the end: safe-operator 1 · unsafe-operator 1"));
    assert!(stdout.contains("leaseTransitions   2 (sum over 2 Leases, each below)"), "{stdout}");
    assert!(stdout.contains("op-leader/unsafe-operator  RD 25s > LD 15s — unsafe"), "{stdout}");
    assert!(html.contains("<h2>Leases</h2>") && html.contains("RD 10s + RP 2s &lt; LD 15s — safe"));
    // Every Lease event names its Lease; the header maps nodes to Leases.
    assert!(trace.lines().next().unwrap().contains(r#""node_leases":["op-leader/safe-operator""#));
    assert!(trace.contains(r#""kind":"lease-changed","lease":"op-leader/unsafe-operator""#));
    assert!(trace.contains(r#""kind":"dual-leader-start","lease":"op-leader/unsafe-operator""#));
    // The new leaders' refused applies read as one band that says why, not dozens of alarms.
    assert!(timeline.contains("writes refused (409): field owned by safe-0"));
    assert!(timeline.contains("writes refused (409): field owned by unsafe-0"));
    // The legend lists only what occurs: nobody is paused here, no Lease write is refused.
    assert!(!timeline.contains("\npaused\n</text>"));
    assert!(!timeline.contains("\nLease 409\n</text>"));
    assert!(timeline.contains("\npartitioned\n</text>"));
}

#[test]
fn a_steady_runs_legend_lists_only_what_it_shows() {
    let (r, meta) = steady();
    let svg = timeline_svg(&r, &meta).unwrap();
    for absent in ["paused", "partitioned", "fault", "dual-leader window", "failed renewal", "wall clock − true time"]
    {
        assert!(!svg.contains(&format!("\n{absent}\n</text>")), "{absent} is in the legend of a run without it");
    }
    for present in ["candidate", "acting leader"] {
        assert!(svg.contains(&format!("\n{present}\n</text>")), "{present} is missing from the legend");
    }
}

/// Issue 12: report.html shows its plots with the smallest text at least 12 px at 100% zoom;
/// issue 33: at every window from 1024 px up the figure fits (it scales, it is never cut or
/// scrolled: a 1260-px minimum width cut the split-brain timeline at ~90 of 120 s at 1024 px).
#[test]
fn report_plots_fit_a_1024_px_window_with_text_at_12_px_or_more() {
    for (r, meta) in [split_brain(), clocks_and_pause()] {
        let html = report_html(&parts(&r, &meta));
        assert!(!html.contains("min-width: 1260px") && !html.contains("overflow-x: auto; }\nfigure svg"));
        assert!(html.contains("figure svg { display: block; width: 100%; max-width: 1200px;"), "figures scale to fit");
        // The figure's width at the narrowest window: the page's padding (36 px a side) and the
        // figure's border (1 px a side) off the window.
        let figure = sim_cli::report::MIN_PLOT_WIDTH_PX as f64 - 2.0 * 36.0 - 2.0;
        for svg in html.split("<svg").skip(1) {
            let width: f64 = svg.split("width=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
            let smallest = svg
                .split("font-size=\"")
                .skip(1)
                .map(|rest| rest.split('"').next().unwrap().parse::<f64>().unwrap())
                .fold(f64::INFINITY, f64::min);
            let on_screen = smallest * figure.min(width) / width;
            assert!(on_screen >= 12.0, "smallest text {smallest} in a {width} px plot shows at {on_screen:.1} px");
        }
    }
}

/// A fleet's plots draw six Leases, those with two leaders first, and say so; the rest are in
/// summary.json. (A run of thousands of Leases drew every one: a timeline tens of megabytes
/// tall and a key line per Lease on the transitions plot.)
#[test]
fn a_fleets_plots_draw_six_leases_those_with_two_leaders_first() {
    // 30 electors on 10 Leases, three each; the leader of the ninth Lease (node 24, the first
    // to start there) is cut off past its renew deadline with an unsafe one, so it keeps acting.
    let mut spec = WorldSpec::basic(1, 30, Algorithm::ClientGo, secs(90));
    spec.unsafe_mode = true;
    for (i, n) in spec.nodes.iter_mut().enumerate() {
        n.elector_mut().lease_name = format!("l{}", i / 3);
        if i / 3 == 8 {
            n.elector_mut().renew_deadline = secs(30);
        }
    }
    spec.faults.push(TimedFault {
        at: secs(30),
        target: Target::Node(24),
        kind: FaultKind::Partition { duration: secs(25), cut: Cut::Both, mode: sim_core::net::PartitionMode::Drop },
    });
    let leases = sim_cli::report::lease_groups_from_spec(&spec);
    let r = run(spec);
    assert_eq!(r.lease_transitions.len(), 10);
    assert!(r.dual_windows.iter().all(|w| w.lease.ends_with("/l8")) && !r.dual_windows.is_empty());
    let meta = PlotMeta { scenario: "fleet".into(), subtitle: String::new(), unsafe_mode: true, leases };
    let timeline = timeline_svg(&r, &meta).unwrap();
    let transitions = transitions_svg(&r, &meta).unwrap();
    let shown: Vec<usize> = (0..10).filter(|i| timeline.contains(&format!("/l{i}: RD"))).collect();
    assert_eq!(shown, [0, 1, 2, 3, 4, 8], "the Lease with two leaders, then the first five");
    assert!(timeline.contains("Showing 6 of 10 Leases (18 of 30 nodes), those with two leaders first"), "{timeline}");
    assert!(transitions.contains("(6 of 10 Leases, those with two leaders first)"));
    assert_eq!(transitions.matches("— unsafe)").count() + transitions.matches("— safe)").count(), 6, "six key lines");
    // Nodes of the Leases left out have no row.
    let row = |n: usize| format!("\nwidget-operator-{n}\n</text>");
    for n in [15, 18, 27, 29] {
        assert!(!timeline.contains(&row(n)), "node {n} has no row");
    }
    for n in [0, 14, 24, 26] {
        assert!(timeline.contains(&row(n)), "node {n} has its row");
    }
}

/// Issue 32: the per-Lease label used client-go's envelope for every library, so a fabric8
/// Lease with 6.7 s of overlap read "safe". Only loops with client-go's envelope get its
/// verdict; the others say there is no closed form.
#[test]
fn the_safe_label_is_client_gos_only_for_loops_it_describes() {
    let label = |algorithm| {
        let spec = WorldSpec::basic(1, 2, algorithm, secs(60));
        sim_cli::report::lease_groups_from_spec(&spec)[0].label.clone()
    };
    assert!(label(Algorithm::ClientGo).ends_with("— safe"), "{}", label(Algorithm::ClientGo));
    assert!(label(Algorithm::ControllerRuntime).ends_with("— safe"));
    for algorithm in [Algorithm::Fabric8, Algorithm::PythonClient, Algorithm::CSharpClient, Algorithm::KubeLeaseManager]
    {
        let l = label(algorithm);
        assert!(!l.contains("safe") && l.contains("no closed form"), "{l}");
    }
}

/// A Lease with hundreds of candidates is drawn with the nodes that mattered (the leaders, the
/// faulted) and the first others, 24 rows at most, and says how many it left out (issue 33:
/// 5,000 candidates made a 370,000-px plot).
#[test]
fn a_lease_with_hundreds_of_candidates_draws_at_most_24_rows() {
    let mut lines = vec!["name = \"many\"\ndescription = \"many\"\nduration = \"60s\"".to_string()];
    for i in 0..400 {
        lines.push(format!("[[nodes]]\nidentity = \"n-{i}\"\nstart_at = \"{}ms\"", i * 10));
    }
    lines.push("[[faults]]\nat = \"20s\"\ntarget = \"holder\"\nkind = \"crash\"".into());
    let loaded = sim_cli::scenario_file::load("many.toml", &lines.join("\n"), &[]).unwrap();
    let out = sim_cli::run::run(&loaded, None, false).unwrap();
    let svg = sim_cli::report::timeline_svg(&out.result, &sim_cli::report::PlotMeta::default()).unwrap();
    let height: u32 = svg.split("height=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
    assert!(height < 2_500, "{height} px tall");
    assert!(svg.contains("376 more nodes are not drawn"), "the note says how many are left out");
    let new_leader =
        out.result.spans.iter().find(|s| s.kind == sim_core::world::SpanKind::Leader && s.node != 0).unwrap();
    assert!(svg.contains(&format!("\n{}\n", out.result.node_names[new_leader.node])), "the new leader's row is drawn");
}
