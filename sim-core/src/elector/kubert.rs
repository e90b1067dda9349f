//! olix0r/kubert's `lease` module (`kubert/src/lease.rs`, v0.25.0, read at `f46649ed`; kube
//! 1.1, backon 1), as docs/sources/kubert.md records it. Defaults: `ClaimParams` LD 30 s,
//! `renew_grace_period` 1 s (lease.rs:118-125), a 10 s `tokio::time::timeout` on every request
//! (`API_TIMEOUT`, :164, :530-536, :540-542), the field manager `"kubert"` shared by every
//! instance (:161).
//! - `init` (:170-181) GETs the Lease, which **must already exist**: a 404 (or any error) fails
//!   `init`, and the program exits (`after_lost` then restarts it);
//! - `get` (:539-580): no claim if holder, renewTime or leaseDurationSeconds is absent, or if
//!   `renewTime + record.LD <= wall_now`; holder `""` with a valid time is a claim by `""`;
//! - `ensure_claimed` (:219-301): held by self → renew only once `wall_now >= expiry − grace`:
//!   strategic patch `{metadata.resourceVersion: cached, renewTime: now, LD: own}` (:480-515);
//!   held by another and current → nothing (no GET); else acquire: server-side apply,
//!   `force = true`, `{resourceVersion: cached, acquire=renew=now, holder: self, LD: own,
//!   transitions: cached + 1}` (:434-472). A 409 → GET and loop; any other error → `Err`. A
//!   write's claim expires at `now_before_request + LD` (the renewTime it wrote, plus its own
//!   full LD);
//! - `spawn` (:365-426): the first `ensure_claimed` (an error fails `spawn`: the program exits);
//!   then a task loops: wait until `claim.expiry − grace` on the wall clock (grace = the renew
//!   grace if the claim is self's, else 0), `ensure_claimed` under backon's retry, publish the
//!   claim. The intended backoff (`with_min_delay(5 ms).with_factor(0.5)`, :376-378) is
//!   **discarded** (`ExponentialBuilder` is `Copy`); backon's default applies: the first delay
//!   1 s (uncapped), then ×2 capped at `max_delay = grace`, 3 retries — 1, 1, 1 s for the holder,
//!   1, 0, 0 s for a follower (notes §9.18). When the retries run out the task **ends with an
//!   error**: no more renewing, acquiring or vacating; the process runs on;
//! - acting is the consumer's `claim.is_current_for(me)` (:137-140): the published claim names
//!   self and `wall_now < claim.expiry`. The leader renews only `grace` (1 s) before its expiry,
//!   so a renewal slower than that lets the claim lapse until the new one is published;
//! - `vacate` (:308-353), when all receivers are dropped (a graceful stop) and the task is
//!   waiting (or once its `ensure_claimed` returns): if the claim is current and self's, a
//!   strategic patch with the cached resourceVersion nulls acquireTime, renewTime, holder and
//!   leaseDurationSeconds (transitions kept); a 409 is an error.
//!
//! Not modelled: `leaseTransitions` wrapping through `u16` (a count above 65 535 reads as 0).

use super::ElectorLoop;
use super::Outputs;
use super::io::{Io, fresh_record};
use super::record::micros_of;
use super::{
    ElectorConfig, Fields, Generation, LockError, LockOp, LockResult, Note, Now, Output, Record, TimerKind, WriteShape,
    WriteVerb,
};
use crate::sym::Sym;
use crate::time::{NANOS_PER_SEC, Nanos};
use std::sync::Arc;

/// A claim: who holds the Lease and until when (wall clock, Unix nanoseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Claim {
    holder: Sym,
    expiry: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// `init`'s GET.
    Init,
    /// `ensure_claimed`'s renew patch, its acquire (apply), or the GET after a 409.
    Renew,
    Acquire,
    Resync,
    /// `vacate`'s patch.
    Vacate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// A request of `ensure_claimed` (or `init`, `vacate`) is in flight.
    Calling(Step),
    /// The task waits for `claim.expiry − grace`.
    Waiting,
    /// Backon's sleep before the next `ensure_claimed` attempt.
    Backoff,
    /// The task ended with an error; the process runs on.
    Dead,
    Done,
}

