//! alex-karpenko/kube-lease-manager (Rust, v0.12.0, read at `da8e8aa7`; kube 4), run the way
//! its `LeaseManager::watch()` runs it (`src/manager.rs`, `src/state.rs`, `src/backoff.rs`), as
//! docs/sources/kube-lease-manager.md records it. Defaults: LD 30 s, grace 5 s (manager.rs:24-26),
//! both whole seconds; `LeaseParams::new` panics unless 0 < grace < LD (:317-335).
//! - the cached state (state.rs:18-29): holder (`Option`), `expiry` on the **wall clock**,
//!   transitions. `is_expired = wall_now > expiry`; `is_locked = holder.is_some()`, so holder
//!   `""` counts as locked;
//! - `sync(Soft)` GETs only once the cached expiry has passed, `sync(Force)` always
//!   (state.rs:114-157): holder, transitions (absent → 0), `expiry = renewTime + record.LD`, or
//!   `now − 1 ns` when either is absent; a 404 clears the state and is an error; a holder absent
//!   with a time present reads as the fake `inconsistent-identity-*` holder with no renewTime:
//!   locked and expired (:277-295);
//! - startup (`LeaseState::new`, `create(AutoCreate)`, :308-339): GET; a 404 → POST of a Lease
//!   with an **empty spec** (409 AlreadyExists → GET);
//! - `changed()` (manager.rs:649-682) is the loop: `sync(Soft)`; if the flag differs from
//!   `holder == self`, flip it and return (the **only** place the flag changes); else one
//!   `watcher_step()` (:703-743): holder → sleep until `expiry − grace` (wall-derived), then
//!   `lock(Soft)`; unlocked → `lock(Soft)`; locked and expired → `release(Force)`, then sleep
//!   U[100, 1000] ms; locked and valid → sleep until `expiry`. `LockConflict` (a 409) → the
//!   conflict back-off (0.1 s … 5 s, ×2, backoff.rs) and loop; any other error ends `changed()`
//!   with `Err`: `watch()` (:584-639) sleeps its own back-off (1 s … 30 s, ×2) and calls
//!   `changed()` again, **the flag untouched**;
//! - `lock(Soft)` (state.rs:159-224): `sync(Soft)`; self → strategic patch `{renewTime: now,
//!   LD}`; no holder → server-side apply (force false, field manager per identity) `{acquire=
//!   renew=now, holder: self, LD}`, then a **second, separate** strategic patch `{leaseTransitions:
//!   cached + 1}`; another holder → nothing; after a write, `sync(Force)`. No write carries a
//!   resourceVersion: the lock is SSA field ownership (a 409 when another candidate's apply owns
//!   the holder), and a renewal extends whoever holds the Lease;
//! - `release(opts)` (state.rs:226-248): `sync(Soft)`; if self, or expired, or `Force`: strategic
//!   patch nulling acquireTime, renewTime, holderIdentity and leaseDurationSeconds (no
//!   resourceVersion: with `Force` it is sent whatever the GET just showed); then `sync(Force)`;
//! - a graceful stop drops the receivers: `watch()` sees its channel closed, drops the running
//!   `changed()` (its request abandoned) and calls `release()` (`Soft`), then returns;
//! - no request timeout (kube ≥ 4.0.0 `8cb0d011` has no read timeout): a request whose answer
//!   never comes hangs the loop, and the flag, for ever.
//!
//! So the leader renews once per `LD − grace` (25 s by default) at `renewTime + LD − grace` on
//! its wall clock; a follower sleeps to the cached expiry, GETs, and, if nothing moved,
//! force-releases and locks. On an API or network error the flag **stays true**; if the Lease is
//! deleted every sync is a 404 and nobody recreates it.

