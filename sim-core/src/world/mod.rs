//! The world: nodes, their links, the API server, faults and the event loop that drives them.
//!
//! One [`World`] is one run. Everything in it is a function of its [`WorldSpec`] (which carries
//! the seed): no wall clock, no threads, no hash-order iteration. [`World::run`] pops events in
//! `(time, sequence)` order until the run's duration and returns a [`RunResult`].
//!
//! The parts own their state and never call each other; this file is the loop that routes
//! between them:
//! - `process` — each node's process, clock, elector and lock;
//! - `network` — links, server availability, the messages in flight and their timeouts;
//! - `reconciler` — the leader's work on its child object;
//! - `faults` — the timeline and the random fault processes;
//! - `actions` — scripted requests;
//! - `observe` — everything recorded: spans, windows, metrics, the trace.
//!
//! The hot path — a timer, a request, its answer — allocates nothing and formats nothing when
//! the trace is off, and costs the same whatever the number of nodes and Leases.

mod actions;
mod event;
mod faults;
mod injection;
mod network;
mod observe;
mod process;
mod reconciler;
mod recorder;
mod watch;

use crate::api::{ApiError, ApiServer, Kind, LeaseRef, Object, Verb};
use crate::clock::{ClockStep, NodeClock};
use crate::elector::{AfterLost, LockError, LockResult, Note, Output};
use crate::engine::EventQueue;
use crate::lock::LockRequest;
use crate::metrics::{DualWindow, Metrics};
use crate::model::{FaultKind, StopActing, WorldSpec};
use crate::net::{Cut, Delivery, Direction, Link, Partition};
use crate::prefetch::prefetch;
use crate::sym::Sym;
use crate::time::Nanos;
use crate::trace::{TraceEvent, TraceKind};
use event::{Event, Origin};
use faults::Faults;
use network::{Message, Network, Payload, Response};
use observe::{LeaseTrack, Observer};
use process::{ProcState, Process, WorkStop};
use reconciler::{Next, Reconciler};
use std::collections::HashMap;
use std::sync::Arc;

/// Records a trace event when the trace is on; with it off, the event is not even built.
macro_rules! trace {
    ($world:expr, $t:expr, $node:expr, $kind:expr) => {
        if $world.obs.tracing() {
            let kind = $kind;
            $world.record_trace($t, $node, kind);
        }
    };
}

// After the macro: these parts use `trace!`.
mod candidacy;
mod election;

/// A span of one node's life, for timelines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SpanKind {
    /// The process is running (candidate or leader).
    Running,
    Leader,
    Paused,
    Partitioned,
}

impl SpanKind {
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Running => "running",
            SpanKind::Leader => "leader",
            SpanKind::Paused => "paused",
            SpanKind::Partitioned => "partitioned",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub node: usize,
    pub kind: SpanKind,
    pub from: Nanos,
    pub until: Nanos,
}

/// A fault as it happened (target resolved), for timelines.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRecord {
    pub at: Nanos,
    pub node: Option<usize>,
    pub kind: String,
    pub detail: String,
}

/// What a scripted action got back.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionOutcome {
    pub name: String,
    pub at: Nanos,
    pub code: u16,
    pub reason: String,
    pub message: String,
    /// What kubectl would print on stderr for an error ("" on success).
    pub kubectl_stderr: String,
    /// The object returned, as JSON (Null for errors and can-i).
    pub object: serde_json::Value,
    /// For can-i: the answer.
    pub allowed: Option<bool>,
}

/// Why a world could not be built, in a form a caller can place in its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetupError {
    /// The API server refused setup object `index` of the spec.
    Object { index: usize, message: String },
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            SetupError::Object { index, message } => write!(f, "setup object #{index}: {message}"),
        }
    }
}

impl SetupError {
    /// Reads back a message `Display` wrote (World::new reports errors as text).
    pub fn parse(text: &str) -> Option<SetupError> {
        let rest = text.strip_prefix("setup object #")?;
        let (index, message) = rest.split_once(": ")?;
        Some(SetupError::Object { index: index.parse().ok()?, message: message.to_string() })
    }
}

/// A run stopped because it reached its event budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetExceeded {
    pub events: u64,
    /// True time reached, and the run's duration.
    pub at: Nanos,
    pub duration: Nanos,
}

/// Everything a run produced.
pub struct RunResult {
    pub metrics: Metrics,
    pub node_names: Vec<String>,
    /// Each node's Lease (`namespace/name`), in node order.
    pub node_leases: Vec<String>,
    pub spans: Vec<Span>,
    pub dual_windows: Vec<DualWindow>,
    /// `(true time, leaseTransitions)` each time the server's value changed, for the first
    /// node's Lease.
    pub transitions_series: Vec<(Nanos, i32)>,
    /// The same for every Lease elected on (`namespace/name`), in order of first use.
    pub lease_transitions: Vec<(String, Vec<(Nanos, i32)>)>,
    /// `(true time, number of acting leaders)` at each change.
    pub acting_series: Vec<(Nanos, usize)>,
    /// `(true time, node, wall offset ns)` samples for nodes whose clock is not perfect.
    pub clock_offsets: Vec<(Nanos, usize, i64)>,
    pub faults: Vec<FaultRecord>,
    pub actions: Vec<ActionOutcome>,
    pub trace: Vec<TraceEvent>,
    /// Every reconciler read and write of the child object as applied (with the trace only).
    pub history: Vec<crate::history::HistoryOp>,
    pub duration: Nanos,
    pub events_processed: u64,
}

pub struct World {
    spec: WorldSpec,
    queue: EventQueue<Event>,
    server: ApiServer,
    procs: Vec<Process>,
    net: Network,
    recs: Vec<Option<Reconciler>>,
    /// The child object whose value tells an overwrite: the first reconciler's
    /// (namespace, object, field).
    child_probe: Option<(String, String, String)>,
    child_last_writer: Option<usize>,
    faults: Faults,
    /// Events known before the run, latest first; the last one is in the queue.
    agenda: Vec<(Nanos, u64, Event)>,
    obs: Observer,
    /// `[[server.errors]]`.
    injector: injection::Injector,
    /// Lease watches (kube-coordinate's): who watches which Lease, the events on their way.
    watches: watch::Watches,
    /// Coordinated leader election: the apiserver's clock and controller, the candidacies
    /// (`None` when no node is coordinated: nothing else is paid then).
    cle: Option<Box<candidacy::Cle>>,
    /// Reused buffers: elector outputs, and events made stale by a kill or a restart.
    scratch: Vec<Output>,
    /// Whether the next event's state is prefetched: only for fleets whose state outgrows the
    /// caches (with a few nodes it is always in L1, and the prefetches only cost instructions).
    prefetching: bool,
    stale: Vec<Event>,
    events_processed: u64,
}

