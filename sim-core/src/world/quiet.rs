//! Quiet stretches: stepping over renewal periods in which nothing but the cycle happens.
//!
//! Most of an election run is quiet: the leader renews at the start of each round, every
//! candidate polls the Lease and is told it is held, and nothing else is due. In a small world
//! (at most [`MAX_NODES`] nodes, one Lease, no trace) whose running nodes all run client-go's
//! loop (`elector::loops`) and wait between two requests, the loop hands such a stretch to
//! [`World::try_quiet_stretch`], which carries it out without the event queue and the message
//! slab: each node's requests, one after another, through the same elector, lock, link, clock
//! and server calls the events would make, in two passes.
//!
//! 1. **Plan**, on copies of each node's elector, lock and link (nothing of the world moves):
//!    the leader's renewals first (their arrivals are the Lease's versions), then each
//!    candidate's polls, each Get answered with the version that arrived before it. A node's
//!    plan ends at the first request whose steps are not the quiet ones: the elector asks for
//!    anything but the one request or timer of the cycle, the server would not serve a plain
//!    renewal (`ApiServer::quiet_renewal`), a message would be lost, held or late for its
//!    timeout, the server is down or slow, or the request would start after the horizon (the
//!    first event in the queue that is not one of the nodes' waiting timers, or the run's end).
//! 2. The stretch ends at the latest moment `x` before every node's first unplanned request at
//!    which no node has a request in flight; only whole requests up to `x` are kept. Every
//!    sequence number the skipped events would have taken is counted, and each node's next
//!    timer gets the one it would have had (the events taken before it, in time order); the
//!    stretch is not taken when two kept events of different nodes fall on the same nanosecond
//!    where their order would matter, or when it would cross the run's event budget.
//! 3. **Commit**: the same requests through the real objects (the server's own typed path for
//!    each renewal), the counters each event moves, and each node's next timer queued.
//!
//! Every output is the same byte for byte as when each event is handled alone: the corpus,
//! the shipped scenarios and a property test compare runs with and without stretches
//! (`WorldSpec::skip_quiet`, the CLI's `--no-skip`). Message ids are counted, not assigned
//! (none is in flight at either end of a stretch); message slots are not used.

use super::World;
use super::event::Event;
use super::process::ProcState;
use crate::api::{LeaseOp, LeaseView, QuietLease, UserId, Verb};
use crate::clock::NodeClock;
use crate::elector::loops::LoopElector;
use crate::elector::{Elector, Generation, LockOp, Note, Now, Output, Outputs, Sink, TimerKind};
use crate::lock::LeaseLock;
use crate::net::{Delivery, Direction, Link, ServerAvailability};
use crate::time::Nanos;

/// Worlds of more nodes never take stretches: each attempt looks at every node and every
/// queued event.
pub(super) const MAX_NODES: usize = 16;

/// One whole request of one node in a stretch: the timer that started it, its arrival at the
/// server, its answer's arrival, and the timer its answer armed.
#[derive(Clone, Copy, Debug)]
struct Poll {
    t0: Nanos,
    t1: Nanos,
    t2: Nanos,
    /// Whether the request reserved a sequence number for its timeout.
    timeout: bool,
    /// The monotonic reading at `t2` (the process keeps its last reading).
    mono2: i64,
    next: Nanos,
    generation: Generation,
}

impl Poll {
    /// Sequence numbers its events take before true time `t` (strictly).
    fn seqs_before(&self, t: Nanos) -> u64 {
        (self.t0 < t) as u64 * (1 + self.timeout as u64) + (self.t1 < t) as u64 + (self.t2 < t) as u64
    }

    fn seqs(&self) -> u64 {
        3 + self.timeout as u64
    }
}

/// A node of a stretch.
pub(super) struct Lane {
    node: usize,
    leader: bool,
    /// Its waiting timer: (time, sequence number, generation).
    timer: (Nanos, u64, Generation),
    polls: Vec<Poll>,
    /// When its first request not planned starts (a step not quiet, or past the horizon).
    stop: Nanos,
    /// Copies of its elector, lock and link as the plan had them before request `k` (the
    /// last few before the horizon): where the stretch ends, the commit puts the copy in place
    /// of the originals instead of replaying every request.
    snaps: Vec<(usize, Snapshot)>,
    /// The leader's renewals: (arrival, request, answer, whether the Lease was written).
    sent: Vec<(Nanos, LeaseOp, LeaseView, bool)>,
}

type Snapshot = Box<(LoopElector, LeaseLock, Link)>;