use super::ElectorLoop;
use super::Outputs;
use super::config::ConfigError;
use super::io::{Io, fresh_record};
use super::record::micros_of;
use super::{
    ElectorConfig, Fields, Generation, LockError, LockOp, LockResult, Note, Now, Output, Record, TimerKind, WriteShape,
    WriteVerb,
};
use crate::rng::ComponentRng;
use crate::sym::Sym;
use crate::time::{NANOS_PER_SEC, Nanos};
use std::sync::Arc;

/// `LeaseState.holder` as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Holder {
    None,
    Some(Sym),
    /// The `inconsistent-identity-XXXXXX` holder made up for a Lease with times but no holder.
    Inconsistent,
}

/// A step of `LeaseState::new` (create mode `AutoCreate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InitStep {
    Get,
    Post,
    GetAgain,
}

/// A step of `lock(Soft)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LockStep {
    Sync,
    Renew,
    Apply,
    Transitions,
    Refresh,
}

/// A step of `release(opts)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReleaseStep {
    Sync,
    Null,
    Refresh,
}

/// The request in flight, as where it sits in the code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Init(InitStep),
    /// `changed()`'s `sync(Soft)` at the top of its loop.
    Top,
    Lock(LockStep),
    Release(ReleaseStep),
}

/// What `watcher_step()` (or `changed()`) ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StepResult {
    Ok,
    Conflict,
    Err,
}

/// The one sleep in progress (the `Delay` timer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sleep {
    /// The holder waits for `expiry − grace`, then `lock(Soft)`.
    Renew,
    /// Another holder's valid lease: wait for its expiry; the step is `Ok`.
    Valid,
    /// After `release(Force)`: U[100, 1000] ms, then the step returns `result`.
    AfterRelease(StepResult),
    /// `changed()`'s conflict back-off.
    Conflict,
    /// `watch()`'s back-off after `changed()` failed.
    Watch,
}

/// `BackoffSleep` (backoff.rs): each sleep drawn from `[last, last·mult]`, or `[max/mult, max]`
/// once that passes `max`; `reset` goes back to `min`.
#[derive(Clone, Copy, Debug)]
struct BackoffSleep {
    min: f64,
    max: f64,
    mult: f64,
    last: f64,
}

impl BackoffSleep {
    const fn new(min: f64, max: f64, mult: f64) -> Self {
        BackoffSleep { min, max, mult, last: min }
    }

    fn reset(&mut self) {
        self.last = self.min;
    }

    fn next(&mut self, rng: &mut ComponentRng) -> Nanos {
        let (lo, hi) = if self.last * self.mult > self.max {
            (self.max / self.mult, self.max)
        } else {
            (self.last, self.last * self.mult)
        };
        self.last = lo + rng.unit_f64() * (hi - lo);
        (self.last * NANOS_PER_SEC as f64) as Nanos
    }
}

/// manager.rs:35-41.
const CONFLICT_BACKOFF: BackoffSleep = BackoffSleep::new(0.1, 5.0, 2.0);
const WATCHER_BACKOFF: BackoffSleep = BackoffSleep::new(1.0, 30.0, 2.0);

#[derive(Debug)]
pub struct KubeLeaseManagerElector {
    config: Arc<ElectorConfig>,
    me: Sym,
    rng: ComponentRng,
    io: Io,
    op: Option<Op>,
    sleep: Option<Sleep>,
    holder: Holder,
    /// Wall-clock Unix nanoseconds.
    expiry: i64,
    transitions: i32,
    /// `LeaseManager.is_leader`: the value `watch()` sends on its channel.
    flag: bool,
    backoff_conflict: BackoffSleep,
    backoff_watch: BackoffSleep,
    /// The receivers are dropped: `release()` runs, then the task returns.
    closing: bool,
    done: bool,
}

