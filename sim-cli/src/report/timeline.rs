//! The timeline: one row per node over true time, showing what each node was (down, candidate,
//! acting leader), what was done to it (paused, partitioned, faults), what it saw (failed
//! renewals, 409s) and, where clocks differ, how far its wall clock was from true time. Every
//! dual-leader window is shaded across all rows and labelled with its length.

use super::PlotMeta;
use super::canvas::{Canvas, GRID, MUTED, Rgb, TEXT, render_png, render_svg, text_width};
use super::header::Header;
use super::layout::{LanePacker, human_seconds, signed_seconds, thin_sorted, tick_label, tick_step, ticks};
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;
use sim_core::elector::Note;
use sim_core::time::{Nanos, as_secs_f64};
use sim_core::trace::TraceKind;
use sim_core::world::{RunResult, Span, SpanKind};
use std::collections::HashMap;

const WIDTH: u32 = 1200;

pub(crate) const CANDIDATE: Rgb = RGBColor(189, 215, 238);
pub(crate) const LEADER: Rgb = RGBColor(35, 139, 69);
pub(crate) const DOWN: Rgb = RGBColor(115, 115, 115);
pub(crate) const PAUSED: Rgb = RGBColor(255, 170, 0);
pub(crate) const PARTITIONED: Rgb = RGBColor(117, 60, 170);
pub(crate) const DUAL: Rgb = RGBColor(214, 39, 40);
pub(crate) const TRANSITION: Rgb = RGBColor(31, 119, 180);
const FAILED_RENEWAL: Rgb = RGBColor(200, 20, 20);
const LEASE_CONFLICT: Rgb = RGBColor(230, 110, 0);
const WRITE_CONFLICT: Rgb = RGBColor(220, 30, 140);
/// The band's text: the marker's hue, dark enough to read on its light fill.
const WRITE_CONFLICT_TEXT: Rgb = RGBColor(150, 10, 90);
const SPLIT_BRAIN_WRITE: Rgb = RGBColor(120, 0, 0);
const FAULT: Rgb = RGBColor(60, 60, 60);
/// The coordinated-election controller's own writes (it installs holders, sets preferredHolder).
const ELECTION: Rgb = RGBColor(30, 50, 150);
const CLOCK: Rgb = RGBColor(0, 128, 128);

// Vertical sizes, pixels.
const LABEL_SIZE: u32 = 19;
const SMALL_SIZE: u32 = 19;
const ANNOTATION_LANE: i32 = 26;
const MAX_ANNOTATION_LANES: usize = 8;
const LEASE_LANE: i32 = 30;
const ROLE_BAND: i32 = 26;
const CONDITION_BAND: i32 = 10;
const MARKER_LANE: i32 = 20;
const CLOCK_STRIP: i32 = 34;
const ROW_GAP: i32 = 18;
const GROUP_HEADING: i32 = 34;
const BLOCK_GAP: i32 = 14;
const AXIS_HEIGHT: i32 = 62;
/// The most Leases a plot draws (the transitions plot's distinct line styles): a fleet's
/// thousands would make a picture no one can read, tens of megabytes tall. The Leases that had
/// two leaders come first; summary.json has every node and Lease.
pub(crate) const MAX_SHOWN_LEASES: usize = 6;
/// Node rows drawn per Lease at most: past it, the nodes that mattered and the first others.
pub(crate) const MAX_ROWS_PER_LEASE: usize = 24;

/// Renders the timeline as SVG text.
pub fn timeline_svg(r: &RunResult, meta: &PlotMeta) -> Result<String, String> {
    let layout = TimelineLayout::new(r, meta);
    render_svg(layout.size(), |area| layout.draw(&Canvas { area }, r))
}

/// Renders the timeline as PNG bytes (same drawing as [`timeline_svg`]).
pub fn timeline_png(r: &RunResult, meta: &PlotMeta) -> Result<Vec<u8>, String> {
    let layout = TimelineLayout::new(r, meta);
    render_png(layout.size(), |area| layout.draw(&Canvas { area }, r))
}

/// Point events of one node, in true time, taken from the trace.
#[derive(Default)]
struct NodeMarks {
    failed_renewals: Vec<Nanos>,
    lease_conflicts: Vec<Nanos>,
    /// With the field manager that owns the field, when the 409's message names one.
    write_conflicts: Vec<(Nanos, Option<String>)>,
    split_brain_writes: Vec<Nanos>,
}

fn node_marks(r: &RunResult) -> Vec<NodeMarks> {
    let mut marks: Vec<NodeMarks> = (0..r.node_names.len()).map(|_| NodeMarks::default()).collect();
    // Responses carry only the request id; the request says whether the elector sent it, and only
    // the elector's 409s are Lease conflicts (the reconciler's are counted as write conflicts).
    // Request ids count up from 1, so a bit per id says which were the elector's.
    let mut from_elector: Vec<bool> = Vec::new();
    for e in &r.trace {
        let Some(node) = e.node.filter(|&n| n < marks.len()) else { continue };
        match &e.kind {
            TraceKind::Request { id, origin, .. } => {
                let id = *id as usize;
                if from_elector.len() <= id {
                    from_elector.resize(id + 1, false);
                }
                from_elector[id] = *origin == "elector";
            }
            TraceKind::Response { id, code: 409 } if from_elector.get(*id as usize) == Some(&true) => {
                marks[node].lease_conflicts.push(e.t)
            }
            TraceKind::ReconcileWrite { outcome: "conflict", owner, .. } => {
                marks[node].write_conflicts.push((e.t, owner.clone()))
            }
            TraceKind::SplitBrainWrite { .. } => marks[node].split_brain_writes.push(e.t),
            TraceKind::Note { note: Note::FailedToRenew } => marks[node].failed_renewals.push(e.t),
            _ => {}
        }
    }
    marks
}