/// What an elector asked for in one input, as far as a stretch cares: one output, and whether
/// it noted a renewal (the only note an untraced run keeps, see `lifecycle::Direct`).
#[derive(Default)]
struct Capture {
    first: Option<Output>,
    more: bool,
    renewed: bool,
    spill: Outputs,
}

impl Sink for Capture {
    #[inline]
    fn push(&mut self, output: Output) {
        if self.first.is_none() && !self.more {
            self.first = Some(output);
        } else {
            self.more = true;
        }
    }

    #[inline]
    fn note(&mut self, note: Note) {
        if note == Note::RenewedLease {
            if self.first.is_some() || self.renewed {
                self.more = true;
            }
            self.renewed = true;
        }
    }

    fn outputs(&mut self) -> &mut Outputs {
        self.more = true;
        &mut self.spill
    }
}

impl Capture {
    /// The only output, if there was exactly one.
    fn only(&self) -> Option<Output> {
        if self.more { None } else { self.first }
    }
}

/// What one request of a lane touches.
struct Parts<'a> {
    elector: &'a mut LoopElector,
    lock: &'a mut LeaseLock,
    link: &'a mut Link,
    clock: &'a NodeClock,
    availability: &'a ServerAvailability,
}

#[inline]
fn clock_now(clock: &NodeClock, t: Nanos) -> Now {
    let mono = clock.monotonic(t);
    Now { mono, wall: clock.wall_from_monotonic(t, mono) }
}

/// One request of a lane, from its timer at `t0` (of `generation`) to the timer its answer
/// arms, if every step is the quiet one; `serve` answers it at the server (`None`: not quiet).
/// On `None` the parts may have moved: the plan works on copies, and the commit replays only
/// requests the plan found quiet.
#[inline]
fn step(
    parts: &mut Parts<'_>,
    leader: bool,
    t0: Nanos,
    generation: Generation,
    mut serve: impl FnMut(Nanos, &LeaseOp) -> Option<LeaseView>,
) -> Option<Poll> {
    let (kind, verb) = if leader { (TimerKind::NextRound, Verb::Update) } else { (TimerKind::Retry, Verb::Get) };
    let now0 = clock_now(parts.clock, t0);
    let mut asked = Capture::default();
    parts.elector.on_timer(now0, kind, generation, &mut asked);
    let Some(Output::Send { op: lock_op, timeout }) = asked.only() else { return None };
    if asked.renewed || matches!(lock_op, LockOp::Get) == leader {
        return None;
    }
    let mut op = LeaseOp::Get;
    if parts.lock.write_typed(&lock_op, &mut op) != Ok(verb) {
        return None;
    }
    let deadline = timeout.map(|after| parts.clock.timer_fires_at_reading(t0, now0.mono, after));
    let Delivery::Arrives(t1) = parts.link.send(t0, Direction::Up) else { return None };
    if deadline.is_some_and(|d| t1 >= d)
        || parts.availability.outage_at(t1).is_some()
        || parts.availability.extra_processing(t1) > 0
    {
        return None;
    }
    let view = serve(t1, &op)?;
    let Delivery::Arrives(t2) = parts.link.send(t1, Direction::Down) else { return None };
    if deadline.is_some_and(|d| t2 >= d) {
        return None;
    }
    let now2 = clock_now(parts.clock, t2);
    let record = parts.lock.response(verb, Ok(&view)).ok()?;
    let mut answered = Capture::default();
    parts.elector.on_result(now2, Ok(record), &mut answered);
    let Some(Output::Timer { kind: next_kind, after, generation }) = answered.only() else { return None };
    if next_kind != kind || answered.renewed != leader {
        return None;
    }
    let next = parts.clock.timer_fires_at_reading(t2, now2.mono, after);
    Some(Poll { t0, t1, t2, timeout: deadline.is_some(), mono2: now2.mono, next, generation })
}

/// The Lease's versions in a stretch: as it was, then after each renewal that arrived.
struct Timeline {
    start: LeaseView,
    /// (arrival, the Lease as a Get answers it after it).
    versions: Vec<(Nanos, LeaseView)>,
}

impl Timeline {
    /// The Lease as a Get arriving at `t` reads it; `None` when a renewal arrives at the same
    /// nanosecond (their order would be the queue's).
    /// `cursor`: the reader's place, moved forward (its Gets arrive later and later).
    #[inline]
    fn at(&self, t: Nanos, cursor: &mut usize) -> Option<LeaseView> {
        let mut k = *cursor;
        while self.versions.get(k).is_some_and(|&(at, _)| at < t) {
            k += 1;
        }
        *cursor = k;
        if self.versions.get(k).is_some_and(|&(at, _)| at == t) {
            return None;
        }
        Some(if k == 0 { self.start.clone() } else { self.versions[k - 1].1.clone() })
    }
}