impl KubeLeaseManagerElector {
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym, rng: ComponentRng) -> Self {
        let config: Arc<ElectorConfig> = config.into();
        KubeLeaseManagerElector {
            config,
            me,
            rng,
            io: Io::default(),
            op: None,
            sleep: None,
            holder: Holder::None,
            expiry: i64::MIN,
            transitions: 0,
            flag: false,
            backoff_conflict: CONFLICT_BACKOFF,
            backoff_watch: WATCHER_BACKOFF,
            closing: false,
            done: false,
        }
    }

    /// `params.duration` and `params.grace`: whole seconds.
    fn duration_seconds(&self) -> i32 {
        self.config.lease_duration_seconds()
    }

    fn grace(&self) -> Nanos {
        self.config.grace / NANOS_PER_SEC * NANOS_PER_SEC
    }

    fn is_holder(&self) -> bool {
        self.holder == Holder::Some(self.me)
    }

    fn is_expired(&self, now: Now) -> bool {
        now.wall > self.expiry
    }

    fn send(&mut self, op: Op, lock_op: LockOp, out: &mut Outputs) {
        self.op = Some(op);
        self.io.send(lock_op, self.config.request_timeout, out);
    }

    fn patch(record: Record, nulls: Fields, keep: Fields) -> LockOp {
        LockOp::Write(record, WriteShape::patch(false).nulls(nulls).keep(keep))
    }

    fn sleep_for(&mut self, what: Sleep, after: Nanos, out: &mut Outputs) {
        self.sleep = Some(what);
        self.io.arm(TimerKind::Delay, after, out);
    }

    /// `grace_sleep_duration` (manager.rs:765-771): `(expiry − now).saturating_sub(grace)`.
    fn until_expiry(&self, now: Now, grace: Nanos) -> Nanos {
        ((self.expiry - now.wall).max(0) as Nanos).saturating_sub(grace)
    }

    /// `sync` with a Lease read (state.rs:129-153, with `get`'s rewrite, :277-295).
    fn read(&mut self, lease: &Record, now: Now) {
        let inconsistent = lease.absent.has(Fields::HOLDER)
            && (!lease.absent.has(Fields::RENEW) || !lease.absent.has(Fields::ACQUIRE));
        self.holder = if inconsistent {
            Holder::Inconsistent
        } else if lease.absent.has(Fields::HOLDER) {
            Holder::None
        } else {
            Holder::Some(lease.holder_identity)
        };
        self.transitions = if lease.absent.has(Fields::TRANSITIONS) { 0 } else { lease.leader_transitions };
        let has_times = !inconsistent && !lease.absent.has(Fields::RENEW) && !lease.absent.has(Fields::DURATION);
        self.expiry = match lease.renew_expiry_unix_nanos() {
            Some(e) if has_times => e,
            _ => now.wall - 1,
        };
    }

    /// A 404 in `sync`: the state is erased (state.rs:119-127).
    fn erase(&mut self, now: Now) {
        self.holder = Holder::None;
        self.transitions = 0;
        self.expiry = now.wall - 1;
    }

    // ---- changed() ----------------------------------------------------------------------------

    /// The top of `changed()`'s loop: `sync(Soft)`.
    fn top(&mut self, now: Now, out: &mut Outputs) {
        if self.is_expired(now) {
            self.send(Op::Top, LockOp::Get, out);
        } else {
            self.check_flag(now, out);
        }
    }

    /// `changed()` after its sync: flip the flag and return, or one `watcher_step()`.
    fn check_flag(&mut self, now: Now, out: &mut Outputs) {
        let is_holder = self.is_holder();
        if self.flag != is_holder {
            self.flag = is_holder;
            out.push(if is_holder { Output::StartedLeading } else { Output::StoppedLeading });
            // `watch()` sends the new state (backoff_w.reset) and calls `changed()` again, with
            // a fresh conflict back-off.
            self.backoff_watch.reset();
            self.backoff_conflict.reset();
            return self.top(now, out);
        }
        if is_holder {
            let wait = self.until_expiry(now, self.grace());
            self.sleep_for(Sleep::Renew, wait, out);
        } else if self.holder == Holder::None {
            self.lock(now, out);
        } else if self.is_expired(now) {
            out.note(Note::AttemptingToAcquire);
            self.release(now, out);
        } else {
            out.note(Note::HeldByAnother);
            // A real sleep wakes a little after the instant it was computed for, so the next
            // `is_expired` (`now > expiry`) holds; one nanosecond stands for that.
            let wait = self.until_expiry(now, 0) + 1;
            self.sleep_for(Sleep::Valid, wait, out);
        }
    }

    /// `watcher_step()` returned `result` to `changed()`.
    fn step_done(&mut self, result: StepResult, now: Now, out: &mut Outputs) {
        match result {
            StepResult::Ok => {
                self.backoff_conflict.reset();
                self.top(now, out);
            }
            StepResult::Conflict => {
                let wait = self.backoff_conflict.next(&mut self.rng);
                self.sleep_for(Sleep::Conflict, wait, out);
            }
            // `changed()` returns the error; `watch()` logs it and sleeps its back-off.
            StepResult::Err => {
                let wait = self.backoff_watch.next(&mut self.rng);
                self.sleep_for(Sleep::Watch, wait, out);
            }
        }
    }

    // ---- lock(Soft) ---------------------------------------------------------------------------

    fn lock(&mut self, now: Now, out: &mut Outputs) {
        if self.is_expired(now) {
            self.send(Op::Lock(LockStep::Sync), LockOp::Get, out);
        } else {
            self.lock_write(now, out);
        }
    }

    fn lock_write(&mut self, now: Now, out: &mut Outputs) {
        let at = Some(micros_of(now.wall));
        let ld = self.duration_seconds();
        if self.is_holder() {
            let record = Record { renew_time_micros: at, lease_duration_seconds: ld, ..Record::default() };
            let keep = Fields::HOLDER.with(Fields::ACQUIRE).with(Fields::TRANSITIONS);
            self.send(Op::Lock(LockStep::Renew), Self::patch(record, Fields::NONE, keep), out);
        } else if self.holder == Holder::None {
            let record = fresh_record(self.me, ld, now, 0);
            let shape = WriteShape {
                verb: WriteVerb::Apply { force: false, with_rv: false, cached_metadata: false },
                nulls: Fields::NONE,
                keep: Fields::TRANSITIONS,
            };
            self.send(Op::Lock(LockStep::Apply), LockOp::Write(record, shape), out);
        } else {
            // Locked by another and not forced: nothing.
            self.step_done(StepResult::Ok, now, out);
        }
    }

    fn lock_result(&mut self, step: LockStep, now: Now, result: LockResult, out: &mut Outputs) {
        let failed = |e: LockError| if e == LockError::Conflict { StepResult::Conflict } else { StepResult::Err };
        match (step, result) {
            (LockStep::Sync, Ok(lease)) => {
                self.read(&lease, now);
                self.lock_write(now, out);
            }
            (LockStep::Sync | LockStep::Refresh, Err(LockError::NotFound)) => {
                self.erase(now);
                self.step_done(StepResult::Err, now, out);
            }
            (LockStep::Renew, Ok(_)) => {
                out.note(Note::RenewedLease);
                self.send(Op::Lock(LockStep::Refresh), LockOp::Get, out);
            }
            (LockStep::Apply, Ok(_)) => {
                out.note(Note::AcquiredLease);
                let record = Record { leader_transitions: self.transitions + 1, ..Record::default() };
                let keep = Fields::HOLDER.with(Fields::DURATION).with(Fields::ACQUIRE).with(Fields::RENEW);
                self.send(Op::Lock(LockStep::Transitions), Self::patch(record, Fields::NONE, keep), out);
            }
            (LockStep::Transitions, Ok(_)) => self.send(Op::Lock(LockStep::Refresh), LockOp::Get, out),
            (LockStep::Refresh, Ok(lease)) => {
                self.read(&lease, now);
                self.step_done(StepResult::Ok, now, out);
            }
            (LockStep::Renew, Err(e)) => {
                out.note(Note::FailedToRenew);
                self.step_done(failed(e), now, out);
            }
            (LockStep::Apply | LockStep::Transitions, Err(e)) => {
                out.note(Note::FailedToAcquire);
                self.step_done(failed(e), now, out);
            }
            (_, Err(e)) => self.step_done(failed(e), now, out),
        }
    }

    // ---- release(opts) ------------------------------------------------------------------------

    /// `release(Force)` from `watcher_step()`, or `release(Soft)` when the channel closes.
    fn release(&mut self, now: Now, out: &mut Outputs) {
        if self.is_expired(now) {
            self.send(Op::Release(ReleaseStep::Sync), LockOp::Get, out);
        } else {
            self.release_write(now, out);
        }
    }

    fn release_write(&mut self, now: Now, out: &mut Outputs) {
        let force = !self.closing;
        if self.is_holder() || self.is_expired(now) || force {
            let nulls = Fields::HOLDER.with(Fields::DURATION).with(Fields::ACQUIRE).with(Fields::RENEW);
            self.send(Op::Release(ReleaseStep::Null), Self::patch(Record::default(), nulls, Fields::TRANSITIONS), out);
        } else {
            self.send(Op::Release(ReleaseStep::Refresh), LockOp::Get, out);
        }
    }

    fn release_result(&mut self, step: ReleaseStep, now: Now, result: LockResult, out: &mut Outputs) {
        let outcome = match (step, result) {
            (ReleaseStep::Sync, Ok(lease)) => {
                self.read(&lease, now);
                return self.release_write(now, out);
            }
            (ReleaseStep::Null, Ok(_)) => {
                out.note(Note::Released);
                return self.send(Op::Release(ReleaseStep::Refresh), LockOp::Get, out);
            }
            (ReleaseStep::Refresh, Ok(lease)) => {
                self.read(&lease, now);
                StepResult::Ok
            }
            (ReleaseStep::Sync | ReleaseStep::Refresh, Err(LockError::NotFound)) => {
                self.erase(now);
                StepResult::Err
            }
            (ReleaseStep::Null, Err(e)) => {
                out.note(Note::ReleaseFailed);
                if e == LockError::Conflict { StepResult::Conflict } else { StepResult::Err }
            }
            (_, Err(e)) => {
                if e == LockError::Conflict {
                    StepResult::Conflict
                } else {
                    StepResult::Err
                }
            }
        };
        if self.closing {
            return self.finish(out);
        }
        // watcher_step: sleep U[100, 1000] ms whatever the release returned, then return it.
        let wait = self.rng.uniform_u64(100, 1000) * 1_000_000;
        self.sleep_for(Sleep::AfterRelease(outcome), wait, out);
    }

    // ---- inputs -------------------------------------------------------------------------------

    /// `LeaseState::new` → `create(AutoCreate)` (state.rs:308-339). Its errors fail
    /// `LeaseManager::new`, and the program exits.
    fn init_result(&mut self, step: InitStep, now: Now, result: LockResult, out: &mut Outputs) {
        match (step, result) {
            (InitStep::Get, Err(LockError::NotFound)) => {
                let empty = Fields::HOLDER
                    .with(Fields::DURATION)
                    .with(Fields::ACQUIRE)
                    .with(Fields::RENEW)
                    .with(Fields::TRANSITIONS);
                let shape = WriteShape { verb: WriteVerb::Post, nulls: empty, keep: Fields::NONE };
                self.send(Op::Init(InitStep::Post), LockOp::Write(Record::default(), shape), out);
            }
            (InitStep::Post, Err(LockError::Conflict)) => self.send(Op::Init(InitStep::GetAgain), LockOp::Get, out),
            // The Lease read here is not kept: `changed()` starts from an expired, empty state.
            (_, Ok(_)) => self.top(now, out),
            (_, Err(_)) => {
                self.done = true;
                self.io.cancel_all();
                out.push(Output::Exception("kube-lease-manager LeaseManager::new failed"));
                out.push(Output::Exited);
            }
        }
    }

    fn finish(&mut self, out: &mut Outputs) {
        self.done = true;
        self.io.cancel_all();
        out.push(Output::Exited);
    }
}

