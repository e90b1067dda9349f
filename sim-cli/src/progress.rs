//! Progress on a terminal: a bar with an ETA on stderr for anything that takes more than about a
//! second, and nothing at all when stderr is a pipe or a file (logs and scripts stay clean).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How long work runs silently before a bar appears.
const GRACE: Duration = Duration::from_millis(1000);

/// The progress of one run, fed with (simulated time, duration, events so far).
pub struct RunProgress {
    started: Instant,
    bar: Option<indicatif::ProgressBar>,
    enabled: bool,
}

impl RunProgress {
    /// `quiet`: never show anything.
    pub fn new(quiet: bool) -> RunProgress {
        RunProgress { started: Instant::now(), bar: None, enabled: !quiet && std::io::stderr().is_terminal() }
    }

    pub fn update(&mut self, t: u64, duration: u64, events: u64) {
        if !self.enabled || self.started.elapsed() < GRACE {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(duration / 1_000_000_000);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:32}] {pos}/{len} simulated s  {msg}  ETA {eta}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        bar.set_position(t / 1_000_000_000);
        bar.set_message(format!("{} events", crate::format::group_digits(events)));
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A bar over `total` runs (sweeps), starting at `done`; hidden when quiet or not a terminal.
pub fn runs_bar(total: usize, done: usize, quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total as u64);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:32}] {pos}/{len} runs  {per_sec}  ETA {eta}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_position(done as u64);
    bar
}
