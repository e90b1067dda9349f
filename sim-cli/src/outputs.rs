//! What a run leaves behind: `summary.json`, `trace.jsonl`, `history.jsonl`,
//! `trace.perfetto.json`, the plots and `report.html`, and the summary table on stdout — all
//! from a [`RunOutput`] in memory (running it is `run.rs`).

use crate::output::StagedDir;
use crate::report::ImageFormat;
use crate::run::RunOutput;
use serde_json::{Value, json};
use sim_core::time::{as_secs_f64, format_duration};
use sim_core::world::SpanKind;
use std::io::Write;
use std::path::Path;

pub const SCHEMA_VERSION: u32 = 1;

/// `trace.jsonl`: a header line, then one event per line.
pub fn write_trace_jsonl(out: &RunOutput, w: &mut dyn Write) -> std::io::Result<()> {
    let header = json!({
        "kind": "header",
        "schema": SCHEMA_VERSION,
        "tool": "leasesim",
        "version": env!("CARGO_PKG_VERSION"),
        "scenario": out.scenario_name,
        "seed": out.seed,
        "unsafe_mode": out.unsafe_mode,
        "nodes": out.result.node_names,
        // Which Lease each node elects on, in the order of "nodes".
        "node_leases": out.result.node_leases,
        "replay": out.replay,
        "trace": if out.traced { "on" } else { "off: run with --trace on for events" },
    });
    writeln!(w, "{header}")?;
    for e in &out.result.trace {
        e.write_json(&out.result.node_names, w)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// The history checks of a traced run with a reconciler (`sim_core::history`).
pub fn history_report(out: &RunOutput) -> Option<&sim_core::history::HistoryReport> {
    out.history.as_ref()
}

/// `summary.json`'s `history` block: the checks, overall and per reconciler mode.
fn history_json(out: &RunOutput, h: &sim_core::history::HistoryReport) -> Value {
    let ops = &out.result.history;
    let mut modes: std::collections::BTreeMap<&str, (u64, u64, u64)> = std::collections::BTreeMap::new();
    for op in ops.iter().filter(|o| o.kind == sim_core::history::OpKind::Write && o.outcome == "ok") {
        modes.entry(op.mode).or_default().0 += 1;
    }
    for &i in &h.non_holder_writes {
        modes.entry(ops[i].mode).or_default().1 += 1;
    }
    for &(_, w) in &h.lost_updates {
        modes.entry(ops[w].mode).or_default().2 += 1;
    }
    let by_mode: serde_json::Map<String, Value> = modes
        .into_iter()
        .map(|(m, (w, n, l))| (m.to_string(), json!({"writes_applied": w, "non_holder_writes": n, "lost_updates": l})))
        .collect();
    json!({
        "ops": ops.len(),
        "non_holder_writes": h.non_holder_writes.len(),
        "lost_updates": h.lost_updates.len(),
        "dual_windows_corrupting": h.corrupting_windows,
        "dual_windows_harmless": h.harmless_windows,
        "by_mode": by_mode,
    })
}

/// `history.jsonl`: one line per reconciler read or write of the protected object, in the order
/// the server applied them (schema: docs/history.md).
pub fn write_history_jsonl(out: &RunOutput, w: &mut dyn Write) -> std::io::Result<()> {
    let Some(h) = history_report(out) else { return Ok(()) };
    let r = &out.result;
    // Each op's lost-update links, gathered once (looked up per op they made the file quadratic
    // in a run's writes): the first write that lost it, and the ones it overwrote, in the
    // report's order.
    let mut lost_by_of: Vec<Option<usize>> = vec![None; r.history.len()];
    let mut overwrote_of: Vec<Vec<usize>> = vec![Vec::new(); r.history.len()];
    for &(v, w) in &h.lost_updates {
        lost_by_of[v].get_or_insert(w);
        overwrote_of[w].push(v);
    }
    for (i, op) in r.history.iter().enumerate() {
        let lost_by = lost_by_of[i];
        let overwrote = std::mem::take(&mut overwrote_of[i]);
        let line = json!({
            "i": i,
            "node": r.node_names[op.node],
            "op": op.kind.name(),
            "verb": op.verb,
            "mode": op.mode,
            "sent_ns": op.sent,
            "applied_ns": op.applied,
            "rv_before": op.rv_before,
            "rv_after": op.rv_after,
            "based_on": op.based_on,
            "token": op.token,
            "holder": op.holder,
            "object": op.object,
            "outcome": op.outcome,
            "value": op.value,
            // Indices in ascending order (`history::check` pushes them so).
            "non_holder_write": h.non_holder_writes.binary_search(&i).is_ok(),
            "lost": lost_by.is_some(),
            "lost_by": lost_by,
            "overwrote_unseen": overwrote,
        });
        serde_json::to_writer(&mut *w, &line)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// `summary.json`.
pub fn summary_json(out: &RunOutput) -> Value {
    serde_json::to_value(Summary::of(out)).expect("a summary is JSON")
}

/// `summary.json` as written: serialised from the run's own values (a fleet's summary built as a
/// JSON tree first was the largest memory of a `leasesim run`: 258 MB at 30,000 electors).
#[derive(serde::Serialize)]
pub struct Summary<'a> {
    tool: &'static str,
    version: &'static str,
    schema: u32,
    scenario: &'a str,
    seed: u64,
    unsafe_mode: bool,
    replay: &'a str,
    duration_seconds: f64,
    events_processed: u64,
    config: &'a Option<sim_core::scenario::Scenario>,
    metrics: &'a sim_core::metrics::Metrics,
    dual_leader_windows: Vec<Value>,
    expectations: Vec<Value>,
    actions: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<Value>,
}

impl<'a> Summary<'a> {
    pub fn of(out: &'a RunOutput) -> Summary<'a> {
        let r = &out.result;
        let actions = r
            .actions
            .iter()
            .map(|a| {
                json!({
                    "name": a.name, "at_seconds": as_secs_f64(a.at), "code": a.code, "reason": a.reason,
                    "message": a.message, "kubectl_stderr": a.kubectl_stderr, "allowed": a.allowed,
                    "object": a.object,
                })
            })
            .collect();
        let windows = r
            .dual_windows
            .iter()
            .map(|w| json!({"from_seconds": as_secs_f64(w.from), "until_seconds": as_secs_f64(w.until), "seconds": w.seconds(), "leaders": w.leaders}))
            .collect();
        Summary {
            tool: "leasesim",
            version: env!("CARGO_PKG_VERSION"),
            schema: SCHEMA_VERSION,
            scenario: &out.scenario_name,
            seed: out.seed,
            unsafe_mode: out.unsafe_mode,
            replay: &out.replay,
            duration_seconds: as_secs_f64(r.duration),
            events_processed: r.events_processed,
            config: &out.effective,
            metrics: &r.metrics,
            dual_leader_windows: windows,
            expectations: out
                .expectations
                .iter()
                .map(|e| json!({"expect": e.text, "passed": e.passed, "seen": e.seen}))
                .collect(),
            actions,
            history: history_report(out).map(|h| history_json(out, h)),
        }
    }

    /// Pretty JSON and a newline, as [`crate::format::pretty_json`] writes a tree.
    pub fn write(&self, w: &mut dyn Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *w, self)?;
        w.write_all(b"\n")
    }
}

/// `trace.perfetto.json` in the Chrome trace-event format (JSON object form). Tracks: one per
/// node for its role (candidate / acting leader / down), one per node each for pauses and
/// partitions (they overlap the role spans, and slices on one track must nest), and a global
/// track for the API server. Timestamps are microseconds of true time.
pub fn write_perfetto(out: &RunOutput, w: &mut dyn Write) -> std::io::Result<()> {
    let r = &out.result;
    let mut events = EventSink { w, first: true };
    events.w.write_all(b"{\"traceEvents\":[")?;
    let us = |ns: u64| ns as f64 / 1000.0;
    events.push(json!({"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": format!("leasesim {} seed={}{}", out.scenario_name, out.seed, if out.unsafe_mode { " UNSAFE" } else { "" })}}))?;
    events.push(json!({"ph": "M", "pid": 1, "tid": 0, "name": "thread_name", "args": {"name": "API server"}}))?;
    let track = |node: usize, lane: usize| (node as u64 + 1) * 10 + lane as u64;
    for (i, name) in r.node_names.iter().enumerate() {
        for (lane, suffix) in [(0, ""), (1, " · paused"), (2, " · partitioned")] {
            events.push(json!({"ph": "M", "pid": 1, "tid": track(i, lane), "name": "thread_name", "args": {"name": format!("{name}{suffix}")}}))?;
            events.push(json!({"ph": "M", "pid": 1, "tid": track(i, lane), "name": "thread_sort_index", "args": {"sort_index": track(i, lane)}}))?;
        }
    }
    let mut slices: Vec<(u64, u64, u64, &str)> = Vec::new(); // (tid, from, until, name)
    // Each node's own spans: one pass over the fleet's, not one per node.
    let by_node = crate::report::spans_by_node(r);
    for (i, indices) in by_node.iter().enumerate() {
        let own = || indices.iter().map(|&k| &r.spans[k]);
        let running: Vec<_> = own().filter(|s| s.kind == SpanKind::Running).collect();
        let leader: Vec<_> = own().filter(|s| s.kind == SpanKind::Leader).collect();
        // Candidate = running minus leader; down = the gaps between running spans.
        for run in &running {
            let mut cursor = run.from;
            for l in leader.iter().filter(|l| l.from < run.until && l.until > run.from) {
                if l.from > cursor {
                    slices.push((track(i, 0), cursor, l.from, "candidate"));
                }
                slices.push((track(i, 0), l.from.max(run.from), l.until.min(run.until), "acting leader"));
                cursor = l.until.min(run.until);
            }
            if cursor < run.until {
                slices.push((track(i, 0), cursor, run.until, "candidate"));
            }
        }
        let mut cursor = 0;
        for run in &running {
            if run.from > cursor {
                slices.push((track(i, 0), cursor, run.from, "down"));
            }
            cursor = run.until;
        }
        if cursor < r.duration && !running.is_empty() {
            slices.push((track(i, 0), cursor, r.duration, "down"));
        }
        for s in own() {
            match s.kind {
                SpanKind::Paused => slices.push((track(i, 1), s.from, s.until, "paused")),
                SpanKind::Partitioned => slices.push((track(i, 2), s.from, s.until, "partitioned")),
                _ => {}
            }
        }
    }
    slices.sort_by_key(|a| (a.1, a.0));
    for (tid, from, until, name) in slices {
        events.push(json!({"ph": "X", "pid": 1, "tid": tid, "ts": us(from), "dur": us(until - from), "name": name, "cat": "state"}))?;
    }
    for w in &r.dual_windows {
        events.push(json!({"ph": "X", "pid": 1, "tid": 0, "ts": us(w.from), "dur": us(w.until - w.from), "name": format!("DUAL LEADERS {:.3}s", w.seconds()), "cat": "split-brain", "args": {"leaders": w.leaders}}))?;
    }
    for e in &r.trace {
        use sim_core::trace::TraceKind as K;
        let tid = e.node.map(|n| track(n, 0)).unwrap_or(0);
        let (name, scope): (String, &str) = match &e.kind {
            K::Request { verb, resource, origin, .. } => (format!("{origin} {verb} {resource}"), "t"),
            K::Response { code, .. } if *code >= 400 => (format!("response {code}"), "t"),
            K::Timeout { .. } => ("timeout".into(), "t"),
            K::Lost { dir, why, .. } => (format!("lost {dir} ({why})"), "t"),
            K::ReconcileWrite { outcome, .. } => (format!("reconcile {outcome}"), "t"),
            K::SplitBrainWrite { lease_holder, .. } => {
                (format!("SPLIT-BRAIN WRITE (lease holder {lease_holder})"), "t")
            }
            K::LeaseChanged { holder, transitions, .. } => {
                (format!("lease holder={holder:?} transitions={transitions}"), "g")
            }
            K::Note { note } => (note.name().to_string(), "t"),
            K::Crash => ("crash".into(), "t"),
            K::ClockStep { delta_ns } => (format!("clock step {delta_ns:+}ns"), "t"),
            K::Action { name, code, .. } => (format!("action {name} → {code}"), "g"),
            _ => continue,
        };
        // As json!({"ph", "pid", "tid", "ts", "s", "name", "cat"}) would write it, without the tree.
        events.separate()?;
        write!(events.w, "{{\"ph\":\"i\",\"pid\":1,\"tid\":{tid},\"ts\":")?;
        serde_json::to_writer(&mut *events.w, &us(e.t)).map_err(std::io::Error::other)?;
        write!(events.w, ",\"s\":\"{scope}\",\"name\":")?;
        serde_json::to_writer(&mut *events.w, &name).map_err(std::io::Error::other)?;
        write!(events.w, ",\"cat\":\"{}\"}}", e.kind.name())?;
    }
    for (t, v) in &r.transitions_series {
        events.push(
            json!({"ph": "C", "pid": 1, "tid": 0, "ts": us(*t), "name": "leaseTransitions", "args": {"value": v}}),
        )?;
    }
    for (t, v) in &r.acting_series {
        events.push(
            json!({"ph": "C", "pid": 1, "tid": 0, "ts": us(*t), "name": "acting leaders", "args": {"value": v}}),
        )?;
    }
    let metadata = json!({"tool": "leasesim", "version": env!("CARGO_PKG_VERSION"), "scenario": out.scenario_name, "seed": out.seed, "unsafe_mode": out.unsafe_mode, "replay": out.replay});
    write!(events.w, "],\"displayTimeUnit\":\"ms\",\"metadata\":{metadata}}}")?;
    Ok(())
}

/// Writes trace events one by one, so a long trace is never held as one JSON tree.
struct EventSink<'a> {
    w: &'a mut dyn Write,
    first: bool,
}

impl EventSink<'_> {
    fn push(&mut self, event: Value) -> std::io::Result<()> {
        self.separate()?;
        serde_json::to_writer(&mut *self.w, &event).map_err(std::io::Error::other)
    }

    /// The comma before every event but the first.
    fn separate(&mut self) -> std::io::Result<()> {
        if !self.first {
            self.w.write_all(b",")?;
        }
        self.first = false;
        Ok(())
    }
}

