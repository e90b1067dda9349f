//! Processes in the loop: a node's process starts, is probed, paused, killed and exits; what
//! its elector asks for (`Output`s) is carried out here — requests to `requests`, timers to the
//! queue, leadership to the observer and the node's reconciler (`work`).

use super::event::{Event, Origin};
use super::network::{Payload, Response, Stage};
use super::process::{ProcState, ProcessParts, WorkStop};
use super::requests::Wire;
use super::{FaultDetail, FaultRecord, SpanKind, World, recorder};
use crate::api::{Kind, Verb};
use crate::elector::Outputs;
use crate::elector::{AfterLost, Elector, Generation, LockError, LockResult, Note, Now, Output, Sink, TimerKind};
use crate::lock::LockRequest;
use crate::model::StopActing;
use crate::time::Nanos;
use crate::trace::TraceKind;
use std::sync::Arc;

impl World {
    pub(super) fn start_process(&mut self, now: Nanos, node: usize) {
        if self.spec.nodes[node].identity_per_start && !self.procs[node].is_running() {
            // `hostname + "_" + uuid.NewUUID()` at every start: a stranger to its old Lease.
            let p = &self.procs[node];
            let key = format!("node/{}/uuid/{}", p.identity, p.starts + 1);
            let name = format!("{}_{}", p.identity, uuid_v4(&mut crate::rng::ComponentRng::new(self.spec.seed, &key)));
            self.procs[node].sym = self.server.intern(&name);
        }
        if !self.procs[node].start(&self.spec.nodes[node], self.spec.seed, &mut self.stale) {
            return;
        }
        self.discard_stale();
        self.obs.set_node_sym(now, node, self.procs[node].sym);
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
        let mut out = self.take_scratch();
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
    pub(super) fn probe(&mut self, now: Nanos, node: usize, incarnation: u32, timed_out: bool) {
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
        } else if h.check == crate::model::HealthCheck::Ping {
            // A plain liveness endpoint answers while the process runs.
            true
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
                    kind: "liveness-kill",
                    detail: FaultDetail::Text(format!("{failures} failed probes")),
                });
                self.kill(now, node, ProcState::Crashed);
                self.kubelet_restart(now, node, h.restart_delay);
                return;
            }
        }
        // The next probe: the first period tick after now.
        let anchor = self.procs[node].probe_anchor;
        let k = (now.saturating_sub(anchor)) / h.period + 1;
        let next = anchor.saturating_add(k.saturating_mul(h.period));
        self.queue.schedule(next, Event::Probe { node: node as u32, incarnation, failed: false });
    }

    /// The kubelet starts the container of `node`, which exited or was killed at `now`, again:
    /// after `fixed`, or as its `restart_backoff` says.
    pub(super) fn kubelet_restart(&mut self, now: Nanos, node: usize, fixed: Nanos) {
        let backoff = self.spec.nodes[node].restart_backoff;
        let delay = self.procs[node].kubelet_delay(backoff, fixed, now);
        self.queue.schedule(now.saturating_add(delay), Event::Start { node: node as u32 });
    }

    /// The process dies: nothing it does afterwards counts, though its requests already on the
    /// wire may still be applied.
    pub(super) fn kill(&mut self, now: Nanos, node: usize, state: ProcState) {
        if !self.procs[node].is_running() {
            return;
        }
        self.stop_acting(now, node);
        self.obs.set_leading(now, node, false);
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
    pub(super) fn stop_acting(&mut self, now: Nanos, node: usize) {
        self.obs.set_acting(now, node, false);
        if let Some(r) = self.recs[node].as_mut() {
            r.deactivate();
        }
    }

    pub(super) fn resume(&mut self, now: Nanos, node: usize, incarnation: u32) {
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

    pub(super) fn feed_elector_result(&mut self, now: Nanos, node: usize, result: LockResult) {
        if matches!(result, Err(LockError::Conflict)) {
            self.obs.node_metrics[node].lease_conflicts += 1;
        }
        self.drive_direct(now, node, Input::Result(result));
    }

    /// Feeds `node`'s elector one input of a request (a timer, an answer), carrying its
    /// outputs out as it asks for them ([`Direct`]) when the run is not traced, and the rest
    /// after it by `process_outputs`.
    #[inline(always)]
    pub(super) fn drive_direct(&mut self, now: Nanos, node: usize, input: Input) {
        let mut kept = self.take_scratch();
        if self.obs.tracing() {
            self.procs[node].drive(now, &mut kept, |e, clock_now, out| input.feed(e, clock_now, out));
            return self.process_outputs(now, node, kept);
        }
        let World { procs, queue, net, obs, .. } = self;
        if let Some((clock_now, elector, process)) = procs[node].split_for_input(now) {
            let wire = Wire { queue, net, obs, clock: process.clock };
            let mut sink = Direct { carrier: Carrier { now, node, wire, process }, kept: &mut kept, keeping: false };
            input.feed(elector, clock_now, &mut sink);
        }
        if kept.is_empty() {
            self.scratch = kept;
        } else {
            self.process_outputs(now, node, kept);
        }
    }

    /// The answer to an elector's request, read in its slot, which is then freed.
    #[inline]
    pub(super) fn elector_response(&mut self, now: Nanos, node: usize, id: u64, msg: u32, plain_text: bool) {
        let expected = self.procs[node].elector_request.filter(|&(expected, _)| expected == id);
        let Some((_, verb)) = expected else {
            if !self.procs[node].side_requests.is_empty() {
                return self.side_response(now, node, id, msg, plain_text);
            }
            // Abandoned or timed out.
            self.net.discard(msg);
            return;
        };
        self.procs[node].elector_request = None;
        let lock_result = self.read_elector_answer(node, verb, msg, plain_text);
        self.feed_elector_result(now, node, lock_result);
    }

    /// An elector request's answer through the node's lock (which caches what it reads); the
    /// message's slot is freed.
    #[inline(always)]
    fn read_elector_answer(&mut self, node: usize, verb: Verb, msg: u32, plain_text: bool) -> LockResult {
        let Stage::Answered { response: Response::Lease(result), .. } = &self.net.get(msg).stage else {
            unreachable!("elector requests are Lease requests, answered")
        };
        let lock_result = match result {
            &Err(code) if plain_text => Err(LockError::NotStatus(code)),
            result => self.procs[node].lock.response(verb, result.as_ref().map_err(|&code| code)),
        };
        self.net.discard(msg);
        lock_result
    }

    /// The answer to a side task's request ([`Output::SendSide`]), if one still waits for it.
    #[cold]
    #[inline(never)]
    fn side_response(&mut self, now: Nanos, node: usize, id: u64, msg: u32, plain_text: bool) {
        let Some(k) = self.procs[node].side_requests.iter().position(|&(r, _, _)| r == id) else {
            self.net.discard(msg);
            return;
        };
        let (_, verb, task) = self.procs[node].side_requests.swap_remove(k);
        let lock_result = self.read_elector_answer(node, verb, msg, plain_text);
        self.feed_side_result(now, node, task, lock_result);
    }

    /// A side task's answer (or its request's failure) fed to the elector.
    #[cold]
    pub(super) fn feed_side_result(&mut self, now: Nanos, node: usize, task: u32, result: LockResult) {
        if matches!(result, Err(LockError::Conflict)) {
            self.obs.node_metrics[node].lease_conflicts += 1;
        }
        let mut out = self.take_scratch();
        self.procs[node].drive(now, &mut out, |el, clock_now, out| el.on_side_result(clock_now, task, result, out));
        self.process_outputs(now, node, out);
    }

    /// Carries out what the elector asked for. New outputs produced while doing so (an
    /// immediate failure fed back) are appended to the same list and handled in order. A
    /// request's outputs (a timer, a typed request, a note, an abandon) are carried out by
    /// [`Carrier`], the same code an untraced run's [`Direct`] sink runs.
    pub(super) fn process_outputs(&mut self, now: Nanos, node: usize, mut out: Outputs) {
        let mut i = 0;
        while i < out.len() {
            i += 1;
            // Read in place: an `Output` is 80 bytes, and copying each out was a tenth of
            // routing them.
            let carried = {
                let World { procs, queue, net, obs, .. } = &mut *self;
                let process = procs[node].parts();
                let wire = Wire { queue, net, obs, clock: process.clock };
                Carrier { now, node, wire, process }.carry_out(&out[i - 1])
            };
            match carried {
                Carried::Done => continue,
                Carried::Refused(e) => {
                    if self.lock_refused(now, node, e, &mut out) {
                        break;
                    }
                    continue;
                }
                Carried::NotMine => {}
            }
            match out[i - 1] {
                Output::Send { op, timeout } => {
                    if self.send_elector_request(now, node, &op, timeout, None, &mut out) {
                        break;
                    }
                }
                Output::Detach { task } => {
                    let p = &mut self.procs[node];
                    debug_assert!(p.elector_request.is_some(), "Detach with no request in flight");
                    if let Some((id, verb)) = p.elector_request.take() {
                        p.side_requests.push((id, verb, task));
                    }
                }
                Output::AbandonSides => self.procs[node].side_requests.clear(),
                Output::SendSide { task } => {
                    let request = self.procs[node].elector.as_ref().and_then(|e| e.side_request(task));
                    if let Some((op, timeout)) = request
                        && self.send_elector_request(now, node, &op, timeout, Some(task), &mut out)
                    {
                        break;
                    }
                }
                Output::NewLeader(holder) => {
                    if self.obs.tracing() {
                        let holder = self.name(holder);
                        trace!(self, now, Some(node), TraceKind::NewLeader { holder });
                    }
                }
                // Leadership changes, exits and the rest: once a term, not once a round.
                rare => self.rare_output(now, node, rare),
            }
        }
        out.clear();
        self.scratch = out;
    }

    /// An elector request the sink left to `process_outputs` (a generic lock's, a troubled
    /// client's, a side task's), built and sent; true if the lock's refusal killed the process.
    fn send_elector_request(
        &mut self,
        now: Nanos,
        node: usize,
        op: &crate::elector::LockOp,
        timeout: Option<Nanos>,
        task: Option<u32>,
        out: &mut Outputs,
    ) -> bool {
        match self.procs[node].lock.request(op, &self.server) {
            Err(e) => match task {
                None => self.lock_refused(now, node, e, out),
                Some(task) => {
                    if e == LockError::Panic {
                        return self.lock_refused(now, node, e, out);
                    }
                    self.procs[node]
                        .drive(now, out, |el, clock_now, out| el.on_side_result(clock_now, task, Err(e), out));
                    false
                }
            },
            Ok(request) => {
                let id = self.net.next_id();
                let verb = request.verb();
                match task {
                    None => self.procs[node].elector_request = Some((id, verb)),
                    Some(task) => self.procs[node].side_requests.push((id, verb, task)),
                }
                let lock = &self.procs[node].lock;
                let payload = match request {
                    LockRequest::Typed(op) => Payload::Lease { lease: lock.lease(), user: lock.user(), op },
                    LockRequest::Generic(request) => Payload::Generic(request),
                };
                self.send(now, node, id, Origin::Elector, payload, (verb, Kind::Lease), timeout);
                false
            }
        }
    }

    /// The lock refused to build a request: an unrecovered panic kills the process (returns
    /// true: nothing more of its outputs is carried out), any other error goes back to the
    /// elector at once.
    #[cold]
    #[inline(never)]
    fn lock_refused(&mut self, now: Nanos, node: usize, error: LockError, out: &mut Outputs) -> bool {
        if error == LockError::Panic {
            trace!(self, now, Some(node), TraceKind::Crash);
            self.kill(now, node, ProcState::Crashed);
            return true;
        }
        self.procs[node].drive(now, out, |el, clock_now, out| el.on_result(clock_now, Err(error), out));
        false
    }

    /// The outputs of a change of leadership or of an exit (see `process_outputs`).
    #[cold]
    #[inline(never)]
    fn rare_output(&mut self, now: Nanos, node: usize, output: Output) {
        match output {
            Output::StartedLeading => {
                // A stop still pending is for the previous term: this one goes on.
                self.procs[node].work_stop = None;
                trace!(self, now, Some(node), TraceKind::StartedLeading);
                self.obs.set_leading(now, node, true);
                self.obs.set_acting(now, node, true);
                let token = self.procs[node].lock.cached().and_then(|l| l.spec.lease_transitions);
                if let Some(r) = self.recs[node].as_mut() {
                    r.activate(token);
                    self.reconcile(now, node);
                }
            }
            // Whichever comes first ends the leader's work; the other finds it ended. The
            // node's `stop_acting` says when the work really stops.
            Output::LeaderContextDone | Output::StoppedLeading => {
                self.obs.set_leading(now, node, false);
                self.work_after_term(now, node);
            }
            Output::StopWork { after } => {
                if self.obs.is_acting(node) && self.spec.nodes[node].stop_acting != StopActing::Never {
                    self.schedule_work_stop(now, node, after, WorkStop::Drain);
                }
            }
            Output::RecordEvent(what) => {
                if self.spec.nodes[node].elector.record_events {
                    self.record_event(now, node, what);
                }
            }
            Output::Exception(message) => {
                self.obs.set_leading(now, node, false);
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
            Output::Send { .. }
            | Output::SendSide { .. }
            | Output::Detach { .. }
            | Output::AbandonSides
            | Output::Timer { .. }
            | Output::Abandon
            | Output::NewLeader(_)
            | Output::Note(_) => {
                unreachable!("carried out by `process_outputs`")
            }
        }
    }

    /// The elector's term ended: the node's `stop_acting` says when its work really stops.
    fn work_after_term(&mut self, now: Nanos, node: usize) {
        match self.spec.nodes[node].stop_acting {
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
        }
    }

    /// The leader's work will stop `after` (local time) from now.
    #[cold]
    pub(super) fn schedule_work_stop(&mut self, now: Nanos, node: usize, after: Nanos, why: WorkStop) {
        let p = &mut self.procs[node];
        p.work_stop_generation = p.work_stop_generation.wrapping_add(1);
        let generation = p.work_stop_generation;
        p.work_stop = Some((why, generation));
        let at = p.timer_fires_at(now, after);
        let event = Event::StopActing { node: node as u32, incarnation: p.incarnation, generation };
        self.queue.schedule(at, event);
    }

    /// A scheduled stop of the leader's work is due.
    #[cold]
    pub(super) fn work_stopped(&mut self, now: Nanos, node: usize, generation: u32) {
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
    pub(super) fn record_event(&mut self, now: Nanos, node: usize, what: crate::elector::LeaderEvent) {
        let config = &self.spec.nodes[node].elector;
        let (namespace, lease_name) = (config.lease_namespace.clone(), config.lease_name.clone());
        let uid = self.server.peek_lease(&namespace, &lease_name).map(|l| l.metadata.uid.clone()).unwrap_or_default();
        let p = &self.procs[node];
        let identity = self.server.symbols().name(p.sym).clone();
        let source = recorder::EventSource {
            identity: &identity,
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

    pub(super) fn process_exited(&mut self, now: Nanos, node: usize) {
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
            AfterLost::Restart { delay } => self.kubelet_restart(now, node, delay),
            AfterLost::Rejoin => self.queue.schedule(now, Event::Start { node: node as u32 }),
        }
    }
}

/// The two inputs of every request: its timer, its answer.
#[derive(Clone, Copy)]
pub(super) enum Input {
    Timer { kind: TimerKind, generation: Generation },
    Result(LockResult),
}

impl Input {
    #[inline(always)]
    fn feed<S: Sink>(self, elector: &mut Elector, now: Now, out: &mut S) {
        match self {
            Input::Timer { kind, generation } => elector.on_timer(now, kind, generation, out),
            Input::Result(result) => elector.on_result(now, result, out),
        }
    }
}

/// The sink an untraced run's elector writes into for the inputs of a request (see
/// [`crate::elector::Sink`]): a timer is armed, a typed request sent, a renewal noted and a
/// request abandoned as the elector asks ([`Carrier`]); anything else (a change of leadership,
/// an Event to record, a request the lock refuses) is kept, with every output after it, for
/// `process_outputs`, in order. Routed through a list and a jump on each output's kind, a
/// request's outputs were a tenth of its instructions.
pub(super) struct Direct<'a> {
    carrier: Carrier<'a>,
    kept: &'a mut Outputs,
    /// An output was kept: all the rest are.
    keeping: bool,
}

impl Sink for Direct<'_> {
    #[inline(always)]
    fn push(&mut self, output: Output) {
        if !self.keeping && matches!(self.carrier.carry_out(&output), Carried::Done) {
            return;
        }
        self.keeping = true;
        self.kept.push(output);
    }

    /// Untraced, only `RenewedLease` is kept of the notes (see `Outputs`).
    #[inline(always)]
    fn note(&mut self, note: Note) {
        if note == Note::RenewedLease {
            self.push(Output::Note(note));
        }
    }

    fn outputs(&mut self) -> &mut Outputs {
        self.keeping = true;
        self.kept
    }
}

/// What became of an output offered to a [`Carrier`].
pub(super) enum Carried {
    Done,
    /// The lock refused to build the request (nothing was sent; the slot is free again).
    Refused(LockError),
    /// Not one of a request's outputs: the caller carries it out.
    NotMine,
}

/// Carries out the outputs of a request's inputs, for both [`Direct`] and `process_outputs`:
/// the parts of the world a send touches ([`Wire`]) and of the process ([`ProcessParts`]).
pub(super) struct Carrier<'a> {
    now: Nanos,
    node: usize,
    wire: Wire<'a>,
    process: ProcessParts<'a>,
}

impl Carrier<'_> {
    #[inline(always)]
    fn carry_out(&mut self, output: &Output) -> Carried {
        let (now, node) = (self.now, self.node);
        match *output {
            Output::Timer { kind, after, generation } => {
                let at = self.process.timer_fires_at(now, after);
                let incarnation = self.process.incarnation;
                self.wire.queue.schedule(at, Event::Timer { node: node as u32, incarnation, generation, kind });
                Carried::Done
            }
            Output::Send { ref op, timeout } if self.process.lock.typed_only() => self.send(op, timeout),
            Output::Note(note) => {
                if note == Note::RenewedLease {
                    let unpaused_and_reachable = !self.process.paused && !self.wire.net.is_cut(node, now);
                    self.wire.obs.leader_recovered(node, unpaused_and_reachable);
                }
                if self.wire.obs.tracing() {
                    self.wire.record_trace(now, Some(node), TraceKind::Note { note });
                }
                Carried::Done
            }
            Output::Abandon => {
                *self.process.elector_request = None;
                Carried::Done
            }
            _ => Carried::NotMine,
        }
    }

    /// A typed request built in the message slot where it will wait (see
    /// `LeaseLock::write_typed`), traced if the run traces, and sent. The id is taken only
    /// once the lock has not refused; a refused request's slot is freed again.
    #[inline(always)]
    fn send(&mut self, op: &crate::elector::LockOp, timeout: Option<Nanos>) -> Carried {
        let (now, node) = (self.now, self.node);
        if self.process.troubled {
            // A wedge or a rate limiter: `World::dispatch` carries it out.
            return Carried::NotMine;
        }
        let net = &mut *self.wire.net;
        let lock = &mut *self.process.lock;
        let msg = net.insert_lease(node, self.process.incarnation, lock.lease(), lock.user());
        let Stage::Request(Payload::Lease { op: dest, .. }) = &mut net.get_mut(msg).stage else {
            unreachable!("inserted as a typed Lease request")
        };
        let verb = match lock.write_typed(op, dest) {
            Ok(verb) => verb,
            Err(e) => {
                net.discard(msg);
                return Carried::Refused(e);
            }
        };
        let id = net.next_id();
        let m = net.get_mut(msg);
        (m.id, m.verb) = (id, verb);
        *self.process.elector_request = Some((id, verb));
        if self.wire.obs.tracing() {
            let name = self.wire.obs.leases[self.wire.obs.node_lease[node]].name.clone();
            let request = TraceKind::Request {
                id,
                origin: Origin::Elector.name(),
                verb: verb.name(),
                resource: Kind::Lease.resource(),
                name,
            };
            self.wire.record_trace(now, Some(node), request);
        }
        let timeout = timeout.map(|t| (self.process.timer_fires_at(now, t), self.wire.queue.reserve_seq()));
        self.wire.net.get_mut(msg).timeout = timeout;
        self.wire.transmit(now, msg);
        Carried::Done
    }
}