/// Times at which leaseTransitions of one Lease on the server changed, with the new value.
fn changes_only(series: &[(Nanos, i32)]) -> Vec<(Nanos, i32)> {
    let mut previous = 0;
    let mut points = Vec::new();
    for &(t, value) in series {
        if value != previous {
            points.push((t, value));
            previous = value;
        }
    }
    points
}

/// Every Lease elected on (`namespace/name`, in order of first use) with the times its
/// leaseTransitions changed. A result without per-Lease series (built by hand) counts as one
/// Lease, the first node's.
pub(crate) fn lease_transition_points(r: &RunResult) -> Vec<(String, Vec<(Nanos, i32)>)> {
    if r.lease_transitions.is_empty() {
        let key = r.node_leases.first().cloned().unwrap_or_default();
        return vec![(key, changes_only(&r.transitions_series))];
    }
    r.lease_transitions.iter().map(|(key, series)| (key.clone(), changes_only(series))).collect()
}

/// For each Lease, `(true time, acting leaders)` at each change, counting only the nodes
/// electing on it: one pass over the spans, not one per Lease.
pub(crate) fn acting_by_lease(r: &RunResult) -> HashMap<&str, Vec<(Nanos, i64)>> {
    let mut edges: HashMap<&str, Vec<(Nanos, i64)>> = HashMap::new();
    for s in r.spans.iter().filter(|s| s.kind == SpanKind::Leader) {
        if let Some(lease) = r.node_leases.get(s.node) {
            let edges = edges.entry(lease.as_str()).or_default();
            edges.push((s.from, 1));
            // Spans still open at the end close at the end of the run: not a loss of a leader.
            if s.until < r.duration {
                edges.push((s.until, -1));
            }
        }
    }
    edges
        .into_iter()
        .map(|(lease, mut edges)| {
            // Ends before starts at the same instant: a hand-over is not two leaders.
            edges.sort_by_key(|&(t, d)| (t, d));
            let mut series: Vec<(Nanos, i64)> = Vec::new();
            let mut count = 0;
            for (t, d) in edges {
                count += d;
                match series.last_mut() {
                    Some(last) if last.0 == t => last.1 = count,
                    _ => series.push((t, count)),
                }
            }
            (lease, series)
        })
        .collect()
}

/// Which of `leases` the plots draw: every one up to [`MAX_SHOWN_LEASES`]; beyond that, the
/// Leases that had two leaders first, then the others, each in the series' order.
pub(crate) fn shown_leases(r: &RunResult, leases: &[(String, Vec<(Nanos, i32)>)]) -> Vec<bool> {
    if leases.len() <= MAX_SHOWN_LEASES {
        return vec![true; leases.len()];
    }
    let dual: std::collections::HashSet<&str> = r.dual_windows.iter().map(|w| w.lease.as_str()).collect();
    let mut shown = vec![false; leases.len()];
    let mut left = MAX_SHOWN_LEASES;
    for had_two in [true, false] {
        for (i, (key, _)) in leases.iter().enumerate() {
            if left > 0 && !shown[i] && dual.contains(key.as_str()) == had_two {
                shown[i] = true;
                left -= 1;
            }
        }
    }
    shown
}

/// A label above the rows: a fault or a dual-leader window's length.
struct Annotation {
    text: String,
    x0: i32,
    x1: i32,
    /// Where the label points (fault time, window middle).
    anchor_x: i32,
    lane: Option<usize>,
    color: Rgb,
    /// For faults: the node row the leader line runs to (`None`: the server, all rows).
    fault_node: Option<Option<usize>>,
    /// For a write of the election controller (not a fault: its own mark and legend entry), the
    /// Lease it went to (`namespace/name`): its line ends at that Lease's rows.
    lease: Option<String>,
}

/// One election: its Lease's transitions lane and the rows of the nodes electing on it. A run
/// with one Lease has one, without a heading.
struct LeaseBlock {
    key: String,
    /// `(y, text, unsafe)`: the group's heading, for runs with more than one Lease.
    /// (y, text, colour: red for settings that can overlap, green for safe, grey for no verdict).
    heading: Option<(i32, String, Rgb)>,
    /// `(x centre, text)`: the lengths of this Lease's dual-leader windows, written in the
    /// heading where they do not cover its text or each other.
    window_labels: Vec<(i32, String)>,
    lane_top: i32,
    /// Bottom of its last row.
    bottom: i32,
}

/// One node's row.
struct Row {
    node: usize,
    top: i32,
    has_clock: bool,
}

struct TimelineLayout {
    left: i32,
    right: i32,
    duration: Nanos,
    header: Header,
    annotations: Vec<Annotation>,
    annotation_top: i32,
    /// Top of the first transitions lane: grid lines start here.
    lease_top: i32,
    blocks: Vec<LeaseBlock>,
    /// In drawing order: grouped by Lease, node order within a group.
    rows: Vec<Row>,
    /// Each node's spans (indices into the run's spans, in their order): a row reads its own
    /// without a pass over the fleet's.
    spans_by_node: Vec<Vec<usize>>,
    /// Each node's first row in `rows`.
    row_index: Vec<Option<usize>>,
    rows_bottom: i32,
    axis_top: i32,
    legend: Vec<(i32, i32, LegendItem)>,
    /// `(y, text)`, a line each: what the plot does not show (rows and labels left out,
    /// markers without a trace).
    omitted_notes: Vec<(i32, String)>,
    height: i32,
}

#[derive(Clone, Copy)]
enum LegendItem {
    Candidate,
    Leader,
    Down,
    Paused,
    Partitioned,
    Dual,
    Transition,
    FailedRenewal,
    LeaseConflict,
    WriteConflict,
    SplitBrainWrite,
    Fault,
    Election,
    Clock,
}

