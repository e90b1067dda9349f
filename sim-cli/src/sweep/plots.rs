//! Sweep plots (SVG): one metric against the x axis of the sweep, one line per combination of
//! the other axes' values, with its 95% band, and the safety-envelope boundary when the sweep
//! knows it (a clock drift, renew deadline or lease duration along x).

use super::PointSummary;
use crate::scenario_file::parse_value;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;
use std::path::Path;

/// The bundled font, shared with the run plots (no system fonts needed).
pub fn ensure_font() {
    crate::report::fonts::ensure_registered();
}

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(23, 190, 207),
];

/// A grid value as a number along x: numbers as they are, durations in seconds.
fn numeric(text: &str) -> Option<f64> {
    match parse_value(text) {
        toml::Value::Integer(i) => Some(i as f64),
        toml::Value::Float(f) => Some(f),
        toml::Value::String(s) => sim_core::time::parse_duration(&s).ok().map(|n| n as f64 / 1e9),
        _ => None,
    }
}

struct Line {
    label: String,
    /// (x, y, band low, band high)
    points: Vec<(f64, f64, f64, f64)>,
}

struct Figure<'a> {
    file: &'a str,
    title: &'a str,
    y_desc: &'a str,
    value: fn(&PointSummary) -> Option<(f64, f64, f64)>,
}

pub fn write_all(dir: &Path, sweep: &Value, axes: &[String], summaries: &[PointSummary]) -> Result<(), String> {
    ensure_font();
    let figures = [
        Figure {
            file: "dual_probability.svg",
            title: "Runs with a dual-leader window (Wilson 95% interval)",
            y_desc: "fraction of runs",
            value: |s| Some((s.dual_fraction, s.dual_wilson.0, s.dual_wilson.1)),
        },
        Figure {
            file: "dual_seconds.svg",
            title: "Dual-leader seconds per run (mean, 95% CI)",
            y_desc: "dual-leader seconds",
            value: |s| s.metrics.get("dual_leader_seconds").map(|m| (m.mean, m.ci95.0.max(0.0), m.ci95.1)),
        },
        Figure {
            file: "transitions_per_hour.svg",
            title: "leaseTransitions per hour (mean, 95% CI)",
            y_desc: "transitions per hour",
            value: |s| s.metrics.get("transitions_per_hour").map(|m| (m.mean, m.ci95.0.max(0.0), m.ci95.1)),
        },
    ];
    let x_path = sweep["plot"]["x"].as_str().map(String::from);
    let x_index = x_path.as_ref().and_then(|x| axes.iter().position(|a| a == x));
    let boundary = sweep["plot"]["boundary"]["x"]
        .as_f64()
        .map(|x| (x, sweep["plot"]["boundary"]["label"].as_str().unwrap_or("safety envelope").to_string()));
    for figure in &figures {
        if summaries.iter().all(|s| (figure.value)(s).is_none()) {
            continue;
        }
        draw(&dir.join(figure.file), figure, axes, x_index, boundary.as_ref(), summaries)?;
    }
    if let (2, Some(x)) = (axes.len(), x_index) {
        heatmap(&dir.join("dual_probability_heatmap.svg"), axes, x, 1 - x, summaries)?;
    }
    Ok(())
}

/// The distinct values of one axis, in grid order.
fn distinct(summaries: &[PointSummary], axis: usize) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for s in summaries {
        if !out.contains(&s.axis_values[axis].as_str()) {
            out.push(&s.axis_values[axis]);
        }
    }
    out
}