impl ElectorLoop for KubeLeaseManagerElector {
    fn config(&self) -> &ElectorConfig {
        &self.config
    }

    fn is_leader(&self) -> bool {
        self.flag
    }

    fn awaiting_result(&self) -> bool {
        self.io.awaiting
    }

    fn start(&mut self, now: Now, out: &mut Outputs) {
        if self.op.is_some() || self.done {
            return;
        }
        out.note(Note::AttemptingToAcquire);
        // LeaseState::new: expiry = now − 1 ns.
        self.expiry = now.wall - 1;
        self.send(Op::Init(InitStep::Get), LockOp::Get, out);
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        self.io.awaiting = false;
        let Some(op) = self.op.take() else { return };
        match op {
            Op::Init(step) => self.init_result(step, now, result, out),
            Op::Top => match result {
                Ok(lease) => {
                    self.read(&lease, now);
                    self.check_flag(now, out);
                }
                Err(e) => {
                    if e == LockError::NotFound {
                        self.erase(now);
                    }
                    self.step_done(StepResult::Err, now, out);
                }
            },
            Op::Lock(step) => self.lock_result(step, now, result, out),
            Op::Release(step) => self.release_result(step, now, result, out),
        }
    }

    fn on_timer(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut Outputs) {
        if !self.io.live(kind, generation) || kind != TimerKind::Delay || self.done {
            return;
        }
        let Some(sleep) = self.sleep.take() else { return };
        match sleep {
            Sleep::Renew => self.lock(now, out),
            Sleep::Valid => self.step_done(StepResult::Ok, now, out),
            Sleep::AfterRelease(result) => self.step_done(result, now, out),
            Sleep::Conflict => self.top(now, out),
            Sleep::Watch => {
                // A new `changed()`: a fresh conflict back-off.
                self.backoff_conflict.reset();
                self.top(now, out);
            }
        }
    }

