//! The observer: everything a run records, fed by the loop as things happen — who acts as
//! leader and when, each Lease's holder and transitions, dual-leader windows, spans for the
//! timelines, per-node and per-Lease metrics, the faults as they hit, and the trace.
//!
//! Every update costs O(1) (or O(nodes of one Lease)), whatever the size of the fleet: acting
//! time is summed per node from its own spans, each Lease keeps its own clocks, and the "most
//! acting leaders on any Lease" series is drawn at the end from each Lease's log of changes.

use super::result::{ActionOutcome, FaultRecord, RunResult, Span, SpanKind};
use crate::api::{LeaseRef, Verb};
use crate::metrics::{DualWindow, LeaseMetrics, Metrics, NodeMetrics};
use crate::sym::Sym;
use crate::time::{Nanos, as_secs_f64};
use crate::trace::{TraceEvent, TraceKind};
use std::sync::Arc;

/// One Lease the nodes elect on, and its leadership bookkeeping.
pub(super) struct LeaseTrack {
    pub(super) namespace: String,
    pub(super) name: Arc<str>,
    /// The server's number for it (none for the placeholder of a run without electors).
    pub(super) lease_ref: Option<LeaseRef>,
    /// The nodes electing on it, in node order.
    nodes: Vec<usize>,
    /// Nodes acting as its leader now.
    acting: usize,
    /// When it first had an acting leader (`None`: never yet).
    first_leader_at: Option<Nanos>,
    dual_start: Option<Nanos>,
    /// When `acting` last changed: the dual and leaderless clocks are brought up to date then.
    last_change: Nanos,
    dual_ns: Nanos,
    leaderless_ns: Nanos,
    windows: u64,
    max_window: Nanos,
    last_holder: Sym,
    /// The last non-empty holder, to count changes through a released (empty) holder too.
    previous_holder: Option<Sym>,
    last_transitions: Option<i32>,
    /// `(true time, leaseTransitions)` each time the server's value changed.
    transitions_series: Vec<(Nanos, i32)>,
    leader_changes: u64,
    /// A fault hit its acting leader at this time; the failover is measured to the next
    /// acquisition by another node.
    pub(super) pending_failover: Option<(Nanos, usize)>,
}

impl LeaseTrack {
    pub(super) fn new(namespace: &str, name: &str, lease_ref: Option<LeaseRef>) -> LeaseTrack {
        LeaseTrack {
            namespace: namespace.into(),
            name: name.into(),
            lease_ref,
            nodes: Vec::new(),
            acting: 0,
            first_leader_at: None,
            dual_start: None,
            last_change: 0,
            dual_ns: 0,
            leaderless_ns: 0,
            windows: 0,
            max_window: 0,
            last_holder: Sym::EMPTY,
            previous_holder: None,
            last_transitions: None,
            transitions_series: Vec::new(),
            leader_changes: 0,
            pending_failover: None,
        }
    }

    pub(super) fn key(&self) -> String {
        [&*self.namespace, "/", &*self.name].concat()
    }

    fn shared_key(&self) -> Arc<str> {
        self.key().into()
    }
}

pub(super) struct Observer {
    trace: Option<Vec<TraceEvent>>,
    /// The protected object's history (kept with the trace).
    pub(super) history: Vec<crate::history::HistoryOp>,
    names: Vec<Arc<str>>,
    pub(super) leases: Vec<LeaseTrack>,
    /// Index into `leases` of each node's Lease.
    pub(super) node_lease: Vec<usize>,
    acting: Vec<bool>,
    acting_since: Vec<Nanos>,
    acting_ns: Vec<Nanos>,
    /// Per node: its elector leads (started-leading until stopped-leading, exit or crash), the
    /// server's Lease names it, its identity now (a new one per start with
    /// `identity_per_start`), and when any of these or `acting` last changed.
    leading: Vec<bool>,
    holds: Vec<bool>,
    node_sym: Vec<Option<Sym>>,
    role_since: Vec<Nanos>,
    held_idle_ns: Vec<Nanos>,
    work_not_holder_ns: Vec<Nanos>,
    pub(super) node_metrics: Vec<NodeMetrics>,
    metrics: Metrics,
    /// Closed dual-leader windows with their Lease's index (listed by `in_leases_order`).
    dual_windows: Vec<(usize, DualWindow)>,
    open_spans: Vec<Option<(SpanKind, Nanos)>>,
    /// Closed spans, per node.
    spans: Vec<Vec<Span>>,
    transitions_series: Vec<(Nanos, i32)>,
    /// Each change of a Lease's acting leaders: (true time, Lease, count before, count after),
    /// in the order they happened. `finish` draws the run's series from it.
    acting_log: Vec<(Nanos, u32, u32, u32)>,
    /// Each failover as it ended: (true time, Lease, seconds), listed by `in_leases_order`.
    failovers: Vec<(Nanos, u32, f64)>,
    faults: Vec<FaultRecord>,
    actions: Vec<ActionOutcome>,
    /// Handled requests by (verb, status), in first-seen order (named and sorted at the end).
    requests: Vec<(Verb, u16, u64)>,
}

