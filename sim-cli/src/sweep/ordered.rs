//! A parallel map whose results are taken in order as soon as they are contiguous: how a
//! sweep's rows reach `runs.csv`.
//!
//! Worker threads take the next index from a shared counter, so they finish in nearly index
//! order and nothing waits at the end of a batch: a whole-batch barrier (and the file sync
//! behind it, on the thread the workers then waited for) cost `--jobs 2` a tenth of its
//! speed-up on the flap sweep, whose 500 runs take half a millisecond each.
//!
//! Workers leave their results in a [`Mailbox`] and wake the taking thread only when a batch
//! is full ([`BATCH`]), a run failed, they are about to wait for the window (the taker may
//! need their results to move it), or they stop; the taker also looks every [`BATCH_WAIT`].
//! Waking it for each result cost the worker a system call and an interrupt a run, 2.3 % of
//! the flap sweep's samples on one core (docs/performance.md, 2026-12-06).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long the taking thread waits for a result before it calls `take(None)`.
pub(super) const IDLE: Duration = Duration::from_millis(500);

/// Results a worker leaves before it wakes the taking thread.
const BATCH: usize = 32;

/// How often the taking thread looks for results nobody woke it for: the longest a result
/// waits to be taken.
pub(super) const BATCH_WAIT: Duration = Duration::from_millis(50);

