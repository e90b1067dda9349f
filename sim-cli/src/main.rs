//! `leasesim`: run scenarios of Kubernetes Lease leader election in a deterministic simulator.
//!
//! Exit codes: 0 success; 1 a scenario expectation failed (or `--check-determinism` found a
//! difference, or `envelope` found the configuration outside the safety envelope); 2 bad input
//! (usage, scenario or sweep file, I/O).

use clap::{Parser, Subcommand, ValueEnum};
use sim_cli::lease_tools::{self, AuditOptions};
use sim_cli::output::StagedDir;
use sim_cli::run::{self, RunOutput};
use sim_cli::scenario_file::{self, InputError};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "leasesim", version, about = "Deterministic simulator of Kubernetes Lease leader election")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum TraceMode {
    Auto,
    On,
    Off,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum OutputFormat {
    Table,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario file (or a shipped scenario by name) and write its trace and summary.
    Run(RunCli),
    /// Check a scenario file without running it: everything `run` checks before it starts.
    Validate {
        scenario: String,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// The seed to check with (default: the file's `seed`; drawn values depend on it).
        #[arg(long)]
        seed: Option<u64>,
        /// The event budget to check the run's estimate against (as `run --max-events`).
        #[arg(long, default_value_t = run::DEFAULT_MAX_EVENTS)]
        max_events: u64,
    },
    /// The shipped scenarios with their one-line descriptions.
    List {
        /// Where to look (default: ./scenarios, else the scenarios built into leasesim).
        #[arg(long, default_value = "scenarios")]
        dir: PathBuf,
    },
    /// Run a built-in three-node demo and print its metrics.
    Demo,
    /// Regenerate the example reports (one per shipped scenario, plus index.html).
    Reports {
        /// Scenarios to run.
        #[arg(long, default_value = "scenarios")]
        dir: PathBuf,
        /// Where to write (replaced atomically).
        #[arg(long, default_value = "reports")]
        out: PathBuf,
    },
    /// Perform the seed lab's eight steps against the simulated API server and write its files.
    Lab {
        /// Directory to write (replaced atomically; nothing is written if a step fails).
        #[arg(long)]
        out: PathBuf,
        /// Wall-clock time of the first step (RFC 3339); default: the machine's clock. With it
        /// fixed, every file is the same byte for byte.
        #[arg(long)]
        epoch: Option<String>,
    },
    /// Classify Leases as LIVE or EXPIRED by renewTime + leaseDurationSeconds (the naive rule).
    Expiry {
        /// Lease dumps: a Lease, a List, or `kubectl get lease -A -o yaml|json`.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The instant to compare with (RFC 3339); default: the machine's clock.
        #[arg(long)]
        now: Option<String>,
        /// TSV of `<lease><TAB><LIVE|EXPIRED>`: print OK/MISMATCH lines, exit 1 on a mismatch.
        #[arg(long)]
        expect: Option<PathBuf>,
    },
    /// One sorted line per Lease: `<name> holder=<holder> transitions=<n> duration=<s>`.
    Audit {
        /// Lease dumps: a Lease, a List, or `kubectl get lease -A -o yaml|json`.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Mark Leases with an empty holder, a renewTime in the future beyond --tolerance, or
        /// more than 6 transitions per hour of age (and at least 3).
        #[arg(long)]
        flag: bool,
        /// How far in the future a renewTime may be before it is flagged.
        #[arg(long, default_value = "5s")]
        tolerance: String,
        /// The instant ages and "future" are measured from (RFC 3339); default: the machine's clock.
        #[arg(long)]
        now: Option<String>,
    },
    /// Run a scenario over a grid of overrides × seeds: runs.csv, aggregate.csv, sweep.json, plots.
    Sweep(SweepCli),
    /// Search fault schedules within a hunt file's bounds for one that breaks a property;
    /// shrink it to a minimal scenario (exit 1 when found, 0 when not, with the margin).
    Hunt(HuntCli),
    /// Join the output directories of a sharded sweep into what one machine would have written.
    Merge {
        /// The shard directories (each written with --shard or --shard-from-env).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// A new (or empty) directory for the merged sweep.
        #[arg(long)]
        out: PathBuf,
    },
    /// When can client-go elect two leaders? Prints the bounds and whether a configuration is inside.
    Envelope {
        #[arg(long, value_parser = duration_secs)]
        lease_duration: f64,
        #[arg(long, value_parser = duration_secs)]
        renew_deadline: f64,
        #[arg(long, value_parser = duration_secs)]
        retry_period: f64,
        /// Upper bound on one-way latency between a node and the API server.
        #[arg(long, value_parser = duration_secs, default_value = "0s")]
        latency_max: f64,
        /// Candidate clock rate ÷ leader clock rate (1.2 = the candidate's clock runs 20% fast).
        #[arg(long, default_value_t = 1.0)]
        rate_ratio: f64,
        /// Longest stop-the-world pause of the leader process.
        #[arg(long, value_parser = duration_secs, default_value = "0s")]
        pause: f64,
    },
}

#[derive(clap::Args)]
struct RunCli {
    /// A scenario file, or the name of a shipped scenario (`leasesim list`).
    scenario: String,
    /// Seed of the run (default: the file's `seed`).
    #[arg(long, env = "LEASESIM_SEED")]
    seed: Option<u64>,
    /// Output directory (default: out/<scenario>-seed<N>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Override a value of the file: `--set defaults.renew_deadline=20s`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// What to print on stdout.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: OutputFormat,
    /// Run twice in this process and report the first event where the runs differ.
    #[arg(long)]
    check_determinism: bool,
    /// Start from a real cluster's Leases (`kubectl get lease -A -o yaml > leases.yaml`):
    /// they exist before the run and time 0 is their latest renewTime.
    #[arg(long, value_name = "LEASES.yaml")]
    from_cluster: Option<String>,
    /// Keep the event trace (trace.jsonl, markers in plots): `auto` turns it off for runs
    /// expected to exceed about 3 million events, to keep memory bounded.
    #[arg(long, value_enum, default_value = "auto")]
    trace: TraceMode,
    /// Plot format: svg, png or both.
    #[arg(long, default_value = "svg", value_parser = sim_cli::report::ImageFormat::parse)]
    format: sim_cli::report::ImageFormat,
    /// The most events the run may handle: a run expected to exceed it is refused before it
    /// starts, one that reaches it stops (exit 2). The message gives the figure to pass instead.
    #[arg(long, default_value_t = run::DEFAULT_MAX_EVENTS)]
    max_events: u64,
}

#[derive(clap::Args)]
struct HuntCli {
    /// A hunt file (TOML: scenario, property, [bounds]; docs/hunt.md).
    file: PathBuf,
    /// The property to break (replaces the file's): no-dual-leader, "dual-leader <= 2s",
    /// no-split-brain-writes, "leader-within 30s", no-lost-update, no-write-from-non-holder, or
    /// an expectation line.
    #[arg(long)]
    property: Option<String>,
    /// How many runs to try (a number), or how long to search (`90s`, `10m`: then the number of
    /// runs, and so the result, depends on the machine).
    #[arg(long, default_value = "2000")]
    budget: String,
    /// Worker threads (default: every core). With a run budget the result does not depend on it.
    #[arg(long)]
    jobs: Option<usize>,
    /// The search's own seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output directory: hunt.json, and when a violation is found, found.toml (the shrunk
    /// scenario), shrink.txt and its report.
    #[arg(long)]
    out: PathBuf,
    /// No progress bar.
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(clap::Args)]
struct SweepCli {
    /// A sweep file (TOML: scenario, [grid], seeds, metrics). Omit it and give --scenario instead.
    file: Option<PathBuf>,
    /// Sweep this scenario (file or shipped name) without a sweep file.
    #[arg(long, conflicts_with = "file")]
    scenario: Option<String>,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Worker threads (default: every core). Results do not depend on it.
    #[arg(long)]
    jobs: Option<usize>,
    /// Seeds: A..B (B excluded), A..=B (B included) or one seed. Replaces the file's.
    #[arg(long)]
    seeds: Option<String>,
    /// A grid axis PATH=V1,V2,… (repeatable); replaces the file's axis of the same path.
    #[arg(long = "grid", value_name = "PATH=V1,V2,…")]
    grid: Vec<String>,
    /// A fixed override for every run, as `leasesim run --set`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// A metric to summarise in aggregate.csv (repeatable; replaces the file's list).
    #[arg(long = "metric")]
    metrics: Vec<String>,
    /// Run only the runs with run_index % N == I.
    #[arg(long, value_name = "I/N", conflicts_with = "shard_from_env")]
    shard: Option<String>,
    /// Take the shard from JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID.
    #[arg(long)]
    shard_from_env: bool,
    /// The number of shards for JOB_COMPLETION_INDEX (the Job's completions).
    #[arg(long, env = "LEASESIM_SHARD_COUNT")]
    shard_count: Option<usize>,
    /// Continue an interrupted sweep in --out (only the same sweep).
    #[arg(long)]
    resume: bool,
    /// No progress bar and no summary.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Stop after this many runs; finish later with --resume.
    #[arg(long, hide = true)]
    max_runs: Option<usize>,
    /// Each run's event budget (as `run --max-events`).
    #[arg(long, default_value_t = run::DEFAULT_MAX_EVENTS)]
    max_events: u64,
}

fn main() -> ExitCode {
    // Die quietly on a closed pipe (`leasesim list | head`) as other Unix tools do, instead of
    // panicking in println!.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    sim_cli::output::install_interrupt_cleanup();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(mut args) => {
            // The flag is the file's `from_cluster` key, so the replay command carries it too.
            if let Some(dump) = args.from_cluster.take() {
                args.overrides.push(format!("from_cluster={dump}"));
            }
            cmd_run(args)
        }
        Command::Validate { scenario, overrides, seed, max_events } => {
            cmd_validate(&scenario, &overrides, seed, max_events)
        }
        Command::List { dir } => cmd_list(&dir),
        Command::Demo => cmd_demo(),
        Command::Reports { dir, out } => cmd_reports(&dir, &out),
        Command::Lab { out, epoch } => return finish(lab(&out, epoch.as_deref())),
        Command::Expiry { files, now, expect } => return finish(expiry(&files, now.as_deref(), expect.as_ref())),
        Command::Audit { files, flag, tolerance, now } => {
            return finish(audit(&files, flag, &tolerance, now.as_deref()));
        }
        Command::Sweep(args) => cmd_sweep(args),
        Command::Hunt(args) => cmd_hunt(args),
        Command::Merge { dirs, out } => cmd_merge(&dirs, &out),
        Command::Envelope { lease_duration, renew_deadline, retry_period, latency_max, rate_ratio, pause } => {
            cmd_envelope(sim_cli::envelope::EnvelopeInput {
                lease_duration,
                renew_deadline,
                retry_period,
                latency_max,
                rate_ratio,
                pause,
            })
        }
    };
    finish(result.map_err(|e| (BAD_INPUT, e.0)))
}

