//! fabric8io/kubernetes-client's `LeaderElector` (Java, v7.7.0 by default; read at `ceb92181`), as
//! docs/sources/fabric8.md records it from `kubernetes-client-api/.../extended/leaderelection/`
//! (`LeaderElector.java`, "LE" below; `resourcelock/LeaseLock.java`, `ResourceLock.java`):
//! - expiry on the **wall clock**: `now > renewTime + record.leaseDurationSeconds`
//!   (LE:278-281, 300-302; the record's duration since `e65b32915c`, v7.5.0); an empty or
//!   absent holder is free;
//! - loops are `scheduleWithVariableRate` chains (Utils:510-538): a tick is due at the last due
//!   time plus its delay and runs at once when overdue; acquire waits `RP + RP·U[0,1)·1.2`,
//!   drawn per tick (LE:170-193); renew every RP without jitter (LE:195-219);
//! - renew: `if wall_ms > renewBy: stop` checked only at the *start* of a tick; a successful
//!   try sets `renewBy = wall_ms + RD` (rolling from the last success); a try that finds the
//!   lease validly held by another ends the loop; an error (KubernetesClientException, a 409
//!   included) keeps ticking;
//! - every write is a JSON merge patch of the whole spec carrying the resourceVersion of the
//!   last Get or Create (the patch response is discarded; ResourceLock:47-65), so a stale view
//!   gets a 409; leaseTransitions +1 only on a change of holder (LE:243-248);
//! - callbacks fire from `updateObserved` (LE:254-272) on a change of holder: onStopLeading if
//!   the previous holder was self, else onStartLeading if the new one is self; since
//!   `094ff8c999` (v7.7.0) a Get result is observed only when it is not self;
//! - `stopLeading` (LE:84-144): with releaseOnCancel, `release()` (LE:152-168) re-reads and
//!   patches `{holder: null, LD: 1, times now}` only if the fresh record names self; the
//!   merge patch omits null fields (`LeaseSpec` is `@JsonInclude(NON_NULL)`), so the server
//!   **keeps holder = self** with LD 1 (notes §9.5);
//! - the HTTP layer (StandardHttpClient:177-210) retries a refused connection and 429/5xx up to
//!   10 times after 100·2^min(i,5) ms; a request timeout (10 s, Config:128) is not retried;
//! - a Lease without leaseDurationSeconds, acquireTime or renewTime makes `toRecord` throw an
//!   NPE (LeaderElectionRecord:47-57), which ends the loop: the elector is dead, the process
//!   runs on.
//!
//! The `version` key picks an older release ([`Release`]): "7.5.0" (7.5.x–7.6.x) observes a Get
//! naming self before the write, so `onStartLeading` fires before the patch (#7350, fixed by
//! `094ff8c999` in 7.7.0); "6.9.0" (6.9.x–7.4.x) also judges expiry by its own LD and releases
//! by writing holder `""` (`e65b32915c`, `2e72b95aba` in 7.5.0); "6.8.1" (6.6.0–6.8.x: the
//! JSON merge patch release since `f91e0bd8e3`) also skips `onStopLeading` with releaseOnCancel
//! unless the release succeeds, and hangs `start()` when the release's Get fails (`0f6c696509`,
//! #5463, fixed in 6.9.0).
//!
//! Not modelled: the 15 s fail-safe per attempt, connect timeouts distinct from read timeouts,
//! releases before 6.6.0.

use super::ElectorLoop;
use super::Outputs;
use super::config::ConfigError;
use super::io::{Io, fresh_record, wall_ms};
use super::record::micros_of;
use super::{
    ElectorConfig, Fields, Generation, LockError, LockOp, LockResult, Note, Now, Output, Record, TimerKind, WriteShape,
};
use crate::rng::ComponentRng;
use crate::sym::Sym;
use crate::time::Nanos;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Get,
    Create,
    Patch,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loop {
    Acquire,
    Renew,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// A tick of `which` loop is running `tryAcquireOrRenew`.
    Trying(Loop),
    /// Waiting for the next tick of `which` loop.
    Waiting(Loop),
    /// `release()`: its Get or its patch.
    Releasing(Step),
    Done,
}

