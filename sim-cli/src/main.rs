//! `leasesim`: run scenarios of Kubernetes Lease leader election in a deterministic simulator.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sim_cli::lease_tools::{self, AuditOptions};

#[derive(Parser)]
#[command(name = "leasesim", version, about = "Deterministic simulator of Kubernetes Lease leader election")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a built-in three-node demo and print what happened.
    Demo,
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
}

/// Exit code for input the tools cannot read (as clap's usage errors).
const BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo => return demo(),
        Command::Lab { out, epoch } => lab(&out, epoch.as_deref()),
        Command::Expiry { files, now, expect } => expiry(&files, now.as_deref(), expect.as_ref()),
        Command::Audit { files, flag, tolerance, now } => audit(&files, flag, &tolerance, now.as_deref()),
    };
    result.unwrap_or_else(|(code, message)| {
        eprintln!("error: {message}");
        ExitCode::from(code)
    })
}

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
    let staged = sim_cli::output::StagedDir::new(out).map_err(|e| (1, e))?;
    for (name, contents) in &artifacts.files {
        staged.write(name, contents).map_err(|e| (1, e))?;
    }
    let written = staged.commit().map_err(|e| (1, e))?;
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
        println!("{line}");
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
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

fn demo() -> ExitCode {
    use sim_core::elector::Algorithm;
    use sim_core::model::{FaultKind, Target, TimedFault, WorldSpec};
    use sim_core::time::secs;
    let mut spec = WorldSpec::basic(1, 3, Algorithm::ClientGo, secs(120));
    spec.faults.push(TimedFault { at: secs(30), target: Target::Holder, kind: FaultKind::Crash });
    let result = match sim_core::world::World::new(spec) {
        Ok(world) => world.run(),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", serde_json::to_string_pretty(&result.metrics).expect("metrics serialise"));
    ExitCode::SUCCESS
}