impl World {
    /// Whether this world may take quiet stretches at all (fixed for the run).
    pub(super) fn quiet_possible(&self) -> bool {
        self.spec.skip_quiet
            && !self.obs.tracing()
            && self.procs.len() <= MAX_NODES
            && self.injector.is_empty()
            && !self.watches.any()
            && self.cle.is_none()
            && self.procs.windows(2).all(|w| w[0].lease == w[1].lease)
    }

    /// Steps over the quiet stretch that starts now (after an answer was handled), if
    /// there is one ending no later than `end` and within `max_events`; see the module's text.
    /// Returns the time of the last event stepped over.
    pub(super) fn try_quiet_stretch(&mut self, end: Nanos, max_events: u64) -> Option<Nanos> {
        // The lanes' buffers are kept from one attempt to the next.
        let mut lanes = std::mem::take(&mut self.quiet_lanes);
        let last = self.quiet_lanes(&mut lanes).and_then(|()| self.stretch(&mut lanes, end, max_events));
        self.quiet_lanes = lanes;
        last
    }

    fn stretch(&mut self, lanes: &mut [Lane], end: Nanos, max_events: u64) -> Option<Nanos> {
        // The horizon: the first queued event that is not a lane's waiting timer.
        let mut horizon = Nanos::MAX;
        for (t, seq, event) in self.queue.entries() {
            let lane_timer = match *event {
                Event::Timer { node, incarnation, generation, kind } => lanes.iter_mut().find(|l| {
                    l.node == node as usize
                        && incarnation == self.procs[l.node].incarnation
                        && kind == if l.leader { TimerKind::NextRound } else { TimerKind::Retry }
                        && generation == l.timer.2
                        && l.timer.1 == u64::MAX
                }),
                _ => None,
            };
            match lane_timer {
                Some(lane) => lane.timer = (t, seq, lane.timer.2),
                None => horizon = horizon.min(t),
            }
        }
        if lanes.iter().any(|l| l.timer.1 == u64::MAX) {
            return None;
        }
        let limit = end.min(horizon.saturating_sub(1));
        if lanes.iter().all(|l| l.timer.0 > limit) {
            return None;
        }
        let lease = self.procs[lanes[0].node].lease;
        let readers: Vec<UserId> = lanes.iter().filter(|l| !l.leader).map(|l| self.procs[l.node].user).collect();
        let start = self.server.quiet_lease(lease, &readers)?;
        // Every count a stretch moves must already have its line (their order is first use).
        if !readers.is_empty() && !self.obs.counts_request(Verb::Get, 200)
            || lanes.iter().any(|l| l.leader) && !self.obs.counts_request(Verb::Update, 200)
        {
            return None;
        }
        let timeline = self.plan(lanes, limit, start)?;
        let (x, last) = cut(lanes, limit)?;
        let events: u64 = lanes.iter().map(|l| 3 * l.polls.len() as u64).sum();
        if events == 0 || self.events_processed + events > max_events {
            return None;
        }
        // Each lane's next timer takes the sequence number it would have had: the numbers of
        // every event before it. Two events at its instant would leave that to the queue.
        let base = self.queue.peek_seq();
        let mut timers = Vec::with_capacity(lanes.len());
        for lane in lanes.iter().filter(|l| !l.polls.is_empty()) {
            let at = lane.polls.last().expect("kept").t2;
            let mut before = 0;
            for other in lanes.iter() {
                for p in &other.polls {
                    if other.node != lane.node && (p.t0 == at || p.t1 == at || p.t2 == at) {
                        return None;
                    }
                    before += p.seqs_before(at);
                }
            }
            timers.push((lane.node, base + before));
        }
        debug_assert!(x < horizon && x <= end);
        self.commit(lanes, &timers, timeline, lease);
        Some(last)
    }

