//! Processes: each node's running process (or its absence), its clock, its elector and the lock
//! the elector writes through.
//!
//! A process is started, killed, paused and stopped here; what its elector then asks for comes
//! back to the loop as [`Output`]s, which the loop routes (requests to the network, timers to
//! the queue, leadership to the observer and the reconciler).

use super::event::Event;
use crate::api::{LeaseRef, UserId, Verb};
use crate::clock::NodeClock;
use crate::elector::Outputs;
use crate::elector::{Elector, Now};
use crate::lock::LeaseLock;
use crate::model::NodeSpec;
use crate::model::RestartBackoff;
use crate::rng::ComponentRng;
use crate::sym::Sym;
use crate::time::Nanos;

/// Why the leader's work stops later than the elector's word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WorkStop {
    /// A blocking stop hook (`stop_acting` with a duration): the process cannot exit before it.
    Hook,
    /// Runnables draining (controller-runtime): the process may exit first, ending them.
    Drain,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ProcState {
    NotStarted,
    Running,
    Crashed,
    Exited,
}

pub(super) struct Process {
    pub(super) identity: std::sync::Arc<str>,
    pub(super) sym: Sym,
    pub(super) clock: NodeClock,
    pub(super) user: UserId,
    pub(super) lease: LeaseRef,
    /// The field manager of its Lease writes (interned).
    pub(super) field_manager: Sym,
    pub(super) state: ProcState,
    /// Moves on every start and every kill: events of an older incarnation are stale.
    pub(super) incarnation: u32,
    /// Processes started so far (what traces call the incarnation).
    pub(super) starts: u32,
    pub(super) paused_until: Option<Nanos>,
    /// Events that arrived while paused, in arrival order.
    pub(super) deferred: Vec<Event>,
    pub(super) elector: Option<Elector>,
    pub(super) lock: LeaseLock,
    /// The elector's request in flight: (request id, verb).
    pub(super) elector_request: Option<(u64, Verb)>,
    /// Requests of the elector's other tasks in flight at the same time (`Output::SendSide`:
    /// the C# client's renew tasks that a round's timeout left running): (request id, verb,
    /// task). Empty for every other library.
    pub(super) side_requests: Vec<(u64, Verb, u32)>,
    pub(super) stop_requested: bool,
    /// An exception ended the elector while it led: the leader's work is still running.
    pub(super) orphan_work: bool,
    /// The leader's work is due to stop at a scheduled `StopActing` event (`stop_acting` with a
    /// duration, or controller-runtime's drain), whose generation this is.
    pub(super) work_stop: Option<(WorkStop, u32)>,
    pub(super) work_stop_generation: u32,
    /// The elector's `Run` returned while a blocking stop hook still ran: the process exits when
    /// the hook returns.
    pub(super) exit_deferred: bool,
    /// Liveness probes failed in a row, and when this incarnation's probing began (probes run
    /// every period from then).
    pub(super) probe_failures: u32,
    pub(super) probe_anchor: Nanos,
    /// A `wedge` fault: the requests in flight when it began, the ids below this one, never
    /// complete (0: none).
    pub(super) hung_below: u32,
    /// Its HTTP client's wedge and rate limiter, afresh at each start (`None`: neither).
    pub(super) client: Option<Box<super::limiter::ClientState>>,
    /// The kubelet's CrashLoopBackOff entry for this container: (the next delay, the exit it
    /// was last updated at).
    pub(super) crashloop: Option<(Nanos, Nanos)>,
    /// The last monotonic reading `drive` took: (true time, reading). The outputs of that
    /// input arm their timers at the same instant, and the reading is a pure function of the
    /// true time (steps move only the wall clock), so they reuse it instead of computing it
    /// again — two readings of the four a request costs.
    reading: (Nanos, i64),
}

