//! Layout arithmetic shared by the plots: axis ticks, label lanes that never overlap, and how
//! durations read on a slide.

/// A tick step (seconds) from a fixed ladder of round numbers, giving at most `max_ticks`
/// intervals over `span_secs`.
pub(crate) fn tick_step(span_secs: f64, max_ticks: usize) -> f64 {
    const LADDER: [f64; 24] = [
        0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0,
        300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
    ];
    let max_ticks = max_ticks.max(1) as f64;
    LADDER.iter().copied().find(|step| span_secs / step <= max_ticks).unwrap_or(LADDER[LADDER.len() - 1])
}

/// Tick positions `0, step, 2·step, … ≤ span`.
pub(crate) fn ticks(span_secs: f64, step: f64) -> Vec<f64> {
    let count = (span_secs / step + 1e-9).floor() as u64;
    (0..=count).map(|k| k as f64 * step).collect()
}

/// A tick label with just enough decimals for `step`.
pub(crate) fn tick_label(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else if step >= 0.1 {
        1
    } else if step >= 0.01 {
        2
    } else {
        3
    };
    format!("{value:.decimals$}")
}

/// A length of time as it should read next to a shaded window: "2.3 s", "450 ms", "12 s".
pub(crate) fn human_seconds(secs: f64) -> String {
    if secs >= 10.0 {
        format!("{secs:.0} s")
    } else if secs >= 0.1 {
        format!("{secs:.1} s")
    } else if secs >= 0.001 {
        format!("{:.0} ms", secs * 1e3)
    } else {
        format!("{:.0} µs", secs * 1e6)
    }
}

/// A signed offset ("+120 s", "−1.5 s", "+350 ms").
pub(crate) fn signed_seconds(secs: f64) -> String {
    let sign = if secs < 0.0 { "−" } else { "+" };
    format!("{sign}{}", human_seconds(secs.abs()))
}

/// Stacks horizontal labels into lanes so that no two in one lane overlap: each label goes into
/// the first lane whose last label ends at least `gap` pixels before it starts.
pub(crate) struct LanePacker {
    right_edges: Vec<i32>,
    max_lanes: usize,
    gap: i32,
}

impl LanePacker {
    pub(crate) fn new(max_lanes: usize, gap: i32) -> LanePacker {
        LanePacker { right_edges: Vec::new(), max_lanes, gap }
    }

    /// The lane for a label covering `[x0, x1]`, or `None` when every lane is taken there (the
    /// caller leaves that label out rather than draw it over another).
    pub(crate) fn place(&mut self, x0: i32, x1: i32) -> Option<usize> {
        if let Some(lane) = self.right_edges.iter().position(|&edge| edge + self.gap <= x0) {
            self.right_edges[lane] = x1;
            return Some(lane);
        }
        if self.right_edges.len() < self.max_lanes {
            self.right_edges.push(x1);
            return Some(self.right_edges.len() - 1);
        }
        None
    }

    pub(crate) fn lanes_used(&self) -> usize {
        self.right_edges.len()
    }
}

/// Keeps only points at least `min_gap` pixels after the last kept one, so that dense markers
/// stay readable (input must be sorted).
pub(crate) fn thin_sorted(xs: impl IntoIterator<Item = i32>, min_gap: i32) -> Vec<i32> {
    let mut kept: Vec<i32> = Vec::new();
    for x in xs {
        if kept.last().is_none_or(|&last| x - last >= min_gap) {
            kept.push(x);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_step_picks_a_round_step_within_the_limit() {
        assert_eq!(tick_step(120.0, 12), 10.0);
        assert_eq!(tick_step(300.0, 12), 30.0);
        assert_eq!(tick_step(2.0, 10), 0.2);
        assert_eq!(ticks(120.0, 10.0).len(), 13);
    }

    #[test]
    fn lane_packer_never_puts_overlapping_labels_in_one_lane() {
        let mut p = LanePacker::new(2, 4);
        assert_eq!(p.place(0, 50), Some(0));
        assert_eq!(p.place(40, 90), Some(1));
        assert_eq!(p.place(60, 100), Some(0));
        assert_eq!(p.place(70, 120), None);
        assert_eq!(p.lanes_used(), 2);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_seconds(2.345), "2.3 s");
        assert_eq!(human_seconds(0.45), "0.5 s");
        assert_eq!(human_seconds(0.045), "45 ms");
        assert_eq!(human_seconds(25.0), "25 s");
        assert_eq!(signed_seconds(-120.0), "−120 s");
    }
}
