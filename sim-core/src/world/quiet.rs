//! Quiet stretches: stepping over renewal periods in which nothing but the cycle happens.
//!
//! Most of an election run is quiet: the leader renews at the start of each round, every
//! candidate polls the Lease and is told it is held, and nothing else is due. In a small world
//! (at most [`MAX_NODES`] nodes, one Lease, no trace) whose running nodes all run client-go's
//! loop (`elector::loops`) and wait between two requests — a node paused then too, its timer
//! queued or put aside: its lane starts with the pause ([`Window::earlier`]), and its resume,
//! queued before, is carried out on the way; a paused node that does not wait so takes no step
//! before its resume (a queued event, so past the horizon below), and its own events due in
//! the stretch are put aside as `World::handle` would — the loop hands such a stretch to
//! [`World::try_quiet_stretch`], which carries it out without the event queue, the message slab
//! or the elector's output routing, request by request, in two passes. A stretch that ends only
//! because its plan looks no further ahead leaves every node waiting, and the next starts there.
//!
//! 1. **Plan** (nothing of the world moves): each node's requests from its waiting timer on,
//!    the leader's first (their arrivals are the Lease's versions), then each candidate's, each
//!    Get answered with the version that arrived before it. A request is one closed-form step:
//!    the clock's readings, the link's two draws, the elector's part (`LoopElector::quiet_*`:
//!    what `on_timer` and `on_result` do on the quiet path, with the loop's own validity and
//!    jitter functions), the leader's Update built by its lock and judged by
//!    `ApiServer::quiet_renewal` (would `typed_update` serve it as a plain renewal?). A node's
//!    plan ends at the first request that is not quiet — the elector would do anything else,
//!    a message would be lost, held or late for its timeout, the server is down or slow — or
//!    that would end after the horizon (the first queued event that is not one of the nodes'
//!    waiting timers, or the run's end). Before each of its last requests the plan keeps what
//!    it moved: the elector's state and the streams drawn from. The agenda's pauses of the
//!    stretch's nodes before the horizon (timeline faults or a random process's occurrences,
//!    their target a node or the holder) are carried out on the way ([`Window`]): a paused
//!    node has no request in flight at the pause, and its timer due in it fires at the resume;
//!    a pause of a node paused then is the no-op `World::apply_fault` makes it.
//!    A plan looks at most [`LOOKAHEAD`] rounds ahead (what it planned past a node whose steps
//!    stopped being quiet is thrown away), and no lane is planned past an earlier lane's stop.
//! 2. **Cut**: the stretch ends at the latest moment before every node's first unplanned
//!    request at which no node has a request in flight; only whole requests up to it are kept.
//!    Every sequence number the skipped events would have taken is counted, and each node's
//!    next timer gets the one it would have had (those of the events before it, in time
//!    order). No stretch when two events of different nodes fall on the same nanosecond where
//!    their order would matter, or when it would pass the run's event budget.
//! 3. **Commit**: each node's elector state and streams as the plan left them at the cut, its
//!    lock's last answer, the Lease as the kept renewals leave it (`ApiServer::quiet_commit`),
//!    the observer's calls for the first write and the first renewal that found the link
//!    whole (every later one would find the observer as that one left it), the counters, the
//!    next timers; the pauses the cut passed in time order, each as `World::handle` carries it
//!    out (its resume queued under the sequence number after those of every event before it),
//!    each resume it passed as `World::resume` does (after the no-op pauses inside its pause),
//!    the renewals' notes between them, and the timer of a node still paused put aside if it
//!    fell due before the stretch's end.
//!
//! Every output is the same byte for byte as when each event is handled alone: the corpus,
//! the shipped scenarios and a property test compare runs with and without stretches
//! (`WorldSpec::skip_quiet`, the CLI's `--no-skip`). Message ids are counted, not assigned
//! (none is in flight at either end of a stretch); message slots are not used.

use super::event::Event;
use super::process::ProcState;
use super::{SpanKind, Turn, World, faults};
use crate::api::{ApiServer, LeaseOp, LeaseView, MicroTime, QuietLease, UserId, Verb};
use crate::clock::{NodeClock, Reading};
use crate::elector::loops::{QuietBase, QuietRead, QuietState};
use crate::elector::{Elector, Generation, LockOp, Now, Record, TimerKind};
use crate::lock::record_of;
use crate::model::{FaultKind, RandomFaultKind, Target};
use crate::net::{Delivery, Direction, Streams};
use crate::rng::ComponentRng;
use crate::time::Nanos;

/// Worlds of more nodes never take stretches: each attempt looks at every node and every
/// queued event.
pub(super) const MAX_NODES: usize = 16;

/// The sequence number of a lane's timer put aside before the stretch (it has none).
const ASIDE: u64 = u64::MAX - 1;

/// The most rounds (retry periods) a stretch's plan looks ahead.
const LOOKAHEAD: u64 = 128;

/// Room made in a new world's plan buffers (requests a lane, the Lease's versions): a flap
/// run's stretches are ~30 requests a lane. A world is built for each run of a sweep, and
/// growing its buffers from nothing again each time cost 1 % of the flap sweep.
const PLANNED_REQUESTS: usize = 64;

/// One whole request of one node in a stretch: the timer that started it, its arrival at the
/// server, its answer's arrival, and the timer its answer armed. What follows from its place
/// in its lane is not kept (40 bytes, written once per request): the timer's generation (the
/// lane's plus one per request), the sequence numbers before it (`Lane::seqs` each), the
/// monotonic reading at `t2` (read again for the last one kept).
#[derive(Clone, Copy, Debug)]
struct Poll {
    t0: Nanos,
    t1: Nanos,
    t2: Nanos,
    next: Nanos,
    /// The Lease's version it read or wrote (see [`Timeline::view`]), and whether it wrote one.
    version: u32,
    written: bool,
    /// Its timer fell due while its node was paused: put aside then, it fired at the resume
    /// (`t0`, see [`Window`]).
    deferred: bool,
}

impl Poll {
    /// Sequence numbers its events take before true time `t` (strictly); `timeout`: whether
    /// the request reserved one for its timeout (its lane's [`Lane::timeout`]).
    fn seqs_before(&self, t: Nanos, timeout: bool) -> u64 {
        (self.t0 < t) as u64 * (1 + timeout as u64) + (self.t1 < t) as u64 + (self.t2 < t) as u64
    }
}

/// What a plan's node had before its request `k` that the stretch moves: its elector's state,
/// its link's streams (up, down: `Link::positions`) and a candidate's elector's stream.
struct Snap {
    k: usize,
    state: QuietState,
    link: ((u64, u8), (u64, u8)),
    rng: Option<(u64, u8)>,
}

