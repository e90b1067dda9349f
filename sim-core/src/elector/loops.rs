//! client-go's `LeaderElector`, step by step, as a state machine.
//!
//! Sources: `kubernetes/client-go` `tools/leaderelection/leaderelection.go` and apimachinery's
//! `wait` package, as summarised in `shared/reference/leader-election.md` §3–§7:
//! - acquire: `JitterUntil(tryAcquireOrRenew, RetryPeriod, 1.2, sliding)`: first try at once,
//!   then a fresh wait in `[RP, 2.2·RP)` drawn *after* each try returns;
//! - renew: `Until(round, RetryPeriod)`, a round being `PollUntilContextTimeout(RP, RD,
//!   immediate)`: the deadline is RD from the *start of the round*; a ticker (armed at the round
//!   start, one buffered tick) paces the retries; no attempt once the deadline has passed; the
//!   deadline context also bounds every request of the round;
//! - `tryAcquireOrRenew`: fast path for a valid leader, else Get → (Create on NotFound) → observe
//!   (observedTime changes only when the second-precision raw record changes) → valid lease of
//!   another holder ⇒ fail → Update with transitions +1 on a change of holder;
//! - release (ReleaseOnCancel) after the renew loop ends: Get, then an empty-holder record with
//!   `leaseDurationSeconds: 1`, under a fresh RenewDeadline timeout.
//!
//! The same loop, with the expiry and write rules swapped, models client-go before v0.27 and the
//! `renewTime`-based crates (see [`Rules`]).

use super::record::{RawRecord, Record, micros_of, raw_seconds, seconds_differ};
use super::{
    Algorithm, ElectorConfig, ExpiryRule, Generation, LeaderEvent, LockError, LockOp, LockResult, Note, Now, Output,
    TimerKind,
};
use super::{ElectorLoop, Outputs, Sink};
use crate::rng::ComponentRng;
use crate::sym::Sym;
use crate::time::{NANOS_PER_SEC, Nanos};
use std::sync::Arc;

/// How `release()` goes, by client-go release (`leaderelection.go`, `release`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReleaseStyle {
    /// ≤ v0.30: PUT of the cached Lease (its possibly stale resourceVersion) with the observed
    /// transitions, no Get, under `context.TODO()` (only the HTTP timeout bounds it).
    CachedNoTimeout,
    /// v0.31–v0.33: the same under a RenewDeadline timeout (client-go f9eba8e8c).
    CachedWithTimeout,
    /// v0.34–v0.36: Get (refreshing the cached resourceVersion), then the PUT, both under one
    /// RenewDeadline timeout; a 409 gives up (client-go 500bfe00c, e36950929).
    GetThenUpdate,
    /// v0.37: as above, but a 409 on the PUT starts over with a fresh Get until the timeout
    /// (`tryRelease` recursing on `IsConflict`, client-go 1b1630d32, kubernetes#137988).
    GetThenUpdateRetrying,
}

/// The durations every step reads, copied from the shared [`ElectorConfig`] into the elector's
/// own memory: read through the `Arc` they cost a fleet a cache miss an event (1.17× the time of
/// 10,000 electors).
#[derive(Clone, Copy, Debug)]
struct Timing {
    lease_duration: Nanos,
    renew_deadline: Nanos,
    retry_period: Nanos,
    request_timeout: Option<Nanos>,
    jitter_factor: f64,
    /// `retry_period` as a float, for `jitter` (an unsigned integer's conversion takes about
    /// ten instructions on x86-64's baseline, at every try).
    retry_period_f64: f64,
    /// What a try writes as `leaseDurationSeconds`.
    lease_duration_seconds: i32,
}

impl Timing {
    fn of(config: &ElectorConfig) -> Timing {
        Timing {
            lease_duration: config.lease_duration,
            renew_deadline: config.renew_deadline,
            retry_period: config.retry_period,
            request_timeout: config.request_timeout,
            jitter_factor: config.jitter_factor,
            retry_period_f64: config.retry_period as f64,
            lease_duration_seconds: config.lease_duration_seconds(),
        }
    }
}

/// The variations on client-go's loop: the client-go releases, and the algorithm families
/// that share the loop with other expiry and write rules.
#[derive(Clone, Copy, Debug)]
struct Rules {
    expiry: ExpiryRule,
    /// Use the record's leaseDurationSeconds (client-go ≥ v0.27) or the own config (older).
    duration_from_record: bool,
    /// The leader's optimistic update without a Get (client-go ≥ v0.30).
    fast_path: bool,
    /// client-go ≤ v0.31: renew rounds use `PollImmediateUntil`, whose ticker starts after the
    /// immediate attempt and drops ticks nobody is waiting for (no buffered tick).
    legacy_poller: bool,
    release: ReleaseStyle,
    /// client-go ≥ v0.31 records `strategy` and `preferredHolder`, so a change of either alone
    /// changes the raw record and restarts a follower's observedTime.
    raw_has_strategy: bool,
    /// client-go ≥ v0.27 records "stopped leading" whenever `renew` returns (a deferred call,
    /// client-go ac40ba329); v0.26 only when a renew round fails.
    stopped_event_always: bool,
    /// `Coordinated` (client-go ≥ v0.31, 20993758b): every try is `tryCoordinatedRenew`.
    coordinated: bool,
}

