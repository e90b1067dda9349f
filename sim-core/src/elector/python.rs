//! The official Python client's leader election (`kubernetes/leaderelection/leaderelection.py`
//! and `resourcelock/leaselock.py`, released in 37.0.0; read at kubernetes-client/python
//! 024658493d12 and the 37.x wheels, docs/sources/python-client.md). The `version` key picks
//! "37.0.0" (the default), "37.0.0a1" or "36.0.3" (whose released lock is the ConfigMap lock:
//! leasesim runs that release's loop on the Lease). The loop:
//! - every wait is exactly RetryPeriod (no jitter); the first try is immediate;
//! - every try is a GET then, if allowed, a PUT with the GET's resourceVersion (no fast path);
//! - expiry: `observed_time_ms + own lease_duration·1000 > now_ms`, where observed_time is the
//!   wall clock (`time.time()`) when the record (holder, duration, acquire, renew) last
//!   differed; a record with an empty holder, no duration or no times is taken at once;
//! - times are sent as `isoformat()`, which drops a zero fraction: a write at a whole second is
//!   refused by the server (400), see `crate::lock`;
//! - renew rounds: `deadline = now + renew_deadline`, checked only *between* attempts, after a
//!   RetryPeriod sleep; after a successful round, sleep RetryPeriod;
//! - API calls carry no timeout: a request whose response never comes hangs the loop, and the
//!   process keeps leading;
//! - no release; leaseTransitions is never written; after a failed round `run()` returns;
//! - the lock catches only `ApiException`: a timeout (when the user set one) or a refused
//!   connection is raised by urllib3 (`MaxRetryError`, after its retries: read timeouts of GET
//!   and PUT are retried three times, a POST's is not, refused connects are retried at once);
//!   before 37.0.0 (37.0.0a1, 36.0.3) an error body that is not JSON on a GET makes
//!   `json.loads` raise too (37.0.0 takes it as a failed try, PR #2707); any of these escapes
//!   `try_acquire_or_renew` and `run()`, and `onstopped_leading` is never called;
//! - from 37.0.0a1 (`c0b60e0805`, PR #2670) a raising `onstarted_leading` sets an Event that
//!   `renew_loop` checks at the top of each round: the loop returns, `onstopped_leading` is
//!   called, nothing is released ([`ElectorLoop::work_raised`]).

use super::ElectorLoop;
use super::Outputs;
use super::record::{Record, micros_of};
use super::{ElectorConfig, Generation, LockError, LockOp, LockResult, Note, Now, Output, TimerKind};
use crate::sym::Sym;
use crate::time::NANOS_PER_SEC;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Get,
    Create,
    Update,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Acquiring,
    WaitingRetry,
    /// In a renew round whose deadline is this wall-clock millisecond.
    Renewing {
        deadline_ms: i64,
    },
    /// Sleeping RetryPeriod inside a round after a failed attempt.
    RetrySleep {
        deadline_ms: i64,
    },
    BetweenRounds,
    Done,
}

#[derive(Debug)]
pub struct PythonElector {
    config: Arc<ElectorConfig>,
    /// The interned `config.identity`.
    me: Sym,
    observed: Option<Record>,
    observed_time_ms: i64,
    phase: Phase,
    step: Step,
    started: Now,
    candidate: Record,
    generation: Generation,
    awaiting: bool,
    /// urllib3's retries of the request in flight so far (`Retry(3)`: three).
    transport_retries: u8,
    /// The leader's callback raised (37.0.0a1 and later watch for it).
    work_raised: bool,
}

fn wall_ms(now: Now) -> i64 {
    // int(time.time() * 1000)
    now.wall.div_euclid(1_000_000)
}

