//! The world: nodes, their links, the API server, faults and the event loop that drives them.
//!
//! One [`World`] is one run. Everything in it is a function of its [`WorldSpec`] (which carries
//! the seed): no wall clock, no threads, no hash-order iteration. [`World::run`] pops events in
//! `(time, sequence)` order until the run's duration and returns a [`RunResult`].

use crate::api::{ApiError, ApiServer, Body, Kind, Object, Request, User, Verb};
use crate::clock::{ClockStep, NodeClock};
use crate::elector::{AfterLost, Elector, LockError, LockOp, Now, Output, TimerKind};
use crate::engine::EventQueue;
use crate::lock::LeaseLock;
use crate::metrics::{DualWindow, LeaseMetrics, Metrics, NodeMetrics};
use crate::model::{
    ActionOp, FaultKind, FieldManager, RandomFaultKind, ReconcileMode, ReconcilerSpec, Target, WorldSpec,
};
use crate::net::{Cut, Delivery, Direction, Link, Partition, ServerAvailability};
use crate::rng::ComponentRng;
use crate::time::{Nanos, as_secs_f64};
use crate::trace::{TraceEvent, TraceKind};
use std::sync::Arc;

/// Which part of a node sent a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    Elector,
    Reconciler,
}

impl Origin {
    fn name(self) -> &'static str {
        match self {
            Origin::Elector => "elector",
            Origin::Reconciler => "reconciler",
        }
    }
}

#[derive(Debug)]
enum Event {
    Start { node: usize },
    Timer { node: usize, incarnation: u32, kind: TimerKind, generation: u64 },
    ReconcileTick { node: usize, incarnation: u32, generation: u64 },
    Arrive { node: usize, incarnation: u32, id: u64, origin: Origin, request: Box<Request> },
    Apply { node: usize, incarnation: u32, id: u64, origin: Origin, request: Box<Request> },
    Respond { node: usize, incarnation: u32, id: u64, origin: Origin, result: Result<Object, ApiError> },
    Timeout { node: usize, incarnation: u32, id: u64, origin: Origin },
    Resume { node: usize, incarnation: u32 },
    Fault { index: usize },
    RandomFault { process: usize },
    PartitionEnd { node: usize },
    Action { index: usize },
}

