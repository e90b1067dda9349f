//! The event queue: the heart of the discrete-event loop.
//!
//! Events are ordered by `(time, insertion sequence)`. The sequence number breaks ties the same
//! way on every run, so two events scheduled for the same nanosecond always fire in the order they
//! were scheduled. The queue knows nothing about Kubernetes: it is generic over the event type.
//!
//! Cancellation is by *staleness*, not removal: callers put a generation number in their events
//! and ignore the ones whose generation has moved on (a crashed process's timers, say). That keeps
//! the queue a plain heap with no bookkeeping per event.
//!
//! Past [`RADIX_FROM_LEN`] pending events (a fleet) the later events wait in a radix heap's
//! buckets instead (see [`Far`]), and the heap holds only those due at or before its `base`.
//! Keys are unique, so every correct priority queue pops the same order: which part holds an
//! event changes no output.

use crate::time::Nanos;

/// A min-queue of events keyed by `(time, sequence)`.
///
/// A four-ary heap laid out for the cache: the four children of position `i` are positions
/// `4i - 2 ..= 4i + 1`, stored two slots further on, so that with 32-byte entries on
/// 64-byte-aligned lines each group of four siblings fills exactly two whole lines. A sift down
/// one level then waits for two lines that the prefetcher already asked for, and the heap has
/// half the levels of a binary one. In a fleet of thousands of electors the heap outgrows the
/// core's caches and those waits are most of its cost (measured against the binary heap with
/// siblings on one line that it replaced: docs/performance.md, "Fleet scale"). Keys are unique
/// (the sequence number breaks every tie), so the order events come out in is the same as any
/// other correct priority queue's.
///
/// `repr(C)` keeps `len` and `next_seq` apart: side by side, a push's two increments were
/// merged into one 16-byte load and store of both, and that load could not be forwarded from
/// the two 8-byte stores of the push or pop before it; it waited for them to reach the cache
/// (a fifth of `transmit`'s samples, where a request's arrival is pushed).
///
/// Invariants (checked by `check` in debug builds): every key in the heap and among the run's
/// entries left is at most `far.base` in time and every event in `far` is later than it; the
/// heap is empty only when `far` is and the run has no entries left; the run is in key order,
/// and while it has entries left the one before them is in the heap.
#[repr(C)]
pub struct EventQueue<E: QueueEvent> {
    /// Position `i` (1-based) is slot `i + SLOT_OFFSET`, and slot `s` is `lines[s / 2].0[s % 2]`.
    /// Every slot is initialised (a new line is filled with copies of the entry that needed
    /// it), so no slot is ever read uninitialised; slots past position `len` and the first
    /// three hold stale copies and are never read as entries.
    lines: Vec<Line<E>>,
    len: usize,
    /// Entries of the run not yet in the heap: `run[run.len() - run_left..]`.
    run_left: usize,
    now: Nanos,
    next_seq: u64,
    far: Far<E>,
    /// The earliest events of a large bucket (see [`Far`]) in key order: most of them a
    /// fleet's leaders due in the same nanosecond, tens of thousands, which the heap would sift
    /// one by one through a megabyte of levels. They enter the heap one at a time: the first
    /// with the refill, each next one when the one before it is popped (`next_of_run`), so the
    /// heap's top is still the queue's earliest event and a peek looks nowhere else.
    run: Vec<Entry<E>>,
    /// Runs that came out of their bucket out of key order (for the tests).
    #[cfg(test)]
    sorted_runs: usize,
}

/// Pending events past this many are split: the heap keeps the earliest, a radix heap the rest.
/// A heap of more entries than the core's L2 cache holds waits for memory at each level of a
/// sift down, at every pop; the radix heap's buckets are only ever appended to and read through
/// in order, which the prefetchers follow (docs/performance.md, "A radix heap for fleets").
/// Small worlds (a flap run's queue holds about six events) never reach it.
const RADIX_FROM_LEN: usize = 2048;

/// The later events of a large queue: a radix heap on their times, sixteen ways a level. An
/// event at time `t > base` is in the bucket of the highest hex digit in which `t` differs from
/// `base` (its level) and of `t`'s value there; buckets in index order hold ever later events.
/// When the heap runs dry, the lowest occupied bucket holds the earliest events. If it holds
/// at most [`WHOLE_BUCKET`], they all go into the heap and its latest time becomes the new base;
/// otherwise its earliest time does, its events of that time go into the queue's run (entering
/// the heap one at a time: see [`EventQueue`]), and the others into buckets of lower levels
/// (they all share that digit and every higher one with the new base). An event moves down a
/// few times at most (one level a move; a fleet's events are a few levels apart), and every
/// access is an append or a read in order.
///
/// A bucket is a chain of chunks of [`CHUNK`] entries from one pool, and a bucket emptied gives
/// its chunks back for the next appends: a bucket of a high level holds most of the queue for a
/// moment, and buckets with buffers of their own, each keeping the room of its largest moment,
/// put a 30,000-elector fleet's peak at 275 MB against the heap's 175 MB (the chunks: 175 MB).
struct Far<E: Copy> {
    /// `Nanos::MAX` until the queue first holds more than [`RADIX_FROM_LEN`] events: the heap
    /// takes every event.
    base: Nanos,
    len: usize,
    /// Bit `b % 64` of word `b / 64` set: bucket `b` holds events.
    occupied: [u64; BUCKETS / 64],
    /// Empty until first used, then [`BUCKETS`].
    buckets: Vec<Bucket>,
    chunks: Vec<Box<[Entry<E>; CHUNK]>>,
    /// Each chunk's successor in its bucket's chain.
    next: Vec<u32>,
    /// Chunks in no bucket.
    free: Vec<u32>,
}

