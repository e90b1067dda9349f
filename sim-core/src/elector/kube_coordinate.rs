//! thedodd/kube-coordinate (Rust, `src/lib.rs`, v0.2.1, read at `a1713ae1`), as
//! docs/sources/kube-coordinate.md records it. Defaults LD 15 s, RD 10 s, RP 2 s, `api_timeout`
//! 5 s (:152-165); `Config::validate` (:240-286).
//! - state (:594-619): `Leading{lease, last_updated}`, `Following{lease, last_updated}` or
//!   `Standby`, `last_updated` an `Instant` (the **monotonic** clock); published on a watch
//!   channel (`LeaderState`): acting is `Leading`;
//! - `update_state(Some(lease))` (:474-541): a Lease equal to the cached one changes nothing;
//!   holder self → `Leading` (last_updated = now); holder `""` or absent → `Standby`; another →
//!   `Following` (last_updated = now). `update_state(None)` → `Standby`;
//! - `run()` (:353-385): one `try_acquire_or_renew()` (its error only logged), then a **watch on
//!   the Lease** and a loop: `select { watch event → update_state ; sleep(next_delay) → try, and
//!   on an error had_error = true, update_state(None) ; shutdown → break }`. The delay is
//!   recomputed on every iteration (after every watch event): `Leading` → `last_updated + RD`;
//!   `Following` → `last_updated + LD + U(0.01, 1.0)·1.2·LD` (the jitter redrawn each time);
//!   `Standby` after an error → `U(0.5, 1.5)·1.2·RP`; `Standby` → at once (:544-578);
//! - `try_acquire_or_renew` (:420-467): `Following`/`Standby` GET first (a 404 changes
//!   nothing); `Following` and not expired by its **own** LD from `last_updated` (:580-591) →
//!   nothing; else server-side apply, `force = true`, field manager = the group's shared
//!   `manager`, of the cached Lease (with its resourceVersion: a 409 if it moved) — or, in
//!   `Standby`, of a **fresh object without resourceVersion** (unconditional; leaseTransitions
//!   reset to 1). LD own, renewTime now; when not `Leading` also holder self, acquireTime now,
//!   `leaseTransitions = old + 1` (absent → 0). The leader does **not** GET before renewing;
//! - every request has `api_timeout` (5 s): a slow renewal is an error, and any error of a
//!   timer-driven try ends `Leading` at once (`Standby`);
//! - shutdown breaks the loop (after a try in flight): no release, and the channel keeps its
//!   last value, possibly `Leading`, until the process ends.
//!
//! The watch: the world delivers every change of the node's Lease (any writer's) to
//! [`KubeCoordinateElector::on_watch`] after the link's down latency; events that arrive while a
//! try is in flight wait until it ends (the loop's `select` is not polling the stream then).

use super::ElectorLoop;
use super::Outputs;
use super::config::ConfigError;
use super::io::{Io, fresh_record};
use super::record::micros_of;
use super::{
    ElectorConfig, Fields, Generation, JITTER_FACTOR, LockError, LockOp, LockResult, Note, Now, Output, Record,
    TimerKind, WriteShape, WriteVerb,
};
use crate::rng::ComponentRng;
use crate::sym::Sym;
use crate::time::{NANOS_PER_SEC, Nanos};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// `last_updated` is local monotonic time.
    Leading {
        last_updated: i64,
    },
    Following {
        last_updated: i64,
    },
    Standby,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Fetch,
    Apply,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Trying(Step),
    /// The loop's `sleep(next_delay)`.
    Waiting,
    Done,
}

#[derive(Debug)]
pub struct KubeCoordinateElector {
    config: Arc<ElectorConfig>,
    me: Sym,
    rng: ComponentRng,
    io: Io,
    phase: Phase,
    state: State,
    /// The Lease of `Leading`/`Following` (its resourceVersion is the lock's cache).
    lease: Option<Record>,
    /// The channel says `Leading`.
    acting: bool,
    had_error: bool,
    /// The first try's errors are only logged.
    initial: bool,
    /// Watch events that arrived during a try, in order (`None`: the Lease was deleted).
    pending: Vec<Option<Record>>,
    shutdown: bool,
    /// The holder last reported in a `NewLeader`.
    seen_holder: Option<Sym>,
}