impl Event {
    /// The node whose process must be running (and not paused) to take this event now.
    fn paused_sensitive_node(&self) -> Option<usize> {
        match *self {
            Event::Timer { node, .. }
            | Event::ReconcileTick { node, .. }
            | Event::Respond { node, .. }
            | Event::Timeout { node, .. } => Some(node),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProcState {
    NotStarted,
    Running,
    Crashed,
    Exited,
}

/// The reconciler's request in flight and what it was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReconcileStep {
    Write,
    LeaseCheck,
    ChildGet,
}

#[derive(Debug)]
struct Reconciler {
    spec: ReconcilerSpec,
    active: bool,
    generation: u64,
    in_flight: Option<(u64, ReconcileStep)>,
    /// leaseTransitions when this node started leading (the fencing token).
    token: Option<i32>,
}

struct Node {
    identity: String,
    clock: NodeClock,
    link: Link,
    user: Arc<User>,
    state: ProcState,
    incarnation: u32,
    paused_until: Option<Nanos>,
    deferred: Vec<Event>,
    elector: Option<Elector>,
    lock: LeaseLock,
    elector_request: Option<(u64, Verb)>,
    reconciler: Option<Reconciler>,
    stop_requested: bool,
    /// Processes started so far (what traces call the incarnation; `incarnation` above also
    /// moves on a kill, to make the dead process's events stale).
    starts: u32,
    acting: bool,
    /// When the current acting span began, and the acting time of the spans already closed.
    acting_since: Nanos,
    acting_ns: Nanos,
    metrics: NodeMetrics,
}

/// One Lease the nodes elect on, and its leadership bookkeeping.
struct LeaseTrack {
    namespace: String,
    name: String,
    /// Nodes acting as its leader now.
    acting: usize,
    first_leader_seen: bool,
    dual_start: Option<Nanos>,
    /// When `acting` last changed: the dual and leaderless clocks are brought up to date then.
    last_change: Nanos,
    dual_ns: Nanos,
    leaderless_ns: Nanos,
    windows: u64,
    max_window: Nanos,
    last_holder: String,
    /// The last non-empty holder, to count changes through a released (empty) holder too.
    previous_holder: Option<String>,
    last_transitions: Option<i32>,
    leader_changes: u64,
    /// A fault hit its acting leader at this time; the failover is measured to the next
    /// acquisition by another node.
    pending_failover: Option<(Nanos, usize)>,
}

impl LeaseTrack {
    fn new(namespace: &str, name: &str) -> LeaseTrack {
        LeaseTrack {
            namespace: namespace.into(),
            name: name.into(),
            acting: 0,
            first_leader_seen: false,
            dual_start: None,
            last_change: 0,
            dual_ns: 0,
            leaderless_ns: 0,
            windows: 0,
            max_window: 0,
            last_holder: String::new(),
            previous_holder: None,
            last_transitions: None,
            leader_changes: 0,
            pending_failover: None,
        }
    }
}

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

/// Everything a run produced.
pub struct RunResult {
    pub metrics: Metrics,
    pub node_names: Vec<String>,
    /// Each node's Lease (`namespace/name`), in node order.
    pub node_leases: Vec<String>,
    pub spans: Vec<Span>,
    pub dual_windows: Vec<DualWindow>,
    /// `(true time, leaseTransitions)` each time the server's value changed.
    pub transitions_series: Vec<(Nanos, i32)>,
    /// `(true time, number of acting leaders)` at each change.
    pub acting_series: Vec<(Nanos, usize)>,
    /// `(true time, node, wall offset ns)` samples for nodes whose clock is not perfect.
    pub clock_offsets: Vec<(Nanos, usize, i64)>,
    pub faults: Vec<FaultRecord>,
    pub actions: Vec<ActionOutcome>,
    pub trace: Vec<TraceEvent>,
    pub duration: Nanos,
    pub events_processed: u64,
}

pub struct World {
    spec: WorldSpec,
    queue: EventQueue<Event>,
    server: ApiServer,
    availability: ServerAvailability,
    nodes: Vec<Node>,
    fault_rngs: Vec<ComponentRng>,
    /// Draws the random targets of timeline faults (`target = "random"`).
    timeline_rng: ComponentRng,
    next_request_id: u64,
    scratch: Vec<Output>,
    trace: Option<Vec<TraceEvent>>,
    /// The Leases the nodes elect on (usually one; a scenario may run elections side by side).
    leases: Vec<LeaseTrack>,
    /// Index into `leases` of each node's Lease.
    node_lease: Vec<usize>,
    // --- metrics state ---
    metrics: Metrics,
    dual_windows: Vec<DualWindow>,
    open_spans: Vec<Option<(SpanKind, Nanos)>>,
    spans: Vec<Span>,
    transitions_series: Vec<(Nanos, i32)>,
    acting_series: Vec<(Nanos, usize)>,
    child_last_writer: Option<usize>,
    faults: Vec<FaultRecord>,
    actions: Vec<ActionOutcome>,
    events_processed: u64,
    requests_by_verb_status: std::collections::BTreeMap<(&'static str, u16), u64>,
}

impl World {
    pub fn new(spec: WorldSpec) -> Result<World, String> {
        spec.validate()?;
        let mut server = ApiServer::new(spec.epoch);
        server.set_audit(false);
        for object in &spec.setup_objects {
            server.seed_object(0, object.clone()).map_err(|e| format!("setup object: {}", e.message))?;
        }
        let mut nodes = Vec::with_capacity(spec.nodes.len());
        for node in &spec.nodes {
            let clock =
                NodeClock::new(node.clock.clone(), spec.epoch).map_err(|e| format!("node {}: {e}", node.identity()))?;
            let user = Arc::new(node.user.clone());
            let lock = Self::new_lock(&user, node);
            nodes.push(Node {
                identity: node.identity().to_string(),
                clock,
                link: Link::new(node.link.clone(), spec.seed, node.identity()),
                user,
                state: ProcState::NotStarted,
                incarnation: 0,
                paused_until: None,
                deferred: Vec::new(),
                elector: None,
                lock,
                elector_request: None,
                reconciler: node.reconciler.clone().map(|spec| Reconciler {
                    spec,
                    active: false,
                    generation: 0,
                    in_flight: None,
                    token: None,
                }),
                stop_requested: false,
                starts: 0,
                acting: false,
                acting_since: 0,
                acting_ns: 0,
                metrics: NodeMetrics::default(),
            });
        }
        let mut leases: Vec<LeaseTrack> = Vec::new();
        let mut node_lease = Vec::with_capacity(spec.nodes.len());
        for n in &spec.nodes {
            let key = (n.elector.lease_namespace.as_str(), n.elector.lease_name.as_str());
            let index = match leases.iter().position(|l| (l.namespace.as_str(), l.name.as_str()) == key) {
                Some(i) => i,
                None => {
                    leases.push(LeaseTrack::new(key.0, key.1));
                    leases.len() - 1
                }
            };
            node_lease.push(index);
        }
        if leases.is_empty() {
            // No electors (a scenario of scripted actions): nothing is tracked.
            leases.push(LeaseTrack::new("", ""));
        }
        let mut queue = EventQueue::with_capacity(64 + 8 * nodes.len());
        for (i, node) in spec.nodes.iter().enumerate() {
            queue.schedule(node.start_at, Event::Start { node: i });
        }
        for (index, fault) in spec.faults.iter().enumerate() {
            queue.schedule(fault.at, Event::Fault { index });
        }
        for (index, action) in spec.actions.iter().enumerate() {
            queue.schedule(action.at, Event::Action { index });
        }
        // Random fault processes: all occurrence times are drawn up front from the process's own
        // stream; targets and parameters are drawn (from the same stream) when each fires.
        let mut fault_rngs = Vec::with_capacity(spec.random_faults.len());
        for (process, rf) in spec.random_faults.iter().enumerate() {
            let mut rng = ComponentRng::new(spec.seed, &format!("fault/{}", rf.key));
            let mut t = rf.from as f64;
            loop {
                t += rng.exponential(rf.mean_interval as f64);
                let at = t.round() as Nanos;
                if at >= rf.until || at > spec.duration {
                    break;
                }
                queue.schedule(at, Event::RandomFault { process });
            }
            fault_rngs.push(rng);
        }
        let node_count = nodes.len();
        // Server windows written in the spec's [server] table appear on timelines like faults.
        let mut faults = Vec::new();
        for &(from, until) in &spec.server.outages {
            faults.push(FaultRecord {
                at: from,
                node: None,
                kind: "server-outage".into(),
                detail: crate::time::format_duration(until - from),
            });
        }
        for &(from, until, extra) in &spec.server.slowdowns {
            let detail =
                format!("+{} for {}", crate::time::format_duration(extra), crate::time::format_duration(until - from));
            faults.push(FaultRecord { at: from, node: None, kind: "server-slow".into(), detail });
        }
        let trace = if spec.trace { Some(Vec::new()) } else { None };
        let availability = spec.server.clone();
        let timeline_rng = ComponentRng::new(spec.seed, "fault/timeline");
        Ok(World {
            spec,
            queue,
            server,
            availability,
            nodes,
            fault_rngs,
            timeline_rng,
            next_request_id: 0,
            scratch: Vec::new(),
            trace,
            leases,
            node_lease,
            metrics: Metrics::default(),
            dual_windows: Vec::new(),
            open_spans: vec![None; node_count * 4],
            spans: Vec::new(),
            transitions_series: Vec::new(),
            acting_series: vec![(0, 0)],
            child_last_writer: None,
            faults,
            actions: Vec::new(),
            events_processed: 0,
            requests_by_verb_status: Default::default(),
        })
    }

    fn new_lock(user: &Arc<User>, node: &crate::model::NodeSpec) -> LeaseLock {
        LeaseLock::new(
            user.clone(),
            &node.elector.lease_namespace,
            &node.elector.lease_name,
            &node.lease_field_manager,
            node.elector.algorithm == crate::elector::Algorithm::PythonClient,
        )
    }

    /// The API server, for inspection after (or during) a run.
    pub fn server(&self) -> &ApiServer {
        &self.server
    }

    /// Runs to the end of the spec's duration.
    pub fn run(mut self) -> RunResult {
        let end = self.spec.duration;
        while let Some(t) = self.queue.peek_time() {
            if t > end {
                break;
            }
            let (now, event) = self.queue.pop().expect("peeked");
            self.events_processed += 1;
            self.handle(now, event);
        }
        self.finish(end)
    }

    // ---- event dispatch ----------------------------------------------------------------------

    fn handle(&mut self, now: Nanos, event: Event) {
        if let Some(n) = event.paused_sensitive_node() {
            let node = &mut self.nodes[n];
            let incarnation = match event {
                Event::Timer { incarnation, .. }
                | Event::ReconcileTick { incarnation, .. }
                | Event::Respond { incarnation, .. }
                | Event::Timeout { incarnation, .. } => incarnation,
                _ => unreachable!(),
            };
            if node.incarnation != incarnation || node.state != ProcState::Running {
                return; // a dead process's timer or response
            }
            if node.paused_until.is_some() {
                node.deferred.push(event);
                return;
            }
        }
        match event {
            Event::Start { node } => self.start_process(now, node),
            Event::Timer { node, kind, generation, .. } => {
                self.trace(now, Some(node), TraceKind::Timer { kind });
                let clock_now = self.now_of(node, now);
                let mut out = std::mem::take(&mut self.scratch);
                if let Some(e) = self.nodes[node].elector.as_mut() {
                    e.on_timer(clock_now, kind, generation, &mut out);
                }
                self.process_outputs(now, node, out);
            }
            Event::ReconcileTick { node, generation, .. } => {
                let due = self.nodes[node].reconciler.as_ref().is_some_and(|r| r.active && r.generation == generation);
                if due {
                    self.reconcile(now, node);
                }
            }
            Event::Arrive { node, incarnation, id, origin, request } => {
                if self.availability.is_down(now) {
                    self.trace(now, None, TraceKind::ServerDown { id });
                    return;
                }
                let extra = self.availability.extra_processing(now);
                if extra > 0 {
                    self.queue.schedule(now + extra, Event::Apply { node, incarnation, id, origin, request });
                } else {
                    self.apply(now, node, incarnation, id, origin, request);
                }
            }
            Event::Apply { node, incarnation, id, origin, request } => {
                self.apply(now, node, incarnation, id, origin, request)
            }
            Event::Respond { node, id, origin, result, .. } => {
                self.trace(now, Some(node), TraceKind::Response { id, code: code_of(&result) });
                match origin {
                    Origin::Elector => self.elector_response(now, node, id, result),
                    Origin::Reconciler => self.reconciler_response(now, node, id, result),
                }
            }
            Event::Timeout { node, id, origin, .. } => match origin {
                Origin::Elector => {
                    if self.nodes[node].elector_request.map(|(r, _)| r) == Some(id) {
                        self.nodes[node].elector_request = None;
                        self.trace(now, Some(node), TraceKind::Timeout { id });
                        self.feed_elector_result(now, node, Err(LockError::Timeout));
                    }
                }
                Origin::Reconciler => {
                    let in_flight = self.nodes[node].reconciler.as_ref().and_then(|r| r.in_flight).map(|(r, _)| r);
                    if in_flight == Some(id) {
                        self.trace(now, Some(node), TraceKind::Timeout { id });
                        if let Some(r) = self.nodes[node].reconciler.as_mut() {
                            r.in_flight = None;
                        }
                        self.arm_reconcile(now, node);
                    }
                }
            },
            Event::Resume { node, incarnation } => {
                let n = &mut self.nodes[node];
                if n.incarnation != incarnation || n.paused_until.is_none() {
                    return;
                }
                n.paused_until = None;
                let deferred = std::mem::take(&mut n.deferred);
                self.close_span(now, node, SpanKind::Paused);
                self.trace(now, Some(node), TraceKind::PauseEnd);
                // Timers that expired during the pause and responses that arrived fire now, in
                // the order they would have.
                for event in deferred {
                    self.queue.schedule(now, event);
                }
            }
            Event::Fault { index } => {
                let fault = self.spec.faults[index].clone();
                let target = self.resolve_target(&fault.target, None);
                self.apply_fault(now, target, &fault.kind);
            }
            Event::RandomFault { process } => self.fire_random_fault(now, process),
            Event::PartitionEnd { node } => {
                if !self.nodes[node].link.is_cut(Direction::Up, now)
                    && !self.nodes[node].link.is_cut(Direction::Down, now)
                {
                    self.close_span(now, node, SpanKind::Partitioned);
                }
                self.trace(now, Some(node), TraceKind::PartitionEnd);
            }
            Event::Action { index } => self.run_action(now, index),
        }
    }

    fn now_of(&self, node: usize, t: Nanos) -> Now {
        let clock = &self.nodes[node].clock;
        Now { mono: clock.monotonic(t), wall: clock.wall(t) }
    }

    // ---- processes ------------------------------------------------------------------------------

    fn start_process(&mut self, now: Nanos, node: usize) {
        let spec = &self.spec.nodes[node];
        let n = &mut self.nodes[node];
        if n.state == ProcState::Running {
            return;
        }
        n.incarnation += 1;
        n.state = ProcState::Running;
        n.stop_requested = false;
        n.paused_until = None;
        n.deferred.clear();
        n.elector_request = None;
        n.lock = Self::new_lock(&n.user, spec);
        n.starts += 1;
        let incarnation = n.starts;
        let rng = ComponentRng::new(self.spec.seed, &format!("node/{}/elector/{incarnation}", n.identity));
        n.elector = Some(Elector::new(spec.elector.clone(), rng));
        self.open_span(now, node, SpanKind::Running);
        self.trace(now, Some(node), TraceKind::ProcessStart { incarnation });
        let clock_now = self.now_of(node, now);
        let mut out = std::mem::take(&mut self.scratch);
        if let Some(e) = self.nodes[node].elector.as_mut() {
            e.start(clock_now, &mut out);
        }
        self.process_outputs(now, node, out);
    }

    /// The process dies: nothing it does afterwards counts, though its requests already on the
    /// wire may still be applied.
    fn kill(&mut self, now: Nanos, node: usize, state: ProcState) {
        if self.nodes[node].state != ProcState::Running {
            return;
        }
        self.stop_acting(now, node);
        let n = &mut self.nodes[node];
        n.state = state;
        n.incarnation += 1; // every pending timer and response of the old process is now stale
        n.elector = None;
        n.elector_request = None;
        n.deferred.clear();
        n.paused_until = None;
        if let Some(r) = n.reconciler.as_mut() {
            r.in_flight = None;
        }
        self.close_span(now, node, SpanKind::Paused);
        self.close_span(now, node, SpanKind::Running);
    }

    /// The node stops acting as leader: metrics close its span, its reconciler stops (a tick or
    /// response still in flight finds a newer generation and does nothing).
    fn stop_acting(&mut self, now: Nanos, node: usize) {
        self.set_acting(now, node, false);
        if let Some(r) = self.nodes[node].reconciler.as_mut() {
            r.active = false;
            r.generation += 1;
        }
    }

    fn feed_elector_result(&mut self, now: Nanos, node: usize, result: crate::elector::LockResult) {
        if matches!(result, Err(LockError::Conflict)) {
            self.nodes[node].metrics.lease_conflicts += 1;
        }
        let clock_now = self.now_of(node, now);
        let mut out = std::mem::take(&mut self.scratch);
        if let Some(e) = self.nodes[node].elector.as_mut() {
            e.on_result(clock_now, result, &mut out);
        }
        self.process_outputs(now, node, out);
    }

    fn elector_response(&mut self, now: Nanos, node: usize, id: u64, result: Result<Object, ApiError>) {
        let Some((expected, verb)) = self.nodes[node].elector_request else { return };
        if expected != id {
            return; // abandoned or timed out
        }
        self.nodes[node].elector_request = None;
        let lock_result = self.nodes[node].lock.response(verb, result);
        self.feed_elector_result(now, node, lock_result);
    }

    /// Carries out what the elector asked for. New outputs produced while doing so (an
    /// immediate failure fed back) are appended to the same list and handled in order.
    fn process_outputs(&mut self, now: Nanos, node: usize, mut out: Vec<Output>) {
        let mut i = 0;
        while i < out.len() {
            let output = std::mem::replace(&mut out[i], Output::Abandon);
            i += 1;
            match output {
                Output::Send { op, timeout } => {
                    let request = self.nodes[node].lock.request(&op);
                    match request {
                        Err(e) => {
                            let clock_now = self.now_of(node, now);
                            if let Some(el) = self.nodes[node].elector.as_mut() {
                                el.on_result(clock_now, Err(e), &mut out);
                            }
                        }
                        Ok(request) => {
                            let id = self.next_id();
                            let verb = match op {
                                LockOp::Get => Verb::Get,
                                LockOp::Create(_) => Verb::Create,
                                LockOp::Update(_) => Verb::Update,
                                LockOp::MergePatch(_) => Verb::Patch,
                            };
                            self.nodes[node].elector_request = Some((id, verb));
                            self.send(now, node, id, Origin::Elector, request, timeout);
                        }
                    }
                }
                Output::Timer { kind, after, generation } => {
                    let at = self.nodes[node].clock.timer_fires_at(now, after);
                    let incarnation = self.nodes[node].incarnation;
                    self.queue.schedule(at, Event::Timer { node, incarnation, kind, generation });
                }
                Output::Abandon => self.nodes[node].elector_request = None,
                Output::StartedLeading => {
                    self.trace(now, Some(node), TraceKind::StartedLeading);
                    self.set_acting(now, node, true);
                    let token = self.nodes[node].lock.cached().and_then(|l| l.spec.lease_transitions);
                    if let Some(r) = self.nodes[node].reconciler.as_mut() {
                        r.active = true;
                        r.generation += 1;
                        r.token = token;
                        self.reconcile(now, node);
                    }
                }
                // Whichever comes first ends the leader's work; the other finds it ended.
                Output::LeaderContextDone | Output::StoppedLeading => {
                    if self.nodes[node].acting {
                        self.trace(now, Some(node), TraceKind::StoppedLeading);
                    }
                    self.stop_acting(now, node);
                }
                Output::NewLeader(holder) => self.trace(now, Some(node), TraceKind::NewLeader { holder }),
                Output::Note(note) => {
                    if note == crate::elector::Note::RenewedLease {
                        self.leader_recovered(now, node);
                    }
                    self.trace(now, Some(node), TraceKind::Note { note })
                }
                Output::Exited => self.process_exited(now, node),
            }
        }
        out.clear();
        self.scratch = out;
    }

    /// A faulted leader that renews again, unpaused and reachable, before anyone else took over
    /// kept its leadership: that fault caused no failover.
    fn leader_recovered(&mut self, now: Nanos, node: usize) {
        let n = &self.nodes[node];
        let reachable = !n.link.is_cut(Direction::Up, now) && !n.link.is_cut(Direction::Down, now);
        let lease = self.node_lease[node];
        if self.leases[lease].pending_failover.is_some_and(|(_, faulted)| faulted == node)
            && n.acting
            && n.paused_until.is_none()
            && reachable
        {
            self.leases[lease].pending_failover = None;
        }
    }

    fn process_exited(&mut self, now: Nanos, node: usize) {
        self.trace(now, Some(node), TraceKind::ProcessExit);
        let after =
            if self.nodes[node].stop_requested { AfterLost::Exit } else { self.spec.nodes[node].elector.after_lost };
        match after {
            AfterLost::Exit => self.kill(now, node, ProcState::Exited),
            AfterLost::Restart { delay } => {
                self.kill(now, node, ProcState::Exited);
                self.queue.schedule(now + delay, Event::Start { node });
            }
            AfterLost::Rejoin => {
                self.kill(now, node, ProcState::Exited);
                self.queue.schedule(now, Event::Start { node });
            }
        }
    }

    // ---- the network and the server ---------------------------------------------------------

    fn next_id(&mut self) -> u64 {
        self.next_request_id += 1;
        self.next_request_id
    }

    fn send(&mut self, now: Nanos, node: usize, id: u64, origin: Origin, request: Request, timeout: Option<Nanos>) {
        if self.trace.is_some() {
            let kind = TraceKind::Request {
                id,
                origin: origin.name(),
                verb: verb_name(request.verb),
                resource: request.kind.resource(),
                name: request.name.to_string(),
            };
            self.trace(now, Some(node), kind);
        }
        let incarnation = self.nodes[node].incarnation;
        if let Some(timeout) = timeout {
            let at = self.nodes[node].clock.timer_fires_at(now, timeout);
            self.queue.schedule(at, Event::Timeout { node, incarnation, id, origin });
        }
        match self.nodes[node].link.send(now, Direction::Up) {
            Delivery::Arrives(at) => {
                self.queue.schedule(at, Event::Arrive { node, incarnation, id, origin, request: Box::new(request) })
            }
            Delivery::Lost => self.trace(now, Some(node), TraceKind::Lost { id, dir: "up", why: "loss" }),
            Delivery::Partitioned => self.trace(now, Some(node), TraceKind::Lost { id, dir: "up", why: "partition" }),
        }
    }

    fn apply(&mut self, now: Nanos, node: usize, incarnation: u32, id: u64, origin: Origin, request: Box<Request>) {
        let rv_before = self.server.resource_version();
        let child_before = if origin == Origin::Reconciler { self.child_value(node) } else { None };
        let result = self.server.handle(now, &request);
        let code = code_of(&result);
        self.metrics.api_requests += 1;
        // Counted by (verb, status) without formatting; the string keys are built once at the end.
        *self.requests_by_verb_status.entry((verb_name(request.verb), code)).or_insert(0) += 1;
        let rv_after = self.server.resource_version();
        if self.trace.is_some() {
            let message = result.as_ref().err().map(|e| e.message.clone()).unwrap_or_default();
            self.trace(now, None, TraceKind::Applied { id, code, rv_before, rv_after, message });
        }
        if rv_after != rv_before && request.kind == Kind::Lease {
            self.observe_lease(now, &request.namespace, &request.name);
        }
        if origin == Origin::Reconciler {
            self.account_reconciler_write(now, node, id, &request, &result, child_before);
        }
        match self.nodes[node].link.send(now, Direction::Down) {
            Delivery::Arrives(at) => self.queue.schedule(at, Event::Respond { node, incarnation, id, origin, result }),
            Delivery::Lost => self.trace(now, Some(node), TraceKind::Lost { id, dir: "down", why: "loss" }),
            Delivery::Partitioned => self.trace(now, Some(node), TraceKind::Lost { id, dir: "down", why: "partition" }),
        }
    }

    /// Tracks a Lease on the server after a write to it (`namespace/name` of the request).
    fn observe_lease(&mut self, now: Nanos, namespace: &str, name: &str) {
        let Some(index) = self.leases.iter().position(|l| l.namespace == namespace && l.name == name) else {
            return; // a Lease no node elects on
        };
        let (holder, transitions) = match self.server.peek_lease(namespace, name) {
            Some(l) => (l.spec.holder_identity.clone().unwrap_or_default(), l.spec.lease_transitions.unwrap_or(0)),
            None => (String::new(), 0),
        };
        let rv = self.server.resource_version();
        let track = &mut self.leases[index];
        let mut changed = false;
        if Some(transitions) != track.last_transitions {
            if index == 0 {
                self.transitions_series.push((now, transitions));
            }
            track.last_transitions = Some(transitions);
            changed = true;
        }
        if holder != track.last_holder {
            if !holder.is_empty() {
                if track.previous_holder.as_ref().is_some_and(|p| *p != holder) {
                    track.leader_changes += 1;
                }
                track.previous_holder = Some(holder.clone());
            }
            track.last_holder = holder.clone();
            changed = true;
        }
        if changed && self.trace.is_some() {
            self.trace(now, None, TraceKind::LeaseChanged { holder, transitions, rv });
        }
    }

    // ---- reconcilers ------------------------------------------------------------------------

    fn child_value(&self, _node: usize) -> Option<String> {
        let r = self.spec.nodes.iter().find_map(|n| n.reconciler.as_ref())?;
        self.server.peek_config_map(&r.namespace, &r.object).and_then(|cm| cm.data.get(&r.field).cloned())
    }

    fn reconcile(&mut self, now: Nanos, node: usize) {
        let n = &self.nodes[node];
        let Some(r) = n.reconciler.as_ref() else { return };
        if !r.active || r.in_flight.is_some() {
            return;
        }
        let spec = r.spec.clone();
        let (step, request) = match spec.mode {
            ReconcileMode::FencedUpdate => (
                ReconcileStep::LeaseCheck,
                self.request(
                    node,
                    Verb::Get,
                    Kind::Lease,
                    &self.leases[self.node_lease[node]].namespace.clone(),
                    &self.leases[self.node_lease[node]].name.clone(),
                    Body::None,
                    None,
                    false,
                ),
            ),
            ReconcileMode::Apply { force } => {
                (ReconcileStep::Write, self.child_write(node, &spec, Verb::Apply, None, force))
            }
            ReconcileMode::CreateIfAbsent => {
                (ReconcileStep::Write, self.child_write(node, &spec, Verb::Create, None, false))
            }
        };
        self.send_reconciler(now, node, step, request);
    }

    fn manager_of(&self, node: usize, spec: &ReconcilerSpec) -> String {
        match &spec.field_manager {
            FieldManager::Identity => self.nodes[node].identity.clone(),
            FieldManager::Shared(name) => name.clone(),
        }
    }

    /// A write of the reconciler's child object under its field manager.
    fn child_write(
        &self,
        node: usize,
        spec: &ReconcilerSpec,
        verb: Verb,
        resource_version: Option<&str>,
        force: bool,
    ) -> Request {
        let body = self.child_body(node, spec, resource_version);
        let manager = self.manager_of(node, spec);
        self.request(node, verb, Kind::ConfigMap, &spec.namespace, &spec.object, Body::Json(body), Some(manager), force)
    }

    fn child_body(&self, node: usize, spec: &ReconcilerSpec, resource_version: Option<&str>) -> serde_json::Value {
        let mut metadata = serde_json::json!({ "name": spec.object, "namespace": spec.namespace });
        if let Some(rv) = resource_version {
            metadata["resourceVersion"] = serde_json::json!(rv);
        }
        let mut data = serde_json::Map::new();
        data.insert(spec.field.clone(), serde_json::json!(spec.value));
        if spec.mode == ReconcileMode::FencedUpdate {
            let token = self.nodes[node].reconciler.as_ref().and_then(|r| r.token).unwrap_or(0);
            data.insert("fencingToken".into(), serde_json::json!(token.to_string()));
        }
        serde_json::json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data })
    }

    #[allow(clippy::too_many_arguments)]
    fn request(
        &self,
        node: usize,
        verb: Verb,
        kind: Kind,
        namespace: &str,
        name: &str,
        body: Body,
        field_manager: Option<String>,
        force: bool,
    ) -> Request {
        Request {
            user: self.nodes[node].user.clone(),
            verb,
            kind,
            namespace: namespace.into(),
            name: name.into(),
            body,
            field_manager: field_manager.map(|m| m.into()),
            force,
        }
    }

    fn send_reconciler(&mut self, now: Nanos, node: usize, step: ReconcileStep, request: Request) {
        let id = self.next_id();
        if let Some(r) = self.nodes[node].reconciler.as_mut() {
            r.in_flight = Some((id, step));
        }
        let timeout = self.spec.nodes[node].reconciler.as_ref().map(|r| r.timeout);
        self.send(now, node, id, Origin::Reconciler, request, timeout);
    }

    fn arm_reconcile(&mut self, now: Nanos, node: usize) {
        let incarnation = self.nodes[node].incarnation;
        let Some(r) = self.nodes[node].reconciler.as_ref() else { return };
        if !r.active {
            return;
        }
        let (period, generation) = (r.spec.period, r.generation);
        let at = self.nodes[node].clock.timer_fires_at(now, period);
        self.queue.schedule(at, Event::ReconcileTick { node, incarnation, generation });
    }

    fn reconciler_response(&mut self, now: Nanos, node: usize, id: u64, result: Result<Object, ApiError>) {
        let Some(r) = self.nodes[node].reconciler.as_mut() else { return };
        let Some((expected, step)) = r.in_flight else { return };
        if expected != id {
            return;
        }
        r.in_flight = None;
        if !r.active {
            return;
        }
        let spec = r.spec.clone();
        match (step, result) {
            (ReconcileStep::LeaseCheck, Ok(Object::Lease(lease))) => {
                let holder = lease.spec.holder_identity.clone().unwrap_or_default();
                let token = self.nodes[node].reconciler.as_ref().and_then(|r| r.token);
                if holder != self.nodes[node].identity || lease.spec.lease_transitions != token {
                    self.nodes[node].metrics.fenced_rejections += 1;
                    self.trace(now, Some(node), TraceKind::FencedRejection { lease_holder: holder });
                    self.arm_reconcile(now, node);
                    return;
                }
                let request = self.request(
                    node,
                    Verb::Get,
                    Kind::ConfigMap,
                    &spec.namespace,
                    &spec.object,
                    Body::None,
                    None,
                    false,
                );
                self.send_reconciler(now, node, ReconcileStep::ChildGet, request);
            }
            (ReconcileStep::ChildGet, result) => {
                let request = match result {
                    Ok(Object::ConfigMap(cm)) => {
                        self.child_write(node, &spec, Verb::Update, Some(&cm.metadata.resource_version), false)
                    }
                    Err(e) if e.code == 404 => self.child_write(node, &spec, Verb::Create, None, false),
                    _ => {
                        self.arm_reconcile(now, node);
                        return;
                    }
                };
                self.send_reconciler(now, node, ReconcileStep::Write, request);
            }
            _ => self.arm_reconcile(now, node),
        }
    }

    /// Counts a reconciler write at the server, where its effect (and damage) happens.
    fn account_reconciler_write(
        &mut self,
        now: Nanos,
        node: usize,
        id: u64,
        request: &Request,
        result: &Result<Object, ApiError>,
        child_before: Option<String>,
    ) {
        if request.kind != Kind::ConfigMap || request.verb == Verb::Get {
            return;
        }
        let outcome = match result {
            Ok(_) => {
                let m = &mut self.nodes[node].metrics;
                m.writes_accepted += 1;
                let value = self.spec.nodes[node].reconciler.as_ref().map(|r| r.value.clone());
                if let Some(prev) = self.child_last_writer
                    && prev != node
                    && child_before.is_some()
                    && child_before != value
                {
                    self.nodes[node].metrics.overwrites += 1;
                }
                self.child_last_writer = Some(node);
                let holder = self
                    .server
                    .peek_lease(&self.leases[self.node_lease[node]].namespace, &self.leases[self.node_lease[node]].name)
                    .and_then(|l| l.spec.holder_identity.clone())
                    .unwrap_or_default();
                if !holder.is_empty() && holder != self.nodes[node].identity {
                    self.nodes[node].metrics.split_brain_writes += 1;
                    self.trace(now, Some(node), TraceKind::SplitBrainWrite { id, lease_holder: holder });
                }
                "accepted"
            }
            Err(e) if e.code == 409 && e.reason.as_str() == "AlreadyExists" => {
                self.nodes[node].metrics.already_exists += 1;
                "already-exists"
            }
            Err(e) if e.code == 409 => {
                self.nodes[node].metrics.conflicts += 1;
                "conflict"
            }
            Err(_) => "error",
        };
        if self.trace.is_some() {
            let (code, message) = match result {
                Ok(_) => (200, String::new()),
                Err(e) => (e.code, e.message.clone()),
            };
            self.trace(now, Some(node), TraceKind::ReconcileWrite { id, code, outcome, message });
        }
    }

    // ---- faults -----------------------------------------------------------------------------

    fn holder_node(&self) -> Option<usize> {
        // With Leases side by side, "the holder" is the holder of the first node's Lease.
        let holder =
            self.server.peek_lease(&self.leases[0].namespace, &self.leases[0].name)?.spec.holder_identity.clone()?;
        self.nodes.iter().position(|n| n.identity == holder)
    }

    /// `process`: the random fault process whose stream draws a random target; `None` for the
    /// timeline, whose random targets draw from one `fault/timeline` stream.
    fn resolve_target(&mut self, target: &Target, process: Option<usize>) -> Option<usize> {
        match target {
            Target::Node(i) => Some(*i),
            Target::Holder => self.holder_node(),
            Target::Server => None,
            Target::Random | Target::NonHolder => {
                let holder = self.holder_node();
                let candidates: Vec<usize> =
                    (0..self.nodes.len()).filter(|&i| *target == Target::Random || Some(i) != holder).collect();
                if candidates.is_empty() {
                    return None;
                }
                let rng = match process {
                    Some(p) => &mut self.fault_rngs[p],
                    None => &mut self.timeline_rng,
                };
                Some(candidates[rng.uniform_u64(0, candidates.len() as u64 - 1) as usize])
            }
        }
    }

    fn fire_random_fault(&mut self, now: Nanos, process: usize) {
        let rf = self.spec.random_faults[process].clone();
        let target = self.resolve_target(&rf.target, Some(process));
        let rng = &mut self.fault_rngs[process];
        let kind = match &rf.kind {
            RandomFaultKind::Crash => FaultKind::Crash,
            RandomFaultKind::CrashRestart { restart_after } => FaultKind::Restart { delay: restart_after.sample(rng) },
            RandomFaultKind::Pause { duration } => FaultKind::Pause { duration: duration.sample(rng) },
            RandomFaultKind::Stop => FaultKind::Stop,
            RandomFaultKind::Partition { duration, cut } => {
                FaultKind::Partition { duration: duration.sample(rng), cut: *cut }
            }
            RandomFaultKind::ClockStep { delta, backwards } => {
                let d = delta.sample(rng) as i64;
                FaultKind::ClockStep { delta_ns: if *backwards { -d } else { d } }
            }
            RandomFaultKind::ServerOutage { duration } => FaultKind::ServerOutage { duration: duration.sample(rng) },
        };
        self.apply_fault(now, target, &kind);
    }

    fn apply_fault(&mut self, now: Nanos, node: Option<usize>, kind: &FaultKind) {
        // Labels for people: random durations are shown to the millisecond.
        let show = |ns: Nanos| {
            crate::time::format_duration(ns.div_ceil(crate::time::NANOS_PER_MILLI) * crate::time::NANOS_PER_MILLI)
        };
        let detail = match kind {
            FaultKind::Pause { duration }
            | FaultKind::Partition { duration, .. }
            | FaultKind::ServerOutage { duration } => show(*duration),
            FaultKind::Restart { delay } => format!("after {}", show(*delay)),
            FaultKind::ClockStep { delta_ns } => {
                let sign = if *delta_ns < 0 { "-" } else { "+" };
                format!("{sign}{}", show(delta_ns.unsigned_abs()))
            }
            FaultKind::ServerSlow { duration, extra } => format!("+{} for {}", show(*extra), show(*duration)),
            FaultKind::Crash | FaultKind::Stop => String::new(),
        };
        let server_fault = matches!(kind, FaultKind::ServerOutage { .. } | FaultKind::ServerSlow { .. });
        if node.is_none() && !server_fault {
            return; // e.g. "the holder" when nobody holds the lease
        }
        self.faults.push(FaultRecord { at: now, node, kind: kind.name().to_string(), detail });
        if let Some(n) = node
            && self.nodes[n].acting
            && matches!(
                kind,
                FaultKind::Crash
                    | FaultKind::Restart { .. }
                    | FaultKind::Pause { .. }
                    | FaultKind::Stop
                    | FaultKind::Partition { .. }
            )
            && self.leases[self.node_lease[n]].pending_failover.is_none()
        {
            let lease = self.node_lease[n];
            self.leases[lease].pending_failover = Some((now, n));
        }
        match *kind {
            FaultKind::Crash => {
                let n = node.expect("node fault");
                if self.nodes[n].state == ProcState::Running {
                    self.trace(now, Some(n), TraceKind::Crash);
                    self.kill(now, n, ProcState::Crashed);
                }
            }
            FaultKind::Restart { delay } => {
                let n = node.expect("node fault");
                if self.nodes[n].state == ProcState::Running {
                    self.trace(now, Some(n), TraceKind::Crash);
                    self.kill(now, n, ProcState::Crashed);
                }
                self.queue.schedule(now + delay, Event::Start { node: n });
            }
            FaultKind::Pause { duration } => {
                let n = node.expect("node fault");
                let nd = &mut self.nodes[n];
                if nd.state != ProcState::Running || nd.paused_until.is_some() {
                    return;
                }
                nd.paused_until = Some(now + duration);
                let incarnation = nd.incarnation;
                self.queue.schedule(now + duration, Event::Resume { node: n, incarnation });
                self.open_span(now, n, SpanKind::Paused);
                self.trace(now, Some(n), TraceKind::PauseStart { until: now + duration });
            }
            FaultKind::Stop => {
                let n = node.expect("node fault");
                if self.nodes[n].state != ProcState::Running {
                    return;
                }
                self.nodes[n].stop_requested = true;
                self.trace(now, Some(n), TraceKind::StopRequested);
                let clock_now = self.now_of(n, now);
                let mut out = std::mem::take(&mut self.scratch);
                if let Some(e) = self.nodes[n].elector.as_mut() {
                    e.stop(clock_now, &mut out);
                }
                self.process_outputs(now, n, out);
            }
            FaultKind::ClockStep { delta_ns } => {
                let n = node.expect("node fault");
                self.nodes[n].clock.add_step(ClockStep { at: now, delta_ns });
                self.trace(now, Some(n), TraceKind::ClockStep { delta_ns });
            }
            FaultKind::Partition { duration, cut } => {
                let n = node.expect("node fault");
                let until = now.saturating_add(duration);
                self.nodes[n].link.add_partition(Partition { from: now, until, cut });
                self.open_span(now, n, SpanKind::Partitioned);
                let cut_name = match cut {
                    Cut::Up => "up",
                    Cut::Down => "down",
                    Cut::Both => "both",
                };
                self.trace(now, Some(n), TraceKind::PartitionStart { cut: cut_name, until });
                if until <= self.spec.duration {
                    self.queue.schedule(until, Event::PartitionEnd { node: n });
                }
            }
            FaultKind::ServerOutage { duration } => {
                self.availability.outages.push((now, now + duration));
                self.trace(now, None, TraceKind::ServerOutage { until: now + duration });
            }
            FaultKind::ServerSlow { duration, extra } => {
                self.availability.slowdowns.push((now, now + duration, extra));
                self.trace(now, None, TraceKind::ServerSlow { until: now + duration, extra_ns: extra });
            }
        }
    }

    // ---- scripted actions -------------------------------------------------------------------

    fn run_action(&mut self, now: Nanos, index: usize) {
        let action = self.spec.actions[index].clone();
        let user = Arc::new(action.user.clone());
        let json_request =
            |verb: Verb, body: &serde_json::Value, field_manager: Option<String>, force: bool| -> Request {
                let kind =
                    body.get("kind").and_then(|k| k.as_str()).and_then(Kind::from_kind_name).unwrap_or(Kind::ConfigMap);
                let meta = body.get("metadata");
                let field = |k: &str| meta.and_then(|m| m.get(k)).and_then(|v| v.as_str()).unwrap_or("").to_string();
                let namespace = if field("namespace").is_empty() { "default".to_string() } else { field("namespace") };
                Request {
                    user: user.clone(),
                    verb,
                    kind,
                    namespace: namespace.as_str().into(),
                    name: field("name").as_str().into(),
                    body: Body::Json(body.clone()),
                    field_manager: field_manager.map(|m| m.as_str().into()),
                    force,
                }
            };
        let simple = |verb: Verb, kind: Kind, namespace: &str, name: &str, body: Body| Request {
            user: user.clone(),
            verb,
            kind,
            namespace: namespace.into(),
            name: name.into(),
            body,
            field_manager: None,
            force: false,
        };
        let request = match &action.op {
            ActionOp::CanI { verb, kind, namespace, name, user } => {
                let allowed = self.server.can_i(user, verb, *kind, namespace, name.as_deref());
                let outcome = ActionOutcome {
                    name: action.name.clone(),
                    at: now,
                    code: if allowed { 0 } else { 1 },
                    reason: String::new(),
                    message: if allowed { "yes".into() } else { "no".into() },
                    kubectl_stderr: String::new(),
                    object: serde_json::Value::Null,
                    allowed: Some(allowed),
                };
                self.trace(
                    now,
                    None,
                    TraceKind::Action {
                        name: action.name.clone(),
                        code: outcome.code,
                        message: outcome.message.clone(),
                    },
                );
                self.actions.push(outcome);
                return;
            }
            ActionOp::Get { kind, namespace, name } => simple(Verb::Get, *kind, namespace, name, Body::None),
            ActionOp::Delete { kind, namespace, name } => simple(Verb::Delete, *kind, namespace, name, Body::None),
            ActionOp::MergePatch { kind, namespace, name, patch } => Request {
                field_manager: Some("kubectl-patch".into()),
                ..simple(Verb::Patch, *kind, namespace, name, Body::Json(patch.clone()))
            },
            ActionOp::Create { body } => json_request(Verb::Create, body, Some("kubectl-create".into()), false),
            ActionOp::Update { body } => json_request(Verb::Update, body, Some("kubectl-replace".into()), false),
            ActionOp::Apply { body, field_manager, force } => {
                json_request(Verb::Apply, body, Some(field_manager.clone()), *force)
            }
        };
        let rv_before = self.server.resource_version();
        let result = self.server.handle(now, &request);
        if self.server.resource_version() != rv_before && request.kind == Kind::Lease {
            self.observe_lease(now, &request.namespace, &request.name);
        }
        let outcome = match &result {
            Ok(object) => ActionOutcome {
                name: action.name.clone(),
                at: now,
                // POST answers 201 Created; everything else 200.
                code: if request.verb == Verb::Create { 201 } else { 200 },
                reason: String::new(),
                message: String::new(),
                kubectl_stderr: String::new(),
                object: crate::api::to_json(object),
                allowed: None,
            },
            Err(e) => ActionOutcome {
                name: action.name.clone(),
                at: now,
                code: e.code,
                reason: e.reason.as_str().to_string(),
                message: e.message.clone(),
                kubectl_stderr: if matches!(action.op, ActionOp::Apply { .. }) && e.code == 409 {
                    crate::api::kubectl_apply_conflict_stderr(e)
                } else {
                    e.kubectl_stderr()
                },
                object: serde_json::Value::Null,
                allowed: None,
            },
        };
        self.trace(
            now,
            None,
            TraceKind::Action { name: action.name.clone(), code: outcome.code, message: outcome.message.clone() },
        );
        self.actions.push(outcome);
    }

    // ---- metrics ----------------------------------------------------------------------------

    fn set_acting(&mut self, now: Nanos, node: usize, acting: bool) {
        if self.nodes[node].acting == acting {
            return;
        }
        let lease = self.node_lease[node];
        self.advance_lease_clock(lease, now);
        self.nodes[node].acting = acting;
        if acting {
            self.nodes[node].acting_since = now;
            self.leases[lease].acting += 1;
            self.leases[lease].first_leader_seen = true;
            self.nodes[node].metrics.acquisitions += 1;
            self.open_span(now, node, SpanKind::Leader);
            if let Some((fault_at, old)) = self.leases[lease].pending_failover.take()
                && old != node
            {
                self.metrics.failover_seconds.push(as_secs_f64(now - fault_at));
            }
        } else {
            self.leases[lease].acting -= 1;
            self.nodes[node].acting_ns += now - self.nodes[node].acting_since;
            self.close_span(now, node, SpanKind::Leader);
        }
        // The series shows the most acting leaders of any one Lease (2 means a split brain).
        let most = self.leases.iter().map(|l| l.acting).max().unwrap_or(0);
        if self.acting_series.last().map(|&(_, v)| v) != Some(most) {
            self.acting_series.push((now, most));
        }
        let count = self.leases[lease].acting;
        if count >= 2 && self.leases[lease].dual_start.is_none() {
            self.leases[lease].dual_start = Some(now);
            if self.trace.is_some() {
                let leaders = (0..self.nodes.len())
                    .filter(|&i| self.nodes[i].acting && self.node_lease[i] == lease)
                    .map(|i| self.nodes[i].identity.clone())
                    .collect();
                self.trace(now, None, TraceKind::DualLeaderStart { leaders });
            }
        } else if count < 2
            && let Some(from) = self.leases[lease].dual_start.take()
        {
            self.close_dual_window(lease, from, now);
        }
    }

    fn close_dual_window(&mut self, lease: usize, from: Nanos, until: Nanos) {
        let leaders = self
            .spans
            .iter()
            .filter(|s| s.kind == SpanKind::Leader && s.from < until && s.until > from)
            .map(|s| s.node)
            .chain(self.nodes.iter().enumerate().filter(|(_, n)| n.acting).map(|(i, _)| i))
            .filter(|&i| self.node_lease[i] == lease)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|i| self.nodes[i].identity.clone())
            .collect();
        let track = &mut self.leases[lease];
        track.windows += 1;
        track.max_window = track.max_window.max(until - from);
        let lease_name = format!("{}/{}", track.namespace, track.name);
        let window = DualWindow { from, until, leaders, lease: lease_name };
        self.trace(until, None, TraceKind::DualLeaderEnd { seconds: window.seconds() });
        self.dual_windows.push(window);
    }