impl LegendItem {
    fn label(self) -> &'static str {
        match self {
            LegendItem::Candidate => "candidate",
            LegendItem::Leader => "acting leader",
            LegendItem::Down => "down / not started",
            LegendItem::Paused => "paused",
            LegendItem::Partitioned => "partitioned",
            LegendItem::Dual => "dual-leader window",
            LegendItem::Transition => "lease transition",
            LegendItem::FailedRenewal => "failed renewal",
            LegendItem::LeaseConflict => "Lease 409",
            LegendItem::WriteConflict => "write refused (409: field owned by another manager, or fenced)",
            LegendItem::SplitBrainWrite => "write accepted while not holder",
            LegendItem::Fault => "fault",
            LegendItem::Election => "election controller writes the Lease",
            LegendItem::Clock => "wall clock − true time",
        }
    }
}

const LEGEND_SWATCH: i32 = 22;

fn fault_label(r: &RunResult, kind: &str, node: Option<usize>, detail: &str) -> String {
    // Server faults ("server-outage") already say whom they hit.
    let target = match node {
        Some(n) => r.node_names.get(n).cloned().unwrap_or_else(|| format!("node {n}")),
        None => String::new(),
    };
    // Clock steps are recorded in ns; on a slide they read in seconds.
    let detail = match detail.strip_suffix("ns").and_then(|d| d.parse::<i64>().ok()) {
        Some(ns) => signed_seconds(ns as f64 / 1e9),
        None => detail.to_string(),
    };
    let head = if target.is_empty() { kind.to_string() } else { format!("{kind} {target}") };
    if detail.is_empty() { head } else { format!("{head} ({detail})") }
}

