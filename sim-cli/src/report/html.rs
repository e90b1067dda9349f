//! `report.html` for one run and `index.html` for a directory of runs: single self-contained
//! files (inline SVG and CSS, no scripts, no network, no external fonts) meant to be read on a
//! projector as well as on a laptop.

use sim_core::metrics::Metrics;
use std::fmt::Write;

/// Everything one run's report shows. The SVGs are the outputs of
/// [`timeline_svg`](super::timeline_svg) and [`transitions_svg`](super::transitions_svg).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReportParts {
    pub scenario: String,
    pub description: String,
    /// `(name, value)` rows of the parameters table, in display order.
    pub parameters: Vec<(String, String)>,
    /// `(name, value)` rows of the summary table, e.g. from [`summary_metric_rows`].
    pub metrics: Vec<(String, String)>,
    /// Per-node numbers: a header row then one row per node (e.g. from [`node_metric_table`]);
    /// empty for none.
    pub node_table: Vec<Vec<String>>,
    /// Per-Lease numbers in the same shape (e.g. from [`lease_metric_table`]); empty for none.
    pub lease_table: Vec<Vec<String>>,
    /// `(what was expected, passed, detail)`.
    pub expectations: Vec<(String, bool, String)>,
    /// The one-line command that reproduces this run.
    pub replay_command: String,
    pub unsafe_mode: bool,
    pub timeline_svg: String,
    pub transitions_svg: String,
}

/// Escapes text for HTML element content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The run-wide headline numbers, as rows for [`ReportParts::metrics`] (per-node numbers are in
/// [`node_metric_table`]).
pub fn summary_metric_rows(m: &Metrics) -> Vec<(String, String)> {
    let mut rows = vec![
        ("dual-leader time".to_string(), format!("{:.3} s", m.dual_leader_seconds)),
        ("dual-leader windows".to_string(), m.dual_leader_windows.to_string()),
        ("longest dual-leader window".to_string(), format!("{:.3} s", m.max_dual_leader_seconds)),
        (
            if m.leases.len() > 1 { "leaderless time (summed over Leases)" } else { "leaderless time" }.to_string(),
            format!("{:.3} s", m.leaderless_seconds),
        ),
        (
            if m.leases.len() > 1 {
                "leaseTransitions (final, summed over Leases)"
            } else {
                "leaseTransitions (final)"
            }
            .to_string(),
            m.lease_transitions.to_string(),
        ),
        ("leader changes".to_string(), m.leader_changes.to_string()),
        ("API requests".to_string(), m.api_requests.to_string()),
    ];
    if m.held_idle_seconds > 0.0 {
        rows.push(("held idle (elector renewing, no work)".to_string(), format!("{:.3} s", m.held_idle_seconds)));
    }
    if m.work_not_holder_seconds > 0.0 {
        rows.push(("work while not the holder".to_string(), format!("{:.3} s", m.work_not_holder_seconds)));
    }
    if !m.failover_seconds.is_empty() {
        let list: Vec<String> = m.failover_seconds.iter().map(|s| format!("{s:.3}")).collect();
        rows.push(("failover times".to_string(), format!("{} s", list.join(", "))));
    }
    rows
}

/// Per-node numbers as a table for [`ReportParts::node_table`]: a header row, then one row per
/// node in node-name order.
pub fn node_metric_table(m: &Metrics) -> Vec<Vec<String>> {
    let header = [
        "node",
        "acting leader",
        "terms led",
        "writes accepted",
        "split-brain writes",
        "write conflicts",
        "fenced rejections",
        "Lease 409s",
    ];
    let mut table = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    // The work figures only where a run has them (most runs read 0 there).
    let (idle, not_holder) = (m.held_idle_seconds > 0.0, m.work_not_holder_seconds > 0.0);
    if idle {
        table[0].insert(2, "held idle".into());
    }
    if not_holder {
        table[0].insert(2 + usize::from(idle), "work, not holder".into());
    }
    for (name, n) in &m.nodes {
        let mut row = vec![name.clone(), format!("{:.3} s", n.acting_leader_seconds)];
        if idle {
            row.push(format!("{:.3} s", n.held_idle_seconds));
        }
        if not_holder {
            row.push(format!("{:.3} s", n.work_not_holder_seconds));
        }
        row.extend([
            n.acquisitions.to_string(),
            n.writes_accepted.to_string(),
            n.split_brain_writes.to_string(),
            n.conflicts.to_string(),
            n.fenced_rejections.to_string(),
            n.lease_conflicts.to_string(),
        ]);
        table.push(row);
    }
    table
}