impl Observer {
    /// `trace`: the trace's initial capacity when the run is traced.
    pub(super) fn new(
        names: Vec<Arc<str>>,
        leases: Vec<LeaseTrack>,
        node_lease: Vec<usize>,
        trace: Option<usize>,
    ) -> Observer {
        let n = names.len();
        let mut leases = leases;
        for (node, &lease) in node_lease.iter().enumerate() {
            leases[lease].nodes.push(node);
        }
        Observer {
            trace: trace.map(Vec::with_capacity),
            names,
            leases,
            node_lease,
            acting: vec![false; n],
            acting_since: vec![0; n],
            acting_ns: vec![0; n],
            leading: vec![false; n],
            holds: vec![false; n],
            node_sym: vec![None; n],
            role_since: vec![0; n],
            held_idle_ns: vec![0; n],
            work_not_holder_ns: vec![0; n],
            node_metrics: vec![NodeMetrics::default(); n],
            metrics: Metrics::default(),
            dual_windows: Vec::new(),
            open_spans: vec![None; n * 4],
            spans: vec![Vec::new(); n],
            transitions_series: Vec::new(),
            acting_log: Vec::new(),
            failovers: Vec::new(),
            faults: Vec::new(),
            actions: Vec::new(),
            history: Vec::new(),
            requests: Vec::new(),
        }
    }

    #[inline]
    pub(super) fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// Records a trace event (`local`: the node's wall clock at `t`).
    #[inline]
    pub(super) fn trace(&mut self, t: Nanos, node: Option<usize>, local: Option<i64>, kind: TraceKind) {
        if let Some(trace) = self.trace.as_mut() {
            trace.push(TraceEvent { t, node, local, kind });
        }
    }

    pub(super) fn is_acting(&self, node: usize) -> bool {
        self.acting[node]
    }

    /// Whether an answer of `code` to `verb` has been counted already (its line exists).
    pub(super) fn counts_request(&self, verb: Verb, code: u16) -> bool {
        self.requests.iter().any(|&(v, c, _)| v == verb && c == code)
    }

    pub(super) fn count_request(&mut self, verb: Verb, code: u16) {
        self.count_requests(verb, code, 1);
    }

    /// `n` answers of `code` to `verb` (`n > 0`).
    pub(super) fn count_requests(&mut self, verb: Verb, code: u16, n: u64) {
        self.metrics.api_requests += n;
        match self.requests.iter_mut().find(|(v, c, _)| *v == verb && *c == code) {
            Some(entry) => entry.2 += n,
            None => self.requests.push((verb, code, n)),
        }
    }

    pub(super) fn record_fault(&mut self, fault: FaultRecord) {
        self.faults.push(fault);
    }

    pub(super) fn record_action(&mut self, outcome: ActionOutcome) {
        self.actions.push(outcome);
    }

    pub(super) fn open_span(&mut self, now: Nanos, node: usize, kind: SpanKind) {
        let slot = &mut self.open_spans[node * 4 + kind as usize];
        if slot.is_none() {
            *slot = Some((kind, now));
        }
    }

