//! The transitions plot: leaseTransitions on the server (step line, top panel) and the number of
//! acting leaders (step line, bottom panel) over true time, dual-leader windows shaded in both.

use super::PlotMeta;
use super::canvas::Rgb;
use super::canvas::{Canvas, MUTED, TEXT, render_png, render_svg};
use super::header::Header;
use super::layout::{human_seconds, tick_label, tick_step};
use super::timeline::{
    DUAL, LEADER, MAX_SHOWN_LEASES, TRANSITION, acting_by_lease, lease_transition_points, shown_leases,
};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;
use sim_core::time::{Nanos, as_secs_f64};
use sim_core::world::RunResult;
use std::collections::HashMap;

const WIDTH: u32 = 1200;
const HEIGHT: u32 = 720;

/// Renders the transitions plot as SVG text.
pub fn transitions_svg(r: &RunResult, meta: &PlotMeta) -> Result<String, String> {
    render_svg((WIDTH, height(r)), |area| draw(area, r, meta))
}

/// Renders the transitions plot as PNG bytes (same drawing as [`transitions_svg`]).
pub fn transitions_png(r: &RunResult, meta: &PlotMeta) -> Result<Vec<u8>, String> {
    render_png((WIDTH, height(r)), |area| draw(area, r, meta))
}

fn chart_err<E: std::fmt::Display>(e: E) -> String {
    format!("drawing failed: {e}")
}

/// A step line through `(t, value)` changes, held until `end`.
fn step_points(changes: &[(Nanos, i64)], end: Nanos) -> Vec<(f64, i64)> {
    let mut points = Vec::with_capacity(changes.len() * 2 + 2);
    let mut current = 0;
    points.push((0.0, current));
    for &(t, value) in changes {
        let x = as_secs_f64(t.min(end));
        points.push((x, current));
        points.push((x, value));
        current = value;
    }
    points.push((as_secs_f64(end), current));
    points
}

/// Colours and dash patterns told apart on a projector and in greyscale: one per Lease, in the
/// order the Leases were first used.
const SERIES: [(Rgb, bool); 6] = [
    (TRANSITION, false),
    (RGBColor(230, 85, 13), true),
    (RGBColor(117, 107, 177), false),
    (RGBColor(140, 86, 75), true),
    (RGBColor(23, 160, 180), false),
    (RGBColor(90, 90, 90), true),
];

/// One Lease's two step lines.
struct Series {
    name: String,
    /// The Lease's name without its namespace, for captions.
    short: String,
    transitions: Vec<(Nanos, i64)>,
    acting: Vec<(Nanos, i64)>,
    color: Rgb,
    dashed: bool,
}

/// The Leases' series the plot draws (at most `MAX_SHOWN_LEASES`, as the timeline), and how
/// many Leases the run had.
fn series(r: &RunResult, meta: &PlotMeta) -> (Vec<Series>, usize) {
    let leases = lease_transition_points(r);
    let total = leases.len();
    let shown = shown_leases(r, &leases);
    let leases: Vec<_> = leases.into_iter().zip(shown).filter_map(|(lease, shown)| shown.then_some(lease)).collect();
    let several = total > 1;
    // Looked up per Lease: maps, not a search of every Lease (a fleet has thousands).
    let group_of = super::groups_by_key(&meta.leases);
    let mut acting_of = if several { acting_by_lease(r) } else { HashMap::new() };
    let all = leases
        .into_iter()
        .enumerate()
        .map(|(i, (key, points))| {
            let (color, dashed) = SERIES[i % SERIES.len()];
            let name = match group_of.get(key.as_str()) {
                Some(g) => format!("{key} ({})", g.label),
                None => key.clone(),
            };
            // One Lease: the run-wide series, exact even for results built by hand.
            let acting = if several {
                acting_of.remove(key.as_str()).unwrap_or_default()
            } else {
                r.acting_series.iter().map(|&(t, n)| (t, n as i64)).collect()
            };
            Series {
                short: key.rsplit('/').next().unwrap_or(&key).to_string(),
                name,
                transitions: points.into_iter().map(|(t, v)| (t, v as i64)).collect(),
                acting,
                color,
                dashed,
            }
        })
        .collect();
    (all, total)
}