#[derive(Debug)]
pub struct KubertElector {
    config: Arc<ElectorConfig>,
    me: Sym,
    io: Io,
    phase: Phase,
    /// `State.claim` and `State.meta.transitions` (the resourceVersion is the lock's cache).
    claim: Option<Claim>,
    transitions: i32,
    /// The claim last published on the channel, and whether the consumer acts on it.
    published: Option<Claim>,
    acting: bool,
    /// `spawn` has published its first claim (before that an error fails `spawn`).
    spawned: bool,
    /// The retry of the running `ensure_claimed`: attempts failed so far and the last delay.
    failures: u32,
    last_delay: Nanos,
    /// `max_delay` of this retry: the grace of the claim the task waited on.
    max_delay: Nanos,
    /// All receivers are dropped: the task stops at its next check.
    closed: bool,
    /// `now` taken before the write in flight (its renewTime, and the claim's start).
    write_at: i64,
}

impl KubertElector {
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym) -> Self {
        let config: Arc<ElectorConfig> = config.into();
        KubertElector {
            config,
            me,
            io: Io::default(),
            phase: Phase::Idle,
            claim: None,
            transitions: 0,
            published: None,
            acting: false,
            spawned: false,
            failures: 0,
            last_delay: 0,
            max_delay: 0,
            closed: false,
            write_at: 0,
        }
    }

    fn send(&mut self, step: Step, op: LockOp, out: &mut Outputs) {
        self.phase = Phase::Calling(step);
        self.io.send(op, self.config.request_timeout, out);
    }

    /// `get` (:539-580): the state a read Lease gives.
    fn read(&mut self, lease: &Record, now: Now) {
        self.transitions = if lease.absent.has(Fields::TRANSITIONS) { 0 } else { lease.leader_transitions };
        let unclaimed =
            lease.absent.has(Fields::HOLDER) || lease.absent.has(Fields::RENEW) || lease.absent.has(Fields::DURATION);
        self.claim = match lease.renew_expiry_unix_nanos() {
            Some(expiry) if !unclaimed && expiry > now.wall => Some(Claim { holder: lease.holder_identity, expiry }),
            _ => None,
        };
    }

    /// `ensure_claimed` (:219-301), from the top of its loop: `None` while a request is in
    /// flight, else the claim it returns.
    fn ensure_claimed(&mut self, now: Now, out: &mut Outputs) -> Option<Claim> {
        let ld = self.config.lease_duration_seconds();
        let at = Some(micros_of(now.wall));
        if let Some(claim) = self.claim {
            if claim.holder == self.me {
                let renew_at = claim.expiry - self.config.grace as i64;
                if now.wall < renew_at {
                    return Some(claim);
                }
                self.write_at = now.wall;
                let record = Record { lease_duration_seconds: ld, renew_time_micros: at, ..Record::default() };
                let keep = Fields::HOLDER.with(Fields::ACQUIRE).with(Fields::TRANSITIONS);
                self.send(Step::Renew, LockOp::Write(record, WriteShape::patch(true).keep(keep)), out);
                return None;
            }
            if now.wall < claim.expiry {
                return Some(claim);
            }
        }
        self.write_at = now.wall;
        let record = fresh_record(self.me, ld, now, self.transitions + 1);
        let shape = WriteShape {
            verb: WriteVerb::Apply { force: true, with_rv: true, cached_metadata: false },
            nulls: Fields::NONE,
            keep: Fields::NONE,
        };
        self.send(Step::Acquire, LockOp::Write(record, shape), out);
        None
    }

    /// `ensure_claimed` returned `claim`: publish it (the first one creates the channel), then
    /// the task waits again — or, once every receiver is gone, vacates.
    fn claimed(&mut self, claim: Claim, now: Now, out: &mut Outputs) {
        self.failures = 0;
        self.spawned = true;
        if self.closed {
            // `tx.send` fails: break, vacate.
            return self.vacate(now, out);
        }
        if self.published.is_none_or(|p| p.holder != claim.holder) {
            out.push(Output::NewLeader(claim.holder));
        }
        self.published = Some(claim);
        self.evaluate(now, out);
        self.wait(now, out);
    }

    /// The task's wait: `claim.expire_with_grace(grace)` (:384-396), a wall-clock remainder
    /// slept on the monotonic clock.
    fn wait(&mut self, now: Now, out: &mut Outputs) {
        let Some(claim) = self.published else { return };
        let grace = if claim.holder == self.me { self.config.grace } else { 0 };
        self.max_delay = grace;
        let remaining = (claim.expiry - now.wall).max(0) as Nanos;
        let sleep = remaining.saturating_sub(grace);
        self.phase = Phase::Waiting;
        self.io.arm(TimerKind::Retry, sleep, out);
    }

    /// The consumer's `is_current_for(me)` on the published claim; a timer ends it at expiry.
    fn evaluate(&mut self, now: Now, out: &mut Outputs) {
        let current = self.published.is_some_and(|c| c.holder == self.me && now.wall < c.expiry);
        if current {
            let left = (self.published.map_or(0, |c| c.expiry) - now.wall) as Nanos;
            self.io.arm(TimerKind::RoundDeadline, left, out);
        } else {
            self.io.cancel(TimerKind::RoundDeadline);
        }
        if current != self.acting {
            self.acting = current;
            out.push(if current { Output::StartedLeading } else { Output::StoppedLeading });
        }
    }

    /// backon's `retry` (ExponentialBuilder default, `max_delay` = grace): 1 s first (uncapped),
    /// then ×2 up to `max_delay`, three retries; then the task ends with the error.
    fn attempt_failed(&mut self, now: Now, out: &mut Outputs) {
        if !self.spawned {
            // The first `ensure_claimed` is `spawn`'s own: its error fails `spawn`.
            return self.fail("kubert LeaseManager::spawn failed", out);
        }
        if self.failures >= 3 {
            return self.task_died(now, out);
        }
        let delay = if self.failures == 0 {
            NANOS_PER_SEC
        } else {
            let mut d = self.last_delay;
            if d < self.max_delay {
                d = d.saturating_mul(2);
            }
            d.min(self.max_delay)
        };
        self.failures += 1;
        self.last_delay = delay;
        self.phase = Phase::Backoff;
        self.io.arm(TimerKind::Delay, delay, out);
    }

    /// The spawned task returned `Err` (retries exhausted): nothing renews, acquires or vacates
    /// any more. The last published claim stays on the channel; the consumer acts on it until
    /// it expires.
    fn task_died(&mut self, _now: Now, out: &mut Outputs) {
        self.phase = Phase::Dead;
        self.io.cancel(TimerKind::Retry);
        self.io.cancel(TimerKind::Delay);
        out.push(Output::Exception("kubert lease task ended: ensure_claimed failed after 3 retries"));
        if self.closed {
            out.push(Output::Exited);
        }
    }

    fn fail(&mut self, what: &'static str, out: &mut Outputs) {
        self.phase = Phase::Done;
        self.io.cancel_all();
        if self.acting {
            self.acting = false;
            out.push(Output::StoppedLeading);
        }
        out.push(Output::Exception(what));
        out.push(Output::Exited);
    }

    /// `vacate` (:308-353).
    fn vacate(&mut self, now: Now, out: &mut Outputs) {
        self.io.cancel(TimerKind::Retry);
        let Some(claim) = self.claim.take() else { return self.finish(out) };
        if now.wall >= claim.expiry || claim.holder != self.me {
            return self.finish(out);
        }
        let record = Record::default();
        let shape = WriteShape::patch(true)
            .nulls(Fields::HOLDER.with(Fields::DURATION).with(Fields::ACQUIRE).with(Fields::RENEW))
            .keep(Fields::TRANSITIONS);
        self.send(Step::Vacate, LockOp::Write(record, shape), out);
    }

    fn finish(&mut self, out: &mut Outputs) {
        self.io.cancel_all();
        self.phase = Phase::Done;
        out.push(Output::Exited);
    }
}

