//! The world: nodes, their links, the API server, faults and the event loop that drives them.
//!
//! One [`World`] is one run. Everything in it is a function of its [`WorldSpec`] (which carries
//! the seed): no wall clock, no threads, no hash-order iteration. [`World::run`] pops events in
//! `(time, sequence)` order until the run's duration and returns a [`RunResult`].
//!
//! Two kinds of file make it up. The **parts** own their state and never call each other:
//! - `process` — each node's process, clock, elector and lock;
//! - `network` — links, server availability, the messages in flight and their timeouts;
//! - `reconciler` — the leader's work on its child object, round by round;
//! - `faults` — the timeline and the random fault processes;
//! - `actions` — scripted requests and their outcomes;
//! - `observe` — everything recorded: spans, windows, metrics, the trace;
//! - `watch`, `injection`, `recorder`, `election`, `candidacy` — Lease watches,
//!   `[[server.errors]]`, leader-election Events, coordinated election's controller and its
//!   candidates;
//! - `event` and `result` — the events, and what a run hands back.
//!
//! The **loop** is `World`: this file builds it, pops an event and dispatches it (`advance`,
//! `handle`); the routes it takes from there, each an `impl World` over the parts, are one file
//! per path an event follows:
//! - `lifecycle` — a process starts, is probed, paused, killed, exits; its elector's outputs;
//! - `requests` — a request from its node to the server and its answer back (or its loss,
//!   refusal, retry, timeout);
//! - `leases` — a Lease written: the observer, the watchers, the election controller;
//! - `work` — the leader's reconciler and the split-brain evidence its writes leave;
//! - `interventions` — a fault or a scripted action carried out;
//! - `coordination` — coordinated nodes' LeaseCandidates and the controller's runs.
//!
//! The hot path — a timer, a request, its answer — allocates nothing and formats nothing when
//! the trace is off, and costs the same whatever the number of nodes and Leases.

mod event;
mod injection;
mod limiter;
mod network;
mod observe;
mod phases;
mod process;
mod quiet;
mod reconciler;
mod recorder;
mod watch;

use crate::api::{ApiError, ApiServer, Object};
use crate::clock::NodeClock;
use crate::elector::{LockError, Outputs};
use crate::engine::EventQueue;
use crate::model::WorldSpec;
use crate::net::Link;
use crate::prefetch::prefetch;
use crate::sym::Sym;
use crate::time::Nanos;
use crate::trace::TraceKind;
use event::{Event, Origin};
use faults::Faults;
use network::{Message, Network, Payload};
use observe::{LeaseTrack, Observer};
use process::{ProcState, Process};
use reconciler::Reconciler;
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
mod actions;
mod candidacy;
mod coordination;
mod election;
mod faults;
mod interventions;
mod leases;
mod lifecycle;
mod live;
mod requests;
mod result;
mod work;

pub use result::{
    ActionOutcome, BudgetExceeded, ClockOffsets, FaultDetail, FaultRecord, RunResult, SetupError, Span, SpanKind,
};

pub struct World {
    spec: WorldSpec,
    queue: EventQueue<Event>,
    server: ApiServer,
    procs: Vec<Process>,
    net: Network,
    /// Boxed: most nodes have none, and a fleet's would each take a reconciler's size inline.
    recs: Vec<Option<Box<Reconciler>>>,
    /// Each node's child object as a slot (`u32::MAX`: no reconciler): nodes whose reconcilers
    /// write the same object share one.
    child_slot: Vec<u32>,
    /// Per slot, the node whose write landed last (an overwrite is a write over another's).
    child_last_writer: Vec<Option<usize>>,
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
    scratch: Outputs,
    /// Whether the next event's state is prefetched: only for fleets whose state outgrows the
    /// caches (with a few nodes it is always in L1, and the prefetches only cost instructions).
    prefetching: bool,
    stale: Vec<Event>,
    events_processed: u64,
    /// Whether quiet stretches may be taken (`quiet.rs`; fixed at the start), and how many of
    /// the events counted were stepped over in them.
    quiet: bool,
    quiet_stepped: u64,
    /// A stretch's buffers, kept from one attempt to the next: boxed, so that taking them out
    /// while a stretch runs moves a pointer, not the buffers' headers and the Lease they start
    /// from.
    quiet_scratch: Option<Box<quiet::Scratch>>,
    /// A Lease's run of `phases.rs`: each instant with two events or more, and how many
    /// (`keep_ties` on), for its test of a whole run's stuck instant.
    keep_ties: bool,
    ties: Vec<(Nanos, u64)>,
}