impl Rules {
    fn of(config: &ElectorConfig) -> Rules {
        let mut rules = match config.client_go_version() {
            Some(v) => {
                let minor = v.minor;
                Rules {
                    expiry: ExpiryRule::ObservedTime,
                    duration_from_record: minor >= 27,
                    fast_path: minor >= 30,
                    legacy_poller: minor <= 31,
                    release: match minor {
                        ..=30 => ReleaseStyle::CachedNoTimeout,
                        31..=33 => ReleaseStyle::CachedWithTimeout,
                        34..=36 => ReleaseStyle::GetThenUpdate,
                        _ => ReleaseStyle::GetThenUpdateRetrying,
                    },
                    raw_has_strategy: minor >= 31,
                    stopped_event_always: minor >= 27,
                    coordinated: config.coordinated,
                }
            }
            // Only `renew-time` runs this loop without a client-go release (the library
            // table's `client_go_loop` rows; `rows_build_their_own_loops` checks it).
            None => {
                debug_assert_eq!(config.algorithm, Algorithm::RenewTime);
                Rules {
                    expiry: ExpiryRule::RenewTime,
                    duration_from_record: true,
                    fast_path: false,
                    legacy_poller: false,
                    release: ReleaseStyle::GetThenUpdate,
                    raw_has_strategy: false,
                    stopped_event_always: true,
                    coordinated: false,
                }
            }
        };
        if let Some(expiry) = config.expiry {
            rules.expiry = expiry;
        }
        if let Some(fast_path) = config.fast_path {
            rules.fast_path = fast_path;
        }
        rules
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    FastUpdate,
    Get,
    Create,
    Update,
}

/// One call of `tryAcquireOrRenew` in progress.
#[derive(Clone, Copy, Debug)]
struct Try {
    /// `now` as captured at the top of `tryAcquireOrRenew`.
    started: Now,
    step: Step,
    candidate: Record,
}

/// One `PollUntilContextTimeout` round of the renew loop, in local monotonic time.
#[derive(Clone, Copy, Debug)]
struct Round {
    start: i64,
    deadline: i64,
    /// When the poll loop last took a tick (or the round start): a tick in `(last_tick, now]`
    /// is sitting in the ticker's one-slot buffer.
    last_tick: i64,
    /// Legacy poller only: ticks are at `anchor + k·RP`, the anchor being the end of the round's
    /// immediate attempt.
    anchor: Option<i64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReleaseStep {
    Get,
    Update,
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    Idle,
    Acquiring(Try),
    WaitingRetry,
    Renewing { round: Round, attempt: Option<Try> },
    BetweenRounds,
    Releasing { step: ReleaseStep, deadline: i64, record: Record },
    Done,
}

enum Progress {
    Pending,
    Done(bool),
}

/// What a quiet stretch moves of a [`LoopElector`] (`world/quiet.rs`): its observation, and
/// how many quiet steps it took.
#[derive(Clone, Copy, Debug)]
pub struct QuietState {
    observed: Record,
    observed_raw: Option<RawRecord>,
    observed_time: Option<i64>,
    polls: u32,
    /// A candidate's observation once it has read the plan's Lease: that version, which
    /// stands for `observed` and `observed_raw` (written only by `set_quiet_state`). A
    /// candidate reads a new version at almost every poll: copying each into the record fields
    /// was its plan's costliest step (docs/performance.md, 2026-12-06, seventeenth session).
    read: Option<QuietRead>,
}

/// A base of a quiet stretch's Lease (the start, or a write that changed more than the
/// renewTime): its record as a Get reads it, and its raw records without and with `strategy`
/// and `preferredHolder` (`Record::raw`).
pub type QuietBase = (Record, [RawRecord; 2]);

/// A version of a quiet stretch's Lease as a candidate reads it: base `base` of the plan's
/// bases (`[QuietBase]`) with its own renewTime; the renewals since the base changed nothing
/// else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuietRead {
    base: u32,
    renew_time_micros: Option<i64>,
}

impl QuietRead {
    pub fn new(base: u32, renew_time_micros: Option<i64>) -> QuietRead {
        QuietRead { base, renew_time_micros }
    }

    pub fn base(self) -> u32 {
        self.base
    }

    pub fn renew_time_micros(self) -> Option<i64> {
        self.renew_time_micros
    }

    #[inline(always)]
    pub fn record(self, bases: &[QuietBase]) -> Record {
        Record { renew_time_micros: self.renew_time_micros, ..bases[self.base as usize].0 }
    }

    #[inline(always)]
    pub fn raw(self, bases: &[QuietBase], with_strategy: bool) -> RawRecord {
        bases[self.base as usize].1[with_strategy as usize].renewed(raw_seconds(self.renew_time_micros))
    }
}

impl QuietState {
    /// The record it observed.
    #[inline(always)]
    fn record(&self, bases: &[QuietBase]) -> Record {
        self.read.map_or(self.observed, |read| read.record(bases))
    }

    /// The raw record it observed.
    #[inline(always)]
    fn raw(&self, bases: &[QuietBase], with_strategy: bool) -> Option<RawRecord> {
        self.read.map_or(self.observed_raw, |read| Some(read.raw(bases, with_strategy)))
    }
}

#[derive(Clone, Debug)]
pub struct LoopElector {
    /// Shared with the node's spec; the hot durations are in `timing`.
    config: Arc<ElectorConfig>,
    timing: Timing,
    /// The interned `config.identity`.
    me: Sym,
    rules: Rules,
    rng: ComponentRng,
    observed: Record,
    observed_raw: Option<RawRecord>,
    /// Local monotonic time at which `observed` was last set; `None` is Go's zero time.
    observed_time: Option<i64>,
    reported_leader: Sym,
    phase: Phase,
    generations: [Generation; TimerKind::COUNT],
    awaiting: bool,
    /// The run context has been cancelled.
    stopping: bool,
    /// `renew` was entered (the acquire succeeded): its deferred "stopped leading" is due.
    renewing: bool,
}

/// The trait for callers that hold any library; the world calls the inherent methods, whose
/// sink is generic (client-go's loop writes into the world's `Direct`).
impl ElectorLoop for LoopElector {
    fn config(&self) -> &ElectorConfig {
        LoopElector::config(self)
    }