    pub(super) fn close_span(&mut self, now: Nanos, node: usize, kind: SpanKind) {
        if let Some((kind, from)) = self.open_spans[node * 4 + kind as usize].take()
            && now > from
        {
            self.spans[node].push(Span { node, kind, from, until: now });
        }
    }

    /// A fault hit `node` while it acted as leader: the failover clock of its Lease starts (if
    /// it is not running already).
    pub(super) fn fault_hit_leader(&mut self, now: Nanos, node: usize) {
        let lease = self.node_lease[node];
        if self.acting[node] && self.leases[lease].pending_failover.is_none() {
            self.leases[lease].pending_failover = Some((now, node));
        }
    }

    /// A faulted leader renewed again, unpaused and reachable, before anyone else took over:
    /// that fault caused no failover.
    pub(super) fn leader_recovered(&mut self, node: usize, unpaused_and_reachable: bool) {
        let lease = self.node_lease[node];
        if self.leases[lease].pending_failover.is_some_and(|(_, faulted)| faulted == node)
            && self.acting[node]
            && unpaused_and_reachable
        {
            self.leases[lease].pending_failover = None;
        }
    }

    /// Brings the Lease's dual-leader and leaderless clocks up to `now` (before its acting count
    /// changes, and at the end). Integer nanoseconds, per Lease: no other Lease is touched.
    fn advance_lease_clock(&mut self, lease: usize, now: Nanos) {
        let l = &mut self.leases[lease];
        let dt = now - l.last_change;
        if l.acting >= 2 {
            l.dual_ns += dt;
        }
        if l.acting == 0 && l.first_leader_at.is_some() {
            l.leaderless_ns += dt;
        }
        l.last_change = now;
    }

    /// Adds the time since `node`'s last change of role to its held-idle and
    /// work-while-not-holder clocks (before a change, and at the end).
    fn accrue_role(&mut self, node: usize, now: Nanos) {
        let dt = now - self.role_since[node];
        if self.leading[node] && !self.acting[node] {
            self.held_idle_ns[node] += dt;
        }
        if self.acting[node] && !self.holds[node] {
            self.work_not_holder_ns[node] += dt;
        }
        self.role_since[node] = now;
    }

    /// `node`'s elector starts or stops leading (its own term, whatever its work does).
    pub(super) fn set_leading(&mut self, now: Nanos, node: usize, leading: bool) {
        if self.leading[node] != leading {
            self.accrue_role(node, now);
            self.leading[node] = leading;
        }
    }

    /// `node` runs under the identity `sym` from now (at each process start).
    pub(super) fn set_node_sym(&mut self, now: Nanos, node: usize, sym: Sym) {
        self.accrue_role(node, now);
        self.node_sym[node] = Some(sym);
        self.holds[node] = self.leases[self.node_lease[node]].last_holder == sym && sym != Sym::EMPTY;
    }

    /// `node` starts or stops acting as its Lease's leader. Returns false if it already was in
    /// that state.
    pub(super) fn set_acting(&mut self, now: Nanos, node: usize, acting: bool) -> bool {
        if self.acting[node] == acting {
            return false;
        }
        self.accrue_role(node, now);
        let lease = self.node_lease[node];
        self.advance_lease_clock(lease, now);
        self.acting[node] = acting;
        let before = self.leases[lease].acting;
        if acting {
            self.acting_since[node] = now;
            self.leases[lease].acting += 1;
            self.leases[lease].first_leader_at.get_or_insert(now);
            self.node_metrics[node].acquisitions += 1;
            self.open_span(now, node, SpanKind::Leader);
            if let Some((fault_at, old)) = self.leases[lease].pending_failover.take()
                && old != node
            {
                self.failovers.push((now, lease as u32, as_secs_f64(now - fault_at)));
            }
        } else {
            self.leases[lease].acting -= 1;
            self.acting_ns[node] += now - self.acting_since[node];
            self.close_span(now, node, SpanKind::Leader);
        }
        self.acting_log.push((now, lease as u32, before as u32, self.leases[lease].acting as u32));
        let count = self.leases[lease].acting;
        if count >= 2 && self.leases[lease].dual_start.is_none() {
            self.leases[lease].dual_start = Some(now);
            if self.tracing() {
                let leaders = self.leases[lease]
                    .nodes
                    .iter()
                    .filter(|&&i| self.acting[i])
                    .map(|&i| self.names[i].to_string())
                    .collect();
                let lease = self.leases[lease].shared_key();
                self.trace(now, None, None, TraceKind::DualLeaderStart { lease, leaders });
            }
        } else if count < 2
            && let Some(from) = self.leases[lease].dual_start.take()
        {
            self.close_dual_window(lease, from, now);
        }
        true
    }