impl KubeCoordinateElector {
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym, rng: ComponentRng) -> Self {
        let config: Arc<ElectorConfig> = config.into();
        KubeCoordinateElector {
            config,
            me,
            rng,
            io: Io::default(),
            phase: Phase::Idle,
            state: State::Standby,
            lease: None,
            acting: false,
            had_error: false,
            initial: true,
            pending: Vec::new(),
            shutdown: false,
            seen_holder: None,
        }
    }

    fn send(&mut self, step: Step, op: LockOp, out: &mut Outputs) {
        self.phase = Phase::Trying(step);
        self.io.send(op, self.config.request_timeout, out);
    }

    /// `try_acquire_or_renew` (:420-467).
    fn try_acquire_or_renew(&mut self, now: Now, out: &mut Outputs) {
        if matches!(self.state, State::Following { .. } | State::Standby) {
            self.send(Step::Fetch, LockOp::Get, out);
        } else {
            self.write(now, out);
        }
    }

    /// `is_lease_expired` (:580-591): by the elector's own LD, on the monotonic clock.
    fn expired(&self, now: Now) -> bool {
        match self.state {
            State::Leading { last_updated } | State::Following { last_updated } => {
                last_updated + self.config.lease_duration as i64 <= now.mono
            }
            State::Standby => true,
        }
    }

    /// Step 2 and 3 of `try_acquire_or_renew`: nothing for a follower whose leader is not
    /// expired; else the apply.
    fn write(&mut self, now: Now, out: &mut Outputs) {
        if matches!(self.state, State::Following { .. }) && !self.expired(now) {
            out.note(Note::HeldByAnother);
            return self.after_try(now, out);
        }
        let at = Some(micros_of(now.wall));
        let leading = matches!(self.state, State::Leading { .. });
        // The cached Lease, or in Standby `Config::lease()`: a fresh object without a
        // resourceVersion (transitions 0, so the write below makes it 1).
        let (base, with_rv) = match self.lease {
            Some(lease) if self.state != State::Standby => (lease, true),
            _ => (fresh_record(self.me, self.config.lease_duration_seconds(), now, 0), false),
        };
        let mut record =
            Record { lease_duration_seconds: self.config.lease_duration_seconds(), renew_time_micros: at, ..base };
        // Fields absent from the cached object stay out of the apply configuration.
        let mut left_out = base.absent.0 & Fields::HOLDER.with(Fields::ACQUIRE).with(Fields::TRANSITIONS).0;
        if !leading {
            record.holder_identity = self.me;
            record.acquire_time_micros = at;
            record.leader_transitions =
                if base.absent.has(Fields::TRANSITIONS) { 0 } else { base.leader_transitions + 1 };
            left_out = 0;
        }
        // `try_acquire_or_renew` applies the cached Lease whole (managedFields cleared), so its
        // labels and annotations are in the configuration and the manager owns them too.
        let verb = WriteVerb::Apply { force: true, with_rv, cached_metadata: with_rv };
        let shape = WriteShape { verb, nulls: Fields::NONE, keep: Fields(left_out) };
        self.send(Step::Apply, LockOp::Write(record, shape), out);
    }

    /// `update_state` (:474-541).
    fn update_state(&mut self, lease: Option<Record>, now: Now, out: &mut Outputs) {
        match lease {
            Some(lease) => {
                if self.lease == Some(lease) {
                    return;
                }
                let holder = if lease.absent.has(Fields::HOLDER) { Sym::EMPTY } else { lease.holder_identity };
                if self.seen_holder != Some(holder) {
                    self.seen_holder = Some(holder);
                    out.push(Output::NewLeader(holder));
                }
                if holder == self.me {
                    self.state = State::Leading { last_updated: now.mono };
                    self.lease = Some(lease);
                } else if holder == Sym::EMPTY {
                    self.state = State::Standby;
                    self.lease = None;
                } else {
                    self.state = State::Following { last_updated: now.mono };
                    self.lease = Some(lease);
                }
            }
            None => {
                self.state = State::Standby;
                self.lease = None;
            }
        }
        let leading = matches!(self.state, State::Leading { .. });
        if leading != self.acting {
            self.acting = leading;
            out.push(if leading { Output::StartedLeading } else { Output::StoppedLeading });
        }
    }

    /// A try ended: the loop takes the watch events that queued meanwhile, then sleeps.
    fn after_try(&mut self, now: Now, out: &mut Outputs) {
        self.initial = false;
        self.phase = Phase::Idle;
        for event in std::mem::take(&mut self.pending) {
            self.update_state(event, now, out);
        }
        if self.shutdown {
            return self.finish(out);
        }
        self.schedule(now, out);
    }

    /// `get_next_acquire_renew_time` (:544-578), armed as the loop's sleep.
    fn schedule(&mut self, now: Now, out: &mut Outputs) {
        let secs = |s: f64| (s * 1e9) as i64;
        let delay = match self.state {
            State::Leading { last_updated } => (last_updated + self.config.renew_deadline as i64 - now.mono).max(0),
            State::Following { last_updated } => {
                let ld = self.config.lease_duration as f64 / 1e9;
                let jitter = (0.01 + self.rng.unit_f64() * 0.99) * JITTER_FACTOR * ld;
                (last_updated + self.config.lease_duration as i64 + secs(jitter) - now.mono).max(0)
            }
            State::Standby if self.had_error => {
                self.had_error = false;
                let rp = self.config.retry_period as f64 / 1e9;
                secs((0.5 + self.rng.unit_f64()) * JITTER_FACTOR * rp)
            }
            State::Standby => 0,
        };
        self.phase = Phase::Waiting;
        self.io.arm(TimerKind::Retry, delay as Nanos, out);
    }

    fn finish(&mut self, out: &mut Outputs) {
        self.io.cancel_all();
        self.phase = Phase::Done;
        out.push(Output::Exited);
    }
}

