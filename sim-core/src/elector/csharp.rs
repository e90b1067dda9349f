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
//!   the race is left running (its one try goes on to its end, and a success updates the
//!   shared observed record) and a new one starts at once; a false attempt waits RP; a
//!   transport exception that wins the race propagates and kills the elector;
//! - `RunUntilLeadershipLostAsync` (:58-114): OnStartedLeading; rounds race
//!   `Task.Run(while !TryAcquireOrRenew: Delay(RP))` against `Delay(RD)`; HTTP status errors are
//!   retried every RP within the round; a transport error or timeout ends the round at once;
//!   `finally OnStoppedLeading`. **When Delay(RD) wins, the renew task is not cancelled**: it
//!   keeps trying every RP until one try succeeds (renewing the Lease, or taking it once
//!   another's record has expired, with no OnStartedLeading) or throws. Nothing bounds the
//!   number of such tasks or serialises their requests with the main loop's
//!   (MetaObjectLock.cs:27-95): each is a side task with its own request in flight
//!   ([`Output::SendSide`]), all sharing the observed record and the lock's cached object;
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
use std::collections::VecDeque;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Get,
    Create,
    Put,
}

/// One `TryAcquireOrRenew` in progress.
#[derive(Clone, Copy, Debug)]
struct Try {
    step: Step,
    candidate: Record,
    /// Its write takes the Lease from another holder (not a renewal).
    takes: bool,
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

/// What a try does next.
enum Next {
    /// Send this request and wait for its answer.
    Send(LockOp),
    /// The try returned true or false.
    Done(bool),
    /// A transport exception or timeout (not an HttpOperationException).
    Raised(&'static str),
}

/// A task the elector no longer awaits, still running (its request in flight, or asleep).
#[derive(Clone, Copy, Debug)]
struct Orphan {
    task: u32,
    /// The renew task's `while (!TryAcquireOrRenew) Delay(RP)` (true), or a lost acquire
    /// attempt's one try (false).
    loops: bool,
    /// The try in progress (None while asleep) and the request it waits for.
    current: Option<(Try, LockOp)>,
}

#[derive(Debug)]
pub struct CSharpElector {
    config: Arc<ElectorConfig>,
    me: Sym,
    rng: ComponentRng,
    io: Io,
    observed: Option<Record>,
    observed_ms: i64,
    phase: Phase,
    /// The main loop's try.
    main: Option<Try>,
    /// When the renew task's `Delay(RP)` ends (monotonic), while the round sleeps.
    main_wakes_at: i64,
    /// Tasks left running, by task number.
    orphans: Vec<Orphan>,
    /// Orphans asleep in `Delay(RP)`: (wakes at, monotonic; task), in the order they wake.
    sleepers: VecDeque<(i64, u32)>,
    next_task: u32,
    leading: bool,
    record_duration: bool,
    /// `reportedLeader`: the holder last passed to `OnNewLeader` (None: null, nothing yet).
    reported: Option<Sym>,
}

impl CSharpElector {
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym, rng: ComponentRng) -> Self {
        let config: Arc<ElectorConfig> = config.into();
        // `csharp-client` 19.0.2 (06c216b9); `version = "18.0.13"` and `csharp-client-pre-2026`
        // judge expiry by the own LeaseDuration.
        let record_duration = config.algorithm == Algorithm::CSharpClient && config.version == 0;
        CSharpElector {
            config,
            me,
            rng,
            io: Io::default(),
            observed: None,
            observed_ms: 0,
            phase: Phase::Idle,
            main: None,
            main_wakes_at: 0,
            orphans: Vec::new(),
            sleepers: VecDeque::new(),
            next_task: 0,
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
        // Delay(RP · JitterFactor · (1 + U)) (:235).
        let rp = self.config.retry_period as f64;
        let race = (rp * self.config.jitter_factor * (1.0 + self.rng.unit_f64())) as Nanos;
        self.io.arm(TimerKind::RoundDeadline, race, out);
        self.begin_main_try(now, out);
    }

    fn fresh_try(&self, now: Now) -> Try {
        Try {
            step: Step::Get,
            candidate: fresh_record(self.me, self.config.lease_duration_seconds(), now, 0),
            takes: false,
        }
    }

    fn begin_main_try(&mut self, now: Now, out: &mut Outputs) {
        self.main = Some(self.fresh_try(now));
        self.io.send(LockOp::Get, self.config.request_timeout, out);
    }

    fn new_task(&mut self) -> u32 {
        let task = self.next_task;
        self.next_task = self.next_task.wrapping_add(1);
        task
    }

    /// The main loop's try, its request in flight, is left running as a new side task (the
    /// request goes with it).
    fn orphan_main(&mut self, loops: bool, out: &mut Outputs) {
        let Some(t) = self.main.take() else { return };
        debug_assert!(self.io.awaiting, "a try between its requests: it sends the next at once");
        self.io.awaiting = false;
        let task = self.new_task();
        out.push(Output::Detach { task });
        let op = match t.step {
            Step::Get => LockOp::Get,
            Step::Create => LockOp::Create(t.candidate),
            Step::Put => LockOp::Write(t.candidate, WriteShape::PUT),
        };
        self.orphans.push(Orphan { task, loops, current: Some((t, op)) });
    }

    fn main_outcome(&mut self, next: Next, now: Now, out: &mut Outputs) {
        match (self.phase, next) {
            (_, Next::Send(_)) => unreachable!("sent by on_result"),
            (Phase::Acquiring, Next::Done(true)) => {
                self.io.cancel(TimerKind::RoundDeadline);
                out.note(Note::AcquiredLease);
                // `return` runs the attempt's `finally` before OnStartedLeading.
                self.maybe_report(out);
                self.leading = true;
                out.push(Output::StartedLeading);
                self.begin_round(now, out);
            }
            (Phase::Acquiring, Next::Done(false)) => {
                self.io.cancel(TimerKind::RoundDeadline);
                out.note(Note::FailedToAcquire);
                self.phase = Phase::AcquireSleep;
                self.io.arm(TimerKind::Retry, self.config.retry_period, out);
            }
            (Phase::Acquiring, Next::Raised(what)) => {
                // It propagates out of AcquireAsync (through the attempt's `finally`), before
                // RunUntilLeadershipLostAsync's try: no OnStoppedLeading, and the forever loop
                // breaks too.
                self.maybe_report(out);
                self.io.cancel_all();
                self.phase = Phase::Done;
                out.push(Output::Exception(what));
                // Tasks left running go on while the process lives.
                if let Some(&(at, _)) = self.sleepers.front() {
                    self.io.arm(TimerKind::Delay, at.saturating_sub(now.mono).max(0) as Nanos, out);
                }
            }
            (Phase::Round { .. }, Next::Done(true)) => {
                self.io.cancel(TimerKind::RoundDeadline);
                out.note(Note::RenewedLease);
                self.phase = Phase::BetweenRounds;
                self.io.arm(TimerKind::NextRound, self.config.retry_period, out);
            }
            (Phase::Round { .. }, Next::Done(false)) => {
                self.phase = Phase::Round { sleeping: true };
                self.main_wakes_at = now.mono.saturating_add(self.config.retry_period as i64);
                self.io.arm(TimerKind::RoundTick, self.config.retry_period, out);
            }
            (Phase::Round { .. }, Next::Raised(_)) => {
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
        self.begin_main_try(now, out);
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

    /// An orphan goes to sleep for RP from `now` (or until `wakes_at`).
    fn sleep_orphan(&mut self, task: u32, wakes_at: i64, now: Now, out: &mut Outputs) {
        let first = self.sleepers.front().is_none_or(|&(at, _)| wakes_at < at);
        // Orphans fall asleep in time order, each for RP: the queue stays in waking order.
        let k = self.sleepers.partition_point(|&(at, _)| at <= wakes_at);
        self.sleepers.insert(k, (wakes_at, task));
        if first {
            self.io.arm(TimerKind::Delay, wakes_at.saturating_sub(now.mono).max(0) as Nanos, out);
        }
    }

    /// Starts a try of orphan `task` (asleep until now).
    fn wake_orphan(&mut self, task: u32, now: Now, out: &mut Outputs) {
        let t = self.fresh_try(now);
        if let Some(o) = self.orphans.iter_mut().find(|o| o.task == task) {
            o.current = Some((t, LockOp::Get));
            out.push(Output::SendSide { task });
        }
    }

    /// What orphan `task`'s try does after its result.
    fn orphan_result(&mut self, task: u32, now: Now, result: LockResult, out: &mut Outputs) {
        let Some(k) = self.orphans.iter().position(|o| o.task == task) else { return };
        let Some((mut t, _)) = self.orphans[k].current.take() else { return };
        match self.continue_try(false, &mut t, now, result, out) {
            Next::Send(op) => {
                self.orphans[k].current = Some((t, op));
                out.push(Output::SendSide { task });
            }
            // Success ends the task (nobody awaits it): a renewal, or the Lease taken with no
            // OnStartedLeading. A lost acquire attempt ends after its one try whatever it
            // returned; an exception is caught (OnError) and ends the renew task (:80-85).
            Next::Done(true) => {
                out.note(if t.takes { Note::AcquiredLease } else { Note::RenewedLease });
                self.orphans.swap_remove(k);
            }
            Next::Done(false) if self.orphans[k].loops => {
                let wakes_at = now.mono.saturating_add(self.config.retry_period as i64);
                self.sleep_orphan(task, wakes_at, now, out);
            }
            Next::Done(false) | Next::Raised(_) => {
                self.orphans.swap_remove(k);
            }
        }
    }

    /// `TryAcquireOrRenew` (:143-224), one answer at a time. `main`: the main loop's try (the
    /// trace notes "held by another" for it alone).
    fn continue_try(&mut self, main: bool, t: &mut Try, now: Now, result: LockResult, out: &mut Outputs) -> Next {
        match (t.step, result) {
            (_, Err(LockError::Refused)) => Next::Raised("HttpRequestException (connection refused)"),
            (_, Err(LockError::Timeout)) => Next::Raised("OperationCanceledException (HttpClientTimeout)"),
            (Step::Get, Err(LockError::NotFound)) => {
                (t.step, t.takes) = (Step::Create, true);
                Next::Send(LockOp::Create(t.candidate))
            }
            (Step::Get, Ok(old)) => {
                if old.absent.has(Fields::HOLDER) || old.absent.has(Fields::ACQUIRE) || old.absent.has(Fields::RENEW) {
                    // :171-184: Create, which the existing object turns into a 409.
                    (t.step, t.takes) = (Step::Create, true);
                    return Next::Send(LockOp::Create(t.candidate));
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
                    if main {
                        out.note(Note::HeldByAnother);
                    }
                    return Next::Done(false);
                }
                if self.is_leader() {
                    t.candidate.acquire_time_micros = old.acquire_time_micros;
                    t.candidate.leader_transitions = old.leader_transitions;
                } else {
                    t.candidate.leader_transitions = old.leader_transitions + 1;
                    t.takes = true;
                }
                t.step = Step::Put;
                Next::Send(LockOp::Write(t.candidate, WriteShape::PUT))
            }
            (Step::Create | Step::Put, Ok(_)) => {
                self.observed = Some(t.candidate);
                self.observed_ms = wall_ms(now);
                Next::Done(true)
            }
            // HttpOperationException: OnError, false.
            (_, Err(_)) => Next::Done(false),
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
                // The delay won: the attempt is left running (:246-249), a new one starts at
                // once after the attempt's `finally`.
                self.orphan_main(false, out);
                out.note(Note::FailedToAcquire);
                self.maybe_report(out);
                self.acquire_attempt(now, out);
            }
            (TimerKind::Retry, Phase::AcquireSleep) => {
                self.maybe_report(out);
                self.acquire_attempt(now, out)
            }
            (TimerKind::RoundDeadline, Phase::Round { sleeping }) => {
                // Delay(RD) won: the renew task is not cancelled; it carries on as an orphan,
                // asleep until its Delay(RP) ends if it was in it, else with its request.
                if sleeping {
                    let task = self.new_task();
                    self.orphans.push(Orphan { task, loops: true, current: None });
                    self.io.cancel(TimerKind::RoundTick);
                    self.sleep_orphan(task, self.main_wakes_at, now, out);
                } else {
                    self.orphan_main(true, out);
                }
                out.note(Note::FailedToRenew);
                self.lost(now, out);
            }
            (TimerKind::RoundTick, Phase::Round { sleeping: true }) => {
                self.phase = Phase::Round { sleeping: false };
                self.maybe_report(out);
                self.begin_main_try(now, out);
            }
            (TimerKind::NextRound, Phase::BetweenRounds) => self.begin_round(now, out),
            (TimerKind::Delay, _) => {
                // Every orphan due now wakes (:76-77: MaybeReportTransition, then the next try).
                let Some(&(due, _)) = self.sleepers.front() else { return };
                while let Some(&(at, task)) = self.sleepers.front() {
                    if at > due {
                        self.io.arm(TimerKind::Delay, at.saturating_sub(now.mono).max(0) as Nanos, out);
                        break;
                    }
                    self.sleepers.pop_front();
                    self.maybe_report(out);
                    self.wake_orphan(task, now, out);
                }
            }
            _ => {}
        }
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        self.io.awaiting = false;
        let Some(mut t) = self.main.take() else { return };
        match self.continue_try(true, &mut t, now, result, out) {
            Next::Send(op) => {
                self.main = Some(t);
                self.io.send(op, self.config.request_timeout, out);
            }
            next => self.main_outcome(next, now, out),
        }
    }

    fn on_side_result(&mut self, now: Now, task: u32, result: LockResult, out: &mut Outputs) {
        self.orphan_result(task, now, result, out);
    }

    fn side_request(&self, task: u32) -> Option<(LockOp, Option<Nanos>)> {
        let o = self.orphans.iter().find(|o| o.task == task)?;
        o.current.map(|(_, op)| (op, self.config.request_timeout))
    }

    /// The process is stopped: there is no release and no cancellation path but the token,
    /// which ends the loop (OnStoppedLeading in the finally) and the process.
    fn stop(&mut self, _now: Now, out: &mut Outputs) {
        // The token cancels every task's request and delay, the tasks left running too (also
        // after an exception ended the loop, which leaves them running).
        if !self.orphans.is_empty() {
            self.orphans.clear();
            self.sleepers.clear();
            self.io.cancel(TimerKind::Delay);
            out.push(Output::AbandonSides);
        }
        if self.phase == Phase::Done {
            return;
        }
        self.io.abandon(out);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sym::Symbols;

    /// The live timer of `kind` among `out`'s outputs, its generation.
    fn timer(out: &Outputs, kind: TimerKind) -> Option<Generation> {
        out.list.iter().rev().find_map(|o| match *o {
            Output::Timer { kind: k, generation, .. } if k == kind => Some(generation),
            _ => None,
        })
    }

    /// LeaderElector.cs:74-77 and docs/sources/csharp-client.md: a renew task asleep in its
    /// `Delay(RP)` when `Delay(RD)` wins is not cancelled either: it wakes when its delay ends
    /// and tries again (before, leasesim dropped it, since the main try is gone while it
    /// sleeps). A round whose PUTs get a 500 until RD passes leaves one task asleep; it wakes
    /// RP after its last failure and sends its Get on a side channel.
    #[test]
    fn a_renew_task_asleep_when_the_deadline_wins_wakes_and_tries_again() {
        let me = Symbols::new().intern("a");
        let config = ElectorConfig::new("a", Algorithm::CSharpClient);
        let (rp, rd) = (config.retry_period as i64, config.renew_deadline as i64);
        let mut e = CSharpElector::new(config, me, ComponentRng::new(1, "test"));
        let at = |mono: i64| Now { mono, wall: 1_767_225_600_000_000_000 + mono };
        let mut out = Outputs::new(false);
        e.start(at(0), &mut out);
        // Get → 404 → Create → 201: leading, the first round's Get goes out.
        e.on_result(at(1), Err(LockError::NotFound), &mut out);
        let created = fresh_record(me, 15, at(2), 0);
        e.on_result(at(2), Ok(created), &mut out);
        assert!(e.leading && e.phase == Phase::Round { sleeping: false });
        let deadline = timer(&out, TimerKind::RoundDeadline).unwrap();
        // Each try: Get (the record names self) then a PUT answered 500, then Delay(RP).
        let mut t = 3;
        while t + rp < rd {
            out.clear();
            e.on_result(at(t), Ok(created), &mut out);
            e.on_result(at(t + 1), Err(LockError::Status(500)), &mut out);
            assert_eq!(e.phase, Phase::Round { sleeping: true });
            let tick = timer(&out, TimerKind::RoundTick).unwrap();
            t += rp;
            out.clear();
            e.on_timer(at(t), TimerKind::RoundTick, tick, &mut out);
        }
        // Asleep again when the deadline fires.
        e.on_result(at(t + 1), Ok(created), &mut out);
        e.on_result(at(t + 2), Err(LockError::Status(500)), &mut out);
        let wakes = t + 2 + rp;
        out.clear();
        e.on_timer(at(rd), TimerKind::RoundDeadline, deadline, &mut out);
        assert!(out.list.contains(&Output::StoppedLeading));
        assert_eq!(e.orphans.len(), 1, "the sleeping renew task lives on");
        assert_eq!(e.sleepers.front().map(|&(at, _)| at), Some(wakes));
        let delay = timer(&out, TimerKind::Delay).expect("its Delay(RP) goes on");
        out.clear();
        e.on_timer(at(wakes), TimerKind::Delay, delay, &mut out);
        let task = e.orphans[0].task;
        assert!(out.list.contains(&Output::SendSide { task }), "{:?}", out.list);
        assert_eq!(e.side_request(task).map(|(op, _)| op), Some(LockOp::Get));
        // A graceful stop cancels it with the rest.
        out.clear();
        e.stop(at(wakes + 1), &mut out);
        assert!(e.orphans.is_empty() && out.list.contains(&Output::AbandonSides));
    }
}