    /// The series of the most acting leaders of any one Lease (2 means a split brain), a
    /// point at each change, from the log of each Lease's changes. Changes at one instant are
    /// taken in the Leases' order (of first use), each Lease's in the order they happened: a
    /// run of the whole world and one run Lease by Lease (`world/phases.rs`) draw the same.
    fn acting_series(&mut self) -> Vec<(Nanos, usize)> {
        let mut log = std::mem::take(&mut self.acting_log);
        in_leases_order(&mut log, |&(t, lease, ..)| (t, lease as usize));
        // How many Leases have k acting leaders, and the largest k with any.
        let mut by_acting = vec![self.leases.len()];
        let mut most = 0usize;
        let mut series = vec![(0, 0)];
        for (t, _, from, to) in log {
            let (from, to) = (from as usize, to as usize);
            if by_acting.len() <= to {
                by_acting.resize(to + 1, 0);
            }
            by_acting[from] -= 1;
            by_acting[to] += 1;
            most = most.max(to);
            while most > 0 && by_acting[most] == 0 {
                most -= 1;
            }
            if series.last().map(|&(_, v)| v) != Some(most) {
                series.push((t, most));
            }
        }
        series
    }

    fn close_dual_window(&mut self, lease: usize, from: Nanos, until: Nanos) {
        // The leaders of the window: every node of this Lease with a leader span overlapping
        // it, and every one acting now.
        let track = &self.leases[lease];
        let leaders: Vec<String> = track
            .nodes
            .iter()
            .copied()
            .filter(|&i| {
                self.acting[i]
                    || self.spans[i].iter().any(|s| s.kind == SpanKind::Leader && s.from < until && s.until > from)
            })
            .map(|i| self.names[i].to_string())
            .collect();
        let track = &mut self.leases[lease];
        track.windows += 1;
        track.max_window = track.max_window.max(until - from);
        let window = DualWindow { from, until, leaders, lease: track.key() };
        if self.tracing() {
            let lease = self.leases[lease].shared_key();
            self.trace(until, None, None, TraceKind::DualLeaderEnd { lease, seconds: window.seconds() });
        }
        self.dual_windows.push((lease, window));
    }

    /// The Lease of `track` was written: its holder (`Sym::EMPTY` if none or absent) and
    /// transitions (0 if absent) now, at server revision `rv`.
    pub(super) fn lease_written(
        &mut self,
        now: Nanos,
        track: usize,
        holder: Sym,
        holder_name: impl FnOnce() -> Arc<str>,
        transitions: i32,
        rv: u64,
    ) {
        let t = &mut self.leases[track];
        let mut changed = false;
        if Some(transitions) != t.last_transitions {
            if track == 0 {
                self.transitions_series.push((now, transitions));
            }
            t.transitions_series.push((now, transitions));
            t.last_transitions = Some(transitions);
            changed = true;
        }
        if holder != t.last_holder {
            if holder != Sym::EMPTY {
                if t.previous_holder.is_some_and(|p| p != holder) {
                    t.leader_changes += 1;
                }
                t.previous_holder = Some(holder);
            }
            t.last_holder = holder;
            changed = true;
            // Which of its nodes the server names now: O(nodes of this Lease), on a change only.
            for k in 0..self.leases[track].nodes.len() {
                let node = self.leases[track].nodes[k];
                let holds = holder != Sym::EMPTY && self.node_sym[node] == Some(holder);
                if holds != self.holds[node] {
                    self.accrue_role(node, now);
                    self.holds[node] = holds;
                }
            }
        }
        if changed && self.tracing() {
            let lease = self.leases[track].shared_key();
            self.trace(now, None, None, TraceKind::LeaseChanged { lease, holder: holder_name(), transitions, rv });
        }
    }