impl PythonElector {
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym) -> Self {
        let config: Arc<ElectorConfig> = config.into();
        PythonElector {
            config,
            me,
            observed: None,
            observed_time_ms: 0,
            phase: Phase::Idle,
            step: Step::Get,
            started: Now { mono: 0, wall: 0 },
            candidate: Record::default(),
            generation: 0,
            awaiting: false,
            transport_retries: 0,
            work_raised: false,
        }
    }

    /// `while timeout > int(time.time() * 1000): try ...`: the deadline is checked before each
    /// attempt only.
    fn attempt_in_round(&mut self, deadline_ms: i64, now: Now, out: &mut Outputs) {
        if deadline_ms > wall_ms(now) {
            self.phase = Phase::Renewing { deadline_ms };
            self.begin_try(now, out);
        } else {
            out.note(Note::FailedToRenew);
            self.finish(out);
        }
    }

    fn after_try(&mut self, ok: bool, _now: Now, out: &mut Outputs) {
        let rp = self.config.retry_period;
        match self.phase {
            Phase::Acquiring if ok => {
                out.note(Note::AcquiredLease);
                out.push(Output::StartedLeading);
                // The renew loop starts with an immediate round.
                let deadline_ms = wall_ms(_now) + (self.config.renew_deadline / 1_000_000) as i64;
                self.phase = Phase::Renewing { deadline_ms };
                self.begin_try(_now, out);
            }
            Phase::Acquiring => {
                out.note(Note::FailedToAcquire);
                self.phase = Phase::WaitingRetry;
                self.arm(TimerKind::Retry, rp, out);
            }
            Phase::Renewing { .. } if ok => {
                out.note(Note::RenewedLease);
                self.phase = Phase::BetweenRounds;
                self.arm(TimerKind::NextRound, rp, out);
            }
            Phase::Renewing { deadline_ms } => {
                self.phase = Phase::RetrySleep { deadline_ms };
                self.arm(TimerKind::RoundTick, rp, out);
            }
            _ => {}
        }
    }

    fn begin_try(&mut self, now: Now, out: &mut Outputs) {
        self.started = now;
        self.candidate = Record {
            holder_identity: self.me,
            lease_duration_seconds: (self.config.lease_duration / NANOS_PER_SEC) as i32,
            acquire_time_micros: Some(micros_of(now.wall)),
            renew_time_micros: Some(micros_of(now.wall)),
            leader_transitions: 0,
            ..Record::default()
        };
        self.step = Step::Get;
        self.send(LockOp::Get, out);
    }

    fn send(&mut self, op: LockOp, out: &mut Outputs) {
        self.awaiting = true;
        self.transport_retries = 0;
        out.push(Output::Send { op, timeout: self.config.request_timeout });
    }

    fn arm(&mut self, kind: TimerKind, after: u64, out: &mut Outputs) {
        self.generation = self.generation.wrapping_add(1);
        out.push(Output::Timer { kind, after, generation: self.generation });
    }

    /// An exception escapes `run()`: the loop is gone, OnStoppedLeading is not called.
    fn raise(&mut self, what: &'static str, out: &mut Outputs) {
        self.generation = self.generation.wrapping_add(1);
        self.phase = Phase::Done;
        out.push(Output::Exception(what));
        out.push(Output::Exited);
    }

    fn finish(&mut self, out: &mut Outputs) {
        self.generation = self.generation.wrapping_add(1);
        self.phase = Phase::Done;
        out.push(Output::StoppedLeading);
        out.push(Output::Exited);
    }
}

impl PythonElector {
    /// The expiry decision: `observed_time_ms + own lease_duration·1000 <= now_ms`.
    fn expired(&self, now_ms: i64) -> bool {
        self.observed_time_ms + (self.config.lease_duration / 1_000_000) as i64 <= now_ms
    }
}

impl ElectorLoop for PythonElector {
    fn config(&self) -> &ElectorConfig {
        &self.config
    }

    fn is_leader(&self) -> bool {
        self.observed.as_ref().is_some_and(|r| r.holder_identity == self.me)
    }

    fn awaiting_result(&self) -> bool {
        self.awaiting
    }

    fn start(&mut self, now: Now, out: &mut Outputs) {
        if self.phase != Phase::Idle {
            return;
        }
        out.note(Note::AttemptingToAcquire);
        self.phase = Phase::Acquiring;
        self.begin_try(now, out);
    }

