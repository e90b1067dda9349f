//! Electors: the leader-election clients a node can run, as sans-IO state machines.
//!
//! An elector never touches the network, the clock or the API server. The node drives it with
//! inputs (start, a timer fired, a lock operation's result, stop) and the elector answers with
//! [`Output`]s (send this lock operation, arm this timer, I started/stopped leading). Every
//! duration it asks for is on the node's **local monotonic** clock; the world converts it to true
//! time through the node's clock, so drift applies to every wait, tick and deadline.
//!
//! - [`loops::LoopElector`]: client-go's `LeaderElector` (acquire loop with jittered waits,
//!   renew rounds with a RenewDeadline per round, the fast path, observedTime), parameterised
//!   by the expiry and write rules so the client-go-legacy and renew-time families share it.
//! - [`python::PythonElector`]: the official Python client's simpler loop.
//! - [`manager::ManagerElector`]: controller-runtime's manager around client-go's elector.
//! - [`fabric8::Fabric8Elector`], [`java::JavaElector`], [`csharp::CSharpElector`],
//!   [`nestjs::NestJsElector`]: the other libraries people run, each after its own source
//!   (docs/algorithms.md).
//! - [`kube_lease_manager::KubeLeaseManagerElector`], [`kube_coordinate::KubeCoordinateElector`],
//!   [`kubert::KubertElector`], [`kube_leader_election::KubeLeaderElectionElector`]: the Rust
//!   crates, likewise.

pub mod config;
pub mod csharp;
pub mod fabric8;
pub mod io;
pub mod java;
pub mod kube_coordinate;
pub mod kube_leader_election;
pub mod kube_lease_manager;
pub mod kubert;
pub mod library;
pub mod loops;
pub mod manager;
pub mod nestjs;
pub mod python;
pub mod record;

pub use config::{
    AfterLost, ClientGoVersion, ConfigError, ConfigKey, ElectorConfig, ExpiryRule, GRACEFUL_SHUTDOWN_TIMEOUT,
    JITTER_FACTOR, default_request_timeout_for,
};
pub use library::{AfterWorkEnds, Algorithm, Library, WorkEnd};
pub use record::{Fields, RawRecord, Record};

use crate::rng::ComponentRng;
use crate::sym::Sym;
use crate::time::{Nanos, UnixNanos};
use std::sync::Arc;

/// Both readings of a node's clock at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Now {
    pub mono: i64,
    pub wall: UnixNanos,
}

/// What an elector asks its lock to do. The lock (`crate::lock`) turns it into an API
/// request carrying the cached Lease, as client-go's `LeaseLock` does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LockOp {
    Get,
    Create(Record),
    /// PUT of the cached Lease with this spec; carries the cached resourceVersion.
    Update(Record),
    /// A write in a library's own wire shape (see [`WriteShape`]).
    Write(Record, WriteShape),
}

/// How a library other than client-go writes a Lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteShape {
    pub verb: WriteVerb,
    /// Fields written as null: absent from a PUT's spec; `null` (deleting them) in a patch.
    pub nulls: Fields,
    /// Fields left out: a PUT keeps the cached object's value; a patch leaves them unchanged.
    pub keep: Fields,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteVerb {
    /// Replace (PUT) of the cached Lease, carrying its resourceVersion.
    Put,
    /// Create (POST); nulled fields are left out of the new object.
    Post,
    /// JSON merge (or strategic, or server-side apply: for a Lease's scalar spec fields they
    /// merge alike) patch; `with_rv` carries the cached resourceVersion in the body's
    /// metadata, so the server checks it (409 on a mismatch).
    Patch { with_rv: bool },
    /// Server-side apply of a Lease with this spec (the lock's field manager; `force`; the
    /// cached resourceVersion when `with_rv`, a precondition). Fields in `nulls` or `keep` are
    /// left out of the configuration. `cached_metadata`: the configuration is the whole cached
    /// object, its labels and annotations included (kube-coordinate), not a spec alone.
    Apply { force: bool, with_rv: bool, cached_metadata: bool },
}