    fn is_leader(&self) -> bool {
        LoopElector::is_leader(self)
    }

    fn awaiting_result(&self) -> bool {
        LoopElector::awaiting_result(self)
    }

    fn start(&mut self, now: Now, out: &mut Outputs) {
        LoopElector::start(self, now, out)
    }

    fn on_timer(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut Outputs) {
        LoopElector::on_timer(self, now, kind, generation, out)
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        LoopElector::on_result(self, now, result, out)
    }

    fn stop(&mut self, now: Now, out: &mut Outputs) {
        LoopElector::stop(self, now, out)
    }

    fn lease_expired(&self, now: Now) -> Option<bool> {
        self.observed_time.map(|_| !self.is_lease_valid(now))
    }

    fn healthy(&self, now_mono: i64, tolerance: Nanos) -> bool {
        LoopElector::healthy(self, now_mono, tolerance)
    }

    /// A renew round's tries run under its `RenewDeadline` context (`PollUntilContextTimeout`,
    /// leaderelection.go:285); acquire's under the run context, which has none.
    fn context_deadline(&self) -> Option<i64> {
        match self.phase {
            Phase::Renewing { round, .. } => Some(round.deadline),
            _ => None,
        }
    }
}

impl LoopElector {
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym, rng: ComponentRng) -> Self {
        let config: Arc<ElectorConfig> = config.into();
        let rules = Rules::of(&config);
        LoopElector {
            timing: Timing::of(&config),
            config,
            me,
            rules,
            rng,
            observed: Record::default(),
            observed_raw: None,
            observed_time: None,
            reported_leader: Sym::EMPTY,
            phase: Phase::Idle,
            generations: [0; TimerKind::COUNT],
            awaiting: false,
            stopping: false,
            renewing: false,
        }
    }

    pub fn config(&self) -> &ElectorConfig {
        &self.config
    }

    /// Where this elector stands between two requests of a quiet stretch (`world/quiet.rs`):
    /// `Some((true, g))` for a leader waiting for its next renew round (timer `NextRound` of
    /// generation `g`), whose round will start on the fast path; `Some((false, g))` for a
    /// candidate waiting to try again (timer `Retry`). `None` otherwise (a request in flight, a
    /// round retrying, a coordinated elector, stopping). Whether its next steps are the quiet
    /// ones is not decided here: the stretch feeds it the real inputs and reads what it asks.
    pub fn quiet_role(&self) -> Option<(bool, Generation)> {
        if self.stopping || self.awaiting || self.rules.coordinated {
            return None;
        }
        match self.phase {
            Phase::BetweenRounds if self.rules.fast_path && self.is_leader() => {
                Some((true, self.generations[TimerKind::NextRound.index()]))
            }
            Phase::WaitingRetry if !self.is_leader() => Some((false, self.generations[TimerKind::Retry.index()])),
            _ => None,
        }
    }

    /// What a quiet stretch's steps change of this elector, but its random stream.
    pub fn quiet_state(&self) -> QuietState {
        QuietState {
            observed: self.observed,
            observed_raw: self.observed_raw,
            observed_time: self.observed_time,
            polls: 0,
            read: None,
        }
    }

    /// The leader's renew round starting at `now` (its `NextRound` timer): what `on_timer`
    /// then asks for on the fast path — the Update's record and the request's timeout — or
    /// `None` if the round would not take the fast path at once.
    #[inline]
    pub fn quiet_renew(&self, state: &QuietState, now: Now) -> Option<(Record, Option<Nanos>)> {
        debug_assert!(state.read.is_none(), "a leader's plan reads no version");
        let rd = self.timing.renew_deadline as i64;
        if rd <= 0
            || state.observed.holder_identity != self.me
            || !self.lease_valid(&state.observed, state.observed_time, now)
        {
            return None;
        }
        let mut candidate = self.new_try(now).candidate;
        keep_term(&mut candidate, &state.observed);
        // `send` under the round's deadline, `rd` away.
        let timeout = Some(self.timing.request_timeout.map_or(rd as Nanos, |t| t.min(rd as Nanos)));
        Some((candidate, timeout))
    }

    /// The renewal's success answered at `now` (`on_result`): the record it wrote is observed,
    /// the renewal noted, the next round armed a RetryPeriod on; `None` if the elector would
    /// report a new leader first.
    #[inline]
    pub fn quiet_renewed(&self, state: &mut QuietState, candidate: Record, now: Now) -> Option<Nanos> {
        debug_assert!(state.read.is_none(), "a leader's plan reads no version");
        if candidate.holder_identity != self.reported_leader {
            return None;
        }
        state.observed = candidate;
        state.observed_time = Some(now.mono);
        state.polls += 1;
        Some(self.timing.retry_period)
    }

    /// A candidate's try (its `Retry` timer): the Get it sends is bounded by the HTTP timeout
    /// alone (the acquire loop's context has no deadline).
    #[inline]
    pub fn quiet_poll(&self) -> Option<Nanos> {
        self.timing.request_timeout
    }

    /// The wait before a candidate's next try (`wait.Jitter(RetryPeriod, JitterFactor)`), drawn
    /// from `rng`, a copy of its stream: what [`Self::quiet_polled`] arms when the try is quiet.
    #[inline]
    pub fn quiet_wait(&self, rng: &mut ComponentRng) -> Nanos {
        Self::jitter(&self.timing, rng)
    }