    fn on_timer(&mut self, now: Now, _kind: TimerKind, generation: Generation, out: &mut Outputs) {
        if generation != self.generation {
            return;
        }
        match self.phase {
            Phase::WaitingRetry => {
                self.phase = Phase::Acquiring;
                self.begin_try(now, out);
            }
            Phase::RetrySleep { deadline_ms } => self.attempt_in_round(deadline_ms, now, out),
            // `if self.onstarted_leading_failed.is_set(): return`, at the top of each round.
            Phase::BetweenRounds if self.work_raised => self.finish(out),
            Phase::BetweenRounds => {
                let deadline_ms = wall_ms(now) + (self.config.renew_deadline / 1_000_000) as i64;
                self.attempt_in_round(deadline_ms, now, out);
            }
            _ => {}
        }
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        self.awaiting = false;
        // What urllib3 retries and what escapes the lock's `except ApiException`.
        match (self.step, result) {
            (Step::Get | Step::Update, Err(LockError::Timeout)) if self.transport_retries < 3 => {
                self.transport_retries += 1;
                let op = if self.step == Step::Get { LockOp::Get } else { LockOp::Update(self.candidate) };
                self.awaiting = true;
                out.push(Output::Send { op, timeout: self.config.request_timeout });
                return;
            }
            (_, Err(LockError::Timeout)) => return self.raise("urllib3 MaxRetryError (read timed out)", out),
            (_, Err(LockError::Refused)) => {
                return self.raise("urllib3 MaxRetryError (connection refused)", out);
            }
            // 37.0.0 (PR #2707) takes a body that is not JSON as a failed try.
            (Step::Get, Err(LockError::NotStatus(_))) if self.config.version > 0 => {
                return self.raise("json.JSONDecodeError (error body is not JSON)", out);
            }
            _ => {}
        }
        self.transport_retries = 0;
        let done = match (self.step, result) {
            (Step::Get, Err(LockError::NotFound)) => {
                self.step = Step::Create;
                self.send(LockOp::Create(self.candidate), out);
                return;
            }
            (Step::Get, Err(_)) => false,
            (Step::Get, Ok(record)) => {
                // get_lock_object keeps only truthy fields; a record missing any of them is
                // taken at once, without an expiry check.
                if record.holder_is_empty()
                    || record.lease_duration_seconds == 0
                    || record.acquire_time_micros.is_none()
                    || record.renew_time_micros.is_none()
                {
                    self.candidate.leader_transitions = record.leader_transitions;
                    self.step = Step::Update;
                    self.send(LockOp::Update(self.candidate), out);
                    return;
                }
                // `__dict__` of the record: holder, duration, acquire and renew (no transitions).
                let same = |a: &Record, b: &Record| {
                    a.holder_identity == b.holder_identity
                        && a.lease_duration_seconds == b.lease_duration_seconds
                        && a.acquire_time_micros == b.acquire_time_micros
                        && a.renew_time_micros == b.renew_time_micros
                };
                if !self.observed.as_ref().is_some_and(|o| same(o, &record)) {
                    self.observed = Some(record);
                    self.observed_time_ms = wall_ms(now);
                }
                let held_by_other = record.holder_identity != self.me && !self.expired(wall_ms(self.started));
                if held_by_other {
                    out.note(Note::HeldByAnother);
                    false
                } else {
                    if record.holder_identity == self.me {
                        self.candidate.acquire_time_micros = record.acquire_time_micros;
                    }
                    // leaseTransitions is never written: the PUT carries the fetched value.
                    self.candidate.leader_transitions = record.leader_transitions;
                    self.step = Step::Update;
                    self.send(LockOp::Update(self.candidate), out);
                    return;
                }
            }
            (Step::Create, Ok(_)) | (Step::Update, Ok(_)) => {
                self.observed = Some(self.candidate);
                self.observed_time_ms = wall_ms(now);
                true
            }
            (Step::Create, Err(_)) | (Step::Update, Err(_)) => false,
        };
        self.after_try(done, now, out);
    }

    fn stop(&mut self, _now: Now, out: &mut Outputs) {
        if matches!(self.phase, Phase::Done) {
            return;
        }
        if self.awaiting {
            self.awaiting = false;
            out.push(Output::Abandon);
        }
        self.finish(out);
    }

    fn lease_expired(&self, now: Now) -> Option<bool> {
        self.observed.as_ref().map(|_| self.expired(wall_ms(now)))
    }

    fn work_raised(&mut self) {
        self.work_raised = true;
    }
}
