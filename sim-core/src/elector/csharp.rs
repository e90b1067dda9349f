//! kubernetes-client/csharp's `LeaderElector` (`src/KubernetesClient/LeaderElection/`, read at
//! `60fe2b96`), as docs/sources/csharp-client.md records it:
//! - wall clock throughout (`DateTime.UtcNow` written, `DateTimeOffset.Now` compared);
//! - `TryAcquireOrRenew` (LeaderElector.cs:143-224): Get; a 404 **or any null holder or time**
//!   → Create (POST), which is a 409 for ever when the Lease exists; observedTime moves when
//!   holder, acquireTime or renewTime differ (LeaderElectionRecord.cs:36-39); the empty-holder
//!   shortcut (`holder != ""` guards the expiry test); a valid lease of another →
//!   false; else PUT of the cached object (MetaObjectLock.cs:71-95), transitions +1 on a
//!   change of holder;
//! - expiry `observedTime + LD > Now` (:194-200) with the **record's** LD since `06c216b9`
//!   (PR #1707, first tag v19.0.2: `csharp-client`) and the **own configured** LD before
//!   (`csharp-client-pre-2026`); a missing LD reads as 15 s (LeaseLock.cs:28-35);
//! - `AcquireAsync` (:226-257): each attempt races `Delay(RP·1.2·(1+U))`; an attempt that loses
//!   the race is orphaned and a new one starts at once (leasesim abandons the orphaned
//!   attempt's request); a false attempt waits RP; a transport exception that wins the race
//!   propagates and kills the elector (notes §9.11);
//! - `RunUntilLeadershipLostAsync` (:58-114): OnStartedLeading; rounds race
//!   `Task.Run(while !TryAcquireOrRenew: Delay(RP))` against `Delay(RD)`; HTTP status errors are
//!   retried every RP within the round; a transport error or timeout ends the round at once;
//!   `finally OnStoppedLeading`. **When Delay(RD) wins, the renew task is not cancelled**: it
//!   keeps trying every RP until one succeeds, renewing a Lease whose owner stopped leading
//!   (modelled: the orphan shares the elector's one connection, so its requests and the main
//!   loop's go one at a time);
//! - no release anywhere; `Dispose` does nothing;
//! - `after_lost = "rejoin"` (the default here) is `RunAndTryToHoldLeadershipForeverAsync`,
//!   which re-runs the loop at once in the same process (the orphan lives on); `exit` and
//!   `restart` end the process when `RunUntilLeadershipLostAsync` returns.

use super::ElectorLoop;
use super::Outputs;
use super::io::{Io, fresh_record, wall_ms};
use super::{
    Algorithm, ElectorConfig, Fields, Generation, LockError, LockOp, LockResult, Note, Now, Output, Record, TimerKind,
    WriteShape,
};
use crate::rng::ComponentRng;
use crate::sym::Sym;
use crate::time::Nanos;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Get,
    Create,
    Put,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Main,
    Orphan,
}

#[derive(Clone, Copy, Debug)]
struct Try {
    step: Step,
    candidate: Record,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// An AcquireAsync attempt racing its delay.
    Acquiring,
    /// `await Delay(RP)` after a false attempt.
    AcquireSleep,
    /// A renew round racing Delay(RD); `sleeping`: the task is in its `Delay(RP)`.
    Round {
        sleeping: bool,
    },
    BetweenRounds,
    Done,
}

enum Outcome {
    Pending,
    Done(bool),
    /// A transport exception or timeout (not an HttpOperationException).
    Raised(&'static str),
}

#[derive(Debug)]
pub struct CSharpElector {
    config: ElectorConfig,
    me: Sym,
    rng: ComponentRng,
    io: Io,
    observed: Option<Record>,
    observed_ms: i64,
    phase: Phase,
    main: Option<Try>,
    orphan: Option<Try>,
    /// The orphan is in its `Delay(RP)`.
    orphan_sleeping: bool,
    in_flight: Option<Slot>,
    queued: Option<(Slot, LockOp)>,
    leading: bool,
    record_duration: bool,
    /// `reportedLeader`: the holder last passed to `OnNewLeader` (None: null, nothing yet).
    reported: Option<Sym>,
}

impl CSharpElector {
    pub fn new(config: ElectorConfig, me: Sym, rng: ComponentRng) -> Self {
        let record_duration = config.algorithm == Algorithm::CSharpClient;
        CSharpElector {
            config,
            me,
            rng,
            io: Io::default(),
            observed: None,
            observed_ms: 0,
            phase: Phase::Idle,
            main: None,
            orphan: None,
            orphan_sleeping: false,
            in_flight: None,
            queued: None,
            leading: false,
            record_duration,
            reported: None,
        }
    }