    /// Its Get answered at `now` with `read` (a version of the plan's Lease over `bases`;
    /// `started`: the try's start): what `on_result` does when the Lease is held by the leader
    /// it already reports — the observation, and `wait` ([`Self::quiet_wait`]) for its next
    /// try — or `None` (and `state` as it was) otherwise.
    #[inline]
    pub fn quiet_polled(
        &self,
        state: &mut QuietState,
        wait: Nanos,
        started: Now,
        bases: &[QuietBase],
        read: QuietRead,
        now: Now,
    ) -> Option<Nanos> {
        let strategy = self.rules.raw_has_strategy;
        // Whether the raw record changed. Two versions of one base differ in their renewTime
        // alone, so their raw records in its seconds alone.
        let changed = match state.read {
            Some(seen) if seen.base == read.base => seconds_differ(seen.renew_time_micros, read.renew_time_micros),
            _ => state.raw(bases, strategy) != Some(read.raw(bases, strategy)),
        };
        let record = read.record(bases);
        debug_assert_eq!(read.raw(bases, strategy), record.raw(strategy));
        debug_assert_eq!(changed, state.raw(bases, strategy) != Some(record.raw(strategy)));
        let (observed, observed_time) =
            if changed { (record, Some(now.mono)) } else { (state.record(bases), state.observed_time) };
        let held = !record.holder_is_empty() && self.lease_valid(&observed, observed_time, started);
        let holder = observed.holder_identity;
        if !held || holder == self.me || holder != self.reported_leader {
            return None;
        }
        if changed {
            (state.read, state.observed_time) = (Some(read), Some(now.mono));
        }
        state.polls += 1;
        Some(wait)
    }

    /// The elector as `state`'s quiet steps leave it (`bases`: the plan's, which a
    /// candidate's last read refers to): its observation, and each timer kind a step moves
    /// moved once per step (a leader's round cancels its tick and deadline and arms the next
    /// round; a candidate re-arms its retry). Its random stream is the caller's to put in
    /// place (`seek_quiet_rng`).
    pub fn set_quiet_state(&mut self, state: &QuietState, leader: bool, bases: &[QuietBase]) {
        (self.observed, self.observed_raw, self.observed_time) =
            (state.record(bases), state.raw(bases, self.rules.raw_has_strategy), state.observed_time);
        let kinds: &[TimerKind] = if leader {
            &[TimerKind::RoundTick, TimerKind::RoundDeadline, TimerKind::NextRound]
        } else {
            &[TimerKind::Retry]
        };
        for kind in kinds {
            let g = &mut self.generations[kind.index()];
            *g = g.wrapping_add(state.polls);
        }
    }

    /// A copy of the elector's random stream, for a plan (`quiet_polled`).
    pub fn quiet_rng(&self) -> ComponentRng {
        self.rng.clone()
    }

    /// Moves the elector's random stream to where a plan's copy of it passed (the same draws
    /// taken; see `ComponentRng::position`); `ahead`: the copy as the plan left it.
    pub fn seek_quiet_rng(&mut self, position: (u64, u8), ahead: &ComponentRng) {
        self.rng.seek_from(position, ahead);
    }

    pub fn is_leader(&self) -> bool {
        self.observed.holder_identity == self.me
    }

    pub fn awaiting_result(&self) -> bool {
        self.awaiting
    }

    /// `LeaderElector.Check(maxTolerableExpiredLease)` (`leaderelection.go`, the same in every
    /// release): healthy unless this elector believes it leads and its last observation is more
    /// than its *own* LeaseDuration plus the tolerance old.
    pub fn healthy(&self, now_mono: i64, tolerance: Nanos) -> bool {
        if !self.is_leader() {
            return true;
        }
        let Some(observed_at) = self.observed_time else { return true };
        now_mono - observed_at <= (self.timing.lease_duration + tolerance) as i64
    }

    // ---- inputs -----------------------------------------------------------------------------

    pub fn start(&mut self, now: Now, out: &mut impl Sink) {
        if !matches!(self.phase, Phase::Idle) {
            return;
        }
        out.note(Note::AttemptingToAcquire);
        self.begin_acquire_try(now, out);
    }

    pub fn on_timer(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut impl Sink) {
        if self.generations[kind.index()] != generation || self.stopping {
            return; // superseded or cancelled
        }
        match (kind, &self.phase) {
            (TimerKind::Retry, Phase::WaitingRetry) => self.begin_acquire_try(now, out),
            (TimerKind::NextRound, Phase::BetweenRounds) => self.start_round(now, out),
            (TimerKind::RoundTick, Phase::Renewing { round, attempt: None }) => {
                let round = *round;
                // After a tick the poll loop re-checks the context: no attempt past the deadline.
                if now.mono >= round.deadline {
                    self.round_failed(now, out);
                } else {
                    self.phase = Phase::Renewing { round: Round { last_tick: now.mono, ..round }, attempt: None };
                    self.begin_round_try(now, out);
                }
            }
            (TimerKind::RoundDeadline, Phase::Renewing { .. }) => {
                if self.awaiting {
                    // The deadline context aborts the request in flight; the condition then
                    // runs on with a done context and fails at once.
                    out.push(Output::Abandon);
                    self.on_result(now, Err(LockError::ContextDone), out);
                } else {
                    self.round_failed(now, out);
                }
            }
            _ => {}
        }
    }

