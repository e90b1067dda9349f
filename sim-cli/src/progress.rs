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
            // At most about 66 columns (an 80-column terminal): the simulated share, not its
            // seconds, which run to eight digits for a long run.
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:20}] {percent:>3}% simulated  {msg}  ETA {eta}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        bar.set_position(t / 1_000_000_000);
        bar.set_message(compact_events(events));
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// An event count in at most 12 characters: `812 events`, `45.2 k events`, `1.3 G events`.
fn compact_events(events: u64) -> String {
    match events {
        0..1_000 => format!("{events} events"),
        1_000..1_000_000 => format!("{:.1} k events", events as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} M events", events as f64 / 1e6),
        _ => format!("{:.1} G events", events as f64 / 1e9),
    }
}

/// A bar over `total` runs (sweeps), starting at `done`; hidden when quiet or not a terminal.
pub fn runs_bar(total: usize, done: usize, quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{elapsed_precise} [{bar:20}] {pos}/{len} runs  {per_sec:.1}  ETA {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_position(done as u64);
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run bar's line fits an 80-column terminal at its widest: a 366-day run's 99 %, a
    /// billion events, an ETA in weeks.
    #[test]
    fn the_run_bar_fits_80_columns() {
        assert_eq!(compact_events(812), "812 events");
        assert_eq!(compact_events(45_230), "45.2 k events");
        assert_eq!(compact_events(999_999_999), "1000.0 M events");
        let widest = format!(
            "{} [{}] {:>3}% simulated  {}  ETA {}",
            "00:00:00",
            "=".repeat(20),
            100,
            compact_events(999_999_999),
            "52w 6d"
        );
        assert!(widest.chars().count() <= 80, "{} columns: {widest}", widest.chars().count());
    }
}