/// The table printed after a run.
pub fn summary_table(out: &RunOutput) -> String {
    let m = &out.result.metrics;
    let mut s = String::new();
    s.push_str(&format!(
        "scenario  {}  (seed {}){}\n",
        out.scenario_name,
        out.seed,
        if out.unsafe_mode { "  UNSAFE configuration (teaching mode)" } else { "" }
    ));
    s.push_str(&format!(
        "simulated {} in {} events\n\n",
        format_duration(out.result.duration),
        out.result.events_processed
    ));
    let history = history_report(out);
    let mut rows = vec![
        (
            "dual-leader time",
            format!(
                "{:.3} s in {} window(s), longest {:.3} s",
                m.dual_leader_seconds, m.dual_leader_windows, m.max_dual_leader_seconds
            ),
        ),
        (
            "leaderless time",
            if m.leases.len() > 1 {
                // A sum over Leases can exceed the run's length: say it is one.
                format!("{:.3} s (sum over {} Leases, each below)", m.leaderless_seconds, m.leases.len())
            } else {
                format!("{:.3} s", m.leaderless_seconds)
            },
        ),
    ];
    if m.leases_never_elected > 0 {
        // Leaderless time counts from the first leader on: a Lease nobody led reads 0 there.
        let names: Vec<&str> = m.leases.iter().filter(|(_, l)| !l.elected).map(|(k, _)| k.as_str()).take(5).collect();
        let more = if m.leases_never_elected > 5 { ", …" } else { "" };
        rows.push(("never elected", format!("{} Lease(s): {}{more}", m.leases_never_elected, names.join(", "))));
    }
    if m.held_idle_seconds > 0.0 {
        rows.push((
            "held idle",
            format!("{:.3} s: a leader's elector renewed with no work running", m.held_idle_seconds),
        ));
    }
    if m.work_not_holder_seconds > 0.0 {
        rows.push((
            "work, not holder",
            format!("{:.3} s: work ran while the Lease named another or no one", m.work_not_holder_seconds),
        ));
    }
    rows.extend([
        (
            "leaseTransitions",
            if m.leases.len() > 1 {
                format!("{} (sum over {} Leases, each below)", m.lease_transitions, m.leases.len())
            } else {
                m.lease_transitions.to_string()
            },
        ),
        ("leader changes", m.leader_changes.to_string()),
        ("API requests", m.api_requests.to_string()),
        (
            "failovers",
            if m.failover_seconds.is_empty() {
                "none".into()
            } else {
                m.failover_seconds.iter().map(|f| format!("{f:.3} s")).collect::<Vec<_>>().join(", ")
            },
        ),
    ]);
    if let Some(h) = &history {
        rows.push((
            "protected object",
            format!(
                "{} non-holder write(s), {} lost update(s); dual windows: {} corrupted it, {} harmless",
                h.non_holder_writes.len(),
                h.lost_updates.len(),
                h.corrupting_windows,
                h.harmless_windows
            ),
        ));
    }
    for (k, v) in rows {
        s.push_str(&format!("  {k:<18} {v}\n"));
    }
    s.push('\n');
    if m.leases.len() > 1 {
        let lw = m.leases.keys().map(|k| k.chars().count()).max().unwrap_or(5).max(5);
        let groups = crate::report::groups_by_key(&out.lease_groups);
        let settings = |key: &str| groups.get(key).map(|g| g.label.clone()).unwrap_or_default();
        let sw = m.leases.keys().map(|k| settings(k).chars().count()).max().unwrap_or(8).max(8);
        s.push_str(&format!(
            "  {:<lw$}  {:<sw$}  {:>9}  {:>7}  {:>11}  {:>11}\n",
            "Lease", "settings", "dual s", "windows", "leaderless s", "transitions"
        ));
        for (key, l) in &m.leases {
            s.push_str(&format!(
                "  {:<lw$}  {:<sw$}  {:>9.3}  {:>7}  {:>11.3}  {:>11}\n",
                key,
                settings(key),
                l.dual_leader_seconds,
                l.dual_leader_windows,
                l.leaderless_seconds,
                l.lease_transitions
            ));
        }
        s.push('\n');
    }
    let width = m.nodes.keys().map(|k| k.len()).max().unwrap_or(4).max(4);
    s.push_str(&format!(
        "  {:<width$}  {:>9}  {:>5}  {:>8}  {:>9}  {:>11}\n",
        "node", "leader s", "acq", "writes", "conflicts", "split-brain"
    ));
    for (name, n) in &m.nodes {
        s.push_str(&format!(
            "  {name:<width$}  {:>9.3}  {:>5}  {:>8}  {:>9}  {:>11}\n",
            n.acting_leader_seconds, n.acquisitions, n.writes_accepted, n.conflicts, n.split_brain_writes
        ));
    }
    if !out.expectations.is_empty() {
        s.push_str("\nexpectations\n");
        for e in &out.expectations {
            // The full text is in summary.json; the table keeps each line readable.
            let seen = if e.seen.chars().count() > 160 {
                format!("{}…", e.seen.chars().take(160).collect::<String>())
            } else {
                e.seen.clone()
            };
            s.push_str(&format!("  {}  {}   ({seen})\n", if e.passed { "PASS" } else { "FAIL" }, e.text));
        }
    }
    s.push_str(&format!("\nreplay: {}\n", out.replay));
    s
}