/// A pause of a lane's node that a stretch carries out on its way: an event of the agenda (a
/// timeline fault or a random process's occurrence) before the horizon, whose target is a node
/// of the stretch named without a draw (a node, or the holder). From `at` to `until` the node
/// takes no step: its lane has no request in flight at `at`, and a timer of it due in the pause
/// is put aside and fires at `until`, when its resume hands it back (`World::resume`).
#[derive(Clone, Copy, Debug)]
struct Window {
    lane: usize,
    at: Nanos,
    until: Nanos,
    /// The agenda's entry: its sequence number and event.
    seq: u64,
    event: Event,
    /// Set once the stretch is cut (`x`): the cut passed its resume and its lane had a timer
    /// put aside in it, which the resume queued again and which started the lane's first
    /// request after it.
    resumed: bool,
    /// A pause of a node already paused by an earlier window: `World::apply_fault` returns at
    /// once (its parameters drawn all the same), so it queues no resume and moves no lane
    /// (`until` is `at`). In the flap sweep about one random pause in eight falls inside the
    /// one before it, and ended a stretch before it was carried out.
    noop: bool,
    /// A pause begun before the stretch (`at` is the stretch's start, not the pause's): only
    /// its resume, queued then under `seq` (`event`), falls in the stretch. In the flap sweep
    /// 762 stretches start so (their resume ended each of them before it was carried out).
    earlier: bool,
}

/// A stretch's buffers, kept from one attempt to the next (a flap run makes ~50 attempts).
#[derive(Default)]
pub(super) struct Scratch {
    lanes: Vec<Lane>,
    timeline: Timeline,
    /// The queued events of paused processes without a lane before the horizon (time, sequence
    /// number, node, event): `handle` would put each aside until its process resumes, and the
    /// stretch does.
    aside: Vec<(Nanos, u64, usize, Event)>,
    /// The sequence numbers the commit takes out of the queue.
    removed: Vec<u64>,
    /// The pauses the stretch may carry out, in time order, and the copies of the random
    /// processes' streams their parameters were drawn on.
    windows: Vec<Window>,
    previews: Vec<(u32, ComponentRng)>,
}

/// A node of a stretch.
struct Lane {
    node: usize,
    leader: bool,
    /// Its waiting timer: (time, sequence number, generation); [`ASIDE`] for the number of
    /// one put aside in a pause begun before the stretch (`timer_aside`).
    timer: (Nanos, u64, Generation),
    /// Its node is paused where the stretch starts, until then (see [`Window::earlier`]).
    paused_until: Option<Nanos>,
    /// Its waiting timer fell due in that pause and was put aside (`Process::deferred`).
    timer_aside: bool,
    /// Whether its requests reserve a sequence number for their timeout (the same for each:
    /// a leader's renewals always, a candidate's Gets when the client has a timeout).
    timeout: bool,
    polls: Vec<Poll>,
    /// When its first request not planned starts (a step not quiet, or past the horizon).
    stop: Nanos,
    /// What the plan moved, as it stood before each of the last few requests before the
    /// horizon: the commit takes it where the stretch ends.
    snaps: Vec<Snap>,
    /// The sequence number of its next timer, when it moved (set by `stretch`).
    next_seq: u64,
    /// Its plan's copies of the streams it drew from (the link's, a candidate's elector's), as
    /// the plan left them: the commit takes their buffers where they still hold the blocks of
    /// the snap it puts in place. Boxed: three generators (~580 bytes) would be copied at each
    /// swap that puts the leader's lane first.
    ahead: Box<(Streams, Option<ComponentRng>)>,
}

impl Lane {
    /// The sequence numbers each of its requests takes.
    fn seqs(&self) -> u64 {
        3 + self.timeout as u64
    }

    /// The sequence numbers its requests' events take before true time `at` (strictly);
    /// `None` if `ties` and one of them falls at `at` (its order with another event there would
    /// be the queue's).
    fn seqs_before(&self, at: Nanos, ties: bool) -> Option<u64> {
        // A lane's requests follow one another (each starts at or after the answer before it):
        // those answered before `at` count whole, and the search stops at the first that
        // starts after it.
        let m = answered(&self.polls, |p| p.t2 < at);
        let mut before = m as u64 * self.seqs();
        for p in self.polls[m..].iter().take_while(|p| p.t0 <= at) {
            if ties && (p.t0 == at || p.t1 == at || p.t2 == at) {
                return None;
            }
            before += p.seqs_before(at, self.timeout);
        }
        Some(before)
    }

    /// The kind of its waiting timer: a leader's next round, a candidate's retry.
    fn timer_kind(&self) -> TimerKind {
        timer_kind(self.leader)
    }

    /// Its waiting timer's event, of generation `generation`.
    fn timer_event(&self, incarnation: u32, generation: Generation) -> Event {
        Event::Timer { node: self.node as u32, incarnation, generation, kind: self.timer_kind() }
    }
}

/// The waiting timer of a node of the quiet cycle: a leader's next round, a candidate's retry.
fn timer_kind(leader: bool) -> TimerKind {
    if leader { TimerKind::NextRound } else { TimerKind::Retry }
}

/// Both readings of `clock` at `r` (what `Process::now` gives at `r.t`).
#[inline(always)]
fn now_at(clock: &NodeClock, r: Reading) -> Now {
    Now { mono: r.mono, wall: clock.wall_from_monotonic(r.t, r.mono) }
}

/// The Lease's versions in a stretch: as it was, then after each renewal that wrote it.
#[derive(Default)]
struct Timeline {
    /// `None` only before the first [`Timeline::reset`].
    start: Option<QuietLease>,
    /// Each write: its arrival, and what it left (see [`Version`]).
    versions: Vec<Version>,
    /// The Lease after each write that changed more than renewTime and resourceVersion (the
    /// first renewal through `quiet_renewal`, usually the stretch's only one); a later write
    /// of the renewTime alone is stored as the fields it changed.
    bases: Vec<LeaseView>,
    /// The start and each base (as [`QuietRead::base`] numbers them) as a candidate's lock reads
    /// it, and its raw record without and with `strategy` and `preferredHolder` (see
    /// `Record::raw`): computed once a base. A version's own differ in the renewTime alone
    /// ([`Timeline::record`]), so they are not stored for each renewal, which the leader's
    /// plan would copy and write at every request.
    records: Vec<QuietBase>,
}

/// A write in a stretch. Its Lease is its read's base (0: the start, `b`: `bases[b - 1]`) with
/// its own resourceVersion and renewTime: copying the whole Lease for each renewal cost a sixth
/// of the plan (its fields had just been written one by one, and the copy's wide loads of them
/// waited for those stores to reach the cache).
#[derive(Clone, Copy)]
struct Version {
    at: Nanos,
    resource_version: u64,
    read: QuietRead,
}