/// Per-Lease numbers for runs that elect on more than one Lease: a header row, then one row per
/// Lease in key order; empty for a run with one Lease (the summary already says it all).
pub fn lease_metric_table(m: &Metrics, groups: &[super::LeaseGroup]) -> Vec<Vec<String>> {
    if m.leases.len() < 2 {
        return Vec::new();
    }
    let header =
        ["Lease", "settings", "dual-leader time", "windows", "leaderless time", "lease transitions", "leader changes"];
    let mut table = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    let groups = super::groups_by_key(groups);
    for (key, l) in &m.leases {
        let settings = groups.get(key.as_str()).map(|g| g.label.clone()).unwrap_or_default();
        table.push(vec![
            key.clone(),
            settings,
            format!("{:.3} s", l.dual_leader_seconds),
            l.dual_leader_windows.to_string(),
            format!("{:.3} s", l.leaderless_seconds),
            l.lease_transitions.to_string(),
            l.leader_changes.to_string(),
        ]);
    }
    table
}

/// The narrowest window the report is made for (CSS px): there a figure is this less the
/// page's padding (36 px a side) and its border, 950 px. The plots are drawn 1200 px wide with
/// their smallest text at `font-size` 15.3, so at 950 px it shows at 12.1 px; wider windows show
/// them up to their drawn size. A figure always fits its window (it scales; it never scrolls).
pub const MIN_PLOT_WIDTH_PX: u32 = 1024;