/// What changed between the modelled releases (docs/sources/fabric8.md, `version` key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Release {
    /// Before 7.7.0: every Get result is observed, one naming self included, before the write.
    observes_own_get: bool,
    /// Before 7.5.0: expiry by the elector's own LD, not the record's.
    own_lease_duration: bool,
    /// Before 7.5.0: the release writes holder `""` (since, `null`, which the merge patch omits).
    release_empties_holder: bool,
    /// Before 6.9.0 (`0f6c696509`, #5463): with releaseOnCancel, `stopLeading` only releases;
    /// `onStopLeading` fires only from a successful release's `updateObserved`. A release that
    /// finds another holder returns silently, a failed patch is logged, and a failed Get throws
    /// out of `stopLeading` (v6.8.1 LE:117-154).
    stop_only_after_release: bool,
}

impl Release {
    /// `config.version` indexes the library row's `versions`: "7.7.0", "7.5.0", "6.9.0", "6.8.1".
    fn of(config: &ElectorConfig) -> Release {
        Release {
            observes_own_get: config.version >= 1,
            own_lease_duration: config.version >= 2,
            release_empties_holder: config.version >= 2,
            stop_only_after_release: config.version >= 3,
        }
    }
}

#[derive(Debug)]
pub struct Fabric8Elector {
    release: Release,
    config: Arc<ElectorConfig>,
    me: Sym,
    rng: ComponentRng,
    io: Io,
    observed: Option<Record>,
    phase: Phase,
    step: Step,
    candidate: Record,
    /// Local monotonic time the running (or next) tick was due.
    due: i64,
    renew_by_ms: i64,
    stopped: bool,
    /// HTTP retries of the request in flight so far, and the request itself.
    retries: u32,
    in_flight: Option<LockOp>,
}

