//! `leasesim`: run scenarios of Kubernetes Lease leader election in a deterministic simulator.
//!
//! Exit codes: 0 success; 1 a scenario expectation failed (or `--check-determinism` found a
//! difference, or `envelope` found the configuration outside the safety envelope); 2 bad input
//! (usage, scenario or sweep file, I/O).

use clap::{Parser, Subcommand};
use sim_cli::commands::{self, RunFlags};
use sim_cli::hunt::{self, HuntFlags};
use sim_cli::run;
use sim_cli::serve::{self, ServeFlags};
use sim_cli::sweep::{self, SweepFlags};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "leasesim", version, about = "Deterministic simulator of Kubernetes Lease leader election")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Handle every event through the event queue: no quiet stretch is stepped over, and a
    /// fleet of many Leases runs as one world rather than one Lease at a time. The outputs
    /// are the same byte for byte either way (this is how that is checked).
    #[arg(long, global = true)]
    no_skip: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario file (or a shipped scenario by name) and write its trace and summary.
    Run(RunFlags),
    /// Check a scenario file without running it: everything `run` checks before it starts (a
    /// sweep or hunt file is checked as `sweep` or `hunt` would check it).
    Validate {
        /// A scenario file, a shipped scenario's name, or a sweep or hunt file.
        scenario: String,
        /// Change one key before checking, as `run --set` does (`defaults.renew_deadline="12s"`).
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
        #[arg(long)]
        dir: Option<PathBuf>,
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
    Sweep(SweepFlags),
    /// Search fault schedules within a hunt file's bounds for one that breaks a property;
    /// shrink it to a minimal scenario (exit 1 when found, 0 when not, with the margin).
    Hunt(HuntFlags),
    /// Serve the simulated API server over HTTP to real clients (kubectl, client libraries),
    /// with faults per client; Ctrl-C ends the session and writes its report (docs/serve.md).
    Serve(ServeFlags),
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
        /// LeaseDuration, such as 15s.
        #[arg(long, value_parser = duration_secs)]
        lease_duration: f64,
        /// RenewDeadline, such as 10s.
        #[arg(long, value_parser = duration_secs)]
        renew_deadline: f64,
        /// RetryPeriod, such as 2s.
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

fn main() -> ExitCode {
    // Die quietly on a closed pipe (`leasesim list | head`) as other Unix tools do, instead of
    // panicking in println!.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    run::set_no_skip(cli.no_skip);
    // `serve` ends its session on Ctrl-C itself (and writes the report); every other command
    // removes what it was writing.
    if !matches!(cli.command, Command::Serve(_)) {
        sim_cli::output::install_interrupt_cleanup();
    }
    let result = match cli.command {
        Command::Run(mut args) => {
            // The flag is the file's `from_cluster` key, so the replay command carries it too.
            if let Some(dump) = args.from_cluster.take() {
                args.overrides.push(format!("from_cluster={dump}"));
            }
            commands::run(args)
        }
        Command::Validate { scenario, overrides, seed, max_events } => {
            commands::validate(&scenario, &overrides, seed, max_events)
        }
        Command::List { dir } => commands::list(dir.as_deref()),
        Command::Demo => commands::demo(),
        Command::Reports { dir, out } => commands::reports(&dir, &out),
        Command::Lab { out, epoch } => commands::lab(&out, epoch.as_deref()),
        Command::Expiry { files, now, expect } => commands::expiry(&files, now.as_deref(), expect.as_ref()),
        Command::Audit { files, flag, tolerance, now } => commands::audit(&files, flag, &tolerance, now.as_deref()),
        Command::Sweep(args) => sweep::command(args),
        Command::Hunt(args) => hunt::command(args),
        Command::Serve(args) => serve::command(args),
        Command::Merge { dirs, out } => commands::merge(&dirs, &out),
        Command::Envelope { lease_duration, renew_deadline, retry_period, latency_max, rate_ratio, pause } => {
            commands::envelope(sim_cli::envelope::EnvelopeInput {
                lease_duration,
                renew_deadline,
                retry_period,
                latency_max,
                rate_ratio,
                pause,
            })
        }
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {}", sim_cli::terminal::printable_lines(&e.message));
        ExitCode::from(e.code)
    })
}

fn duration_secs(text: &str) -> Result<f64, String> {
    sim_core::time::parse_duration(text).map(|n| n as f64 / 1e9)
}