    /// The run's results. `transitions` gives each tracked Lease's leaseTransitions on the
    /// server now; `clock_offsets` the sampled offsets of imperfect clocks.
    pub(super) fn finish(
        mut self,
        end: Nanos,
        transitions: impl Fn(usize) -> i64,
        clock_offsets: super::ClockOffsets,
        events_processed: u64,
    ) -> RunResult {
        for lease in 0..self.leases.len() {
            self.advance_lease_clock(lease, end);
        }
        for node in 0..self.names.len() {
            if self.acting[node] {
                self.acting_ns[node] += end - self.acting_since[node];
            }
            self.node_metrics[node].acting_leader_seconds = as_secs_f64(self.acting_ns[node]);
            self.accrue_role(node, end);
            let m = &mut self.node_metrics[node];
            m.held_idle_seconds = as_secs_f64(self.held_idle_ns[node]);
            m.work_not_holder_seconds = as_secs_f64(self.work_not_holder_ns[node]);
            self.metrics.held_idle_seconds += m.held_idle_seconds;
            self.metrics.work_not_holder_seconds += m.work_not_holder_seconds;
        }
        for lease in 0..self.leases.len() {
            if let Some(from) = self.leases[lease].dual_start.take() {
                self.close_dual_window(lease, from, end);
            }
        }
        in_leases_order(&mut self.dual_windows, |(lease, w)| ((w.from, w.until), *lease));
        let dual_windows = std::mem::take(&mut self.dual_windows).into_iter().map(|(_, w)| w).collect();
        let acting_series = self.acting_series();
        in_leases_order(&mut self.failovers, |&(t, lease, _)| (t, lease as usize));
        self.metrics.failover_seconds = self.failovers.iter().map(|&(.., seconds)| seconds).collect();
        for node in 0..self.names.len() {
            for kind in [SpanKind::Running, SpanKind::Leader, SpanKind::Paused, SpanKind::Partitioned] {
                self.close_span(end, node, kind);
            }
        }
        let mut spans: Vec<Span> = self.spans.into_iter().flatten().collect();
        spans.sort_by_key(|s| (s.node, s.kind, s.from));
        self.faults.sort_by_key(|f| f.at);
        for (verb, code, n) in &self.requests {
            let mut key = String::with_capacity(16);
            key.push_str(verb.name());
            key.push(' ');
            key.push_str(crate::digits::decimal(u64::from(*code), &mut [0; 20]));
            self.metrics.api_requests_by_verb_status.insert(key, *n);
        }
        // Whole-run figures add the Leases up; `leases` keeps each one's (for one Lease they agree).
        let mut per_lease = std::collections::BTreeMap::new();
        for (index, l) in self.leases.iter().enumerate().filter(|(_, l)| !l.name.is_empty()) {
            let m = LeaseMetrics {
                dual_leader_seconds: as_secs_f64(l.dual_ns),
                dual_leader_windows: l.windows,
                max_dual_leader_seconds: as_secs_f64(l.max_window),
                leaderless_seconds: as_secs_f64(l.leaderless_ns),
                first_leader_seconds: as_secs_f64(l.first_leader_at.unwrap_or(end)),
                elected: l.first_leader_at.is_some(),
                lease_transitions: transitions(index),
                leader_changes: l.leader_changes,
            };
            self.metrics.dual_leader_seconds += m.dual_leader_seconds;
            self.metrics.dual_leader_windows += m.dual_leader_windows;
            self.metrics.max_dual_leader_seconds = self.metrics.max_dual_leader_seconds.max(m.max_dual_leader_seconds);
            self.metrics.leaderless_seconds += m.leaderless_seconds;
            self.metrics.leases_never_elected += u64::from(!m.elected);
            self.metrics.lease_transitions += m.lease_transitions;
            self.metrics.leader_changes += m.leader_changes;
            per_lease.insert(l.key(), m);
        }
        self.metrics.leases = per_lease;
        for (name, m) in self.names.iter().zip(self.node_metrics) {
            self.metrics.nodes.insert(String::from(&**name), m);
        }
        let lease_transitions = self
            .leases
            .iter_mut()
            .filter(|l| !l.name.is_empty())
            .map(|l| (l.key(), std::mem::take(&mut l.transitions_series)))
            .collect();
        RunResult {
            lease_transitions,
            metrics: self.metrics,
            node_names: self.names.iter().map(|n| String::from(&**n)).collect(),
            node_leases: self.node_lease.iter().map(|&l| self.leases[l].key()).collect(),
            spans,
            dual_windows,
            transitions_series: self.transitions_series,
            acting_series,
            clock_offsets,
            faults: self.faults,
            actions: self.actions,
            trace: self.trace.unwrap_or_default(),
            history: self.history,
            duration: end,
            events_processed,
            events_stepped: 0,
        }
    }
}

