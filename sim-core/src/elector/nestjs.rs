//! Precise-Finance/nestjs-k8s-leader-election (`src/leader-election.service.ts`, v2.0.0, read at
//! `752383eb`), as docs/sources/nestjs.md records it. The retry period is its
//! `renewalInterval` (default 10 s), the lease duration its `durationInSeconds` (default 20 s);
//! RenewDeadline is unused.
//! - expiry (:214-221): `Date.now() > (renewTime ?? 0) + (record.LD || own LD)·1000`, wall clock;
//! - startup (`runLeaderElectionProcess`, :83-99): `tryToBecomeLeader` at once and up to twice
//!   more, LD/2 apart, stopping once leader: **the only polls a follower ever makes**;
//! - `tryToBecomeLeader` (:101-120): Get (404 → POST without leaseTransitions, :187-212); if
//!   expired or no holder, PUT `{holder: self, LD, acquire=renew=now}` (transitions never
//!   written, :122-141); if the result names self, `becomeLeader`. Errors are logged, no retry;
//! - `renewLease` (:143-168), when the renewal timer fires: Get; held by self → PUT renewTime;
//!   else → `loseLeadership`; **any error → `loseLeadership`** (one failed renew loses the
//!   lease); there is no local expiry check, and a successful renew does not re-arm the timer;
//! - the watch (:283-358): every ADDED/MODIFIED is handled 2 s later: holder self → (if not
//!   leader, `becomeLeader` 2 s later still) re-arm the renewal timer; another holder while
//!   leader → `loseLeadership`. leasesim delivers the node's **own** writes to its watch (that is
//!   what paces its renewals: ≈ renewalInterval + 2 s); other writers' events are not modelled,
//!   so a deposed leader learns at its next renew's Get, and DELETED is not modelled;
//! - SIGTERM (:54-55, :227-250): if leader, Get and, if self, PUT holder null and renewTime null;
//!   `isLeader` stays true until that write's own MODIFIED event, 2 s later; then the process
//!   exits.

use super::ElectorLoop;
use super::Outputs;
use super::io::{Io, fresh_record, wall_ms};
use super::{ElectorConfig, Fields, Generation, LockError, LockOp, LockResult, Note, Now, Output, Record, TimerKind};
use super::{WriteShape, WriteVerb};
use crate::sym::Sym;
use crate::time::{NANOS_PER_SEC, Nanos};
use std::sync::Arc;

/// The watch handler's delay (:297) and `becomeLeader`'s in it (:350).
const HANDLER_DELAY: Nanos = 2 * NANOS_PER_SEC;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Job {
    /// `tryToBecomeLeader`: its Get, Create or acquiring PUT.
    Try(Step),
    /// `renewLease`.
    Renew(Step),
    /// The SIGTERM release.
    Release(Step),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Get,
    Create,
    Put,
}

#[derive(Debug)]
pub struct NestJsElector {
    config: Arc<ElectorConfig>,
    me: Sym,
    io: Io,
    is_leader: bool,
    job: Option<Job>,
    /// Startup tries made so far (three at most).
    tries: u8,
    /// The holder of the write whose MODIFIED event is pending (handled 2 s after the write).
    pending_event: Option<Sym>,
    stopping: bool,
    done: bool,
    candidate: Record,
    /// The Lease its last Get read.
    last_read: Option<Record>,
}