/// The plots (in `format`) and `report.html` of a run, as `(file name, bytes)`.
pub fn report_files(out: &RunOutput, format: ImageFormat) -> Result<Vec<(String, Vec<u8>)>, String> {
    use crate::report::{self, PlotMeta, ReportParts};
    let meta = PlotMeta {
        scenario: out.scenario_name.clone(),
        subtitle: out.subtitle.clone(),
        unsafe_mode: out.unsafe_mode,
        leases: out.lease_groups.clone(),
    };
    // Drawn once: the SVG files and the report's embedded plots are the same text.
    let timeline_svg = report::timeline_svg(&out.result, &meta)?;
    let transitions_svg = report::transitions_svg(&out.result, &meta)?;
    let svgs = format.wants_svg().then(|| (timeline_svg.clone(), transitions_svg.clone()));
    let mut files: Vec<(String, Vec<u8>)> = report::plot_files_with(&out.result, &meta, format, svgs)?
        .into_iter()
        .map(|f| (f.file_name, f.bytes))
        .collect();
    let parts = ReportParts {
        scenario: out.scenario_name.clone(),
        description: out.description.clone(),
        parameters: vec![
            ("parameters".into(), out.subtitle.clone()),
            ("seed".into(), out.seed.to_string()),
            ("simulated".into(), format_duration(out.result.duration)),
            ("unsafe mode".into(), if out.unsafe_mode { "yes (teaching)".into() } else { "no".into() }),
        ],
        metrics: report::summary_metric_rows(&out.result.metrics),
        node_table: report::node_metric_table(&out.result.metrics),
        lease_table: report::lease_metric_table(&out.result.metrics, &out.lease_groups),
        expectations: out.expectations.iter().map(|e| (e.text.clone(), e.passed, e.seen.clone())).collect(),
        replay_command: out.replay.clone(),
        unsafe_mode: out.unsafe_mode,
        timeline_svg,
        transitions_svg,
    };
    files.push(("report.html".into(), report::report_html(&parts).into_bytes()));
    Ok(files)
}

