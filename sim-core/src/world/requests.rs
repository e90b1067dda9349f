//! The request path in the loop: a request leaves its node (`send`), crosses the link
//! (`transmit`), reaches the server (`arrive`), is applied (`apply`) and its answer goes back
//! down to the requester; or it is lost, refused, late or retried after a Retry-After, and its
//! timeout fails it at the client (`timeout`). The messages and links themselves are
//! `network`'s.
//!
//! The steps of an elector's request (`dispatch`, `transmit`, `send_answer`,
//! `timeout_if_late`) are `inline(always)`: out of line, each was a prologue, an epilogue and
//! its arguments through memory around a few dozen instructions of work, a dozen times a
//! request (docs/performance.md).

use super::event::{Event, Origin};
use super::network::{Message, Network, Payload, Response, Stage};
use super::observe::Observer;
use super::{Answer, World, reset_event, timeout_event};
use crate::api::{Kind, LeaseRef, Object, UserId, Verb};
use crate::clock::NodeClock;
use crate::elector::LockError;
use crate::elector::library::RetryAfter;
use crate::engine::EventQueue;
use crate::net::{Delivery, Direction};
use crate::sym::Sym;
use crate::time::Nanos;
use crate::trace::TraceKind;
use std::sync::Arc;

impl World {
    /// Sends a request from `node`; `what` is (verb, kind) for the trace, whose object name is
    /// the node's Lease or its reconciler's child.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send(
        &mut self,
        now: Nanos,
        node: usize,
        id: u64,
        origin: Origin,
        payload: Payload,
        what: (Verb, Kind),
        timeout: Option<Nanos>,
    ) {
        let msg = self.net.insert(node, self.procs[node].incarnation, id, origin, what.0, payload);
        self.dispatch(now, node, msg, what, timeout);
    }

    /// Sends the request waiting in slot `msg` (see `send`): traced, its timeout reserved, onto
    /// the link. The elector's typed requests are built in their slot and enter here.
    #[inline(always)]
    pub(super) fn dispatch(&mut self, now: Nanos, node: usize, msg: u32, what: (Verb, Kind), timeout: Option<Nanos>) {
        if self.obs.tracing() {
            let (verb, kind) = what;
            let m = self.net.get(msg);
            let name = match (m.origin, kind, m.payload()) {
                (Origin::Reconciler, Kind::ConfigMap, _) => {
                    self.recs[node].as_ref().expect("a node with a reconciler").object_name.clone()
                }
                (Origin::Candidate, _, Payload::Generic(request)) => request.name.to_string().into(),
                (Origin::Recorder, _, Payload::Generic(request)) => match &request.body {
                    crate::api::Body::JsonKind(_, event) => event.metadata.name.as_str().into(),
                    crate::api::Body::Frozen(_, event) => event.metadata.name.as_str().into(),
                    body => body.json().and_then(|b| b["metadata"]["name"].as_str()).unwrap_or("").into(),
                },
                _ => self.obs.leases[self.obs.node_lease[node]].name.clone(),
            };
            let request = TraceKind::Request {
                id: m.id,
                origin: m.origin.name(),
                verb: verb.name(),
                resource: kind.resource(),
                name,
            };
            trace!(self, now, Some(node), request);
        }
        if self.procs[node].client.is_some() && self.client_gate(now, node, msg, timeout) {
            return;
        }
        let timeout = timeout.map(|t| (self.procs[node].timer_fires_at(now, t), self.queue.reserve_seq()));
        self.net.get_mut(msg).timeout = timeout;
        self.transmit(now, msg);
    }

    /// Puts the request in slot `msg` on its node's link (see [`Wire::transmit`]).
    #[inline(always)]
    pub(super) fn transmit(&mut self, now: Nanos, msg: u32) {
        let node = self.net.get(msg).node as usize;
        let clock = &self.procs[node].clock;
        Wire { queue: &mut self.queue, net: &mut self.net, obs: &mut self.obs, clock }.transmit(now, msg);
    }

    /// The request of `msg` will not be answered (or not before its deadline): its timeout,
    /// if it has one, goes on the queue now. A deadline already passed (the requester was paused
    /// when its answer or its retry came, and takes it only now) fires at once.
    pub(super) fn arm_timeout(&mut self, now: Nanos, message: &mut Message) {
        arm_timeout(&mut self.queue, now, message);
    }

    pub(super) fn arrive(&mut self, now: Nanos, msg: u32) {
        if let Some((mode, until)) = self.net.availability().outage_at(now) {
            return self.arrive_in_outage(now, msg, mode, until);
        }
        if !self.injector.is_empty() {
            let m = self.net.get(msg);
            let (kind, name) = match m.payload() {
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

    /// A request reaches an API server that is down (`[server] outages`, `server-outage`
    /// faults), by the outage's mode.
    #[cold]
    fn arrive_in_outage(&mut self, now: Nanos, msg: u32, mode: crate::net::PartitionMode, until: Nanos) {
        use crate::net::PartitionMode;
        let (node, id, verb) = {
            let m = self.net.get(msg);
            (m.node as usize, m.id, m.verb)
        };
        match mode {
            PartitionMode::Drop => {
                let mut message = self.net.remove(msg);
                trace!(self, now, None, TraceKind::ServerDown { id });
                self.obs.node_metrics[node].requests_lost.add(verb);
                self.arm_timeout(now, &mut message);
            }
            PartitionMode::Hold => {
                // Applied when the server is back, unless the client gave up first.
                trace!(self, now, Some(node), TraceKind::Held { id, dir: "up", until });
                self.timeout_if_late(msg, until);
                self.queue.schedule(until, Event::Apply { msg });
            }
            PartitionMode::Refuse => {
                // Nothing listens: the connection is reset and the client's call fails now.
                trace!(self, now, Some(node), TraceKind::Refused { id, dir: "up" });
                self.obs.node_metrics[node].requests_lost.add(verb);
                let message = self.net.remove(msg);
                self.queue.schedule(now, reset_event(&message));
            }
        }
    }

    /// The error `[[server.errors]]` chose for message `msg`, as `apply` reads an answer.
    #[cold]
    pub(super) fn injected_answer(&self, msg: u32) -> (Verb, Kind, Option<LeaseRef>, Answer) {
        let m = self.net.get(msg);
        let error = m.injected.as_ref().expect("an injected message").error.clone();
        match m.payload() {
            Payload::Lease { .. } => (m.verb, Kind::Lease, None, Answer::Lease(Err(error))),
            Payload::Generic(r) => (r.verb, r.kind, None, Answer::Object(Err(error))),
        }
    }

    /// If the next stage of `msg` comes at or after its deadline, the timeout fires first: it
    /// goes on the queue now.
    #[inline(always)]
    pub(super) fn timeout_if_late(&mut self, msg: u32, at: Nanos) {
        timeout_if_late(&mut self.queue, &mut self.net, msg, at);
    }

    /// The server takes the request of `msg` now and sends its answer down the link.
    #[inline]
    pub(super) fn apply(&mut self, now: Nanos, msg: u32) {
        let m = self.net.get(msg);
        if m.origin == Origin::Elector
            && m.injected.is_none()
            && !self.obs.tracing()
            && let Stage::Request(Payload::Lease { lease, user, .. }) = &m.stage
        {
            let (node, lease, user) = (m.node as usize, *lease, *user);
            self.answer_lease(now, msg, node, lease, user);
            return;
        }
        self.apply_any(now, msg);
    }

    /// An elector's typed Lease request answered, untraced and with no error injected: what
    /// `apply_any` does for it, without the checks that concern other requesters (a reconciler's
    /// child object, a LeaseCandidate, the history), and with the answer written by the server
    /// into the message where it waits (`ApiServer::lease_request_into`). (A third of the events
    /// of an election run take this path.)
    #[inline]
    fn answer_lease(&mut self, now: Nanos, msg: u32, node: usize, lease: LeaseRef, user: UserId) {
        let field_manager = self.procs[node].field_manager;
        let rv_before = self.server.resource_version();
        let m = self.net.get_mut(msg);
        let verb = m.verb;
        // The request, taken out of the slot its answer goes into (no error was injected on this
        // path: nothing of it is kept for a retry).
        let request =
            std::mem::replace(&mut m.stage, Stage::Answered { response: Response::Lease(Err(0)), retry: None });
        let Stage::Request(Payload::Lease { op, .. }) = &request else { unreachable!("a typed Lease request") };
        let Stage::Answered { response: Response::Lease(answer), .. } = &mut m.stage else { unreachable!() };
        let outcome = self.server.lease_request_into(now, lease, user, field_manager, op, answer);
        drop_request(request);
        let code = match outcome {
            Ok(()) => status_code(verb, None),
            Err(code) => code,
        };
        self.net.get_mut(msg).code = code;
        self.obs.count_request(verb, code);
        if self.server.resource_version() != rv_before {
            self.lease_written(now, lease);
        }
        self.send_answer(now, msg, node);
    }

    /// The server's handling of any request (see `apply`).
    fn apply_any(&mut self, now: Nanos, msg: u32) {
        let (node, id, origin) = {
            let m = self.net.get(msg);
            (m.node as usize, m.id, m.origin)
        };
        let rv_before = self.server.resource_version();
        let m = self.net.get(msg);
        // The child object's value before a reconciler write, to tell an overwrite.
        let child_before = match m.payload() {
            Payload::Generic(r) if origin == Origin::Reconciler && r.kind == Kind::ConfigMap && r.verb != Verb::Get => {
                self.child_value(node)
            }
            _ => None,
        };
        // The child's version before a reconciler request, for the history.
        let history_before = (self.obs.tracing()
            && origin == Origin::Reconciler
            && matches!(m.payload(), Payload::Generic(r) if r.kind == Kind::ConfigMap))
        .then(|| self.child_rv(node));
        let injected = m.injected.is_some();
        let (verb, kind, lease, mut result) = match m.payload() {
            // An injected error other than 504 stands in for the handling.
            _ if injected && !m.injected.as_ref().is_some_and(|i| i.applied) => self.injected_answer(msg),
            Payload::Lease { lease, user, op } => {
                let manager = if origin == Origin::Elector { self.procs[node].field_manager } else { Sym::EMPTY };
                let result = self.server.lease_request(now, *lease, *user, manager, op);
                (op.verb(), Kind::Lease, Some(*lease), Answer::Lease(result))
            }
            Payload::Generic(request) => {
                // An Event's recorder reads nothing of the answer: its object is not built.
                let answer = if origin == Origin::Recorder {
                    Answer::Effect(self.server.handle_for_effect(now, request))
                } else {
                    Answer::Object(self.server.handle(now, request))
                };
                let lease = match request.kind {
                    Kind::Lease => self.server.find_lease_ref(&request.namespace, &request.name),
                    _ => None,
                };
                (request.verb, request.kind, lease, answer)
            }
        };
        // A 504 after handling: the work is done, the client hears the timeout.
        // (Assigned, not rebound: the common path moves no answer.)
        if injected {
            result = self.injected_answer(msg).3;
        }
        let error = result.error();
        let code = status_code(verb, error);
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
            && let Payload::Generic(r) = self.net.get(msg).payload()
        {
            let (namespace, name) = (Arc::clone(&r.namespace), Arc::clone(&r.name));
            self.election_candidate_written(now, &namespace, &name);
        }
        if let Some(rv_before) = history_before {
            self.record_history(now, node, id, verb, error, rv_before);
        }
        if origin == Origin::Reconciler {
            self.account_reconciler_write(now, node, id, kind, verb, error, child_before);
        }
        let response = match result {
            Answer::Lease(r) => Response::Lease(r.map_err(|e| e.code)),
            Answer::Effect(_) => Response::Effect,
            Answer::Object(r) if origin == Origin::Elector => Response::Lease(match r {
                Ok(Object::Lease(l)) => Ok(self.server.view_of(&l)),
                Ok(_) => Err(500),
                Err(e) => Err(e.code),
            }),
            Answer::Object(r) => Response::Object(r.map_err(|e| e.code)),
        };
        self.net.get_mut(msg).answer(response);
        self.send_answer(now, msg, node);
    }

    /// The answer waiting in `msg` goes down `node`'s link: it arrives (its timeout goes on the
    /// queue first if it arrives late), or it is lost or refused and the slot is freed.
    #[inline(always)]
    fn send_answer(&mut self, now: Nanos, msg: u32, node: usize) {
        match self.net.send(node, Direction::Down, now) {
            delivery @ (Delivery::Arrives(at) | Delivery::Held(at)) => {
                if matches!(delivery, Delivery::Held(_)) {
                    let id = self.net.get(msg).id;
                    trace!(self, now, Some(node), TraceKind::Held { id, dir: "down", until: at });
                }
                self.timeout_if_late(msg, at);
                self.queue.schedule(at, Event::Respond { msg });
            }
            Delivery::Refused => {
                // The connection is reset under the answer: the client sees the error now.
                let message = self.net.remove(msg);
                trace!(self, now, Some(node), TraceKind::Refused { id: message.id, dir: "down" });
                self.obs.node_metrics[node].requests_lost.add(message.verb);
                self.queue.schedule(now, reset_event(&message));
            }
            lost => {
                let why = if lost == Delivery::Lost { "loss" } else { "partition" };
                let mut message = self.net.remove(msg);
                trace!(self, now, Some(node), TraceKind::Lost { id: message.id, dir: "down", why });
                self.obs.node_metrics[node].requests_lost.add(message.verb);
                self.arm_timeout(now, &mut message);
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
    pub(super) fn retry_after(&mut self, now: Nanos, msg: u32) -> bool {
        let m = self.net.get(msg);
        let Some(wait) = m.injected.as_ref().and_then(|i| i.retry_after) else { return false };
        let node = m.node as usize;
        if m.origin != Origin::Elector || !self.procs[node].elector_awaits(m.id) {
            return false;
        }
        let code = m.code;
        let retried = match self.spec.nodes[node].elector.algorithm.library().retry_after {
            RetryAfter::Urllib3 => {
                matches!(code, 413 | 429 | 503) && matches!(m.verb, Verb::Get | Verb::Update) && m.attempts < 3
            }
            RetryAfter::ClientGo => (code == 429 || code >= 500) && m.attempts < 10,
        };
        if !retried {
            return false;
        }
        let id = m.id;
        let at = self.procs[node].timer_fires_at(now, wait);
        trace!(self, now, Some(node), TraceKind::Response { id, code });
        trace!(self, now, Some(node), TraceKind::RetryAfter { id, wait_ns: wait });
        let m = self.net.get_mut(msg);
        m.unanswer();
        m.injected = None;
        m.attempts += 1;
        match m.timeout {
            // The context ends first: the caller sees its error, not the status.
            Some((t, _)) if at >= t => {
                let mut message = self.net.remove(msg);
                self.arm_timeout(now, &mut message);
            }
            _ => self.queue.schedule(at, Event::Resend { msg }),
        }
        true
    }

    /// A request of a process whose HTTP client is wedged or rate-limited: written into the
    /// dead connection, or held for a token, or failed at once for want of one (returns true),
    /// or sent as usual (false, a token taken).
    #[cold]
    #[inline(never)]
    fn client_gate(&mut self, now: Nanos, node: usize, msg: u32, timeout: Option<Nanos>) -> bool {
        let p = &mut self.procs[node];
        let client = p.client.as_deref_mut().expect("checked");
        if now < client.wedged_until {
            let clock = &p.clock;
            Wire { queue: &mut self.queue, net: &mut self.net, obs: &mut self.obs, clock }.wedged(now, msg);
            return true;
        }
        let origin = self.net.get(msg).origin;
        let Some(limiter) = client.limiter.as_mut() else { return false };
        if origin == Origin::Recorder {
            return false;
        }
        let mono = p.clock.monotonic(now);
        // Only the elector's renew round has a context deadline to bound the wait.
        let limit = match origin {
            Origin::Elector => p.elector.as_ref().and_then(|e| e.context_deadline()),
            _ => None,
        }
        .map(|deadline| deadline.saturating_sub(mono).max(0) as Nanos);
        match limiter.reserve(origin == Origin::Reconciler, mono, limit) {
            Some(0) => false,
            Some(wait) => {
                let at = p.timer_fires_at(now, wait);
                let clock = &p.clock;
                Wire { queue: &mut self.queue, net: &mut self.net, obs: &mut self.obs, clock }
                    .throttle(now, msg, at, wait, timeout);
                true
            }
            None => {
                // "rate: Wait(n=1) would exceed context deadline": the request fails at once
                // and is never sent.
                let message = self.net.remove(msg);
                trace!(self, now, Some(node), TraceKind::RateLimited { id: message.id });
                self.queue.schedule(now, reset_event(&message));
                true
            }
        }
    }

    /// A request that waited at the client-side rate limiter goes out now, its timeout starting
    /// only now (client-go throttles before it applies the request timeout), unless its caller
    /// stopped waiting meanwhile: then it is never sent (`Wait` returned the context's error).
    /// (x/time/rate gives a cancelled reservation's token back; leasesim keeps it taken. A
    /// transport retry after a Retry-After is not throttled again, as client-go's is.)
    pub(super) fn throttled_send(&mut self, now: Nanos, msg: u32) {
        let m = self.net.get(msg);
        let node = m.node as usize;
        let waited_for = match m.origin {
            Origin::Elector => self.procs[node].elector_awaits(m.id),
            Origin::Reconciler | Origin::Candidate | Origin::Recorder => true,
        };
        if !waited_for {
            self.net.discard(msg);
            return;
        }
        if self.procs[node].client.as_ref().is_some_and(|c| now < c.wedged_until) {
            let clock = &self.procs[node].clock;
            return Wire { queue: &mut self.queue, net: &mut self.net, obs: &mut self.obs, clock }.wedged(now, msg);
        }
        let timeout = match self.net.get(msg).timeout {
            Some((after, UNARMED)) => Some((self.procs[node].timer_fires_at(now, after), self.queue.reserve_seq())),
            other => other,
        };
        self.net.get_mut(msg).timeout = timeout;
        self.transmit(now, msg);
    }

    /// Sends a request again after its Retry-After, unless its caller has stopped waiting.
    pub(super) fn resend(&mut self, now: Nanos, msg: u32) {
        let m = self.net.get(msg);
        let node = m.node as usize;
        if !self.procs[node].elector_awaits(m.id) {
            self.net.discard(msg);
            return;
        }
        if self.obs.tracing() {
            let m = self.net.get(msg);
            let name = self.obs.leases[self.obs.node_lease[node]].name.clone();
            let request = TraceKind::Request {
                id: m.id,
                origin: m.origin.name(),
                verb: m.verb.name(),
                resource: Kind::Lease.resource(),
                name,
            };
            trace!(self, now, Some(node), request);
        }
        // A resend held back by a pause of its process finds its deadline passed: the context
        // ended first, so the request is not sent again and its timeout fires now.
        if self.net.get(msg).timeout.is_some_and(|(t, _)| t <= now) {
            let mut message = self.net.remove(msg);
            self.arm_timeout(now, &mut message);
            return;
        }
        self.transmit(now, msg);
    }

    /// The request `id` failed at the client: its timeout (`error` Timeout) or a refused
    /// connection (Refused).
    pub(super) fn timeout(&mut self, now: Nanos, node: usize, id: u32, origin: Origin, error: LockError) {
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
                } else if let Some(k) = self.procs[node].side_requests.iter().position(|&(r, _, _)| r as u32 == id) {
                    let (request, _, task) = self.procs[node].side_requests.swap_remove(k);
                    if error == LockError::Timeout {
                        trace!(self, now, Some(node), TraceKind::Timeout { id: request });
                    }
                    self.feed_side_result(now, node, task, Err(error));
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
                // The request id's low 32 bits are unique within a run (see `Event::Timeout`).
                let full = self.cle.as_ref().and_then(|c| c.candidates[node].as_ref()).and_then(|c| c.in_flight_id());
                // Only the request still in flight times out, as for the elector and the reconciler.
                if let Some(full) = full.filter(|f| *f as u32 == id) {
                    if error == LockError::Timeout {
                        trace!(self, now, Some(node), TraceKind::Timeout { id: full });
                    }
                    self.candidate_response(now, node, full, None);
                }
            }
            Origin::Recorder => {}
        }
    }
}

/// What a request's way onto its link touches: the queue, the links and messages, the
/// observer, and the sending node's clock (for the trace's wall times). Borrowed apart from the
/// processes, so that an elector's sink (`lifecycle::Direct`) can send while the elector runs.
pub(super) struct Wire<'a> {
    pub(super) queue: &'a mut EventQueue<Event>,
    pub(super) net: &'a mut Network,
    pub(super) obs: &'a mut Observer,
    pub(super) clock: &'a NodeClock,
}

impl Wire<'_> {
    /// Records a trace event of the sending node (see `World::record_trace`).
    pub(super) fn record_trace(&mut self, t: Nanos, node: Option<usize>, kind: TraceKind) {
        let local = node.map(|_| self.clock.wall(t));
        self.obs.trace(t, node, local, kind);
    }

    /// The request in slot `msg` waits for a token of its process's rate limiter until `at`
    /// (`wait` local): its timeout is kept unarmed (`UNARMED`) until it goes out.
    #[cold]
    pub(super) fn throttle(&mut self, now: Nanos, msg: u32, at: Nanos, wait: Nanos, timeout: Option<Nanos>) {
        let m = self.net.get_mut(msg);
        m.timeout = timeout.map(|after| (after, UNARMED));
        let (node, id) = (m.node as usize, m.id);
        if self.obs.tracing() {
            self.record_trace(now, Some(node), TraceKind::Throttled { id, wait_ns: wait });
        }
        self.queue.schedule(at, Event::Throttled { msg });
    }

    /// The request in slot `msg` is written into a wedged client's dead connection: it never
    /// leaves, is never answered, and no timeout ends the wait (a `wedge` fault).
    #[cold]
    pub(super) fn wedged(&mut self, now: Nanos, msg: u32) {
        let m = self.net.remove(msg);
        let node = m.node as usize;
        self.obs.node_metrics[node].requests_sent.add(m.verb);
        self.obs.node_metrics[node].requests_lost.add(m.verb);
        if self.obs.tracing() {
            self.record_trace(now, Some(node), TraceKind::Lost { id: m.id, dir: "up", why: "wedged" });
        }
        drop_request(m.stage);
    }

    /// Puts the request in slot `msg` on its node's link: it arrives (perhaps after a `hold`
    /// partition heals), is lost (its timeout, if any, will fire) or is refused (it fails now).
    /// The message stays in its slot unless it will never arrive.
    #[inline(always)]
    pub(super) fn transmit(&mut self, now: Nanos, msg: u32) {
        let m = self.net.get(msg);
        let (node, id, verb) = (m.node as usize, m.id, m.verb);
        self.obs.node_metrics[node].requests_sent.add(verb);
        match self.net.send(node, Direction::Up, now) {
            delivery @ (Delivery::Arrives(at) | Delivery::Held(at)) => {
                if matches!(delivery, Delivery::Held(_)) {
                    trace!(self, now, Some(node), TraceKind::Held { id, dir: "up", until: at });
                }
                // Arriving at or after its deadline, it has timed out first.
                timeout_if_late(self.queue, self.net, msg, at);
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
                arm_timeout(self.queue, now, &mut message);
            }
        }
    }
}

/// The sequence number of a timeout not yet armed: the slot's timeout holds its duration (a
/// request waiting at the rate limiter; see `Wire::throttle`).
const UNARMED: u64 = u64::MAX;

/// Drops a request taken out of its slot: one that holds nothing (every election's) is let go
/// without its drop glue, an out-of-line call (see `Stage::set`).
#[inline(always)]
fn drop_request(request: Stage) {
    if request.holds_nothing() {
        // Nothing to free: forgetting it leaks nothing.
        std::mem::forget(request);
    }
}

/// See [`World::timeout_if_late`].
#[inline(always)]
fn timeout_if_late(queue: &mut EventQueue<Event>, net: &mut Network, msg: u32, at: Nanos) {
    let m = net.get_mut(msg);
    if let Some((t, seq)) = m.timeout
        && at >= t
    {
        m.timeout = None;
        let event = timeout_event(m);
        queue.schedule_reserved(t, seq, event);
    }
}

/// See [`World::arm_timeout`].
fn arm_timeout(queue: &mut EventQueue<Event>, now: Nanos, message: &mut Message) {
    if let Some((t, seq)) = message.timeout.take() {
        let event = timeout_event(message);
        queue.schedule_reserved(t.max(now), seq, event);
    }
}

/// The status of an answer: the error's, or 201 Created for a POST (apiserver
/// `handlers/create.go`) and 200 for everything else.
#[inline]
fn status_code(verb: Verb, error: Option<&crate::api::ApiError>) -> u16 {
    error.map_or(if verb == Verb::Create { 201 } else { 200 }, |e| e.code)
}

#[cfg(test)]
mod tests {
    use crate::api::Verb;
    use crate::elector::Algorithm;
    use crate::model::{ServerErrorRule, WorldSpec};
    use crate::time::secs;
    use crate::trace::TraceKind;
    use crate::world::World;

    /// One node's elector GETs answered 503 with a Retry-After of 1 s for the whole run: how
    /// many GETs reach the server before the elector sees the error, by its library's
    /// Retry-After policy (the row's `retry_after`).
    fn gets_for_one_attempt(algorithm: Algorithm) -> usize {
        let mut spec = WorldSpec::basic(1, 1, algorithm, secs(20));
        spec.trace = true;
        // No request timeout: the retries alone end the attempt.
        spec.nodes[0].elector_mut().request_timeout = None;
        spec.server_errors.push(ServerErrorRule {
            from: 0,
            until: secs(20),
            verb: Some(Verb::Get),
            kind: None,
            node: Some(0),
            probability: 1.0,
            code: 503,
            retry_after: Some(secs(1)),
            message: "busy".into(),
        });
        let r = World::new(spec).expect("valid").run();
        // Requests up to the elector's first note after the first GET (it gave up the attempt).
        let mut gets = 0;
        for e in &r.trace {
            match &e.kind {
                TraceKind::Request { verb: "get", .. } => gets += 1,
                TraceKind::Note { .. } if gets > 0 => break,
                _ => {}
            }
        }
        gets
    }

    #[test]
    fn retry_after_is_honoured_as_each_librarys_http_layer_does() {
        // client-go's rest client: the first try and 10 retries (kubectl measured 11 attempts
        // against a 503 with Retry-After, shared/reference/kubectl-wire.md §2.4); urllib3's
        // Retry(3): the first and 3 more.
        assert_eq!(gets_for_one_attempt(Algorithm::ClientGo), 11);
        assert_eq!(gets_for_one_attempt(Algorithm::PythonClient), 4);
    }
}