impl TimelineLayout {
    fn new(r: &RunResult, meta: &PlotMeta) -> TimelineLayout {
        let duration = r.duration.max(1);
        let nodes = r.node_names.len();
        let leases = lease_transition_points(r);
        let shown_lease = shown_leases(r, &leases);
        // Each node's block: its Lease's place in the series; a node whose Lease is not in the
        // series (none in a real run) goes with the first. One pass, not one per Lease.
        let block_of_lease = super::first_by_key(leases.iter().enumerate().map(|(i, (key, _))| (key.as_str(), i)));
        let mut members_of = vec![Vec::new(); leases.len().max(1)];
        for n in 0..nodes {
            let block = r.node_leases.get(n).and_then(|l| block_of_lease.get(l.as_str())).copied().unwrap_or(0);
            members_of[block].push(n);
        }
        // A Lease with more candidates than a slide holds (5,000 made a 370,000-px plot): the
        // nodes that mattered — that led, were paused, cut off or hit by a fault — then the
        // first others, up to MAX_ROWS_PER_LEASE; a note says how many are left out.
        let mut rows_left_out = 0usize;
        if members_of.iter().any(|m| m.len() > MAX_ROWS_PER_LEASE) {
            let mut mattered = vec![false; nodes];
            for s in &r.spans {
                if matches!(s.kind, SpanKind::Leader | SpanKind::Paused | SpanKind::Partitioned)
                    && let Some(m) = mattered.get_mut(s.node)
                {
                    *m = true;
                }
            }
            for f in &r.faults {
                if let Some(m) = f.node.and_then(|n| mattered.get_mut(n)) {
                    *m = true;
                }
            }
            for members in members_of.iter_mut().filter(|m| m.len() > MAX_ROWS_PER_LEASE) {
                let mut kept: Vec<usize> =
                    members.iter().copied().filter(|&n| mattered[n]).take(MAX_ROWS_PER_LEASE).collect();
                for &n in members.iter() {
                    if kept.len() >= MAX_ROWS_PER_LEASE {
                        break;
                    }
                    if !mattered[n] {
                        kept.push(n);
                    }
                }
                kept.sort_unstable();
                rows_left_out += members.len() - kept.len();
                *members = kept;
            }
        }
        let mut node_shown = vec![false; nodes];
        for (block, members) in members_of.iter().enumerate() {
            if shown_lease.get(block).copied().unwrap_or(true) {
                for &n in members {
                    node_shown[n] = true;
                }
            }
        }
        let shown_nodes = || (0..nodes).filter(|&n| node_shown[n]);
        let name_width = shown_nodes().map(|n| text_width(&r.node_names[n], LABEL_SIZE, true)).max().unwrap_or(0);
        // The left margin holds node names, clock ranges and the lease lane's name: as wide as the
        // widest of them, so none is cut at the edge.
        let clock_width = shown_nodes().map(|n| text_width(&clock_label(r, n), SMALL_SIZE, false)).max().unwrap_or(0);
        let left = (name_width.max(clock_width).max(text_width("lease transitions", LABEL_SIZE, false)) + 28).max(170);
        let right = WIDTH as i32 - 40;
        let x_of = |t: Nanos| left + ((right - left) as f64 * t.min(duration) as f64 / duration as f64).round() as i32;

        let header = Header::new(title(meta), meta, WIDTH);

        // Labels: dual windows first (they matter most), then faults in time order, so that when
        // lanes run out it is a fault label that is left out.
        let mut annotations = Vec::new();
        // With several Leases a window's length is written in its Lease's heading instead.
        let several_leases = r.lease_transitions.len() > 1;
        for w in r.dual_windows.iter().filter(|_| !several_leases) {
            let text = human_seconds(w.seconds());
            let mid = (x_of(w.from) + x_of(w.until)) / 2;
            let tw = text_width(&text, LABEL_SIZE, true);
            annotations.push(Annotation {
                text,
                x0: mid - tw / 2 - 5,
                x1: mid + tw / 2 + 5,
                anchor_x: mid,
                lane: None,
                color: DUAL,
                fault_node: None,
                lease: None,
            });
        }
        // Faults of nodes the plot leaves out are left out with them.
        for f in r.faults.iter().filter(|f| f.node.is_none_or(|n| node_shown.get(n).copied().unwrap_or(true))) {
            let lease = match &f.detail {
                sim_core::world::FaultDetail::Election { lease, .. } => Some(lease.clone()),
                _ => None,
            };
            let election = lease.is_some();
            let text = if election {
                format!("controller {}", f.detail)
            } else {
                fault_label(r, f.kind, f.node, &f.detail.to_string())
            };
            let x = x_of(f.at);
            let tw = text_width(&text, SMALL_SIZE, false);
            // Labels start at their fault; near the right edge they end there instead.
            let (x0, x1) = if x + 4 + tw <= WIDTH as i32 - 8 { (x - 3, x + 4 + tw) } else { (x - 4 - tw, x + 3) };
            annotations.push(Annotation {
                text,
                x0,
                x1,
                anchor_x: x,
                lane: None,
                color: if election { ELECTION } else { FAULT },
                fault_node: Some(f.node),
                lease,
            });
        }
        let mut order: Vec<usize> = (0..annotations.len()).collect();
        order.sort_by_key(|&i| (annotations[i].fault_node.is_some(), annotations[i].x0, i));
        let mut packer = LanePacker::new(MAX_ANNOTATION_LANES, 10);
        for &i in &order {
            let a = &mut annotations[i];
            a.lane = packer.place(a.x0, a.x1, a.anchor_x);
        }
        let lanes = packer.lanes_used() as i32;

        let annotation_top = header.height;
        let lease_top = annotation_top + lanes * ANNOTATION_LANE + if lanes > 0 { 8 } else { 0 };
        let mut clocked = vec![false; nodes];
        for node in r.clock_offsets.nodes() {
            if let Some(c) = clocked.get_mut(node) {
                *c = node_shown[node];
            }
        }
        let spans_by_node = super::spans_by_node(r);
        let several = leases.len() > 1;
        let group_of = super::groups_by_key(&meta.leases);
        let mut blocks = Vec::new();
        let mut rows = Vec::new();
        let mut y = lease_top;
        for (index, (key, _)) in leases.iter().enumerate() {
            if !shown_lease[index] {
                continue;
            }
            let heading = several.then(|| {
                let group = group_of.get(key.as_str()).copied();
                let text = match group {
                    Some(g) => format!("Lease {key}: {}", g.label),
                    None => format!("Lease {key}"),
                };
                let text = super::header::fit(text, LABEL_SIZE, true, right - 40);
                let heading_y = y + GROUP_HEADING / 2;
                y += GROUP_HEADING;
                let color = match group {
                    Some(g) if !g.closed_form => MUTED,
                    Some(g) if g.unsafe_settings => DUAL,
                    _ => LEADER,
                };
                (heading_y, text, color)
            });
            let lane_top = y;
            y += LEASE_LANE + 6;
            for &node in &members_of[index] {
                let has_clock = clocked[node];
                rows.push(Row { node, top: y, has_clock });
                y += ROLE_BAND + CONDITION_BAND + MARKER_LANE + if has_clock { CLOCK_STRIP } else { 0 } + ROW_GAP;
            }
            let mut window_labels = Vec::new();
            if let Some((_, text, _)) = &heading {
                let mut taken_until = 40 + text_width(text, LABEL_SIZE, true) + 16;
                for w in r.dual_windows.iter().filter(|w| &w.lease == key) {
                    let label = human_seconds(w.seconds());
                    let half = text_width(&label, LABEL_SIZE, true) / 2 + 4;
                    let mid = ((x_of(w.from) + x_of(w.until)) / 2).max(taken_until + half);
                    if mid + half <= right {
                        window_labels.push((mid, label));
                        taken_until = mid + half + 8;
                    }
                }
            }
            blocks.push(LeaseBlock { key: key.clone(), heading, window_labels, lane_top, bottom: y - ROW_GAP / 2 });
            if several {
                y += BLOCK_GAP;
            }
        }
        if several {
            y -= BLOCK_GAP;
        }
        let mut row_index = vec![None; nodes];
        for (i, row) in rows.iter().enumerate().rev() {
            if let Some(slot) = row_index.get_mut(row.node) {
                *slot = Some(i);
            }
        }
        let rows_bottom = y - ROW_GAP / 2;
        let axis_top = rows_bottom;

        // The legend lists what the picture shows, nothing it does not.
        let marks = node_marks(r);
        let shown_marks = || marks.iter().enumerate().filter(|&(n, _)| node_shown[n]).map(|(_, m)| m);
        let is_shown = |n: usize| node_shown.get(n).copied().unwrap_or(true);
        let has_span = |kind: SpanKind| r.spans.iter().any(|s| s.kind == kind && is_shown(s.node));
        let all_running_from_zero_to_end = shown_nodes().all(|n| {
            let mut covered = 0;
            let mut running: Vec<(Nanos, Nanos)> = spans_by_node[n]
                .iter()
                .map(|&i| &r.spans[i])
                .filter(|s| s.kind == SpanKind::Running)
                .map(|s| (s.from, s.until))
                .collect();
            running.sort_unstable();
            for (from, until) in running {
                if from > covered {
                    return false;
                }
                covered = covered.max(until);
            }
            covered >= duration
        });
        let mut items = Vec::new();
        let shown = [
            (LegendItem::Candidate, has_span(SpanKind::Running)),
            (LegendItem::Leader, has_span(SpanKind::Leader)),
            (LegendItem::Down, !all_running_from_zero_to_end),
            (LegendItem::Paused, has_span(SpanKind::Paused)),
            (LegendItem::Partitioned, has_span(SpanKind::Partitioned)),
            (
                LegendItem::Dual,
                r.dual_windows.iter().any(|w| block_of_lease.get(w.lease.as_str()).is_none_or(|&b| shown_lease[b])),
            ),
            (
                LegendItem::Transition,
                leases.iter().zip(&shown_lease).any(|((_, points), &shown)| shown && !points.is_empty()),
            ),
            (LegendItem::Fault, annotations.iter().any(|a| a.fault_node.is_some() && a.lease.is_none())),
            (LegendItem::Election, annotations.iter().any(|a| a.lease.is_some())),
            (LegendItem::FailedRenewal, shown_marks().any(|m| !m.failed_renewals.is_empty())),
            (LegendItem::LeaseConflict, shown_marks().any(|m| !m.lease_conflicts.is_empty())),
            (LegendItem::WriteConflict, shown_marks().any(|m| !m.write_conflicts.is_empty())),
            (LegendItem::SplitBrainWrite, shown_marks().any(|m| !m.split_brain_writes.is_empty())),
            (LegendItem::Clock, clocked.iter().any(|&c| c)),
        ];
        for (item, present) in shown {
            if present {
                items.push(item);
            }
        }
        let traced = !r.trace.is_empty();
        let mut legend = Vec::new();
        let (mut lx, mut ly) = (left, axis_top + AXIS_HEIGHT + 14);
        for item in items {
            let w = LEGEND_SWATCH + 8 + text_width(item.label(), LABEL_SIZE, false) + 26;
            if lx + w > WIDTH as i32 - 20 {
                lx = left;
                ly += 32;
            }
            legend.push((lx, ly, item));
            lx += w;
        }
        let omitted = annotations.iter().filter(|a| a.lane.is_none()).count();
        let mut notes = Vec::new();
        let leases_shown = shown_lease.iter().filter(|&&s| s).count();
        if leases_shown < leases.len() {
            notes.push(format!(
                "Showing {leases_shown} of {} Leases ({} of {} nodes), those with two leaders first; \
                 summary.json has every one.",
                crate::format::group_digits(leases.len() as u64),
                crate::format::group_digits(node_shown.iter().filter(|&&s| s).count() as u64),
                crate::format::group_digits(nodes as u64),
            ));
        }
        if rows_left_out > 0 {
            notes.push(format!(
                "{} more nodes are not drawn ({MAX_ROWS_PER_LEASE} rows a Lease at most: those that led, paused, \
                 were cut off or faulted first).",
                crate::format::group_digits(rows_left_out as u64)
            ));
        }
        if omitted > 0 {
            notes.push(format!("{omitted} label(s) left out where crowded; every fault is marked ▼ on its row."));
        }
        if !traced {
            notes.push("Run without a trace: failed renewals and 409s are not marked.".to_string());
        }
        // One line a note, each fitted to the width (joined, they ran off the right edge).
        let omitted_notes = notes
            .into_iter()
            .map(|note| {
                ly += 26;
                (ly, super::header::fit(note, LABEL_SIZE, false, WIDTH as i32 - 20 - left))
            })
            .collect();
        let height = ly + 36;
        TimelineLayout {
            left,
            right,
            duration,
            header,
            annotations,
            annotation_top,
            lease_top,
            blocks,
            row_index,
            rows,
            spans_by_node,
            rows_bottom,
            axis_top,
            legend,
            omitted_notes,
            height,
        }
    }