/// A bucket of at most this many events goes into the heap whole when it is the earliest (see
/// `EventQueue::refill`): the heap then orders them in the L2 cache (32 KiB of entries) instead
/// of each being moved down the levels below. 256 and 1,024 measured alike, 4,096 slower
/// (docs/performance.md, "Memory given back, and whole buckets").
const WHOLE_BUCKET: usize = 1024;

/// Bits a digit of the radix.
const DIGIT: usize = 4;

/// Every level's digits.
const BUCKETS: usize = 64usize.div_ceil(DIGIT) << DIGIT;

/// Entries a chunk (4 KiB).
const CHUNK: usize = 128;

/// A bucket's chain: its first and last chunk, its entries, the earliest time among them.
#[derive(Clone, Copy, Default)]
struct Bucket {
    head: u32,
    tail: u32,
    len: u32,
    min: Nanos,
}

/// The bucket of an event at `at` past `base`.
#[inline(always)]
fn bucket_of(at: Nanos, base: Nanos) -> usize {
    debug_assert!(at > base);
    let level = (63 - (at ^ base).leading_zeros() as usize) / DIGIT;
    (level << DIGIT) + ((at >> (DIGIT * level)) as usize & ((1 << DIGIT) - 1))
}

impl<E: Copy> Far<E> {
    fn new() -> Self {
        Far {
            base: Nanos::MAX,
            len: 0,
            occupied: [0; BUCKETS / 64],
            buckets: Vec::new(),
            chunks: Vec::new(),
            next: Vec::new(),
            free: Vec::new(),
        }
    }

    #[inline(always)]
    fn push(&mut self, entry: Entry<E>) {
        let at = entry.at();
        let b = bucket_of(at, self.base);
        // `buckets` has all `BUCKETS` once `base` is below `Nanos::MAX` (`split_far`).
        let Bucket { tail, len, min, .. } = self.buckets[b];
        let slot = len as usize % CHUNK;
        let chunk = if slot == 0 {
            let chunk = self.free.pop().unwrap_or_else(|| {
                self.chunks.push(Box::new([entry; CHUNK]));
                self.next.push(u32::MAX);
                (self.chunks.len() - 1) as u32
            });
            if len == 0 {
                self.buckets[b] = Bucket { head: chunk, tail: chunk, len: 0, min: at };
                self.occupied[b / 64] |= 1 << (b % 64);
            } else {
                self.next[tail as usize] = chunk;
                self.buckets[b].tail = chunk;
            }
            chunk
        } else {
            tail
        };
        self.chunks[chunk as usize][slot] = entry;
        let bucket = &mut self.buckets[b];
        bucket.len += 1;
        if len != 0 && at < min {
            bucket.min = at;
        }
        self.len += 1;
    }

    /// The lowest occupied bucket (there is one).
    #[inline(always)]
    fn lowest(&self) -> usize {
        let w = self.occupied.iter().position(|&w| w != 0).expect("an occupied bucket");
        w * 64 + self.occupied[w].trailing_zeros() as usize
    }

    /// Bucket `b`'s entries.
    fn bucket(&self, b: usize) -> impl Iterator<Item = &Entry<E>> + '_ {
        let Bucket { head, len, .. } = self.buckets[b];
        debug_assert_eq!(len == 0, self.occupied[b / 64] & (1 << (b % 64)) == 0);
        self.bucket_entries(head, len as usize)
    }

    /// The `len` entries of the chain of chunks from `head`.
    fn bucket_entries(&self, head: u32, len: usize) -> impl Iterator<Item = &Entry<E>> + '_ {
        let mut chunk = head;
        (0..len.div_ceil(CHUNK)).flat_map(move |i| {
            let this = chunk as usize;
            if i + 1 < len.div_ceil(CHUNK) {
                chunk = self.next[this];
            }
            self.chunks[this][..(len - i * CHUNK).min(CHUNK)].iter()
        })
    }

    /// Every entry.
    fn entries(&self) -> impl Iterator<Item = &Entry<E>> + '_ {
        (0..self.buckets.len()).flat_map(move |b| self.bucket(b))
    }

    /// Empties every bucket, its chunks free again.
    fn clear(&mut self) {
        self.free.clear();
        self.free.extend((0..self.chunks.len() as u32).rev());
        self.buckets.fill(Bucket::default());
        self.occupied = [0; BUCKETS / 64];
        self.len = 0;
    }
}

