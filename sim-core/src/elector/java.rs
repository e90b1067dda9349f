//! kubernetes-client/java's `LeaderElector` (`extended/.../leaderelection/LeaderElector.java`,
//! read at `4c6b3119`), as docs/sources/java-client.md records it:
//! - expiry: `observedTime + OWN configured LD > now` on the **wall clock** (:338-344), where
//!   observedTime is when the record last differed (equals: holder, LD, transitions, both
//!   times); a record with a null holder or null times is taken at once (:310-325); holder ""
//!   is not free;
//! - every write is a PUT of the cached Lease (`leaseRefer`, LeaseLock.java:92-109) with its
//!   resourceVersion; Create 409 → false; any ApiException → false;
//! - `acquire()` (:174-218): a fixed-delay schedule, the delay `RP·(1 + 1.2·U)` drawn once per
//!   `acquire()`, each attempt waited on for RP (then cancelled); the caller thread polls the
//!   `acquired` flag every RP, so OnStartedLeading comes up to RP after the write;
//! - `renewLoop()` (:220-274): a round retries `tryAcquireOrRenew` every RP and is waited on for
//!   RD; success → sleep RP; failure or timeout → break, `stopLeadingHook` runs and `run()`
//!   **returns**: nothing re-acquires unless the caller calls `run()` again (after_lost:
//!   default `exit`, `rejoin` for a caller that loops);
//! - reads: a Lease without leaseDurationSeconds or leaseTransitions throws an NPE while
//!   unboxing (LeaseLock.java:121-133), so that try fails;
//! - `close()` (:413-468): if the local record says self, PUT of the cached Lease with holder,
//!   acquireTime and renewTime null, LD own, transitions kept (a stale resourceVersion → 409,
//!   "Failed to give up the lock"); modelled on a graceful stop when `release_on_cancel`.
//!
//! `version = "11.0.3"` (11.0.x, the first releases with `LeaseLock`): before `4797b083d6`
//! (PR #1460, first in 12.0.0) a record with a null holder or time goes to `createLock` (a 409
//! on an existing Lease, so a released Lease is never taken) and `close()` releases nothing.
//!
//! Not modelled: the read timeout is unlimited (`readTimeout = 0`, ClientBuilder.java:70-71)
//! but a cancelled attempt's request is abandoned here (in the real client a hung request that
//! ignores interrupts keeps blocking the single lease worker); the executors' shutdown waits.

use super::ElectorLoop;
use super::Outputs;
use super::WriteShape;
use super::config::ConfigError;
use super::io::{Io, fresh_record, wall_ms};
use super::{ElectorConfig, Fields, Generation, LockError, LockOp, LockResult, Note, Now, Output, Record, TimerKind};
use crate::rng::ComponentRng;
use crate::sym::Sym;
use crate::time::Nanos;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Get,
    Create,
    Put,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// An acquire attempt in flight (waited on for RP).
    Acquiring,
    /// Waiting for the next acquire attempt (fixed delay D).
    AcquireWait,
    /// Acquired; waiting for the caller thread's next poll of the flag.
    PollWait,
    /// A renew round's attempt in flight (the round is waited on for RD).
    Renewing,
    /// Sleeping RP inside a round after a failed attempt.
    RoundSleep,
    /// Sleeping RP after a successful round.
    BetweenRounds,
    /// `close()`'s PUT.
    Releasing,
    Done,
}

#[derive(Debug)]
pub struct JavaElector {
    config: Arc<ElectorConfig>,
    me: Sym,
    io: Io,
    observed: Option<Record>,
    observed_ms: i64,
    phase: Phase,
    step: Step,
    started: Now,
    candidate: Record,
    /// `acquire()`'s fixed delay, drawn once.
    delay: Nanos,
    /// The caller thread's polls are at `poll_anchor + k·RP`.
    poll_anchor: i64,
    leading: bool,
    /// `version = "11.0.3"` (11.0.0–11.0.x, before `4797b083d6`, PR #1460, first in 12.0.0): a
    /// record with a null holder or time is "created" (a 409 on an existing Lease, for ever),
    /// and `close()` only shuts the executors down (no release).
    before_12: bool,
}