/// Computes `work(k)` for every `k` of `todo` on `jobs` threads and hands each result to
/// `take(Some((k, value)))` on the calling thread, in increasing `k`, as soon as every index
/// before it has been taken; `take(None)` when no result has come for [`IDLE`] (so that the
/// caller can sync what it holds while a long item runs). The first error, of `work` at the lowest index that failed or of `take`,
/// stops it: every value before that index has been taken, none after it is, and no new work
/// starts. Workers run at most `window` indices ahead of the next one to be taken (a slow item
/// would otherwise keep every result after it in memory).
pub(super) fn ordered_map<T: Send, E: Send>(
    jobs: usize,
    todo: Range<usize>,
    window: usize,
    work: impl Fn(usize) -> Result<T, E> + Sync,
    mut take: impl FnMut(Option<(usize, T)>) -> Result<(), E>,
) -> Result<(), OrderedError<E>> {
    let window = Window::new(todo.start, window.max(1));
    let next = AtomicUsize::new(todo.start);
    // No index at or past it is started: the lowest index whose work failed, or 0 once
    // everything is to stop. An index below a failure is always done, so the failure is the
    // one reported, with everything before it taken. (A stale read only does work that is
    // thrown away: Relaxed is enough, the results travel through the mailbox.)
    let limit = AtomicUsize::new(todo.end);
    let mailbox = Mailbox::new();
    std::thread::scope(|scope| {
        for worker in 0..jobs.max(1) {
            let (next, limit, window, work, mailbox) = (&next, &limit, &window, &work, &mailbox);
            mailbox.lock().working += 1;
            let spawned = std::thread::Builder::new().name(format!("sweep-{worker}")).spawn_scoped(scope, move || {
                // Dropped last: the taker hears of this worker's end even if it panics.
                let _done = WorkerDone(mailbox);
                let _guard = StopOnPanic { limit, window };
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    // The taker may need this worker's results to move the window: woken first.
                    if k >= limit.load(Ordering::Relaxed) || !window.wait_for(k, || mailbox.arrived.notify_one()) {
                        return;
                    }
                    if k >= limit.load(Ordering::Relaxed) {
                        // A lower index failed while this one waited for the window.
                        return;
                    }
                    let result = work(k);
                    let failed = result.is_err();
                    if failed {
                        limit.fetch_min(k, Ordering::Relaxed);
                    }
                    mailbox.leave((k, result), failed);
                }
            });
            if let Err(e) = spawned {
                mailbox.lock().working -= 1;
                stop_all(limit, window);
                return Err(OrderedError::Spawn(e));
            }
        }
        // Should `take` panic (in an unwinding build), the workers are let go before the scope
        // waits for them.
        let _guard = StopOnPanic { limit: &limit, window: &window };
        let mut waiting: BTreeMap<usize, Result<T, E>> = BTreeMap::new();
        let mut next_taken = todo.start;
        let mut failed = None;
        let mut batch = Vec::with_capacity(BATCH);
        // Until every worker has stopped: their results are taken in, and the contiguous ones
        // handed over.
        while let Some(received) = mailbox.take_into(&mut batch) {
            if !received {
                if failed.is_none()
                    && let Err(e) = take(None)
                {
                    failed = Some(e);
                    stop_all(&limit, &window);
                }
                continue;
            }
            if failed.is_some() {
                batch.clear();
                continue;
            }
            waiting.extend(batch.drain(..));
            while let Some(result) = waiting.remove(&next_taken) {
                match result.and_then(|value| take(Some((next_taken, value)))) {
                    Ok(()) => next_taken += 1,
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if failed.is_some() {
                stop_all(&limit, &window);
            } else {
                window.advance(next_taken);
            }
        }
        match failed {
            Some(e) => Err(OrderedError::Failed(e)),
            // Only a worker that panicked can leave an index undone; the scope passes the
            // panic on when it joins it.
            None if next_taken < todo.end => Err(OrderedError::Lost(next_taken)),
            None => Ok(()),
        }
    })
}

#[derive(Debug)]
pub(super) enum OrderedError<E> {
    /// `work` or `take` failed.
    Failed(E),
    /// A worker thread could not be started.
    Spawn(std::io::Error),
    /// The index whose result never came.
    Lost(usize),
}

/// Where the workers leave their results for the taking thread.
struct Mailbox<R> {
    state: Mutex<Mail<R>>,
    arrived: Condvar,
}

struct Mail<R> {
    results: Vec<R>,
    /// Workers that may still leave results.
    working: usize,
}

impl<R> Mailbox<R> {
    fn new() -> Mailbox<R> {
        Mailbox { state: Mutex::new(Mail { results: Vec::with_capacity(BATCH), working: 0 }), arrived: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, Mail<R>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Leaves a result; the taker is woken when `now`, or when a batch is there.
    fn leave(&self, result: R, now: bool) {
        let mut mail = self.lock();
        mail.results.push(result);
        let wake = now || mail.results.len() >= BATCH;
        drop(mail);
        if wake {
            self.arrived.notify_one();
        }
    }

    /// Moves the results left into `into` (empty), waiting for some: `Some(true)` when it took
    /// some, `Some(false)` when none came for [`IDLE`], `None` once every worker has stopped
    /// and every result is taken.
    fn take_into(&self, into: &mut Vec<R>) -> Option<bool> {
        let since = Instant::now();
        let mut mail = self.lock();
        loop {
            if !mail.results.is_empty() {
                std::mem::swap(&mut mail.results, into);
                return Some(true);
            }
            if mail.working == 0 {
                return None;
            }
            let waited = since.elapsed();
            if waited >= IDLE {
                return Some(false);
            }
            mail = self.arrived.wait_timeout(mail, BATCH_WAIT.min(IDLE - waited)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

/// Held by each worker: the taker is told when it stops, however it stops.
struct WorkerDone<'a, R>(&'a Mailbox<R>);

impl<R> Drop for WorkerDone<'_, R> {
    fn drop(&mut self) {
        self.0.lock().working -= 1;
        self.0.arrived.notify_one();
    }
}

/// How far ahead of the next index to be taken the workers may run.
struct Window {
    state: Mutex<WindowState>,
    moved: Condvar,
    width: usize,
}

struct WindowState {
    /// The next index to be taken (`usize::MAX` once the workers are to stop).
    taken: usize,
    /// Workers waiting for it to move (only then is there anyone to wake).
    waiting: usize,
}

impl Window {
    fn new(start: usize, width: usize) -> Window {
        Window { state: Mutex::new(WindowState { taken: start, waiting: 0 }), moved: Condvar::new(), width }
    }

    fn state(&self) -> MutexGuard<'_, WindowState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until index `k` is within the window, calling `before_waiting` first if it has to
    /// wait; false once the window is released (the workers are to stop).
    fn wait_for(&self, k: usize, before_waiting: impl FnOnce()) -> bool {
        let mut state = self.state();
        if k >= state.taken.saturating_add(self.width) {
            before_waiting();
        }
        while k >= state.taken.saturating_add(self.width) {
            state.waiting += 1;
            state = self.moved.wait(state).unwrap_or_else(|e| e.into_inner());
            state.waiting -= 1;
        }
        state.taken != usize::MAX
    }

    fn advance(&self, taken: usize) {
        let mut state = self.state();
        if state.taken != usize::MAX && taken > state.taken {
            state.taken = taken;
            if state.waiting > 0 {
                self.moved.notify_all();
            }
        }
    }

    /// Lets every waiting worker go (to find that it is to stop).
    fn release(&self) {
        self.state().taken = usize::MAX;
        self.moved.notify_all();
    }
}

/// Every worker stopped: none starts another index, and any waiting for the window goes.
fn stop_all(limit: &AtomicUsize, window: &Window) {
    limit.store(0, Ordering::Relaxed);
    window.release();
}

/// Held by each worker and by the taking thread: if it panics, the others are stopped and let
/// go (one waiting for the window to move past the lost index would wait for ever), and the
/// panic is passed on when the threads are joined.
struct StopOnPanic<'a> {
    limit: &'a AtomicUsize,
    window: &'a Window,
}

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            stop_all(self.limit, self.window);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{OrderedError, ordered_map};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Work whose duration varies with the index, so that results arrive out of order.
    fn uneven(k: usize) -> usize {
        std::thread::sleep(Duration::from_micros(((k * 7919) % 13) as u64 * 50));
        k * k
    }

    #[test]
    fn results_are_taken_in_order_on_any_number_of_threads() {
        for jobs in [1, 2, 3, 8] {
            let mut taken = Vec::new();
            let r = ordered_map::<_, ()>(
                jobs,
                5..205,
                16,
                |k| Ok(uneven(k)),
                |item| {
                    taken.extend(item);
                    Ok(())
                },
            );
            assert!(r.is_ok());
            assert_eq!(taken, (5..205).map(|k| (k, k * k)).collect::<Vec<_>>(), "jobs {jobs}");
        }
    }

    #[test]
    fn a_failed_item_stops_at_it_with_everything_before_it_taken() {
        let started = AtomicUsize::new(0);
        let mut taken = Vec::new();
        let r = ordered_map(
            2,
            0..10_000,
            8,
            |k| {
                started.fetch_add(1, Ordering::Relaxed);
                if k == 37 || k == 41 { Err(k) } else { Ok(uneven(k)) }
            },
            |item| {
                taken.extend(item.map(|(k, _)| k));
                Ok(())
            },
        );
        assert!(matches!(r, Err(OrderedError::Failed(37))), "{r:?}");
        assert_eq!(taken, (0..37).collect::<Vec<_>>());
        // No new work after the failure, beyond the window.
        assert!(started.load(Ordering::Relaxed) <= 37 + 8 + 2, "{}", started.load(Ordering::Relaxed));
    }

    /// Many threads on few cores, so that a worker is often preempted between taking an index
    /// and starting it: an index below the failed one must still be done, and the failure be
    /// the one reported.
    #[test]
    fn no_index_below_a_failure_is_skipped() {
        // The skipped index once left a worker waiting for ever for the window to pass it: a
        // hang is reported as a failure, not waited out.
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            no_index_below_a_failure_is_skipped_rounds();
            let _ = done_tx.send(());
        });
        match done.recv_timeout(Duration::from_secs(60)) {
            Ok(()) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("ordered_map hung"),
            // The rounds panicked: their message is above.
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("a round failed"),
        }
    }

    fn no_index_below_a_failure_is_skipped_rounds() {
        for round in 0..300 {
            let mut taken = Vec::new();
            let r = ordered_map(
                8,
                0..64,
                4 + round % 5,
                |k| if k == 20 || k == 23 { Err(k) } else { Ok(k) },
                |item| {
                    taken.extend(item.map(|(k, _)| k));
                    Ok(())
                },
            );
            assert!(matches!(r, Err(OrderedError::Failed(20))), "round {round}: {r:?}");
            assert_eq!(taken, (0..20).collect::<Vec<_>>(), "round {round}");
        }
    }

    #[test]
    fn a_long_item_gives_the_taker_idle_calls_in_between() {
        let mut seen = Vec::new();
        let r = ordered_map::<_, ()>(
            1,
            0..3,
            4,
            |k| {
                if k == 1 {
                    std::thread::sleep(super::IDLE + Duration::from_millis(300));
                }
                Ok(k)
            },
            |item| {
                seen.push(item.map(|(k, _)| k));
                Ok(())
            },
        );
        assert!(r.is_ok());
        let items: Vec<usize> = seen.iter().flatten().copied().collect();
        assert_eq!(items, [0, 1, 2]);
        let idle_before_1 = seen.iter().take_while(|s| **s != Some(1)).filter(|s| s.is_none()).count();
        assert!(idle_before_1 >= 1, "{seen:?}");
    }

    /// A result is taken while a long item after it still runs (its row is written and
    /// synced then), not held until the worker's next hand-over.
    #[test]
    fn a_result_is_taken_while_the_next_item_runs() {
        let long_done = std::sync::atomic::AtomicBool::new(false);
        let mut taken_during_long = None;
        let r = ordered_map::<_, ()>(
            1,
            0..2,
            4,
            |k| {
                if k == 1 {
                    std::thread::sleep(Duration::from_millis(1500));
                    long_done.store(true, Ordering::SeqCst);
                }
                Ok(k)
            },
            |item| {
                if let Some((0, _)) = item {
                    taken_during_long = Some(!long_done.load(Ordering::SeqCst));
                }
                Ok(())
            },
        );
        assert!(r.is_ok());
        assert_eq!(taken_during_long, Some(true), "result 0 was taken only after item 1 had ended");
    }

    #[test]
    fn a_failed_take_stops_the_workers() {
        let started = AtomicUsize::new(0);
        let r = ordered_map(
            2,
            0..10_000,
            4,
            |k| {
                started.fetch_add(1, Ordering::Relaxed);
                Ok(k)
            },
            |item| if matches!(item, Some((20, _))) { Err("disk full") } else { Ok(()) },
        );
        assert!(matches!(r, Err(OrderedError::Failed("disk full"))), "{r:?}");
        assert!(started.load(Ordering::Relaxed) <= 20 + 4 + 2, "{}", started.load(Ordering::Relaxed));
    }

    #[test]
    fn a_slow_item_holds_the_others_within_the_window() {
        let ahead = AtomicUsize::new(0);
        let taken_upto = AtomicUsize::new(0);
        let r = ordered_map::<_, ()>(
            3,
            0..200,
            10,
            |k| {
                let lead = k.saturating_sub(taken_upto.load(Ordering::Relaxed));
                ahead.fetch_max(lead, Ordering::Relaxed);
                if k == 50 {
                    std::thread::sleep(Duration::from_millis(30));
                }
                Ok(k)
            },
            |item| {
                if let Some((k, _)) = item {
                    taken_upto.store(k + 1, Ordering::Relaxed);
                }
                Ok(())
            },
        );
        assert!(r.is_ok());
        assert!(ahead.load(Ordering::Relaxed) < 10, "a worker ran {} ahead", ahead.load(Ordering::Relaxed));
    }

    #[test]
    fn a_panicking_item_does_not_leave_the_others_waiting() {
        let joined = std::panic::catch_unwind(|| {
            ordered_map::<_, ()>(
                2,
                0..1_000,
                4,
                |k| {
                    if k == 10 {
                        panic!("boom");
                    }
                    Ok(k)
                },
                |_| Ok(()),
            )
        });
        assert!(joined.is_err(), "the panic was passed on");
    }
}