    pub fn on_result(&mut self, now: Now, result: LockResult, out: &mut impl Sink) {
        self.awaiting = false;
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Acquiring(mut t) => match self.continue_try(&mut t, now, result, None, out) {
                Progress::Pending => self.phase = Phase::Acquiring(t),
                Progress::Done(ok) => self.after_acquire_try(ok, now, out),
            },
            Phase::Renewing { round, attempt: Some(mut t) } => {
                match self.continue_try(&mut t, now, result, Some(round.deadline), out) {
                    Progress::Pending => self.phase = Phase::Renewing { round, attempt: Some(t) },
                    Progress::Done(ok) => {
                        self.phase = Phase::Renewing { round, attempt: None };
                        self.after_round_try(ok, now, out);
                    }
                }
            }
            Phase::Releasing { step, deadline, record } => {
                self.continue_release(step, deadline, record, now, result, out)
            }
            other => self.phase = other, // a late result for an abandoned request
        }
    }

    pub fn stop(&mut self, now: Now, out: &mut impl Sink) {
        if self.stopping {
            return;
        }
        self.stopping = true;
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Idle | Phase::Done => self.phase = Phase::Done,
            // acquire() returns false; Run returns and still calls OnStoppedLeading.
            Phase::Acquiring(_) | Phase::WaitingRetry => {
                self.abandon(out);
                // The aborted try returns to acquire's loop body, which still reports.
                self.maybe_report_transition(out);
                self.finish(out);
            }
            // The run context is the parent of the leader context, so the leader's work stops
            // now; the renew loop ends with the context's error and releases if configured
            // before OnStoppedLeading runs.
            Phase::Renewing { .. } | Phase::BetweenRounds => {
                self.abandon(out);
                out.push(Output::LeaderContextDone);
                self.maybe_report_transition(out);
                self.after_renew_loop(now, out);
            }
            releasing @ Phase::Releasing { .. } => self.phase = releasing,
        }
    }

    // ---- the acquire loop ---------------------------------------------------------------------

    fn begin_acquire_try(&mut self, now: Now, out: &mut impl Sink) {
        let mut t = self.new_try(now);
        match self.first_step(&mut t, now, None, out) {
            Progress::Pending => self.phase = Phase::Acquiring(t),
            Progress::Done(ok) => self.after_acquire_try(ok, now, out),
        }
    }

    fn after_acquire_try(&mut self, ok: bool, now: Now, out: &mut impl Sink) {
        self.maybe_report_transition(out);
        if ok {
            out.push(Output::RecordEvent(LeaderEvent::BecameLeader));
            out.note(Note::AcquiredLease);
            out.push(Output::StartedLeading);
            self.renewing = true;
            self.start_round(now, out);
        } else {
            out.note(Note::FailedToAcquire);
            let wait = self.jittered_retry_period();
            self.arm(TimerKind::Retry, wait, out);
            self.phase = Phase::WaitingRetry;
        }
    }

    /// `wait.Jitter(RetryPeriod, JitterFactor)`: `RP + rand.Float64() * factor * RP`.
    fn jittered_retry_period(&mut self) -> Nanos {
        Self::jitter(&self.timing, &mut self.rng)
    }

    /// `wait.Jitter(RetryPeriod, JitterFactor)` drawn from `rng`.
    #[inline]
    fn jitter(timing: &Timing, rng: &mut ComponentRng) -> Nanos {
        let rp = timing.retry_period;
        if timing.jitter_factor <= 0.0 {
            return rp;
        }
        rp + (rng.unit_f64() * timing.jitter_factor * timing.retry_period_f64) as Nanos
    }

    // ---- the renew loop -------------------------------------------------------------------------

    fn start_round(&mut self, now: Now, out: &mut impl Sink) {
        let round = Round {
            start: now.mono,
            deadline: now.mono + self.timing.renew_deadline as i64,
            last_tick: now.mono,
            anchor: None,
        };
        self.phase = Phase::Renewing { round, attempt: None };
        self.begin_round_try(now, out);
    }

    fn begin_round_try(&mut self, now: Now, out: &mut impl Sink) {
        let Phase::Renewing { round, .. } = self.phase else { unreachable!() };
        // Since v0.36 the condition first returns ctx.Err() if the context is done.
        if now.mono >= round.deadline {
            self.round_failed(now, out);
            return;
        }
        let mut t = self.new_try(now);
        match self.first_step(&mut t, now, Some(round.deadline), out) {
            Progress::Pending => self.phase = Phase::Renewing { round, attempt: Some(t) },
            Progress::Done(ok) => self.after_round_try(ok, now, out),
        }
    }

    fn after_round_try(&mut self, ok: bool, now: Now, out: &mut impl Sink) {
        let Phase::Renewing { round, .. } = self.phase else { unreachable!() };
        if ok {
            self.maybe_report_transition(out);
            out.note(Note::RenewedLease);
            self.cancel(TimerKind::RoundTick);
            self.cancel(TimerKind::RoundDeadline);
            let rp = self.timing.retry_period;
            self.arm(TimerKind::NextRound, rp, out);
            self.phase = Phase::BetweenRounds;
            return;
        }
        let rp = self.timing.retry_period as i64;
        if self.rules.legacy_poller {
            // PollImmediateUntil: the ticker starts when the immediate attempt returns, and a tick
            // that finds nobody waiting is dropped, so the next attempt is at the next tick after
            // now, never at once.
            let anchor = round.anchor.unwrap_or(now.mono);
            let k = (now.mono - anchor) / rp + 1;
            let next_tick = anchor + k * rp;
            if now.mono >= round.deadline {
                self.round_failed(now, out);
                return;
            }
            self.arm(TimerKind::RoundTick, (next_tick - now.mono) as Nanos, out);
            self.arm(TimerKind::RoundDeadline, (round.deadline - now.mono) as Nanos, out);
            self.phase = Phase::Renewing { round: Round { anchor: Some(anchor), ..round }, attempt: None };
            return;
        }
        // The first tick after the one last taken: ticks are at start + k·RP.
        let k = (round.last_tick - round.start) / rp + 1;
        let next_tick = round.start + k * rp;
        if next_tick <= now.mono {
            // A tick is waiting in the buffer; the select takes it (or the done context) at once.
            if now.mono >= round.deadline {
                self.round_failed(now, out);
            } else {
                self.phase = Phase::Renewing { round: Round { last_tick: now.mono, ..round }, attempt: None };
                self.begin_round_try(now, out);
            }
            return;
        }
        if now.mono >= round.deadline {
            self.round_failed(now, out);
            return;
        }
        self.arm(TimerKind::RoundTick, (next_tick - now.mono) as Nanos, out);
        self.arm(TimerKind::RoundDeadline, (round.deadline - now.mono) as Nanos, out);
        self.phase = Phase::Renewing { round, attempt: None };
    }

    fn round_failed(&mut self, now: Now, out: &mut impl Sink) {
        self.cancel(TimerKind::RoundTick);
        self.cancel(TimerKind::RoundDeadline);
        self.maybe_report_transition(out);
        if !self.rules.stopped_event_always {
            out.push(Output::RecordEvent(LeaderEvent::StoppedLeading));
        }
        out.note(Note::FailedToRenew);
        self.after_renew_loop(now, out);
    }

    /// After `wait.Until` returns: release if configured, then `Run` returns (cancelling the
    /// leader context, then calling OnStoppedLeading).
    fn after_renew_loop(&mut self, now: Now, out: &mut impl Sink) {
        self.cancel(TimerKind::RoundTick);
        self.cancel(TimerKind::RoundDeadline);
        self.cancel(TimerKind::NextRound);
        if !self.config.release_on_cancel {
            self.finish(out);
            return;
        }
        // release() runs on a fresh background context: bounded by RenewDeadline from v0.31,
        // by nothing but the HTTP timeout before.
        let deadline = match self.rules.release {
            ReleaseStyle::CachedNoTimeout => i64::MAX,
            _ => now.mono + self.timing.renew_deadline as i64,
        };
        match self.rules.release {
            ReleaseStyle::CachedNoTimeout | ReleaseStyle::CachedWithTimeout => {
                // Before v0.34: `if !le.IsLeader() { return true }`, then the PUT of the cached
                // object (whatever its resourceVersion) with the observed transitions.
                if !self.is_leader() {
                    self.finish(out);
                    return;
                }
                let released = released_record(now, self.observed.leader_transitions);
                self.release_update(released, deadline, now, out);
            }
            ReleaseStyle::GetThenUpdate | ReleaseStyle::GetThenUpdateRetrying => self.release_get(deadline, now, out),
        }
    }

    fn release_get(&mut self, deadline: i64, now: Now, out: &mut impl Sink) {
        let bound = (deadline != i64::MAX).then_some(deadline);
        match self.send(LockOp::Get, now, bound, out) {
            None => self.phase = Phase::Releasing { step: ReleaseStep::Get, deadline, record: Record::default() },
            Some(result) => self.continue_release(ReleaseStep::Get, deadline, Record::default(), now, result, out),
        }
    }

    fn release_update(&mut self, released: Record, deadline: i64, now: Now, out: &mut impl Sink) {
        let op = self.write_op(released);
        let bound = (deadline != i64::MAX).then_some(deadline);
        match self.send(op, now, bound, out) {
            None => self.phase = Phase::Releasing { step: ReleaseStep::Update, deadline, record: released },
            Some(result) => self.continue_release(ReleaseStep::Update, deadline, released, now, result, out),
        }
    }

    fn continue_release(
        &mut self,
        step: ReleaseStep,
        deadline: i64,
        record: Record,
        now: Now,
        result: LockResult,
        out: &mut impl Sink,
    ) {
        match (step, result) {
            (ReleaseStep::Get, Ok(current)) => {
                // Judged on the previously observed record, not the one just read (v0.34+).
                if !self.is_leader() {
                    self.finish(out);
                    return;
                }
                let released = released_record(now, current.leader_transitions);
                self.release_update(released, deadline, now, out);
            }
            (ReleaseStep::Update, Ok(_)) => {
                self.set_observed(record, now);
                out.note(Note::Released);
                self.finish(out);
            }
            // v0.37: "Conflict when releasing lease, retrying": a fresh Get and PUT, at once,
            // until the RenewDeadline timeout ends the tries.
            (ReleaseStep::Update, Err(LockError::Conflict))
                if self.rules.release == ReleaseStyle::GetThenUpdateRetrying =>
            {
                out.note(Note::ReleaseConflictRetrying);
                self.release_get(deadline, now, out);
            }
            (_, Err(_)) => {
                out.note(Note::ReleaseFailed);
                self.finish(out);
            }
        }
    }

    fn finish(&mut self, out: &mut impl Sink) {
        for kind in [TimerKind::Retry, TimerKind::RoundTick, TimerKind::RoundDeadline, TimerKind::NextRound] {
            self.cancel(kind);
        }
        self.awaiting = false;
        self.phase = Phase::Done;
        if std::mem::take(&mut self.renewing) && self.rules.stopped_event_always {
            out.push(Output::RecordEvent(LeaderEvent::StoppedLeading));
        }
        out.push(Output::StoppedLeading);
        out.push(Output::Exited);
    }

    // ---- tryAcquireOrRenew ------------------------------------------------------------------

    fn new_try(&self, now: Now) -> Try {
        let candidate = Record {
            holder_identity: self.me,
            lease_duration_seconds: self.timing.lease_duration_seconds,
            acquire_time_micros: Some(micros_of(now.wall)),
            renew_time_micros: Some(micros_of(now.wall)),
            leader_transitions: 0,
            ..Record::default()
        };
        Try { started: now, step: Step::Get, candidate }
    }

    // Inlined (with `continue_try`) into its callers: the try, its step and the lock's result
    // then stay in registers instead of passing through memory at every call (3.5 % of a flap
    // run's instructions).
    #[inline(always)]
    fn first_step(&mut self, t: &mut Try, now: Now, deadline: Option<i64>, out: &mut impl Sink) -> Progress {
        if self.rules.fast_path && !self.rules.coordinated && self.is_leader() && self.is_lease_valid(t.started) {
            keep_term(&mut t.candidate, &self.observed);
            t.step = Step::FastUpdate;
            let op = self.write_op(t.candidate);
            return match self.send(op, now, deadline, out) {
                None => Progress::Pending,
                Some(result) => self.continue_try(t, now, result, deadline, out),
            };
        }
        t.step = Step::Get;
        match self.send(LockOp::Get, now, deadline, out) {
            None => Progress::Pending,
            Some(result) => self.continue_try(t, now, result, deadline, out),
        }
    }

    #[inline(always)]
    fn continue_try(
        &mut self,
        t: &mut Try,
        now: Now,
        mut result: LockResult,
        deadline: Option<i64>,
        out: &mut impl Sink,
    ) -> Progress {
        loop {
            let next: (Step, LockOp) = match (t.step, result) {
                (Step::FastUpdate, Ok(_)) | (Step::Create, Ok(_)) | (Step::Update, Ok(_)) => {
                    self.set_observed(t.candidate, now);
                    return Progress::Done(true);
                }
                (Step::FastUpdate, Err(_)) => {
                    out.note(Note::FastPathFailed);
                    (Step::Get, LockOp::Get)
                }
                // `tryCoordinatedRenew`: nobody but the election controller creates the Lease.
                (Step::Get, Err(LockError::NotFound)) if self.rules.coordinated => return Progress::Done(false),
                (Step::Get, Err(LockError::NotFound)) => (Step::Create, LockOp::Create(t.candidate)),
                (Step::Get, Ok(record)) if self.rules.coordinated => match self.coordinated_get(t, now, record, out) {
                    Ok(next) => next,
                    Err(done) => return done,
                },
                (Step::Get, Err(_)) | (Step::Create, Err(_)) | (Step::Update, Err(_)) => return Progress::Done(false),
                (Step::Get, Ok(record)) => {
                    // `len(oldLeaderElectionRecord.HolderIdentity) > 0`: the record just read.
                    let holder_set = !record.holder_is_empty();
                    let raw = record.raw(self.rules.raw_has_strategy);
                    if self.observed_raw.as_ref() != Some(&raw) {
                        self.set_observed(record, now);
                        self.observed_raw = Some(raw);
                    }
                    let held = holder_set && self.is_lease_valid(t.started);
                    if held && !self.is_leader() {
                        out.note(Note::HeldByAnother);
                        return Progress::Done(false);
                    }
                    if self.is_leader() {
                        keep_term(&mut t.candidate, &self.observed);
                    } else {
                        t.candidate.leader_transitions = self.observed.leader_transitions.saturating_add(1);
                    }
                    (Step::Update, self.write_op(t.candidate))
                }
            };
            t.step = next.0;
            match self.send(next.1, now, deadline, out) {
                None => return Progress::Pending,
                Some(r) => result = r,
            }
        }
    }

    /// The Get of a `Coordinated` elector answered (see `continue_try`): the next step, or the
    /// try's end. Kept apart: only coordinated electors take it.
    #[cold]
    #[inline(never)]
    fn coordinated_get(
        &mut self,
        t: &mut Try,
        now: Now,
        record: Record,
        out: &mut impl Sink,
    ) -> Result<(Step, LockOp), Progress> {
        // client-go leaderelection.go `tryCoordinatedRenew` (32ce75a7), in its order:
        // observe; "Lease has expired" (observedTime + the record's duration — 5 s
        // while the controller's install is fresh); not the holder; "end of term"
        // when preferredHolder is set (no release, no write); else renew keeping
        // acquireTime, transitions and strategy, without preferredHolder.
        let raw = record.raw(self.rules.raw_has_strategy);
        if self.observed_raw.as_ref() != Some(&raw) {
            self.set_observed(record, now);
            self.observed_raw = Some(raw);
        }
        if !self.coordinated_lease_valid(t.started) || !self.is_leader() {
            return Err(Progress::Done(false));
        }
        if record.preferred_holder != Sym::EMPTY {
            out.note(Note::EndOfTerm);
            return Err(Progress::Done(false));
        }
        keep_term(&mut t.candidate, &self.observed);
        t.candidate.strategy = self.observed.strategy;
        Ok((Step::Update, self.write_op(t.candidate)))
    }

    fn write_op(&self, record: Record) -> LockOp {
        LockOp::Update(record)
    }

    /// `tryCoordinatedRenew`'s test: expired only when `observedTime + duration` is *before*
    /// now (client-go `leaderelection.go:396` at HEAD, `:384` v0.36.0; docs/sources/client-go.md,
    /// Disagreements 1), so at the instant itself the holder still renews, where `isLeaseValid`
    /// (`After`) says it has expired.
    fn coordinated_lease_valid(&self, now: Now) -> bool {
        match (self.rules.expiry, self.observed_time) {
            (ExpiryRule::ObservedTime, Some(observed_at)) => {
                let duration = if self.rules.duration_from_record {
                    self.observed.lease_duration_seconds as i64 * NANOS_PER_SEC as i64
                } else {
                    self.timing.lease_duration as i64
                };
                observed_at + duration >= now.mono
            }
            _ => self.is_lease_valid(now),
        }
    }

    /// `isLeaseValid(now)` under this elector's expiry rule.
    fn is_lease_valid(&self, now: Now) -> bool {
        self.lease_valid(&self.observed, self.observed_time, now)
    }

    /// [`Self::is_lease_valid`] of an observation (`observed` at `observed_time`).
    #[inline]
    fn lease_valid(&self, observed: &Record, observed_time: Option<i64>, now: Now) -> bool {
        match self.rules.expiry {
            ExpiryRule::ObservedTime => {
                let Some(observed_at) = observed_time else { return false };
                let duration = if self.rules.duration_from_record {
                    observed.lease_duration_seconds as i64 * NANOS_PER_SEC as i64
                } else {
                    self.timing.lease_duration as i64
                };
                observed_at + duration > now.mono
            }
            ExpiryRule::RenewTime => match observed.renew_expiry_unix_nanos() {
                // Expired iff renewTime + duration < now.
                Some(expiry) => expiry >= now.wall,
                None => false,
            },
        }
    }

    fn set_observed(&mut self, record: Record, now: Now) {
        self.observed = record;
        self.observed_time = Some(now.mono);
    }

    fn maybe_report_transition(&mut self, out: &mut impl Sink) {
        if self.observed.holder_identity != self.reported_leader {
            self.reported_leader = self.observed.holder_identity;
            out.push(Output::NewLeader(self.reported_leader));
        }
    }

    // ---- plumbing -----------------------------------------------------------------------------

    /// Sends `op` bounded by the HTTP timeout and the context deadline; if the deadline has
    /// already passed the request is never sent and fails at once.
    fn send(&mut self, op: LockOp, now: Now, deadline: Option<i64>, out: &mut impl Sink) -> Option<LockResult> {
        let left = deadline.map(|d| d - now.mono);
        if matches!(left, Some(l) if l <= 0) {
            return Some(Err(LockError::ContextDone));
        }
        let timeout = match (self.timing.request_timeout, left) {
            (Some(t), Some(l)) => Some(t.min(l as Nanos)),
            (Some(t), None) => Some(t),
            (None, Some(l)) => Some(l as Nanos),
            (None, None) => None,
        };
        self.awaiting = true;
        out.push(Output::Send { op, timeout });
        None
    }

    fn abandon(&mut self, out: &mut impl Sink) {
        if self.awaiting {
            self.awaiting = false;
            out.push(Output::Abandon);
        }
    }

    fn arm(&mut self, kind: TimerKind, after: Nanos, out: &mut impl Sink) {
        self.generations[kind.index()] = self.generations[kind.index()].wrapping_add(1);
        out.push(Output::Timer { kind, after, generation: self.generations[kind.index()] });
    }

    fn cancel(&mut self, kind: TimerKind) {
        self.generations[kind.index()] = self.generations[kind.index()].wrapping_add(1);
    }
}