impl Timeline {
    /// Starts again from `start`, keeping the buffers.
    fn reset(&mut self, start: QuietLease) {
        self.versions.clear();
        self.bases.clear();
        self.records.clear();
        self.versions.reserve(PLANNED_REQUESTS);
        self.records.push(records_of(&start.view));
        self.start = Some(start);
    }

    fn start(&self) -> &QuietLease {
        self.start.as_ref().expect("reset before use")
    }

    /// A write arriving at `at` that left `view`; `renewal_only`: it changed the renewTime and
    /// resourceVersion of the version before it and nothing else.
    #[inline]
    fn push(&mut self, at: Nanos, view: &LeaseView, renewal_only: bool) {
        if !renewal_only {
            self.bases.push(view.clone());
            self.records.push(records_of(view));
        }
        let read = QuietRead::new(self.bases.len() as u32, view.spec.renew_time.map(MicroTime::unix_micros));
        self.versions.push(Version { at, resource_version: view.resource_version, read });
        let k = self.versions.len() as u32;
        debug_assert_eq!(self.record(k), records_of(view), "a renewal changes the renewTime alone");
        debug_assert!(self.view(k) == *view, "the Lease as it was written");
    }

    /// Version `k`: the start, or the one the `k`-th write left.
    fn view(&self, k: u32) -> LeaseView {
        let Some(version) = k.checked_sub(1).map(|i| self.versions[i as usize]) else {
            return self.start().view.clone();
        };
        let mut view = match version.read.base() {
            0 => self.start().view.clone(),
            b => self.bases[b as usize - 1].clone(),
        };
        view.resource_version = version.resource_version;
        view.spec.renew_time = version.read.renew_time_micros().map(MicroTime::from_unix_micros);
        view
    }

    /// Version `k` as a candidate reads it: its base, with its own renewTime (a base's own
    /// write included, whose renewTime is the base's).
    #[inline]
    fn read(&self, k: u32) -> QuietRead {
        match k.checked_sub(1) {
            Some(i) => self.versions[i as usize].read,
            None => QuietRead::new(0, self.records[0].0.renew_time_micros),
        }
    }

    /// The record and raw records version `k` reads as (debug builds check each version).
    fn record(&self, k: u32) -> QuietBase {
        let read = self.read(k);
        (read.record(&self.records), [read.raw(&self.records, false), read.raw(&self.records, true)])
    }

    /// The version a Get arriving at `t` reads; `None` when a renewal arrives at the same
    /// nanosecond (their order would be the queue's). `cursor`: the reader's place, moved
    /// forward (its Gets arrive later and later).
    #[inline]
    fn at(&self, t: Nanos, cursor: &mut usize) -> Option<u32> {
        let mut k = *cursor;
        while self.versions.get(k).is_some_and(|v| v.at < t) {
            k += 1;
        }
        *cursor = k;
        if self.versions.get(k).is_some_and(|v| v.at == t) {
            return None;
        }
        Some(k as u32)
    }
}