impl ElectorLoop for KubertElector {
    fn config(&self) -> &ElectorConfig {
        &self.config
    }

    /// The consumer's `is_current_for(me)`, as last evaluated.
    fn is_leader(&self) -> bool {
        self.acting
    }

    fn awaiting_result(&self) -> bool {
        self.io.awaiting
    }

    fn start(&mut self, _now: Now, out: &mut Outputs) {
        if self.phase != Phase::Idle {
            return;
        }
        out.note(Note::AttemptingToAcquire);
        self.send(Step::Init, LockOp::Get, out);
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        self.io.awaiting = false;
        let Phase::Calling(step) = self.phase else { return };
        let outcome = match (step, result) {
            (Step::Init, Ok(lease)) => {
                self.read(&lease, now);
                self.ensure_claimed(now, out)
            }
            (Step::Init, Err(_)) => {
                // `LeaseManager::init(...).await?` fails: the program exits.
                self.fail("kubert LeaseManager::init failed (the Lease must exist)", out);
                return;
            }
            (Step::Renew, Ok(_)) => {
                out.note(Note::RenewedLease);
                Some(Claim { holder: self.me, expiry: self.write_at + self.config.lease_duration as i64 })
            }
            (Step::Acquire, Ok(_)) => {
                out.note(Note::AcquiredLease);
                self.transitions += 1;
                Some(Claim { holder: self.me, expiry: self.write_at + self.config.lease_duration as i64 })
            }
            (Step::Renew | Step::Acquire, Err(LockError::Conflict)) => {
                // Another writer moved the resourceVersion: re-read and loop.
                self.send(Step::Resync, LockOp::Get, out);
                return;
            }
            (Step::Resync, Ok(lease)) => {
                self.read(&lease, now);
                self.ensure_claimed(now, out)
            }
            (Step::Renew | Step::Acquire | Step::Resync, Err(_)) => {
                out.note(if step == Step::Renew { Note::FailedToRenew } else { Note::FailedToAcquire });
                self.attempt_failed(now, out);
                return;
            }
            (Step::Vacate, result) => {
                out.note(if result.is_ok() { Note::Released } else { Note::ReleaseFailed });
                self.finish(out);
                return;
            }
        };
        if step == Step::Renew || step == Step::Acquire {
            self.claim = outcome;
        }
        if let Some(claim) = outcome {
            self.claimed(claim, now, out);
        }
    }

