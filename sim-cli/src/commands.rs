//! The subcommands' bodies (flags in `main.rs`, or beside their body: `RunFlags` here,
//! `hunt::HuntFlags`, `sweep::SweepFlags`): each reads its input, does the work through the
//! library, prints, and answers an exit code or a [`CliError`].

use crate::error::CliError;
use crate::format::{first_sentence, group_digits, human_bytes, slug};
use crate::lease_tools::{self, AuditOptions};
use crate::outputs;
use crate::run;
use crate::scenario_file;
use crate::shipped::load_named;
use clap::ValueEnum;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum TraceMode {
    Auto,
    On,
    Off,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum OutputFormat {
    Table,
    Json,
}

#[derive(clap::Args)]
pub struct RunFlags {
    /// A scenario file, or the name of a shipped scenario (`leasesim list`).
    pub scenario: String,
    /// Seed of the run (default: the file's `seed`).
    #[arg(long, env = "LEASESIM_SEED")]
    pub seed: Option<u64>,
    /// Output directory (default: out/<scenario>-seed<N>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override a value of the file: `--set defaults.renew_deadline=20s`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// What to print on stdout.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: OutputFormat,
    /// Run twice in this process and report the first event where the runs differ.
    #[arg(long)]
    pub check_determinism: bool,
    /// Start from a real cluster's Leases (`kubectl get lease -A -o yaml > leases.yaml`):
    /// they exist before the run and time 0 is their latest renewTime.
    #[arg(long, value_name = "LEASES.yaml")]
    pub from_cluster: Option<String>,
    /// Keep the event trace (trace.jsonl, markers in plots): `auto` turns it off for runs
    /// expected to exceed about 3 million events, to keep memory bounded.
    #[arg(long, value_enum, default_value = "auto")]
    pub trace: TraceMode,
    /// Plot format: svg, png or both.
    #[arg(long, default_value = "svg", value_parser = crate::report::ImageFormat::parse)]
    pub format: crate::report::ImageFormat,
    /// The most events the run may handle: a run expected to exceed it is refused before it
    /// starts, one that reaches it stops (exit 2). The message gives the figure to pass instead.
    #[arg(long, default_value_t = run::DEFAULT_MAX_EVENTS)]
    pub max_events: u64,
}

pub fn run(args: RunFlags) -> Result<ExitCode, CliError> {
    let RunFlags {
        scenario: name,
        seed,
        out,
        overrides,
        output,
        check_determinism,
        from_cluster: _,
        trace,
        format,
        max_events,
    } = args;
    let (name, overrides) = (name.as_str(), overrides.as_slice());
    let loaded = load_named(name, overrides)?;
    let seed_used = seed.unwrap_or(loaded.scenario.seed);
    let dir =
        out.unwrap_or_else(|| PathBuf::from("out").join(format!("{}-seed{seed_used}", slug(&loaded.scenario.name))));
    // Refuse a foreign output directory before spending time on the run.
    crate::output::check_replaceable(&dir, crate::output::Command::Run).map_err(CliError::input)?;
    let trace = match trace {
        TraceMode::On => true,
        TraceMode::Off => false,
        TraceMode::Auto => match run::estimated_events(&loaded.scenario) {
            Some(estimate) if estimate > run::AUTO_TRACE_LIMIT => {
                eprintln!(
                    "note: about {} events expected: the trace is off to keep memory bounded (--trace on keeps it); \
                     metrics, summary and plots are complete, trace.jsonl holds only its header",
                    group_digits(estimate)
                );
                false
            }
            _ => true,
        },
    };
    // The scenario is handed to the run and back: the run lets its node tables go while the
    // world runs (`run::run_owned`).
    let run_once = |loaded| {
        let mut progress = crate::progress::RunProgress::new(false);
        let mut update = |t: u64, d: u64, e: u64| progress.update(t, d, e);
        let budget = run::Budget { max_events, progress: Some(&mut update) };
        let out = run::run_owned(loaded, seed, trace, budget);
        progress.finish();
        out
    };
    let (loaded, result) = run_once(loaded);
    let result = result?;
    if check_determinism {
        let (_, again) = run_once(loaded);
        let again = again?;
        if let Some(diff) = run::first_divergence(&result.result, &again.result) {
            eprintln!("determinism check FAILED: the two runs diverge at {diff}\nreplay: {}", result.replay);
            return Ok(ExitCode::from(1));
        }
        // Say what was compared: without a trace only the metrics and the event counts are.
        if result.result.trace.is_empty() {
            eprintln!(
                "determinism check passed: two runs gave identical metrics and event counts ({} simulation events); \
                 the trace was off, so no event-by-event comparison was made (--trace on compares every event)",
                result.result.events_processed
            );
        } else {
            eprintln!(
                "determinism check passed: two runs gave identical traces ({} trace events, {} simulation events) \
                 and metrics",
                result.result.trace.len(),
                result.result.events_processed
            );
        }
    }
    outputs::write_run(&dir, &result, format).map_err(CliError::input)?;
    match output {
        OutputFormat::Table => {
            let table = outputs::summary_table(&result);
            let table = crate::terminal::printable_lines(&table);
            if crate::terminal::stdout_in_colour() {
                print!("{}", crate::terminal::colour_verdicts(&table));
            } else {
                print!("{table}");
            }
            let plots = match (format.wants_svg(), format.wants_png()) {
                (true, true) => "timeline.svg/.png, transitions.svg/.png",
                (false, true) => "timeline.png, transitions.png",
                _ => "timeline.svg, transitions.svg",
            };
            let history = if outputs::history_report(&result).is_some() { ", history.jsonl" } else { "" };
            println!(
                "outputs: {}/  report.html (open in a browser), {plots}, summary.json, trace.jsonl{history}, trace.perfetto.json (ui.perfetto.dev)",
                dir.display()
            );
        }
        OutputFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&outputs::summary_json(&result)).expect("json"))
        }
    }
    if !result.all_passed() {
        eprintln!("an expectation failed; replay: {}", result.replay);
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// What a TOML file holds, by its top-level keys: a sweep or a hunt file names a `scenario`
/// (a scenario file never does).
#[derive(Clone, Copy, PartialEq)]
pub enum FileKind {
    Scenario,
    Sweep,
    Hunt,
}

impl FileKind {
    /// The kind of a file's text (a scenario when it does not read as TOML at all).
    pub fn of_text(text: &str) -> FileKind {
        let Ok(table) = toml::from_str::<toml::Table>(text) else { return FileKind::Scenario };
        if !table.contains_key("scenario") {
            return FileKind::Scenario;
        }
        if table.contains_key("property") || table.contains_key("bounds") { FileKind::Hunt } else { FileKind::Sweep }
    }

    /// Appended to a file's parse error when `expected` was wanted: which command takes the
    /// file given (empty when it is of the kind expected).
    pub fn hint(text: &str, expected: FileKind, name: &str) -> String {
        let kind = FileKind::of_text(text);
        // A scenario by its own keys (a sweep file that lost its `scenario` line is not one).
        let scenario_keys = toml::from_str::<toml::Table>(text)
            .is_ok_and(|t| ["nodes", "defaults", "duration"].iter().any(|k| t.contains_key(*k)));
        if kind == expected || (kind == FileKind::Scenario && !scenario_keys) {
            return String::new();
        }
        let command = match kind {
            FileKind::Scenario => format!("leasesim run {name}, or sweep it with leasesim sweep --scenario {name}"),
            FileKind::Sweep => format!("leasesim sweep {name} --out DIR"),
            FileKind::Hunt => format!("leasesim hunt {name} --out DIR"),
        };
        let what = match kind {
            FileKind::Scenario => "a scenario file",
            FileKind::Sweep => "a sweep file",
            FileKind::Hunt => "a hunt file",
        };
        format!("\n(this reads as {what}: {command})")
    }
}

fn file_kind(name: &str) -> FileKind {
    std::fs::read_to_string(name).map(|t| FileKind::of_text(&t)).unwrap_or(FileKind::Scenario)
}

pub fn validate(name: &str, overrides: &[String], seed: Option<u64>, max_events: u64) -> Result<ExitCode, CliError> {
    match file_kind(name) {
        FileKind::Scenario => {}
        FileKind::Hunt => {
            let h = crate::hunt::Hunt::load(Path::new(name), None)?;
            println!(
                "{name}: ok (a hunt file: property {:?} over {}; run it with leasesim hunt {name} --out DIR)",
                h.property_text, h.base.path
            );
            return Ok(ExitCode::SUCCESS);
        }
        FileKind::Sweep => {
            let spec = crate::sweep::SweepSpec::from_args(&crate::sweep::SweepArgs {
                file: Some(PathBuf::from(name)),
                scenario: None,
                seeds: None,
                grid: Vec::new(),
                set: overrides.to_vec(),
                metrics: Vec::new(),
            })?;
            spec.validate()?;
            let (events, seconds) = spec.check_points(max_events)?;
            println!(
                "{name}: ok (a sweep file: {} runs, {} grid points × {} seeds, about {} events, {} on one \
                 thread; run it with leasesim sweep {name} --out DIR)",
                group_digits(spec.run_count() as u64),
                spec.point_count(),
                spec.seed_count(),
                group_digits(events),
                crate::format::rough_seconds(seconds)
            );
            return Ok(ExitCode::SUCCESS);
        }
    }
    let loaded = load_named(name, overrides)?;
    let (prepared, _world) = run::prepare(&loaded, seed, false, max_events)?;
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    println!(
        "{}: ok ({}, {}, {}; about {} events, {}, {} traced)",
        loaded.path,
        plural(loaded.scenario.nodes.len(), "node", "nodes"),
        plural(loaded.scenario.faults.len(), "fault", "faults"),
        plural(loaded.scenario.expect.len(), "expectation", "expectations"),
        group_digits(prepared.estimate.events),
        crate::format::rough_seconds(prepared.estimate.seconds),
        human_bytes(prepared.estimate.trace_bytes)
    );
    Ok(ExitCode::SUCCESS)
}

/// `leasesim list [--dir D]`: a folder named with `--dir` must exist; without it, ./scenarios
/// if there is one, else the scenarios built into the binary.
pub fn list(named: Option<&Path>) -> Result<ExitCode, CliError> {
    if let Some(d) = named
        && !d.is_dir()
    {
        return Err(CliError::input(format!("--dir {}: no such folder", d.display())));
    }
    let dir = named.unwrap_or(Path::new("scenarios"));
    // (group, name, source): the folder's files and its incidents/ folder, or, where there is
    // no such folder, the scenarios built into the binary.
    let mut entries: Vec<(&str, String, String)> = Vec::new();
    if dir.is_dir() {
        for (group, folder) in [("scenarios", dir.to_path_buf()), ("incidents", dir.join("incidents"))] {
            if !folder.is_dir() {
                continue;
            }
            let listing = std::fs::read_dir(&folder)
                .map_err(|e| CliError::input(format!("{}: cannot list scenarios: {e}", folder.display())))?;
            let mut files: Vec<PathBuf> = listing
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            files.sort();
            for path in files {
                let source = scenario_file::read_file(&path)?;
                let name = path.file_stem().unwrap_or_default().to_string_lossy().to_string();
                entries.push((group, name, source));
            }
        }
    } else {
        for (name, source) in crate::shipped::SHIPPED {
            let group = if crate::shipped::INCIDENTS.contains(name) { "incidents" } else { "scenarios" };
            entries.push((group, name.to_string(), source.to_string()));
        }
        entries.sort_by_key(|e| e.0 == "incidents");
    }
    let mut heading = "";
    for (group, name, source) in entries {
        if group != heading {
            heading = group;
            println!(
                "{}",
                if group == "incidents" {
                    "\nIncidents: a real incident reproduced beside its fix (scenarios/incidents/)"
                } else {
                    "Scenarios (scenarios/)"
                }
            );
        }
        match scenario_file::load(&name, &source, &[]) {
            Ok(l) => {
                let line = format!("  {name:<38} {}", first_sentence(&l.scenario.description));
                println!("{}", crate::terminal::printable(&line))
            }
            Err(e) => {
                let line = format!("  {name:<38} (invalid: {})", e.message.lines().next().unwrap_or(""));
                println!("{}", crate::terminal::printable(&line))
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn demo() -> Result<ExitCode, CliError> {
    use sim_core::elector::Algorithm;
    use sim_core::model::{FaultKind, Target, TimedFault, WorldSpec};
    use sim_core::time::secs;
    let mut spec = WorldSpec::basic(1, 3, Algorithm::ClientGo, secs(120));
    spec.faults.push(TimedFault { at: secs(30), target: Target::Holder, kind: FaultKind::Crash });
    let world = sim_core::world::World::new(spec).map_err(|e| CliError::input(e.to_string()))?;
    let result = world.run();
    println!("{}", serde_json::to_string_pretty(&result.metrics).expect("metrics serialise"));
    Ok(ExitCode::SUCCESS)
}

fn now_from(flag: &str, text: Option<&str>) -> Result<i64, CliError> {
    match text {
        Some(text) => lease_tools::parse_rfc3339(text).map_err(|e| CliError::input(format!("{flag}: {e}"))),
        None => Ok(lease_tools::machine_now()),
    }
}

pub fn lab(out: &std::path::Path, epoch: Option<&str>) -> Result<ExitCode, CliError> {
    let epoch = epoch.map(|_| now_from("--epoch", epoch)).transpose()?;
    // The lab's clock runs minutes past its epoch and its expiry check adds lease durations:
    // a day of room below the last representable time keeps every reading exact.
    const LAB_ROOM: i64 = 86_400 * 1_000_000_000;
    if let Some(e) = epoch
        && e > i64::MAX - LAB_ROOM
    {
        return Err(CliError::input(format!(
            "--epoch: the lab runs from its epoch onwards; choose one at least a day before the end of the times \
             leasesim can represent ({})",
            sim_core::time::WALL_RANGE
        )));
    }
    let artifacts = crate::lab::run_lab(epoch).map_err(CliError::no)?;
    let mut staged = crate::output::StagedDir::new(out, crate::output::Command::Lab).map_err(CliError::input)?;
    for (name, contents) in &artifacts.files {
        staged.write(name, contents).map_err(CliError::input)?;
    }
    let written = staged.commit().map_err(CliError::input)?;
    println!("wrote {} files to {}", artifacts.files.len(), written.display());
    Ok(ExitCode::SUCCESS)
}

pub fn expiry(files: &[PathBuf], now: Option<&str>, expect: Option<&PathBuf>) -> Result<ExitCode, CliError> {
    let now = now_from("--now", now)?;
    // Everything is read and checked before the first line is printed.
    let leases = lease_tools::read_lease_files(files).map_err(CliError::input)?;
    let expectations = match expect {
        Some(path) => {
            let label = path.display().to_string();
            let text =
                std::fs::read_to_string(path).map_err(|e| CliError::input(format!("{label}: cannot read: {e}")))?;
            Some(lease_tools::parse_expectations(&label, &text).map_err(CliError::input)?)
        }
        None => None,
    };
    let report = lease_tools::expiry_report(&leases, now, expectations.as_deref()).map_err(CliError::input)?;
    for line in &report.lines {
        println!("{}", crate::terminal::printable(line));
    }
    eprintln!("{}", lease_tools::NAIVE_RULE_NOTE);
    Ok(if report.mismatches > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

pub fn audit(files: &[PathBuf], flag: bool, tolerance: &str, now: Option<&str>) -> Result<ExitCode, CliError> {
    let now = now_from("--now", now)?;
    let future_tolerance =
        sim_core::time::parse_duration(tolerance).map_err(|e| CliError::input(format!("--tolerance: {e}")))?;
    let leases = lease_tools::read_lease_files(files).map_err(CliError::input)?;
    for line in lease_tools::audit_lines(&leases, &AuditOptions { flag, future_tolerance, now }) {
        println!("{}", crate::terminal::printable(&line));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<ExitCode, CliError> {
    let summaries = crate::sweep::merge(dirs, out)?;
    eprintln!("merged {} shards ({} grid points) → {}/", dirs.len(), summaries.len(), out.display());
    Ok(ExitCode::SUCCESS)
}

pub fn envelope(input: crate::envelope::EnvelopeInput) -> Result<ExitCode, CliError> {
    if input.rate_ratio <= 0.0 || !input.rate_ratio.is_finite() {
        return Err(CliError::input(format!("--rate-ratio {}: must be above zero", input.rate_ratio)));
    }
    for (flag, v) in [
        ("--lease-duration", input.lease_duration),
        ("--renew-deadline", input.renew_deadline),
        ("--retry-period", input.retry_period),
    ] {
        if v <= 0.0 {
            return Err(CliError::input(format!("{flag}: must be greater than zero, such as 15s")));
        }
    }
    let envelope = crate::envelope::evaluate(&input);
    print!("{}", crate::envelope::report(&input, &envelope));
    Ok(if envelope.inside_failing { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

pub fn reports(dir: &Path, out: &Path) -> Result<ExitCode, CliError> {
    let entries = crate::reports::generate(dir, out).map_err(CliError::input)?;
    for e in &entries {
        println!("{:<40} {}", e.name, if e.passed { "expectations pass" } else { "an expectation FAILS" });
    }
    println!("wrote {}/index.html and {} reports", out.display(), entries.len());
    Ok(if entries.iter().all(|e| e.passed) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
