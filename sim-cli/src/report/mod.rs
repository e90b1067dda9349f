//! Pictures and pages for one run: the timeline and transitions plots (SVG or PNG, from the same
//! drawing code), the self-contained `report.html`, and `reports/index.html`.
//!
//! Everything here is a pure function of its inputs: the same [`RunResult`] gives byte-identical
//! files (no timestamps, no random ids, no hash-order iteration), so committed reports can be
//! compared byte for byte.

mod canvas;
pub(crate) mod fonts;
mod header;
mod html;
mod layout;
mod timeline;
mod transitions;

pub(crate) use html::inline_svg;
pub use html::{
    MIN_PLOT_WIDTH_PX, ReportParts, index_html, lease_metric_table, node_metric_table, report_html, summary_metric_rows,
};
pub use timeline::{timeline_png, timeline_svg};
pub use transitions::{transitions_png, transitions_svg};

pub(crate) use transitions::dashes;

/// The width in pixels of `text` in the plots' font (for pictures drawn outside this module).
pub(crate) fn text_width_px(text: &str, size: u32) -> i32 {
    canvas::text_width(text, size, false)
}

use sim_core::model::WorldSpec;
use sim_core::world::RunResult;

/// What the plots say about the run besides its data: shown in titles and banners.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlotMeta {
    pub scenario: String,
    /// Key parameters on one line, e.g. "LD 15s · RD 10s · RP 2s · skew +120s".
    pub subtitle: String,
    /// The run used a configuration the validator would refuse; plots say so in red.
    pub unsafe_mode: bool,
    /// One entry per Lease elected on, in order of first use; plots with more than one label
    /// each election's rows with it. Empty: plots label nothing per Lease.
    pub leases: Vec<LeaseGroup>,
}

/// `(key, value)` pairs by key, the first of each key kept (as a search from the start would
/// find it): a fleet has thousands of Leases, and plots and tables look one up per Lease.
pub(crate) fn first_by_key<'a, T>(
    pairs: impl IntoIterator<Item = (&'a str, T)>,
) -> std::collections::HashMap<&'a str, T> {
    let mut by_key = std::collections::HashMap::new();
    for (key, value) in pairs {
        by_key.entry(key).or_insert(value);
    }
    by_key
}

/// Each Lease's group by key (see [`first_by_key`]).
pub fn groups_by_key(groups: &[LeaseGroup]) -> std::collections::HashMap<&str, &LeaseGroup> {
    first_by_key(groups.iter().map(|g| (g.key.as_str(), g)))
}

/// Each node's spans, as indices into `r.spans` in their order: what a row or a track of one
/// node reads, without a pass over the whole fleet's spans per node.
pub fn spans_by_node(r: &RunResult) -> Vec<Vec<usize>> {
    let mut by_node = vec![Vec::new(); r.node_names.len()];
    for (i, s) in r.spans.iter().enumerate() {
        if let Some(list) = by_node.get_mut(s.node) {
            list.push(i);
        }
    }
    by_node
}

/// One election's Lease and what its settings mean, for labels on the plots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseGroup {
    /// `namespace/name`, as in [`RunResult::node_leases`].
    pub key: String,
    /// "RD 10s + RP 2s < LD 15s — safe", "RD 25s > LD 15s — unsafe", "RD 14s + RP 2s ≥ LD 15s —
    /// can overlap".
    pub label: String,
    /// A cut-off leader can act after others may take over: RD ≥ LD, or RD + RP ≥ LD.
    pub unsafe_settings: bool,
    /// The library's loop has a closed form to judge its settings by (client-go's envelope);
    /// without one the label gives no verdict.
    pub closed_form: bool,
}

/// The Leases of a run with the renew deadline of their first node compared with its lease
/// duration: the rule client-go enforces (`NewLeaderElector`: "leaseDuration must be greater
/// than renewDeadline", the instructor's demo), and the one that holds under a partition (a
/// cut-off leader acts for RP + RD after its last renewal: docs/safety-envelope.md), which
/// client-go does not check.
pub fn lease_groups_from_spec(spec: &WorldSpec) -> Vec<LeaseGroup> {
    use sim_core::time::format_duration;
    let mut groups: Vec<LeaseGroup> = Vec::new();
    // Keys seen: a set, not a search of the groups so far (a fleet has thousands of Leases).
    let mut seen = std::collections::HashSet::new();
    for n in &spec.nodes {
        let e = &n.elector;
        let key = format!("{}/{}", e.lease_namespace, e.lease_name);
        if !seen.insert(key.clone()) {
            continue;
        }
        let (rd, ld, rp) =
            (format_duration(e.renew_deadline), format_duration(e.lease_duration), format_duration(e.retry_period));
        let library = e.algorithm.library();
        if library.envelope == sim_core::elector::library::Envelope::NoClosedForm {
            // client-go's rule says nothing about this loop (a fabric8 Lease read "safe" with
            // 6.7 s of overlap): say so rather than borrow it.
            let label = format!("{}: LD {ld}, RD {rd}, RP {rp} — no closed form; see its windows", library.called);
            groups.push(LeaseGroup { key, label, unsafe_settings: false, closed_form: false });
            continue;
        }
        let unsafe_settings = e.renew_deadline.saturating_add(e.retry_period) >= e.lease_duration;
        let label = if e.renew_deadline >= e.lease_duration {
            let op = if e.renew_deadline == e.lease_duration { "=" } else { ">" };
            format!("RD {rd} {op} LD {ld} — unsafe")
        } else if unsafe_settings {
            format!("RD {rd} + RP {rp} ≥ LD {ld} — can overlap (client-go accepts it)")
        } else {
            format!("RD {rd} + RP {rp} < LD {ld} — safe")
        };
        groups.push(LeaseGroup { key, label, unsafe_settings, closed_form: true });
    }
    groups
}