    /// `MaybeReportTransition` (LeaderElector.cs:259-274): `OnNewLeader(holder)` when the
    /// observed record's holder is not the one last reported. Called after each AcquireAsync
    /// attempt (its `finally`, :252-255: after a success, after the RP wait of a false attempt,
    /// when the race delay wins) and by the renew task after each failed try's RP wait (:77),
    /// orphaned tasks included; never after a successful renew or when a round times out.
    fn maybe_report(&mut self, out: &mut Outputs) {
        let Some(record) = self.observed else { return };
        if self.reported != Some(record.holder_identity) {
            self.reported = Some(record.holder_identity);
            out.push(Output::NewLeader(record.holder_identity));
        }
    }

    /// `RunAndTryToHoldLeadershipForeverAsync` loops in-process.
    fn forever(&self) -> bool {
        self.config.after_lost == super::AfterLost::Rejoin
    }

    fn acquire_attempt(&mut self, now: Now, out: &mut Outputs) {
        self.phase = Phase::Acquiring;
        // Delay(RP · JitterFactor · (1 + U)) (:236).
        let rp = self.config.retry_period as f64;
        let race = (rp * self.config.jitter_factor * (1.0 + self.rng.unit_f64())) as Nanos;
        self.io.arm(TimerKind::RoundDeadline, race, out);
        self.begin_try(Slot::Main, now, out);
    }

    fn begin_try(&mut self, slot: Slot, now: Now, out: &mut Outputs) {
        let t = Try { step: Step::Get, candidate: fresh_record(self.me, self.config.lease_duration_seconds(), now, 0) };
        match slot {
            Slot::Main => self.main = Some(t),
            Slot::Orphan => self.orphan = Some(t),
        }
        self.send(slot, LockOp::Get, out);
    }

    fn send(&mut self, slot: Slot, op: LockOp, out: &mut Outputs) {
        if self.in_flight.is_none() {
            self.in_flight = Some(slot);
            self.io.send(op, self.config.request_timeout, out);
        } else {
            self.queued = Some((slot, op));
        }
    }

    /// Forgets `slot`'s request (in flight or queued); the other slot's queued one goes out.
    fn drop_request(&mut self, slot: Slot, out: &mut Outputs) {
        if self.queued.is_some_and(|(s, _)| s == slot) {
            self.queued = None;
        }
        if self.in_flight == Some(slot) {
            self.io.abandon(out);
            self.in_flight = None;
            self.flush(out);
        }
    }

    fn flush(&mut self, out: &mut Outputs) {
        if self.in_flight.is_none()
            && let Some((slot, op)) = self.queued.take()
        {
            self.in_flight = Some(slot);
            self.io.send(op, self.config.request_timeout, out);
        }
    }

    fn main_outcome(&mut self, outcome: Outcome, now: Now, out: &mut Outputs) {
        match (self.phase, outcome) {
            (_, Outcome::Pending) => {}
            (Phase::Acquiring, Outcome::Done(true)) => {
                self.io.cancel(TimerKind::RoundDeadline);
                out.note(Note::AcquiredLease);
                // `return` runs the attempt's `finally` before OnStartedLeading.
                self.maybe_report(out);
                self.leading = true;
                out.push(Output::StartedLeading);
                self.begin_round(now, out);
            }
            (Phase::Acquiring, Outcome::Done(false)) => {
                self.io.cancel(TimerKind::RoundDeadline);
                out.note(Note::FailedToAcquire);
                self.phase = Phase::AcquireSleep;
                self.io.arm(TimerKind::Retry, self.config.retry_period, out);
            }
            (Phase::Acquiring, Outcome::Raised(what)) => {
                // It propagates out of AcquireAsync (through the attempt's `finally`), before
                // RunUntilLeadershipLostAsync's try: no OnStoppedLeading, and the forever loop
                // breaks too.
                self.maybe_report(out);
                self.io.cancel_all();
                self.phase = Phase::Done;
                out.push(Output::Exception(what));
            }
            (Phase::Round { .. }, Outcome::Done(true)) => {
                self.io.cancel(TimerKind::RoundDeadline);
                out.note(Note::RenewedLease);
                self.phase = Phase::BetweenRounds;
                self.io.arm(TimerKind::NextRound, self.config.retry_period, out);
            }
            (Phase::Round { .. }, Outcome::Done(false)) => {
                self.phase = Phase::Round { sleeping: true };
                self.io.arm(TimerKind::RoundTick, self.config.retry_period, out);
            }
            (Phase::Round { .. }, Outcome::Raised(_)) => {
                // Caught in the task: OnError, return false: the round (and leadership) ends.
                self.io.cancel(TimerKind::RoundDeadline);
                out.note(Note::FailedToRenew);
                self.lost(now, out);
            }
            _ => {}
        }
    }