/// Two axes: the fraction of runs with dual leaders per cell, white (none) to red (all).
fn heatmap(path: &Path, axes: &[String], x: usize, y: usize, summaries: &[PointSummary]) -> Result<(), String> {
    let (xs, ys) = (distinct(summaries, x), distinct(summaries, y));
    let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Fraction of runs with a dual-leader window", ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5..xs.len() as f64 - 0.5, -0.5..ys.len() as f64 - 0.5)
        .map_err(|x| e(&x))?;
    let label = |values: &[&str], v: f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            values.get(i as usize).map(|c| c.to_string()).unwrap_or_default()
        } else {
            String::new()
        }
    };
    let x_label = |v: &f64| label(&xs, *v);
    let y_label = |v: &f64| label(&ys, *v);
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(axes[x].as_str())
        .y_desc(axes[y].as_str())
        .x_labels(xs.len() * 2 + 1)
        .y_labels(ys.len() * 2 + 1)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(|x| e(&x))?;
    let centre = Pos::new(HPos::Center, VPos::Center);
    for s in summaries {
        let cx = xs.iter().position(|v| *v == s.axis_values[x]).unwrap_or(0) as f64;
        let cy = ys.iter().position(|v| *v == s.axis_values[y]).unwrap_or(0) as f64;
        let f = s.dual_fraction.clamp(0.0, 1.0);
        let fill = RGBColor(255, (255.0 * (1.0 - 0.85 * f)) as u8, (255.0 * (1.0 - 0.85 * f)) as u8);
        chart
            .draw_series(std::iter::once(Rectangle::new([(cx - 0.5, cy - 0.5), (cx + 0.5, cy + 0.5)], fill.filled())))
            .map_err(|x| e(&x))?;
        let text = format!("{}/{}", s.dual_runs, s.n);
        let style = TextStyle::from(("sans-serif", 14).into_font()).pos(centre);
        chart.draw_series(std::iter::once(Text::new(text, (cx, cy), style))).map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

fn draw(
    path: &Path,
    figure: &Figure,
    axes: &[String],
    x_index: Option<usize>,
    boundary: Option<&(f64, String)>,
    summaries: &[PointSummary],
) -> Result<(), String> {
    let x_texts: Vec<&str> =
        summaries.iter().map(|s| x_index.map(|i| s.axis_values[i].as_str()).unwrap_or("all")).collect();
    let all_numeric = x_index.is_some() && x_texts.iter().all(|t| numeric(t).is_some());
    let mut categories: Vec<&str> = Vec::new();
    for t in &x_texts {
        if !categories.contains(t) {
            categories.push(t);
        }
    }
    let x_of = |t: &str| {
        if all_numeric {
            numeric(t).unwrap_or(0.0)
        } else {
            categories.iter().position(|c| *c == t).unwrap_or(0) as f64
        }
    };
    let mut lines: Vec<Line> = Vec::new();
    for (s, x_text) in summaries.iter().zip(&x_texts) {
        let Some((y, lo, hi)) = (figure.value)(s) else { continue };
        let label = axes
            .iter()
            .zip(&s.axis_values)
            .enumerate()
            .filter(|(i, _)| Some(*i) != x_index)
            .map(|(_, (a, v))| format!("{}={v}", a.rsplit('.').next().unwrap_or(a)))
            .collect::<Vec<_>>()
            .join(", ");
        let point = (x_of(x_text), y, lo, hi);
        match lines.iter_mut().find(|l| l.label == label) {
            Some(l) => l.points.push(point),
            None => lines.push(Line { label, points: vec![point] }),
        }
    }
    for l in &mut lines {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
    if let Some((bx, _)) = boundary.filter(|_| all_numeric) {
        x0 = x0.min(*bx);
        x1 = x1.max(*bx);
    }
    let pad = if all_numeric { ((x1 - x0) * 0.05).max(1e-9) } else { 0.5 };
    let (x0, x1) = if x0 == x1 && all_numeric { (x0 - 1.0, x1 + 1.0) } else { (x0 - pad, x1 + pad) };
    let y_max = lines.iter().flat_map(|l| l.points.iter().map(|p| p.3.max(p.1))).fold(0.0_f64, f64::max);
    let y1 = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };

    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(figure.title, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(|x| e(&x))?;
    let durations = x_texts.iter().all(|t| matches!(parse_value(t), toml::Value::String(_)));
    let x_desc =
        x_index.map(|i| axes[i].clone()).unwrap_or_default() + if all_numeric && durations { " (seconds)" } else { "" };
    // Whole numbers without a trailing ".0" (drift_ppm 250000, not 250000.0).
    let number_label =
        |x: &f64| if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{}", (x * 1e6).round() / 1e6) };
    let category_label = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            categories.get(i as usize).map(|c| c.to_string()).unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_desc).y_desc(figure.y_desc).label_style(("sans-serif", 13));
    if all_numeric {
        mesh.x_label_formatter(&number_label);
    } else {
        mesh.x_labels(categories.len() * 2 + 1).x_label_formatter(&category_label);
    }
    mesh.draw().map_err(|x| e(&x))?;
    for (i, line) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let mut band: Vec<(f64, f64)> = line.points.iter().map(|p| (p.0, p.3)).collect();
        band.extend(line.points.iter().rev().map(|p| (p.0, p.2)));
        chart.draw_series(std::iter::once(Polygon::new(band, colour.mix(0.18).filled()))).map_err(|x| e(&x))?;
        let label = if line.label.is_empty() { "all runs".to_string() } else { line.label.clone() };
        chart
            .draw_series(LineSeries::new(line.points.iter().map(|p| (p.0, p.1)), colour.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
        chart
            .draw_series(line.points.iter().map(|p| Circle::new((p.0, p.1), 3, colour.filled())))
            .map_err(|x| e(&x))?;
    }
    if let Some((bx, label)) = boundary.filter(|_| all_numeric) {
        let red = RGBColor(214, 39, 40);
        chart
            .draw_series(LineSeries::new([(*bx, 0.0), (*bx, y1)], red.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