/// A version as a Get's answer is read (`LeaseLock::response`), and its raw records.
fn records_of(view: &LeaseView) -> QuietBase {
    let record = record_of(&view.spec);
    (record, [record.raw(false), record.raw(true)])
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

    /// Steps over the quiet stretch that starts now (after an answer was handled), if there is
    /// one ending no later than `end` and within `max_events`; see the module's text. Returns
    /// the time of the last event stepped over, and whether the stretch ended only because its
    /// plan looks no further ahead ([`LOOKAHEAD`]): then every node is waiting, and another
    /// stretch may start where it ended.
    pub(super) fn try_quiet_stretch(&mut self, end: Nanos, max_events: u64) -> Option<(Nanos, bool)> {
        let mut scratch = self.quiet_scratch.take().unwrap_or_default();
        let last = self.quiet_lanes(&mut scratch.lanes).and_then(|n| self.stretch(&mut scratch, n, end, max_events));
        self.quiet_scratch = Some(scratch);
        last
    }

    #[inline(never)]
    fn stretch(&mut self, scratch: &mut Scratch, n: usize, end: Nanos, max_events: u64) -> Option<(Nanos, bool)> {
        let Scratch { lanes, timeline, aside, removed, windows, previews } = scratch;
        let lanes = &mut lanes[..n];
        // The first queued event that is neither a lane's waiting timer, nor the resume of a
        // lane paused now (`Window::earlier`), nor one a paused process without a lane would
        // put aside (its resume is queued, so the horizon comes before it), nor the agenda's
        // next event (looked at below).
        let agenda_next = self.agenda.last().map(|&(t, seq, _)| (t, seq));
        let mut horizon = Nanos::MAX;
        aside.clear();
        // The queued resume of each lane paused where the stretch starts.
        let mut resumes = [u64::MAX; MAX_NODES];
        for (t, seq, event) in self.queue.entries() {
            let lane_timer = match *event {
                Event::Timer { node, incarnation, generation, kind } => lanes.iter_mut().find(|l| {
                    l.node == node as usize
                        && incarnation == self.procs[l.node].incarnation
                        && kind == l.timer_kind()
                        && generation == l.timer.2
                        && l.timer.1 == u64::MAX
                }),
                _ => None,
            };
            if let Some(lane) = lane_timer {
                lane.timer = (t, seq, lane.timer.2);
                continue;
            }
            let paused_lane =
                |node: u32| lanes.iter().position(|l| l.node == node as usize && l.paused_until.is_some());
            match (self.turn(event), *event) {
                (_, Event::Resume { node, incarnation }) => match paused_lane(node) {
                    Some(i)
                        if resumes[i] == u64::MAX
                            && lanes[i].paused_until == Some(t)
                            && self.procs[node as usize].incarnation == incarnation =>
                    {
                        resumes[i] = seq
                    }
                    _ => horizon = horizon.min(t),
                },
                // A lane's event put aside would be queued again by its resume: not stepped over.
                (Some((node, Turn::Aside)), _) if paused_lane(node as u32).is_none() => {
                    aside.push((t, seq, node, *event))
                }
                _ if agenda_next == Some((t, seq)) => {}
                _ => horizon = horizon.min(t),
            }
        }
        if lanes.iter().any(|l| l.timer.1 == u64::MAX) {
            return None;
        }
        // A plan looks at most `LOOKAHEAD` rounds ahead: what it planned past a node whose
        // steps stopped being quiet is thrown away, and with pauses carried out on the way the
        // horizon may be the run's end.
        let rounds = lanes.iter().filter_map(|l| match &self.procs[l.node].elector {
            Some(Elector::Loop(elector)) => Some(elector.config().retry_period),
            _ => None,
        });
        let first = lanes.iter().map(|l| l.timer.0).min().unwrap_or(0);
        let reach = end.min(first.saturating_add(rounds.min().unwrap_or(0).saturating_mul(LOOKAHEAD)));
        // The agenda's pauses of the stretch's nodes are carried out on the way (`Window`); the
        // horizon is its first event that is not one.
        windows.clear();
        previews.clear();
        for (i, lane) in lanes.iter().enumerate() {
            let Some(until) = lane.paused_until else { continue };
            if resumes[i] == u64::MAX {
                return None;
            }
            let node = lane.node as u32;
            let event = Event::Resume { node, incarnation: self.procs[lane.node].incarnation };
            let at = self.queue.now();
            windows.push(Window {
                lane: i,
                at,
                until,
                seq: resumes[i],
                event,
                resumed: false,
                noop: false,
                earlier: true,
            });
        }
        for &(at, seq, event) in self.agenda.iter().rev() {
            if at >= horizon || at > reach {
                break;
            }
            match self.quiet_window(lanes, windows, previews, at, seq, event) {
                Some(window) => windows.push(window),
                None => {
                    horizon = at;
                    break;
                }
            }
        }
        let limit = reach.min(horizon.saturating_sub(1));
        if lanes.iter().all(|l| l.timer.0 > limit) {
            return None;
        }
        let lease = self.procs[lanes[0].node].lease;
        let mut readers = [UserId(0); MAX_NODES];
        let mut n = 0;
        for lane in lanes.iter().filter(|l| !l.leader) {
            (readers[n], n) = (self.procs[lane.node].user, n + 1);
        }
        let start = self.server.quiet_lease(lease, &readers[..n])?;
        // Every count a stretch moves must already have its line (their order is first use).
        if n > 0 && !self.obs.counts_request(Verb::Get, 200)
            || lanes.iter().any(|l| l.leader) && !self.obs.counts_request(Verb::Update, 200)
        {
            return None;
        }
        self.plan(lanes, limit, windows, start.clone(), timeline)?;
        // Whether every lane's plan went on to the look-ahead's end.
        let ahead = reach < end && reach < horizon.saturating_sub(1) && lanes.iter().all(|l| l.stop > limit);
        let (mut x, mut last) = cut(lanes, limit)?;
        // The plan keeps what it moved only for its last requests before `limit`; a stretch cut
        // much earlier (a node whose steps stopped being quiet) is planned again up to its cut.
        if lanes.iter().any(|l| !l.polls.is_empty() && !l.snaps.iter().any(|s| s.k == l.polls.len())) {
            for lane in lanes.iter_mut() {
                lane.polls.clear();
                lane.snaps.clear();
            }
            self.plan(lanes, x, windows, start, timeline)?;
            (x, last) = cut(lanes, x)?;
            if lanes.iter().any(|l| !l.polls.is_empty() && !l.snaps.iter().any(|s| s.k == l.polls.len())) {
                return None;
            }
        }
        // The pauses the cut passed are carried out, and the resumes it passed too. No two of
        // their instants may meet, nor a lane's event meet one (their order would be the
        // queue's) but the paused lane's timer fired at its resume (due in the pause or at the
        // resume's instant: put aside, and queued again by the resume), which comes after it.
        windows.retain(|w| w.at <= x);
        for w in windows.iter_mut() {
            let polls = &lanes[w.lane].polls;
            let first_after = polls.get(polls.partition_point(|p| p.t0 < w.until));
            w.resumed = w.resume_passed(x) && first_after.is_some_and(|p| p.deferred && p.t0 == w.until);
        }
        let instants =
            |w: &Window| [(!w.earlier).then_some(w.at), w.resume_passed(x).then_some(w.until)].into_iter().flatten();
        let all = || windows.iter().flat_map(instants);
        if all().enumerate().any(|(k, t)| all().skip(k + 1).any(|u| u == t)) {
            return None;
        }
        for w in windows.iter() {
            for (i, lane) in lanes.iter().enumerate() {
                if !w.earlier {
                    lane.seqs_before(w.at, true)?;
                }
                if w.resume_passed(x) {
                    lane.seqs_before(w.until, i != w.lane)?;
                }
            }
            last = last.max(w.last_event(x));
        }
        // The paused processes' events up to the last one kept are put aside, in the queue's
        // order; the rest stay queued. Putting one aside takes no sequence number and touches
        // nothing a lane reads, so its place among the lanes' events does not matter.
        aside.retain(|&(t, ..)| t <= last);
        aside.sort_unstable_by_key(|&(t, seq, ..)| (t, seq));
        let events: u64 = lanes.iter().map(|l| 3 * l.polls.len() as u64).sum();
        let others = aside.len() as u64 + 4 * windows.len() as u64;
        if events == 0 || self.events_processed + events + others > max_events {
            return None;
        }
        // Each lane's next timer takes the sequence number it would have had: the numbers of
        // every event before it (a pause's, which queues its resume; a resume's, which queues
        // the timer put aside). Two events at its instant would leave that to the queue.
        let base = self.queue.peek_seq();
        for i in 0..lanes.len() {
            let Some(at) = lanes[i].polls.last().map(|p| p.t2) else { continue };
            let mut before = pause_seqs_before(windows, at, Some(i));
            for (j, other) in lanes.iter().enumerate() {
                // Its own requests' events all come before this one (at its instant too, with
                // no latency): every number of theirs but the one it takes.
                before +=
                    if j == i { other.polls.len() as u64 * other.seqs() - 1 } else { other.seqs_before(at, true)? };
            }
            lanes[i].next_seq = base + before;
        }
        debug_assert!(x < horizon && x <= end);
        self.commit(lanes, timeline, aside, removed, windows, x);
        debug_assert_eq!(self.queue.now(), last);
        Some((last, ahead))
    }

    /// The agenda's event `(at, seq)` as a pause the stretch may carry out after `windows`: a
    /// timeline fault or a random process's occurrence (its parameters drawn on a copy of its
    /// stream in `previews`) pausing a lane's node, not paused then, named without a draw.
    fn quiet_window(
        &self,
        lanes: &[Lane],
        windows: &[Window],
        previews: &mut Vec<(u32, ComponentRng)>,
        at: Nanos,
        seq: u64,
        event: Event,
    ) -> Option<Window> {
        let (target, kind) = match event {
            Event::Fault { index } => {
                let fault = &self.spec.faults[index as usize];
                (&fault.target, fault.kind.clone())
            }
            Event::RandomFault { process } => {
                let rf = &self.spec.random_faults[process as usize];
                // (A random target is drawn before the parameters: not carried out here.)
                if !matches!(rf.kind, RandomFaultKind::Pause { .. })
                    || !matches!(rf.target, Target::Node(_) | Target::Holder)
                {
                    return None;
                }
                let k = match previews.iter().position(|&(p, _)| p == process) {
                    Some(k) => k,
                    None => {
                        previews.push((process, self.faults.stream(process as usize)));
                        previews.len() - 1
                    }
                };
                (&rf.target, faults::draw_with(&mut previews[k].1, rf))
            }
            _ => return None,
        };
        let FaultKind::Pause { duration } = kind else { return None };
        let node = match *target {
            Target::Node(node) => node,
            Target::Holder => self.holder_node()?,
            Target::Random | Target::NonHolder | Target::Server => return None,
        };
        let lane = lanes.iter().position(|l| l.node == node)?;
        // A pause of a node paused then changes nothing (`Window::noop`); one at the instant of
        // the resume is left to the queue's order.
        if let Some(w) = windows.iter().find(|w| w.lane == lane && !w.noop && w.until >= at) {
            return (w.until > at).then_some(Window {
                lane,
                at,
                until: at,
                seq,
                event,
                resumed: false,
                noop: true,
                earlier: false,
            });
        }
        let until = at.checked_add(duration).filter(|&until| until > at)?;
        Some(Window { lane, at, until, seq, event, resumed: false, noop: false, earlier: false })
    }

    /// The running nodes, each waiting between two requests of the quiet cycle, in the first
    /// lanes (how many is returned); `None` if any running node is not (or a second leader is).
    /// Lanes past them are kept, buffers and all, for later attempts (the number of lanes
    /// changes at each pause).
    #[inline(never)]
    fn quiet_lanes(&self, lanes: &mut Vec<Lane>) -> Option<usize> {
        let mut count = 0;
        for (node, p) in self.procs.iter().enumerate() {
            if p.state != ProcState::Running {
                continue;
            }
            let role = match p.elector.as_ref() {
                Some(Elector::Loop(elector)) => elector.quiet_role(),
                _ => None,
            };
            let busy = p.client.is_some()
                || p.elector_request.is_some()
                || !p.side_requests.is_empty()
                || !p.lock.typed_only();
            // A process paused now takes no step before its resume (queued): it has a lane
            // paused from the start ([`Window::earlier`]) when it waits between two requests,
            // its timer queued or put aside; else none, and its events are put aside
            // (`Scratch::aside`) up to its resume, which ends the stretch.
            let mut timer_aside = false;
            if let Some(until) = p.paused_until {
                let Some((leader, generation)) = role else { continue };
                let kind = timer_kind(leader);
                let own_timer = Event::Timer { node: node as u32, incarnation: p.incarnation, generation, kind };
                if until <= self.queue.now() || busy || !(p.deferred.is_empty() || p.deferred[..] == [own_timer]) {
                    continue;
                }
                timer_aside = !p.deferred.is_empty();
            }
            let (leader, generation) = role?;
            if busy || !p.deferred.is_empty() && !timer_aside {
                return None;
            }
            if count == lanes.len() {
                lanes.push(Lane {
                    node,
                    leader,
                    timer: (0, 0, 0),
                    paused_until: None,
                    timer_aside: false,
                    timeout: false,
                    polls: Vec::with_capacity(PLANNED_REQUESTS),
                    stop: 0,
                    snaps: Vec::with_capacity(8),
                    next_seq: 0,
                    ahead: Default::default(),
                });
            }
            let lane = &mut lanes[count];
            (lane.node, lane.leader, lane.timer, lane.stop) = (node, leader, (0, u64::MAX, generation), 0);
            (lane.paused_until, lane.timer_aside) = (p.paused_until, timer_aside);
            if timer_aside {
                // Put aside in the pause, it fires at the resume (the plan's window moves it).
                lane.timer = (self.queue.now(), ASIDE, generation);
            }
            lane.polls.clear();
            lane.snaps.clear();
            count += 1;
        }
        // A paused node that believes it leads while another does (it lost the Lease in its
        // pause) takes no lane: the others' stretch runs up to its resume.
        if lanes[..count].iter().filter(|l| l.leader).count() > 1 {
            let mut i = 0;
            while i < count {
                if lanes[i].leader && lanes[i].paused_until.is_some() {
                    count -= 1;
                    lanes.swap(i, count);
                } else {
                    i += 1;
                }
            }
        }
        let lanes = &mut lanes[..count];
        if lanes.is_empty() || lanes.iter().filter(|l| l.leader).count() > 1 {
            return None;
        }
        // The leader first: its renewals are the versions the others read. (The candidates'
        // order does not matter: each plans, and is committed, on its own.)
        if let Some(i) = lanes.iter().position(|l| l.leader).filter(|&i| i > 0) {
            lanes.swap(0, i);
        }
        Some(count)
    }

    /// The plan (pass 1): each lane's quiet requests from its timer on, on copies of what they
    /// move (the elector's observation and stream, the link's streams, the leader's lock, the
    /// Lease), through its node's pauses in `windows`.
    #[inline(never)]
    fn plan(
        &self,
        lanes: &mut [Lane],
        limit: Nanos,
        windows: &[Window],
        start: QuietLease,
        timeline: &mut Timeline,
    ) -> Option<()> {
        let mut state = start.clone();
        timeline.reset(start);
        let mut limit = limit;
        for (i, lane) in lanes.iter_mut().enumerate() {
            let pauses = windows.iter().filter(|w| w.lane == i && !w.noop).map(|w| (w.at, w.until));
            if lane.leader {
                self.plan_lane::<true>(lane, limit, pauses, &mut state, timeline)?;
            } else {
                self.plan_lane::<false>(lane, limit, pauses, &mut state, timeline)?;
            }
            // The stretch ends before this lane's first request not planned: no lane after it
            // need be planned past that.
            limit = limit.min(lane.stop.saturating_sub(1));
        }
        Some(())
    }

    /// One lane's plan: the leader's renewals (`LEADER`), through its lock and the server,
    /// which leave the Lease's versions in `state` and `timeline`, or a candidate's Gets, which
    /// read them. One loop for each role from this one body: with the role known, the other
    /// role's state is not carried through the loop.
    #[inline(never)]
    fn plan_lane<const LEADER: bool>(
        &self,
        lane: &mut Lane,
        limit: Nanos,
        pauses: impl Iterator<Item = (Nanos, Nanos)>,
        state: &mut QuietLease,
        timeline: &mut Timeline,
    ) -> Option<()> {
        debug_assert_eq!(lane.leader, LEADER);
        let availability = self.net.availability();
        let p = &self.procs[lane.node];
        let Some(Elector::Loop(elector)) = p.elector.as_ref() else { return None };
        let clock = &p.clock;
        // The plan draws on copies of the streams, kept in the lane for the commit.
        let (streams, rng) = &mut *lane.ahead;
        let mut link = self.net.link(lane.node).rehearsal(streams);
        let mut lock = if LEADER { Some(p.lock.clone()) } else { None };
        *rng = if LEADER { None } else { Some(elector.quiet_rng()) };
        let mut rng = rng.as_mut();
        let mut quiet = elector.quiet_state();
        // Pushed to in the loop as a local (its length and buffer in registers, not reloaded
        // through `lane` at each request), and put back at the end.
        let mut polls = std::mem::take(&mut lane.polls);
        let mut cursor = 0;
        lane.timeout = if LEADER { true } else { elector.quiet_poll().is_some() };
        let mut op = LeaseOp::Get;
        // The leader's last renewal through the lock and `quiet_renewal` that changed the
        // renewTime alone: the next ones alike skip both (`LeaseLock::renewal_like`,
        // `ApiServer::quiet_renewal_again`), the lock's copy told its answers only when it
        // must build an Update again (`lock_behind`).
        let mut renewing: Option<Record> = None;
        let mut lock_behind = false;
        // Copies are kept before the requests that may be the stretch's last: those starting
        // within the longest wait of the horizon. The cut moves back from the horizon only
        // past requests in flight there, a few latencies; a cut further back is planned again
        // (`stretch` finds no copy), which is rare (docs/performance.md, 2026-12-06).
        let config = elector.config();
        let wait = config.retry_period + (config.retry_period as f64 * config.jitter_factor.max(0.0)) as Nanos;
        let tail_from = limit.saturating_sub(wait);
        // The clock's reading where the next request starts: after the first, the timer's
        // arithmetic gives it (`NodeClock::timer_reading`).
        let mut start = clock.reading(lane.timer.0);
        // Its node's pauses (`Window`), in time order.
        let mut pauses = pauses.peekable();
        loop {
            // A timer due while its node is paused is put aside, and fires at the resume; one
            // due at the resume's very instant too (armed before the pause, it leaves the
            // queue first, and the resume queues it again).
            let mut deferred = false;
            while let Some(&(_, until)) = pauses.peek().filter(|&&(at, _)| at <= start.t) {
                pauses.next();
                if start.t <= until {
                    (start, deferred) = (clock.reading(until), true);
                }
            }
            let t0 = start.t;
            if t0 >= tail_from {
                let (link, rng) = (link.positions(), rng.as_deref().map(ComponentRng::position));
                lane.snaps.push(Snap { k: polls.len(), state: quiet, link, rng });
            }
            // A request that starts (or, below, arrives) after the horizon ends after it: no
            // need to plan it to know it is not kept.
            if t0 > limit {
                break;
            }
            // A candidate's wait for its next try, drawn before its request is planned: the draw
            // is its elector's stream's own (its place among the link's draws changes nothing),
            // and its float arithmetic then overlaps the request's rather than delaying the
            // timer that follows from it (0.960x the flap sweep's time, 21 pairs; drawn a
            // request further ahead, no better). Past a step not quiet the plan's copies of the
            // streams are not kept.
            let wait = match &mut rng {
                Some(rng) => elector.quiet_wait(rng),
                None => 0,
            };
            let now0 = now_at(clock, start);
            debug_assert_eq!(now0, p.now(t0));
            // The timer: the elector's request.
            let (candidate, timeout) = match &mut lock {
                Some(lock) => {
                    let Some((candidate, timeout)) = elector.quiet_renew(&quiet, now0) else { break };
                    let again = renewing.and_then(|previous| lock.renewal_like(&previous, &candidate));
                    if again.is_none() || cfg!(debug_assertions) {
                        if std::mem::take(&mut lock_behind) {
                            let _ = lock.response(Verb::Update, Ok(&state.view));
                        }
                        let sent = lock.write_typed(&LockOp::Update(candidate), &mut op);
                        debug_assert!(again.is_none() || sent == Ok(Verb::Update), "sent as the last was");
                        if sent != Ok(Verb::Update) {
                            break;
                        }
                    }
                    (Some((candidate, again)), timeout)
                }
                None => (None, elector.quiet_poll()),
            };
            // Its arrival at the server.
            let Delivery::Arrives(t1) = link.send(t0, Direction::Up) else { break };
            if t1 > limit || availability.outage_at(t1).is_some() || availability.extra_processing(t1) > 0 {
                break;
            }
            let (version, written) = match candidate {
                Some((candidate, again)) => {
                    let revision = state.revision;
                    match again {
                        Some(renew_time) => {
                            // Debug builds judge it the whole way too, on a copy.
                            let full = cfg!(debug_assertions).then(|| {
                                let mut full = state.clone();
                                let quiet = self.server.quiet_renewal(p.lease, p.user, p.field_manager, &op, &mut full);
                                (quiet.is_some(), full)
                            });
                            ApiServer::quiet_renewal_again(state, renew_time);
                            if let Some((quiet, full)) = full {
                                assert!(quiet && full.revision == state.revision, "judged alike");
                                assert_eq!(full.view.spec, state.view.spec, "the same Lease");
                            }
                        }
                        None => match self.server.quiet_renewal(p.lease, p.user, p.field_manager, &op, state) {
                            Some(renew_only) => renewing = renew_only.then_some(candidate),
                            None => break,
                        },
                    }
                    let written = state.revision != revision;
                    if written {
                        timeline.push(t1, &state.view, again.is_some());
                    }
                    (timeline.versions.len() as u32, written)
                }
                None => match timeline.at(t1, &mut cursor) {
                    Some(k) => (k, false),
                    None => break,
                },
            };
            // Its answer back at the node, not paused on the way.
            let Delivery::Arrives(t2) = link.send(t1, Direction::Down) else { break };
            if pauses.peek().is_some_and(|&(at, _)| at <= t2) {
                break;
            }
            let answered = clock.reading_after(start, t2 - t0);
            let now2 = now_at(clock, answered);
            debug_assert_eq!(now2, p.now(t2));
            // Late for its timeout, at the server or back (the timeout fires at the first
            // instant the monotonic clock reaches it, and that clock never goes back).
            if timeout.is_some_and(|after| now2.mono - now0.mono >= after as i64) {
                break;
            }
            let after = match (candidate, &mut lock, &rng) {
                (Some((candidate, _)), Some(_), _) => {
                    // The lock's copy hears this answer before its next Update is built.
                    lock_behind = true;
                    elector.quiet_renewed(&mut quiet, candidate, now2)
                }
                (_, _, Some(_)) => {
                    elector.quiet_polled(&mut quiet, wait, now0, &timeline.records, timeline.read(version), now2)
                }
                _ => unreachable!("a leader has its lock, a candidate its stream"),
            };
            let Some(after) = after else { break };
            if t2 > limit {
                break;
            }
            if timeout.is_some() != lane.timeout {
                break;
            }
            start = clock.timer_reading(answered, after);
            polls.push(Poll { t0, t1, t2, next: start.t, version, written, deferred });
        }
        (lane.polls, lane.stop) = (polls, start.t);
        Some(())
    }

    /// The commit (pass 2): what each lane's kept requests leave — the elector's state and the
    /// streams as the plan had them where the stretch ends, the lock's last answer, the Lease
    /// as the leader's renewals leave it — the observer's calls, the counters, the next timers.
    #[inline(never)]
    fn commit(
        &mut self,
        lanes: &[Lane],
        timeline: &Timeline,
        aside: &[(Nanos, u64, usize, Event)],
        removed: &mut Vec<u64>,
        windows: &[Window],
        x: Nanos,
    ) {
        let lease = self.procs[lanes[0].node].lease;
        // The last event the stretch handles: the last answer kept, a pause or a resume.
        let answers = lanes.iter().filter_map(|l| l.polls.last().map(|p| p.t2));
        let last = answers.chain(windows.iter().map(|w| w.last_event(x))).max().unwrap_or(0);
        removed.clear();
        for lane in lanes.iter().filter(|l| !l.polls.is_empty()) {
            if lane.timer_aside {
                // Its only event put aside (`quiet_lanes`), which its first request took.
                self.procs[lane.node].deferred.clear();
            } else {
                removed.push(lane.timer.1);
            }
        }
        removed.extend(aside.iter().map(|&(_, seq, ..)| seq));
        // The first pause begun in the stretch is the agenda's event that waits in the queue.
        removed.extend(windows.iter().find(|w| !w.earlier).map(|w| w.seq));
        // A lane still paused where the stretch ends: its next timer, if due in the pause and
        // within the stretch, is put aside as `handle` puts it aside (a later one waits in the
        // queue, and is put aside there).
        let mut put_aside = [false; MAX_NODES];
        for w in windows.iter().filter(|w| !w.noop && w.until > x) {
            let lane = &lanes[w.lane];
            if lane.timer_aside && lane.polls.is_empty() {
                continue;
            }
            let due = lane.polls.last().map_or(lane.timer.0, |p| p.next);
            if (w.at..w.until).contains(&due) && due <= last {
                if lane.polls.is_empty() {
                    removed.push(lane.timer.1);
                }
                let generation = lane.timer.2.wrapping_add(lane.polls.len() as Generation);
                let event = lane.timer_event(self.procs[lane.node].incarnation, generation);
                self.procs[lane.node].deferred.push(event);
                put_aside[w.lane] = true;
            }
        }
        self.queue.remove_seqs(removed);
        for &(_, _, node, event) in aside {
            self.procs[node].deferred.push(event);
        }
        // The pauses, in time order and in their places among the sequence numbers (each
        // queues its resume under the number after those of every event before it), as
        // `World::handle` carries them out; a resume the stretch passed as `World::resume`
        // carries it out (the timer put aside, if any, is its lane's request there). Between
        // two, the leader's renewals' notes (`Carrier::carry_out`, `Note::RenewedLease`): only
        // one made while the link was whole can move anything, and after it nothing more.
        let base = self.queue.peek_seq();
        let leader = lanes.iter().find(|l| l.leader);
        let mut renewals = leader.map_or(&[][..], |l| &l.polls[..]);
        removed.clear();
        // A resume the cut passed, carried out once the no-op pauses inside its pause are (the
        // node still paused for them): at its lane's next pause that is not one, or at the end.
        let mut pending_resumes = [None; MAX_NODES];
        for w in windows {
            if !w.noop
                && let Some(until) = pending_resumes[w.lane].take()
            {
                self.resumed_by_hand(lanes[w.lane].node, until);
            }
            if w.earlier {
                // Only its resume, queued before the stretch, is the stretch's.
                if w.resume_passed(x) {
                    removed.push(w.seq);
                    pending_resumes[w.lane] = Some(w.until);
                }
                continue;
            }
            let (told, rest) = renewals.split_at(renewals.partition_point(|p| p.t2 < w.at));
            self.renewals_told(leader, told);
            renewals = rest;
            let mut seq = base + pause_seqs_before(windows, w.at, None);
            for lane in lanes {
                seq += lane.seqs_before(w.at, false).expect("no tie asked about");
            }
            if !w.noop {
                self.queue.reserve_seqs(seq - self.queue.peek_seq());
            }
            let taken = self.agenda.pop().map(|(at, seq, _)| (at, seq));
            debug_assert_eq!(taken, Some((w.at, w.seq)), "the agenda's next event");
            let node = lanes[w.lane].node;
            debug_assert_eq!(self.procs[node].paused_until.is_some(), w.noop, "paused already, or not");
            self.fault_event(w.at, w.event);
            debug_assert!(w.noop || self.procs[node].paused_until == Some(w.until));
            if w.resume_passed(x) {
                // Its resume takes the number after those of every event before the pause; it
                // is taken out of the queue again (the stretch carries it out).
                removed.push(seq);
                pending_resumes[w.lane] = Some(w.until);
            }
        }
        for (lane, until) in pending_resumes.iter().enumerate().filter_map(|(i, u)| u.map(|u| (i, u))) {
            self.resumed_by_hand(lanes[lane].node, until);
        }
        self.renewals_told(leader, renewals);
        if windows.iter().any(|w| !w.earlier) {
            self.queue_agenda_next();
        }
        if !removed.is_empty() {
            self.queue.remove_seqs(removed);
        }
        let seqs: u64 = lanes.iter().map(|l| l.polls.len() as u64 * l.seqs()).sum();
        let resumed = windows.iter().filter(|w| w.resumed).count() as u64;
        let pauses = windows.iter().filter(|w| !w.noop && !w.earlier).count() as u64;
        let total = seqs + pauses + resumed;
        self.queue.reserve_seqs(base + total - self.queue.peek_seq());
        let requests: u64 = lanes.iter().map(|l| l.polls.len() as u64).sum();
        for (i, lane) in lanes.iter().enumerate() {
            let Some(&end) = lane.polls.last() else { continue };
            let node = lane.node;
            let World { procs, net, server, obs, .. } = self;
            let p = &mut procs[node];
            let Some(Elector::Loop(elector)) = p.elector.as_mut() else { unreachable!("planned as a loop elector") };
            let link = net.link_mut(node);
            let kept = lane.polls.len();
            // What the plan moved, as it stood where the stretch ends.
            let snap = lane.snaps.iter().find(|s| s.k == kept).expect("checked by `stretch`");
            elector.set_quiet_state(&snap.state, lane.leader, &timeline.records);
            let (streams, rng) = &*lane.ahead;
            link.seek_from(snap.link, streams);
            if let Some(position) = snap.rng {
                elector.seek_quiet_rng(position, rng.as_ref().expect("a candidate's plan keeps its stream"));
            }
            let verb = if lane.leader { Verb::Update } else { Verb::Get };
            obs.node_metrics[node].requests_sent.add_n(verb, kept as u64);
            obs.count_requests(verb, 200, kept as u64);
            let view = timeline.view(end.version);
            let _ = p.lock.response(verb, Ok(&view));
            // (A candidate writes nothing: its polls are not searched.)
            if lane.leader
                && let Some(last_write) = lane.polls.iter().rev().find(|q| q.written)
            {
                let written = lane.polls.iter().filter(|q| q.written).count() as u64;
                server.quiet_commit(lease, timeline.start().revision + written, &view, last_write.t1);
            }
            p.set_reading(end.t2, p.clock.monotonic(end.t2));
            if !put_aside[i] {
                let event = lane.timer_event(p.incarnation, lane.timer.2.wrapping_add(kept as Generation));
                self.queue.schedule_reserved(end.next, lane.next_seq, event);
            }
        }
        // What `answer_lease` does after each write: the observer hears of it. A renewal in a
        // stretch changes neither holder nor transitions, so its order among the lanes' other
        // counts does not matter, and with no watch and no election controller (`quiet_possible`)
        // every write after the first finds the observer as the first left it: only the first
        // is told.
        let first_write = lanes.iter().filter(|l| l.leader).flat_map(|l| &l.polls).find(|p| p.written);
        if let Some(poll) = first_write {
            debug_assert!(!self.watches.any() && self.cle.is_none());
            self.lease_written(poll.t1, lease);
        }
        self.net.take_ids(requests);
        // Every pause, every resume passed, every timer put aside (in a pause passed, or now;
        // one put aside before the stretch was counted then).
        let pauses = windows.iter().filter(|w| !w.earlier).count();
        let resumes = windows.iter().filter(|w| w.resume_passed(x)).count();
        let deferred = lanes.iter().flat_map(|l| &l.polls).filter(|p| p.deferred).count()
            - lanes.iter().filter(|l| l.timer_aside && !l.polls.is_empty()).count();
        let paused = pauses + resumes + deferred + put_aside.iter().filter(|&&a| a).count();
        let stepped = 3 * requests + aside.len() as u64 + paused as u64;
        self.events_processed += stepped;
        self.quiet_stepped += stepped;
        debug_assert!(
            self.queue.entries().all(|(t, ..)| t > last),
            "an event at or before the stretch's end was left queued: {:?} (last {last})",
            self.queue.entries().filter(|&(t, ..)| t <= last).map(|(t, s, e)| (t, s, *e)).collect::<Vec<_>>(),
        );
        self.queue.advance_now(last);
    }

    /// A resume at `until` a stretch passed, as `World::resume` carries it out but for its
    /// deferred events: the stretch already fired the timer it queued (its lane's request
    /// there), and a timer put aside in a later pause, if any, waits for that pause's resume.
    fn resumed_by_hand(&mut self, node: usize, until: Nanos) {
        self.procs[node].paused_until = None;
        self.obs.close_span(until, node, SpanKind::Paused);
    }

    /// The observer told of the leader's renewals in `polls` (answered between two pauses):
    /// only one made while the link was whole can move anything, and after it nothing more.
    fn renewals_told(&mut self, leader: Option<&Lane>, polls: &[Poll]) {
        let Some(lane) = leader else { return };
        let link = self.net.link(lane.node);
        let reachable = |p: &Poll| !link.is_cut(Direction::Up, p.t2) && !link.is_cut(Direction::Down, p.t2);
        if polls.iter().any(reachable) {
            self.obs.leader_recovered(lane.node, true);
        }
    }
}