    fn size(&self) -> (u32, u32) {
        (WIDTH, self.height as u32)
    }

    /// Node `node`'s spans, in the run's order.
    fn spans_of<'r>(&'r self, r: &'r RunResult, node: usize) -> impl Iterator<Item = &'r Span> + 'r {
        self.spans_by_node.get(node).into_iter().flatten().map(move |&i| &r.spans[i])
    }

    fn x_of(&self, t: Nanos) -> i32 {
        let t = t.min(self.duration);
        self.left + ((self.right - self.left) as f64 * t as f64 / self.duration as f64).round() as i32
    }

    /// `[x0, x1]` for a span, at least 2 px wide so that short events stay visible.
    fn x_span(&self, from: Nanos, until: Nanos) -> (i32, i32) {
        let (x0, x1) = (self.x_of(from), self.x_of(until));
        if x1 - x0 < 2 { (x0, x0 + 2) } else { (x0, x1) }
    }

    fn draw<DB: DrawingBackend>(&self, c: &Canvas<DB>, r: &RunResult) -> Result<(), String> {
        self.header.draw(c)?;
        self.draw_grid_and_axis(c)?;
        self.draw_dual_shading(c, r)?;
        let leases = lease_transition_points(r);
        let points_of = super::first_by_key(leases.iter().map(|(key, points)| (key.as_str(), points.as_slice())));
        for block in &self.blocks {
            let points = points_of.get(block.key.as_str()).copied().unwrap_or(&[]);
            self.draw_lease_block(c, block, points)?;
        }
        let marks = node_marks(r);
        for row in &self.rows {
            self.draw_row(c, r, row, marks.get(row.node))?;
        }
        self.draw_annotations(c)?;
        self.draw_legend(c)
    }

    fn draw_grid_and_axis<DB: DrawingBackend>(&self, c: &Canvas<DB>) -> Result<(), String> {
        let span = as_secs_f64(self.duration);
        let label_w = text_width(&format!("{span:.0}"), LABEL_SIZE, false) + 24;
        let max_ticks = ((self.right - self.left) / label_w.max(40)).clamp(2, 16) as usize;
        let step = tick_step(span, max_ticks);
        let top = self.lease_top;
        let y = self.axis_top;
        for v in ticks(span, step) {
            let x = self.left + ((self.right - self.left) as f64 * v / span).round() as i32;
            c.line(vec![(x, top), (x, y)], GRID.to_rgba(), 1)?;
            c.line(vec![(x, y), (x, y + 6)], TEXT.to_rgba(), 1)?;
            c.text(&tick_label(v, step), x, y + 18, LABEL_SIZE, TEXT, HPos::Center, false)?;
        }
        c.line(vec![(self.left, y), (self.right, y)], TEXT.to_rgba(), 1)?;
        let mid = (self.left + self.right) / 2;
        c.text("true time (s)", mid, y + 46, LABEL_SIZE, TEXT, HPos::Center, false)
    }

    fn row_of(&self, node: usize) -> Option<&Row> {
        self.row_index.get(node).copied().flatten().map(|i| &self.rows[i])
    }

    fn draw_dual_shading<DB: DrawingBackend>(&self, c: &Canvas<DB>, r: &RunResult) -> Result<(), String> {
        let block_of = super::first_by_key(self.blocks.iter().map(|b| (b.key.as_str(), b)));
        for w in &r.dual_windows {
            let (x0, x1) = self.x_span(w.from, w.until);
            // Elections side by side: shade only the block of the Lease with two leaders.
            let block = match self.blocks.as_slice() {
                [only] => Some(only),
                _ => block_of.get(w.lease.as_str()).copied(),
            };
            let Some(block) = block else { continue };
            let (top, bottom) = (block.lane_top, block.bottom);
            c.fill(x0, top, x1, bottom, DUAL.mix(0.16))?;
            c.line(vec![(x0, top), (x0, bottom)], DUAL.mix(0.7), 1)?;
            c.line(vec![(x1, top), (x1, bottom)], DUAL.mix(0.7), 1)?;
        }
        Ok(())
    }

    /// A Lease's heading (with several Leases) and its transitions lane: a ▲ and the new value
    /// at each change of leaseTransitions on the server.
    fn draw_lease_block<DB: DrawingBackend>(
        &self,
        c: &Canvas<DB>,
        block: &LeaseBlock,
        points: &[(Nanos, i32)],
    ) -> Result<(), String> {
        if let Some((y, text, color)) = &block.heading {
            let color = *color;
            c.fill(24, *y - GROUP_HEADING / 2 + 4, self.right, *y + GROUP_HEADING / 2 - 2, color.mix(0.08))?;
            c.fill(24, *y - GROUP_HEADING / 2 + 4, 30, *y + GROUP_HEADING / 2 - 2, color.to_rgba())?;
            c.text(text, 40, *y + 1, LABEL_SIZE, color, HPos::Left, true)?;
            for (x, label) in &block.window_labels {
                c.text(label, *x, *y + 1, LABEL_SIZE, DUAL, HPos::Center, true)?;
            }
        }
        let mid = block.lane_top + LEASE_LANE / 2;
        let name = if block.heading.is_some() { "transitions" } else { "lease transitions" };
        c.text(name, self.left - 14, mid, LABEL_SIZE, TEXT, HPos::Right, false)?;
        c.line(vec![(self.left, mid), (self.right, mid)], GRID.to_rgba(), 1)?;
        let mut last_label_end = -10_000;
        let mut last_marker = -10_000;
        for &(t, value) in points {
            let x = self.x_of(t);
            if x - last_marker >= 3 {
                draw_marker(c, LegendItem::Transition, x, mid)?;
                last_marker = x;
            }
            // Numbers only where they fit; the transitions plot has every value.
            let text = value.to_string();
            let w = text_width(&text, SMALL_SIZE, false);
            if x + 8 > last_label_end + 6 && x + 8 + w < WIDTH as i32 - 4 {
                c.text(&text, x + 8, mid, SMALL_SIZE, TRANSITION, HPos::Left, true)?;
                last_label_end = x + 8 + w;
            }
        }
        Ok(())
    }

    fn draw_row<DB: DrawingBackend>(
        &self,
        c: &Canvas<DB>,
        r: &RunResult,
        row: &Row,
        marks: Option<&NodeMarks>,
    ) -> Result<(), String> {
        let &Row { node, top, has_clock } = row;
        let name = r.node_names.get(node).map(String::as_str).unwrap_or("?");
        c.text(name, self.left - 14, top + ROLE_BAND / 2, LABEL_SIZE, TEXT, HPos::Right, true)?;
        // Down is whatever no Running span covers: paint it first, then what ran on top.
        let role_bottom = top + ROLE_BAND;
        c.fill(self.left, top, self.right, role_bottom, DOWN.to_rgba())?;
        for kind in [SpanKind::Running, SpanKind::Leader] {
            let color = if kind == SpanKind::Leader { LEADER } else { CANDIDATE };
            for s in self.spans_of(r, node).filter(|s| s.kind == kind) {
                let (x0, x1) = self.x_span(s.from, s.until);
                c.fill(x0, top, x1, role_bottom, color.to_rgba())?;
            }
        }
        // Paused and partitioned are conditions on top of the role (a paused leader still acts),
        // so they get their own thin band under it.
        let cond_top = role_bottom + 1;
        let cond_bottom = cond_top + CONDITION_BAND;
        c.fill(self.left, cond_top, self.right, cond_bottom, RGBColor(246, 246, 246).to_rgba())?;
        for (kind, color) in [(SpanKind::Paused, PAUSED), (SpanKind::Partitioned, PARTITIONED)] {
            for s in self.spans_of(r, node).filter(|s| s.kind == kind) {
                let (x0, x1) = self.x_span(s.from, s.until);
                c.fill(x0, cond_top, x1, cond_bottom, color.to_rgba())?;
            }
        }
        c.outline(self.left, top, self.right, cond_bottom, RGBColor(160, 160, 160))?;

        let marker_mid = cond_bottom + MARKER_LANE / 2 + 1;
        if let Some(m) = marks {
            // Kept off the row's ends so that a marker at 0 s is not cut by the margin.
            let x_in_row = |t: Nanos| self.x_of(t).clamp(self.left + 6, self.right - 6);
            self.draw_write_conflicts(c, &m.write_conflicts, marker_mid)?;
            for (item, times) in [
                (LegendItem::SplitBrainWrite, &m.split_brain_writes),
                (LegendItem::LeaseConflict, &m.lease_conflicts),
                (LegendItem::FailedRenewal, &m.failed_renewals),
            ] {
                for x in thin_sorted(times.iter().map(|&t| x_in_row(t)), 9) {
                    draw_marker(c, item, x, marker_mid)?;
                }
            }
        }
        if has_clock {
            self.draw_clock_strip(c, r, node, cond_bottom + MARKER_LANE + 2)?;
        }
        Ok(())
    }

    /// Refused writes: a lone one is a ◆; a run of them (a new leader whose every apply is
    /// refused because the old leader's field manager still owns the field) is one band with
    /// the count and the owner written in it, so that a room reads "refused, and why", not
    /// dozens of alarms.
    fn draw_write_conflicts<DB: DrawingBackend>(
        &self,
        c: &Canvas<DB>,
        conflicts: &[(Nanos, Option<String>)],
        mid: i32,
    ) -> Result<(), String> {
        for run in conflict_runs(conflicts, |t| self.x_of(t)) {
            let (x0, x1) = (self.x_of(run.from).max(self.left + 6), self.x_of(run.until).min(self.right - 6));
            if run.count < 3 || x1 - x0 < 24 {
                let xs = conflicts[run.first..run.first + run.count].iter().map(|&(t, _)| self.x_of(t));
                for x in thin_sorted(xs.map(|x| x.clamp(self.left + 6, self.right - 6)), 9) {
                    draw_marker(c, LegendItem::WriteConflict, x, mid)?;
                }
                continue;
            }
            c.fill(x0, mid - 7, x1, mid + 7, WRITE_CONFLICT.mix(0.14))?;
            c.line(vec![(x0, mid - 7), (x0, mid + 7)], WRITE_CONFLICT.to_rgba(), 2)?;
            c.line(vec![(x1, mid - 7), (x1, mid + 7)], WRITE_CONFLICT.to_rgba(), 2)?;
            let long = match &run.owner {
                Some(owner) => format!("{} writes refused (409): field owned by {owner}", run.count),
                None => format!("{} writes refused (409)", run.count),
            };
            let short = format!("{} × 409", run.count);
            let room = x1 - x0 - 12;
            let text = [long, short].into_iter().find(|t| text_width(t, SMALL_SIZE, false) <= room);
            if let Some(text) = text {
                c.text(&text, x0 + 6, mid, SMALL_SIZE, WRITE_CONFLICT_TEXT, HPos::Left, false)?;
            }
        }
        Ok(())
    }

    fn draw_clock_strip<DB: DrawingBackend>(
        &self,
        c: &Canvas<DB>,
        r: &RunResult,
        node: usize,
        top: i32,
    ) -> Result<(), String> {
        let bottom = top + CLOCK_STRIP - 6;
        let mid = (top + bottom) / 2;
        let half = (bottom - top) / 2;
        c.fill(self.left, top, self.right, bottom, RGBColor(240, 248, 248).to_rgba())?;
        // The zero line: a perfect clock would draw its offset right on it.
        c.line(vec![(self.left, mid), (self.right, mid)], RGBColor(150, 150, 150).to_rgba(), 1)?;
        let samples = r.clock_offsets.of(node);
        // Each strip has its own scale (its range is printed beside it): offsets of seconds next
        // to offsets of minutes would otherwise draw as flat lines.
        let scale = samples.iter().map(|&(_, o)| o.unsigned_abs()).max().unwrap_or(0).max(1) as f64;
        let y_of = |o: i64| mid - ((half - 2) as f64 * o as f64 / scale).round() as i32;
        let points: Vec<(i32, i32)> = samples.iter().map(|&(t, o)| (self.x_of(t), y_of(o))).collect();
        c.line(points, CLOCK.to_rgba(), 2)?;
        c.text(&clock_label(r, node), self.left - 14, mid, SMALL_SIZE, CLOCK, HPos::Right, false)
    }

    fn draw_annotations<DB: DrawingBackend>(&self, c: &Canvas<DB>) -> Result<(), String> {
        let lane_mid = |lane: usize| self.annotation_top + lane as i32 * ANNOTATION_LANE + ANNOTATION_LANE / 2;
        // Leader lines first so that no label is crossed by another's line.
        for a in &self.annotations {
            let Some(fault_node) = a.fault_node else { continue };
            let y_from = match a.lane {
                Some(lane) => lane_mid(lane) + 8,
                None => self.lease_top,
            };
            let block = a.lease.as_deref().and_then(|l| self.blocks.iter().find(|b| b.key == l));
            let y_to = match (fault_node, block) {
                (Some(n), _) => {
                    self.row_of(n).map(|row| row.top + ROLE_BAND + CONDITION_BAND).unwrap_or(self.rows_bottom)
                }
                (None, Some(b)) => b.bottom,
                (None, None) => self.rows_bottom,
            };
            c.line(vec![(a.anchor_x, y_from), (a.anchor_x, y_to)], a.color.mix(0.55), 1)?;
            let tip = match fault_node {
                Some(n) => self.row_of(n).map(|row| row.top).unwrap_or(self.lease_top),
                None => self.lease_top,
            };
            if a.lease.is_some() {
                c.circle(a.anchor_x, tip - 5, 5, ELECTION, true)?;
            } else {
                c.polygon(vec![(a.anchor_x - 5, tip - 7), (a.anchor_x + 5, tip - 7), (a.anchor_x, tip)], FAULT)?;
            }
        }
        for a in &self.annotations {
            let Some(lane) = a.lane else { continue };
            let y = lane_mid(lane);
            // A white backing, so that a leader line passing behind a label never runs through it.
            c.fill(a.x0 + 2, y - ANNOTATION_LANE / 2 + 2, a.x1 - 1, y + ANNOTATION_LANE / 2 - 3, WHITE.mix(0.92))?;
            if a.fault_node.is_some() {
                let left_anchored = a.x0 < a.anchor_x - 3;
                let (x, h) = if left_anchored { (a.x1 - 3, HPos::Right) } else { (a.x0 + 7, HPos::Left) };
                c.text(&a.text, x, y, SMALL_SIZE, a.color, h, false)?;
            } else {
                c.text(&a.text, a.anchor_x, y, LABEL_SIZE, a.color, HPos::Center, true)?;
                c.line(vec![(a.anchor_x, y + 9), (a.anchor_x, self.lease_top)], DUAL.mix(0.7), 1)?;
            }
        }
        Ok(())
    }

    fn draw_legend<DB: DrawingBackend>(&self, c: &Canvas<DB>) -> Result<(), String> {
        for &(x, y, item) in &self.legend {
            let mid_x = x + LEGEND_SWATCH / 2;
            match item {
                LegendItem::Candidate
                | LegendItem::Leader
                | LegendItem::Down
                | LegendItem::Paused
                | LegendItem::Partitioned => {
                    let color = match item {
                        LegendItem::Candidate => CANDIDATE,
                        LegendItem::Leader => LEADER,
                        LegendItem::Down => DOWN,
                        LegendItem::Paused => PAUSED,
                        _ => PARTITIONED,
                    };
                    c.fill(x, y - 8, x + LEGEND_SWATCH, y + 8, color.to_rgba())?;
                }
                LegendItem::Dual => {
                    c.fill(x, y - 10, x + LEGEND_SWATCH, y + 10, DUAL.mix(0.16))?;
                    c.line(vec![(x, y - 10), (x, y + 10)], DUAL.mix(0.7), 1)?;
                    c.line(vec![(x + LEGEND_SWATCH, y - 10), (x + LEGEND_SWATCH, y + 10)], DUAL.mix(0.7), 1)?;
                }
                LegendItem::Fault => {
                    c.polygon(vec![(mid_x - 5, y - 7), (mid_x + 5, y - 7), (mid_x, y)], FAULT)?;
                    c.line(vec![(mid_x, y - 10), (mid_x, y + 10)], FAULT.mix(0.55), 1)?;
                }
                LegendItem::Election => {
                    c.line(vec![(mid_x, y - 10), (mid_x, y + 10)], ELECTION.mix(0.55), 1)?;
                    c.circle(mid_x, y - 4, 5, ELECTION, true)?;
                }
                LegendItem::WriteConflict => {
                    // Both ways refusals are drawn: a band for a run of them, ◆ for one.
                    c.fill(x - 6, y - 7, x + LEGEND_SWATCH + 6, y + 7, WRITE_CONFLICT.mix(0.14))?;
                    draw_marker(c, item, mid_x, y)?;
                }
                LegendItem::Clock => {
                    c.line(vec![(x, y + 4), (x + 8, y - 4), (x + LEGEND_SWATCH, y - 2)], CLOCK.to_rgba(), 2)?;
                }
                _ => draw_marker(c, item, mid_x, y)?,
            }
            c.text(item.label(), x + LEGEND_SWATCH + 8, y, LABEL_SIZE, TEXT, HPos::Left, false)?;
        }
        for (y, note) in &self.omitted_notes {
            c.text(note, self.left, *y, LABEL_SIZE, MUTED, HPos::Left, false)?;
        }
        Ok(())
    }
}