/// The API server as a world's setup leaves it, kept to start the next world that has the same
/// setup (a sweep's runs of one grid point differ in their seed only): seeding a fleet's
/// ServiceAccounts, Roles and RoleBindings through the generic path costs more than many
/// seconds of its election, and the server it leaves depends on nothing but what is compared
/// here (the epoch, the identities interned first, the objects in order).
pub struct SetupCache {
    epoch: i64,
    identities: Vec<String>,
    objects: std::sync::Arc<Vec<serde_json::Value>>,
    server: ApiServer,
}

impl SetupCache {
    fn matches(&self, spec: &WorldSpec) -> bool {
        self.epoch == spec.epoch
            && self.identities.len() == spec.nodes.len()
            && self.identities.iter().zip(&spec.nodes).all(|(a, n)| a == n.identity())
            // The same objects as text (key order decides the order a stored object keeps);
            // the runs of a sweep or a hunt share one list (`Scenario::to_world_spec`).
            && (std::sync::Arc::ptr_eq(&self.objects, &spec.setup_objects)
                || crate::api::identical_json_slices(&self.objects, &spec.setup_objects))
    }
}

impl World {
    pub fn new(mut spec: WorldSpec) -> Result<World, SetupError> {
        spec.validate().map_err(SetupError::Spec)?;
        // The setup objects are moved into the server one by one when the spec holds the only
        // reference to them (as `leasesim run`'s does): a fleet's ServiceAccounts and binding
        // subjects as JSON (~1.2 KB an elector) are let go as they are seeded, not kept beside
        // the whole typed store until it is built.
        let objects = std::mem::take(&mut spec.setup_objects);
        let server = match Arc::try_unwrap(objects) {
            Ok(owned) => Self::set_up_server(&spec, owned.into_iter())?,
            Err(shared) => Self::set_up_server(&spec, shared.iter().cloned())?,
        };
        Self::with_server(spec, server)
    }

    /// [`World::new`], starting from `cache`'s server when it was set up the same way (and
    /// keeping this setup there otherwise). The world is the one `new` builds, byte for byte.
    pub fn new_cached(spec: WorldSpec, cache: &mut Option<SetupCache>) -> Result<World, SetupError> {
        spec.validate().map_err(SetupError::Spec)?;
        let server = match cache {
            Some(c) if c.matches(&spec) => c.server.clone(),
            _ => {
                let server = Self::set_up_server(&spec, spec.setup_objects.iter().cloned())?;
                *cache = Some(SetupCache {
                    epoch: spec.epoch,
                    identities: spec.nodes.iter().map(|n| n.identity().to_string()).collect(),
                    objects: spec.setup_objects.clone(),
                    server: server.clone(),
                });
                server
            }
        };
        Self::with_server(spec, server)
    }

    /// A fresh server with the node identities interned and `objects` (the spec's setup
    /// objects) created.
    fn set_up_server(
        spec: &WorldSpec,
        objects: impl Iterator<Item = serde_json::Value>,
    ) -> Result<ApiServer, SetupError> {
        let mut server = ApiServer::new(spec.epoch);
        server.set_audit(false);
        // Node identities are interned before anything else: node i is Sym(i + 1).
        for (i, node) in spec.nodes.iter().enumerate() {
            let sym = server.intern(node.identity());
            debug_assert_eq!(sym.index(), i + 1, "identities are unique and interned first");
        }
        for (index, object) in objects.enumerate() {
            server.seed(0, object).map_err(|e| SetupError::Object { index, message: e.message })?;
        }
        Ok(server)
    }

