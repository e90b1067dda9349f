//! `--shard i/n`: which runs of a sweep one machine takes, so that n machines' outputs merge
//! into the sweep one machine would have written.

use serde_json::{Value, json};

/// Which runs this process does: `run % count == index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub fn new(index: usize, count: usize) -> Result<Shard, String> {
        if count == 0 {
            return Err("shard count must be at least 1".into());
        }
        if index >= count {
            return Err(format!("shard {index}/{count}: the index must be below the count (0..{count})"));
        }
        Ok(Shard { index, count })
    }

    /// `I/N`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text.split_once('/').ok_or_else(|| format!("--shard {text:?}: expected I/N, such as 0/4"))?;
        let num = |s: &str| s.trim().parse::<usize>().map_err(|_| format!("--shard {text:?}: {s:?} is not a number"));
        Shard::new(num(i)?, num(n)?)
    }

    /// From a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`, count from `--shard-count` or
    /// `LEASESIM_SHARD_COUNT`) or a Slurm array (`SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN`
    /// of `SLURM_ARRAY_TASK_COUNT`).
    pub fn from_env(env: impl Fn(&str) -> Option<String>, shard_count: Option<usize>) -> Result<Shard, String> {
        let num = |name: &str| -> Result<Option<usize>, String> {
            env(name)
                .map(|v| v.trim().parse::<usize>().map_err(|_| format!("{name}={v:?} is not a number")))
                .transpose()
        };
        if let Some(index) = num("JOB_COMPLETION_INDEX")? {
            let count = match shard_count {
                Some(c) => c,
                None => num("LEASESIM_SHARD_COUNT")?.ok_or(
                    "JOB_COMPLETION_INDEX is set but not the shard count: pass --shard-count N (the Job's completions)",
                )?,
            };
            return Shard::new(index, count);
        }
        if let Some(task) = num("SLURM_ARRAY_TASK_ID")? {
            let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let count =
                num("SLURM_ARRAY_TASK_COUNT")?.ok_or("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not")?;
            let index = task
                .checked_sub(min)
                .ok_or(format!("SLURM_ARRAY_TASK_ID {task} is below SLURM_ARRAY_TASK_MIN {min}"))?;
            return Shard::new(index, count);
        }
        Err("--shard-from-env: neither JOB_COMPLETION_INDEX (Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID is set"
            .into())
    }

    pub(super) fn json(&self, complete: bool, runs: usize) -> Value {
        json!({"shard": self.index, "of": self.count, "complete": complete, "runs": runs})
    }
}

/// A shard's runs, computed rather than listed so memory does not grow with the sweep.
pub(super) struct ShardRuns {
    shard: Shard,
    /// How many runs the shard has.
    pub(super) len: usize,
}

impl ShardRuns {
    pub(super) fn new(shard: Shard, total: usize) -> ShardRuns {
        ShardRuns { shard, len: total.saturating_sub(shard.index).div_ceil(shard.count) }
    }

    /// The run index of the shard's `k`-th run.
    pub(super) fn get(&self, k: usize) -> usize {
        self.shard.index + k * self.shard.count
    }
}