impl NestJsElector {
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym) -> Self {
        let config: Arc<ElectorConfig> = config.into();
        NestJsElector {
            config,
            me,
            io: Io::default(),
            is_leader: false,
            job: None,
            tries: 0,
            pending_event: None,
            stopping: false,
            done: false,
            candidate: Record::default(),
            last_read: None,
        }
    }

    fn try_to_become_leader(&mut self, now: Now, out: &mut Outputs) {
        self.tries += 1;
        if self.tries < 3 {
            // setTimeout(LD·500 ms) before the next startup try.
            self.io.arm(TimerKind::Retry, self.config.lease_duration / 2, out);
        }
        if self.job.is_none() {
            self.begin(Job::Try(Step::Get), now, out);
        }
    }

    fn begin(&mut self, job: Job, now: Now, out: &mut Outputs) {
        self.job = Some(job);
        self.candidate = fresh_record(self.me, self.config.lease_duration_seconds(), now, 0);
        self.io.send(LockOp::Get, self.config.request_timeout, out);
    }

    /// `handleLeaseUpdate` (:347-358).
    fn handle_lease_update(&mut self, holder: Sym, out: &mut Outputs) {
        if holder == self.me {
            if !self.is_leader {
                self.io.arm(TimerKind::RoundTick, HANDLER_DELAY, out);
            }
            self.schedule_renewal(out);
        } else if self.is_leader {
            self.lose_leadership(out);
        }
        if self.stopping && !self.is_leader {
            self.finish(out);
        }
    }

    fn schedule_renewal(&mut self, out: &mut Outputs) {
        self.io.arm(TimerKind::NextRound, self.config.retry_period, out);
    }

    /// `becomeLeader` (:266-270).
    fn become_leader(&mut self, out: &mut Outputs) {
        if !self.is_leader {
            self.is_leader = true;
            out.note(Note::AcquiredLease);
            out.push(Output::StartedLeading);
        }
        self.schedule_renewal(out);
    }

    /// `loseLeadership` (:272-281).
    fn lose_leadership(&mut self, out: &mut Outputs) {
        if self.is_leader {
            self.is_leader = false;
            self.io.cancel(TimerKind::NextRound);
            out.push(Output::StoppedLeading);
        }
    }

    /// A write of ours succeeded: the watch sees it, and its handler runs 2 s later.
    fn own_write(&mut self, holder: Sym, out: &mut Outputs) {
        self.pending_event = Some(holder);
        self.io.arm(TimerKind::Delay, HANDLER_DELAY, out);
    }

    fn expired(&self, record: &Record, now: Now) -> bool {
        let renew_ms = record.renew_time_micros.map(|us| us.div_euclid(1000)).unwrap_or(0);
        let ld = if record.lease_duration_seconds > 0 {
            record.lease_duration_seconds as i64
        } else {
            self.config.lease_duration_seconds() as i64
        };
        wall_ms(now) > renew_ms + ld * 1000
    }

    fn put(&mut self, record: Record, shape: WriteShape, out: &mut Outputs) {
        self.io.send(LockOp::Write(record, shape), self.config.request_timeout, out);
    }

    fn finish(&mut self, out: &mut Outputs) {
        if self.done {
            return;
        }
        self.done = true;
        self.io.cancel_all();
        self.lose_leadership(out);
        out.push(Output::Exited);
    }
}

impl ElectorLoop for NestJsElector {
    fn config(&self) -> &ElectorConfig {
        &self.config
    }

    fn is_leader(&self) -> bool {
        self.is_leader
    }

    fn awaiting_result(&self) -> bool {
        self.io.awaiting
    }

    fn start(&mut self, now: Now, out: &mut Outputs) {
        if self.tries > 0 || self.done {
            return;
        }
        out.note(Note::AttemptingToAcquire);
        self.try_to_become_leader(now, out);
    }