    /// The receivers are dropped (a graceful stop): the consumer is gone, so the work stops;
    /// `watch()` drops the running `changed()` and calls `release()` (`Soft`), then returns.
    fn stop(&mut self, now: Now, out: &mut Outputs) {
        if self.closing || self.done {
            return;
        }
        self.closing = true;
        if self.flag {
            out.push(Output::StoppedLeading);
        }
        self.io.abandon(out);
        self.io.cancel_all();
        self.sleep = None;
        // Still in `LeaseManager::new` (or not started): there is no watch task yet.
        let before_watch = matches!(self.op, Some(Op::Init(_))) || self.expiry == i64::MIN;
        self.op = None;
        if before_watch {
            return self.finish(out);
        }
        self.release(now, out);
    }

    fn lease_expired(&self, now: Now) -> Option<bool> {
        Some(self.is_expired(now))
    }
}

/// manager.rs:317-335: whole seconds, 0 < grace < duration (the builder's setters skip this;
/// leasesim always checks).
pub(super) fn validate(c: &ElectorConfig) -> Result<(), ConfigError> {
    use super::config::ConfigKey::Grace;
    let (ld_s, grace_s) = (c.lease_duration / NANOS_PER_SEC, c.grace / NANOS_PER_SEC);
    if ld_s == 0 || grace_s == 0 {
        return Err(ConfigError::new(Grace, "duration and grace period should be greater than zero"));
    }
    if grace_s >= ld_s {
        return Err(ConfigError::new(Grace, "grace period should be less than lease lock duration"));
    }
    Ok(())
}
