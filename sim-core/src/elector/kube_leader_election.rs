//! hendrikmaus/kube-leader-election (Rust, `src/lease.rs`, v0.43.0, read at `24a6596e`; kube 3),
//! as docs/sources/kube-leader-election.md records it. The crate is a library call with no loop of its
//! own; leasesim runs it the way its README and `examples/shared-lease.rs:44-50` do: one
//! `try_acquire_or_renew()` every poll period (`retry_period`, default 5 s, no jitter, the sleep
//! *after* each call), the result stored in an `is_leader` flag.
//! - `try_acquire_or_renew` (lease.rs:101-144): GET; a 404 → POST `{holder: self, LD: ttl,
//!   acquire=renew=now, transitions: 0}` (:189-209) → `Acquired`; another API or transport error
//!   → `Err`;
//! - holder == self → merge patch of `{renewTime: now, leaseDurationSeconds: ttl}` only
//!   (:250-270; no holder, no resourceVersion) → `Acquired`, **whatever the response says**: a
//!   renewal whose GET was stale extends another holder's Lease;
//! - else expired iff `wall_now > renewTime + record.leaseDurationSeconds` (:164-186, jiff
//!   `Timestamp::now()`): expired → merge patch `{acquire=renew=now, transitions + 1, holder:
//!   self, LD: ttl}` (:212-247) → `Acquired`; else `NotAcquired`. There is no empty-holder
//!   shortcut: holder `""` waits for renewTime + LD like any other;
//! - every write is `Patch::Merge` with `PatchParams::apply(holder_id)` (field manager = the
//!   identity, force false) and **no resourceVersion**: two racing acquirers both get
//!   `Acquired`;
//! - absent fields are errors, not takeovers: no `holderIdentity` (:147-161), no `renewTime` or
//!   `leaseDurationSeconds` (:164-186), no `leaseTransitions` on acquire (:212-223) → `Err`
//!   (`TraverseLease`), on every poll, for ever;
//! - the app's flag (examples/shared-lease.rs:45-48): `Ok(Acquired)` → true, `Ok(NotAcquired)`
//!   → false, `Err` → **unchanged** (logged): a partitioned leader keeps its flag with no bound;
//! - request timeout: kube 3's read timeout, 295 s (kube 3.1.0 config/mod.rs:400-402);
//! - `step_down()` (:273-319), on a graceful stop when `release_on_cancel`: GET; holder absent →
//!   `Err`; holder ≠ self → `Err(ReleaseLockWhenNotLeading)`; else merge patch `{acquire=renew=
//!   now, LD: 1, holder: ""}` without resourceVersion (a takeover between the GET and the
//!   patch is blanked). The flag is never cleared: the work stops when the process exits.
//!
//! `renew-time-unfenced` is this elector under its old name (it used to be client-go's loop
//! with this crate's expiry rule and fencing).

use super::ElectorLoop;
use super::Outputs;
use super::io::{Io, fresh_record};
use super::record::micros_of;
use super::{
    ElectorConfig, Fields, Generation, LockError, LockOp, LockResult, Note, Now, Output, Record, TimerKind, WriteShape,
    WriteVerb,
};
use crate::sym::Sym;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// `try_acquire_or_renew`: its GET, POST or merge patch (renew or acquire).
    Get,
    Create,
    Renew,
    Acquire,
    /// `step_down`: its GET and patch.
    ReleaseGet,
    ReleasePatch,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Calling(Step),
    /// `tokio::time::sleep(poll)` after a call.
    Sleeping,
    Done,
}

/// What one `try_acquire_or_renew()` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Acquired,
    NotAcquired,
    Err,
}

#[derive(Debug)]
pub struct KubeLeaderElectionElector {
    config: Arc<ElectorConfig>,
    me: Sym,
    io: Io,
    phase: Phase,
    /// The app's `is_leader` flag.
    is_leader: bool,
    /// The holder last seen, for `NewLeader` in traces.
    seen_holder: Option<Sym>,
    /// The Lease its last Get read.
    last_read: Option<Record>,
}

impl KubeLeaderElectionElector {
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym) -> Self {
        let config: Arc<ElectorConfig> = config.into();
        KubeLeaderElectionElector {
            config,
            me,
            io: Io::default(),
            phase: Phase::Idle,
            is_leader: false,
            seen_holder: None,
            last_read: None,
        }
    }

    fn call(&mut self, step: Step, op: LockOp, out: &mut Outputs) {
        self.phase = Phase::Calling(step);
        self.io.send(op, self.config.request_timeout, out);
    }

    /// `leaseDurationSeconds: self.params.lease_ttl.as_secs()`.
    fn ttl_seconds(&self) -> i32 {
        self.config.lease_duration_seconds()
    }

    fn merge_patch(record: Record, keep: Fields) -> LockOp {
        LockOp::Write(record, WriteShape::patch(false).keep(keep))
    }

    /// The example's loop body after a call: set the flag from an `Ok`, leave it on an `Err`,
    /// then sleep the poll period.
    fn finish_call(&mut self, outcome: Outcome, out: &mut Outputs) {
        match outcome {
            Outcome::Acquired if !self.is_leader => {
                self.is_leader = true;
                out.push(Output::StartedLeading);
            }
            Outcome::NotAcquired if self.is_leader => {
                self.is_leader = false;
                out.push(Output::StoppedLeading);
            }
            _ => {}
        }
        self.phase = Phase::Sleeping;
        self.io.arm(TimerKind::Retry, self.config.retry_period, out);
    }

    fn observe(&mut self, holder: Sym, out: &mut Outputs) {
        if self.seen_holder != Some(holder) {
            self.seen_holder = Some(holder);
            out.push(Output::NewLeader(holder));
        }
    }

    fn finish(&mut self, out: &mut Outputs) {
        self.io.cancel_all();
        self.phase = Phase::Done;
        out.push(Output::Exited);
    }
}

