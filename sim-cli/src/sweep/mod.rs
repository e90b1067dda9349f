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

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn a_second_sweep_cannot_write_a_directory_that_one_is_writing() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock_out_dir(dir.path()).unwrap();
        let second = lock_out_dir(dir.path()).unwrap_err();
        assert!(second.0.contains("another leasesim sweep is writing"), "{}", second.0);
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
