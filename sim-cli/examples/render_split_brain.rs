//! Renders every output of the report module for an unsafe split-brain run, for looking at:
//! `cargo run -p sim-cli --example render_split_brain -- out/split-brain-render` (default: a new
//! temporary directory, printed on stdout).

use sim_cli::report::{
    ImageFormat, PlotMeta, ReportParts, index_html, node_metric_table, render_plot_files, report_html,
    summary_metric_rows, timeline_svg, transitions_svg,
};
use sim_core::elector::{AfterLost, Algorithm};
use sim_core::model::{FaultKind, FieldManager, ReconcileMode, Target, TimedFault, WorldSpec};
use sim_core::net::Cut;
use sim_core::time::secs;
use std::path::PathBuf;

fn main() -> Result<(), String> {
    let dir = match std::env::args_os().nth(1) {
        Some(dir) => PathBuf::from(dir),
        None => tempfile::Builder::new().prefix("leasesim-plots-").tempdir().map_err(|e| e.to_string())?.keep(),
    };
    // Renew deadline 30 s ≥ lease 15 s: the partitioned leader keeps acting while another node
    // takes over, until the partition heals and it finds out.
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
    let r = sim_core::world::World::new(spec).map_err(|e| e.to_string())?.run();
    let meta = PlotMeta {
        scenario: "split-brain".into(),
        subtitle: "3 nodes · client-go · LD 15s · RD 30s · RP 2s · partition 20s".into(),
        unsafe_mode: true,
        leases: Vec::new(),
    };
    let run_dir = dir.join("split-brain");
    std::fs::create_dir_all(&run_dir).map_err(|e| e.to_string())?;
    for file in render_plot_files(&r, &meta, ImageFormat::Both)? {
        std::fs::write(run_dir.join(&file.file_name), &file.bytes).map_err(|e| e.to_string())?;
    }
    let parts = ReportParts {
        scenario: meta.scenario.clone(),
        description: "A partitioned leader with an unsafe renew deadline keeps acting after another node takes over."
            .into(),
        parameters: vec![
            ("nodes".into(), "3".into()),
            ("leaseDuration / renewDeadline / retryPeriod".into(), "15 s / 30 s / 2 s".into()),
        ],
        metrics: summary_metric_rows(&r.metrics),
        node_table: node_metric_table(&r.metrics),
        lease_table: Vec::new(),
        expectations: vec![(
            "a dual-leader window appears".into(),
            r.metrics.dual_leader_windows > 0,
            format!("{} window(s)", r.metrics.dual_leader_windows),
        )],
        replay_command: "cargo run -p sim-cli --example render_split_brain".into(),
        unsafe_mode: true,
        timeline_svg: timeline_svg(&r, &meta)?,
        transitions_svg: transitions_svg(&r, &meta)?,
    };
    std::fs::write(run_dir.join("report.html"), report_html(&parts)).map_err(|e| e.to_string())?;
    let all_passed = parts.expectations.iter().all(|e| e.1);
    let index = index_html(&[(meta.scenario, parts.description, "split-brain/report.html".into(), all_passed)]);
    std::fs::write(dir.join("index.html"), index).map_err(|e| e.to_string())?;
    println!("{}", dir.display());
    Ok(())
}