    /// Brings the Lease's dual-leader and leaderless clocks up to `now` (before its acting count
    /// changes, and at the end). Integer nanoseconds, per Lease: no other Lease is touched.
    fn advance_lease_clock(&mut self, lease: usize, now: Nanos) {
        let l = &mut self.leases[lease];
        let dt = now - l.last_change;
        if l.acting >= 2 {
            l.dual_ns += dt;
        }
        if l.acting == 0 && l.first_leader_seen {
            l.leaderless_ns += dt;
        }
        l.last_change = now;
    }

    fn open_span(&mut self, now: Nanos, node: usize, kind: SpanKind) {
        let slot = &mut self.open_spans[node * 4 + kind as usize];
        if slot.is_none() {
            *slot = Some((kind, now));
        }
    }

    fn close_span(&mut self, now: Nanos, node: usize, kind: SpanKind) {
        if let Some((kind, from)) = self.open_spans[node * 4 + kind as usize].take()
            && now > from
        {
            self.spans.push(Span { node, kind, from, until: now });
        }
    }

    fn trace(&mut self, t: Nanos, node: Option<usize>, kind: TraceKind) {
        if let Some(trace) = self.trace.as_mut() {
            let local = node.map(|n| self.nodes[n].clock.wall(t));
            trace.push(TraceEvent { t, node, local, kind });
        }
    }