fn finish(result: CommandResult) -> ExitCode {
    result.unwrap_or_else(|(code, message)| {
        eprintln!("error: {}", sim_cli::terminal::printable_lines(&message));
        ExitCode::from(code)
    })
}

/// A file path as given, or `scenarios/<name>.toml` for a shipped scenario's name (sweeps need
/// the file itself: they hash its text).
fn resolve_scenario(name: &str) -> PathBuf {
    let p = PathBuf::from(name);
    let shipped = PathBuf::from(sim_cli::shipped::repo_path(name));
    if !p.exists() && !name.contains('/') && !name.ends_with(".toml") && shipped.exists() { shipped } else { p }
}

/// Loads a scenario file, or a shipped scenario by name: `scenarios/<name>.toml` when it is
/// there (the repository), else the copy compiled into the binary.
fn load(name: &str, overrides: &[String]) -> Result<scenario_file::LoadedScenario, InputError> {
    let path = PathBuf::from(name);
    let looks_like_path = name.contains('/') || name.ends_with(".toml");
    if path.is_file() || looks_like_path {
        if path.is_dir() {
            return Err(InputError(format!("{name}: is a directory, not a scenario file")));
        }
        let source = scenario_file::read_file(&path)?;
        return scenario_file::load(&path.display().to_string(), &source, overrides);
    }
    let in_repo = PathBuf::from(sim_cli::shipped::repo_path(name));
    if in_repo.is_file() {
        let source = scenario_file::read_file(&in_repo)?;
        return scenario_file::load(&in_repo.display().to_string(), &source, overrides);
    }
    match sim_cli::shipped::find(name) {
        Some(source) => scenario_file::load(name, source, overrides),
        None => {
            let names = sim_cli::shipped::SHIPPED.iter().map(|(n, _)| *n);
            let hint = sim_core::scenario::did_you_mean(name, names);
            Err(InputError(format!(
                "{name}: no such scenario file, and no shipped scenario has that name{hint}; `leasesim list` shows them"
            )))
        }
    }
}

