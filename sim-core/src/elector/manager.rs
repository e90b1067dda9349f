//! controller-runtime's manager (`pkg/manager/internal.go`, `manager.go`,
//! `pkg/leaderelection/leader_election.go`; v0.24.1 = `3be3f1bf`, on client-go v0.36.0), as
//! docs/sources/controller-runtime.md records it. The election is client-go's `LeaderElector`
//! unmodified (`initLeaderElector`, internal.go:613-648), so this wraps [`LoopElector`] with the
//! node's client-go release (default v0.36; the `client_go` key picks another, e.g. v0.37 for
//! controller-runtime main `86a0d40e`). What the manager adds:
//! - defaults 15/10/2 (internal.go:54-57), request timeout `max(RD/2, 1s)`
//!   (leader_election.go:102-108), ReleaseOnCancel false (manager.go:203-208): the same as
//!   client-go's callers, so they come from `ElectorConfig::new`;
//! - after a lost lease, `Start` returns "leader election lost" and the program exits
//!   (OnStoppedLeading, internal.go:627-638): the elector's `Run` returning is the exit
//!   (`after_lost`, default restart);
//! - a **graceful stop** (ctx cancelled): the runnables' context is cancelled at once and they
//!   drain (the `drain` node key: how long the in-flight work takes), while the elector keeps
//!   renewing, because its context is `WithoutCancel(ctx)` (internal.go:464-466); the elector is
//!   cancelled only when the runnables have stopped or `gracefulShutdownTimeout` (30 s) has
//!   passed (engageStopProcedure, internal.go:545-598), then client-go releases (if
//!   ReleaseOnCancel) and the process exits. With a drain over 30 s the Lease is released while
//!   the work still runs (controller-runtime#1132); it stops when the process exits;
//! - leader-election runnables are not started once the stop has begun (`startOnce` sealed,
//!   internal.go:577, the fix of controller-runtime#2719): an acquisition during the drain does
//!   not make the node act.
//!
//! With `drain = 0` (the default) a graceful stop is exactly client-go's.

use super::ElectorLoop;
use super::Outputs;
use super::loops::LoopElector;
use super::{ElectorConfig, GRACEFUL_SHUTDOWN_TIMEOUT, Generation, LockResult, Now, Output, TimerKind};
use crate::rng::ComponentRng;
use crate::sym::Sym;
use crate::time::Nanos;
use std::sync::Arc;

#[derive(Debug)]
pub struct ManagerElector {
    inner: LoopElector,
    drain: Nanos,
    /// The graceful stop has begun (runnables cancelled).
    stopping: bool,
    drain_generation: Generation,
}

impl ManagerElector {
    pub fn new(config: impl Into<Arc<ElectorConfig>>, me: Sym, rng: ComponentRng) -> Self {
        let config: Arc<ElectorConfig> = config.into();
        let drain = config.drain;
        ManagerElector { inner: LoopElector::new(config, me, rng), drain, stopping: false, drain_generation: 0 }
    }

    /// During a drain the elector does not decide when the work stops (the runnables do, or the
    /// exit), and a new acquisition starts no runnables.
    fn filter(&self, from: usize, out: &mut Outputs) {
        if !self.stopping {
            return;
        }
        out.drop_from(from, |o| {
            matches!(o, Output::StartedLeading | Output::LeaderContextDone | Output::StoppedLeading)
        });
    }
}

impl ElectorLoop for ManagerElector {
    fn config(&self) -> &ElectorConfig {
        self.inner.config()
    }

    fn is_leader(&self) -> bool {
        self.inner.is_leader()
    }

    fn awaiting_result(&self) -> bool {
        self.inner.awaiting_result()
    }

    fn healthy(&self, now_mono: i64, tolerance: Nanos) -> bool {
        self.inner.healthy(now_mono, tolerance)
    }

    fn context_deadline(&self) -> Option<i64> {
        ElectorLoop::context_deadline(&self.inner)
    }

    fn start(&mut self, now: Now, out: &mut Outputs) {
        let from = out.len();
        self.inner.start(now, out);
        self.filter(from, out);
    }

    fn on_timer(&mut self, now: Now, kind: TimerKind, generation: Generation, out: &mut Outputs) {
        if kind == TimerKind::Drain {
            if generation == self.drain_generation && self.stopping {
                // leaderElectionCancel(): client-go's renew loop ends, releases if configured.
                let from = out.len();
                self.inner.stop(now, out);
                self.filter(from, out);
            }
            return;
        }
        let from = out.len();
        self.inner.on_timer(now, kind, generation, out);
        self.filter(from, out);
    }

    fn on_result(&mut self, now: Now, result: LockResult, out: &mut Outputs) {
        let from = out.len();
        self.inner.on_result(now, result, out);
        self.filter(from, out);
    }

    fn stop(&mut self, now: Now, out: &mut Outputs) {
        if self.stopping {
            return;
        }
        if self.drain == 0 {
            // Nothing to drain: the stop procedure reaches leaderElectionCancel at once.
            self.inner.stop(now, out);
            return;
        }
        self.stopping = true;
        // internalCancel(): the runnables stop once their in-flight work is done.
        out.push(Output::StopWork { after: self.drain });
        self.drain_generation = self.drain_generation.wrapping_add(1);
        out.push(Output::Timer {
            kind: TimerKind::Drain,
            after: self.drain.min(GRACEFUL_SHUTDOWN_TIMEOUT),
            generation: self.drain_generation,
        });
    }

    fn lease_expired(&self, now: Now) -> Option<bool> {
        self.inner.lease_expired(now)
    }
}