impl Fabric8Elector {
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym, rng: ComponentRng) -> Self {
        let config: Arc<ElectorConfig> = config.into();
        Fabric8Elector {
            release: Release::of(&config),
            config,
            me,
            rng,
            io: Io::default(),
            observed: None,
            phase: Phase::Idle,
            step: Step::Get,
            candidate: Record::default(),
            due: 0,
            renew_by_ms: 0,
            stopped: false,
            retries: 0,
            in_flight: None,
        }
    }

    /// One tick of a loop (Utils:510-538 runs it when due).
    fn tick(&mut self, which: Loop, now: Now, out: &mut Outputs) {
        // LE:198-200: the renew deadline is checked at the start of a tick only.
        if which == Loop::Renew && wall_ms(now) > self.renew_by_ms {
            out.note(Note::FailedToRenew);
            self.stop_leading(now, out);
            return;
        }
        if self.stopped {
            self.after_try(which, Ok(false), now, out);
            return;
        }
        self.phase = Phase::Trying(which);
        self.candidate = fresh_record(self.me, self.config.lease_duration_seconds(), now, 0);
        self.step = Step::Get;
        self.send(LockOp::Get, out);
    }

    fn send(&mut self, op: LockOp, out: &mut Outputs) {
        self.retries = 0;
        self.in_flight = Some(op);
        self.io.send(op, self.config.request_timeout, out);
    }

    /// `tryAcquireOrRenew` (LE:221-252): `None` while a request is in flight; `Err(())` for a
    /// KubernetesClientException; `Err` from a missing field is an NPE, handled here.
    fn continue_try(&mut self, now: Now, result: LockResult, out: &mut Outputs) -> Option<Result<bool, ()>> {
        match (self.step, result) {
            (Step::Get, Err(LockError::NotFound)) => {
                self.step = Step::Create;
                self.send(LockOp::Create(self.candidate), out);
                None
            }
            (Step::Get, Ok(old)) => {
                // LeaseLock.toRecord: Duration.ofSeconds(null) and requireNonNull throw.
                if old.absent.has(Fields::DURATION) || old.absent.has(Fields::ACQUIRE) || old.absent.has(Fields::RENEW)
                {
                    self.die("NullPointerException in LeaseLock.toRecord (a field is absent)", out);
                    return None;
                }
                let is_leader = old.holder_identity == self.me;
                if self.release.observes_own_get && is_leader {
                    // v7.6.1 LE:221-250: observed before the write; a fresh elector that finds
                    // itself named starts leading here, patch or no patch (#7350).
                    self.update_observed(old, out);
                }
                if !is_leader {
                    self.update_observed(old, out);
                    let free = old.holder_is_empty() || self.expired(&old, now);
                    if !free {
                        out.note(Note::HeldByAnother);
                        return Some(Ok(false));
                    }
                }
                self.candidate.acquire_time_micros =
                    if is_leader { old.acquire_time_micros } else { Some(micros_of(self.started_wall())) };
                self.candidate.leader_transitions = old.leader_transitions + if is_leader { 0 } else { 1 };
                self.step = Step::Patch;
                self.send(LockOp::Write(self.candidate, WriteShape::patch(true)), out);
                None
            }
            (Step::Create | Step::Patch, Ok(_)) => {
                let written = self.candidate;
                self.update_observed(written, out);
                Some(Ok(true))
            }
            (_, Err(_)) => Some(Err(())),
        }
    }

    fn started_wall(&self) -> i64 {
        self.candidate.renew_time_micros.unwrap_or(0) * 1_000
    }

    fn after_try(&mut self, which: Loop, outcome: Result<bool, ()>, now: Now, out: &mut Outputs) {
        match (which, outcome) {
            (Loop::Acquire, Ok(true)) => {
                out.note(Note::AcquiredLease);
                // The renew loop starts at once (LE:195): a second Get and patch follow.
                self.renew_by_ms = wall_ms(now) + (self.config.renew_deadline / 1_000_000) as i64;
                self.due = now.mono;
                self.tick(Loop::Renew, now, out);
            }
            (Loop::Acquire, _) => {
                if outcome.is_err() {
                    out.note(Note::FailedToAcquire);
                }
                let rp = self.config.retry_period;
                let delay = rp + (self.rng.unit_f64() * self.config.jitter_factor * rp as f64) as Nanos;
                self.wait_next(Loop::Acquire, delay, now, out);
            }
            (Loop::Renew, Ok(true)) => {
                self.renew_by_ms = wall_ms(now) + (self.config.renew_deadline / 1_000_000) as i64;
                out.note(Note::RenewedLease);
                self.wait_next(Loop::Renew, self.config.retry_period, now, out);
            }
            // Held by another: the renew future completes → stopLeading.
            (Loop::Renew, Ok(false)) => self.stop_leading(now, out),
            (Loop::Renew, Err(())) => {
                out.note(Note::FailedToRenew);
                self.wait_next(Loop::Renew, self.config.retry_period, now, out);
            }
        }
    }

    /// The next tick of a fixed-rate chain: due at the last due time plus `delay`, at once if
    /// that has passed.
    fn wait_next(&mut self, which: Loop, delay: Nanos, now: Now, out: &mut Outputs) {
        self.due += delay as i64;
        if self.due <= now.mono {
            self.tick(which, now, out);
        } else {
            self.phase = Phase::Waiting(which);
            self.io.arm(TimerKind::Retry, (self.due - now.mono) as Nanos, out);
        }
    }

    /// `updateObserved` (LE:254-272): callbacks on a change of holder, synchronously.
    fn update_observed(&mut self, record: Record, out: &mut Outputs) {
        let previous = self.observed;
        if previous == Some(record) {
            return;
        }
        self.observed = Some(record);
        let before = previous.map(|r| r.holder_identity).unwrap_or(Sym::EMPTY);
        let after = record.holder_identity;
        if before != after {
            out.push(Output::NewLeader(after));
            if previous.is_some() && before == self.me {
                out.push(Output::StoppedLeading);
            } else if after == self.me {
                out.push(Output::StartedLeading);
            }
        }
    }

    /// `stopLeading()` (LE:84-144), after the renew future completed or was cancelled.
    fn stop_leading(&mut self, _now: Now, out: &mut Outputs) {
        self.stopped = true;
        self.io.cancel(TimerKind::Retry);
        if !self.is_leader() {
            self.finish(out);
            return;
        }
        if self.config.release_on_cancel {
            // The record is stamped when the Get has answered (LE:153 reads, LE:157 takes now).
            self.phase = Phase::Releasing(Step::Get);
            self.send(LockOp::Get, out);
            return;
        }
        out.push(Output::StoppedLeading);
        self.finish(out);
    }

    /// `release()` (LE:152-168).
    fn continue_release(&mut self, step: Step, now: Now, result: LockResult, out: &mut Outputs) {
        match (step, result) {
            (Step::Get, Ok(current)) if current.holder_identity == self.me => {
                self.candidate = fresh_record(self.me, 1, now, 0);
                self.candidate.leader_transitions = current.leader_transitions;
                // holderIdentity null is left out of the merge patch (NON_NULL): the server
                // keeps holder = self, with LD 1 and both times now. Before 7.5.0 it wrote "".
                let shape = if self.release.release_empties_holder {
                    self.candidate.holder_identity = Sym::EMPTY;
                    WriteShape::patch(true)
                } else {
                    WriteShape::patch(true).keep(Fields::HOLDER)
                };
                self.phase = Phase::Releasing(Step::Patch);
                self.send(LockOp::Write(self.candidate, shape), out);
            }
            (Step::Patch, Ok(_)) => {
                out.note(Note::Released);
                // updateObserved(holder null): self → null fires onStopLeading.
                let released = Record { holder_identity: Sym::EMPTY, ..self.candidate };
                self.update_observed(released, out);
                self.finish(out);
            }
            // Before 6.9.0 (v6.8.1 LE:117-154): no onStopLeading. The Get is outside the
            // release's try: its exception leaves `stopLeading` inside the renew future's
            // `whenComplete`, so `start()`'s future never completes and the leader's work runs
            // on; another holder found, or a failed patch (caught and logged), and it returns.
            (Step::Get, Err(_)) if self.release.stop_only_after_release => {
                out.note(Note::ReleaseFailed);
                self.stopped = true;
                self.io.cancel_all();
                self.phase = Phase::Done;
                out.push(Output::Exception("KubernetesClientException from release()'s Get, out of stopLeading"));
            }
            _ if self.release.stop_only_after_release => {
                out.note(Note::ReleaseFailed);
                self.finish(out);
            }
            // Not self (release returns false) or a KubernetesClientException: onStopLeading.
            _ => {
                out.note(Note::ReleaseFailed);
                out.push(Output::StoppedLeading);
                self.finish(out);
            }
        }
    }

    /// An unchecked exception ends the loop (Utils:529-531); `stopLeading` runs; the `start()`
    /// future never completes, so the process does not return from waiting on it.
    fn die(&mut self, what: &'static str, out: &mut Outputs) {
        if self.is_leader() {
            out.push(Output::StoppedLeading);
        }
        out.push(Output::Exception(what));
        self.stopped = true;
        self.io.cancel_all();
        self.phase = Phase::Done;
    }

    fn finish(&mut self, out: &mut Outputs) {
        self.io.cancel_all();
        self.phase = Phase::Done;
        out.push(Output::Exited);
    }
}

