//! `leasesim sweep` and `leasesim merge`: run a scenario over a grid of `--set` overrides × a
//! range of seeds, in parallel, and write `runs.csv` (one row per run), `aggregate.csv` (per
//! grid point), `sweep.json` (what was swept) and plots.
//!
//! Determinism: run `r` is grid point `r / seeds` with seed `seeds[r % seeds]`, and its seed is
//! the seed value itself (so the replay command is an ordinary `leasesim run --seed N`, and every
//! grid point sees the same seeds: common random numbers). Nothing depends on threads or shards.
//! Rows are written in run order, so `runs.csv` is the same for any `--jobs`, and a resumed or
//! merged sweep is byte-identical to an uninterrupted one. `aggregate.csv` and the plots are
//! computed from `runs.csv` and `sweep.json` alone, which is what lets `merge` produce them.

pub mod csv;
mod execute;
mod files;
mod ordered;
pub mod plots;
mod shard;
mod spec;
pub mod stats;
mod summary;

pub use execute::{Outcome, RunOptions, run_sweep};
pub use shard::Shard;
pub use spec::{
    Axis, AxisValue, DEFAULT_METRICS, MAX_AXIS_VALUES, MAX_RUNS, SWEEP_FORMAT, SweepArgs, SweepSpec, fnv1a64,
    parse_grid_arg, parse_seeds,
};
pub use stats::PointSummary;
pub use summary::{finish, merge};

use crate::error::CliError;
use crate::run;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct SweepFlags {
    /// A sweep file (TOML: scenario, [grid], seeds, metrics). Omit it and give --scenario instead.
    pub file: Option<PathBuf>,
    /// Sweep this scenario (file or shipped name) without a sweep file.
    #[arg(long, conflicts_with = "file")]
    pub scenario: Option<String>,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
    /// Worker threads (default: every core). Results do not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Seeds: A..B (B excluded), A..=B (B included) or one seed. Replaces the file's.
    #[arg(long)]
    pub seeds: Option<String>,
    /// A grid axis PATH=V1,V2,… (repeatable); replaces the file's axis of the same path.
    #[arg(long = "grid", value_name = "PATH=V1,V2,…")]
    pub grid: Vec<String>,
    /// A fixed override for every run, as `leasesim run --set`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// A metric to summarise in aggregate.csv (repeatable; replaces the file's list).
    #[arg(long = "metric")]
    pub metrics: Vec<String>,
    /// Run only the runs with run_index % N == I.
    #[arg(long, value_name = "I/N", conflicts_with = "shard_from_env")]
    pub shard: Option<String>,
    /// Take the shard from JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID.
    #[arg(long)]
    pub shard_from_env: bool,
    /// The number of shards for JOB_COMPLETION_INDEX (the Job's completions).
    #[arg(long, env = "LEASESIM_SHARD_COUNT")]
    pub shard_count: Option<usize>,
    /// Continue an interrupted sweep in --out (only the same sweep).
    #[arg(long)]
    pub resume: bool,
    /// No progress bar and no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Stop after this many runs; finish later with --resume.
    #[arg(long, hide = true)]
    pub max_runs: Option<usize>,
    /// Each run's event budget (as `run --max-events`).
    #[arg(long, default_value_t = run::DEFAULT_MAX_EVENTS)]
    pub max_events: u64,
}

/// `leasesim sweep`.
pub fn command(args: SweepFlags) -> Result<ExitCode, CliError> {
    let shard = match (&args.shard, args.shard_from_env) {
        (Some(text), _) => Some(Shard::parse(text).map_err(CliError::input)?),
        (None, true) => Some(Shard::from_env(|k| std::env::var(k).ok(), args.shard_count).map_err(CliError::input)?),
        (None, false) => None,
    };
    let spec = SweepSpec::from_args(&SweepArgs {
        file: args.file,
        scenario: args.scenario.as_deref().map(crate::shipped::resolve_scenario),
        seeds: args.seeds,
        grid: args.grid,
        set: args.set,
        metrics: args.metrics,
    })?;
    let jobs = crate::jobs::resolve(args.jobs)?;
    let opts = RunOptions {
        out: args.out.clone(),
        jobs,
        shard,
        resume: args.resume,
        quiet: args.quiet,
        max_runs: args.max_runs,
        max_events: args.max_events,
        resume_command: Some(resume_command(std::env::args().skip(1))),
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

/// This invocation's command line with `--resume` added (once), for the interrupt message.
fn resume_command(args: impl Iterator<Item = String>) -> String {
    let mut words = vec!["leasesim".to_string()];
    let mut has_resume = false;
    for a in args {
        has_resume |= a == "--resume";
        words.push(crate::run::shell_quote(&a));
    }
    if !has_resume {
        words.push("--resume".into());
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn a_second_sweep_cannot_write_a_directory_that_one_is_writing() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock_out_dir(dir.path()).unwrap();
        let second = lock_out_dir(dir.path()).unwrap_err();
        assert!(second.message.contains("another leasesim sweep is writing"), "{}", second.message);
        drop(first);
        assert!(lock_out_dir(dir.path()).is_ok(), "the lock goes with the process that held it");
    }

    use super::execute::lock_out_dir;
    use super::spec::{expand_range, normalise};
    use super::*;

    #[test]
    fn seeds_are_exclusive_with_dots_and_inclusive_with_dots_equals() {
        assert_eq!(parse_seeds("1..20"), Ok((1, 20)));
        assert_eq!(parse_seeds("1..=20"), Ok((1, 21)));
        assert_eq!(parse_seeds("7"), Ok((7, 8)));
        assert!(parse_seeds("5..2").unwrap_err().contains("below the start"));
        assert!(parse_seeds("3..3").unwrap_err().contains("empty"));
    }

    #[test]
    fn ranges_expand_inclusively() {
        let t: toml::Table = toml::from_str("from = 0\nto = 500000\nstep = 250000").unwrap();
        let texts: Vec<String> = expand_range("x", &t).unwrap().into_iter().map(|v| v.text).collect();
        assert_eq!(texts, ["0", "250000", "500000"]);
        let t: toml::Table = toml::from_str("from = 0.1\nto = 0.3\nstep = 0.1").unwrap();
        let texts: Vec<String> = expand_range("x", &t).unwrap().into_iter().map(|v| v.text).collect();
        assert_eq!(texts, ["0.1", "0.2", "0.3"]);
        let t: toml::Table = toml::from_str("from = 5\nto = 1\nstep = 1").unwrap();
        assert!(expand_range("x", &t).unwrap_err().contains("empty"));
    }

    #[test]
    fn shards_come_from_kubernetes_or_slurm() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(Shard::from_env(env(&[("JOB_COMPLETION_INDEX", "2")]), Some(3)), Ok(Shard { index: 2, count: 3 }));
        assert_eq!(
            Shard::from_env(
                env(&[("SLURM_ARRAY_TASK_ID", "5"), ("SLURM_ARRAY_TASK_MIN", "4"), ("SLURM_ARRAY_TASK_COUNT", "3")]),
                None
            ),
            Ok(Shard { index: 1, count: 3 })
        );
        assert!(Shard::parse("3/3").unwrap_err().contains("below the count"));
    }

    #[test]
    fn normalise_folds_parent_dirs() {
        assert_eq!(
            normalise(Path::new("scenarios/sweeps/../split-brain.toml")),
            Path::new("scenarios/split-brain.toml")
        );
        assert_eq!(normalise(Path::new("../x.toml")), Path::new("../x.toml"));
    }
}