/// Which image files to write for each plot (`--format svg|png|both`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ImageFormat {
    #[default]
    Svg,
    Png,
    Both,
}

impl ImageFormat {
    pub fn parse(text: &str) -> Result<ImageFormat, String> {
        match text {
            "svg" => Ok(ImageFormat::Svg),
            "png" => Ok(ImageFormat::Png),
            "both" => Ok(ImageFormat::Both),
            other => Err(format!("unknown image format {other:?} (expected svg, png or both)")),
        }
    }

    pub fn wants_svg(self) -> bool {
        matches!(self, ImageFormat::Svg | ImageFormat::Both)
    }

    pub fn wants_png(self) -> bool {
        matches!(self, ImageFormat::Png | ImageFormat::Both)
    }
}

/// One rendered file: its name inside the run's output directory and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotFile {
    pub file_name: String,
    pub bytes: Vec<u8>,
}

/// Renders `timeline` and `transitions` in the requested formats, in a fixed order
/// (timeline.svg, timeline.png, transitions.svg, transitions.png, as selected).
pub fn render_plot_files(r: &RunResult, meta: &PlotMeta, format: ImageFormat) -> Result<Vec<PlotFile>, String> {
    plot_files_with(r, meta, format, None)
}

/// [`render_plot_files`], given the two SVGs if they are already drawn (`report.html` embeds
/// them too, and a fleet's take seconds to draw): `svgs` is `(timeline, transitions)`, used
/// when `format` wants SVG; `None` draws them.
pub fn plot_files_with(
    r: &RunResult,
    meta: &PlotMeta,
    format: ImageFormat,
    svgs: Option<(String, String)>,
) -> Result<Vec<PlotFile>, String> {
    let (timeline, transitions) = match svgs {
        _ if !format.wants_svg() => (None, None),
        Some((timeline, transitions)) => (Some(timeline), Some(transitions)),
        None => (Some(timeline_svg(r, meta)?), Some(transitions_svg(r, meta)?)),
    };
    let mut files = Vec::new();
    if let Some(svg) = timeline {
        files.push(PlotFile { file_name: "timeline.svg".into(), bytes: svg.into_bytes() });
    }
    if format.wants_png() {
        files.push(PlotFile { file_name: "timeline.png".into(), bytes: timeline_png(r, meta)? });
    }
    if let Some(svg) = transitions {
        files.push(PlotFile { file_name: "transitions.svg".into(), bytes: svg.into_bytes() });
    }
    if format.wants_png() {
        files.push(PlotFile { file_name: "transitions.png".into(), bytes: transitions_png(r, meta)? });
    }
    Ok(files)
}

/// The key parameters of a run on one line, for [`PlotMeta::subtitle`]:
/// "3 nodes · client-go · LD 15s · RD 10s · RP 2s · skew +120s". Values that differ between
/// nodes are listed with "/" in node order.
pub fn subtitle_from_spec(spec: &WorldSpec) -> String {
    use sim_core::time::format_duration;
    fn distinct(values: impl Iterator<Item = String>) -> String {
        let mut seen: Vec<String> = Vec::new();
        for v in values {
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        seen.join("/")
    }
    let nodes = &spec.nodes;
    let mut parts = vec![
        format!("{} node{}", nodes.len(), if nodes.len() == 1 { "" } else { "s" }),
        distinct(nodes.iter().map(|n| n.elector.algorithm.name().to_string())),
        format!("LD {}", distinct(nodes.iter().map(|n| format_duration(n.elector.lease_duration)))),
        format!("RD {}", distinct(nodes.iter().map(|n| format_duration(n.elector.renew_deadline)))),
        format!("RP {}", distinct(nodes.iter().map(|n| format_duration(n.elector.retry_period)))),
    ];
    // The offset furthest from true time, with its sign: the one that matters for clock rules.
    if let Some(offset) = nodes.iter().map(|n| n.clock.offset_ns).filter(|&o| o != 0).max_by_key(|o| o.unsigned_abs()) {
        let sign = if offset < 0 { "-" } else { "+" };
        // To the millisecond: offsets drawn from a distribution have nanosecond noise.
        let ms = offset.unsigned_abs().div_ceil(1_000_000) * 1_000_000;
        parts.push(format!("skew {sign}{}", format_duration(ms)));
    }
    if let Some(drift) = nodes.iter().map(|n| n.clock.drift_ppb).filter(|&d| d != 0).max_by_key(|d| d.unsigned_abs()) {
        parts.push(format!("drift {:+.1} ppm", drift as f64 / 1000.0));
    }
    if nodes.iter().any(|n| !n.clock.steps.is_empty()) {
        parts.push("clock steps".to_string());
    }
    parts.join(" · ")
}