impl WriteShape {
    pub const PUT: WriteShape = WriteShape { verb: WriteVerb::Put, nulls: Fields::NONE, keep: Fields::NONE };
    pub const fn patch(with_rv: bool) -> WriteShape {
        WriteShape { verb: WriteVerb::Patch { with_rv }, nulls: Fields::NONE, keep: Fields::NONE }
    }
    pub const fn nulls(self, nulls: Fields) -> WriteShape {
        WriteShape { nulls, ..self }
    }
    pub const fn keep(self, keep: Fields) -> WriteShape {
        WriteShape { keep, ..self }
    }
}

impl LockOp {
    pub fn verb(&self) -> &'static str {
        match self {
            LockOp::Get => "get",
            LockOp::Create(_) => "create",
            LockOp::Update(_) => "update",
            LockOp::Write(_, shape) => match shape.verb {
                WriteVerb::Put => "update",
                WriteVerb::Post => "create",
                WriteVerb::Patch { .. } => "patch",
                WriteVerb::Apply { .. } => "apply",
            },
        }
    }
}

/// Why a lock operation failed, as far as an elector cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockError {
    NotFound,
    /// The lock code panicked (client-go v0.34.0–v0.34.1 writing labels into a Lease without
    /// any): the process crashes.
    Panic,
    /// 409 from an optimistic-lock conflict or AlreadyExists.
    Conflict,
    /// The request's timeout or context deadline passed first.
    Timeout,
    /// The context was already done: the request was never sent.
    ContextDone,
    /// Any other status code.
    Status(u16),
    /// The connection was refused or reset (a `refuse` partition): no answer.
    Refused,
    /// An error whose body is not a Status (the API server's plain-text 429).
    NotStatus(u16),
}

pub type LockResult = Result<Record, LockError>;

/// The generation an armed timer carries back: a re-armed or cancelled timer's older
/// generation no longer matches. (32 bits: a run's event budget stays far below 2^32.)
pub type Generation = u32;

/// The timers an elector arms. At most one of each kind is live; re-arming replaces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)] // in memory, its number (see `world::event::Event::word`)
pub enum TimerKind {
    /// The acquire loop's jittered wait.
    Retry,
    /// The renew round's next ticker tick.
    RoundTick,
    /// The renew round's RenewDeadline.
    RoundDeadline,
    /// The pause between two renew rounds.
    NextRound,
    /// controller-runtime: the runnables' drain after a graceful stop.
    Drain,
    /// Another library's one-off wait (a race delay, a handler's delay, a request back-off).
    Delay,
}

impl TimerKind {
    pub const COUNT: usize = 6;
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn name(self) -> &'static str {
        match self {
            TimerKind::Retry => "retry",
            TimerKind::RoundTick => "round-tick",
            TimerKind::RoundDeadline => "round-deadline",
            TimerKind::NextRound => "next-round",
            TimerKind::Drain => "drain",
            TimerKind::Delay => "delay",
        }
    }
}

/// Why the elector did what it did: the log lines of the real client, for traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Note {
    AttemptingToAcquire,
    AcquiredLease,
    FailedToAcquire,
    /// A Get showed another holder whose lease is still valid by this elector's rule.
    HeldByAnother,
    FastPathFailed,
    RenewedLease,
    FailedToRenew,
    Released,
    ReleaseFailed,
    /// v0.37's release got a 409 and tries again with a fresh Get.
    ReleaseConflictRetrying,
    /// Coordinated: the Lease names a preferred holder, so this holder stops renewing
    /// (`tryCoordinatedRenew`'s "end of term").
    EndOfTerm,
}

impl Note {
    pub fn name(self) -> &'static str {
        match self {
            Note::AttemptingToAcquire => "attempting-to-acquire",
            Note::AcquiredLease => "acquired",
            Note::FailedToAcquire => "failed-to-acquire",
            Note::HeldByAnother => "held-by-another",
            Note::FastPathFailed => "fast-path-failed",
            Note::RenewedLease => "renewed",
            Note::FailedToRenew => "failed-to-renew",
            Note::Released => "released",
            Note::ReleaseFailed => "release-failed",
            Note::ReleaseConflictRetrying => "release-conflict-retrying",
            Note::EndOfTerm => "end-of-term",
        }
    }
}

/// The Events client-go's elector records through its lock (`LeaseLock.RecordEvent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaderEvent {
    /// "<identity> became leader": in `acquire`, right after the successful try.
    BecameLeader,
    /// "<identity> stopped leading": when `renew` returns (v0.27+, deferred), or only when a
    /// renew round fails (v0.26).
    StoppedLeading,
}