    fn with_server(mut spec: WorldSpec, mut server: ApiServer) -> Result<World, SetupError> {
        // The server holds its objects now: the spec's JSON of them is let go (the setup cache
        // keeps its own reference where there is one).
        spec.setup_objects = Arc::new(Vec::new());
        // The Leases elected on, in order of first use; the server numbers them the same way.
        let mut leases: Vec<LeaseTrack> = Vec::new();
        let mut lease_index: crate::FastMap<(&str, &str), usize> = Default::default();
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
        // How many Leases a fleet elects on is known only now: the room of the last doubling
        // is given back (a third of the Leases' tables at 100,000 electors).
        leases.shrink_to_fit();
        server.shrink_to_fit();
        let mut procs = Vec::with_capacity(spec.nodes.len());
        let mut links = Vec::with_capacity(spec.nodes.len());
        for (i, node) in spec.nodes.iter().enumerate() {
            let clock = NodeClock::new(crate::clock::ClockSpec::clone(&node.clock), spec.epoch)
                .map_err(|e| SetupError::Spec(format!("node {}: {e}", node.identity())))?;
            let user = server.user_id(&node.user);
            let lease = leases[node_lease[i]].lease_ref.expect("an elected Lease has its number");
            let field_manager = server.intern(&node.lease_field_manager);
            procs.push(Process::new(node, Sym(i as u32 + 1), clock, user, lease, field_manager));
            links.push(Link::new(&node.link, spec.seed, node.identity()));
        }
        let recs = spec.nodes.iter().map(|n| n.reconciler.clone().map(|r| Box::new(Reconciler::new(*r)))).collect();
        let mut objects: Vec<(&str, &str)> = Vec::new();
        let child_slot: Vec<u32> = spec
            .nodes
            .iter()
            .map(|n| match &n.reconciler {
                None => u32::MAX,
                Some(r) => {
                    let key = (r.namespace.as_str(), r.object.as_str());
                    match objects.iter().position(|o| *o == key) {
                        Some(i) => i as u32,
                        None => {
                            objects.push(key);
                            objects.len() as u32 - 1
                        }
                    }
                }
            })
            .collect();
        let child_last_writer = vec![None; objects.len()];
        // About two events a node wait at once (a timer, or a request and its timeout); a
        // queue that holds more grows.
        let mut queue = EventQueue::with_capacity(64 + 2 * spec.nodes.len());
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
        for (i, node) in spec.nodes.iter().enumerate() {
            if let Some(burst) = node.reconciler.as_ref().and_then(|r| r.burst) {
                agenda.push((burst.at, queue.reserve_seq(), Event::ReconcileBurst { node: i as u32 }));
            }
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
        // A traced run's trace is reserved for about its estimate: grown by doubling, each
        // step copied the whole trace (an allocator that cannot remap a large block in place
        // copies it).
        let trace_capacity = spec.trace.then(|| {
            let estimate = spec.estimate().events;
            usize::try_from(estimate.saturating_add(estimate / 2)).unwrap_or(usize::MAX).min(TRACE_RESERVE_MAX)
        });
        let mut obs = Observer::new(names, leases, node_lease, trace_capacity);
        // Server windows written in the spec's [server] table appear on timelines like faults.
        for &(from, until, mode) in &spec.server.outages {
            let detail = match mode {
                crate::net::PartitionMode::Drop => crate::time::format_duration(until - from),
                mode => format!("{}, {}", crate::time::format_duration(until - from), mode.name()),
            };
            obs.record_fault(FaultRecord {
                at: from,
                node: None,
                kind: "server-outage",
                detail: FaultDetail::Text(detail),
            });
        }
        for &(from, until, extra) in &spec.server.slowdowns {
            let detail =
                format!("+{} for {}", crate::time::format_duration(extra), crate::time::format_duration(until - from));
            obs.record_fault(FaultRecord {
                at: from,
                node: None,
                kind: "server-slow",
                detail: FaultDetail::Text(detail),
            });
        }
        let net = Network::new(links, spec.server.clone());
        let injector = injection::Injector::new(spec.seed, &spec.server_errors);
        let cle = if spec.nodes.iter().any(|n| n.candidacy.is_some()) {
            let clock = NodeClock::new(spec.server_clock.clone(), spec.epoch)
                .map_err(|e| SetupError::Spec(format!("server clock: {e}")))?;
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
            queue.schedule(0, Event::ElectionGc {});
            let mut by_identity: crate::FastMap<&str, Vec<usize>> = Default::default();
            for (node, n) in spec.nodes.iter().enumerate().filter(|(_, n)| n.candidacy.is_some()) {
                by_identity.entry(n.identity()).or_default().push(node);
            }
            let owners = by_identity.into_iter().map(|(identity, nodes)| (identity.into(), nodes.into())).collect();
            Some(Box::new(candidacy::Cle { clock, controller: election::Controller::new(), candidates, owners }))
        } else {
            None
        };
        let prefetching = spec.nodes.len() > PREFETCH_FROM_NODES;
        let tracing = obs.tracing();
        let mut world = World {
            spec,
            queue,
            server,
            procs,
            net,
            recs,
            child_slot,
            child_last_writer,
            faults,
            agenda,
            obs,
            injector,
            watches,
            cle,
            scratch: Outputs::new(tracing),
            prefetching,
            stale: Vec::new(),
            events_processed: 0,
            quiet: false,
            quiet_stepped: 0,
            quiet_scratch: None,
            keep_ties: false,
            ties: Vec::new(),
        };
        world.quiet = world.quiet_possible();
        Ok(world)
    }

    /// The API server, for inspection after (or during) a run.
    pub fn server(&self) -> &ApiServer {
        &self.server
    }

    /// Runs to the end of the spec's duration and hands back the Lease `namespace/name` as the
    /// server holds it then (for tests that check what was written).
    pub fn run_and_peek(mut self, namespace: &str, name: &str) -> (RunResult, Option<crate::api::Lease>) {
        let end = self.run_to_end();
        let lease = self.server.peek_lease(namespace, name).map(|l| (**l).clone());
        (self.finish(end), lease)
    }

    /// Runs to the end of the spec's duration, and hands back besides the queued events' times
    /// and sequence numbers then, in order, and the next sequence number: two runs that took the
    /// same steps in the same order leave the same (the quiet stretches' tests compare them).
    pub fn run_and_queue(mut self) -> (RunResult, Vec<(Nanos, u64)>, u64) {
        let end = self.run_to_end();
        let mut queued: Vec<(Nanos, u64)> = self.queue.entries().map(|(t, seq, _)| (t, seq)).collect();
        queued.sort_unstable();
        let next = self.queue.peek_seq();
        (self.finish(end), queued, next)
    }

    /// Handles every event up to the spec's duration, with no budget; returns that duration.
    fn run_to_end(&mut self) -> Nanos {
        if self.advance(self.spec.duration, u64::MAX, &mut |_, _| {}).is_err() {
            unreachable!("no budget");
        }
        self.spec.duration
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
        let end = self.spec.duration;
        match self.lease_phases() {
            Some(leases) => self.advance_phased(leases, end, max_events, progress)?,
            None => self.advance(end, max_events, progress)?,
        }
        Ok(self.finish(end))
    }

    /// Handles events up to true time `end` (the run's end, or a live world's now) or the
    /// budget. One out-of-line copy, so the event handlers inline into it as they did into
    /// `run_with`.
    #[inline(never)]
    fn advance(
        &mut self,
        end: Nanos,
        max_events: u64,
        progress: &mut dyn FnMut(Nanos, u64),
    ) -> Result<(), BudgetExceeded> {
        // Events in a row at the same true time (a run whose time stands still never ends); in
        // a Lease's run of `phases.rs`, each instant with two or more is counted (a copy of
        // this loop for the phases alone changed what the compiler inlines: +3.6 %).
        let (mut instant, mut at_instant) = (Nanos::MAX, 0u64);
        while let Some(t) = self.queue.peek_time() {
            if t > end {
                break;
            }
            if self.events_processed >= max_events {
                return Err(BudgetExceeded { events: self.events_processed, at: t, duration: end, stuck: false });
            }
            if t == instant {
                at_instant += 1;
                if self.keep_ties {
                    self.count_tie(instant);
                }
                if at_instant >= STUCK_EVENTS {
                    return Err(BudgetExceeded { events: self.events_processed, at: t, duration: end, stuck: true });
                }
            } else {
                (instant, at_instant) = (t, 0);
            }
            let (now, seq, event) = self.queue.pop_packed().expect("peeked");
            self.agenda_taken(now, seq);
            self.events_processed += 1;
            if self.events_processed & 0xffff == 0 {
                progress(now, self.events_processed);
            }
            if self.prefetching {
                self.prefetch_next();
            }
            let answered = matches!(event.get(), Event::Respond { .. });
            self.handle(now, event.get());
            // A request answered: every node may now be waiting between two (`quiet.rs`). A
            // stretch cut short by its look-ahead leaves every node waiting: another starts there.
            if answered && self.quiet {
                let mut before = self.events_processed;
                while let Some((last, again)) = self.try_quiet_stretch(end, max_events) {
                    // The progress report the stretch's events would have made (at its end).
                    if before >> 16 != self.events_processed >> 16 {
                        progress(last, self.events_processed);
                    }
                    (instant, at_instant) = (last, 0);
                    before = self.events_processed;
                    if !again {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// One more event at `instant` after the first (a Lease's run of `phases.rs` keeps them).
    #[cold]
    #[inline(never)]
    fn count_tie(&mut self, instant: Nanos) {
        match self.ties.last_mut() {
            Some((t, n)) if *t == instant => *n += 1,
            _ => self.ties.push((instant, 2)),
        }
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
        let Some(event) = event else { return };
        // The node, and whether its event reads its whole process.
        let (node, whole) = match (named_node(event), event) {
            (Some(node), _) => (node, true),
            (None, Event::Respond { msg }) => (self.net.get(*msg).node as usize, true),
            (None, Event::Arrive { msg } | Event::Apply { msg }) => {
                // The server's turn: it reads the Lease, the caller's field manager (one line
                // of its process) and answers through its link; the process's other fifteen
                // lines are its answer's to ask for, one event later. Asking for all sixteen
                // here cost more than it saved (docs/performance.md, 2026-12-06).
                let m = self.net.get(*msg);
                if let network::Stage::Request(Payload::Lease { lease, .. }) = &m.stage {
                    self.server.prefetch_lease(*lease);
                }
                (m.node as usize, false)
            }
            _ => return,
        };
        if whole {
            prefetch(&self.procs[node]);
            // Counted on every send.
            prefetch(&self.obs.node_metrics[node].requests_sent);
        } else {
            prefetch(&self.procs[node].field_manager);
        }
        self.net.prefetch_link(node);
    }

    // ---- event dispatch ----------------------------------------------------------------------

    /// The process an event is for and what it makes of it, or `None` for the server's, the
    /// network's and the faults' events. The one test of `handle` and of a quiet stretch
    /// (`quiet.rs`, which puts aside what `handle` would).
    #[inline(always)]
    fn turn(&self, event: &Event) -> Option<(usize, Turn)> {
        // The request id `u32::MAX`: an event of no request.
        let (node, incarnation, request) = match *event {
            Event::Timer { node, incarnation, .. }
            | Event::StopActing { node, incarnation, .. }
            | Event::ReconcileTick { node, incarnation, .. }
            | Event::Watch { node, incarnation }
            | Event::CandidateEnsure { node, incarnation, .. }
            | Event::CandidateWatch { node, incarnation } => (node as usize, incarnation, u32::MAX),
            Event::Timeout { node, incarnation, id, .. } | Event::Reset { node, incarnation, id, .. } => {
                (node as usize, incarnation, id)
            }
            Event::Respond { msg } | Event::Resend { msg } | Event::Throttled { msg } => {
                let m = self.net.get(msg);
                (m.node as usize, m.incarnation, m.id as u32)
            }
            _ => return None,
        };
        let p = &self.procs[node];
        let turn = if p.incarnation != incarnation || p.state != ProcState::Running || request < p.hung_below {
            Turn::Stale
        } else if p.paused_until.is_some() {
            Turn::Aside
        } else {
            Turn::Take
        };
        Some((node, turn))
    }

    fn handle(&mut self, now: Nanos, event: &Event) {
        match self.turn(event) {
            Some((_, Turn::Stale)) => return self.discard(*event),
            Some((node, Turn::Aside)) => return self.procs[node].deferred.push(*event),
            Some((_, Turn::Take)) | None => {}
        }
        match *event {
            Event::Timer { node, kind, generation, .. } => {
                let node = node as usize;
                trace!(self, now, Some(node), TraceKind::Timer { kind });
                self.drive_direct(now, node, lifecycle::Input::Timer { kind, generation });
            }
            Event::Arrive { msg } => self.arrive(now, msg),
            Event::Respond { msg } => {
                // Only an injected error can carry a Retry-After or a body that is not a Status.
                let injected = self.net.get(msg).injected.is_some();
                if injected && self.retry_after(now, msg) {
                    return;
                }
                let m = self.net.get(msg);
                let plain_text = injected && m.injected.as_ref().is_some_and(|i| i.plain_text);
                if m.origin == Origin::Elector {
                    // Read in place (most answers): see `elector_response`.
                    let (node, id, code) = (m.node as usize, m.id, m.code);
                    trace!(self, now, Some(node), TraceKind::Response { id, code });
                    self.elector_response(now, node, id, msg, plain_text);
                    return;
                }
                let (node, id, origin, code, response) = self.net.take_answer(msg);
                let node = node as usize;
                trace!(self, now, Some(node), TraceKind::Response { id, code });
                match origin {
                    Origin::Elector => unreachable!("read in place above"),
                    Origin::Reconciler => self.reconciler_response(now, node, id, response),
                    Origin::Candidate => self.candidate_response(now, node, id, Some(response)),
                    Origin::Recorder => {}
                }
            }
            _ => self.handle_rare(now, *event),
        }
    }

    /// Every event but a timer, a request's arrival and its answer: kept out of `handle`, so
    /// that the three that make up an election run stay together in a few cache lines of code.
    #[cold]
    #[inline(never)]
    fn handle_rare(&mut self, now: Nanos, event: Event) {
        match event {
            Event::Timer { .. } | Event::Arrive { .. } | Event::Respond { .. } => unreachable!("handled by `handle`"),
            Event::Start { node } => self.start_process(now, node as usize),
            Event::ReconcileTick { node, generation, .. } => {
                let node = node as usize;
                if self.recs[node].as_ref().is_some_and(|r| r.active && r.generation == generation) {
                    self.reconcile(now, node);
                }
            }
            Event::Apply { msg } => self.apply(now, msg),
            Event::Timeout { node, id, origin, .. } => self.timeout(now, node as usize, id, origin, LockError::Timeout),
            Event::Reset { node, id, origin, .. } => self.timeout(now, node as usize, id, origin, LockError::Refused),
            Event::Resend { msg } => self.resend(now, msg),
            Event::Resume { node, incarnation } => self.resume(now, node as usize, incarnation),
            Event::Probe { node, incarnation, failed } => self.probe(now, node as usize, incarnation, failed),
            Event::Fault { .. } | Event::RandomFault { .. } => self.fault_event(now, event),
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
            Event::ElectionGc {} => self.election_gc(now),
            Event::Throttled { msg } => self.throttled_send(now, msg),
            Event::ReconcileBurst { node } => self.reconcile_burst(now, node as usize),
        }
    }

    /// A timeline fault or a random process's occurrence: its target resolved and its
    /// parameters drawn now, then carried out (also by a quiet stretch it falls in).
    fn fault_event(&mut self, now: Nanos, event: Event) {
        match event {
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
            _ => unreachable!("not a fault"),
        }
    }

    /// The agenda's event `(now, seq)` was taken: the next one waits in the queue from now.
    /// (Inlined into the event loop, which checks every event it pops.)
    #[inline(always)]
    fn agenda_taken(&mut self, now: Nanos, seq: u64) {
        if self.agenda.last().is_some_and(|&(at, s, _)| (at, s) == (now, seq)) {
            self.agenda.pop();
            self.queue_agenda_next();
        }
    }

    /// The agenda's next event, if any, waits in the queue (under its reserved number).
    fn queue_agenda_next(&mut self) {
        if let Some(&(at, seq, next)) = self.agenda.last() {
            self.queue.schedule_reserved(at, seq, next);
        }
    }

    /// The outputs buffer, to hand an elector (`process_outputs` puts it back). An input that
    /// arrives while one is out (an immediate failure fed back) gets a fresh one.
    #[inline]
    fn take_scratch(&mut self) -> Outputs {
        std::mem::replace(&mut self.scratch, Outputs::new(self.obs.tracing()))
    }

    /// Drops an event that will never be taken, freeing the message it holds.
    fn discard(&mut self, event: Event) {
        if let Event::Respond { msg } | Event::Resend { msg } | Event::Throttled { msg } = event {
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

    /// The node whose current identity a Sym is, if any (node i starts as Sym(i + 1); a node
    /// with an identity per start takes a new Sym at each start, and its old ones name no one).
    fn node_of(&self, sym: Sym) -> Option<usize> {
        let i = (sym.0 as usize).checked_sub(1)?;
        if i < self.procs.len() && self.procs[i].sym == sym {
            return Some(i);
        }
        self.procs.iter().position(|p| p.sym == sym)
    }

    /// The node the first node's Lease names (with Leases side by side, "the holder" is the
    /// holder of the first node's Lease).
    fn holder_node(&self) -> Option<usize> {
        let lease = self.obs.leases[0].lease_ref?;
        let holder = self.server.lease_spec(lease)?.holder_identity?;
        self.node_of(holder)
    }

    // ---- the end ----------------------------------------------------------------------------

    fn finish(self, end: Nanos) -> RunResult {
        // Clock offsets, for plots, only for nodes whose clock is not perfect: sampled when a
        // plot asks (a sweep or a hunt draws none).
        let clocks = self
            .procs
            .iter()
            .enumerate()
            .filter(|(_, p)| *p.clock.spec() != crate::clock::ClockSpec::default())
            .map(|(i, p)| (i, p.clock.clone()))
            .collect();
        // Each Lease's last leaseTransitions read now, and the rest of the world let go before
        // the result is built: a fleet's processes, links and server would otherwise still
        // take their memory while the result takes its own (the run's peak).
        let transitions: Vec<i64> = self
            .obs
            .leases
            .iter()
            .map(|l| {
                l.lease_ref.and_then(|r| self.server.lease_spec(r)).and_then(|s| s.lease_transitions).unwrap_or(0)
                    as i64
            })
            .collect();
        let World {
            obs,
            events_processed,
            quiet_stepped,
            spec,
            queue,
            server,
            procs,
            net,
            recs,
            agenda,
            watches,
            cle,
            ..
        } = self;
        drop((spec, queue, server, procs, net, recs, agenda, watches, cle));
        let mut result = obs.finish(end, |lease| transitions[lease], ClockOffsets { end, clocks }, events_processed);
        result.events_stepped = quiet_stepped;
        result
    }
}

/// The most trace events a run reserves room for up front (120 bytes each: about 125 MB, the
/// size of such a trace anyway); a longer trace grows.
const TRACE_RESERVE_MAX: usize = 1 << 20;

/// Events in a row at one true time after which a run is stopped as stuck. A fleet's start
/// puts a few events per node at one instant; a million is a loop that never waits (a client
/// retrying a zero timeout or a zero delay at once), which would otherwise fill memory with its
/// trace and never reach the run's end.
pub const STUCK_EVENTS: u64 = 1_000_000;

/// Nodes above which the next event's state is prefetched: about 1.5 KB of state per node
/// (process, link, the Lease's entry), so 64 nodes are ~100 KB, within a core's L2.
const PREFETCH_FROM_NODES: usize = 64;

/// What a process's event meets ([`World::turn`]): a running, unpaused process takes it; a dead
/// or restarted one's is stale (as is one of a request a wedged client hangs on: a request's
/// events carry its id); a paused one's is put aside until it resumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Turn {
    Take,
    Stale,
    Aside,
}

/// The node of a frequent event that names it (a timer, a reconciler's tick, a timeout, a
/// start), for the prefetches; a message's events name theirs through its slot.
#[inline(always)]
fn named_node(event: &Event) -> Option<usize> {
    match *event {
        Event::Timer { node, .. }
        | Event::ReconcileTick { node, .. }
        | Event::Timeout { node, .. }
        | Event::Start { node } => Some(node as usize),
        _ => None,
    }
}

/// A server's answer before the requester sees it.
enum Answer {
    Lease(Result<crate::api::LeaseView, ApiError>),
    Object(Result<Object, ApiError>),
    /// Success or the error only, for a requester that reads nothing else.
    Effect(Result<(), ApiError>),
}

impl Answer {
    fn error(&self) -> Option<&ApiError> {
        match self {
            Answer::Lease(Err(e)) | Answer::Object(Err(e)) | Answer::Effect(Err(e)) => Some(e),
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

#[cfg(test)]
mod tests {
    use super::World;
    use crate::elector::Algorithm;
    use crate::model::{FaultKind, Target, TimedFault, WorldSpec};
    use crate::time::secs;

    /// A short whole run through every part of the loop (the typed Lease path, the queue's
    /// packed events, the message slab, a crash and a failover), traced: small enough for Miri
    /// (`.ci/miri`), which checks the unsafe code on this path.
    #[test]
    fn a_short_whole_run() {
        let mut spec = WorldSpec::basic(1, 3, Algorithm::ClientGo, secs(if cfg!(miri) { 25 } else { 60 }));
        spec.trace = true;
        spec.faults.push(TimedFault { at: secs(5), target: Target::Holder, kind: FaultKind::Crash });
        let r = World::new(spec).expect("valid").run();
        assert_eq!(r.metrics.dual_leader_seconds, 0.0);
        assert!(r.metrics.failover_seconds.len() == 1, "{:?}", r.metrics.failover_seconds);
    }
}