impl Fabric8Elector {
    /// The expiry decision (LE:278-281, 300-302): `now > renewTime + record.leaseDurationSeconds`
    /// on the wall clock; before 7.5.0, `+ its own leaseDuration`.
    fn expired(&self, record: &Record, now: Now) -> bool {
        if self.release.own_lease_duration {
            let renew = record.renew_time_micros.map(|m| m * 1_000);
            return renew.is_some_and(|r| now.wall > r + self.config.lease_duration as i64);
        }
        record.renew_expiry_unix_nanos().is_some_and(|e| now.wall > e)
    }
}

impl ElectorLoop for Fabric8Elector {
    fn config(&self) -> &ElectorConfig {
        &self.config
    }

    fn is_leader(&self) -> bool {
        self.observed.is_some_and(|r| r.holder_identity == self.me)
    }

    fn awaiting_result(&self) -> bool {
        self.io.awaiting
    }

    fn start(&mut self, now: Now, out: &mut Outputs) {
        if self.phase != Phase::Idle {
            return;
        }
        out.note(Note::AttemptingToAcquire);
        self.due = now.mono;
        self.tick(Loop::Acquire, now, out);
    }

    fn on_timer(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut Outputs) {
        if !self.io.live(kind, generation) {
            return;
        }
        match (kind, self.phase) {
            (TimerKind::Retry, Phase::Waiting(which)) => self.tick(which, now, out),
            // The HTTP layer's back-off before the same request again.
            (TimerKind::Delay, _) => {
                if let Some(op) = self.in_flight {
                    self.io.send(op, self.config.request_timeout, out);
                }
            }
            _ => {}
        }
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        self.io.awaiting = false;
        // StandardHttpClient.shouldRetry (:177-210): IOExceptions and 429/5xx, ten times.
        let retryable = matches!(result, Err(LockError::Refused))
            || matches!(result, Err(LockError::Status(c) | LockError::NotStatus(c)) if c == 429 || c >= 500);
        if retryable && self.retries < 10 && self.in_flight.is_some() {
            let wait = 100_000_000u64 << self.retries.min(5);
            self.retries += 1;
            self.io.arm(TimerKind::Delay, wait, out);
            return;
        }
        self.in_flight = None;
        match self.phase {
            Phase::Trying(which) => {
                let outcome = self.continue_try(now, result, out);
                if let Some(outcome) = outcome {
                    self.after_try(which, outcome, now, out);
                }
            }
            Phase::Releasing(step) => self.continue_release(step, now, result, out),
            _ => {}
        }
    }

