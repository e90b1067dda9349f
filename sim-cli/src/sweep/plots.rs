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
    /// The label's values alone ("client-go"), under a legend heading naming the keys.
    values: String,
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
        let context = Context { axes, zipped: &zipped, x_index, x_group: &x_group, boundaries: &boundaries };
        whole(figure.file, &|path| draw(path, figure, &context, summaries))?;
    }
    // Two independent axes (a zipped pair counts as one): a heatmap of the lead axes.
    let leads: Vec<usize> = (0..axes.len()).filter(|&i| !zipped[i]).collect();
    if let (2, Some(x)) = (leads.len(), x_index) {
        let x_lead = zip_group(&zipped, Some(x))[0];
        let y_lead = if leads[0] == x_lead { leads[1] } else { leads[0] };
        let titles = (
            group_title(axes, &zip_group(&zipped, Some(x_lead))),
            group_title(axes, &zip_group(&zipped, Some(y_lead))),
        );
        whole("dual_probability_heatmap.svg", &|path| heatmap(path, &titles, x_lead, y_lead, summaries))?;
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
/// `titles`: the x and y axes' names (each with the axes zipped to it).
fn heatmap(
    path: &Path,
    titles: &(String, String),
    x: usize,
    y: usize,
    summaries: &[PointSummary],
) -> Result<(), String> {
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
        .x_desc(titles.0.as_str())
        .y_desc(titles.1.as_str())
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

/// The name of the line a grid point belongs to: the other axes' values, each by the shortest
/// end of its path that no other axis shares ("leader.algorithm=client-go", not "algorithm=…"
/// twice); a `[[zip]]` group whose values are all one is named once
/// ("follower-1.algorithm & follower-2.algorithm=client-go"). Empty with one axis.
pub fn series_label(axes: &[String], zipped: &[bool], values: &[String], x_group: &[usize]) -> String {
    label_of(&series_parts(axes, zipped, values, x_group))
}

/// `keys=value, …` of a series' parts.
fn label_of(parts: &[(String, String)]) -> String {
    parts.iter().map(|(keys, value)| format!("{keys}={value}")).collect::<Vec<_>>().join(", ")
}

/// [`series_label`]'s parts: (keys, value), in axis order.
fn series_parts(axes: &[String], zipped: &[bool], values: &[String], x_group: &[usize]) -> Vec<(String, String)> {
    let names = short_names(axes);
    let mut parts = Vec::new();
    let mut i = 0;
    while i < axes.len() {
        let group = zip_group(zipped, Some(i));
        i = group.last().map_or(i + 1, |last| last + 1);
        let group: Vec<usize> = group.into_iter().filter(|k| !x_group.contains(k)).collect();
        let Some(&first) = group.first() else { continue };
        if group.len() > 1 && group.iter().all(|&k| values[k] == values[first]) {
            let keys: Vec<&str> = group.iter().map(|&k| names[k].as_str()).collect();
            parts.push((keys.join(" & "), values[first].clone()));
        } else {
            parts.extend(group.iter().map(|&k| (names[k].clone(), values[k].clone())));
        }
    }
    parts
}

/// Each axis path cut to its shortest end (by dots) that no other axis ends with.
pub fn short_names(axes: &[String]) -> Vec<String> {
    let ends = |path: &str, n: usize| -> String {
        let parts: Vec<&str> = path.split('.').collect();
        parts[parts.len().saturating_sub(n)..].join(".")
    };
    axes.iter()
        .map(|a| {
            let depth = a.split('.').count();
            (1..=depth)
                .map(|n| ends(a, n))
                .find(|end| axes.iter().filter(|b| *b != a).all(|b| ends(b, end.split('.').count()) != *end))
                .unwrap_or_else(|| a.clone())
        })
        .collect()
}

/// An axis named with the axes zipped to it: "nodes.follower-1.algorithm & nodes.follower-2.algorithm".
fn group_title(axes: &[String], group: &[usize]) -> String {
    group.iter().map(|&k| axes[k].as_str()).collect::<Vec<_>>().join(" & ")
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
    Down,
}

const MARKERS: [Marker; 5] = [Marker::Circle, Marker::Triangle, Marker::Square, Marker::Diamond, Marker::Down];

/// Series `i`'s colour and marker: the colour cycles through the 8, the marker moves on by one
/// with each cycle, so the first 40 series each get a pair of their own.
fn style(i: usize) -> (RGBColor, Marker) {
    (COLOURS[i % COLOURS.len()], MARKERS[(i + i / COLOURS.len()) % MARKERS.len()])
}

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
        Marker::Down => area.draw(&Polygon::new(vec![(x - 6, y - 5), (x + 6, y - 5), (x, y + 6)], style)).map_err(e),
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

/// A legend entry: the keys the series are named by, a series, or series i's envelope line.
enum Entry {
    Heading,
    Series(usize),
    Boundary(usize),
}

/// What every figure of one sweep shares.
struct Context<'a> {
    axes: &'a [String],
    zipped: &'a [bool],
    x_index: Option<usize>,
    x_group: &'a [usize],
    boundaries: &'a [(String, f64, String)],
}

/// One figure: a line per series over a numeric x axis (with its band); over categories
/// (library names, versions) no line joins them: each series is a marker with its interval
/// as a bar, set side by side within the category so that none hides another.
fn draw(path: &Path, figure: &Figure, cx: &Context, summaries: &[PointSummary]) -> Result<(), String> {
    let Context { axes, zipped, x_index, x_group, boundaries } = *cx;
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
    // When every series has the same keys the legend names them once, above the values (a zip
    // group's keys are named together only where its values agree: then each series says its
    // own).
    let mut heading: Option<String> = None;
    let mut mixed_keys = false;
    for (s, x_text) in summaries.iter().zip(&x_texts) {
        let Some((y, lo, hi)) = (figure.value)(s) else { continue };
        let parts = series_parts(axes, zipped, &s.axis_values, x_group);
        let label = label_of(&parts);
        let point = (x_of(x_text), y, lo, hi);
        match lines.iter_mut().find(|l| l.label == label) {
            Some(l) => l.points.push(point),
            None => {
                let values = parts.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join(", ");
                lines.push(Line { label, values, points: vec![point] })
            }
        }
        let keys = parts.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(", ");
        match &heading {
            None => heading = Some(keys),
            Some(h) if *h != keys => mixed_keys = true,
            Some(_) => {}
        }
    }
    for l in &mut lines {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    // Over categories, series k sits at its own offset within each category's slot.
    let dodge = |k: usize| {
        if all_numeric || lines.len() < 2 {
            return 0.0;
        }
        let step = (0.8 / lines.len() as f64).min(0.15);
        (k as f64 - (lines.len() - 1) as f64 / 2.0) * step
    };
    // A series with the same values as one before it says so in the legend (on a numeric axis
    // it is drawn exactly over that one: series are drawn in order).
    let same_as: Vec<Option<usize>> = (0..lines.len())
        .map(|j| {
            (0..j).find(|&k| lines[k].points.iter().map(|p| (p.0, p.1)).eq(lines[j].points.iter().map(|p| (p.0, p.1))))
        })
        .collect();
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

    let x_axis = if x_index.is_some() { group_title(axes, x_group) } else { String::new() };
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
    let mut legend: Vec<(Entry, String)> = Vec::new();
    let heading = heading.filter(|h| !h.is_empty() && !mixed_keys);
    if let Some(h) = &heading {
        legend.push((Entry::Heading, format!("{h}:")));
    }
    let shown = |l: &Line| if heading.is_some() { l.values.clone() } else { l.label.clone() };
    for (i, l) in lines.iter().enumerate() {
        let name = if l.label.is_empty() { "all runs".to_string() } else { shown(l) };
        let text = match same_as[i] {
            Some(k) if all_numeric => format!("{name} (identical to {}: drawn over it)", shown(&lines[k])),
            Some(k) => format!("{name} (identical to {})", shown(&lines[k])),
            None => name,
        };
        legend.push((Entry::Series(i), text));
    }
    for &(i, _, label) in &boundaries {
        let series = &lines[i].label;
        let text = if series.is_empty() || boundaries.len() == 1 {
            label.to_string()
        } else {
            format!("{label} (for {series})")
        };
        legend.push((Entry::Boundary(i), text));
    }
    let mut placed: Vec<(i32, i32, usize)> = Vec::new();
    let (mut lx, mut row) = (80, 0);
    for (k, (entry, text)) in legend.iter().enumerate() {
        let key = if matches!(entry, Entry::Heading) { 0 } else { 44 };
        let w = key + width(text, LABEL) + 30;
        if lx + w > W as i32 - 20 && lx > 80 {
            lx = 80;
            row += 1;
        }
        placed.push((lx, row, k));
        lx += w;
    }
    let rows = if legend.is_empty() { 0 } else { row + 1 };

    // x tick labels: every value swept. Over categories each label wraps at its hyphens to the
    // width of its slot (a part wider than that stays whole); over numbers a label is drawn
    // only where it has room.
    let mut ticks: Vec<(f64, Vec<String>)> = Vec::new();
    let slot = (W as i32 - 20 - 36 - 84) / categories.len().max(1) as i32;
    for t in &x_texts {
        let v = x_of(t);
        if !ticks.iter().any(|(x, _)| *x == v) {
            let label = if all_numeric {
                vec![if durations { numeric(t).map(number_text).unwrap_or_default() } else { t.to_string() }]
            } else {
                wrap_at_hyphens(t, slot - 8)
            };
            ticks.push((v, label));
        }
    }
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let tick_lines = ticks.iter().map(|t| t.1.len()).max().unwrap_or(1) as i32;
    let plot_h = PLOT_H as i32 + 22 * (tick_lines - 1);
    let height = plot_h + rows * LEGEND_ROW + 10;

    let root = SVGBackend::new(path, (W, height as u32)).into_drawing_area();
    let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let (plot_area, legend_area) = root.split_vertically(plot_h as u32);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(figure.title, ("sans-serif", 24).into_font().style(FontStyle::Bold))
        .margin(20)
        .margin_right(36)
        .x_label_area_size(if drift { 92 } else { 66 + 22 * (tick_lines as u32 - 1) })
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

    let (_, y_bottom) = chart.backend_coord(&(x0, 0.0));
    let (_, y_top) = chart.backend_coord(&(x0, y1));
    let grid = RGBColor(236, 236, 236);
    let mut last_end = i32::MIN;
    for (v, label) in &ticks {
        let (px, _) = chart.backend_coord(&(*v, 0.0));
        // Over categories the grid line runs between slots, not through the markers.
        let (gx, _) = chart.backend_coord(&(if all_numeric { *v } else { *v - 0.5 }, 0.0));
        plot_area
            .draw(&PathElement::new(vec![(gx, y_top), (gx, y_bottom)], grid.stroke_width(1)))
            .map_err(|x| e(&x))?;
        plot_area
            .draw(&PathElement::new(vec![(px, y_bottom), (px, y_bottom + 6)], BLACK.stroke_width(1)))
            .map_err(|x| e(&x))?;
        let widest = label.iter().map(|l| width(l, LABEL)).max().unwrap_or(0);
        let half = widest.max(if drift { width(&rate_ratio(*v), LABEL) } else { 0 }) / 2;
        if all_numeric && px - half < last_end + 10 {
            continue;
        }
        last_end = px + half;
        let centre = Pos::new(HPos::Center, VPos::Top);
        let style = TextStyle::from(("sans-serif", LABEL).into_font()).pos(centre);
        for (k, part) in label.iter().enumerate() {
            let at = (px, y_bottom + 10 + 22 * k as i32);
            plot_area.draw(&Text::new(part.clone(), at, style.clone())).map_err(|x| e(&x))?;
        }
        if drift {
            let teal = TextStyle::from(("sans-serif", LABEL).into_font()).color(&RGBColor(0, 110, 110)).pos(centre);
            plot_area.draw(&Text::new(rate_ratio(*v), (px, y_bottom + 34), teal)).map_err(|x| e(&x))?;
        }
    }

    let red = RGBColor(214, 39, 40);
    if all_numeric {
        for (i, line) in lines.iter().enumerate() {
            let colour = style(i).0;
            let mut band: Vec<(f64, f64)> = line.points.iter().map(|p| (p.0, p.3)).collect();
            band.extend(line.points.iter().rev().map(|p| (p.0, p.2)));
            chart.draw_series(std::iter::once(Polygon::new(band, colour.mix(0.14).filled()))).map_err(|x| e(&x))?;
        }
    }
    // Each series' envelope in the series' colour, dashed red-edged so it reads as a boundary.
    for &(i, bx, _) in &boundaries {
        let colour = if boundaries.len() == 1 { red } else { style(i).0 };
        let (px, _) = chart.backend_coord(&(bx, 0.0));
        polyline(&plot_area, &[(px, y_top), (px, y_bottom)], colour.stroke_width(2), true)?;
    }
    for (i, line) in lines.iter().enumerate() {
        let (colour, mark) = style(i);
        let pixels: Vec<(i32, i32)> = line.points.iter().map(|p| chart.backend_coord(&(p.0 + dodge(i), p.1))).collect();
        if all_numeric {
            polyline(&plot_area, &pixels, colour.stroke_width(3), i % 2 == 1)?;
        } else {
            // The interval as a bar with caps, in place of the band.
            for p in &line.points {
                let (bx, top) = chart.backend_coord(&(p.0 + dodge(i), p.3));
                let (_, bottom) = chart.backend_coord(&(p.0 + dodge(i), p.2));
                if bottom - top >= 2 {
                    let bar = colour.mix(0.7).stroke_width(2);
                    for part in [
                        vec![(bx, top), (bx, bottom)],
                        vec![(bx - 4, top), (bx + 4, top)],
                        vec![(bx - 4, bottom), (bx + 4, bottom)],
                    ] {
                        plot_area.draw(&PathElement::new(part, bar)).map_err(|x| e(&x))?;
                    }
                }
            }
        }
        for &p in &pixels {
            marker(&plot_area, mark, p, colour)?;
        }
    }

    for &(lx, row, k) in &placed {
        let y = row * LEGEND_ROW + 14;
        let (entry, text) = &legend[k];
        let text_x = match *entry {
            Entry::Heading => lx,
            Entry::Series(i) => {
                let (colour, mark) = style(i);
                if all_numeric {
                    polyline(&legend_area, &[(lx, y), (lx + 36, y)], colour.stroke_width(3), i % 2 == 1)?;
                }
                marker(&legend_area, mark, (lx + 18, y), colour)?;
                lx + 44
            }
            Entry::Boundary(i) => {
                let colour = if boundaries.len() == 1 { red } else { style(i).0 };
                polyline(&legend_area, &[(lx + 18, y - 11), (lx + 18, y + 11)], colour.stroke_width(2), true)?;
                lx + 44
            }
        };
        let style = TextStyle::from(("sans-serif", LABEL).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        legend_area.draw(&Text::new(text.clone(), (text_x, y), style)).map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// Whole numbers without a trailing ".0" (drift_ppm 250000, not 250000.0).
fn number_text(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{}", (x * 1e6).round() / 1e6) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 33: 13 series got 8 styles, 5 pairs identical. The first 40 are all different.
    #[test]
    fn the_first_forty_series_each_have_a_style_of_their_own() {
        let styles: Vec<(RGBColor, usize)> = (0..40)
            .map(|i| {
                let (colour, mark) = style(i);
                (
                    colour,
                    MARKERS.iter().position(|m| std::mem::discriminant(m) == std::mem::discriminant(&mark)).unwrap(),
                )
            })
            .collect();
        for (i, a) in styles.iter().enumerate() {
            for (j, b) in styles.iter().enumerate().skip(i + 1) {
                assert!(a != b, "series {i} and {j} look alike");
            }
        }
    }

    #[test]
    fn axes_are_named_by_the_shortest_end_no_other_axis_shares() {
        let axes: Vec<String> = ["nodes.leader.algorithm", "nodes.follower-1.algorithm", "defaults.lease_duration"]
            .map(String::from)
            .into();
        assert_eq!(short_names(&axes), ["leader.algorithm", "follower-1.algorithm", "lease_duration"]);
        let zipped = [false, false, true];
        let axes: Vec<String> =
            ["defaults.lease_duration", "nodes.a.algorithm", "nodes.b.algorithm"].map(String::from).into();
        let same = ["15s", "fabric8", "fabric8"].map(String::from);
        assert_eq!(series_label(&axes, &zipped, &same, &[0]), "a.algorithm & b.algorithm=fabric8");
        let apart = ["15s", "fabric8", "nestjs"].map(String::from);
        assert_eq!(series_label(&axes, &zipped, &apart, &[0]), "a.algorithm=fabric8, b.algorithm=nestjs");
        assert_eq!(series_label(&axes, &zipped, &apart, &[1, 2]), "lease_duration=15s");
    }
}