impl LeaderEvent {
    pub fn text(self) -> &'static str {
        match self {
            LeaderEvent::BecameLeader => "became leader",
            LeaderEvent::StoppedLeading => "stopped leading",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Output {
    /// Send one lock operation. `timeout` is local monotonic time from now; `None` waits forever.
    Send {
        op: LockOp,
        timeout: Option<Nanos>,
    },
    /// Arm (or re-arm) a timer `after` local nanoseconds from now; `generation` must come back.
    Timer {
        kind: TimerKind,
        after: Nanos,
        generation: Generation,
    },
    /// Forget the request in flight: its context was cancelled. (The server may still apply
    /// it; the response, if any, is dropped.)
    Abandon,
    /// Send the request another task of the elector has ready ([`ElectorLoop::side_request`]),
    /// in flight beside the main one's: its answer comes back through
    /// [`ElectorLoop::on_side_result`] with `task`. (The C# client's renew tasks left running by
    /// a round's timeout; no other library has any.) The request is read from the elector, not
    /// carried here: a second `LockOp` in an `Output` would make every one 8 bytes larger.
    SendSide {
        task: u32,
    },
    /// The request in flight goes on as side task `task`'s: its answer comes back through
    /// [`ElectorLoop::on_side_result`], and the main channel is free for the next `Send`.
    Detach {
        task: u32,
    },
    /// Forget every side task's request (their context was cancelled).
    AbandonSides,
    StartedLeading,
    /// The leader context is cancelled: the leader's work (OnStartedLeading's goroutine) stops
    /// now, before release and OnStoppedLeading (a graceful stop cancels the parent context).
    LeaderContextDone,
    StoppedLeading,
    NewLeader(Sym),
    Note(Note),
    /// Record this Event (if the node has an event recorder).
    RecordEvent(LeaderEvent),
    /// An exception escaped `run()` (the Python client): no OnStoppedLeading; a leader's work
    /// thread keeps running until the process ends.
    Exception(&'static str),
    /// `Run` returned: the elector will do nothing more.
    Exited,
    /// The leader's work stops `after` (local time) from now, or when the process exits if that
    /// is sooner (controller-runtime's runnables draining after a graceful stop). The
    /// elector's own StoppedLeading then does not stop it.
    StopWork {
        after: Nanos,
    },
}

/// The outputs of an elector's inputs, in the order asked for. [`Note`]s are the real clients'
/// log lines, read only by a trace: they are kept when `notes` is set (the world sets it when
/// it traces), and `RenewedLease` always (the observer reads it). Without a trace, a follower's
/// two notes a poll were a sixth of its outputs' cost.
#[derive(Debug, Default)]
pub struct Outputs {
    list: Vec<Output>,
    notes: bool,
}

impl Outputs {
    pub fn new(notes: bool) -> Self {
        Outputs { list: Vec::new(), notes }
    }

    #[inline]
    pub fn push(&mut self, output: Output) {
        self.list.push(output);
    }

    #[inline]
    pub fn note(&mut self, note: Note) {
        if self.notes || note == Note::RenewedLease {
            self.list.push(Output::Note(note));
        }
    }

    pub fn clear(&mut self) {
        self.list.clear();
    }

    /// Drops the outputs from index `from` on that `drop` picks, keeping the others' order.
    pub fn drop_from(&mut self, from: usize, drop: impl Fn(&Output) -> bool) {
        let mut i = from;
        while i < self.list.len() {
            if drop(&self.list[i]) {
                self.list.remove(i);
            } else {
                i += 1;
            }
        }
    }
}

/// Where an elector's outputs go. [`Outputs`] keeps them in order for the world to carry out
/// after the input; the world's own sink for client-go's loop (`world::Direct`) carries the
/// common ones out as they are asked for (a timer armed, a typed request sent) and keeps the
/// rest, and every output after them, in order in an `Outputs`. Either way they take effect in
/// the order asked, before anything else happens in the run: the elector reads nothing of the
/// world, so it cannot tell the difference.
pub trait Sink {
    fn push(&mut self, output: Output);
    /// A note (see [`Outputs`]: kept for a trace, and `RenewedLease` always).
    fn note(&mut self, note: Note);
    /// The sink as an `Outputs`, for electors that write into one (every output from then on
    /// is kept, in order).
    fn outputs(&mut self) -> &mut Outputs;
}

impl Sink for Outputs {
    #[inline]
    fn push(&mut self, output: Output) {
        Outputs::push(self, output);
    }

    #[inline]
    fn note(&mut self, note: Note) {
        Outputs::note(self, note);
    }

    fn outputs(&mut self) -> &mut Outputs {
        self
    }
}

impl std::ops::Deref for Outputs {
    type Target = [Output];

    fn deref(&self) -> &[Output] {
        &self.list
    }
}

/// What every library's loop answers to: the node's inputs (start, a timer, a request's result,
/// stop) and its questions (which config, leading or not, waiting for an answer or not, and the
/// library's own expiry decision). Dispatched through [`Elector`], an enum, so that the hot path
/// is a jump and each node's elector lies inline in its process.
pub trait ElectorLoop {
    fn config(&self) -> &ElectorConfig;
    /// The library's own notion of leading (client-go's `IsLeader()`, a flag the app reads).
    fn is_leader(&self) -> bool;
    /// Has this elector a request outstanding?
    fn awaiting_result(&self) -> bool;
    fn start(&mut self, now: Now, out: &mut Outputs);
    fn on_timer(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut Outputs);
    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs);
    /// The answer to a request sent with [`Output::SendSide`] for `task`. Only electors that
    /// send such requests get any.
    fn on_side_result(&mut self, _now: Now, _task: u32, _result: LockResult, _out: &mut Outputs) {}
    /// The request side task `task` asked to send ([`Output::SendSide`]) and its timeout.
    fn side_request(&self, _task: u32) -> Option<(LockOp, Option<Nanos>)> {
        None
    }
    /// The run context is cancelled (graceful stop, SIGTERM).
    fn stop(&mut self, now: Now, out: &mut Outputs);
    /// The library's expiry decision: would it, at `now`, take the Lease it last read as
    /// expired by its time rule? `None` before it has read one (or `Some(true)`: a library whose
    /// empty cache counts as expired). The same code its loop runs.
    fn lease_expired(&self, now: Now) -> Option<bool>;
    /// A watch event for the node's Lease (`None`: deleted), for libraries that watch it.
    fn on_watch(&mut self, _now: Now, _lease: Option<Record>, _out: &mut Outputs) {}
    /// The library's health check (client-go's `Check`); libraries without one are healthy.
    fn healthy(&self, _now_mono: i64, _tolerance: Nanos) -> bool {
        true
    }
    /// The leader's work raised and this library watches for that
    /// ([`AfterWorkEnds::ElectorStopsNextRound`](library::AfterWorkEnds)): it stops at the
    /// top of its next renew round. Only loops whose row says so implement it.
    fn work_raised(&mut self) {}
    /// The deadline (local monotonic) of the context the request it is about to send runs
    /// under, if it has one: client-go's renew round (`RenewDeadline`). A client-side rate
    /// limiter refuses at once a wait past it (x/time/rate `Wait`).
    fn context_deadline(&self) -> Option<i64> {
        None
    }
}

/// One node's elector, whichever algorithm it follows. Held inline (not boxed): an event of a
/// node then touches one region of memory, which is what keeps ten thousand nodes fast.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Elector {
    Loop(loops::LoopElector),
    Python(python::PythonElector),
    Manager(manager::ManagerElector),
    Fabric8(fabric8::Fabric8Elector),
    Java(java::JavaElector),
    CSharp(csharp::CSharpElector),
    NestJs(nestjs::NestJsElector),
    KubeLeaseManager(kube_lease_manager::KubeLeaseManagerElector),
    KubeCoordinate(kube_coordinate::KubeCoordinateElector),
    Kubert(kubert::KubertElector),
    KubeLeaderElection(kube_leader_election::KubeLeaderElectionElector),
}

macro_rules! each {
    ($self:expr, $e:ident => $body:expr) => {
        match $self {
            Elector::Loop($e) => $body,
            Elector::Python($e) => $body,
            Elector::Manager($e) => $body,
            Elector::Fabric8($e) => $body,
            Elector::Java($e) => $body,
            Elector::CSharp($e) => $body,
            Elector::NestJs($e) => $body,
            Elector::KubeLeaseManager($e) => $body,
            Elector::KubeCoordinate($e) => $body,
            Elector::Kubert($e) => $body,
            Elector::KubeLeaderElection($e) => $body,
        }
    };
}

impl Elector {
    /// `me` is the interned `config.identity`. The algorithm's row builds it.
    /// `config` is shared with the node's spec (a fleet's electors each kept a copy: ~260
    /// bytes with its strings).
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym, rng: ComponentRng) -> Self {
        let config = config.into();
        (config.algorithm.library().build)(config, me, rng)
    }

