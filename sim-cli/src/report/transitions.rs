//! The transitions plot: leaseTransitions on the server (step line, top panel) and the number of
//! acting leaders (step line, bottom panel) over true time, dual-leader windows shaded in both.

use super::PlotMeta;
use super::canvas::{Canvas, MUTED, TEXT, render_png, render_svg};
use super::header::Header;
use super::layout::{human_seconds, tick_label, tick_step};
use super::timeline::{DUAL, LEADER, TRANSITION, transition_points};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;
use sim_core::time::{Nanos, as_secs_f64};
use sim_core::world::RunResult;

const WIDTH: u32 = 1600;
const HEIGHT: u32 = 720;

/// Renders the transitions plot as SVG text.
pub fn transitions_svg(r: &RunResult, meta: &PlotMeta) -> Result<String, String> {
    render_svg((WIDTH, HEIGHT), |area| draw(area, r, meta))
}

/// Renders the transitions plot as PNG bytes (same drawing as [`transitions_svg`]).
pub fn transitions_png(r: &RunResult, meta: &PlotMeta) -> Result<Vec<u8>, String> {
    render_png((WIDTH, HEIGHT), |area| draw(area, r, meta))
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

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &RunResult, meta: &PlotMeta) -> Result<(), String> {
    let c = Canvas { area: root };
    let header = Header::new(format!("{} — lease transitions and acting leaders", meta.scenario), meta, WIDTH);
    header.draw(&c)?;

    let end = r.duration.max(1);
    let span = as_secs_f64(end);
    let step = tick_step(span, 14);
    let transitions: Vec<(Nanos, i64)> = transition_points(r).into_iter().map(|(t, v)| (t, v as i64)).collect();
    let acting: Vec<(Nanos, i64)> = r.acting_series.iter().map(|&(t, n)| (t, n as i64)).collect();
    let max_transitions = transitions.iter().map(|&(_, v)| v).max().unwrap_or(0);
    let max_acting = acting.iter().map(|&(_, v)| v).max().unwrap_or(0);
    let dual_total: f64 = r.dual_windows.iter().map(|w| w.seconds()).sum();
    let dual_caption = match r.dual_windows.len() {
        0 => "no dual-leader time".to_string(),
        1 => format!("dual-leader time {} in 1 window", human_seconds(dual_total)),
        n => format!("dual-leader time {} in {n} windows", human_seconds(dual_total)),
    };

    let top = header.height + 6;
    let body = root.margin(top as u32, 10, 10, 30);
    let (upper, lower) = body.split_vertically((HEIGHT as i32 - top - 10) * 45 / 100);
    let panels = [
        (
            upper,
            "lease transitions",
            max_transitions.max(1) + 1,
            transitions,
            TRANSITION,
            format!("leaseTransitions at the end: {max_transitions}"),
        ),
        (lower, "acting leaders", max_acting.max(2) + 1, acting, LEADER, dual_caption),
    ];
    for (index, (area, y_desc, y_max, changes, color, caption)) in panels.into_iter().enumerate() {
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
            .label_style(("sans-serif", 18).into_font().color(&TEXT))
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
        if index == 1 {
            // The line every safe run stays at or under.
            chart
                .draw_series(LineSeries::new([(0.0, 1), (span, 1)], RGBColor(150, 150, 150).stroke_width(1)))
                .map_err(chart_err)?;
        }
        chart.draw_series(LineSeries::new(step_points(&changes, end), color.stroke_width(3))).map_err(chart_err)?;
        let (x_range, _) = area.get_pixel_range();
        let caption_x = x_range.start + 90;
        let caption_color = if index == 1 && !r.dual_windows.is_empty() { DUAL } else { MUTED };
        Canvas { area: &area }.text(&caption, caption_x - x_range.start, 14, 19, caption_color, HPos::Left, true)?;
    }
    Ok(())
}