impl Process {
    pub(super) fn new(
        spec: &NodeSpec,
        sym: Sym,
        clock: NodeClock,
        user: UserId,
        lease: LeaseRef,
        field_manager: Sym,
    ) -> Process {
        Process {
            identity: spec.identity().into(),
            sym,
            clock,
            user,
            lease,
            field_manager,
            state: ProcState::NotStarted,
            incarnation: 0,
            starts: 0,
            paused_until: None,
            deferred: Vec::new(),
            elector: None,
            lock: Self::new_lock(spec, user, lease, field_manager),
            elector_request: None,
            side_requests: Vec::new(),
            stop_requested: false,
            orphan_work: false,
            work_stop: None,
            work_stop_generation: 0,
            exit_deferred: false,
            probe_failures: 0,
            probe_anchor: 0,
            hung_below: 0,
            client: None,
            crashloop: None,
            reading: (Nanos::MAX, 0),
        }
    }

    fn new_lock(spec: &NodeSpec, user: UserId, lease: LeaseRef, field_manager: Sym) -> LeaseLock {
        let library = spec.elector.algorithm.library();
        let mut lock = LeaseLock::new(lease, user, field_manager, library.json_lock);
        if library.ignores_patch_answers {
            lock.ignore_patch_responses();
        }
        if !spec.elector.labels.is_empty() {
            let labels: crate::api::Labels = spec.elector.labels.iter().cloned().collect();
            // v0.34.0 and v0.34.1 assign into a nil map when the Lease has no labels yet.
            let panics =
                spec.elector.client_go_version().is_some_and(|v| v.minor == 34 && v.patch.is_some_and(|p| p < 2));
            lock.set_labels(std::sync::Arc::new(labels), panics);
        }
        lock
    }

    /// Both clock readings at true time `t`. Inline: every input to an elector reads them, and
    /// an out-of-line call's register saves cost a third of the readings.
    #[inline]
    pub(super) fn now(&self, t: Nanos) -> Now {
        let mono = self.clock.monotonic(t);
        Now { mono, wall: self.clock.wall_from_monotonic(t, mono) }
    }

    pub(super) fn is_running(&self) -> bool {
        self.state == ProcState::Running
    }

    /// Starts a fresh process (a new elector and lock; nothing of the last one survives). Returns
    /// false if one is already running. Deferred events of the last process are handed back in
    /// `stale` (their message slots must be freed).
    pub(super) fn start(&mut self, spec: &NodeSpec, seed: u64, stale: &mut Vec<Event>) -> bool {
        if self.state == ProcState::Running {
            return false;
        }
        self.incarnation += 1;
        self.state = ProcState::Running;
        self.stop_requested = false;
        // A new process has a new HTTP client.
        self.hung_below = 0;
        self.client = spec.client_limiter.as_ref().map(|l| {
            Box::new(super::limiter::ClientState {
                wedged_until: 0,
                limiter: Some(super::limiter::ClientLimiter::new(l)),
            })
        });
        self.work_stop = None;
        self.exit_deferred = false;
        self.paused_until = None;
        stale.append(&mut self.deferred);
        self.elector_request = None;
        self.side_requests.clear();
        self.lock = Self::new_lock(spec, self.user, self.lease, self.field_manager);
        self.starts += 1;
        let mut digits = [0; 20];
        let starts = crate::digits::decimal(u64::from(self.starts), &mut digits);
        let rng = ComponentRng::of_parts(seed, &["node/", &self.identity, "/elector/", starts]);
        self.elector = Some(Elector::new(std::sync::Arc::clone(&spec.elector), self.sym, rng));
        true
    }

    /// The delay before the restart the kubelet makes of this process, which died at `now`:
    /// `fixed` every time, or CrashLoopBackOff's (client-go `flowcontrol.Backoff` as the kubelet
    /// sets it up: the first restart at once, then the entry's delay, doubled after each use up
    /// to 300 s; an exit more than 600 s after the entry's last update starts afresh).
    pub(super) fn kubelet_delay(&mut self, backoff: RestartBackoff, fixed: Nanos, now: Nanos) -> Nanos {
        match backoff {
            RestartBackoff::Fixed => fixed,
            RestartBackoff::CrashLoop => {
                let (delay, entry) = RestartBackoff::crashloop_next(self.crashloop, now);
                self.crashloop = Some(entry);
                delay
            }
        }
    }