    fn begin_round(&mut self, now: Now, out: &mut Outputs) {
        self.phase = Phase::Round { sleeping: false };
        self.io.arm(TimerKind::RoundDeadline, self.config.renew_deadline, out);
        self.begin_try(Slot::Main, now, out);
    }

    /// `finally OnStoppedLeading()`; then the forever loop runs AcquireAsync again, or the
    /// program ends.
    fn lost(&mut self, now: Now, out: &mut Outputs) {
        self.io.cancel(TimerKind::RoundTick);
        self.io.cancel(TimerKind::NextRound);
        if std::mem::take(&mut self.leading) {
            out.push(Output::StoppedLeading);
        }
        if self.forever() {
            out.note(Note::AttemptingToAcquire);
            self.acquire_attempt(now, out);
        } else {
            self.io.cancel_all();
            self.phase = Phase::Done;
            out.push(Output::Exited);
        }
    }

    /// `TryAcquireOrRenew` (:143-224).
    fn continue_try(&mut self, slot: Slot, t: &mut Try, now: Now, result: LockResult, out: &mut Outputs) -> Outcome {
        match (t.step, result) {
            (_, Err(LockError::Refused)) => Outcome::Raised("HttpRequestException (connection refused)"),
            (_, Err(LockError::Timeout)) => Outcome::Raised("OperationCanceledException (HttpClientTimeout)"),
            (Step::Get, Err(LockError::NotFound)) => {
                t.step = Step::Create;
                self.send(slot, LockOp::Create(t.candidate), out);
                Outcome::Pending
            }
            (Step::Get, Ok(old)) => {
                if old.absent.has(Fields::HOLDER) || old.absent.has(Fields::ACQUIRE) || old.absent.has(Fields::RENEW) {
                    // :171-184: Create, which the existing object turns into a 409.
                    t.step = Step::Create;
                    self.send(slot, LockOp::Create(t.candidate), out);
                    return Outcome::Pending;
                }
                let same = self.observed.is_some_and(|o| {
                    o.holder_identity == old.holder_identity
                        && o.acquire_time_micros == old.acquire_time_micros
                        && o.renew_time_micros == old.renew_time_micros
                });
                if !same {
                    self.observed = Some(old);
                    self.observed_ms = wall_ms(now);
                }
                if !old.holder_is_empty() && !self.expired(&old, wall_ms(now)) && !self.is_leader() {
                    if slot == Slot::Main {
                        out.note(Note::HeldByAnother);
                    }
                    return Outcome::Done(false);
                }
                if self.is_leader() {
                    t.candidate.acquire_time_micros = old.acquire_time_micros;
                    t.candidate.leader_transitions = old.leader_transitions;
                } else {
                    t.candidate.leader_transitions = old.leader_transitions + 1;
                }
                t.step = Step::Put;
                self.send(slot, LockOp::Write(t.candidate, WriteShape::PUT), out);
                Outcome::Pending
            }
            (Step::Create | Step::Put, Ok(_)) => {
                self.observed = Some(t.candidate);
                self.observed_ms = wall_ms(now);
                Outcome::Done(true)
            }
            // HttpOperationException: OnError, false.
            (_, Err(_)) => Outcome::Done(false),
        }
    }
}

impl CSharpElector {
    /// The expiry decision (:194-200): `observedTime + LD <= now`, wall milliseconds, LD the
    /// record's (a missing one reads as 15 s, LeaseLock.cs:28-35) or, before 06c216b9, the own.
    fn expired(&self, record: &Record, now_ms: i64) -> bool {
        let ld_ms = if !self.record_duration {
            (self.config.lease_duration / 1_000_000) as i64
        } else if record.absent.has(Fields::DURATION) {
            15_000
        } else {
            record.lease_duration_seconds as i64 * 1000
        };
        self.observed_ms + ld_ms <= now_ms
    }
}

impl ElectorLoop for CSharpElector {
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
        self.acquire_attempt(now, out);
    }