const CSS: &str = r#"
:root { --fg:#1e1e1e; --muted:#5f5f5f; --line:#d9d9d9; --pass:#1a7f37; --fail:#c00000; --bg:#ffffff; --soft:#f5f7fa; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 18px/1.5 "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1640px; margin: 0 auto; padding: 28px 36px 60px; }
h1 { font-size: 2.1em; margin: 0 0 .2em; }
h2 { font-size: 1.35em; margin: 1.6em 0 .5em; border-bottom: 2px solid var(--line); padding-bottom: .2em; }
p.description { font-size: 1.1em; max-width: 70em; margin: .3em 0 1em; }
.banner { display: inline-block; background: var(--fail); color: #fff; font-weight: bold; padding: .35em .8em; border-radius: 4px; margin: .2em 0 .6em; }
.verdict { display: inline-block; font-weight: bold; padding: .2em .7em; border-radius: 4px; color: #fff; margin-left: .6em; font-size: .55em; vertical-align: middle; }
.verdict.pass, .result.pass { background: var(--pass); }
.verdict.fail, .result.fail { background: var(--fail); }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); gap: 8px 40px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35em .6em; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: break-word; }
th { background: var(--soft); font-weight: bold; }
td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
table.nodes td.num, table.nodes th:not(:first-child):not(.text) { text-align: right; }
table.nodes td:first-child { white-space: nowrap; }
table.nodes td.text { min-width: 11em; }
div.wide { overflow-x: auto; }
table.nodes th, table.nodes td { padding: .35em .4em; }
.result { color: #fff; font-weight: bold; border-radius: 4px; padding: .1em .55em; white-space: nowrap; }
pre.replay { background: #1e1e1e; color: #f0f0f0; padding: .8em 1em; border-radius: 6px; overflow-x: auto; font: 16px/1.4 "DejaVu Sans Mono", Menlo, Consolas, monospace; }
figure { margin: 1em 0 2em; }
figure svg { display: block; width: 100%; max-width: 1200px; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { color: var(--muted); margin-top: .4em; }
ul.runs { list-style: none; padding: 0; }
ul.runs li { padding: .6em 0; border-bottom: 1px solid var(--line); }
ul.runs a { font-size: 1.15em; font-weight: bold; color: #0b5cad; text-decoration: none; }
ul.runs a:hover { text-decoration: underline; }
ul.runs .desc { display: block; color: var(--muted); }
"#;

fn page_start(out: &mut String, title: &str) {
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(out, "<title>{}</title>", escape(title));
    let _ = writeln!(out, "<style>{CSS}</style>\n</head>\n<body>\n<main>");
}

fn page_end(out: &mut String) {
    out.push_str("</main>\n</body>\n</html>\n");
}

fn two_column_table(out: &mut String, heading: (&str, &str), rows: &[(String, String)]) {
    let _ = writeln!(out, "<table>\n<tr><th>{}</th><th>{}</th></tr>", heading.0, heading.1);
    for (name, value) in rows {
        let _ = writeln!(out, "<tr><td>{}</td><td class=\"num\">{}</td></tr>", escape(name), escape(value));
    }
    out.push_str("</table>\n");
}

/// A header row and rows of numbers: the first column is a name, the numbers right-aligned;
/// a column with words in it (a Lease's settings) is left-aligned and wraps, so that a narrow
/// window (a projector's 1024 px) shows every column.
fn data_table(out: &mut String, table: &[Vec<String>]) {
    let Some((header, rows)) = table.split_first() else { return };
    let number = |cell: &str| cell.trim_end_matches(" s").parse::<f64>().is_ok();
    let text: Vec<bool> =
        (0..header.len()).map(|i| i == 0 || rows.iter().any(|r| r.get(i).is_some_and(|c| !number(c)))).collect();
    // A table wider than the window scrolls inside its box, the page does not.
    out.push_str("<div class=\"wide\"><table class=\"nodes\">\n<tr>");
    for (i, h) in header.iter().enumerate() {
        let class = if i > 0 && text[i] { " class=\"text\"" } else { "" };
        let _ = write!(out, "<th{class}>{}</th>", escape(h));
    }
    out.push_str("</tr>\n");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = match (i, text.get(i).copied().unwrap_or(true)) {
                (0, _) => "",
                (_, true) => " class=\"text\"",
                (_, false) => " class=\"num\"",
            };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
}

/// Strips the XML prolog a standalone SVG may carry, which is not allowed inside HTML.
pub(crate) fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(start) => &svg[start..],
        None => svg,
    }
}

/// One run's report page.
pub fn report_html(parts: &ReportParts) -> String {
    let mut out = String::new();
    page_start(&mut out, &format!("{} — leasesim report", parts.scenario));
    let all_passed = parts.expectations.iter().all(|(_, ok, _)| *ok);
    let verdict = if parts.expectations.is_empty() {
        String::new()
    } else if all_passed {
        "<span class=\"verdict pass\">all expectations met</span>".to_string()
    } else {
        let failed = parts.expectations.iter().filter(|(_, ok, _)| !ok).count();
        format!("<span class=\"verdict fail\">{failed} expectation(s) failed</span>")
    };
    let _ = writeln!(out, "<h1>{}{verdict}</h1>", escape(&parts.scenario));
    if parts.unsafe_mode {
        out.push_str("<div class=\"banner\">UNSAFE configuration (teaching mode)</div>\n");
    }
    if !parts.description.is_empty() {
        let _ = writeln!(out, "<p class=\"description\">{}</p>", escape(&parts.description));
    }

    out.push_str("<div class=\"grid\">\n<section>\n<h2>Parameters</h2>\n");
    two_column_table(&mut out, ("parameter", "value"), &parts.parameters);
    out.push_str("</section>\n<section>\n<h2>Summary</h2>\n");
    two_column_table(&mut out, ("metric", "value"), &parts.metrics);
    out.push_str("</section>\n</div>\n");

    if parts.lease_table.len() > 1 {
        out.push_str("<h2>Leases</h2>\n");
        data_table(&mut out, &parts.lease_table);
    }
    if parts.node_table.len() > 1 {
        out.push_str("<h2>Nodes</h2>\n");
        data_table(&mut out, &parts.node_table);
    }

    out.push_str("<h2>Expectations</h2>\n");
    if parts.expectations.is_empty() {
        out.push_str("<p>This scenario states no expectations.</p>\n");
    } else {
        out.push_str("<table>\n<tr><th>expectation</th><th>result</th><th>detail</th></tr>\n");
        for (what, ok, detail) in &parts.expectations {
            let (class, word) = if *ok { ("pass", "pass") } else { ("fail", "FAIL") };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td><span class=\"result {class}\">{word}</span></td><td>{}</td></tr>",
                escape(what),
                escape(detail)
            );
        }
        out.push_str("</table>\n");
    }

    out.push_str("<h2>Replay</h2>\n");
    let _ = writeln!(out, "<pre class=\"replay\">{}</pre>", escape(&parts.replay_command));

    out.push_str("<h2>Timeline</h2>\n<figure>\n");
    out.push_str(inline_svg(&parts.timeline_svg));
    out.push_str(
        "\n<figcaption>One row per node over true time. Shaded red: two or more nodes acting as leader at once.\
         </figcaption>\n</figure>\n",
    );
    out.push_str("<h2>Lease transitions and acting leaders</h2>\n<figure>\n");
    out.push_str(inline_svg(&parts.transitions_svg));
    out.push_str("\n</figure>\n");
    page_end(&mut out);
    out
}

/// The index of a reports directory: `(name, description, href, all expectations passed)` per
/// run, listed in the order given.
pub fn index_html(entries: &[(String, String, String, bool)]) -> String {
    let mut out = String::new();
    page_start(&mut out, "leasesim reports");
    out.push_str("<h1>leasesim reports</h1>\n");
    let failed = entries.iter().filter(|e| !e.3).count();
    let _ = writeln!(
        out,
        "<p class=\"description\">{} scenario(s); {}.</p>",
        entries.len(),
        if failed == 0 { "all expectations met".to_string() } else { format!("{failed} with failed expectations") }
    );
    out.push_str("<ul class=\"runs\">\n");
    for (name, description, href, passed) in entries {
        let (class, word) = if *passed { ("pass", "pass") } else { ("fail", "FAIL") };
        let _ = writeln!(
            out,
            "<li><span class=\"result {class}\">{word}</span> <a href=\"{}\">{}</a><span class=\"desc\">{}</span></li>",
            escape(href),
            escape(name),
            escape(description)
        );
    }
    out.push_str("</ul>\n");
    page_end(&mut out);
    out
}