fn cmd_run(args: RunCli) -> Result<ExitCode, InputError> {
    let RunCli {
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
    let loaded = load(name, overrides)?;
    let seed_used = seed.unwrap_or(loaded.scenario.seed);
    let dir =
        out.unwrap_or_else(|| PathBuf::from("out").join(format!("{}-seed{seed_used}", slug(&loaded.scenario.name))));
    // Refuse a foreign output directory before spending time on the run.
    sim_cli::output::check_replaceable(&dir, sim_cli::output::Command::Run).map_err(InputError)?;
    let trace = match trace {
        TraceMode::On => true,
        TraceMode::Off => false,
        TraceMode::Auto => match run::estimated_events(&loaded.scenario) {
            Some(estimate) if estimate > run::AUTO_TRACE_LIMIT => {
                eprintln!(
                    "note: about {} events expected: the trace is off to keep memory bounded (--trace on keeps it); \
                     metrics, summary and plots are complete, trace.jsonl holds only its header",
                    run::group_digits(estimate)
                );
                false
            }
            _ => true,
        },
    };
    let run_once = || -> Result<run::RunOutput, InputError> {
        let mut progress = sim_cli::progress::RunProgress::new(false);
        let mut update = |t: u64, d: u64, e: u64| progress.update(t, d, e);
        let budget = run::Budget { max_events, progress: Some(&mut update) };
        let out = run::run_budgeted(&loaded, seed, trace, budget);
        progress.finish();
        out
    };
    let result = run_once()?;
    if check_determinism {
        let again = run_once()?;
        if let Some(diff) = run::first_divergence(&result.result, &again.result) {
            eprintln!("determinism check FAILED: the two runs diverge at {diff}\nreplay: {}", result.replay);
            return Ok(ExitCode::from(1));
        }
        eprintln!(
            "determinism check passed: two runs gave identical traces ({} trace events, {} simulation events)",
            result.result.trace.len(),
            result.result.events_processed
        );
    }
    write_run(&dir, &result, format).map_err(InputError)?;
    match output {
        OutputFormat::Table => {
            print!("{}", sim_cli::terminal::printable_lines(&run::summary_table(&result)));
            let plots = match (format.wants_svg(), format.wants_png()) {
                (true, true) => "timeline.svg/.png, transitions.svg/.png",
                (false, true) => "timeline.png, transitions.png",
                _ => "timeline.svg, transitions.svg",
            };
            let history = if run::history_report(&result).is_some() { ", history.jsonl" } else { "" };
            println!(
                "outputs: {}/  report.html (open in a browser), {plots}, summary.json, trace.jsonl{history}, trace.perfetto.json (ui.perfetto.dev)",
                dir.display()
            );
        }
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&run::summary_json(&result)).expect("json")),
    }
    if !result.all_passed() {
        eprintln!("an expectation failed; replay: {}", result.replay);
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.0} MB", n as f64 / (1u64 << 20) as f64),
        n => format!("{:.0} kB", n as f64 / 1024.0),
    }
}

fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect()
}

/// Writes every output of a run into `dir`, atomically.
pub fn write_run(dir: &Path, result: &RunOutput, format: sim_cli::report::ImageFormat) -> Result<(), String> {
    let mut staged = StagedDir::new(dir, sim_cli::output::Command::Run)?;
    for (name, bytes) in run::report_files(result, format)? {
        staged.write(&name, bytes)?;
    }
    staged.write("summary.json", pretty(&run::summary_json(result)))?;
    staged.write_with("trace.jsonl", |w| run::write_trace_jsonl(result, w))?;
    if run::history_report(result).is_some() {
        staged.write_with("history.jsonl", |w| run::write_history_jsonl(result, w))?;
    }
    staged.write_with("trace.perfetto.json", |w| run::write_perfetto(result, w))?;
    staged.commit()?;
    Ok(())
}

fn pretty(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("json");
    s.push('\n');
    s
}

fn cmd_validate(name: &str, overrides: &[String], seed: Option<u64>, max_events: u64) -> Result<ExitCode, InputError> {
    let loaded = load(name, overrides)?;
    let (prepared, _world) = run::prepare(&loaded, seed, false, max_events)?;
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    println!(
        "{}: ok ({}, {}, {}; about {} events, {} traced)",
        loaded.path,
        plural(loaded.scenario.nodes.len(), "node", "nodes"),
        plural(loaded.scenario.faults.len(), "fault", "faults"),
        plural(loaded.scenario.expect.len(), "expectation", "expectations"),
        run::group_digits(prepared.estimate.events),
        human_bytes(prepared.estimate.trace_bytes)
    );
    Ok(ExitCode::SUCCESS)
}