    /// The running nodes, each waiting between two requests of the quiet cycle; `None` if any
    /// running node is not (or a second leader is).
    fn quiet_lanes(&self, lanes: &mut Vec<Lane>) -> Option<()> {
        let mut count = 0;
        for (node, p) in self.procs.iter().enumerate() {
            if p.state != ProcState::Running {
                continue;
            }
            let Some(Elector::Loop(elector)) = p.elector.as_ref() else { return None };
            let (leader, generation) = elector.quiet_role()?;
            if p.paused_until.is_some()
                || p.client.is_some()
                || p.elector_request.is_some()
                || !p.side_requests.is_empty()
                || !p.deferred.is_empty()
                || !p.lock.typed_only()
            {
                return None;
            }
            if count == lanes.len() {
                lanes.push(Lane {
                    node,
                    leader,
                    timer: (0, 0, 0),
                    polls: Vec::new(),
                    stop: 0,
                    snaps: Vec::new(),
                    sent: Vec::new(),
                });
            }
            let lane = &mut lanes[count];
            (lane.node, lane.leader, lane.timer, lane.stop) = (node, leader, (0, u64::MAX, generation), 0);
            lane.polls.clear();
            lane.snaps.clear();
            lane.sent.clear();
            count += 1;
        }
        lanes.truncate(count);
        if lanes.is_empty() || lanes.iter().filter(|l| l.leader).count() > 1 {
            return None;
        }
        // The leader first: its renewals are the versions the others read.
        lanes.sort_by_key(|l| !l.leader);
        Some(())
    }

    /// The plan (pass 1): each lane's quiet requests from its timer on, on copies.
    fn plan(&self, lanes: &mut [Lane], limit: Nanos, start: QuietLease) -> Option<Timeline> {
        let mut state = start.clone();
        let mut timeline = Timeline { start: start.view, versions: Vec::new() };
        for lane in lanes.iter_mut() {
            let p = &self.procs[lane.node];
            let Some(Elector::Loop(elector)) = p.elector.as_ref() else { return None };
            let (mut elector, mut lock, mut link) = (elector.clone(), p.lock.clone(), self.net.link(lane.node).clone());
            let mut parts = Parts {
                elector: &mut elector,
                lock: &mut lock,
                link: &mut link,
                clock: &p.clock,
                availability: self.net.availability(),
            };
            let (mut t0, mut generation) = (lane.timer.0, lane.timer.2);
            let (user, field_manager, lease) = (p.user, p.field_manager, p.lease);
            // Copies are kept of the requests that may be the stretch's last: those starting
            // within one and a half of the longest waits of the horizon.
            let config = parts.elector.config();
            let wait = config.retry_period + (config.retry_period as f64 * config.jitter_factor.max(0.0)) as Nanos;
            let tail_from = limit.saturating_sub(wait.max(config.renew_deadline) * 3 / 2);
            let mut cursor = 0;
            loop {
                if t0 >= tail_from {
                    let snap = (parts.elector.clone(), parts.lock.clone(), parts.link.clone());
                    lane.snaps.push((lane.polls.len(), Box::new(snap)));
                }
                let poll = if lane.leader {
                    let server = &self.server;
                    let timeline = &mut timeline;
                    let state = &mut state;
                    let sent = &mut lane.sent;
                    step(&mut parts, true, t0, generation, |t1, op| {
                        let revision = state.revision;
                        if !server.quiet_renewal(lease, user, field_manager, op, state) {
                            return None;
                        }
                        let written = state.revision != revision;
                        if written {
                            timeline.versions.push((t1, state.view.clone()));
                        }
                        sent.push((t1, op.clone(), state.view.clone(), written));
                        Some(state.view.clone())
                    })
                } else {
                    step(&mut parts, false, t0, generation, |t1, _| timeline.at(t1, &mut cursor))
                };
                match poll {
                    Some(poll) if poll.t2 <= limit => {
                        lane.polls.push(poll);
                        (t0, generation) = (poll.next, poll.generation);
                    }
                    _ => break,
                }
            }
            lane.stop = t0;
        }
        Some(timeline)
    }