    fn on_timer(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut Outputs) {
        if !self.io.live(kind, generation) {
            return;
        }
        match (kind, self.phase) {
            // The consumer's claim expired.
            (TimerKind::RoundDeadline, _) => self.evaluate(now, out),
            (TimerKind::Retry, Phase::Waiting) | (TimerKind::Delay, Phase::Backoff) => {
                if let Some(claim) = self.ensure_claimed(now, out) {
                    self.claimed(claim, now, out);
                }
            }
            _ => {}
        }
    }

    /// Every receiver is dropped (the program shuts down): the consumer is gone, so the work
    /// stops now; the task breaks out of its wait at once and vacates, or finishes the
    /// `ensure_claimed` it is in (its retries included) and vacates when the publish fails.
    fn stop(&mut self, now: Now, out: &mut Outputs) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.io.cancel(TimerKind::RoundDeadline);
        if self.acting {
            self.acting = false;
            out.push(Output::StoppedLeading);
        }
        match self.phase {
            Phase::Waiting => self.vacate(now, out),
            // Before `spawn` returned there are no receivers to drop: the program just ends.
            Phase::Idle => self.finish(out),
            Phase::Calling(Step::Init) => {
                self.io.abandon(out);
                self.finish(out);
            }
            Phase::Calling(_) if !self.spawned => {
                self.io.abandon(out);
                self.finish(out);
            }
            // The task already ended with an error: nothing vacates.
            Phase::Dead => self.finish(out),
            _ => {}
        }
    }

    /// A claim is current while `now < expiry` (`get`, :539-580); no claim is free.
    fn lease_expired(&self, now: Now) -> Option<bool> {
        Some(self.claim.is_none_or(|c| now.wall >= c.expiry))
    }
}
