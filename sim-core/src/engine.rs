//! The event queue: the heart of the discrete-event loop.
//!
//! Events are ordered by `(time, insertion sequence)`. The sequence number breaks ties the same
//! way on every run, so two events scheduled for the same nanosecond always fire in the order they
//! were scheduled. The queue knows nothing about Kubernetes: it is generic over the event type.
//!
//! Cancellation is by *staleness*, not removal: callers put a generation number in their events
//! and ignore the ones whose generation has moved on (a crashed process's timers, say). That keeps
//! the queue a plain binary heap with O(log n) push and pop and no bookkeeping per event.

use crate::time::Nanos;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A min-queue of events keyed by `(time, sequence)`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: Nanos,
}

struct Entry<E> {
    /// `(time << 64) | sequence`: one integer comparison orders the heap.
    key: u128,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap; reverse so the earliest key is on top.
        other.key.cmp(&self.key)
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::new(), next_seq: 0, now: 0 }
    }

    pub fn with_capacity(capacity: usize) -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(capacity), next_seq: 0, now: 0 }
    }

    /// The time of the event most recently popped (0 before the first).
    pub fn now(&self) -> Nanos {
        self.now
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `event` at true time `at`. Scheduling in the past is a bug in the caller: time
    /// never runs backwards, so it is asserted rather than silently clamped.
    #[inline]
    pub fn schedule(&mut self, at: Nanos, event: E) {
        assert!(at >= self.now, "event scheduled in the past: at={at} now={}", self.now);
        let key = ((at as u128) << 64) | self.next_seq as u128;
        self.next_seq += 1;
        self.heap.push(Entry { key, event });
    }

    /// Takes the next sequence number now for an event that may be scheduled later with
    /// [`Self::schedule_reserved`]: it then orders among events at the same time exactly as if
    /// it had been scheduled at this moment. (A timeout that only fires when its request goes
    /// unanswered is pushed only once that is known; if it never is, nothing was pushed.)
    pub fn reserve_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Schedules `event` at `at` under a sequence number taken earlier by [`Self::reserve_seq`].
    #[inline]
    pub fn schedule_reserved(&mut self, at: Nanos, seq: u64, event: E) {
        assert!(at >= self.now, "event scheduled in the past: at={at} now={}", self.now);
        debug_assert!(seq < self.next_seq, "a sequence number not yet reserved");
        self.heap.push(Entry { key: ((at as u128) << 64) | seq as u128, event });
    }

    /// Time of the next event without removing it.
    #[inline]
    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|e| (e.key >> 64) as Nanos)
    }

    /// The earliest event, without removing it.
    pub fn peek(&self) -> Option<&E> {
        self.heap.peek().map(|e| &e.event)
    }

    /// Removes and returns the earliest event with its sequence number, advancing `now`.
    #[inline]
    pub fn pop_with_seq(&mut self) -> Option<(Nanos, u64, E)> {
        let entry = self.heap.pop()?;
        let at = (entry.key >> 64) as Nanos;
        debug_assert!(at >= self.now);
        self.now = at;
        Some((at, entry.key as u64, entry.event))
    }

    /// Removes and returns the earliest event, advancing `now` to its time.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let entry = self.heap.pop()?;
        let at = (entry.key >> 64) as Nanos;
        debug_assert!(at >= self.now);
        self.now = at;
        Some((at, entry.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_fire_in_time_order_and_ties_in_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(20, "c");
        q.schedule(10, "a");
        q.schedule(20, "d");
        q.schedule(10, "b");
        q.schedule(5, "first");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(5, "first"), (10, "a"), (10, "b"), (20, "c"), (20, "d")]);
        assert_eq!(q.now(), 20);
    }

    #[test]
    fn a_reserved_sequence_number_orders_as_if_scheduled_when_reserved() {
        let mut q = EventQueue::new();
        let early = q.reserve_seq();
        q.schedule(10, "scheduled after the reservation");
        q.schedule_reserved(10, early, "reserved first");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["reserved first", "scheduled after the reservation"]);
    }

    #[test]
    #[should_panic(expected = "event scheduled in the past")]
    fn scheduling_in_the_past_is_refused() {
        let mut q = EventQueue::new();
        q.schedule(10, ());
        q.pop();
        q.schedule(9, ());
    }
}