impl JavaElector {
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym, mut rng: ComponentRng) -> Self {
        let config: Arc<ElectorConfig> = config.into();
        let rp = config.retry_period;
        let delay = rp + (rp as f64 * config.jitter_factor * rng.unit_f64()) as Nanos;
        let before_12 = config.version >= 1;
        JavaElector {
            config,
            me,
            io: Io::default(),
            observed: None,
            observed_ms: 0,
            phase: Phase::Idle,
            step: Step::Get,
            started: Now { mono: 0, wall: 0 },
            candidate: Record::default(),
            delay,
            poll_anchor: 0,
            leading: false,
            before_12,
        }
    }

    fn acquire_attempt(&mut self, now: Now, out: &mut Outputs) {
        self.phase = Phase::Acquiring;
        // future.get(RP): the attempt is cancelled after RetryPeriod.
        self.io.arm(TimerKind::RoundDeadline, self.config.retry_period, out);
        self.begin_try(now, out);
    }

    fn begin_try(&mut self, now: Now, out: &mut Outputs) {
        self.started = now;
        self.candidate = fresh_record(self.me, self.config.lease_duration_seconds(), now, 0);
        self.step = Step::Get;
        self.io.send(LockOp::Get, self.config.request_timeout, out);
    }

    fn started_leading(&mut self, now: Now, out: &mut Outputs) {
        // hookWorkers.submit(startLeadingHook), then renewLoop() at once.
        self.leading = true;
        out.push(Output::StartedLeading);
        self.begin_round(now, out);
    }

    fn begin_round(&mut self, now: Now, out: &mut Outputs) {
        self.phase = Phase::Renewing;
        self.io.arm(TimerKind::RoundDeadline, self.config.renew_deadline, out);
        self.begin_try(now, out);
    }

    /// `tryAcquireOrRenew` (:276-366): `None` while a request is in flight.
    fn continue_try(&mut self, now: Now, result: LockResult, out: &mut Outputs) -> Option<bool> {
        match (self.step, result) {
            (Step::Get, Err(LockError::NotFound)) => {
                self.step = Step::Create;
                self.io.send(LockOp::Create(self.candidate), self.config.request_timeout, out);
                None
            }
            (Step::Get, Ok(old)) => {
                // LeaseLock.java:121-133: int unboxing of an absent duration or transitions.
                if old.absent.has(Fields::DURATION) || old.absent.has(Fields::TRANSITIONS) {
                    out.note(Note::FailedToAcquire);
                    return Some(false);
                }
                let empty =
                    old.absent.has(Fields::ACQUIRE) || old.absent.has(Fields::RENEW) || old.absent.has(Fields::HOLDER);
                if empty && self.before_12 {
                    // 11.0.3 LE:268-273: createLock, which the existing object turns into a 409.
                    self.step = Step::Create;
                    self.io.send(LockOp::Create(self.candidate), self.config.request_timeout, out);
                    return None;
                }
                if empty {
                    // :310-325: no expiry check.
                    self.candidate.leader_transitions = old.leader_transitions + 1;
                } else {
                    let same = self.observed.is_some_and(|o| {
                        o.holder_identity == old.holder_identity
                            && o.lease_duration_seconds == old.lease_duration_seconds
                            && o.leader_transitions == old.leader_transitions
                            && o.acquire_time_micros == old.acquire_time_micros
                            && o.renew_time_micros == old.renew_time_micros
                    });
                    if !same {
                        self.observed = Some(old);
                        self.observed_ms = wall_ms(now);
                    }
                    if !self.expired(wall_ms(self.started)) && old.holder_identity != self.me {
                        out.note(Note::HeldByAnother);
                        return Some(false);
                    }
                    if old.holder_identity == self.me {
                        self.candidate.acquire_time_micros = old.acquire_time_micros;
                        self.candidate.leader_transitions = old.leader_transitions;
                    } else {
                        self.candidate.leader_transitions = old.leader_transitions + 1;
                    }
                }
                self.step = Step::Put;
                self.io.send(LockOp::Write(self.candidate, WriteShape::PUT), self.config.request_timeout, out);
                None
            }
            (Step::Create | Step::Put, Ok(_)) => {
                self.observed = Some(self.candidate);
                self.observed_ms = wall_ms(now);
                Some(true)
            }
            (_, Err(_)) => Some(false),
        }
    }

    /// `run()`'s `finally`: `stopLeadingHook` synchronously, then `run()` returns.
    fn stop_leading(&mut self, _now: Now, out: &mut Outputs) {
        self.io.cancel_all();
        if std::mem::take(&mut self.leading) {
            out.push(Output::StoppedLeading);
        }
        self.finish(out);
    }

    fn finish(&mut self, out: &mut Outputs) {
        self.io.cancel_all();
        self.phase = Phase::Done;
        out.push(Output::Exited);
    }
}

impl JavaElector {
    /// The expiry decision (:338-344): `observedTime + own LD <= now`, wall milliseconds.
    fn expired(&self, now_ms: i64) -> bool {
        self.observed_ms + (self.config.lease_duration / 1_000_000) as i64 <= now_ms
    }
}