/// Puts records in order of their instant (`key`'s first part), those of one instant in the
/// Leases' order (of first use), and one Lease's at one instant in the order they were made.
/// A run of the whole world makes one instant's records of several Leases in its queue's
/// order, a run Lease by Lease (`world/phases.rs`) in the Leases': both list them alike. The
/// records of a run of one Lease are in order already, and are not sorted again (a flapping
/// Lease changes often).
fn in_leases_order<T, K: Ord>(records: &mut [T], key: impl Fn(&T) -> (K, usize)) {
    if !records.is_sorted_by_key(&key) {
        records.sort_by_key(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::secs;

    /// Nodes a, b on Lease 0 and c on Lease 1.
    fn observer(traced: bool) -> Observer {
        let names: Vec<Arc<str>> = ["a", "b", "c"].into_iter().map(Arc::from).collect();
        let leases = vec![LeaseTrack::new("ns", "one", None), LeaseTrack::new("ns", "two", None)];
        Observer::new(names, leases, vec![0, 0, 1], traced.then_some(16))
    }

    fn finish(o: Observer, end: Nanos) -> RunResult {
        o.finish(end, |_| 0, Default::default(), 0)
    }

    #[test]
    fn two_leaders_of_one_lease_make_one_window_and_other_leases_are_apart() {
        let mut o = observer(true);
        assert!(o.set_acting(secs(1), 0, true));
        assert!(!o.set_acting(secs(1), 0, true), "already acting");
        o.set_acting(secs(2), 2, true); // another Lease: no window
        o.set_acting(secs(3), 1, true);
        o.set_acting(secs(5), 0, false);
        let r = finish(o, secs(10));
        assert_eq!(r.dual_windows.len(), 1);
        let w = &r.dual_windows[0];
        assert_eq!((w.from, w.until, w.lease.as_str()), (secs(3), secs(5), "ns/one"));
        assert_eq!(w.leaders, ["a", "b"]);
        assert_eq!(r.metrics.leases["ns/one"].dual_leader_seconds, 2.0);
        assert_eq!(r.metrics.leases["ns/two"].dual_leader_seconds, 0.0);
        assert_eq!(r.metrics.nodes["a"].acting_leader_seconds, 4.0);
        // The most acting leaders on any Lease: 1 from t=1, 2 from 3, 1 from 5.
        assert_eq!(r.acting_series, vec![(0, 0), (secs(1), 1), (secs(3), 2), (secs(5), 1)]);
        let kinds: Vec<&str> = r.trace.iter().map(|e| e.kind.name()).collect();
        assert_eq!(kinds, ["dual-leader-start", "dual-leader-end"]);
    }

    /// Nodes a, b on Lease 0 and c, d on Lease 1.
    fn two_by_two() -> Observer {
        let names: Vec<Arc<str>> = ["a", "b", "c", "d"].into_iter().map(Arc::from).collect();
        let leases = vec![LeaseTrack::new("ns", "one", None), LeaseTrack::new("ns", "two", None)];
        Observer::new(names, leases, vec![0, 0, 1, 1], None)
    }

    /// Changes of two Leases at one instant are taken in the Leases' order, whatever order the
    /// run made them in: a run Lease by Lease (`world/phases.rs`) makes them in that order, a
    /// run of the whole world in the order of its queue.
    #[test]
    fn one_instants_changes_on_two_leases_are_taken_in_the_leases_order() {
        let run = |lease_one_first: bool| {
            let mut o = two_by_two();
            o.set_acting(secs(1), 0, true);
            o.set_acting(secs(1), 2, true);
            o.set_acting(secs(1), 3, true);
            // At 5 s Lease "two" goes from two acting leaders to one and "one" from one to two.
            let changes = [(1, true), (3, false)];
            for (node, acting) in if lease_one_first { changes } else { [changes[1], changes[0]] } {
                o.set_acting(secs(5), node, acting);
            }
            // At 9 s both Leases' windows close.
            let closes = [0, 2];
            for node in if lease_one_first { closes } else { [closes[1], closes[0]] } {
                o.set_acting(secs(9), node, false);
            }
            finish(o, secs(10))
        };
        let (ordered, reversed) = (run(true), run(false));
        // Lease "one" first: the most acting stays 2 through 5 s, then falls to 1 at 9 s.
        assert_eq!(ordered.acting_series, vec![(0, 0), (secs(1), 1), (secs(1), 2), (secs(9), 1)]);
        assert_eq!(reversed.acting_series, ordered.acting_series);
        let windows =
            |r: &RunResult| r.dual_windows.iter().map(|w| (w.from, w.until, w.lease.clone())).collect::<Vec<_>>();
        assert_eq!(
            windows(&ordered),
            [(secs(1), secs(5), "ns/two".to_string()), (secs(5), secs(9), "ns/one".to_string())]
        );
        assert_eq!(windows(&reversed), windows(&ordered));
    }

    /// Failovers that end at one instant on two Leases are listed in the Leases' order.
    #[test]
    fn failovers_of_one_instant_are_listed_in_the_leases_order() {
        let mut o = two_by_two();
        o.set_acting(secs(1), 0, true);
        o.set_acting(secs(1), 2, true);
        o.fault_hit_leader(secs(5), 0);
        o.set_acting(secs(5), 0, false);
        o.fault_hit_leader(secs(6), 2);
        o.set_acting(secs(6), 2, false);
        // Lease "two" is taken over first, at the same instant.
        o.set_acting(secs(9), 3, true);
        o.set_acting(secs(9), 1, true);
        let r = finish(o, secs(10));
        assert_eq!(r.metrics.failover_seconds, vec![4.0, 3.0]);
    }

    /// Two windows with the same ends on two Leases are listed in the Leases' order.
    #[test]
    fn windows_alike_on_two_leases_are_listed_in_the_leases_order() {
        let mut o = two_by_two();
        for node in 0..4 {
            o.set_acting(secs(1), node, true);
        }
        // Lease "two"'s window closes first.
        for node in [3, 1] {
            o.set_acting(secs(4), node, false);
        }
        let r = finish(o, secs(10));
        let leases: Vec<&str> = r.dual_windows.iter().map(|w| w.lease.as_str()).collect();
        assert_eq!(leases, ["ns/one", "ns/two"]);
    }

    #[test]
    fn leaderless_time_counts_from_the_first_leader_on() {
        let mut o = observer(false);
        o.set_acting(secs(4), 0, true);
        o.set_acting(secs(6), 0, false);
        o.set_acting(secs(9), 1, true);
        let r = finish(o, secs(10));
        // 0-4 s before any leader is not counted; 6-9 s is.
        assert_eq!(r.metrics.leases["ns/one"].leaderless_seconds, 3.0);
        assert_eq!(r.metrics.leases["ns/two"].leaderless_seconds, 0.0);
        assert!(r.trace.is_empty(), "untraced");
        // Issue 32: "0 s leaderless" for a Lease nobody led is told apart: when each Lease
        // first had a leader, and which never did.
        let (one, two) = (&r.metrics.leases["ns/one"], &r.metrics.leases["ns/two"]);
        assert_eq!((one.elected, one.first_leader_seconds), (true, 4.0));
        assert_eq!((two.elected, two.first_leader_seconds), (false, 10.0));
        assert_eq!(r.metrics.leases_never_elected, 1);
    }

    /// Issue 32: "held, idle" is the elector leading with no work running; "work while not the
    /// holder" is work running while the server's Lease names someone else or no one.
    #[test]
    fn held_idle_and_work_while_not_holder_are_clocked_per_node() {
        let mut o = observer(false);
        let name = || Arc::from("x");
        o.set_node_sym(0, 0, Sym(1));
        o.set_node_sym(0, 1, Sym(2));
        o.lease_written(secs(1), 0, Sym(1), name, 0, 10);
        o.set_leading(secs(1), 0, true);
        o.set_acting(secs(1), 0, true);
        o.set_acting(secs(3), 0, false); // the work ends; the elector leads on
        o.set_leading(secs(7), 0, false);
        // b works from 8 s; the Lease names it only from 9 s.
        o.set_leading(secs(8), 1, true);
        o.set_acting(secs(8), 1, true);
        o.lease_written(secs(9), 0, Sym(2), name, 1, 11);
        // a restarts under a new identity: the Lease naming its old one is not its.
        o.set_node_sym(secs(9), 0, Sym(3));
        let r = finish(o, secs(10));
        let (a, b) = (&r.metrics.nodes["a"], &r.metrics.nodes["b"]);
        assert_eq!((a.held_idle_seconds, a.work_not_holder_seconds), (4.0, 0.0));
        assert_eq!((b.held_idle_seconds, b.work_not_holder_seconds), (0.0, 1.0));
        assert_eq!((r.metrics.held_idle_seconds, r.metrics.work_not_holder_seconds), (4.0, 1.0));
    }

    #[test]
    fn holder_changes_count_through_an_empty_holder_and_transitions_form_a_series() {
        let mut o = observer(true);
        let name = || Arc::from("x");
        o.lease_written(secs(1), 0, Sym(1), name, 0, 10);
        o.lease_written(secs(2), 0, Sym(1), name, 0, 11); // a renewal: no change, no trace
        o.lease_written(secs(3), 0, Sym::EMPTY, name, 0, 12); // released
        o.lease_written(secs(4), 0, Sym(1), name, 0, 13); // the same holder again: no change
        o.lease_written(secs(5), 0, Sym(2), name, 1, 14);
        let changes = o.leases[0].leader_changes;
        let r = finish(o, secs(10));
        assert_eq!(changes, 1);
        assert_eq!(r.transitions_series, vec![(secs(1), 0), (secs(5), 1)]);
        assert_eq!(r.trace.iter().filter(|e| e.kind.name() == "lease-changed").count(), 4);
    }

    #[test]
    fn a_failover_is_measured_from_the_fault_to_another_nodes_acquisition() {
        let mut o = observer(false);
        o.set_acting(secs(1), 0, true);
        o.fault_hit_leader(secs(10), 0);
        o.fault_hit_leader(secs(11), 0); // the clock is already running
        o.set_acting(secs(12), 0, false);
        o.set_acting(secs(25), 1, true);
        // A leader that renews again, unpaused and reachable, cancels its fault's clock.
        o.fault_hit_leader(secs(30), 1);
        o.leader_recovered(1, true);
        o.set_acting(secs(31), 1, false);
        o.set_acting(secs(40), 0, true);
        let r = finish(o, secs(50));
        assert_eq!(r.metrics.failover_seconds, vec![15.0]);
    }

    #[test]
    fn spans_open_once_and_close_only_when_time_passed() {
        let mut o = observer(false);
        o.open_span(secs(1), 2, SpanKind::Paused);
        o.open_span(secs(2), 2, SpanKind::Paused); // already open: keeps t=1
        o.close_span(secs(3), 2, SpanKind::Paused);
        o.open_span(secs(4), 2, SpanKind::Partitioned);
        o.close_span(secs(4), 2, SpanKind::Partitioned); // empty: dropped
        let r = finish(o, secs(5));
        let spans: Vec<_> = r.spans.iter().map(|s| (s.node, s.kind, s.from, s.until)).collect();
        assert_eq!(spans, vec![(2, SpanKind::Paused, secs(1), secs(3))]);
    }
}