/// The sequence numbers the pauses of `windows` (those the cut passed) take before `t`
/// (strictly): each queues its resume at its start (one begun before the stretch queued it
/// then), and a resume the cut passed queues the
/// timer put aside in the pause, if one was ([`Window::resumed`]). A resume at `t` comes
/// before the events there of `lane`'s request its timer starts (the others' events at a pause
/// or a resume are refused as ties).
fn pause_seqs_before(windows: &[Window], t: Nanos, lane: Option<usize>) -> u64 {
    let resumed_before = |w: &Window| w.resumed && (w.until < t || w.until == t && Some(w.lane) == lane);
    windows.iter().filter(|w| !w.noop).map(|w| (!w.earlier && w.at < t) as u64 + resumed_before(w) as u64).sum()
}

impl Window {
    /// Its last event the stretch handles: the resume, if the cut `x` passed it, else the pause.
    fn last_event(&self, x: Nanos) -> Nanos {
        if self.resume_passed(x) { self.until } else { self.at }
    }

    /// Whether it queued a resume the cut `x` passed (a no-op queued none).
    fn resume_passed(&self, x: Nanos) -> bool {
        !self.noop && self.until <= x
    }
}

/// Where a stretch ends: the latest moment before every lane's first unplanned request at
/// which no lane has a request in flight. Drops each lane's requests after it; returns it and
/// the time of the last event kept (`None` if no request is kept).
#[inline(never)]
fn cut(lanes: &mut [Lane], limit: Nanos) -> Option<(Nanos, Nanos)> {
    let mut x = lanes.iter().map(|l| l.stop).min()?.checked_sub(1)?.min(limit);
    loop {
        let mut moved = false;
        for lane in lanes.iter() {
            // The one request that may be in flight at `x`: the first answered after it.
            let m = answered(&lane.polls, |p| p.t2 <= x);
            if let Some(p) = lane.polls.get(m).filter(|p| p.t0 <= x) {
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
        let kept = answered(&lane.polls, |p| p.t2 <= x);
        lane.polls.truncate(kept);
        if let Some(p) = lane.polls.last() {
            last = last.max(Some(p.t2));
        }
    }
    Some((x, last?))
}

/// How many of a lane's requests, in time order, come before a moment (`before`: true of a
/// first run of them): `partition_point`, with the last two requests looked at first, where
/// most moments asked about lie (a stretch's cut, a lane's last answer: a step or two, where a
/// binary search took four or five, each a branch the processor could not foresee); a moment
/// further back (a pause's, in a long stretch) is searched for.
#[inline]
fn answered(polls: &[Poll], before: impl Fn(&Poll) -> bool) -> usize {
    let n = match polls.len() {
        0 => 0,
        len if before(&polls[len - 1]) => len,
        1 => 0,
        len if before(&polls[len - 2]) => len - 1,
        len => polls[..len - 2].partition_point(&before),
    };
    debug_assert_eq!(n, polls.partition_point(before));
    n
}