/// `has_lease_expired` (:164-186): `now > renewTime + leaseDurationSeconds`, wall clock.
fn expired(record: &Record, now: Now) -> bool {
    record.renew_expiry_unix_nanos().is_some_and(|e| now.wall > e)
}

impl ElectorLoop for KubeLeaderElectionElector {
    fn config(&self) -> &ElectorConfig {
        &self.config
    }

    fn is_leader(&self) -> bool {
        self.is_leader
    }

    fn awaiting_result(&self) -> bool {
        self.io.awaiting
    }

    fn start(&mut self, _now: Now, out: &mut Outputs) {
        if self.phase != Phase::Idle {
            return;
        }
        out.note(Note::AttemptingToAcquire);
        self.call(Step::Get, LockOp::Get, out);
    }

    fn on_timer(&mut self, _now: Now, kind: TimerKind, generation: Generation, out: &mut Outputs) {
        if !self.io.live(kind, generation) {
            return;
        }
        if kind == TimerKind::Retry && self.phase == Phase::Sleeping {
            self.call(Step::Get, LockOp::Get, out);
        }
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        self.io.awaiting = false;
        let Phase::Calling(step) = self.phase else { return };
        let at = Some(micros_of(now.wall));
        match (step, result) {
            // try_acquire_or_renew (lease.rs:101-144).
            (Step::Get, Err(LockError::NotFound)) => {
                let record = fresh_record(self.me, self.ttl_seconds(), now, 0);
                let shape = WriteShape { verb: WriteVerb::Post, nulls: Fields::NONE, keep: Fields::NONE };
                self.call(Step::Create, LockOp::Write(record, shape), out);
            }
            (Step::Get, Ok(lease)) => {
                self.last_read = Some(lease);
                self.observe(lease.holder_identity, out);
                // are_we_leading (:147-161): an absent holder is an error.
                if lease.absent.has(Fields::HOLDER) {
                    return self.finish_call(Outcome::Err, out);
                }
                if lease.holder_identity == self.me {
                    // renew_lease (:250-270): renewTime and leaseDurationSeconds only.
                    let record = Record { lease_duration_seconds: self.ttl_seconds(), renew_time_micros: at, ..lease };
                    let op = Self::merge_patch(record, Fields::HOLDER.with(Fields::ACQUIRE).with(Fields::TRANSITIONS));
                    return self.call(Step::Renew, op, out);
                }
                // has_lease_expired (:164-186): both fields are required.
                if lease.absent.has(Fields::RENEW) || lease.absent.has(Fields::DURATION) {
                    return self.finish_call(Outcome::Err, out);
                }
                let expired = expired(&lease, now);
                if !expired {
                    out.note(Note::HeldByAnother);
                    return self.finish_call(Outcome::NotAcquired, out);
                }
                // acquire_lease (:212-247): leaseTransitions is required.
                if lease.absent.has(Fields::TRANSITIONS) {
                    return self.finish_call(Outcome::Err, out);
                }
                let record = fresh_record(self.me, self.ttl_seconds(), now, lease.leader_transitions + 1);
                self.call(Step::Acquire, Self::merge_patch(record, Fields::NONE), out);
            }
            (Step::Get, Err(_)) => self.finish_call(Outcome::Err, out),
            // The response's holder is never looked at: any 2xx is `Acquired`.
            (Step::Create | Step::Acquire, Ok(_)) => {
                out.note(Note::AcquiredLease);
                self.observe(self.me, out);
                self.finish_call(Outcome::Acquired, out);
            }
            (Step::Renew, Ok(_)) => {
                out.note(Note::RenewedLease);
                self.finish_call(Outcome::Acquired, out);
            }
            (Step::Create | Step::Acquire, Err(_)) => {
                out.note(Note::FailedToAcquire);
                self.finish_call(Outcome::Err, out);
            }
            (Step::Renew, Err(_)) => {
                out.note(Note::FailedToRenew);
                self.finish_call(Outcome::Err, out);
            }
            // step_down (:273-319).
            (Step::ReleaseGet, Ok(lease)) if !lease.absent.has(Fields::HOLDER) && lease.holder_identity == self.me => {
                let record = Record {
                    holder_identity: Sym::EMPTY,
                    lease_duration_seconds: 1,
                    acquire_time_micros: at,
                    renew_time_micros: at,
                    ..Record::default()
                };
                self.call(Step::ReleasePatch, Self::merge_patch(record, Fields::TRANSITIONS), out);
            }
            (Step::ReleasePatch, Ok(_)) => {
                out.note(Note::Released);
                self.finish(out);
            }
            (Step::ReleaseGet | Step::ReleasePatch, _) => {
                out.note(Note::ReleaseFailed);
                self.finish(out);
            }
        }
    }

    /// The process is told to stop: the polling task is dropped (a call in flight is
    /// abandoned); with `release_on_cancel` the app calls `step_down()` first. The flag is not
    /// cleared, so the work ends with the process.
    fn stop(&mut self, _now: Now, out: &mut Outputs) {
        if matches!(self.phase, Phase::Done | Phase::Calling(Step::ReleaseGet | Step::ReleasePatch)) {
            return;
        }
        self.io.abandon(out);
        self.io.cancel_all();
        if self.config.release_on_cancel {
            self.call(Step::ReleaseGet, LockOp::Get, out);
        } else {
            self.finish(out);
        }
    }

    fn lease_expired(&self, now: Now) -> Option<bool> {
        self.last_read.map(|r| expired(&r, now))
    }
}