    /// The commit (pass 2): each lane's kept requests through the real objects (or its copy
    /// from the plan put in their place), the leader's renewals through the server, the
    /// counters, the next timers.
    fn commit(&mut self, lanes: &mut [Lane], timers: &[(usize, u64)], timeline: Timeline, lease: crate::api::LeaseRef) {
        let old: Vec<u64> = lanes.iter().filter(|l| !l.polls.is_empty()).map(|l| l.timer.1).collect();
        self.queue.remove_seqs(&old);
        let seqs: u64 = lanes.iter().flat_map(|l| &l.polls).map(Poll::seqs).sum();
        self.queue.reserve_seqs(seqs);
        let requests: u64 = lanes.iter().map(|l| l.polls.len() as u64).sum();
        let mut last = 0;
        let mut writes = Vec::new();
        for lane in lanes.iter_mut() {
            let Some(&end) = lane.polls.last() else { continue };
            let node = lane.node;
            let kept = lane.polls.len();
            let World { procs, net, server, obs, .. } = self;
            let p = &mut procs[node];
            let Some(Elector::Loop(elector)) = p.elector.as_mut() else { unreachable!("planned as a loop elector") };
            let (link, availability) = net.link_and_availability(node);
            match lane.snaps.iter_mut().find(|(k, _)| *k == kept) {
                Some((_, snap)) => {
                    let (e, l, k) = &mut **snap;
                    std::mem::swap(elector, e);
                    std::mem::swap(&mut p.lock, l);
                    std::mem::swap(link, k);
                }
                None => {
                    let mut parts = Parts { elector, lock: &mut p.lock, link, clock: &p.clock, availability };
                    let mut cursor = 0;
                    for (k, planned) in lane.polls.iter().enumerate() {
                        let poll = if lane.leader {
                            step(
                                &mut parts,
                                true,
                                planned.t0,
                                generation_before(&lane.polls, k, lane.timer.2),
                                |_, _| Some(lane.sent[k].2.clone()),
                            )
                        } else {
                            let t0 = planned.t0;
                            step(&mut parts, false, t0, generation_before(&lane.polls, k, lane.timer.2), |t1, _| {
                                timeline.at(t1, &mut cursor)
                            })
                        };
                        let poll = poll.expect("the plan found this request quiet");
                        debug_assert_eq!((poll.t1, poll.t2, poll.next), (planned.t1, planned.t2, planned.next));
                    }
                }
            }
            let verb = if lane.leader { Verb::Update } else { Verb::Get };
            for _ in 0..kept {
                obs.node_metrics[node].requests_sent.add(verb);
                obs.count_request(verb, 200);
            }
            if lane.leader {
                let (user, field_manager) = (p.user, p.field_manager);
                for (k, (t1, op, view, written)) in lane.sent.iter().take(kept).enumerate() {
                    let mut answer = Err(0);
                    let revision = server.resource_version();
                    let served = server.lease_request_into(*t1, lease, user, field_manager, op, &mut answer);
                    debug_assert!(served.is_ok() && answer.as_ref() == Ok(view));
                    debug_assert_eq!(server.resource_version() != revision, *written);
                    if *written {
                        writes.push(*t1);
                    }
                    // What the renewal's answer does (`Carrier::carry_out`, `Note::RenewedLease`).
                    let t2 = lane.polls[k].t2;
                    let link = net.link(node);
                    obs.leader_recovered(node, !link.is_cut(Direction::Up, t2) && !link.is_cut(Direction::Down, t2));
                }
            }
            p.set_reading(end.t2, end.mono2);
            let seq = timers.iter().find(|&&(n, _)| n == node).expect("a timer per lane that moved").1;
            let kind = if lane.leader { TimerKind::NextRound } else { TimerKind::Retry };
            let event =
                Event::Timer { node: node as u32, incarnation: p.incarnation, generation: end.generation, kind };
            self.queue.schedule_reserved(end.next, seq, event);
            last = last.max(end.t2);
        }
        // What `answer_lease` does after each write: the observer hears of it (a renewal in a
        // stretch changes neither holder nor transitions, so its order among the lanes' other
        // counts does not matter).
        for t1 in writes {
            self.lease_written(t1, lease);
        }
        self.net.take_ids(requests);
        self.events_processed += 3 * requests;
        self.quiet_stepped += 3 * requests;
        self.queue.advance_now(last);
    }
}

/// The generation of the timer that starts request `k` of `polls` (the lane's waiting timer's
/// for the first).
fn generation_before(polls: &[Poll], k: usize, first: Generation) -> Generation {
    if k == 0 { first } else { polls[k - 1].generation }
}

/// Where a stretch ends: the latest moment before every lane's first unplanned request at
/// which no lane has a request in flight. Drops each lane's requests after it; returns it and
/// the time of the last event kept (`None` if no request is kept).
fn cut(lanes: &mut [Lane], limit: Nanos) -> Option<(Nanos, Nanos)> {
    let mut x = lanes.iter().map(|l| l.stop).min()?.checked_sub(1)?.min(limit);
    loop {
        let mut moved = false;
        for lane in lanes.iter() {
            if let Some(p) = lane.polls.iter().find(|p| p.t0 <= x && x < p.t2) {
                x = p.t0.checked_sub(1)?;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    let mut last = None;
    for lane in lanes.iter_mut() {
        lane.polls.retain(|p| p.t2 <= x);
        if let Some(p) = lane.polls.last() {
            last = last.max(Some(p.t2));
        }
    }
    Some((x, last?))
}