/// Heaps of more entries than this (32 bytes each: 32 KB, a core's L1 data cache) fetch the
/// next level's candidate lines (the four groups of grandchildren) while a level's comparisons
/// wait; smaller ones stay in L1 and the prefetches would only cost instructions. (Measured for
/// the binary heap before it: 3,000 electors, a heap of 3,000 entries, ran 0.98x with the
/// prefetches and 1.03x without, against `std`'s heap.)
const PREFETCH_FROM_LEN: usize = 1024;

/// Position `i` is slot `i + 2`: the children of position `i` (`4i - 2 ..= 4i + 1`) are then
/// slots `4i ..= 4i + 3`, a multiple of four, two whole lines.
const SLOT_OFFSET: usize = 2;

/// The parent of position `i > 1`.
#[inline(always)]
fn parent(i: usize) -> usize {
    (i + 2) >> 2
}

/// The first of the four children of position `i`.
#[inline(always)]
fn first_child(i: usize) -> usize {
    (i << 2) - 2
}

#[derive(Clone, Copy)]
#[repr(C)]
struct Entry<E: Copy> {
    /// `(time << 64) | sequence`: one integer comparison orders the heap.
    key: u128,
    event: Packed<E>,
}

impl<E: Copy> Entry<E> {
    /// Its time.
    #[inline(always)]
    fn at(&self) -> Nanos {
        (self.key >> 64) as Nanos
    }
}

/// An event as the queue holds and hands it out: a union with a `u128`, so that a copy of it is
/// a copy of 16 plain bytes. A bare enum was copied as its tag byte (the niche of the `Option`
/// a pop returns) and two overlapping 8-byte moves of the rest, and a read of a field soon after
/// such a copy spans both stores, which the core cannot forward: it waits for them to drain.
/// Those waits were a fifth of the event loop's own time under `perf` (flap sweep).
#[derive(Clone, Copy)]
#[repr(C)]
pub union Packed<E: Copy> {
    event: E,
    _whole: u128,
}

impl<E: Copy> Packed<E> {
    #[inline(always)]
    pub fn new(event: E) -> Self {
        Packed { event }
    }

    /// The event whose bytes are `word` (in memory order: byte 0 is the low byte).
    ///
    /// # Safety
    /// `word`'s bytes must be those of a valid `E` (any value in its padding bytes).
    #[inline(always)]
    pub unsafe fn from_word(word: u128) -> Self {
        Packed { _whole: word }
    }

    /// The event. Read it through the reference (`match *packed.get()`): copying it out whole
    /// brings back the piecewise copy `Packed` exists to avoid.
    #[inline(always)]
    pub fn get(&self) -> &E {
        // SAFETY: every `Packed` holds a valid `E`: `new` writes one, and the caller of
        // `from_word` promised that its word's bytes are one.
        unsafe { &self.event }
    }
}

/// An event type the queue can hold. The default stores an event as it is; a type that can
/// build its bytes as one word by arithmetic says so with [`QueueEvent::WHOLE`], and the queue
/// then writes a new entry with two 16-byte stores.
///
/// Why it matters: an event built field by field is written by narrow stores, and the queue's
/// top entry is often the one just pushed. Its 16-byte load at the next pop cannot be
/// forwarded from several narrower stores still on their way to the cache, and waits for them
/// (under `perf`, a sixth of the event loop's own samples). A load fully inside one earlier
/// store of the same width is forwarded at once.
///
/// # Safety
///
/// With `WHOLE` true the queue reads a packed event's 16 bytes as one `u128`, so every `pack`
/// must return [`Packed::from_word`] of a word whose bytes are those of a valid event (padding
/// included: `Packed::new` leaves it uninitialised), and the type must be at most 16 bytes.
/// With `WHOLE` false (the default) the defaults are sound: `unsafe impl QueueEvent for T {}`.
pub unsafe trait QueueEvent: Copy {
    /// Every `pack` builds its whole word (`Packed::from_word`).
    const WHOLE: bool = false;

    #[inline(always)]
    fn pack(self) -> Packed<Self> {
        Packed::new(self)
    }
}

// SAFETY: `WHOLE` is false and `pack` is the default.
unsafe impl QueueEvent for () {}
// SAFETY: as above.
unsafe impl QueueEvent for u32 {}
// SAFETY: as above.
unsafe impl QueueEvent for &str {}
// SAFETY: as above.
unsafe impl<A: Copy, B: Copy> QueueEvent for (A, B) {}