/// The holder's term goes on in `candidate`: its acquireTime and leaderTransitions as
/// `observed` has them (client-go's renewal and fast path keep both).
#[inline(always)]
fn keep_term(candidate: &mut Record, observed: &Record) {
    candidate.acquire_time_micros = observed.acquire_time_micros;
    candidate.leader_transitions = observed.leader_transitions;
}

/// What release() writes: no holder, `leaseDurationSeconds: 1` (so clients older than 1.14, which
/// do not take an empty holder at once, wait only a second), both times now, transitions kept.
fn released_record(now: Now, leader_transitions: i32) -> Record {
    Record {
        holder_identity: Sym::EMPTY,
        lease_duration_seconds: 1,
        acquire_time_micros: Some(micros_of(now.wall)),
        renew_time_micros: Some(micros_of(now.wall)),
        leader_transitions,
        ..Record::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elector::{Algorithm, ElectorConfig};

    /// client-go's `tryCoordinatedRenew` (`leaderelection.go:396` at HEAD, `:384` v0.36.0)
    /// calls the Lease expired only when `observedTime + LD` is *before* now; `isLeaseValid`
    /// (`:553`) uses `After`. At the instant itself the coordinated holder still renews, the
    /// plain one does not (docs/sources/client-go.md, Disagreements 1).
    #[test]
    fn a_coordinated_renew_at_the_exact_expiry_instant_is_still_valid() {
        let mut config = ElectorConfig::new("me", Algorithm::ClientGo);
        config.coordinated = true;
        let mut e = LoopElector::new(config, Sym(1), ComponentRng::new(1, "test"));
        let ld = e.config.lease_duration as i64;
        e.observed_time = Some(1_000);
        e.observed.lease_duration_seconds = (ld / NANOS_PER_SEC as i64) as i32;
        let at = |mono: i64| Now { mono, wall: mono };
        assert!(e.coordinated_lease_valid(at(1_000 + ld)), "valid at observedTime + LD exactly");
        assert!(!e.is_lease_valid(at(1_000 + ld)), "isLeaseValid: expired at that instant");
        assert!(!e.coordinated_lease_valid(at(1_000 + ld + 1)));
        assert!(e.is_lease_valid(at(1_000 + ld - 1)));
    }
}