impl World {
    pub fn new(spec: WorldSpec) -> Result<World, String> {
        spec.validate()?;
        let mut server = ApiServer::new(spec.epoch);
        server.set_audit(false);
        // Node identities are interned before anything else: node i is Sym(i + 1).
        for (i, node) in spec.nodes.iter().enumerate() {
            let sym = server.intern(node.identity());
            debug_assert_eq!(sym.index(), i + 1, "identities are unique and interned first");
        }
        for (index, object) in spec.setup_objects.iter().enumerate() {
            server.seed(0, object.clone()).map_err(|e| SetupError::Object { index, message: e.message }.to_string())?;
        }
        // The Leases elected on, in order of first use; the server numbers them the same way.
        let mut leases: Vec<LeaseTrack> = Vec::new();
        let mut lease_index: HashMap<(&str, &str), usize> = HashMap::new();
        let mut node_lease = Vec::with_capacity(spec.nodes.len());
        for n in &spec.nodes {
            let (ns, name) = (n.elector.lease_namespace.as_str(), n.elector.lease_name.as_str());
            let index = *lease_index.entry((ns, name)).or_insert_with(|| {
                let lease_ref = server.lease_ref(ns, name);
                debug_assert_eq!(lease_ref.0 as usize, leases.len());
                leases.push(LeaseTrack::new(ns, name, Some(lease_ref)));
                leases.len() - 1
            });
            node_lease.push(index);
        }
        if leases.is_empty() {
            // No electors (a scenario of scripted actions): nothing is tracked.
            leases.push(LeaseTrack::new("", "", None));
        }
        let mut procs = Vec::with_capacity(spec.nodes.len());
        let mut links = Vec::with_capacity(spec.nodes.len());
        for (i, node) in spec.nodes.iter().enumerate() {
            let clock =
                NodeClock::new(node.clock.clone(), spec.epoch).map_err(|e| format!("node {}: {e}", node.identity()))?;
            let user = server.user_id(&node.user);
            let lease = leases[node_lease[i]].lease_ref.expect("an elected Lease has its number");
            let field_manager = server.intern(&node.lease_field_manager);
            procs.push(Process::new(node, Sym(i as u32 + 1), clock, user, lease, field_manager));
            links.push(Link::new(node.link.clone(), spec.seed, node.identity()));
        }
        let recs = spec.nodes.iter().map(|n| n.reconciler.clone().map(Reconciler::new)).collect();
        let child_probe = spec
            .nodes
            .iter()
            .find_map(|n| n.reconciler.as_ref())
            .map(|r| (r.namespace.clone(), r.object.clone(), r.field.clone()));
        let mut queue = EventQueue::with_capacity(64 + 8 * spec.nodes.len());
        // Everything known before the run (starts, the timeline's faults, actions, and the
        // occurrences of random fault processes, all drawn up front from each process's own
        // stream) is the agenda: sequence numbers are taken now, in this order, but only the
        // agenda's next event waits in the queue (see `run`), which keeps the queue small.
        let mut agenda: Vec<(Nanos, u64, Event)> = Vec::new();
        for (i, node) in spec.nodes.iter().enumerate() {
            agenda.push((node.start_at, queue.reserve_seq(), Event::Start { node: i as u32 }));
        }
        for (index, fault) in spec.faults.iter().enumerate() {
            agenda.push((fault.at, queue.reserve_seq(), Event::Fault { index: index as u32 }));
        }
        for (index, action) in spec.actions.iter().enumerate() {
            agenda.push((action.at, queue.reserve_seq(), Event::Action { index: index as u32 }));
        }
        let mut occurrences = Vec::new();
        let faults = Faults::new(spec.seed, &spec.random_faults, spec.duration, &mut occurrences);
        for (at, process) in occurrences {
            agenda.push((at, queue.reserve_seq(), Event::RandomFault { process }));
        }
        agenda.sort_by_key(|&(at, seq, _)| (at, seq));
        agenda.reverse(); // popped from the end
        if let Some(&(at, seq, event)) = agenda.last() {
            queue.schedule_reserved(at, seq, event);
        }
        let watches = watch::Watches::new(
            spec.nodes.len(),
            leases.len(),
            spec.nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| n.elector.algorithm.watches_lease())
                .map(|(i, _)| (node_lease[i], i as u32)),
        );
        let names = procs.iter().map(|p| p.identity.clone()).collect();
        let mut obs = Observer::new(names, leases, node_lease, spec.trace);
        // Server windows written in the spec's [server] table appear on timelines like faults.
        for &(from, until) in &spec.server.outages {
            let detail = crate::time::format_duration(until - from);
            obs.record_fault(FaultRecord { at: from, node: None, kind: "server-outage".into(), detail });
        }
        for &(from, until, extra) in &spec.server.slowdowns {
            let detail =
                format!("+{} for {}", crate::time::format_duration(extra), crate::time::format_duration(until - from));
            obs.record_fault(FaultRecord { at: from, node: None, kind: "server-slow".into(), detail });
        }
        let net = Network::new(links, spec.server.clone());
        let injector = injection::Injector::new(spec.seed, &spec.server_errors);
        let cle = if spec.nodes.iter().any(|n| n.candidacy.is_some()) {
            let clock =
                NodeClock::new(spec.server_clock.clone(), spec.epoch).map_err(|e| format!("server clock: {e}"))?;
            let candidates = spec
                .nodes
                .iter()
                .map(|n| {
                    n.candidacy
                        .as_ref()
                        .map(|c| candidacy::Candidacy::new(c, &n.elector.lease_namespace, &n.elector.lease_name))
                })
                .collect();
            // The garbage collector runs once at the controller's start, then every 30 minutes.
            queue.schedule(0, Event::ElectionGc);
            Some(Box::new(candidacy::Cle { clock, controller: election::Controller::new(), candidates }))
        } else {
            None
        };
        let prefetching = spec.nodes.len() > PREFETCH_FROM_NODES;
        Ok(World {
            spec,
            queue,
            server,
            procs,
            net,
            recs,
            child_probe,
            child_last_writer: None,
            faults,
            agenda,
            obs,
            injector,
            watches,
            cle,
            scratch: Vec::new(),
            prefetching,
            stale: Vec::new(),
            events_processed: 0,
        })
    }

    /// The API server, for inspection after (or during) a run.
    pub fn server(&self) -> &ApiServer {
        &self.server
    }

    /// Runs to the end of the spec's duration and hands back the Lease `namespace/name` as the
    /// server holds it then (for tests that check what was written).
    pub fn run_and_peek(mut self, namespace: &str, name: &str) -> (RunResult, Option<crate::api::Lease>) {
        if self.advance(u64::MAX, &mut |_, _| {}).is_err() {
            unreachable!("no budget");
        }
        let end = self.spec.duration;
        let lease = self.server.peek_lease(namespace, name).map(|l| (**l).clone());
        (self.finish(end), lease)
    }

    /// Runs to the end of the spec's duration.
    pub fn run(self) -> RunResult {
        match self.run_with(u64::MAX, &mut |_, _| {}) {
            Ok(result) => result,
            Err(_) => unreachable!("no budget"),
        }
    }

    /// Runs to the end, or stops with [`BudgetExceeded`] once `max_events` events have been
    /// handled. `progress` is called with (true time, events so far) every 65,536 events, for a
    /// progress bar (it cannot change the run).
    pub fn run_with(
        mut self,
        max_events: u64,
        progress: &mut dyn FnMut(Nanos, u64),
    ) -> Result<RunResult, BudgetExceeded> {
        self.advance(max_events, progress)?;
        let end = self.spec.duration;
        Ok(self.finish(end))
    }

    /// Handles events up to the end of the run (or the budget). One out-of-line copy, so the
    /// event handlers inline into it as they did into `run_with`.
    #[inline(never)]
    fn advance(&mut self, max_events: u64, progress: &mut dyn FnMut(Nanos, u64)) -> Result<(), BudgetExceeded> {
        let end = self.spec.duration;
        while let Some(t) = self.queue.peek_time() {
            if t > end {
                break;
            }
            if self.events_processed >= max_events {
                return Err(BudgetExceeded { events: self.events_processed, at: t, duration: end });
            }
            let (now, seq, event) = self.queue.pop_with_seq().expect("peeked");
            if self.agenda.last().is_some_and(|&(at, s, _)| (at, s) == (now, seq)) {
                self.agenda.pop();
                if let Some(&(at, seq, next)) = self.agenda.last() {
                    self.queue.schedule_reserved(at, seq, next);
                }
            }
            self.events_processed += 1;
            if self.events_processed & 0xffff == 0 {
                progress(now, self.events_processed);
            }
            if self.prefetching {
                self.prefetch_next();
            }
            self.handle(now, event);
        }
        Ok(())
    }

    /// Asks the memory system for the state of the node the next event belongs to while this
    /// one is handled. With thousands of nodes that state is rarely in cache, and the wait for
    /// it is most of an event's cost; a prefetch changes nothing else.
    #[inline]
    fn prefetch_next(&self) {
        self.prefetch_for(self.queue.peek());
    }

    #[inline]
    fn prefetch_for(&self, event: Option<&Event>) {
        let node = match event {
            Some(
                Event::Timer { node, .. }
                | Event::ReconcileTick { node, .. }
                | Event::Timeout { node, .. }
                | Event::Start { node },
            ) => *node as usize,
            Some(Event::Respond { msg }) => self.net.get(*msg).node as usize,
            Some(Event::Arrive { msg } | Event::Apply { msg }) => {
                let m = self.net.get(*msg);
                if let Payload::Lease { lease, .. } = &m.payload {
                    self.server.prefetch_lease(*lease);
                }
                m.node as usize
            }
            _ => return,
        };
        prefetch(&self.procs[node]);
        self.net.prefetch_link(node);
        // Counted on every send.
        prefetch(&self.obs.node_metrics[node].requests_sent);
    }

    // ---- event dispatch ----------------------------------------------------------------------

    fn handle(&mut self, now: Nanos, event: Event) {
        // Events a running, unpaused process must take: a dead process's are stale, a paused
        // one's wait until it resumes.
        let owner = match event {
            Event::Timer { node, incarnation, .. }
            | Event::StopActing { node, incarnation, .. }
            | Event::ReconcileTick { node, incarnation, .. }
            | Event::Timeout { node, incarnation, .. }
            | Event::Reset { node, incarnation, .. }
            | Event::Watch { node, incarnation }
            | Event::CandidateEnsure { node, incarnation, .. }
            | Event::CandidateWatch { node, incarnation } => Some((node as usize, incarnation)),
            Event::Respond { msg } | Event::Resend { msg } => {
                let m = self.net.get(msg);
                Some((m.node as usize, m.incarnation))
            }
            _ => None,
        };
        if let Some((node, incarnation)) = owner {
            let p = &mut self.procs[node];
            if p.incarnation != incarnation || p.state != ProcState::Running {
                self.discard(event);
                return;
            }
            if p.paused_until.is_some() {
                p.deferred.push(event);
                return;
            }
        }
        match event {
            Event::Start { node } => self.start_process(now, node as usize),
            Event::Timer { node, kind, generation, .. } => {
                let node = node as usize;
                trace!(self, now, Some(node), TraceKind::Timer { kind });
                let mut out = std::mem::take(&mut self.scratch);
                self.procs[node].drive(now, &mut out, |e, clock_now, out| e.on_timer(clock_now, kind, generation, out));
                self.process_outputs(now, node, out);
            }
            Event::ReconcileTick { node, generation, .. } => {
                let node = node as usize;
                if self.recs[node].as_ref().is_some_and(|r| r.active && r.generation == generation) {
                    self.reconcile(now, node);
                }
            }
            Event::Arrive { msg } => self.arrive(now, msg),
            Event::Apply { msg } => self.apply(now, msg),
            Event::Respond { msg } => {
                // Only an injected error can carry a Retry-After or a body that is not a Status.
                let injected = self.net.get(msg).injected.is_some();
                if injected && self.retry_after(now, msg) {
                    return;
                }
                let plain_text = injected && self.net.get(msg).injected.as_ref().is_some_and(|i| i.plain_text);
                let (node, id, origin, code, response) = self.net.take_answer(msg);
                let node = node as usize;
                trace!(self, now, Some(node), TraceKind::Response { id, code });
                match origin {
                    Origin::Elector => self.elector_response(now, node, id, response, plain_text),
                    Origin::Reconciler => self.reconciler_response(now, node, id, response),
                    Origin::Candidate => self.candidate_response(now, node, id, Some(response)),
                    Origin::Recorder => {}
                }
            }
            Event::Timeout { node, id, origin, .. } => self.timeout(now, node as usize, id, origin, LockError::Timeout),
            Event::Reset { node, id, origin, .. } => self.timeout(now, node as usize, id, origin, LockError::Refused),
            Event::Resend { msg } => self.resend(now, msg),
            Event::Resume { node, incarnation } => self.resume(now, node as usize, incarnation),
            Event::Probe { node, incarnation, failed } => self.probe(now, node as usize, incarnation, failed),
            Event::Fault { index } => {
                let fault = self.spec.faults[index as usize].clone();
                let holder = self.holder_node();
                let target = self.faults.resolve(&fault.target, holder, self.procs.len(), None);
                self.apply_fault(now, target, &fault.kind);
            }
            Event::RandomFault { process } => {
                let process = process as usize;
                let holder = self.holder_node();
                let rf = &self.spec.random_faults[process];
                let target = self.faults.resolve(&rf.target, holder, self.procs.len(), Some(process));
                let kind = self.faults.draw(process, rf);
                self.apply_fault(now, target, &kind);
            }
            Event::PartitionEnd { node } => {
                let node = node as usize;
                if !self.net.is_cut(node, now) {
                    self.obs.close_span(now, node, SpanKind::Partitioned);
                    if self.watches.take_broken(node) {
                        self.relist(now, node);
                    }
                }
                trace!(self, now, Some(node), TraceKind::PartitionEnd);
            }
            Event::Action { index } => self.run_action(now, index as usize),
            Event::StopActing { node, generation, .. } => self.work_stopped(now, node as usize, generation),
            Event::Watch { node, .. } => self.watch_event(now, node as usize),
            Event::CandidateEnsure { node, generation, .. } => self.candidate_ensure(now, node as usize, generation),
            Event::CandidateWatch { node, .. } => self.candidate_watch(now, node as usize),
            Event::Election { key, generation } => self.election_run(now, key as usize, generation),
            Event::ElectionGc => self.election_gc(now),
        }
    }

    /// Drops an event that will never be taken, freeing the message it holds.
    fn discard(&mut self, event: Event) {
        if let Event::Respond { msg } | Event::Resend { msg } = event {
            self.net.discard(msg);
        }
    }

    fn discard_stale(&mut self) {
        let mut stale = std::mem::take(&mut self.stale);
        for event in stale.drain(..) {
            self.discard(event);
        }
        self.stale = stale;
    }

    /// Records a trace event, with the node's wall clock (see `trace!`).
    fn record_trace(&mut self, t: Nanos, node: Option<usize>, kind: TraceKind) {
        let local = node.map(|n| self.procs[n].clock.wall(t));
        self.obs.trace(t, node, local, kind);
    }

    fn name(&self, sym: Sym) -> Arc<str> {
        self.server.symbols().name(sym).clone()
    }

    /// The node a Sym names, if any (node i is Sym(i + 1)).
    fn node_of(&self, sym: Sym) -> Option<usize> {
        let i = (sym.0 as usize).checked_sub(1)?;
        (i < self.procs.len()).then_some(i)
    }

    /// The node the first node's Lease names (with Leases side by side, "the holder" is the
    /// holder of the first node's Lease).
    fn holder_node(&self) -> Option<usize> {
        let lease = self.obs.leases[0].lease_ref?;
        let holder = self.server.lease_spec(lease)?.holder_identity?;
        self.node_of(holder)
    }

    // ---- processes ------------------------------------------------------------------------------

    fn start_process(&mut self, now: Nanos, node: usize) {
        if !self.procs[node].start(&self.spec.nodes[node], self.spec.seed, &mut self.stale) {
            return;
        }
        self.discard_stale();
        let incarnation = self.procs[node].starts;
        self.obs.open_span(now, node, SpanKind::Running);
        trace!(self, now, Some(node), TraceKind::ProcessStart { incarnation });
        if let Some(h) = &self.spec.nodes[node].healthz {
            let first = now.saturating_add(h.initial_delay);
            self.procs[node].probe_failures = 0;
            self.procs[node].probe_anchor = first;
            let incarnation = self.procs[node].incarnation;
            self.queue.schedule(first, Event::Probe { node: node as u32, incarnation, failed: false });
        }
        if self.cle.is_some() {
            self.candidate_start(now, node);
        }
        let mut out = std::mem::take(&mut self.scratch);
        self.procs[node].drive(now, &mut out, |e, clock_now, out| e.start(clock_now, out));
        self.process_outputs(now, node, out);
    }

    /// A liveness probe of client-go's health check, as the kubelet runs one (true time; a
    /// probe at a time, every period from the first, each waiting up to its timeout): the
    /// check (`LeaderElector.Check`) fails while the process believes it leads and its last
    /// observation is older than LeaseDuration + tolerance; a paused process answers nothing, so
    /// its probe fails at the timeout (or answers when it resumes, if that is sooner). After
    /// `failure_threshold` failures in a row the kubelet kills the container (at once: a stuck
    /// process would not act on SIGTERM) and starts it again after `restart_delay`.
    fn probe(&mut self, now: Nanos, node: usize, incarnation: u32, timed_out: bool) {
        let Some(h) = self.spec.nodes[node].healthz.clone() else { return };
        let p = &self.procs[node];
        if p.incarnation != incarnation || p.state != ProcState::Running {
            return;
        }
        let healthy = if timed_out {
            false
        } else if let Some(until) = p.paused_until {
            let answer_at = until.min(now.saturating_add(h.timeout));
            let failed = until > now.saturating_add(h.timeout);
            self.queue.schedule(answer_at, Event::Probe { node: node as u32, incarnation, failed });
            return;
        } else {
            let mono = p.clock.monotonic(now);
            p.elector.as_ref().is_none_or(|e| e.healthy(mono, h.tolerance))
        };
        if healthy {
            self.procs[node].probe_failures = 0;
        } else {
            self.procs[node].probe_failures += 1;
            let failures = self.procs[node].probe_failures;
            trace!(self, now, Some(node), TraceKind::ProbeFailed { failures });
            if failures >= h.failure_threshold {
                trace!(self, now, Some(node), TraceKind::LivenessKill);
                self.obs.record_fault(FaultRecord {
                    at: now,
                    node: Some(node),
                    kind: "liveness-kill".into(),
                    detail: format!("{failures} failed probes"),
                });
                self.kill(now, node, ProcState::Crashed);
                self.queue.schedule(now.saturating_add(h.restart_delay), Event::Start { node: node as u32 });
                return;
            }
        }
        // The next probe: the first period tick after now.
        let anchor = self.procs[node].probe_anchor;
        let k = (now.saturating_sub(anchor)) / h.period + 1;
        let next = anchor.saturating_add(k.saturating_mul(h.period));
        self.queue.schedule(next, Event::Probe { node: node as u32, incarnation, failed: false });
    }

    /// The process dies: nothing it does afterwards counts, though its requests already on the
    /// wire may still be applied.
    fn kill(&mut self, now: Nanos, node: usize, state: ProcState) {
        if !self.procs[node].is_running() {
            return;
        }
        self.stop_acting(now, node);
        self.procs[node].kill(state, &mut self.stale);
        self.discard_stale();
        if let Some(r) = self.recs[node].as_mut() {
            r.in_flight = None;
        }
        self.obs.close_span(now, node, SpanKind::Paused);
        self.obs.close_span(now, node, SpanKind::Running);
    }

    /// The node stops acting as leader: metrics close its span, its reconciler stops (a tick or
    /// response still in flight finds a newer generation and does nothing).
    fn stop_acting(&mut self, now: Nanos, node: usize) {
        self.obs.set_acting(now, node, false);
        if let Some(r) = self.recs[node].as_mut() {
            r.deactivate();
        }
    }

    fn resume(&mut self, now: Nanos, node: usize, incarnation: u32) {
        let p = &mut self.procs[node];
        if p.incarnation != incarnation || p.paused_until.is_none() {
            return;
        }
        p.paused_until = None;
        let mut deferred = std::mem::take(&mut p.deferred);
        self.obs.close_span(now, node, SpanKind::Paused);
        trace!(self, now, Some(node), TraceKind::PauseEnd);
        // Timers that expired during the pause and responses that arrived fire now, in the
        // order they would have.
        for event in deferred.drain(..) {
            self.queue.schedule(now, event);
        }
        self.procs[node].deferred = deferred;
    }

    fn feed_elector_result(&mut self, now: Nanos, node: usize, result: LockResult) {
        if matches!(result, Err(LockError::Conflict)) {
            self.obs.node_metrics[node].lease_conflicts += 1;
        }
        let mut out = std::mem::take(&mut self.scratch);
        self.procs[node].drive(now, &mut out, |e, clock_now, out| e.on_result(clock_now, result, out));
        self.process_outputs(now, node, out);
    }

    #[inline]
    fn elector_response(&mut self, now: Nanos, node: usize, id: u64, response: Response, plain_text: bool) {
        let Some((expected, verb)) = self.procs[node].elector_request else { return };
        if expected != id {
            return; // abandoned or timed out
        }
        self.procs[node].elector_request = None;
        let Response::Lease(result) = response else { unreachable!("elector requests are Lease requests") };
        let lock_result = match result {
            Err(code) if plain_text => Err(LockError::NotStatus(code)),
            result => self.procs[node].lock.response(verb, result),
        };
        self.feed_elector_result(now, node, lock_result);
    }

    /// Carries out what the elector asked for. New outputs produced while doing so (an
    /// immediate failure fed back) are appended to the same list and handled in order.
    fn process_outputs(&mut self, now: Nanos, node: usize, mut out: Vec<Output>) {
        let mut i = 0;
        while i < out.len() {
            let output = out[i];
            i += 1;
            match output {
                Output::Send { op, timeout } => match self.procs[node].lock.request(&op, &self.server) {
                    Err(LockError::Panic) => {
                        // An unrecovered panic in the lock code: the process dies on the spot.
                        trace!(self, now, Some(node), TraceKind::Crash);
                        self.kill(now, node, ProcState::Crashed);
                        break;
                    }
                    Err(e) => {
                        self.procs[node].drive(now, &mut out, |el, clock_now, out| el.on_result(clock_now, Err(e), out))
                    }
                    Ok(request) => {
                        let id = self.net.next_id();
                        let verb = request.verb();
                        self.procs[node].elector_request = Some((id, verb));
                        let lock = &self.procs[node].lock;
                        let payload = match request {
                            LockRequest::Typed(op) => Payload::Lease { lease: lock.lease(), user: lock.user(), op },
                            LockRequest::Generic(request) => Payload::Generic(request),
                        };
                        self.send(now, node, id, Origin::Elector, payload, (verb, Kind::Lease), timeout);
                    }
                },
                Output::Timer { kind, after, generation } => {
                    let p = &self.procs[node];
                    let at = p.clock.timer_fires_at(now, after);
                    let event = Event::Timer { node: node as u32, incarnation: p.incarnation, generation, kind };
                    self.queue.schedule(at, event);
                }
                Output::Abandon => self.procs[node].elector_request = None,
                Output::StartedLeading => {
                    // A stop still pending is for the previous term: this one goes on.
                    self.procs[node].work_stop = None;
                    trace!(self, now, Some(node), TraceKind::StartedLeading);
                    self.obs.set_acting(now, node, true);
                    let token = self.procs[node].lock.cached().and_then(|l| l.spec.lease_transitions);
                    if let Some(r) = self.recs[node].as_mut() {
                        r.activate(token);
                        self.reconcile(now, node);
                    }
                }
                // Whichever comes first ends the leader's work; the other finds it ended. The
                // node's `stop_acting` says when the work really stops.
                Output::LeaderContextDone | Output::StoppedLeading => match self.spec.nodes[node].stop_acting {
                    StopActing::AtOnce if self.procs[node].work_stop.is_none() => {
                        if self.obs.is_acting(node) {
                            trace!(self, now, Some(node), TraceKind::StoppedLeading);
                        }
                        self.stop_acting(now, node);
                    }
                    StopActing::After(after) if self.procs[node].work_stop.is_none() && self.obs.is_acting(node) => {
                        self.schedule_work_stop(now, node, after, WorkStop::Hook);
                    }
                    StopActing::Never if self.obs.is_acting(node) => self.procs[node].orphan_work = true,
                    _ => {}
                },
                Output::StopWork { after } => {
                    if self.obs.is_acting(node) && self.spec.nodes[node].stop_acting != StopActing::Never {
                        self.schedule_work_stop(now, node, after, WorkStop::Drain);
                    }
                }
                Output::NewLeader(holder) => {
                    if self.obs.tracing() {
                        let holder = self.name(holder);
                        trace!(self, now, Some(node), TraceKind::NewLeader { holder });
                    }
                }
                Output::Note(note) => {
                    if note == Note::RenewedLease {
                        let unpaused_and_reachable =
                            self.procs[node].paused_until.is_none() && !self.net.is_cut(node, now);
                        self.obs.leader_recovered(node, unpaused_and_reachable);
                    }
                    trace!(self, now, Some(node), TraceKind::Note { note })
                }
                Output::RecordEvent(what) => {
                    if self.spec.nodes[node].elector.record_events {
                        self.record_event(now, node, what);
                    }
                }
                Output::Exception(message) => {
                    trace!(self, now, Some(node), TraceKind::Exception { message });
                    // The leader's work thread outlives the loop: it acts on until the process ends.
                    self.procs[node].orphan_work = self.obs.is_acting(node);
                }
                Output::Exited => {
                    if self.procs[node].work_stop.is_some_and(|(why, _)| why == WorkStop::Hook) {
                        // OnStoppedLeading is still blocked in the hook: Run has not returned.
                        self.procs[node].exit_deferred = true;
                    } else {
                        self.process_exited(now, node)
                    }
                }
            }
        }
        out.clear();
        self.scratch = out;
    }

    /// The leader's work will stop `after` (local time) from now.
    #[cold]
    fn schedule_work_stop(&mut self, now: Nanos, node: usize, after: Nanos, why: WorkStop) {
        let p = &mut self.procs[node];
        p.work_stop_generation = p.work_stop_generation.wrapping_add(1);
        let generation = p.work_stop_generation;
        p.work_stop = Some((why, generation));
        let at = p.clock.timer_fires_at(now, after);
        let event = Event::StopActing { node: node as u32, incarnation: p.incarnation, generation };
        self.queue.schedule(at, event);
    }

    /// A scheduled stop of the leader's work is due.
    #[cold]
    fn work_stopped(&mut self, now: Nanos, node: usize, generation: u32) {
        if self.procs[node].work_stop.is_none_or(|(_, g)| g != generation) {
            return;
        }
        self.procs[node].work_stop = None;
        if self.obs.is_acting(node) {
            trace!(self, now, Some(node), TraceKind::StoppedLeading);
        }
        self.stop_acting(now, node);
        if std::mem::take(&mut self.procs[node].exit_deferred) {
            self.process_exited(now, node);
        }
    }

    /// Sends the Event an elector records (see `recorder`).
    fn record_event(&mut self, now: Nanos, node: usize, what: crate::elector::LeaderEvent) {
        let config = &self.spec.nodes[node].elector;
        let (namespace, lease_name) = (config.lease_namespace.clone(), config.lease_name.clone());
        let uid = self.server.peek_lease(&namespace, &lease_name).map(|l| l.metadata.uid.clone()).unwrap_or_default();
        let p = &self.procs[node];
        let source = recorder::EventSource {
            identity: &p.identity,
            namespace: &namespace,
            lease_name: &lease_name,
            lease_uid: &uid,
            lease_resource_version: p.lock.cached().map(|c| c.resource_version),
            wall: p.clock.wall(now),
            field_manager: &self.spec.nodes[node].lease_field_manager,
        };
        let (request, name) = recorder::event_request(&source, what, Arc::clone(self.server.user(p.user)));
        trace!(self, now, Some(node), TraceKind::EventRecorded { name: name.clone(), message: what.text() });
        let id = self.net.next_id();
        self.send(
            now,
            node,
            id,
            Origin::Recorder,
            Payload::Generic(Box::new(request)),
            (Verb::Create, Kind::Event),
            None,
        );
    }

    fn process_exited(&mut self, now: Nanos, node: usize) {
        trace!(self, now, Some(node), TraceKind::ProcessExit);
        let after =
            if self.procs[node].stop_requested { AfterLost::Exit } else { self.spec.nodes[node].elector.after_lost };
        let orphan_work = std::mem::take(&mut self.procs[node].orphan_work);
        if orphan_work && after != AfterLost::Rejoin && self.spec.nodes[node].stop_acting == StopActing::Never {
            // Work on the process context stops with the process.
            trace!(self, now, Some(node), TraceKind::StoppedLeading);
        }
        if orphan_work && after == AfterLost::Rejoin {
            // An exception left `run()` (the Python client) and the program calls it again: the
            // old leader's work thread was never told to stop, so the node goes on acting.
            // (Its reconciler stops with the old elector: leasesim keeps one loop per node.)
            if let Some(r) = self.recs[node].as_mut() {
                r.deactivate();
            }
            self.procs[node].kill(ProcState::Exited, &mut self.stale);
            self.discard_stale();
            self.obs.close_span(now, node, SpanKind::Running);
            self.queue.schedule(now, Event::Start { node: node as u32 });
            return;
        }
        self.kill(now, node, ProcState::Exited);
        match after {
            AfterLost::Exit => {}
            AfterLost::Restart { delay } => {
                self.queue.schedule(now.saturating_add(delay), Event::Start { node: node as u32 })
            }
            AfterLost::Rejoin => self.queue.schedule(now, Event::Start { node: node as u32 }),
        }
    }

    // ---- the network and the server ---------------------------------------------------------

    /// Sends a request from `node`; `what` is (verb, kind) for the trace, whose object name is
    /// the node's Lease or its reconciler's child.
    #[allow(clippy::too_many_arguments)]
    fn send(
        &mut self,
        now: Nanos,
        node: usize,
        id: u64,
        origin: Origin,
        payload: Payload,
        what: (Verb, Kind),
        timeout: Option<Nanos>,
    ) {
        if self.obs.tracing() {
            let (verb, kind) = what;
            let name = match (origin, kind, &payload) {
                (Origin::Reconciler, Kind::ConfigMap, _) => {
                    self.recs[node].as_ref().expect("a node with a reconciler").object_name.clone()
                }
                (Origin::Candidate, _, Payload::Generic(request)) => request.name.to_string().into(),
                (Origin::Recorder, _, Payload::Generic(request)) => match &request.body {
                    crate::api::Body::Json(body) => body["metadata"]["name"].as_str().unwrap_or("").into(),
                    _ => "".into(),
                },
                _ => self.obs.leases[self.obs.node_lease[node]].name.clone(),
            };
            let request = TraceKind::Request {
                id,
                origin: origin.name(),
                verb: verb_name(verb),
                resource: kind.resource(),
                name,
            };
            trace!(self, now, Some(node), request);
        }
        let incarnation = self.procs[node].incarnation;
        let timeout = timeout.map(|t| (self.procs[node].clock.timer_fires_at(now, t), self.queue.reserve_seq()));
        let msg = self.net.insert(Message {
            node: node as u32,
            incarnation,
            id,
            origin,
            verb: what.0,
            attempts: 0,
            timeout,
            payload,
            response: None,
            code: 0,
            injected: None,
        });
        self.transmit(now, msg);
    }

    #[inline]
    /// Puts the request in slot `msg` on its node's link: it arrives (perhaps after a `hold`
    /// partition heals), is lost (its timeout, if any, will fire) or is refused (it fails now).
    /// The message stays in its slot unless it will never arrive.
    fn transmit(&mut self, now: Nanos, msg: u32) {
        let m = self.net.get(msg);
        let (node, id, verb) = (m.node as usize, m.id, m.verb);
        self.obs.node_metrics[node].requests_sent.add(verb);
        match self.net.send(node, Direction::Up, now) {
            delivery @ (Delivery::Arrives(at) | Delivery::Held(at)) => {
                if matches!(delivery, Delivery::Held(_)) {
                    trace!(self, now, Some(node), TraceKind::Held { id, dir: "up", until: at });
                }
                // Arriving at or after its deadline, it has timed out first.
                let m = self.net.get_mut(msg);
                if let Some((t, seq)) = m.timeout
                    && at >= t
                {
                    m.timeout = None;
                    let event = timeout_event(m);
                    self.queue.schedule_reserved(t, seq, event);
                }
                self.queue.schedule(at, Event::Arrive { msg });
            }
            Delivery::Refused => {
                trace!(self, now, Some(node), TraceKind::Refused { id, dir: "up" });
                self.obs.node_metrics[node].requests_lost.add(verb);
                let message = self.net.remove(msg);
                self.queue.schedule(now, reset_event(&message));
            }
            lost => {
                let why = if lost == Delivery::Lost { "loss" } else { "partition" };
                trace!(self, now, Some(node), TraceKind::Lost { id, dir: "up", why });
                self.obs.node_metrics[node].requests_lost.add(verb);
                let mut message = self.net.remove(msg);
                self.arm_timeout(&mut message);
            }
        }
    }

    /// The request of `msg` will not be answered (or not before its deadline): its timeout,
    /// if it has one, goes on the queue now.
    fn arm_timeout(&mut self, message: &mut Message) {
        if let Some((t, seq)) = message.timeout.take() {
            let event = timeout_event(message);
            self.queue.schedule_reserved(t, seq, event);
        }
    }

    fn arrive(&mut self, now: Nanos, msg: u32) {
        if self.net.availability().is_down(now) {
            let mut message = self.net.remove(msg);
            trace!(self, now, None, TraceKind::ServerDown { id: message.id });
            self.obs.node_metrics[message.node as usize].requests_lost.add(message.verb);
            self.arm_timeout(&mut message);
            return;
        }
        if !self.injector.is_empty() {
            let m = self.net.get(msg);
            let (kind, name) = match &m.payload {
                Payload::Lease { lease, .. } => (Kind::Lease, self.server.lease_name(*lease)),
                Payload::Generic(r) => (r.kind, r.name.to_string()),
            };
            let (node, verb) = (m.node as usize, m.verb);
            if let Some(injected) = self.injector.check(now, node, verb, kind, &name) {
                let code = injected.error.code;
                self.net.get_mut(msg).injected = Some(Box::new(injected));
                trace!(self, now, Some(node), TraceKind::InjectedError { id: self.net.get(msg).id, code });
            }
        }
        let extra = self.net.availability().extra_processing(now);
        if extra > 0 {
            let at = now + extra;
            self.timeout_if_late(msg, at);
            self.queue.schedule(at, Event::Apply { msg });
        } else {
            self.apply(now, msg);
        }
    }

    /// If the next stage of `msg` comes at or after its deadline, the timeout fires first: it
    /// goes on the queue now.
    /// The error `[[server.errors]]` chose for message `msg`, as `apply` reads an answer.
    #[cold]
    fn injected_answer(&self, msg: u32) -> (Verb, Kind, Option<LeaseRef>, Answer) {
        let m = self.net.get(msg);
        let error = m.injected.as_ref().expect("an injected message").error.clone();
        match &m.payload {
            Payload::Lease { .. } => (m.verb, Kind::Lease, None, Answer::Lease(Err(error))),
            Payload::Generic(r) => (r.verb, r.kind, None, Answer::Object(Err(error))),
        }
    }

    fn timeout_if_late(&mut self, msg: u32, at: Nanos) {
        let m = self.net.get_mut(msg);
        if let Some((t, seq)) = m.timeout
            && at >= t
        {
            m.timeout = None;
            let event = Event::Timeout { node: m.node, incarnation: m.incarnation, id: m.id as u32, origin: m.origin };
            self.queue.schedule_reserved(t, seq, event);
        }
    }

    #[inline]
    fn apply(&mut self, now: Nanos, msg: u32) {
        let (node, id, origin) = {
            let m = self.net.get(msg);
            (m.node as usize, m.id, m.origin)
        };
        let rv_before = self.server.resource_version();
        let m = self.net.get(msg);
        // The child object's value before a reconciler write, to tell an overwrite.
        let child_before = match &m.payload {
            Payload::Generic(r) if origin == Origin::Reconciler && r.kind == Kind::ConfigMap && r.verb != Verb::Get => {
                self.child_value()
            }
            _ => None,
        };
        // The child's version before a reconciler request, for the history.
        let history_before = (self.obs.tracing()
            && origin == Origin::Reconciler
            && matches!(&m.payload, Payload::Generic(r) if r.kind == Kind::ConfigMap))
        .then(|| self.child_rv());
        let injected = m.injected.is_some();
        let (verb, kind, lease, result) = match &m.payload {
            // An injected error other than 504 stands in for the handling.
            _ if injected && !m.injected.as_ref().is_some_and(|i| i.applied) => self.injected_answer(msg),
            Payload::Lease { lease, user, op } => {
                let manager = if origin == Origin::Elector { self.procs[node].field_manager } else { Sym::EMPTY };
                let result = self.server.lease_request(now, *lease, *user, manager, op);
                (op.verb(), Kind::Lease, Some(*lease), Answer::Lease(result))
            }
            Payload::Generic(request) => {
                let result = self.server.handle(now, request);
                let lease = match request.kind {
                    Kind::Lease => self.server.find_lease_ref(&request.namespace, &request.name),
                    _ => None,
                };
                (request.verb, request.kind, lease, Answer::Object(result))
            }
        };
        // A 504 after handling: the work is done, the client hears the timeout.
        let result = if injected { self.injected_answer(msg).3 } else { result };
        let error = result.error();
        // POST answers 201 Created (apiserver `handlers/create.go`); everything else 200.
        let code = error.map_or(if verb == Verb::Create { 201 } else { 200 }, |e| e.code);
        self.net.get_mut(msg).code = code;
        self.obs.count_request(verb, code);
        let rv_after = self.server.resource_version();
        if self.obs.tracing() {
            let message = error.map(|e| e.message.clone()).unwrap_or_default();
            trace!(self, now, None, TraceKind::Applied { id, code, rv_before, rv_after, message });
        }
        if rv_after != rv_before
            && kind == Kind::Lease
            && let Some(lease) = lease
        {
            self.lease_written(now, lease);
        }
        // A LeaseCandidate written by a node: the controller's informer and the owner's hear of it.
        if kind == Kind::LeaseCandidate
            && error.is_none()
            && matches!(verb, Verb::Create | Verb::Update | Verb::Patch | Verb::Apply)
            && self.cle.is_some()
            && let Payload::Generic(r) = &self.net.get(msg).payload
        {
            let (namespace, name) = (r.namespace.to_string(), r.name.to_string());
            self.election_candidate_written(now, &namespace, &name);
        }
        if let Some(rv_before) = history_before {
            self.record_history(now, node, id, verb, error, rv_before);
        }
        if origin == Origin::Reconciler {
            self.account_reconciler_write(now, node, id, kind, verb, error, child_before);
        }
        let response = match (origin, result) {
            (_, Answer::Lease(r)) => Response::Lease(r.map_err(|e| e.code)),
            (Origin::Elector, Answer::Object(r)) => Response::Lease(match r {
                Ok(Object::Lease(l)) => Ok(self.server.view_of(&l)),
                Ok(_) => Err(500),
                Err(e) => Err(e.code),
            }),
            (Origin::Reconciler | Origin::Recorder | Origin::Candidate, Answer::Object(r)) => {
                Response::Object(r.map_err(|e| e.code))
            }
        };
        match self.net.send(node, Direction::Down, now) {
            delivery @ (Delivery::Arrives(at) | Delivery::Held(at)) => {
                if matches!(delivery, Delivery::Held(_)) {
                    trace!(self, now, Some(node), TraceKind::Held { id, dir: "down", until: at });
                }
                self.timeout_if_late(msg, at);
                self.net.get_mut(msg).response = Some(response);
                self.queue.schedule(at, Event::Respond { msg });
            }
            Delivery::Refused => {
                // The connection is reset under the answer: the client sees the error now.
                trace!(self, now, Some(node), TraceKind::Refused { id, dir: "down" });
                let message = self.net.remove(msg);
                self.obs.node_metrics[node].requests_lost.add(message.verb);
                self.queue.schedule(now, reset_event(&message));
            }
            lost => {
                let why = if lost == Delivery::Lost { "loss" } else { "partition" };
                trace!(self, now, Some(node), TraceKind::Lost { id, dir: "down", why });
                let mut message = self.net.remove(msg);
                self.obs.node_metrics[node].requests_lost.add(message.verb);
                self.arm_timeout(&mut message);
            }
        }
    }

    /// An error answer with a Retry-After that the client's transport retries itself: client-go's
    /// rest client for 429 and 5xx, any verb, up to 10 times (`rest/request.go` `checkWait`);
    /// urllib3 (the Python client) for 413, 429 and 503 on GET and PUT, three times. The client
    /// sleeps the Retry-After and sends the same request again, all under the first send's
    /// timeout (the context), which ends the retries if it comes first. Only the elector's
    /// requests are retried this way. Returns whether the answer was taken for a retry.
    #[cold]
    fn retry_after(&mut self, now: Nanos, msg: u32) -> bool {
        let m = self.net.get(msg);
        let Some(wait) = m.injected.as_ref().and_then(|i| i.retry_after) else { return false };
        let node = m.node as usize;
        if m.origin != Origin::Elector || self.procs[node].elector_request.map(|(id, _)| id) != Some(m.id) {
            return false;
        }
        let code = m.code;
        let python = self.spec.nodes[node].elector.algorithm == crate::elector::Algorithm::PythonClient;
        let retried = if python {
            matches!(code, 413 | 429 | 503) && matches!(m.verb, Verb::Get | Verb::Update) && m.attempts < 3
        } else {
            (code == 429 || code >= 500) && m.attempts < 10
        };
        if !retried {
            return false;
        }
        let id = m.id;
        let at = self.procs[node].clock.timer_fires_at(now, wait);
        trace!(self, now, Some(node), TraceKind::Response { id, code });
        trace!(self, now, Some(node), TraceKind::RetryAfter { id, wait_ns: wait });
        let m = self.net.get_mut(msg);
        m.response = None;
        m.injected = None;
        m.attempts += 1;
        match m.timeout {
            // The context ends first: the caller sees its error, not the status.
            Some((t, seq)) if at >= t => {
                let mut message = self.net.remove(msg);
                message.timeout = None;
                self.queue.schedule_reserved(t, seq, timeout_event(&message));
            }
            _ => self.queue.schedule(at, Event::Resend { msg }),
        }
        true
    }

    /// Sends a request again after its Retry-After, unless its caller has stopped waiting.
    fn resend(&mut self, now: Nanos, msg: u32) {
        let m = self.net.get(msg);
        let node = m.node as usize;
        if self.procs[node].elector_request.map(|(id, _)| id) != Some(m.id) {
            self.net.discard(msg);
            return;
        }
        if self.obs.tracing() {
            let m = self.net.get(msg);
            let name = self.obs.leases[self.obs.node_lease[node]].name.clone();
            let request = TraceKind::Request {
                id: m.id,
                origin: m.origin.name(),
                verb: verb_name(m.verb),
                resource: Kind::Lease.resource(),
                name,
            };
            trace!(self, now, Some(node), request);
        }
        self.transmit(now, msg);
    }

    /// The request `id` failed at the client: its timeout (`error` Timeout) or a refused
    /// connection (Refused).
    fn timeout(&mut self, now: Nanos, node: usize, id: u32, origin: Origin, error: LockError) {
        match origin {
            Origin::Elector => {
                if let Some((request, _)) = self.procs[node].elector_request
                    && request as u32 == id
                {
                    self.procs[node].elector_request = None;
                    if error == LockError::Timeout {
                        trace!(self, now, Some(node), TraceKind::Timeout { id: request });
                    }
                    self.feed_elector_result(now, node, Err(error));
                }
            }
            Origin::Reconciler => {
                let in_flight = self.recs[node].as_ref().and_then(|r| r.in_flight).map(|(r, _)| r);
                if let Some(request) = in_flight
                    && request as u32 == id
                {
                    trace!(self, now, Some(node), TraceKind::Timeout { id: request });
                    if let Some(r) = self.recs[node].as_mut() {
                        r.in_flight = None;
                    }
                    self.arm_reconcile(now, node);
                }
            }
            Origin::Candidate => {
                if error == LockError::Timeout {
                    trace!(self, now, Some(node), TraceKind::Timeout { id: id as u64 });
                }
                // The request id's low 32 bits are unique within a run (see `Event::Timeout`).
                let full = self.cle.as_ref().and_then(|c| c.candidates[node].as_ref()).and_then(|c| c.in_flight_id());
                if let Some(full) = full.filter(|f| *f as u32 == id) {
                    self.candidate_response(now, node, full, None);
                }
            }
            Origin::Recorder => {}
        }
    }

    /// A Lease the election controller wrote (by name).
    #[cold]
    fn lease_written_by_name(&mut self, now: Nanos, namespace: &str, name: &str) {
        if let Some(lease) = self.server.find_lease_ref(namespace, name) {
            self.lease_written(now, lease);
        }
    }

    /// Tracks a Lease on the server after a write to it.
    fn lease_written(&mut self, now: Nanos, lease: LeaseRef) {
        if self.watches.any() {
            self.notify_watchers(now, lease);
        }
        if self.cle.is_some() {
            self.election_lease_written(now, lease);
        }
        let track = lease.0 as usize;
        if track >= self.obs.leases.len() || self.obs.leases[track].lease_ref != Some(lease) {
            return; // a Lease no node elects on
        }
        let (holder, transitions) = match self.server.lease_spec(lease) {
            Some(s) => (s.holder_identity.unwrap_or(Sym::EMPTY), s.lease_transitions.unwrap_or(0)),
            None => (Sym::EMPTY, 0),
        };
        let rv = self.server.resource_version();
        // The holder's name only for a trace of a change: cloning its `Arc` on every renewal
        // touched the name's heap block, out of cache in a large fleet.
        let server = &self.server;
        self.obs.lease_written(now, track, holder, || server.symbols().name(holder).clone(), transitions, rv);
    }

    // ---- watches ----------------------------------------------------------------------------

    /// Every node watching `lease` gets the Lease as it is now, after its link's down latency.
    #[cold]
    fn notify_watchers(&mut self, now: Nanos, lease: LeaseRef) {
        let track = lease.0 as usize;
        let view = self.server.lease_view(lease);
        for i in 0..self.watches.watchers(track).len() {
            let node = self.watches.watchers(track)[i] as usize;
            self.send_watch_event(now, node, view.clone());
        }
    }

    /// The watch re-lists after its connection broke: the Lease as it is now.
    #[cold]
    fn relist(&mut self, now: Nanos, node: usize) {
        let view = self.server.lease_view(self.procs[node].lease);
        self.send_watch_event(now, node, view);
    }

    fn send_watch_event(&mut self, now: Nanos, node: usize, view: Option<crate::api::LeaseView>) {
        if !self.procs[node].is_running() {
            return;
        }
        let incarnation = self.procs[node].incarnation;
        match self.net.send(node, Direction::Down, now) {
            Delivery::Arrives(at) | Delivery::Held(at) => {
                self.watches.push(node, incarnation, view);
                self.queue.schedule(at, Event::Watch { node: node as u32, incarnation });
            }
            // A message lost at random: the event is missed; the next one carries the newer Lease.
            Delivery::Lost => {}
            // The connection is cut: the watch breaks and re-lists when the cut heals.
            Delivery::Partitioned | Delivery::Refused => self.watches.set_broken(node),
        }
    }

    /// A watch event reaches `node`: its lock keeps the Lease, its elector sees it.
    #[cold]
    fn watch_event(&mut self, now: Nanos, node: usize) {
        let incarnation = self.procs[node].incarnation;
        let Some(view) = self.watches.pop(node, incarnation) else { return };
        let record = view.as_ref().map(|v| crate::lock::record_of(&v.spec));
        if let Some(view) = view {
            self.procs[node].lock.observe(view);
        }
        let mut out = std::mem::take(&mut self.scratch);
        self.procs[node].drive(now, &mut out, |e, clock_now, out| e.on_watch(clock_now, record, out));
        self.process_outputs(now, node, out);
    }

    // ---- reconcilers ------------------------------------------------------------------------

    /// The child object's resourceVersion (`None`: it does not exist).
    fn child_rv(&self) -> Option<u64> {
        let (ns, object, _) = self.child_probe.as_ref()?;
        self.server.peek_config_map(ns, object).and_then(|cm| cm.metadata.resource_version.parse().ok())
    }

    /// One reconciler request on the child, as the server just applied it (`crate::history`).
    #[cold]
    #[inline(never)]
    fn record_history(
        &mut self,
        now: Nanos,
        node: usize,
        id: u64,
        verb: Verb,
        error: Option<&ApiError>,
        rv_before: Option<u64>,
    ) {
        let Some(r) = self.recs[node].as_ref() else { return };
        if r.in_flight.is_none_or(|(expected, _)| expected != id) {
            return; // an answer to a request the reconciler gave up on is still applied, but
            // its send time is gone; such requests are rare (a timeout shorter than the latency)
        }
        let kind = if verb == Verb::Get { crate::history::OpKind::Read } else { crate::history::OpKind::Write };
        let outcome = match error {
            None => "ok",
            Some(e) if e.code == 409 && e.reason.as_str() == "AlreadyExists" => "already-exists",
            Some(e) if e.code == 409 => "conflict",
            Some(_) => "error",
        };
        let lease = self.procs[node].lease;
        let holder = self.server.lease_spec(lease).and_then(|s| s.holder_identity).unwrap_or(Sym::EMPTY);
        let op = crate::history::HistoryOp {
            node,
            kind,
            verb: verb_name(verb),
            mode: r.spec.mode.name(),
            sent: r.sent_at,
            applied: now,
            rv_before,
            rv_after: self.child_rv(),
            based_on: (kind == crate::history::OpKind::Write && r.reads_before_writing())
                .then_some(r.read_rv)
                .flatten(),
            token: r.token,
            holder: self.name(holder).to_string(),
            writer: self.procs[node].identity.to_string(),
            outcome,
            value: (kind == crate::history::OpKind::Write).then(|| r.spec.value.clone()),
        };
        self.obs.history.push(op);
    }

    fn child_value(&self) -> Option<String> {
        let (ns, object, field) = self.child_probe.as_ref()?;
        self.server.peek_config_map(ns, object).and_then(|cm| cm.data.get(field).cloned())
    }

    fn reconcile(&mut self, now: Nanos, node: usize) {
        let Some(r) = self.recs[node].as_ref() else { return };
        let p = &self.procs[node];
        let Some(send) = r.round(&p.identity, self.server.user(p.user), p.user, p.lease) else { return };
        self.send_reconciler(now, node, send);
    }

    fn send_reconciler(&mut self, now: Nanos, node: usize, send: reconciler::Send) {
        let id = self.net.next_id();
        let r = self.recs[node].as_mut().expect("a node with a reconciler");
        r.in_flight = Some((id, send.step));
        r.sent_at = now;
        let timeout = r.spec.timeout;
        self.send(now, node, id, Origin::Reconciler, send.payload, (send.verb, send.kind), Some(timeout));
    }

    fn arm_reconcile(&mut self, now: Nanos, node: usize) {
        let incarnation = self.procs[node].incarnation;
        let Some(r) = self.recs[node].as_ref() else { return };
        if !r.active {
            return;
        }
        let at = self.procs[node].clock.timer_fires_at(now, r.spec.period);
        let event = Event::ReconcileTick { node: node as u32, incarnation, generation: r.generation };
        self.queue.schedule(at, event);
    }

    fn reconciler_response(&mut self, now: Nanos, node: usize, id: u64, response: Response) {
        let Some(r) = self.recs[node].as_mut() else { return };
        let Some((expected, step)) = r.in_flight else { return };
        if expected != id {
            return;
        }
        r.in_flight = None;
        if !r.active {
            return;
        }
        let p = &self.procs[node];
        let next = r.after(step, response, p.sym, &p.identity, self.server.user(p.user));
        match next {
            Next::Rearm => self.arm_reconcile(now, node),
            Next::Fenced(holder) => {
                self.obs.node_metrics[node].fenced_rejections += 1;
                if self.obs.tracing() {
                    let lease_holder = self.name(holder);
                    trace!(self, now, Some(node), TraceKind::FencedRejection { lease_holder });
                }
                self.arm_reconcile(now, node);
            }
            Next::Send(send) => self.send_reconciler(now, node, send),
        }
    }

    /// Counts a reconciler write at the server, where its effect (and damage) happens.
    #[allow(clippy::too_many_arguments)]
    fn account_reconciler_write(
        &mut self,
        now: Nanos,
        node: usize,
        id: u64,
        kind: Kind,
        verb: Verb,
        error: Option<&ApiError>,
        child_before: Option<String>,
    ) {
        if kind != Kind::ConfigMap || verb == Verb::Get {
            return;
        }
        let outcome = match error {
            None => {
                let m = &mut self.obs.node_metrics[node];
                m.writes_accepted += 1;
                let value = self.spec.nodes[node].reconciler.as_ref().map(|r| &r.value);
                if let Some(prev) = self.child_last_writer
                    && prev != node
                    && child_before.is_some()
                    && child_before.as_ref() != value
                {
                    m.overwrites += 1;
                }
                self.child_last_writer = Some(node);
                let lease = self.procs[node].lease;
                let holder = self.server.lease_spec(lease).and_then(|s| s.holder_identity).unwrap_or(Sym::EMPTY);
                if holder != Sym::EMPTY && holder != self.procs[node].sym {
                    self.obs.node_metrics[node].split_brain_writes += 1;
                    if self.obs.tracing() {
                        let lease_holder = self.name(holder);
                        trace!(self, now, Some(node), TraceKind::SplitBrainWrite { id, lease_holder });
                    }
                }
                "accepted"
            }
            Some(e) if e.code == 409 && e.reason.as_str() == "AlreadyExists" => {
                self.obs.node_metrics[node].already_exists += 1;
                "already-exists"
            }
            Some(e) if e.code == 409 => {
                self.obs.node_metrics[node].conflicts += 1;
                "conflict"
            }
            Some(_) => "error",
        };
        if self.obs.tracing() {
            let (code, message) = match error {
                None => (200, String::new()),
                Some(e) => (e.code, e.message.clone()),
            };
            trace!(self, now, Some(node), TraceKind::ReconcileWrite { id, code, outcome, message });
        }
    }

    // ---- faults -----------------------------------------------------------------------------

    fn apply_fault(&mut self, now: Nanos, node: Option<usize>, kind: &FaultKind) {
        let detail = faults::detail(kind);
        let server_fault = matches!(kind, FaultKind::ServerOutage { .. } | FaultKind::ServerSlow { .. });
        if node.is_none() && !server_fault {
            return; // e.g. "the holder" when nobody holds the lease
        }
        self.obs.record_fault(FaultRecord { at: now, node, kind: kind.name().to_string(), detail });
        if let Some(n) = node
            && faults::hits_leadership(kind)
        {
            self.obs.fault_hit_leader(now, n);
        }
        match *kind {
            FaultKind::Crash => {
                let n = node.expect("node fault");
                if self.procs[n].is_running() {
                    trace!(self, now, Some(n), TraceKind::Crash);
                    self.kill(now, n, ProcState::Crashed);
                }
            }
            FaultKind::Restart { delay } => {
                let n = node.expect("node fault");
                if self.procs[n].is_running() {
                    trace!(self, now, Some(n), TraceKind::Crash);
                    self.kill(now, n, ProcState::Crashed);
                }
                self.queue.schedule(now.saturating_add(delay), Event::Start { node: n as u32 });
            }
            FaultKind::Pause { duration } => {
                let n = node.expect("node fault");
                let p = &mut self.procs[n];
                if !p.is_running() || p.paused_until.is_some() {
                    return;
                }
                let until = now.saturating_add(duration);
                p.paused_until = Some(until);
                let incarnation = p.incarnation;
                self.queue.schedule(until, Event::Resume { node: n as u32, incarnation });
                self.obs.open_span(now, n, SpanKind::Paused);
                trace!(self, now, Some(n), TraceKind::PauseStart { until });
            }
            FaultKind::Stop => {
                let n = node.expect("node fault");
                if !self.procs[n].is_running() {
                    return;
                }
                self.procs[n].stop_requested = true;
                trace!(self, now, Some(n), TraceKind::StopRequested);
                let mut out = std::mem::take(&mut self.scratch);
                self.procs[n].drive(now, &mut out, |e, clock_now, out| e.stop(clock_now, out));
                self.process_outputs(now, n, out);
            }
            FaultKind::ClockStep { delta_ns } => {
                let n = node.expect("node fault");
                self.procs[n].clock.add_step(ClockStep { at: now, delta_ns });
                trace!(self, now, Some(n), TraceKind::ClockStep { delta_ns });
            }
            FaultKind::Partition { duration, cut, mode } => {
                let n = node.expect("node fault");
                let until = now.saturating_add(duration);
                self.net.link_mut(n).add_partition(Partition { from: now, until, cut, mode });
                self.obs.open_span(now, n, SpanKind::Partitioned);
                let cut_name = match cut {
                    Cut::Up => "up",
                    Cut::Down => "down",
                    Cut::Both => "both",
                };
                trace!(self, now, Some(n), TraceKind::PartitionStart { cut: cut_name, until });
                if until <= self.spec.duration {
                    self.queue.schedule(until, Event::PartitionEnd { node: n as u32 });
                }
            }
            FaultKind::ServerOutage { duration } => {
                let until = now.saturating_add(duration);
                self.net.availability_mut().outages.push((now, until));
                trace!(self, now, None, TraceKind::ServerOutage { until });
            }
            FaultKind::ServerSlow { duration, extra } => {
                let until = now.saturating_add(duration);
                self.net.availability_mut().slowdowns.push((now, until, extra));
                trace!(self, now, None, TraceKind::ServerSlow { until, extra_ns: extra });
            }
        }
    }

    // ---- scripted actions -------------------------------------------------------------------

    fn run_action(&mut self, now: Nanos, index: usize) {
        let action = &self.spec.actions[index];
        let outcome = match actions::request_of(action) {
            actions::ActionRequest::CanI { verb, kind, namespace, name, user } => {
                let allowed = self.server.can_i(user, verb, kind, namespace, name);
                actions::can_i_outcome(action, now, allowed)
            }
            actions::ActionRequest::Request(request) => {
                let rv_before = self.server.resource_version();
                let result = self.server.handle(now, &request);
                let outcome = actions::outcome(action, now, request.verb, &result);
                if self.server.resource_version() != rv_before
                    && request.kind == Kind::Lease
                    && let Some(lease) = self.server.find_lease_ref(&request.namespace, &request.name)
                {
                    self.lease_written(now, lease);
                }
                outcome
            }
        };
        let kind =
            TraceKind::Action { name: outcome.name.clone(), code: outcome.code, message: outcome.message.clone() };
        trace!(self, now, None, kind);
        self.obs.record_action(outcome);
    }

    // ---- the end ----------------------------------------------------------------------------

    fn finish(self, end: Nanos) -> RunResult {
        // Clock offsets, sampled for plots, only for nodes whose clock is not perfect.
        let mut clock_offsets = Vec::new();
        let samples = 200u64;
        for (i, p) in self.procs.iter().enumerate() {
            if *p.clock.spec() != crate::clock::ClockSpec::default() {
                for k in 0..=samples {
                    let t = end / samples * k;
                    clock_offsets.push((t, i, p.clock.wall_offset(t)));
                }
            }
        }
        let server = &self.server;
        let transitions = |l: &LeaseTrack| {
            l.lease_ref.and_then(|r| server.lease_spec(r)).and_then(|s| s.lease_transitions).unwrap_or(0) as i64
        };
        self.obs.finish(end, transitions, clock_offsets, self.events_processed)
    }
}