    /// The process dies (or exits): every pending timer and answer of it is now stale. Its
    /// deferred events go to `stale`.
    pub(super) fn kill(&mut self, state: ProcState, stale: &mut Vec<Event>) {
        self.state = state;
        self.incarnation += 1;
        self.elector = None;
        self.work_stop = None;
        self.exit_deferred = false;
        self.elector_request = None;
        self.side_requests.clear();
        stale.append(&mut self.deferred);
        self.paused_until = None;
    }

    /// Is the elector (any of its tasks) waiting for the answer to request `id`?
    #[inline]
    pub(super) fn elector_awaits(&self, id: u64) -> bool {
        self.elector_request.is_some_and(|(r, _)| r == id) || self.side_requests.iter().any(|&(r, _, _)| r == id)
    }

    /// Feeds the elector one input, its outputs going to `out`.
    #[inline]
    pub(super) fn drive(&mut self, t: Nanos, out: &mut Outputs, input: impl FnOnce(&mut Elector, Now, &mut Outputs)) {
        let now = self.now(t);
        self.reading = (t, now.mono);
        if let Some(e) = self.elector.as_mut() {
            input(e, now, out);
        }
    }

    /// The reading of the last input, taken outside `drive` (a quiet stretch's last answer).
    pub(super) fn set_reading(&mut self, t: Nanos, mono: i64) {
        self.reading = (t, mono);
    }

    /// When a local timer of `after` armed now fires, in true time (see `reading`).
    #[inline(always)]
    pub(super) fn timer_fires_at(&self, now: Nanos, after: Nanos) -> Nanos {
        fires_at(&self.clock, self.reading, now, after)
    }

    /// What a sink carrying out this process's outputs touches, with the reading its last
    /// input kept (see [`ProcessParts`]).
    #[inline(always)]
    pub(super) fn parts(&mut self) -> ProcessParts<'_> {
        ProcessParts {
            lock: &mut self.lock,
            clock: &self.clock,
            reading: self.reading,
            incarnation: self.incarnation,
            elector_request: &mut self.elector_request,
            paused: self.paused_until.is_some(),
            troubled: self.client.is_some(),
        }
    }

    /// [`Self::drive`] taken apart: both clocks read at `t` (and the reading kept, as `drive`
    /// keeps it), and the elector handed out beside the rest of the process it may not touch
    /// but its sink does (`lifecycle::Direct`). `None` when no elector runs.
    #[inline(always)]
    pub(super) fn split_for_input(&mut self, t: Nanos) -> Option<(Now, &mut Elector, ProcessParts<'_>)> {
        let now = self.now(t);
        self.reading = (t, now.mono);
        let elector = self.elector.as_mut()?;
        let parts = ProcessParts {
            lock: &mut self.lock,
            clock: &self.clock,
            reading: self.reading,
            incarnation: self.incarnation,
            elector_request: &mut self.elector_request,
            paused: self.paused_until.is_some(),
            troubled: self.client.is_some(),
        };
        Some((now, elector, parts))
    }
}

/// What an elector's sink touches of its process while the elector runs (see
/// [`Process::split_for_input`]).
pub(super) struct ProcessParts<'a> {
    pub(super) lock: &'a mut LeaseLock,
    pub(super) clock: &'a NodeClock,
    /// The input's clock reading: (true time, monotonic reading).
    pub(super) reading: (Nanos, i64),
    pub(super) incarnation: u32,
    pub(super) elector_request: &'a mut Option<(u64, Verb)>,
    pub(super) paused: bool,
    /// Its HTTP client is wedged or rate-limited ([`Process::client`]): its requests take the
    /// world's path.
    pub(super) troubled: bool,
}

impl ProcessParts<'_> {
    /// [`Process::timer_fires_at`].
    #[inline(always)]
    pub(super) fn timer_fires_at(&self, now: Nanos, after: Nanos) -> Nanos {
        fires_at(self.clock, self.reading, now, after)
    }
}

/// When a local timer of `after` armed at `now` fires on `clock`, in true time, reusing the
/// input's reading when it was taken at `now`.
#[inline(always)]
fn fires_at(clock: &NodeClock, reading: (Nanos, i64), now: Nanos, after: Nanos) -> Nanos {
    match reading {
        (t, reading) if t == now => clock.timer_fires_at_reading(now, reading, after),
        _ => clock.timer_fires_at(now, after),
    }
}