    fn on_timer(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut Outputs) {
        if !self.io.live(kind, generation) || self.done {
            return;
        }
        match kind {
            TimerKind::Retry if !self.is_leader && !self.stopping => self.try_to_become_leader(now, out),
            // The renewal timer: `if isLeader: renewLease()`.
            TimerKind::NextRound if self.is_leader && self.job.is_none() => self.begin(Job::Renew(Step::Get), now, out),
            TimerKind::Delay => {
                if let Some(holder) = self.pending_event.take() {
                    self.handle_lease_update(holder, out);
                }
            }
            // becomeLeader, 2 s after a MODIFIED naming self.
            TimerKind::RoundTick if !self.stopping => self.become_leader(out),
            _ => {}
        }
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        self.io.awaiting = false;
        let Some(job) = self.job.take() else { return };
        // createLease: no leaseTransitions (:187-212). Every PUT keeps the fetched transitions.
        let create = WriteShape { verb: WriteVerb::Post, nulls: Fields::TRANSITIONS, keep: Fields::NONE };
        let keep_transitions = WriteShape::PUT.keep(Fields::TRANSITIONS);
        match (job, result) {
            (Job::Try(Step::Get) | Job::Renew(Step::Get) | Job::Release(Step::Get), Err(LockError::NotFound)) => {
                // getLease creates the Lease held by self on a 404, whoever calls it.
                let next = match job {
                    Job::Try(_) => Job::Try(Step::Create),
                    Job::Renew(_) => Job::Renew(Step::Create),
                    Job::Release(_) => Job::Release(Step::Create),
                };
                self.job = Some(next);
                self.io.send(LockOp::Write(self.candidate, create), self.config.request_timeout, out);
            }
            (Job::Try(Step::Get), Ok(lease)) => {
                self.last_read = Some(lease);
                if self.expired(&lease, now) || lease.holder_is_empty() {
                    self.job = Some(Job::Try(Step::Put));
                    self.put(self.candidate, keep_transitions, out);
                } else if lease.holder_identity == self.me {
                    // A restart with the same HOSTNAME: leader without a write.
                    self.become_leader(out);
                } else {
                    out.note(Note::HeldByAnother);
                }
            }
            (Job::Try(Step::Create | Step::Put), Ok(lease)) => {
                self.own_write(lease.holder_identity, out);
                if lease.holder_identity == self.me {
                    self.become_leader(out);
                }
            }
            (Job::Try(_), Err(_)) => out.note(Note::FailedToAcquire),
            (Job::Renew(Step::Get), Ok(lease)) if lease.holder_identity == self.me => {
                let renewed = Record { renew_time_micros: self.candidate.renew_time_micros, ..lease };
                self.job = Some(Job::Renew(Step::Put));
                self.put(renewed, keep_transitions, out);
            }
            (Job::Renew(Step::Get), Ok(_)) => {
                out.note(Note::HeldByAnother);
                self.lose_leadership(out);
            }
            (Job::Renew(_), Ok(lease)) => {
                out.note(Note::RenewedLease);
                self.own_write(lease.holder_identity, out);
            }
            (Job::Renew(_), Err(_)) => {
                out.note(Note::FailedToRenew);
                self.lose_leadership(out);
            }
            (Job::Release(Step::Get), Ok(lease)) if lease.holder_identity == self.me => {
                let released = Record { renew_time_micros: None, ..lease };
                self.job = Some(Job::Release(Step::Put));
                let shape = WriteShape::PUT.nulls(Fields::HOLDER.with(Fields::RENEW)).keep(Fields::TRANSITIONS);
                self.put(released, shape, out);
            }
            (Job::Release(Step::Put), Ok(lease)) => {
                out.note(Note::Released);
                // isLeader stays true until this write's own MODIFIED event.
                let holder = if lease.absent.has(Fields::HOLDER) { Sym::EMPTY } else { lease.holder_identity };
                self.own_write(holder, out);
            }
            (Job::Release(Step::Create), Ok(lease)) => self.own_write(lease.holder_identity, out),
            (Job::Release(_), _) => {
                out.note(Note::ReleaseFailed);
                self.lose_leadership(out);
                self.finish(out);
            }
        }
    }

    /// SIGTERM (:227-250): the release if leader; the process ends once `isLeader` is false.
    fn stop(&mut self, now: Now, out: &mut Outputs) {
        if self.stopping || self.done {
            return;
        }
        self.stopping = true;
        if !self.is_leader {
            self.io.abandon(out);
            self.finish(out);
            return;
        }
        self.io.abandon(out);
        self.io.cancel(TimerKind::NextRound);
        self.begin(Job::Release(Step::Get), now, out);
    }

    fn lease_expired(&self, now: Now) -> Option<bool> {
        self.last_read.map(|r| self.expired(&r, now))
    }
}
