//! client-go's client-side rate limiter, per process: a token bucket
//! (`flowcontrol.NewTokenBucketRateLimiter(qps, burst)`, a `golang.org/x/time/rate.Limiter`),
//! which every request waits on before it is sent and before its timeout starts (client-go
//! `rest/request.go` `tryThrottle`; docs/sources/client-go.md §8). The elector's clientset has
//! its own bucket unless the node shares one with its reconciler (a lock built from the
//! controllers' clientset, or a config carrying a `RateLimiter`).

use crate::model::ClientLimiterSpec;
use crate::time::{NANOS_PER_SEC, Nanos};

/// `rate.Limiter` as `reserveN` uses it for `Wait`: `tokens` at local monotonic time `last`.
#[derive(Clone, Debug)]
pub(super) struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    /// `None` before the first request: `NewLimiter` starts with zero tokens at the zero time,
    /// so the first `advance` fills the bucket to `burst`.
    last: Option<i64>,
}

impl TokenBucket {
    pub(super) fn new(qps: f64, burst: u32) -> TokenBucket {
        TokenBucket { qps, burst: f64::from(burst), tokens: 0.0, last: None }
    }

    /// One request at local monotonic time `now`: takes a token (the count may go negative, so
    /// waiters queue in order) and returns how long (local) the request waits for it.
    /// `advance`: tokens grow by elapsed seconds × qps, capped at burst; the wait is
    /// `-tokens / qps` seconds (rate.go `advance`, `reserveN`, `durationFromTokens`).
    #[cfg(test)]
    fn reserve(&mut self, now: i64) -> Nanos {
        self.reserve_within(now, None).expect("no limit")
    }

    /// As [`Self::reserve`], but a wait longer than `limit` (the caller's context deadline) is
    /// refused and nothing is taken (`reserveN` with `maxFutureReserve`; `Wait` then fails at
    /// once with "would exceed context deadline").
    pub(super) fn reserve_within(&mut self, now: i64, limit: Option<Nanos>) -> Option<Nanos> {
        let tokens = match self.last {
            None => self.burst,
            // A clock reading before the last one counts as no time passed (`t.Before(last)`).
            Some(last) => {
                let elapsed = (now - last).max(0) as f64 / NANOS_PER_SEC as f64;
                (self.tokens + elapsed * self.qps).min(self.burst)
            }
        };
        let tokens = tokens - 1.0;
        let wait = if tokens < 0.0 {
            // time.Duration(float64(time.Second) * seconds): truncated toward zero.
            (NANOS_PER_SEC as f64 * (-tokens / self.qps)) as Nanos
        } else {
            0
        };
        if limit.is_some_and(|limit| wait > limit) {
            return None;
        }
        self.tokens = tokens;
        self.last = Some(now.max(self.last.unwrap_or(now)));
        Some(wait)
    }
}

/// What a process's HTTP client carries when it matters, boxed beside the process (most have
/// none): a `wedge` fault's end and client-go's rate limiter. Requests of a process with one
/// take `World::dispatch`'s path, which consults it.
#[derive(Clone, Debug, Default)]
pub(super) struct ClientState {
    /// Requests sent before this true time go into a dead connection (0: not wedged).
    pub(super) wedged_until: Nanos,
    pub(super) limiter: Option<ClientLimiter>,
}

/// A process's buckets: the elector's (its LeaseCandidate's requests too) and, when not
/// shared, the reconciler's. A new process starts with full buckets.
#[derive(Clone, Debug)]
pub(super) struct ClientLimiter {
    elector: TokenBucket,
    reconciler: Option<TokenBucket>,
}

impl ClientLimiter {
    pub(super) fn new(spec: &ClientLimiterSpec) -> ClientLimiter {
        let bucket = || TokenBucket::new(spec.qps, spec.burst);
        ClientLimiter { elector: bucket(), reconciler: (!spec.shared).then(bucket) }
    }

    fn bucket(&mut self, reconciler: bool) -> &mut TokenBucket {
        match (&mut self.reconciler, reconciler) {
            (Some(own), true) => own,
            _ => &mut self.elector,
        }
    }

    /// The local wait of a request of the elector (`reconciler` false) or the reconciler, or
    /// `None` if it would exceed `limit` (then nothing is taken).
    pub(super) fn reserve(&mut self, reconciler: bool, now: i64, limit: Option<Nanos>) -> Option<Nanos> {
        self.bucket(reconciler).reserve_within(now, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    /// x/time/rate: a full bucket of `burst` at first, then one token per 1/qps: at 5 qps and
    /// burst 10, the 11th request at once waits 200 ms, the 12th 400 ms; 100 ms later one
    /// more waits 500 ms (half a token came back, the queue owes two and a half).
    #[test]
    fn a_bucket_starts_full_and_queues_waiters_in_order() {
        let mut b = TokenBucket::new(5.0, 10);
        for _ in 0..10 {
            assert_eq!(b.reserve(0), 0);
        }
        assert_eq!(b.reserve(0), 200 * MS as u64);
        assert_eq!(b.reserve(0), 400 * MS as u64);
        assert_eq!(b.reserve(100 * MS), 500 * MS as u64);
        // Two seconds of quiet refill ten tokens, capped at the burst.
        let mut b = TokenBucket::new(5.0, 10);
        b.reserve(0);
        assert_eq!(b.reserve(60_000 * MS), 0);
        for _ in 0..9 {
            b.reserve(60_000 * MS);
        }
        assert_eq!(b.reserve(60_000 * MS), 200 * MS as u64);
    }

    #[test]
    fn a_shared_bucket_makes_the_elector_wait_behind_the_reconciler() {
        let spec = ClientLimiterSpec { qps: 5.0, burst: 10, shared: true };
        let mut shared = ClientLimiter::new(&spec);
        for _ in 0..20 {
            shared.reserve(true, 0, None);
        }
        // Past the caller's deadline: refused, nothing taken.
        assert_eq!(shared.reserve(false, 0, Some(2_000 * MS as u64)), None);
        assert_eq!(shared.reserve(false, 0, None), Some(2_200 * MS as u64));
        let mut own = ClientLimiter::new(&ClientLimiterSpec { shared: false, ..spec });
        for _ in 0..20 {
            own.reserve(true, 0, None);
        }
        assert_eq!(own.reserve(false, 0, None), Some(0));
    }
}