impl ElectorLoop for JavaElector {
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
        self.poll_anchor = now.mono;
        self.acquire_attempt(now, out);
    }

    fn on_timer(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut Outputs) {
        if !self.io.live(kind, generation) {
            return;
        }
        match (kind, self.phase) {
            (TimerKind::RoundDeadline, Phase::Acquiring) => {
                // cancel(true): the attempt counts as not acquired; the next one follows D later.
                self.io.abandon(out);
                out.note(Note::FailedToAcquire);
                self.phase = Phase::AcquireWait;
                self.io.arm(TimerKind::Retry, self.delay, out);
            }
            (TimerKind::Retry, Phase::AcquireWait) => self.acquire_attempt(now, out),
            (TimerKind::Retry, Phase::PollWait) => self.started_leading(now, out),
            (TimerKind::RoundDeadline, Phase::Renewing | Phase::RoundSleep) => {
                // f.get(RD) timed out: f.cancel(true), break.
                self.io.abandon(out);
                out.note(Note::FailedToRenew);
                self.stop_leading(now, out);
            }
            (TimerKind::RoundTick, Phase::RoundSleep) => {
                self.phase = Phase::Renewing;
                self.begin_try(now, out);
            }
            (TimerKind::NextRound, Phase::BetweenRounds) => self.begin_round(now, out),
            _ => {}
        }
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        self.io.awaiting = false;
        if self.phase == Phase::Releasing {
            out.note(if result.is_ok() { Note::Released } else { Note::ReleaseFailed });
            self.finish(out);
            return;
        }
        let Some(ok) = self.continue_try(now, result, out) else { return };
        match self.phase {
            Phase::Acquiring if ok => {
                self.io.cancel(TimerKind::RoundDeadline);
                out.note(Note::AcquiredLease);
                // The caller thread sees the flag at its next poll (sleep(RP) loop).
                let rp = self.config.retry_period as i64;
                let k = (now.mono - self.poll_anchor + rp - 1).div_euclid(rp).max(0);
                let at = self.poll_anchor + k * rp;
                if at <= now.mono {
                    self.started_leading(now, out);
                } else {
                    self.phase = Phase::PollWait;
                    self.io.arm(TimerKind::Retry, (at - now.mono) as Nanos, out);
                }
            }
            Phase::Acquiring => {
                self.io.cancel(TimerKind::RoundDeadline);
                out.note(Note::FailedToAcquire);
                self.phase = Phase::AcquireWait;
                self.io.arm(TimerKind::Retry, self.delay, out);
            }
            Phase::Renewing if ok => {
                self.io.cancel(TimerKind::RoundDeadline);
                out.note(Note::RenewedLease);
                self.phase = Phase::BetweenRounds;
                self.io.arm(TimerKind::NextRound, self.config.retry_period, out);
            }
            Phase::Renewing => {
                self.phase = Phase::RoundSleep;
                self.io.arm(TimerKind::RoundTick, self.config.retry_period, out);
            }
            _ => {}
        }
    }

    /// `close()` on a graceful stop: the executors are shut down (the renew loop is
    /// interrupted, `stopLeadingHook` runs), then the release PUT if the local record says self.
    fn stop(&mut self, _now: Now, out: &mut Outputs) {
        if matches!(self.phase, Phase::Done | Phase::Releasing) {
            return;
        }
        self.io.abandon(out);
        self.io.cancel_all();
        if std::mem::take(&mut self.leading) {
            out.push(Output::StoppedLeading);
        }
        // Before 12.0.0 `close()` only shuts the executors down (11.0.3 LE:347-351).
        if self.config.release_on_cancel && self.is_leader() && !self.before_12 {
            let transitions = self.observed.map(|o| o.leader_transitions).unwrap_or(0);
            let released = Record {
                holder_identity: Sym::EMPTY,
                lease_duration_seconds: self.config.lease_duration_seconds(),
                leader_transitions: transitions,
                ..Record::default()
            };
            let shape = WriteShape::PUT.nulls(Fields::HOLDER.with(Fields::ACQUIRE).with(Fields::RENEW));
            self.phase = Phase::Releasing;
            self.io.send(LockOp::Write(released, shape), self.config.request_timeout, out);
            return;
        }
        self.finish(out);
    }

    fn lease_expired(&self, now: Now) -> Option<bool> {
        self.observed.map(|_| self.expired(wall_ms(now)))
    }
}

/// LeaderElector.java:71-105: LD > RD > RP > 0, no jitter factor.
pub(super) fn validate(c: &ElectorConfig) -> Result<(), ConfigError> {
    use super::config::ConfigKey::{RenewDeadline, RetryPeriod};
    if c.lease_duration <= c.renew_deadline {
        return Err(ConfigError::ordering(RenewDeadline, "leaseDuration must be greater than renewDeadline"));
    }
    if c.renew_deadline <= c.retry_period {
        return Err(ConfigError::new(RenewDeadline, "renewDeadline must be greater than retryPeriod"));
    }
    if c.retry_period == 0 {
        return Err(ConfigError::new(RetryPeriod, "retryPeriod must be greater than zero"));
    }
    Ok(())
}
