//! Sweep plots (SVG): one metric against the x axis of the sweep, one line per combination of
//! the other axes' values, with its 95% band, and the safety-envelope boundary when the sweep
//! knows it (a clock drift, renew deadline or lease duration along x).

use super::stats::PointSummary;
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
        // Offsets are durations with a sign ("-60s").
        toml::Value::String(s) => match s.strip_prefix('-') {
            Some(magnitude) => sim_core::time::parse_duration(magnitude).ok().map(|n| -(n as f64) / 1e9),
            None => sim_core::time::parse_duration(&s).ok().map(|n| n as f64 / 1e9),
        },
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
    let zipped: Vec<bool> = (0..axes.len()).map(|i| sweep["grid"][i]["zipped_with_previous"] == true).collect();
    let x_group = zip_group(&zipped, x_index);
    let boundaries: Vec<(String, f64, String)> = sweep["plot"]["boundaries"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|b| {
                    let label = b["label"].as_str().unwrap_or("safety envelope").to_string();
                    Some((b["series"].as_str().unwrap_or("").to_string(), b["x"].as_f64()?, label))
                })
                .collect()
        })
        .unwrap_or_default();
    // Each plot is drawn beside its place and renamed into it when complete: a sweep's folder
    // is the user's (plots are drawn again over a finished sweep's on --resume), and an
    // interrupt must not leave a truncated plot where a whole one was.
    let whole = |file: &str, draw_to: &dyn Fn(&Path) -> Result<(), String>| -> Result<(), String> {
        let partial = dir.join(format!("{file}.partial"));
        draw_to(&partial)?;
        std::fs::rename(&partial, dir.join(file)).map_err(|e| format!("{}: {e}", dir.join(file).display()))
    };
    for figure in &figures {
        if summaries.iter().all(|s| (figure.value)(s).is_none()) {
            continue;
        }
        whole(figure.file, &|path| draw(path, figure, axes, x_index, &x_group, &boundaries, summaries))?;
    }
    // Two independent axes (a zipped pair counts as one): a heatmap of the lead axes.
    let leads: Vec<usize> = (0..axes.len()).filter(|&i| !zipped[i]).collect();
    if let (2, Some(x)) = (leads.len(), x_index) {
        let x_lead = zip_group(&zipped, Some(x))[0];
        let y_lead = if leads[0] == x_lead { leads[1] } else { leads[0] };
        whole("dual_probability_heatmap.svg", &|path| heatmap(path, axes, x_lead, y_lead, summaries))?;
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
    let root = SVGBackend::new(path, (W, 720)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let y_label_width = ys.iter().map(|v| width(v, LABEL)).max().unwrap_or(40) + 40;
    // Column labels wider than their column (library names) wrap at hyphens onto more lines,
    // drawn by hand under each column, rather than running into each other.
    let y_area = y_label_width.max(84);
    let cell = (W as i32 - 20 - 36 - y_area) / xs.len().max(1) as i32;
    let wrapped: Vec<Vec<String>> = xs.iter().map(|v| wrap_at_hyphens(v, cell - 10)).collect();
    let lines = wrapped.iter().map(Vec::len).max().unwrap_or(1);
    let by_hand = lines > 1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Fraction of runs with a dual-leader window (grey: none, red: all)",
            ("sans-serif", 24).into_font().style(FontStyle::Bold),
        )
        .margin(20)
        .margin_right(36)
        .x_label_area_size(70 + 22 * (lines as u32 - 1))
        .y_label_area_size(y_area as u32)
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
    let x_label = |v: &f64| if by_hand { String::new() } else { label(&xs, *v) };
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
        .label_style(("sans-serif", LABEL))
        .axis_desc_style(("sans-serif", LABEL + 1))
        .draw()
        .map_err(|x| e(&x))?;
    if by_hand {
        let top = Pos::new(HPos::Center, VPos::Top);
        for (i, parts) in wrapped.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64, -0.5));
            for (k, part) in parts.iter().enumerate() {
                let style = TextStyle::from(("sans-serif", LABEL).into_font()).color(&BLACK).pos(top);
                root.draw(&Text::new(part.clone(), (px, py + 10 + 22 * k as i32), style)).map_err(|x| e(&x))?;
            }
        }
    }
    let centre = Pos::new(HPos::Center, VPos::Center);
    for s in summaries {
        let cx = xs.iter().position(|v| *v == s.axis_values[x]).unwrap_or(0) as f64;
        let cy = ys.iter().position(|v| *v == s.axis_values[y]).unwrap_or(0) as f64;
        let f = s.dual_fraction.clamp(0.0, 1.0);
        // Light grey for none (so that cells read as cells), then pale to full red.
        let fill = if s.dual_runs == 0 {
            RGBColor(242, 242, 242)
        } else {
            let other = (235.0 * (1.0 - 0.85 * f)) as u8;
            RGBColor(255, other, other)
        };
        chart
            .draw_series(std::iter::once(Rectangle::new([(cx - 0.5, cy - 0.5), (cx + 0.5, cy + 0.5)], fill.filled())))
            .map_err(|x| e(&x))?;
        // White gutters between cells, so equal neighbours still read as separate cells.
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(cx - 0.5, cy - 0.5), (cx + 0.5, cy + 0.5)],
                WHITE.stroke_width(3),
            )))
            .map_err(|x| e(&x))?;
        let text = format!("{}/{}", s.dual_runs, s.n);
        let ink = if f > 0.55 { WHITE } else { BLACK };
        let style = TextStyle::from(("sans-serif", 22).into_font()).color(&ink).pos(centre);
        chart.draw_series(std::iter::once(Text::new(text, (cx, cy), style))).map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// `text` in lines of at most `max` pixels, broken after hyphens (a part longer than `max`