/// A version-4 UUID's text (`uuid.NewUUID()` in the components that make one per start), from
/// the node's own stream: the same run gives the same identities.
fn uuid_v4(rng: &mut crate::rng::ComponentRng) -> String {
    let (hi, lo) = rng.next_two_u64();
    let hi = (hi & !0xf000) | 0x4000; // version 4
    let lo = (lo & !(0b11 << 62)) | (0b10 << 62); // RFC 4122 variant
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use crate::elector::Algorithm;
    use crate::model::{FaultKind, Target, TimedFault, WorldSpec};
    use crate::time::secs;
    use crate::world::World;

    /// An untraced run carries a request's outputs out through `Direct` as the elector asks,
    /// a traced one through `process_outputs`: both through `Carrier`, so the same events in
    /// the same order, and the same metrics.
    #[test]
    fn traced_and_untraced_runs_carry_outputs_out_alike() {
        for algorithm in [Algorithm::ClientGo, Algorithm::Fabric8, Algorithm::PythonClient] {
            let mut spec = WorldSpec::basic(3, 3, algorithm, secs(90));
            spec.faults.push(TimedFault { at: secs(30), target: Target::Holder, kind: FaultKind::Crash });
            let untraced = World::new(spec.clone()).expect("valid").run();
            spec.trace = true;
            let traced = World::new(spec).expect("valid").run();
            assert_eq!(untraced.events_processed, traced.events_processed, "{algorithm:?}");
            assert_eq!(untraced.metrics, traced.metrics, "{algorithm:?}");
            assert!(!traced.trace.is_empty());
        }
    }
}