/// Writes `word` with one 16-byte store (two 8-byte stores where SSE2 is not there).
#[inline(always)]
fn store_word(dst: *mut u128, word: u128) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86_64; `dst` is valid for a 16-byte write (the callers').
    unsafe {
        use std::arch::x86_64::{__m128i, _mm_set_epi64x, _mm_storeu_si128};
        _mm_storeu_si128(dst as *mut __m128i, _mm_set_epi64x((word >> 64) as i64, word as i64));
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: as above.
    unsafe {
        dst.write_unaligned(word)
    }
}

/// Two entries on one cache line: half of the four children of one heap position.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line<E: Copy>([Entry<E>; 2]);

impl<E: QueueEvent> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: QueueEvent> EventQueue<E> {
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.min(RADIX_FROM_LEN + 1);
        EventQueue {
            lines: Vec::with_capacity((capacity + SLOT_OFFSET) / 2 + 1),
            len: 0,
            run_left: 0,
            next_seq: 0,
            now: 0,
            far: Far::new(),
            run: Vec::new(),
            #[cfg(test)]
            sorted_runs: 0,
        }
    }

    /// The time of the event most recently popped (0 before the first).
    pub fn now(&self) -> Nanos {
        self.now
    }

    pub fn len(&self) -> usize {
        self.len + self.run_left + self.far.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether entries lie back to back (two to a line, no padding): then position `i` is the
    /// `i`-th entry from the start, one address computation instead of a line and a half.
    const CONTIGUOUS: bool = std::mem::size_of::<Line<E>>() == 2 * std::mem::size_of::<Entry<E>>();

    #[inline(always)]
    fn entry(&self, i: usize) -> &Entry<E> {
        debug_assert!(i >= 1 && i <= self.len);
        let slot = i + SLOT_OFFSET;
        // SAFETY: `i <= len` and every line up to position `len`'s slot exists (`push` adds the
        // line of each new position before it writes there; lines are never removed). `Line` is
        // `repr(C)` around its two entries, so when it has no padding the entries are an array.
        unsafe {
            if Self::CONTIGUOUS {
                &*(self.lines.as_ptr() as *const Entry<E>).add(slot)
            } else {
                self.lines.get_unchecked(slot >> 1).0.get_unchecked(slot & 1)
            }
        }
    }

    #[inline(always)]
    fn key(&self, i: usize) -> u128 {
        self.entry(i).key
    }

    /// Where position `i` is, to write it.
    #[inline(always)]
    fn slot_mut(&mut self, i: usize) -> *mut Entry<E> {
        debug_assert!(i >= 1 && i <= self.len);
        let slot = i + SLOT_OFFSET;
        // SAFETY: as in `entry`.
        unsafe {
            if Self::CONTIGUOUS {
                (self.lines.as_mut_ptr() as *mut Entry<E>).add(slot)
            } else {
                self.lines.get_unchecked_mut(slot >> 1).0.get_unchecked_mut(slot & 1)
            }
        }
    }

    #[inline(always)]
    fn set(&mut self, i: usize, entry: Entry<E>) {
        // SAFETY: `slot_mut` points at a live, initialised entry.
        unsafe { *self.slot_mut(i) = entry }
    }

    /// Writes a new entry at position `i` (see [`QueueEvent`]).
    #[inline(always)]
    fn set_new(&mut self, i: usize, entry: Entry<E>) {
        if !E::WHOLE {
            return self.set(i, entry);
        }
        const { assert!(std::mem::size_of::<E>() <= 16, "a WHOLE event is at most 16 bytes") };
        let dst = self.slot_mut(i) as *mut u128;
        // SAFETY: `Entry` is `repr(C)`: the key, then the event, 16 bytes each. The event's
        // `u128` is read only when `E::WHOLE`, whose implementer (an `unsafe impl`) promised
        // that every pack writes all 16 bytes.
        unsafe {
            store_word(dst, entry.key);
            store_word(dst.add(1), entry.event._whole);
        }
    }

    /// Moves every parent of a later key than `key` down one level, from the hole at position
    /// `hole` up; returns where the hole ends, for the caller to fill.
    #[inline(always)]
    fn sift_up(&mut self, mut hole: usize, key: u128) -> usize {
        while hole > 1 {
            let parent = parent(hole);
            if self.key(parent) <= key {
                break;
            }
            let moved = *self.entry(parent);
            self.set(hole, moved);
            hole = parent;
        }
        hole
    }

    /// The position of the smallest key among positions `from ..= to` (siblings: a group of
    /// at most four).
    #[inline(always)]
    fn smallest(&self, from: usize, to: usize) -> usize {
        let mut best = from;
        for c in from + 1..=to {
            if self.key(c) < self.key(best) {
                best = c;
            }
        }
        best
    }

    #[inline(always)]
    fn push_entry(&mut self, entry: Entry<E>) {
        let at = entry.at();
        if at > self.far.base {
            if self.len != 0 {
                return self.push_far(entry);
            }
            // The queue is empty (an empty heap means an empty `far` and no run left): the heap
            // takes it.
            self.far.base = at;
        }
        self.push_near(entry);
    }

    /// Pushes into the radix heap (out of line: small queues never do).
    #[inline(never)]
    fn push_far(&mut self, entry: Entry<E>) {
        self.far.push(entry);
    }

    /// Pushes onto the heap (its time is at most `far.base`).
    #[inline(always)]
    fn push_near(&mut self, entry: Entry<E>) {
        self.len += 1;
        while (self.len + SLOT_OFFSET) >> 1 >= self.lines.len() {
            if self.len > RADIX_FROM_LEN && self.far.base == Nanos::MAX {
                self.len -= 1;
                self.split_far();
                return self.push_entry(entry);
            }
            self.lines.push(Line([entry, entry]));
        }
        let hole = self.sift_up(self.len, entry.key);
        self.set_new(hole, entry);
    }

    /// The heap has grown past [`RADIX_FROM_LEN`]: from now on it keeps the events due at or
    /// before `now`, and `far` the rest.
    #[cold]
    #[inline(never)]
    fn split_far(&mut self) {
        let all: Vec<Entry<E>> = (1..=self.len).map(|i| *self.entry(i)).collect();
        self.len = 0;
        self.far.base = self.now;
        self.far.buckets = vec![Bucket::default(); BUCKETS];
        for entry in all {
            if entry.at() <= self.now {
                self.push_near(entry);
            } else {
                self.far.push(entry);
            }
        }
        if self.len == 0 {
            self.refill();
        }
        self.check();
    }

    /// The entry with key `popped` has just left the heap: if it was the run's latest there,
    /// the run's next one takes its place.
    #[inline(never)]
    fn next_of_run(&mut self, popped: u128) {
        let next = self.run.len() - self.run_left;
        if popped == self.run[next - 1].key {
            self.run_left -= 1;
            let entry = self.run[next];
            self.push_near(entry);
        }
    }

    /// The heap is empty (and so is the run): the earliest events in `far` go into them (see
    /// [`Far`]).
    #[cold]
    #[inline(never)]
    fn refill(&mut self) {
        debug_assert_eq!(self.len, 0);
        debug_assert_eq!(self.run_left, 0);
        if self.far.len == 0 {
            return;
        }
        let b = self.far.lowest();
        let Bucket { head, len, min: base, .. } = std::mem::take(&mut self.far.buckets[b]);
        self.far.occupied[b / 64] &= !(1 << (b % 64));
        self.far.len -= len as usize;
        // A bucket of few events goes into the heap whole, the base becoming its latest time:
        // every other bucket's events are later than all of them, and they keep their buckets
        // (the new base shares each digit with the old one above this bucket's level, and has
        // this bucket's digit at it). Moved down level by level instead, each event would be
        // appended again at every level it passes.
        // Otherwise the events of its earliest time go into the run. Appended in the order
        // they were pushed, they are almost always in key order already (the exceptions: a
        // sequence number reserved early and used late, and `split_far`, which appends in the
        // heap's order); then they are sorted in place, and keys are unique, so any sort gives
        // the one order.
        let whole = len as usize <= WHOLE_BUCKET;
        self.far.base = base;
        let mut latest = base;
        let (mut chunk, mut left) = (head as usize, len as usize);
        let mut run = std::mem::take(&mut self.run);
        run.clear();
        if !whole {
            // Counted first, so that the run's buffer grows at most once, to its size: grown by
            // doubling, each step a new allocation, a fleet's first refills left megabytes
            // resident. A buffer more than twice too large for this run (a fleet's start, when
            // every elector's first request arrives in one nanosecond) is let go here; a refill
            // of a whole bucket keeps it.
            let at_base = self.far.bucket_entries(head, len as usize).filter(|e| e.at() == base).count();
            if run.capacity() > 2 * at_base.max(WHOLE_BUCKET) {
                run = Vec::new();
            }
            run.reserve_exact(at_base);
        }
        while left > 0 {
            for i in 0..left.min(CHUNK) {
                let entry = self.far.chunks[chunk][i];
                if whole {
                    latest = latest.max(entry.at());
                    self.push_near(entry);
                } else if entry.at() == base {
                    run.push(entry);
                } else {
                    self.far.push(entry);
                }
            }
            left = left.saturating_sub(CHUNK);
            // Read through: free for the appends that follow.
            self.far.free.push(chunk as u32);
            chunk = self.far.next[chunk] as usize;
        }
        self.far.base = latest;
        if !run.is_empty() {
            if !run.is_sorted_by_key(|e| e.key) {
                #[cfg(test)]
                {
                    self.sorted_runs += 1;
                }
                run.sort_unstable_by_key(|e| e.key);
            }
            self.run_left = run.len() - 1;
            self.push_near(run[0]);
        }
        self.run = run;
    }

    /// The invariants of [`EventQueue`] (debug builds; a walk over every event, so only where
    /// the queue is rebuilt: `split_far`, and `remove_seqs` before and after).
    fn check(&self) {
        if cfg!(debug_assertions) {
            assert!(
                self.len > 0 || self.far.len == 0 && self.run_left == 0,
                "an empty heap with events in far or the run"
            );
            let base = self.far.base;
            assert!((1..=self.len).all(|i| self.entry(i).at() <= base));
            // The entries left, and the one before them (in the heap) while there are any.
            let run = &self.run[self.run.len() - self.run_left - (self.run_left > 0) as usize..];
            assert!(run.iter().all(|e| e.at() <= base) && run.windows(2).all(|w| w[0].key < w[1].key));
            if self.run_left > 0 {
                let latest = self.run[self.run.len() - self.run_left - 1].key;
                assert!((1..=self.len).any(|i| self.entry(i).key == latest), "the run's latest entry in the heap");
            }
            for b in 0..self.far.buckets.len() {
                let bucket: Vec<_> = self.far.bucket(b).collect();
                assert!(bucket.iter().all(|e| bucket_of(e.at(), base) == b));
                if let Some(min) = bucket.iter().map(|e| e.at()).min() {
                    assert_eq!(min, self.far.buckets[b].min);
                }
            }
            assert_eq!(self.far.entries().count(), self.far.len);
        }
    }

    #[inline(always)]
    fn pop_entry(&mut self) -> Option<Entry<E>> {
        if self.len == 0 {
            return None;
        }
        let top = *self.entry(1);
        let last = *self.entry(self.len);
        self.len -= 1;
        let end = self.len;
        if end == 0 {
            if self.run_left != 0 {
                self.next_of_run(top.key);
            } else if self.far.len != 0 {
                self.refill();
            }
            return Some(top);
        }
        // Floyd's pop: the hole at the top goes down to the bottom by the smallest child, three
        // comparisons a level, then the last entry rises from there (it belongs near the bottom).
        let mut hole = 1;
        let deep = end > PREFETCH_FROM_LEN;
        loop {
            let child = first_child(hole);
            if child + 3 > end {
                // The last, partial group (or none).
                if child <= end {
                    let best = self.smallest(child, end);
                    let moved = *self.entry(best);
                    self.set(hole, moved);
                    hole = best;
                }
                break;
            }
            // The four groups of grandchildren (16 slots, 8 lines, back to back) while this
            // level's comparisons wait: one of them is the next level.
            if deep {
                let first = (first_child(child) + SLOT_OFFSET) >> 1;
                if let Some(next) = self.lines.get(first..first + 8) {
                    for line in next {
                        crate::prefetch::prefetch(line);
                    }
                }
            }
            let (k0, k1, k2, k3) = (self.key(child), self.key(child + 1), self.key(child + 2), self.key(child + 3));
            let (a, ka) = if k1 < k0 { (child + 1, k1) } else { (child, k0) };
            let (b, kb) = if k3 < k2 { (child + 3, k3) } else { (child + 2, k2) };
            let best = if kb < ka { b } else { a };
            let moved = *self.entry(best);
            self.set(hole, moved);
            hole = best;
        }
        let hole = self.sift_up(hole, last.key);
        self.set(hole, last);
        if self.run_left != 0 {
            self.next_of_run(top.key);
        }
        Some(top)
    }

    /// Schedules `event` at true time `at`. Scheduling in the past is a bug in the caller: time
    /// never runs backwards, so it is asserted rather than silently clamped.
    /// Always inlined: where the event's kind is known, its packing folds to a few shifts.
    #[inline(always)]
    pub fn schedule(&mut self, at: Nanos, event: E) {
        assert!(at >= self.now, "event scheduled in the past: at={at} now={}", self.now);
        let key = ((at as u128) << 64) | self.next_seq as u128;
        self.next_seq += 1;
        self.push_entry(Entry { key, event: event.pack() });
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
    #[inline(always)]
    pub fn schedule_reserved(&mut self, at: Nanos, seq: u64, event: E) {
        assert!(at >= self.now, "event scheduled in the past: at={at} now={}", self.now);
        debug_assert!(seq < self.next_seq, "a sequence number not yet reserved");
        self.push_entry(Entry { key: ((at as u128) << 64) | seq as u128, event: event.pack() });
    }

    /// Time of the next event without removing it.
    #[inline]
    pub fn peek_time(&self) -> Option<Nanos> {
        (self.len > 0).then(|| self.entry(1).at())
    }

    /// The earliest event, without removing it.
    pub fn peek(&self) -> Option<&E> {
        (self.len > 0).then(|| self.entry(1).event.get())
    }

    /// Removes and returns the earliest event with its sequence number, advancing `now`.
    #[inline]
    pub fn pop_with_seq(&mut self) -> Option<(Nanos, u64, E)> {
        self.pop_packed().map(|(at, seq, event)| (at, seq, *event.get()))
    }

    /// [`Self::pop_with_seq`], the event still packed (see [`Packed`]): the event loop's pop.
    #[inline]
    pub fn pop_packed(&mut self) -> Option<(Nanos, u64, Packed<E>)> {
        let entry = self.pop_entry()?;
        let at = entry.at();
        debug_assert!(at >= self.now);
        self.now = at;
        Some((at, entry.key as u64, entry.event))
    }

    /// Removes and returns the earliest event, advancing `now` to its time.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        self.pop_with_seq().map(|(at, _, event)| (at, event))
    }

    /// Every entry as (time, sequence number, event), in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = (Nanos, u64, &E)> + '_ {
        let far = self.far.entries();
        let run = self.run[self.run.len() - self.run_left..].iter();
        (1..=self.len)
            .map(|i| self.entry(i))
            .chain(run)
            .chain(far)
            .map(|entry| (entry.at(), entry.key as u64, entry.event.get()))
    }

    /// Removes the entries whose sequence numbers are in `seqs`; the others keep their keys, so
    /// they come out in the same order as before. (The heap is built again: for small queues.)
    pub fn remove_seqs(&mut self, seqs: &[u64]) {
        self.check();
        // The run's entries left go into the heap first (a removed one may be its latest there).
        for i in self.run.len() - self.run_left..self.run.len() {
            let entry = self.run[i];
            self.push_near(entry);
        }
        self.run_left = 0;
        // The kept entries pushed again in their order, in place: the `kept`-th is read before
        // a push can write there (every push writes at positions up to `kept`).
        let len = self.len;
        let mut kept = 0;
        for i in 1..=len {
            self.len = len;
            let entry = *self.entry(i);
            if seqs.contains(&(entry.key as u64)) {
                continue;
            }
            kept += 1;
            self.len = kept;
            let hole = self.sift_up(kept, entry.key);
            self.set(hole, entry);
        }
        self.len = kept;
        if self.far.len > 0 {
            let kept: Vec<Entry<E>> = self.far.entries().filter(|e| !seqs.contains(&(e.key as u64))).copied().collect();
            self.far.clear();
            for entry in kept {
                self.far.push(entry);
            }
            if self.len == 0 {
                self.refill();
            }
        }
        self.check();
    }

    /// Takes `n` sequence numbers at once, for events handled without the queue (see
    /// `world/quiet.rs`); returns the first.
    pub fn reserve_seqs(&mut self, n: u64) -> u64 {
        let first = self.next_seq;
        self.next_seq += n;
        first
    }

    /// The next sequence number [`Self::reserve_seq`] would give.
    pub fn peek_seq(&self) -> u64 {
        self.next_seq
    }

    /// Drops every queued event and puts time back to 0; sequence numbers go on counting. For
    /// a world run one Lease at a time (`world/phases.rs`): the next Lease's events start again
    /// from time 0, and the events left past the last one's end are never handled, as in a run
    /// of the whole world.
    pub fn restart(&mut self) {
        self.len = 0;
        self.run_left = 0;
        self.run.clear();
        self.far = Far::new();
        self.now = 0;
        self.check();
    }

    /// Moves `now` to `t`, the time of the last event handled without the queue.
    pub fn advance_now(&mut self, t: Nanos) {
        debug_assert!(t >= self.now);
        self.now = t;
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

    /// A cheap deterministic stream of words for the tests below.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// The cache-line heap against `std`'s `BinaryHeap` on the same operations: pushes at the
    /// current time and just after it (many ties), reserved sequence numbers used late, pops
    /// interleaved, the heap growing to thousands and draining to empty several times.
    #[test]
    fn pops_in_the_same_order_as_a_binary_heap() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let mut reserved = Vec::new();
        let mut id = 0u32;
        // Miri interprets every step: a shorter run with the same phases.
        let (rounds, phase) = if cfg!(miri) { (6_000u32, 600) } else { (200_000u32, 20_000) };
        for round in 0..rounds {
            let r = next();
            // Phases of growth and of draining.
            let grow = (round / phase) % 2 == 0;
            if r % 10 < if grow { 6 } else { 3 } {
                let at = q.now() + next() % 8;
                if r.is_multiple_of(7) {
                    reserved.push((q.reserve_seq(), id));
                } else {
                    reference.push(Reverse((at, q.next_seq, id)));
                    q.schedule(at, id);
                }
                id += 1;
            } else if r % 10 == 6 && !reserved.is_empty() {
                let (seq, rid) = reserved.swap_remove((next() % reserved.len() as u64) as usize);
                let at = q.now() + next() % 3;
                reference.push(Reverse((at, seq, rid)));
                q.schedule_reserved(at, seq, rid);
            } else {
                let want = reference.pop().map(|Reverse(t)| t);
                assert_eq!(q.peek_time(), want.map(|(at, _, _)| at));
                let got = q.pop_with_seq();
                assert_eq!(got, want, "round {round}");
            }
            assert_eq!(q.len(), reference.len());
        }
        while let Some(Reverse(want)) = reference.pop() {
            assert_eq!(q.pop_with_seq(), Some(want));
        }
        assert!(q.is_empty() && q.pop().is_none());
    }

    /// Removing events in place (`remove_seqs`, used by `world/quiet.rs`) leaves the queue
    /// popping as a `BinaryHeap` without them does, at every size and for every subset taken
    /// from the top, the middle and the end.
    #[test]
    fn removed_events_leave_the_rest_in_order() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for size in 0..40u32 {
            for round in 0..8 {
                let mut q = EventQueue::new();
                let mut all = Vec::new();
                for id in 0..size {
                    let at = next() % 6;
                    all.push((at, q.peek_seq(), id));
                    q.schedule(at, id);
                }
                let removed: Vec<u64> = all.iter().map(|e| e.1).filter(|_| next() % 4 <= round % 4).collect();
                q.remove_seqs(&removed);
                let mut reference: BinaryHeap<_> =
                    all.into_iter().filter(|e| !removed.contains(&e.1)).map(Reverse).collect();
                assert_eq!(q.len(), reference.len());
                while let Some(Reverse(want)) = reference.pop() {
                    assert_eq!(q.pop_with_seq(), Some(want), "size {size} round {round}");
                }
                assert!(q.is_empty());
            }
        }
    }

    /// A restart in the middle of a sorted run, with events in the radix buckets: the queue is
    /// empty at time 0, keeps counting sequence numbers, and pops the next load in order.
    #[test]
    fn a_restart_empties_the_queue_and_keeps_counting() {
        let n = RADIX_FROM_LEN as u64 * 3;
        let mut q = EventQueue::new();
        // A lockstep instant larger than a whole bucket, and events spread far beyond it.
        for i in 0..n {
            let at = if i % 2 == 0 { 1_000 } else { 1_000 + (i << 20) };
            q.schedule(at, i as u32);
        }
        for _ in 0..10 {
            q.pop().expect("queued");
        }
        assert!(q.run_left > 0 && q.far.len > 0, "popped part of a sorted run, with far events left");
        let seq = q.peek_seq();
        q.restart();
        assert!(q.is_empty() && q.now() == 0 && q.peek().is_none());
        assert_eq!(q.len(), 0, "nothing left in the run or the radix buckets");
        assert_eq!(q.peek_seq(), seq, "sequence numbers go on counting");
        for i in 0..n {
            q.schedule(n - i, i as u32);
        }
        q.schedule(5, u32::MAX);
        let popped: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let mut want: Vec<_> = (0..n).map(|i| (n - i, i as u32)).collect();
        want.push((5, u32::MAX));
        want.sort_by_key(|&(at, id)| (at, id == u32::MAX));
        assert_eq!(popped, want);
    }

    /// Past `RADIX_FROM_LEN` events the later ones wait in the radix heap's buckets: the order
    /// is still `BinaryHeap`'s, with times spread over every scale (a nanosecond to 2^50), many
    /// events due in the same nanosecond (a fleet's leaders in lockstep), reserved sequence
    /// numbers used late, removals, a listing of every entry, and the queue drained to empty
    /// and grown again.
    #[test]
    fn a_large_queue_in_two_parts_pops_as_a_binary_heap() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut next = xorshift(0x0123_4567_89ab_cdef);
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let mut reserved = Vec::new();
        let mut id = 0u32;
        let size = RADIX_FROM_LEN as u64 * 3;
        let rounds = if cfg!(miri) { 3 * RADIX_FROM_LEN as u32 } else { 400_000 };
        let mut lockstep = 0;
        let (mut longest_run, mut listed_with_run) = (0, 0);
        for round in 0..rounds {
            let r = next();
            let grow = (round / (size as u32 * 2)) % 3 != 2;
            let len = reference.len() as u64 + reserved.len() as u64;
            let push = if grow { len < size / 2 || r % 8 < 4 + (len < size) as u64 } else { r % 8 < 2 };
            if push {
                let scale = [0, 3, 10, 20, 31, 31, 31, 50][(next() % 8) as usize];
                let at = match r % 16 {
                    // The same nanosecond as a group of others, well ahead.
                    0..=2 => {
                        if lockstep <= q.now() {
                            lockstep = q.now() + 1 + next() % (1 << 31);
                        }
                        lockstep
                    }
                    _ => q.now() + next() % (1u64 << scale).max(1),
                };
                if r.is_multiple_of(11) {
                    reserved.push((q.reserve_seq(), id));
                } else {
                    reference.push(Reverse((at, q.next_seq, id)));
                    q.schedule(at, id);
                }
                id += 1;
            } else if r % 8 == 5 && !reserved.is_empty() {
                let (seq, rid) = reserved.swap_remove((next() % reserved.len() as u64) as usize);
                // Now and then at the lockstep instant: a run out of key order, sorted.
                let at = if r.is_multiple_of(3) && lockstep > q.now() { lockstep } else { q.now() + next() % 3 };
                reference.push(Reverse((at, seq, rid)));
                q.schedule_reserved(at, seq, rid);
            } else if r % 512 == 7 {
                // Every entry listed; a few removed, as a quiet stretch does; every entry listed.
                let mut all: Vec<_> = reference.drain().map(|Reverse(e)| e).collect();
                all.sort_unstable();
                let mut before: Vec<_> = q.entries().map(|(at, seq, &id)| (at, seq, id)).collect();
                before.sort_unstable();
                assert_eq!(before, all, "round {round}");
                listed_with_run += (q.run_left > 0) as usize;
                let removed: Vec<u64> = all.iter().filter(|_| next().is_multiple_of(50)).map(|e| e.1).collect();
                q.remove_seqs(&removed);
                all.retain(|e| !removed.contains(&e.1));
                let mut listed: Vec<_> = q.entries().map(|(at, seq, &id)| (at, seq, id)).collect();
                listed.sort_unstable();
                all.sort_unstable();
                assert_eq!(listed, all, "round {round}");
                reference = all.into_iter().map(Reverse).collect();
            } else {
                let want = reference.pop().map(|Reverse(t)| t);
                assert_eq!(q.peek_time(), want.map(|(at, _, _)| at));
                assert_eq!(q.pop_with_seq(), want, "round {round}");
            }
            assert_eq!(q.len(), reference.len());
            longest_run = longest_run.max(q.run_left);
        }
        assert!(q.far.base < Nanos::MAX, "the radix heap was used");
        if !cfg!(miri) {
            assert!(longest_run >= WHOLE_BUCKET, "a run of one instant's events was read through: {longest_run}");
            assert!(
                q.sorted_runs > 0 && listed_with_run > 0,
                "{} runs sorted, {listed_with_run} listings",
                q.sorted_runs
            );
        }
        while let Some(Reverse(want)) = reference.pop() {
            assert_eq!(q.pop_with_seq(), Some(want));
        }
        assert!(q.is_empty() && q.pop().is_none());
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