/// stays whole).
fn wrap_at_hyphens(text: &str, max: i32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for part in text.split_inclusive('-') {
        match lines.last_mut() {
            Some(line) if width(&format!("{line}{part}"), LABEL) <= max => line.push_str(part),
            _ => lines.push(part.to_string()),
        }
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// The name of the line a grid point belongs to: the other axes' values, by the last part of
/// their paths ("lease_duration=15s, algorithm=client-go"); empty with one axis.
pub fn series_label(axes: &[String], values: &[String], x_group: &[usize]) -> String {
    axes.iter()
        .zip(values)
        .enumerate()
        .filter(|(i, _)| !x_group.contains(i))
        .map(|(_, (a, v))| format!("{}={v}", a.rsplit('.').next().unwrap_or(a)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The axes that move together with axis `x` (its `[[zip]]` group, `zipped[i]` meaning axis i
/// moves with axis i − 1), by index; empty without an x axis.
pub fn zip_group(zipped: &[bool], x: Option<usize>) -> Vec<usize> {
    let Some(x) = x else { return Vec::new() };
    let mut lead = x;
    while lead > 0 && zipped[lead] {
        lead -= 1;
    }
    let mut end = lead + 1;
    while end < zipped.len() && zipped[end] {
        end += 1;
    }
    (lead..end).collect()
}

/// One line's marker, told apart by shape as well as colour (overlapping lines, greyscale).
#[derive(Clone, Copy)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Diamond,
}

const MARKERS: [Marker; 4] = [Marker::Circle, Marker::Triangle, Marker::Square, Marker::Diamond];

fn marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    kind: Marker,
    (x, y): (i32, i32),
    colour: RGBColor,
) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    let style = colour.filled();
    match kind {
        Marker::Circle => area.draw(&Circle::new((x, y), 5, style)).map_err(e),
        Marker::Triangle => {
            area.draw(&Polygon::new(vec![(x - 6, y + 5), (x + 6, y + 5), (x, y - 6)], style)).map_err(e)
        }
        Marker::Square => area.draw(&Rectangle::new([(x - 5, y - 5), (x + 5, y + 5)], style)).map_err(e),
        Marker::Diamond => {
            area.draw(&Polygon::new(vec![(x, y - 7), (x + 7, y), (x, y + 7), (x - 7, y)], style)).map_err(e)
        }
    }
}

/// A polyline drawn dashed (`dash` px on, `gap` off) or solid.
fn polyline<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    points: &[(i32, i32)],
    style: ShapeStyle,
    dashed: bool,
) -> Result<(), String> {
    let parts = if dashed { crate::report::dashes(points, 10.0, 6.0) } else { vec![points.to_vec()] };
    for part in parts {
        area.draw(&PathElement::new(part, style)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `text` with its width in the plot's font, for legends and tick labels that must not overlap.
fn width(text: &str, size: u32) -> i32 {
    crate::report::text_width_px(text, size)
}

/// A drift in ppm as the rate of that clock against true time: 250000 ppm runs 1.25× as fast.
fn rate_ratio(ppm: f64) -> String {
    let ratio = 1.0 + ppm / 1e6;
    let text = format!("{ratio:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}×")
}

const W: u32 = 1200;
const PLOT_H: u32 = 640;
const LABEL: u32 = 18;
const LEGEND_ROW: i32 = 30;

fn draw(
    path: &Path,
    figure: &Figure,
    axes: &[String],
    x_index: Option<usize>,
    x_group: &[usize],
    boundaries: &[(String, f64, String)],
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
        let label = series_label(axes, &s.axis_values, x_group);
        let point = (x_of(x_text), y, lo, hi);
        match lines.iter_mut().find(|l| l.label == label) {
            Some(l) => l.points.push(point),
            None => lines.push(Line { label, points: vec![point] }),
        }
    }
    for l in &mut lines {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    // Envelope lines only for the series drawn, and only on a numeric axis.
    let boundaries: Vec<(usize, f64, &str)> = if all_numeric {
        lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| boundaries.iter().find(|b| b.0 == l.label).map(|b| (i, b.1, b.2.as_str())))
            .collect()
    } else {
        Vec::new()
    };
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
    for &(_, bx, _) in &boundaries {
        x0 = x0.min(bx);
        x1 = x1.max(bx);
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    let pad = if all_numeric { ((x1 - x0) * 0.05).max(1e-9) } else { 0.5 };
    let (x0, x1) = if x0 == x1 && all_numeric { (x0 - 1.0, x1 + 1.0) } else { (x0 - pad, x1 + pad) };
    let y_max = lines.iter().flat_map(|l| l.points.iter().map(|p| p.3.max(p.1))).fold(0.0_f64, f64::max);
    let y1 = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };

    let x_axis = x_index.map(|i| axes[i].clone()).unwrap_or_default();
    let durations = x_texts.iter().all(|t| matches!(parse_value(t), toml::Value::String(_)));
    let drift = all_numeric && x_axis.ends_with("drift_ppm");
    let x_desc = if drift {
        format!("{x_axis} (clock rate ×, below)")
    } else if all_numeric && durations {
        format!("{x_axis} (seconds)")
    } else {
        x_axis.clone()
    };

    // The legend goes under the plot, off the data: one row per entry that fits.
    let mut legend: Vec<(Option<usize>, String)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (Some(i), if l.label.is_empty() { "all runs".to_string() } else { l.label.clone() }))
        .collect();
    for &(i, _, label) in &boundaries {
        let series = &lines[i].label;
        let text = if series.is_empty() || boundaries.len() == 1 {
            label.to_string()
        } else {
            format!("{label} (for {series})")
        };
        legend.push((None, text));
    }
    let mut placed: Vec<(i32, i32, usize)> = Vec::new();
    let (mut lx, mut row) = (80, 0);
    for (k, (_, text)) in legend.iter().enumerate() {
        let w = 44 + width(text, LABEL) + 30;
        if lx + w > W as i32 - 20 && lx > 80 {
            lx = 80;
            row += 1;
        }
        placed.push((lx, row, k));
        lx += w;
    }
    let rows = if legend.is_empty() { 0 } else { row + 1 };
    let height = PLOT_H as i32 + rows * LEGEND_ROW + 10;

    let root = SVGBackend::new(path, (W, height as u32)).into_drawing_area();
    let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let (plot_area, legend_area) = root.split_vertically(PLOT_H);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(figure.title, ("sans-serif", 24).into_font().style(FontStyle::Bold))
        .margin(20)
        .margin_right(36)
        .x_label_area_size(if drift { 92 } else { 66 })
        .y_label_area_size(84)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .x_desc(x_desc)
        .y_desc(figure.y_desc)
        .label_style(("sans-serif", LABEL))
        .axis_desc_style(("sans-serif", LABEL + 1))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(236, 236, 236))
        .draw()
        .map_err(|x| e(&x))?;

    // x ticks at the values swept, placed by value, each label only where it has room.
    let mut ticks: Vec<(f64, String)> = Vec::new();
    for t in &x_texts {
        let v = x_of(t);
        if !ticks.iter().any(|(x, _)| *x == v) {
            let label =
                if all_numeric && durations { numeric(t).map(number_text).unwrap_or_default() } else { t.to_string() };
            ticks.push((v, label));
        }
    }
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (_, y_bottom) = chart.backend_coord(&(x0, 0.0));
    let (_, y_top) = chart.backend_coord(&(x0, y1));
    let grid = RGBColor(236, 236, 236);
    let mut last_end = i32::MIN;
    for (v, label) in &ticks {
        let (px, _) = chart.backend_coord(&(*v, 0.0));
        plot_area
            .draw(&PathElement::new(vec![(px, y_top), (px, y_bottom)], grid.stroke_width(1)))
            .map_err(|x| e(&x))?;
        plot_area
            .draw(&PathElement::new(vec![(px, y_bottom), (px, y_bottom + 6)], BLACK.stroke_width(1)))
            .map_err(|x| e(&x))?;
        let half = width(label, LABEL).max(if drift { width(&rate_ratio(*v), LABEL) } else { 0 }) / 2;
        if px - half < last_end + 10 {
            continue;
        }
        last_end = px + half;
        let centre = Pos::new(HPos::Center, VPos::Top);
        let style = TextStyle::from(("sans-serif", LABEL).into_font()).pos(centre);
        plot_area.draw(&Text::new(label.clone(), (px, y_bottom + 10), style.clone())).map_err(|x| e(&x))?;
        if drift {
            let teal = TextStyle::from(("sans-serif", LABEL).into_font()).color(&RGBColor(0, 110, 110)).pos(centre);
            plot_area.draw(&Text::new(rate_ratio(*v), (px, y_bottom + 34), teal)).map_err(|x| e(&x))?;
        }
    }

    let red = RGBColor(214, 39, 40);
    for (i, line) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let mut band: Vec<(f64, f64)> = line.points.iter().map(|p| (p.0, p.3)).collect();
        band.extend(line.points.iter().rev().map(|p| (p.0, p.2)));
        chart.draw_series(std::iter::once(Polygon::new(band, colour.mix(0.14).filled()))).map_err(|x| e(&x))?;
    }
    // Each series' envelope in the series' colour, dashed red-edged so it reads as a boundary.
    for &(i, bx, _) in &boundaries {
        let colour = if boundaries.len() == 1 { red } else { COLOURS[i % COLOURS.len()] };
        let (px, _) = chart.backend_coord(&(bx, 0.0));
        polyline(&plot_area, &[(px, y_top), (px, y_bottom)], colour.stroke_width(2), true)?;
    }
    for (i, line) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let pixels: Vec<(i32, i32)> = line.points.iter().map(|p| chart.backend_coord(&(p.0, p.1))).collect();
        polyline(&plot_area, &pixels, colour.stroke_width(3), i % 2 == 1)?;
        for &p in &pixels {
            marker(&plot_area, MARKERS[i % MARKERS.len()], p, colour)?;
        }
    }

    for &(lx, row, k) in &placed {
        let y = row * LEGEND_ROW + 14;
        let (series, text) = &legend[k];
        match series {
            Some(i) => {
                let colour = COLOURS[i % COLOURS.len()];
                polyline(&legend_area, &[(lx, y), (lx + 36, y)], colour.stroke_width(3), i % 2 == 1)?;
                marker(&legend_area, MARKERS[i % MARKERS.len()], (lx + 18, y), colour)?;
            }
            None => {
                let i = boundaries.iter().position(|b| text.starts_with(b.2)).map(|b| boundaries[b].0).unwrap_or(0);
                let colour = if boundaries.len() == 1 { red } else { COLOURS[i % COLOURS.len()] };
                polyline(&legend_area, &[(lx + 18, y - 11), (lx + 18, y + 11)], colour.stroke_width(2), true)?;
            }
        }
        let style = TextStyle::from(("sans-serif", LABEL).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        legend_area.draw(&Text::new(text.clone(), (lx + 44, y), style)).map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// Whole numbers without a trailing ".0" (drift_ppm 250000, not 250000.0).
fn number_text(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{}", (x * 1e6).round() / 1e6) }
}