impl ElectorLoop for KubeCoordinateElector {
    fn config(&self) -> &ElectorConfig {
        &self.config
    }

    fn is_leader(&self) -> bool {
        matches!(self.state, State::Leading { .. })
    }

    fn awaiting_result(&self) -> bool {
        self.io.awaiting
    }

    fn start(&mut self, now: Now, out: &mut Outputs) {
        if self.phase != Phase::Idle || !self.initial {
            return;
        }
        out.note(Note::AttemptingToAcquire);
        self.try_acquire_or_renew(now, out);
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        self.io.awaiting = false;
        let Phase::Trying(step) = self.phase else { return };
        let leading = matches!(self.state, State::Leading { .. });
        match (step, result) {
            (Step::Fetch, Ok(lease)) => {
                self.update_state(Some(lease), now, out);
                self.write(now, out);
            }
            // `get_opt` → `None`: nothing changes.
            (Step::Fetch, Err(LockError::NotFound)) => self.write(now, out),
            (Step::Apply, Ok(lease)) => {
                out.note(if leading { Note::RenewedLease } else { Note::AcquiredLease });
                self.update_state(Some(lease), now, out);
                self.after_try(now, out);
            }
            (_, Err(_)) => {
                out.note(if leading { Note::FailedToRenew } else { Note::FailedToAcquire });
                // run(): the first call's error is only logged; a timer-driven one sets
                // had_error and drops to Standby.
                if !self.initial {
                    self.had_error = true;
                    self.update_state(None, now, out);
                }
                self.after_try(now, out);
            }
        }
    }

    fn on_timer(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut Outputs) {
        if !self.io.live(kind, generation) {
            return;
        }
        if kind == TimerKind::Retry && self.phase == Phase::Waiting {
            self.try_acquire_or_renew(now, out);
        }
    }

    /// A watch event: the Lease as it was written (`None`: deleted). While a try runs it waits.
    fn on_watch(&mut self, now: Now, lease: Option<Record>, out: &mut Outputs) {
        match self.phase {
            Phase::Done => {}
            Phase::Idle | Phase::Trying(_) => self.pending.push(lease),
            Phase::Waiting => {
                self.update_state(lease, now, out);
                // The loop goes round: a new delay (and, following, a new jitter).
                self.schedule(now, out);
            }
        }
    }

    /// `handle.shutdown()`: the loop breaks at its next `select` (after a try in flight); no
    /// release; the channel keeps its last value until the process ends.
    fn stop(&mut self, _now: Now, out: &mut Outputs) {
        if self.shutdown || self.phase == Phase::Done {
            return;
        }
        self.shutdown = true;
        if !matches!(self.phase, Phase::Trying(_)) {
            self.finish(out);
        }
    }

    fn lease_expired(&self, now: Now) -> Option<bool> {
        self.lease.map(|_| self.expired(now))
    }
}

/// `Config::validate` (lib.rs:240-286), in its order and words.
pub(super) fn validate(c: &ElectorConfig) -> Result<(), ConfigError> {
    use super::config::ConfigKey::*;
    let (ld, rd, rp) = (c.lease_duration, c.renew_deadline, c.retry_period);
    if c.identity.is_empty() {
        return Err(ConfigError::new(Identity, "identity may not be empty"));
    }
    if ld <= rd {
        return Err(ConfigError::ordering(RenewDeadline, "lease_duration must be greater than renew_deadline"));
    }
    if rd <= (super::JITTER_FACTOR * rp as f64) as Nanos {
        return Err(ConfigError::ordering(RenewDeadline, "renew_deadline must be greater than retry_period*1.2"));
    }
    if ld < NANOS_PER_SEC {
        return Err(ConfigError::new(LeaseDuration, "lease_duration must be at least 1 second"));
    }
    if rd < NANOS_PER_SEC {
        return Err(ConfigError::new(RenewDeadline, "renew_deadline must be at least 1 second"));
    }
    if rp < NANOS_PER_SEC {
        return Err(ConfigError::new(RetryPeriod, "retry_period must be at least 1 second"));
    }
    if c.request_timeout.is_none_or(|t| t < NANOS_PER_SEC) {
        return Err(ConfigError::new(RequestTimeout, "api_timeout must be at least 1 second"));
    }
    Ok(())
}