/// Pixel path of a dashed polyline: `dash` on, `gap` off, carried across corners.
pub(crate) fn dashes(points: &[(i32, i32)], dash: f64, gap: f64) -> Vec<Vec<(i32, i32)>> {
    let mut out: Vec<Vec<(i32, i32)>> = Vec::new();
    let mut on = true;
    let mut left = dash;
    let mut current: Vec<(i32, i32)> = points.first().map(|&p| vec![p]).unwrap_or_default();
    for pair in points.windows(2) {
        let (a, b) = ((pair[0].0 as f64, pair[0].1 as f64), (pair[1].0 as f64, pair[1].1 as f64));
        let length = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let mut done = 0.0;
        while length - done > left {
            done += left;
            let p = (a.0 + (b.0 - a.0) * done / length, a.1 + (b.1 - a.1) * done / length);
            let p = (p.0.round() as i32, p.1.round() as i32);
            if on {
                if current.last() != Some(&p) {
                    current.push(p);
                }
                out.push(std::mem::take(&mut current));
            } else {
                current = vec![p];
            }
            on = !on;
            left = if on { dash } else { gap };
        }
        left -= length - done;
        if on {
            current.push(pair[1]);
        }
    }
    if on && current.len() > 1 {
        out.push(current);
    }
    out
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &RunResult, meta: &PlotMeta) -> Result<(), String> {
    let c = Canvas { area: root };
    let header = Header::new(format!("{} — lease transitions and acting leaders", meta.scenario), meta, WIDTH);
    header.draw(&c)?;

    let end = r.duration.max(1);
    let span = as_secs_f64(end);
    let step = tick_step(span, 14);
    let (all, total) = series(r, meta);
    let several = all.len() > 1;
    let max_transitions = all.iter().flat_map(|s| s.transitions.iter().map(|&(_, v)| v)).max().unwrap_or(0);
    let max_acting = all.iter().flat_map(|s| s.acting.iter().map(|&(_, v)| v)).max().unwrap_or(0);
    let dual_total: f64 = r.dual_windows.iter().map(|w| w.seconds()).sum();
    let dual_caption = match r.dual_windows.len() {
        0 => "no dual-leader time".to_string(),
        1 => format!("dual-leader time {} in 1 window", human_seconds(dual_total)),
        n => format!("dual-leader time {} in {n} windows", human_seconds(dual_total)),
    };
    let final_value = |s: &Series| s.transitions.last().map(|&(_, v)| v).unwrap_or(0);
    let transitions_caption = if several {
        let each: Vec<String> = all.iter().map(|s| format!("{} {}", s.short, final_value(s))).collect();
        let of = if all.len() < total {
            format!(
                " ({} of {} Leases, those with two leaders first)",
                all.len(),
                crate::format::group_digits(total as u64)
            )
        } else {
            String::new()
        };
        format!("leaseTransitions at the end: {}{of}", each.join(" · "))
    } else {
        format!("leaseTransitions at the end: {max_transitions}")
    };

    // With several Leases the key sits between the header and the panels, off the data.
    let key_rows = if several { all.len() as i32 } else { 0 };
    let key_top = header.height + 4;
    for (i, s) in all.iter().enumerate().filter(|_| several) {
        let y = key_top + i as i32 * 28 + 12;
        let swatch = vec![(110, y), (150, y)];
        if s.dashed {
            for part in dashes(&swatch, 9.0, 5.0) {
                c.line(part, s.color.to_rgba(), 3)?;
            }
        } else {
            c.line(swatch, s.color.to_rgba(), 3)?;
        }
        c.text(&s.name, 160, y, 19, TEXT, HPos::Left, false)?;
    }
    let height = HEIGHT as i32 + key_rows * 28;
    let top = header.height + 6 + key_rows * 28;
    let body = root.margin(top as u32, 10, 10, 30);
    let (upper, lower) = body.split_vertically((height - top - 10) * 45 / 100);
    let panels = [
        (upper, "lease transitions", max_transitions.max(1) + 1, transitions_caption),
        (lower, "acting leaders", max_acting.max(2) + 1, dual_caption),
    ];
    for (index, (area, y_desc, y_max, caption)) in panels.into_iter().enumerate() {
        let last = index == 1;
        let mut chart = ChartBuilder::on(&area)
            .margin_top(30)
            .margin_right(30)
            .x_label_area_size(if last { 66 } else { 32 })
            .y_label_area_size(90)
            .build_cartesian_2d(0f64..span, 0i64..y_max)
            .map_err(chart_err)?;
        let y_ticks = (y_max + 1).min(8) as usize;
        chart
            .configure_mesh()
            .x_labels(((span / step).round() as usize + 1).max(2))
            .x_label_formatter(&|v| tick_label(*v, step))
            .y_labels(y_ticks)
            .y_label_formatter(&|v| v.to_string())
            .x_desc(if last { "true time (s)" } else { "" })
            .y_desc(y_desc)
            .label_style(("sans-serif", 19).into_font().color(&TEXT))
            .axis_desc_style(("sans-serif", 19).into_font().color(&TEXT))
            .light_line_style(TRANSPARENT)
            .bold_line_style(RGBColor(222, 222, 222))
            .draw()
            .map_err(chart_err)?;
        chart
            .draw_series(r.dual_windows.iter().map(|w| {
                let (x0, x1) = (as_secs_f64(w.from), as_secs_f64(w.until.max(w.from)));
                Rectangle::new([(x0, 0), (x1, y_max)], DUAL.mix(0.2).filled())
            }))
            .map_err(chart_err)?;
        if last {
            // The line every safe election stays at or under.
            chart
                .draw_series(LineSeries::new([(0.0, 1), (span, 1)], RGBColor(150, 150, 150).stroke_width(1)))
                .map_err(chart_err)?;
        }
        for s in &all {
            let changes = if last { &s.acting } else { &s.transitions };
            let color = if several || !last { s.color } else { LEADER };
            let points = step_points(changes, end);
            if s.dashed {
                let pixels: Vec<(i32, i32)> = points.iter().map(|&p| chart.backend_coord(&p)).collect();
                for part in dashes(&pixels, 12.0, 7.0) {
                    root.draw(&PathElement::new(part, color.stroke_width(3))).map_err(chart_err)?;
                }
            } else {
                chart.draw_series(LineSeries::new(points, color.stroke_width(3))).map_err(chart_err)?;
            }
        }
        let (x_range, _) = area.get_pixel_range();
        let caption_x = x_range.start + 90;
        let caption_color = if last && !r.dual_windows.is_empty() { DUAL } else { MUTED };
        Canvas { area: &area }.text(&caption, caption_x - x_range.start, 14, 19, caption_color, HPos::Left, true)?;
    }
    Ok(())
}

/// The plot's height: taller by one key line per Lease when there are several.
pub(crate) fn height(r: &RunResult) -> u32 {
    // One key row per Lease drawn (at most `MAX_SHOWN_LEASES`).
    let leases = lease_transition_points(r).len().min(MAX_SHOWN_LEASES);
    HEIGHT + if leases > 1 { leases as u32 * 28 } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::dashes;

    #[test]
    fn dashes_alternate_and_carry_across_corners() {
        let parts = dashes(&[(0, 0), (20, 0), (20, 20)], 8.0, 4.0);
        // On 0–8, off 8–12, on 12–20 (ending at the corner), off 0–4 down, on 4–12, off, on 16–20.
        assert_eq!(
            parts,
            vec![vec![(0, 0), (8, 0)], vec![(12, 0), (20, 0)], vec![(20, 4), (20, 12)], vec![(20, 16), (20, 20)]]
        );
    }
}