/// Writes every output of a run into `dir`, atomically.
pub fn write_run(dir: &Path, result: &RunOutput, format: ImageFormat) -> Result<(), String> {
    let mut staged = StagedDir::new(dir, crate::output::Command::Run)?;
    for (name, bytes) in report_files(result, format)? {
        staged.write(&name, bytes)?;
    }
    staged.write_with("summary.json", |w| Summary::of(result).write(w))?;
    staged.write_with("trace.jsonl", |w| write_trace_jsonl(result, w))?;
    if history_report(result).is_some() {
        staged.write_with("history.jsonl", |w| write_history_jsonl(result, w))?;
    }
    staged.write_with("trace.perfetto.json", |w| write_perfetto(result, w))?;
    staged.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `summary.json` is written straight from the run's values; its bytes are those of the
    /// JSON tree other callers build from the same [`Summary`] (actions, a history, windows and
    /// expectations included).
    #[test]
    fn the_summary_written_as_it_serialises_is_the_trees_text() {
        let (mut histories, mut actions) = (0, 0);
        for name in ["seed-lab", "gc-pause", "split-brain", "wedged-client"] {
            let loaded = crate::shipped::load_named(name, &[]).expect("shipped");
            let out = crate::run::run(&loaded, None, true).expect("runs");
            histories += usize::from(history_report(&out).is_some());
            actions += out.result.actions.len();
            let mut streamed = Vec::new();
            Summary::of(&out).write(&mut streamed).expect("written");
            let tree = crate::format::pretty_json(&summary_json(&out));
            assert_eq!(String::from_utf8(streamed).unwrap(), tree, "{name}");
        }
        assert!(histories > 0 && actions > 0, "a history and an action were written: {histories}, {actions}");
    }
}