/// A stretch of refused writes on one row with no gap wider than [`RUN_GAP_PX`] between them.
struct ConflictRun {
    first: usize,
    count: usize,
    from: Nanos,
    until: Nanos,
    /// The owner every refusal in the run names, if they all name the same one.
    owner: Option<String>,
}

/// Refusals closer than this many pixels read as one stretch.
const RUN_GAP_PX: i32 = 30;

fn conflict_runs(conflicts: &[(Nanos, Option<String>)], x_of: impl Fn(Nanos) -> i32) -> Vec<ConflictRun> {
    let mut runs: Vec<ConflictRun> = Vec::new();
    for (i, (t, owner)) in conflicts.iter().enumerate() {
        match runs.last_mut() {
            Some(run) if x_of(*t) - x_of(run.until) <= RUN_GAP_PX => {
                run.count += 1;
                run.until = *t;
                if run.owner != *owner {
                    run.owner = None;
                }
            }
            _ => runs.push(ConflictRun { first: i, count: 1, from: *t, until: *t, owner: owner.clone() }),
        }
    }
    runs
}

fn draw_marker<DB: DrawingBackend>(c: &Canvas<DB>, item: LegendItem, x: i32, y: i32) -> Result<(), String> {
    match item {
        LegendItem::Transition => c.polygon(vec![(x - 6, y + 6), (x + 6, y + 6), (x, y - 7)], TRANSITION),
        LegendItem::FailedRenewal => {
            c.line(vec![(x - 5, y - 5), (x + 5, y + 5)], FAILED_RENEWAL.to_rgba(), 2)?;
            c.line(vec![(x - 5, y + 5), (x + 5, y - 5)], FAILED_RENEWAL.to_rgba(), 2)
        }
        LegendItem::LeaseConflict => c.circle(x, y, 5, LEASE_CONFLICT, false),
        LegendItem::WriteConflict => c.polygon(vec![(x, y - 6), (x + 6, y), (x, y + 6), (x - 6, y)], WRITE_CONFLICT),
        LegendItem::SplitBrainWrite => c.fill(x - 5, y - 5, x + 5, y + 5, SPLIT_BRAIN_WRITE.to_rgba()),
        _ => Ok(()),
    }
}

/// "clock +120 s" for a constant offset, "clock −87 s … +3.0 s" for one that moves.
fn clock_label(r: &RunResult, node: usize) -> String {
    let offsets = r.clock_offsets.of(node).into_iter().map(|(_, o)| o);
    let (lo, hi) = offsets.fold((i64::MAX, i64::MIN), |(lo, hi), o| (lo.min(o), hi.max(o)));
    if lo > hi {
        String::new()
    } else if lo == hi {
        format!("clock {}", signed_seconds(lo as f64 / 1e9))
    } else {
        format!("clock {} … {}", signed_seconds(lo as f64 / 1e9), signed_seconds(hi as f64 / 1e9))
    }
}

pub(crate) fn title(meta: &PlotMeta) -> String {
    format!("{} — timeline", meta.scenario)
}