/// Nodes above which the next event's state is prefetched: about 1.5 KB of state per node
/// (process, link, the Lease's entry), so 64 nodes are ~100 KB, within a core's L2.
const PREFETCH_FROM_NODES: usize = 64;

/// A server's answer before the requester sees it.
enum Answer {
    Lease(Result<crate::api::LeaseView, ApiError>),
    Object(Result<Object, ApiError>),
}

impl Answer {
    fn error(&self) -> Option<&ApiError> {
        match self {
            Answer::Lease(Err(e)) | Answer::Object(Err(e)) => Some(e),
            _ => None,
        }
    }
}

/// The timeout event of a message.
fn timeout_event(message: &Message) -> Event {
    Event::Timeout {
        node: message.node,
        incarnation: message.incarnation,
        id: message.id as u32,
        origin: message.origin,
    }
}

/// The event that fails a message's request at once (a refused connection).
fn reset_event(message: &Message) -> Event {
    Event::Reset { node: message.node, incarnation: message.incarnation, id: message.id as u32, origin: message.origin }
}

fn verb_name(verb: Verb) -> &'static str {
    match verb {
        Verb::Get => "get",
        Verb::List => "list",
        Verb::Create => "create",
        Verb::Update => "update",
        Verb::Delete => "delete",
        Verb::Patch => "patch",
        Verb::Apply => "apply",
    }
}