    /// Cancelling the `start()` future: renew is cancelled, then `stopLeading()`.
    fn stop(&mut self, now: Now, out: &mut Outputs) {
        match self.phase {
            Phase::Done | Phase::Releasing(_) => {}
            _ => {
                self.io.abandon(out);
                self.in_flight = None;
                self.io.cancel(TimerKind::Delay);
                self.stop_leading(now, out);
            }
        }
    }

    fn lease_expired(&self, now: Now) -> Option<bool> {
        self.observed.map(|r| self.expired(&r, now))
    }
}

/// `LeaderElectorBuilder.withConfig` (Builder:46-72; docs/sources/fabric8.md), in its order,
/// words and units: the orderings compare exact `java.time.Duration`s (nanoseconds) against a
/// bound of RP plus `ceil(RP.toMillis() · 1.2)` whole milliseconds; the zero checks use
/// `toMillis()`, which truncates. `new LeaderElector(...)` skips it.
pub(super) fn validate(c: &ElectorConfig) -> Result<(), ConfigError> {
    use super::config::ConfigKey::{LeaseDuration, RenewDeadline, RetryPeriod};
    if c.lease_duration <= c.renew_deadline {
        // "renewDeadLine", with its capital L (Builder:54-56).
        return Err(ConfigError::ordering(RenewDeadline, "leaseDuration must be greater than renewDeadLine"));
    }
    let to_millis = |n: Nanos| n / 1_000_000;
    // `(long) Math.ceil(retryPeriod.toMillis() * 1.2)` in doubles (Builder:57-58).
    let jitter_ms = (to_millis(c.retry_period) as f64 * 1.2).ceil() as Nanos;
    if c.renew_deadline <= c.retry_period + jitter_ms * 1_000_000 {
        return Err(ConfigError::ordering(
            RenewDeadline,
            "renewDeadline must be greater than retryPeriod + retryPeriod*JITTER_FACTOR",
        ));
    }
    for (key, value, text) in [
        (LeaseDuration, c.lease_duration, "leaseDuration must be greater than zero"),
        (RenewDeadline, c.renew_deadline, "renewDeadline must be greater than zero"),
        (RetryPeriod, c.retry_period, "retryPeriod must be greater than zero"),
    ] {
        if to_millis(value) < 1 {
            return Err(ConfigError::new(key, text));
        }
    }
    Ok(())
}