    pub fn start(&mut self, now: Now, out: &mut Outputs) {
        each!(self, e => ElectorLoop::start(e, now, out))
    }

    /// The elector of client-go's loop writes into `out` itself; every other into its
    /// `Outputs`.
    #[inline(always)]
    fn others<S: Sink>(&mut self, out: &mut S, input: impl FnOnce(&mut Elector, &mut Outputs)) {
        input(self, out.outputs());
    }

    // The two inputs of every request, inlined: the match on the algorithm is then a jump in
    // the caller, not a call that passes the lock's result through memory.
    #[inline(always)]
    pub fn on_timer<S: Sink>(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut S) {
        match self {
            Elector::Loop(e) => e.on_timer(now, kind, generation, out),
            other => other.others(out, |e, out| each!(e, e => ElectorLoop::on_timer(e, now, kind, generation, out))),
        }
    }

    #[inline(always)]
    pub fn on_result<S: Sink>(&mut self, now: Now, result: LockResult, out: &mut S) {
        match self {
            Elector::Loop(e) => e.on_result(now, result, out),
            other => other.others(out, |e, out| each!(e, e => ElectorLoop::on_result(e, now, result, out))),
        }
    }

    /// The answer to a side task's request ([`Output::SendSide`]).
    pub fn on_side_result(&mut self, now: Now, task: u32, result: LockResult, out: &mut Outputs) {
        each!(self, e => ElectorLoop::on_side_result(e, now, task, result, out))
    }

