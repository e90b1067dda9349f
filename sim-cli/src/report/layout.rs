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
    // One rule from 0.1 s up (issue 33: "14 s" for 13.516 beside "9.2 s" for 9.180): one
    // decimal, a trailing ".0" dropped; whole seconds from 1000 s.
    if secs >= 999.95 {
        format!("{secs:.0} s")
    } else if secs >= 0.095 {
        let text = format!("{secs:.1}");
        format!("{} s", text.strip_suffix(".0").unwrap_or(&text))
    } else if secs >= 0.001 {
        format!("{:.0} ms", secs * 1e3)
    } else {
        format!("{:.0} µs", secs * 1e6)
    }
}

/// A signed offset ("+120 s", "−1.5 s", "+350 ms").
pub(crate) fn signed_seconds(secs: f64) -> String {
    if secs == 0.0 {
        return "0 s".to_string();
    }
    let sign = if secs < 0.0 { "−" } else { "+" };
    format!("{sign}{}", human_seconds(secs.abs()))
}

/// Stacks labels into lanes above the plot so that no two texts overlap. Each label covers
/// `[x0, x1]` in its lane and hangs a vertical leader line at `anchor` down through every lane
/// below it. A label goes into the first lane where its text meets no other text and no leader
/// line crosses any text; failing that, into the first lane where only texts are apart (the
/// plot draws labels on a white backing, so a line there passes behind a label, not through it).
pub(crate) struct LanePacker {
    /// `(lane, x0, x1, anchor)` of each placed label.
    placed: Vec<(usize, i32, i32, i32)>,
    max_lanes: usize,
    gap: i32,
}

impl LanePacker {
    pub(crate) fn new(max_lanes: usize, gap: i32) -> LanePacker {
        LanePacker { placed: Vec::new(), max_lanes, gap }
    }

    /// The lane for a label, or `None` when no lane has room for its text (the caller leaves
    /// that label out rather than draw it over another).
    pub(crate) fn place(&mut self, x0: i32, x1: i32, anchor: i32) -> Option<usize> {
        let gap = self.gap;
        let text_apart = |lane: usize| {
            self.placed.iter().filter(|p| p.0 == lane).all(|&(_, a0, a1, _)| a1 + gap <= x0 || x1 + gap <= a0)
        };
        let no_line_crosses_text = |lane: usize| {
            self.placed.iter().all(|&(l, a0, a1, a_anchor)| {
                if l < lane {
                    // Its leader line runs down through this lane.
                    a_anchor < x0 - 3 || a_anchor > x1 + 3
                } else if l > lane {
                    // Our leader line runs down through its lane.
                    anchor < a0 - 3 || anchor > a1 + 3
                } else {
                    true
                }
            })
        };
        let lane = (0..self.max_lanes)
            .find(|&lane| text_apart(lane) && no_line_crosses_text(lane))
            .or_else(|| (0..self.max_lanes).find(|&lane| text_apart(lane)))?;
        self.placed.push((lane, x0, x1, anchor));
        Some(lane)
    }

    pub(crate) fn lanes_used(&self) -> usize {
        self.placed.iter().map(|&(lane, ..)| lane + 1).max().unwrap_or(0)
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
        let mut p = LanePacker::new(3, 4);
        assert_eq!(p.place(0, 50, 0), Some(0));
        assert_eq!(p.place(40, 90, 40), Some(1));
        // Lane 0 has room for the text, but its leader line would cross lane 1's text.
        assert_eq!(p.place(60, 100, 60), Some(2));
        // No lane is free of crossings; lane 0 at least keeps the texts apart.
        assert_eq!(p.place(95, 130, 95), Some(0));
        // No lane has room for the text at all.
        assert_eq!(p.place(45, 80, 45), None);
        assert_eq!(p.place(200, 250, 200), Some(0));
        assert_eq!(p.lanes_used(), 3);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_seconds(2.345), "2.3 s");
        assert_eq!(human_seconds(0.45), "0.5 s");
        assert_eq!(human_seconds(0.045), "45 ms");
        assert_eq!(human_seconds(25.0), "25 s");
        assert_eq!(human_seconds(13.516), "13.5 s");
        assert_eq!(human_seconds(9.180), "9.2 s");
        assert_eq!(human_seconds(1234.7), "1235 s");
        assert_eq!(signed_seconds(-120.0), "−120 s");
    }
}