    fn on_timer(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut Outputs) {
        if !self.io.live(kind, generation) {
            return;
        }
        match (kind, self.phase) {
            (TimerKind::RoundDeadline, Phase::Acquiring) => {
                // The delay won: the attempt is orphaned (its request abandoned here), a new
                // attempt starts at once.
                self.drop_request(Slot::Main, out);
                self.main = None;
                out.note(Note::FailedToAcquire);
                self.maybe_report(out);
                self.acquire_attempt(now, out);
            }
            (TimerKind::Retry, Phase::AcquireSleep) => {
                self.maybe_report(out);
                self.acquire_attempt(now, out)
            }
            (TimerKind::RoundDeadline, Phase::Round { sleeping }) => {
                // Delay(RD) won: the renew task is not cancelled; it carries on as an orphan.
                if self.orphan.is_none()
                    && let Some(t) = self.main.take()
                {
                    self.orphan = Some(t);
                    if self.in_flight == Some(Slot::Main) {
                        self.in_flight = Some(Slot::Orphan);
                    }
                    if let Some((Slot::Main, op)) = self.queued {
                        self.queued = Some((Slot::Orphan, op));
                    }
                    self.orphan_sleeping = sleeping;
                    if sleeping {
                        self.io.cancel(TimerKind::RoundTick);
                        self.io.arm(TimerKind::Delay, self.config.retry_period, out);
                    }
                } else {
                    self.drop_request(Slot::Main, out);
                    self.main = None;
                }
                out.note(Note::FailedToRenew);
                self.lost(now, out);
            }
            (TimerKind::RoundTick, Phase::Round { sleeping: true }) => {
                self.phase = Phase::Round { sleeping: false };
                self.maybe_report(out);
                self.begin_try(Slot::Main, now, out);
            }
            (TimerKind::NextRound, Phase::BetweenRounds) => self.begin_round(now, out),
            (TimerKind::Delay, _) if self.orphan_sleeping => {
                self.orphan_sleeping = false;
                self.maybe_report(out);
                self.begin_try(Slot::Orphan, now, out);
            }
            _ => {}
        }
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        self.io.awaiting = false;
        let Some(slot) = self.in_flight.take() else { return };
        let t = match slot {
            Slot::Main => self.main.take(),
            Slot::Orphan => self.orphan.take(),
        };
        let Some(mut t) = t else {
            self.flush(out);
            return;
        };
        let outcome = self.continue_try(slot, &mut t, now, result, out);
        if matches!(outcome, Outcome::Pending) {
            match slot {
                Slot::Main => self.main = Some(t),
                Slot::Orphan => self.orphan = Some(t),
            }
        }
        match slot {
            Slot::Orphan => match outcome {
                Outcome::Pending => {}
                // Success ends the orphan (no one awaits it); false sleeps RP and tries again;
                // an exception is caught (`catch any`) and ends it.
                Outcome::Done(true) => out.note(Note::RenewedLease),
                Outcome::Done(false) => {
                    self.orphan = None;
                    self.orphan_sleeping = true;
                    self.io.arm(TimerKind::Delay, self.config.retry_period, out);
                }
                Outcome::Raised(_) => {}
            },
            Slot::Main => self.main_outcome(outcome, now, out),
        }
        self.flush(out);
    }

    /// The process is stopped: there is no release and no cancellation path but the token,
    /// which ends the loop (OnStoppedLeading in the finally) and the process.
    fn stop(&mut self, _now: Now, out: &mut Outputs) {
        if self.phase == Phase::Done {
            return;
        }
        self.io.abandon(out);
        self.in_flight = None;
        self.queued = None;
        self.io.cancel_all();
        self.phase = Phase::Done;
        if std::mem::take(&mut self.leading) {
            out.push(Output::StoppedLeading);
        }
        out.push(Output::Exited);
    }

    fn lease_expired(&self, now: Now) -> Option<bool> {
        self.observed.map(|r| self.expired(&r, wall_ms(now)))
    }
}