    /// [`ElectorLoop::side_request`].
    pub fn side_request(&self, task: u32) -> Option<(LockOp, Option<Nanos>)> {
        each!(self, e => ElectorLoop::side_request(e, task))
    }

    /// A watch event for the node's Lease (`None`: deleted), for electors that watch it
    /// ([`Algorithm::watches_lease`]).
    pub fn on_watch(&mut self, now: Now, lease: Option<Record>, out: &mut Outputs) {
        each!(self, e => ElectorLoop::on_watch(e, now, lease, out))
    }

    /// The run context is cancelled (graceful stop, SIGTERM).
    pub fn stop(&mut self, now: Now, out: &mut Outputs) {
        each!(self, e => ElectorLoop::stop(e, now, out))
    }

    /// `IsLeader()`: the last observed record names this elector.
    pub fn is_leader(&self) -> bool {
        each!(self, e => ElectorLoop::is_leader(e))
    }

    pub fn config(&self) -> &ElectorConfig {
        each!(self, e => ElectorLoop::config(e))
    }

    /// client-go's health check (`Check`); electors without one are always healthy.
    pub fn healthy(&self, now_mono: i64, tolerance: Nanos) -> bool {
        each!(self, e => ElectorLoop::healthy(e, now_mono, tolerance))
    }

    /// The library's expiry decision on the Lease it last read ([`ElectorLoop::lease_expired`]).
    pub fn lease_expired(&self, now: Now) -> Option<bool> {
        each!(self, e => ElectorLoop::lease_expired(e, now))
    }

    /// Has this elector a request outstanding?
    pub fn awaiting_result(&self) -> bool {
        each!(self, e => ElectorLoop::awaiting_result(e))
    }

    /// [`ElectorLoop::context_deadline`].
    pub fn context_deadline(&self) -> Option<i64> {
        each!(self, e => ElectorLoop::context_deadline(e))
    }

    /// The leader's work raised ([`ElectorLoop::work_raised`]).
    pub fn work_raised(&mut self) {
        each!(self, e => ElectorLoop::work_raised(e))
    }
}