    fn finish(mut self, end: Nanos) -> RunResult {
        for lease in 0..self.leases.len() {
            self.advance_lease_clock(lease, end);
        }
        for n in &mut self.nodes {
            if n.acting {
                n.acting_ns += end - n.acting_since;
            }
            n.metrics.acting_leader_seconds = as_secs_f64(n.acting_ns);
        }
        for lease in 0..self.leases.len() {
            if let Some(from) = self.leases[lease].dual_start.take() {
                self.close_dual_window(lease, from, end);
            }
        }
        self.dual_windows.sort_by_key(|w| (w.from, w.until));
        for node in 0..self.nodes.len() {
            for kind in [SpanKind::Running, SpanKind::Leader, SpanKind::Paused, SpanKind::Partitioned] {
                self.close_span(end, node, kind);
            }
        }
        self.spans.sort_by_key(|s| (s.node, s.kind, s.from));
        self.faults.sort_by_key(|f| f.at);
        for ((verb, code), n) in &self.requests_by_verb_status {
            self.metrics.api_requests_by_verb_status.insert(format!("{verb} {code}"), *n);
        }
        // Whole-run figures add the Leases up; `leases` keeps each one's (for one Lease they agree).
        let mut per_lease = std::collections::BTreeMap::new();
        for l in self.leases.iter().filter(|l| !l.name.is_empty()) {
            let transitions =
                self.server.peek_lease(&l.namespace, &l.name).and_then(|x| x.spec.lease_transitions).unwrap_or(0)
                    as i64;
            let m = LeaseMetrics {
                dual_leader_seconds: as_secs_f64(l.dual_ns),
                dual_leader_windows: l.windows,
                max_dual_leader_seconds: as_secs_f64(l.max_window),
                leaderless_seconds: as_secs_f64(l.leaderless_ns),
                lease_transitions: transitions,
                leader_changes: l.leader_changes,
            };
            self.metrics.dual_leader_seconds += m.dual_leader_seconds;
            self.metrics.dual_leader_windows += m.dual_leader_windows;
            self.metrics.max_dual_leader_seconds = self.metrics.max_dual_leader_seconds.max(m.max_dual_leader_seconds);
            self.metrics.leaderless_seconds += m.leaderless_seconds;
            self.metrics.lease_transitions += m.lease_transitions;
            self.metrics.leader_changes += m.leader_changes;
            per_lease.insert(format!("{}/{}", l.namespace, l.name), m);
        }
        self.metrics.leases = per_lease;
        for n in &self.nodes {
            self.metrics.nodes.insert(n.identity.clone(), n.metrics.clone());
        }
        // Clock offsets, sampled for plots, only for nodes whose clock is not perfect.
        let mut clock_offsets = Vec::new();
        let samples = 200u64;
        for (i, n) in self.nodes.iter().enumerate() {
            if *n.clock.spec() != crate::clock::ClockSpec::default() {
                for k in 0..=samples {
                    let t = end / samples * k;
                    clock_offsets.push((t, i, n.clock.wall_offset(t)));
                }
            }
        }
        RunResult {
            metrics: self.metrics,
            node_names: self.nodes.iter().map(|n| n.identity.clone()).collect(),
            node_leases: self
                .node_lease
                .iter()
                .map(|&l| format!("{}/{}", self.leases[l].namespace, self.leases[l].name))
                .collect(),
            spans: self.spans,
            dual_windows: self.dual_windows,
            transitions_series: self.transitions_series,
            acting_series: self.acting_series,
            clock_offsets,
            faults: self.faults,
            actions: self.actions,
            trace: self.trace.unwrap_or_default(),
            duration: end,
            events_processed: self.events_processed,
        }
    }
}

fn code_of(result: &Result<Object, ApiError>) -> u16 {
    match result {
        Ok(_) => 200,
        Err(e) => e.code,
    }
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
