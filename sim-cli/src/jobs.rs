//! `--jobs` for `sweep` and `hunt`: worker threads, every core by default, at most
//! [`MAX_JOBS`] (each thread holds a whole world; 10,000 threads took 1.2 GB and 226 s for a
//! 32-run hunt, where the machine's cores would have done it in seconds).

use crate::error::CliError;

/// The most worker threads `--jobs` may ask for.
pub const MAX_JOBS: usize = 256;

/// The worker threads `--jobs` asks for (default: every core), refused at 0 or above
/// [`MAX_JOBS`].
pub fn resolve(flag: Option<usize>) -> Result<usize, CliError> {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    match flag.unwrap_or(cores) {
        0 => Err(CliError::input("--jobs must be at least 1")),
        n if n > MAX_JOBS => Err(CliError::input(format!(
            "--jobs {n}: at most {MAX_JOBS} worker threads (this machine has {cores} core(s); threads beyond \
             the cores do not finish sooner)"
        ))),
        n => Ok(n),
    }
}