fn cmd_list(dir: &Path) -> Result<ExitCode, InputError> {
    // (group, name, source): the folder's files and its incidents/ folder, or, where there is
    // no such folder, the scenarios built into the binary.
    let mut entries: Vec<(&str, String, String)> = Vec::new();
    if dir.is_dir() {
        for (group, folder) in [("scenarios", dir.to_path_buf()), ("incidents", dir.join("incidents"))] {
            if !folder.is_dir() {
                continue;
            }
            let listing = std::fs::read_dir(&folder)
                .map_err(|e| InputError(format!("{}: cannot list scenarios: {e}", folder.display())))?;
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
        for (name, source) in sim_cli::shipped::SHIPPED {
            let group = if sim_cli::shipped::INCIDENTS.contains(name) { "incidents" } else { "scenarios" };
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
                println!("{}", sim_cli::terminal::printable(&line))
            }
            Err(e) => {
                let line = format!("  {name:<38} (invalid: {})", e.0.lines().next().unwrap_or(""));
                println!("{}", sim_cli::terminal::printable(&line))
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The description up to its first full stop, for one-line listings.
fn first_sentence(text: &str) -> String {
    let line = text.replace('\n', " ");
    match line.find(". ") {
        Some(i) => line[..=i].to_string(),
        None => line,
    }
}

fn cmd_demo() -> Result<ExitCode, InputError> {
    use sim_core::elector::Algorithm;
    use sim_core::model::{FaultKind, Target, TimedFault, WorldSpec};
    use sim_core::time::secs;
    let mut spec = WorldSpec::basic(1, 3, Algorithm::ClientGo, secs(120));
    spec.faults.push(TimedFault { at: secs(30), target: Target::Holder, kind: FaultKind::Crash });
    let world = sim_core::world::World::new(spec).map_err(InputError)?;
    let result = world.run();
    println!("{}", serde_json::to_string_pretty(&result.metrics).expect("metrics serialise"));
    Ok(ExitCode::SUCCESS)
}

/// Exit code for input the tools cannot read (as clap's usage errors).
const BAD_INPUT: u8 = 2;

type CommandResult = Result<ExitCode, (u8, String)>;

fn bad_input(message: String) -> (u8, String) {
    (BAD_INPUT, message)
}

fn now_from(flag: &str, text: Option<&str>) -> Result<i64, (u8, String)> {
    match text {
        Some(text) => lease_tools::parse_rfc3339(text).map_err(|e| bad_input(format!("{flag}: {e}"))),
        None => Ok(lease_tools::machine_now()),
    }
}

fn lab(out: &std::path::Path, epoch: Option<&str>) -> CommandResult {
    let epoch = epoch.map(|_| now_from("--epoch", epoch)).transpose()?;
    let artifacts = sim_cli::lab::run_lab(epoch).map_err(|e| (1, e))?;
    let mut staged = sim_cli::output::StagedDir::new(out, sim_cli::output::Command::Lab).map_err(bad_input)?;
    for (name, contents) in &artifacts.files {
        staged.write(name, contents).map_err(bad_input)?;
    }
    let written = staged.commit().map_err(bad_input)?;
    println!("wrote {} files to {}", artifacts.files.len(), written.display());
    Ok(ExitCode::SUCCESS)
}

fn expiry(files: &[PathBuf], now: Option<&str>, expect: Option<&PathBuf>) -> CommandResult {
    let now = now_from("--now", now)?;
    // Everything is read and checked before the first line is printed.
    let leases = lease_tools::read_lease_files(files).map_err(bad_input)?;
    let expectations = match expect {
        Some(path) => {
            let label = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|e| bad_input(format!("{label}: cannot read: {e}")))?;
            Some(lease_tools::parse_expectations(&label, &text).map_err(bad_input)?)
        }
        None => None,
    };
    let report = lease_tools::expiry_report(&leases, now, expectations.as_deref()).map_err(bad_input)?;
    for line in &report.lines {
        println!("{}", sim_cli::terminal::printable(line));
    }
    eprintln!("{}", lease_tools::NAIVE_RULE_NOTE);
    Ok(if report.mismatches > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn audit(files: &[PathBuf], flag: bool, tolerance: &str, now: Option<&str>) -> CommandResult {
    let now = now_from("--now", now)?;
    let future_tolerance =
        sim_core::time::parse_duration(tolerance).map_err(|e| bad_input(format!("--tolerance: {e}")))?;
    let leases = lease_tools::read_lease_files(files).map_err(bad_input)?;
    for line in lease_tools::audit_lines(&leases, &AuditOptions { flag, future_tolerance, now }) {
        println!("{}", sim_cli::terminal::printable(&line));
    }
    Ok(ExitCode::SUCCESS)
}
fn duration_secs(text: &str) -> Result<f64, String> {
    sim_core::time::parse_duration(text).map(|n| n as f64 / 1e9)
}

fn cmd_hunt(args: HuntCli) -> Result<ExitCode, InputError> {
    use sim_cli::hunt;
    let h = hunt::Hunt::load(&args.file, args.property.as_deref())?;
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    if jobs == 0 {
        return Err(InputError("--jobs must be at least 1".into()));
    }
    let (runs_budget, time_budget) = match args.budget.parse::<u64>() {
        Ok(n) if n > 0 => (n, None),
        _ => {
            let t = sim_core::time::parse_duration(&args.budget)
                .map_err(|e| InputError(format!("--budget {:?}: a number of runs or a duration ({e})", args.budget)))?;
            (u64::MAX, Some(std::time::Duration::from_nanos(t)))
        }
    };
    sim_cli::output::check_replaceable(&args.out, sim_cli::output::Command::Hunt).map_err(InputError)?;
    let started = std::time::Instant::now();
    let bar = sim_cli::progress::runs_bar(if time_budget.is_some() { 0 } else { runs_budget as usize }, 0, args.quiet);
    let mut progress = |done: u64, _total: u64| bar.set_position(done);
    let stop = || time_budget.is_some_and(|t| started.elapsed() >= t);
    let result = hunt::search(&h, args.seed, runs_budget, jobs, &mut progress, &stop).map_err(InputError)?;
    bar.finish_and_clear();
    let searched = started.elapsed().as_secs_f64();
    let shrunk = match &result.found {
        Some((c, _)) => Some(hunt::shrink(&h, c).map_err(InputError)?),
        None => None,
    };
    let mut staged = sim_cli::output::StagedDir::new(&args.out, sim_cli::output::Command::Hunt).map_err(InputError)?;
    let mut summary =
        serde_json::to_string_pretty(&hunt::summary_json(&h, args.seed, &result, shrunk.as_ref())).expect("json");
    summary.push('\n');
    staged.write("hunt.json", summary).map_err(InputError)?;
    println!("hunt {}  property {:?}  seed {}", h.path, h.property_text, args.seed);
    println!(
        "{} runs in {:.1} s ({:.0} runs/s on {jobs} thread(s))",
        result.runs,
        searched,
        result.runs as f64 / searched.max(1e-9)
    );
    let envelope = hunt::envelope_verdict(&h);
    if let Some((_, reading)) = &envelope {
        println!("{reading}");
    }
    let code = match (&result.found, &shrunk) {
        (Some((c, o)), Some((small, so, steps))) => {
            println!("VIOLATED: {}", o.detail);
            println!("  found:  {}", hunt::describe(c));
            println!("  shrunk: {}  ({} steps)", hunt::describe(small), steps.len());
            println!("  {}", so.detail);
            let toml = hunt::scenario_toml(&h, small, so).map_err(InputError)?;
            // The file must replay the violation by itself: load it as `leasesim run` would.
            let replay = scenario_file::load("found.toml", &toml, &[])?;
            let out = run::run(&replay, None, true)?;
            if out.all_passed() {
                return Err(InputError(format!(
                    "internal error: the shrunk scenario does not replay the violation ({}); please report it",
                    hunt::describe(small)
                )));
            }
            staged.write("found.toml", &toml).map_err(InputError)?;
            let mut text = format!("found:  {}\n{}\n", hunt::describe(c), o.detail);
            for s in steps {
                text.push_str(&format!("shrink: {s}\n"));
            }
            text.push_str(&format!("final:  {}\n{}\n", hunt::describe(small), so.detail));
            staged.write("shrink.txt", text).map_err(InputError)?;
            for (file, bytes) in run::report_files(&out, sim_cli::report::ImageFormat::Svg).map_err(InputError)? {
                staged.write(&format!("found/{file}"), bytes).map_err(InputError)?;
            }
            if matches!(envelope, Some((true, _))) {
                println!(
                    "BUG: a violation inside the envelope's safe region: the simulator or docs/safety-envelope.md is \
                     wrong; please report it with found.toml"
                );
            }
            ExitCode::from(1)
        }
        _ => {
            println!("no violation in {} runs", result.runs);
            if let Some((c, o)) = &result.closest {
                match o.margin_seconds {
                    Some(m) => println!(
                        "closest: dual {:.3} s, margin {m:.3} s (the smallest gap between a takeover and the old leader's \
                         last act; negative = overlap)\n  {}",
                        o.dual_seconds,
                        hunt::describe(c)
                    ),
                    None => println!("closest: leadership never changed hands\n  {}", hunt::describe(c)),
                }
            }
            ExitCode::SUCCESS
        }
    };
    let path = staged.commit().map_err(InputError)?;
    println!("outputs: {}/", path.display());
    Ok(code)
}

fn cmd_sweep(args: SweepCli) -> Result<ExitCode, InputError> {
    use sim_cli::sweep::{RunOptions, Shard, SweepArgs, SweepSpec, run_sweep};
    let shard = match (&args.shard, args.shard_from_env) {
        (Some(text), _) => Some(Shard::parse(text).map_err(InputError)?),
        (None, true) => Some(Shard::from_env(|k| std::env::var(k).ok(), args.shard_count).map_err(InputError)?),
        (None, false) => None,
    };
    let spec = SweepSpec::from_args(&SweepArgs {
        file: args.file,
        scenario: args.scenario.as_deref().map(resolve_scenario),
        seeds: args.seeds,
        grid: args.grid,
        set: args.set,
        metrics: args.metrics,
    })?;
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    if jobs == 0 {
        return Err(InputError("--jobs must be at least 1".into()));
    }
    let opts = RunOptions {
        out: args.out.clone(),
        jobs,
        shard,
        resume: args.resume,
        quiet: args.quiet,
        max_runs: args.max_runs,
        max_events: args.max_events,
    };
    let mut spec = spec;
    if args.resume {
        spec.adopt_scenario_spelling(&args.out);
    }
    let outcome = run_sweep(&spec, &opts)?;
    if !args.quiet {
        let what = match shard {
            Some(s) => format!("shard {}/{}: ", s.index, s.count),
            None => String::new(),
        };
        eprintln!(
            "{what}{} of {} runs done ({} now) over {} grid points × {} seeds → {}/",
            outcome.done,
            outcome.total,
            outcome.ran,
            spec.point_count(),
            spec.seed_count(),
            args.out.display()
        );
        if !outcome.complete() {
            eprintln!("stopped early; continue with --resume");
        } else if shard.is_some() {
            eprintln!("merge the shards with: leasesim merge DIR… --out DIR");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_merge(dirs: &[PathBuf], out: &Path) -> Result<ExitCode, InputError> {
    let summaries = sim_cli::sweep::merge(dirs, out)?;
    eprintln!("merged {} shards ({} grid points) → {}/", dirs.len(), summaries.len(), out.display());
    Ok(ExitCode::SUCCESS)
}

fn cmd_envelope(input: sim_cli::envelope::EnvelopeInput) -> Result<ExitCode, InputError> {
    if input.rate_ratio <= 0.0 || !input.rate_ratio.is_finite() {
        return Err(InputError(format!("--rate-ratio {}: must be above zero", input.rate_ratio)));
    }
    for (flag, v) in [
        ("--lease-duration", input.lease_duration),
        ("--renew-deadline", input.renew_deadline),
        ("--retry-period", input.retry_period),
    ] {
        if v <= 0.0 {
            return Err(InputError(format!("{flag}: must be greater than zero, such as 15s")));
        }
    }
    let envelope = sim_cli::envelope::evaluate(&input);
    print!("{}", sim_cli::envelope::report(&input, &envelope));
    Ok(if envelope.inside_failing { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn cmd_reports(dir: &Path, out: &Path) -> Result<ExitCode, InputError> {
    let entries = sim_cli::reports::generate(dir, out).map_err(InputError)?;
    for e in &entries {
        println!("{:<40} {}", e.name, if e.passed { "expectations pass" } else { "an expectation FAILS" });
    }
    println!("wrote {}/index.html and {} reports", out.display(), entries.len());
    Ok(if entries.iter().all(|e| e.passed) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
