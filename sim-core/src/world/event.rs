//! The closed set of things that can happen in a run: one place shows them all.
//!
//! An event is 16 bytes (a heap entry 32 with its key): everything bulky — a request and its
//! answer — waits in the network's message slab and the event names its slot.

use crate::elector::{Generation, TimerKind};
use crate::engine::{Packed, QueueEvent};

/// Which part of a node sent a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Origin {
    Elector,
    Reconciler,
    /// The elector's event recorder (answers are not read).
    Recorder,
    /// The node's LeaseCandidate (coordinated leader election).
    Candidate,
}

impl Origin {
    pub(super) fn name(self) -> &'static str {
        match self {
            Origin::Elector => "elector",
            Origin::Reconciler => "reconciler",
            Origin::Recorder => "recorder",
            Origin::Candidate => "candidate",
        }
    }
}

/// The event enum, its byte layout and its test samples, from one table (below), so that a new
/// variant cannot be left out of any of them.
///
/// `repr(u8)`: each variant is laid out as a `repr(C)` struct of the tag (byte 0) and its
/// fields in the order written, so its bytes are known: the byte-sized field marked `@byte`
/// first (byte 1), then up to three 32-bit fields at bytes 4, 8 and 12. `Event::word` builds
/// those bytes by arithmetic, and the queue writes a new event with one store (see
/// `engine::QueueEvent`); the test of every variant checks the layout.
macro_rules! events {
    ($(
        $(#[$doc:meta])*
        $variant:ident { $(@byte $byte:ident : $bty:ty,)? $($field:ident : $fty:ty),* $(,)? } = $tag:literal,
    )*) => {
        #[derive(Clone, Copy, Debug, PartialEq)]
        #[repr(u8)]
        pub(super) enum Event {
            $( $(#[$doc])* $variant { $($byte: $bty,)? $($field: $fty),* } = $tag, )*
        }

        impl Event {
            /// The event's 16 bytes as one little-endian word, padding bytes zero: byte 0 the
            /// tag, byte 1 the byte-sized field, then the 32-bit fields from byte 4. Inlined
            /// where an event of a known kind is scheduled, it folds to a few shifts.
            #[inline(always)]
            pub(super) fn word(self) -> u128 {
                match self {
                    $(Event::$variant { $($byte,)? $($field),* } => {
                        let byte: u8 = 0 $(| $byte as u8)?;
                        let fields: &[u32] = &[$($field),*];
                        let mut word = $tag as u128 | (byte as u128) << 8;
                        for (k, &f) in fields.iter().enumerate() {
                            word |= (f as u128) << (32 * (k + 1));
                        }
                        word
                    })*
                }
            }

            /// Every variant, each byte-sized field at each of its values, the 32-bit fields
            /// all different and non-zero.
            #[cfg(test)]
            pub(super) fn samples() -> Vec<Event> {
                let mut all = Vec::new();
                $(events!(@samples all, $variant { $($byte: $bty)? } [$($field),*]);)*
                all
            }
        }
    };
    (@samples $all:ident, $variant:ident { $byte:ident : $bty:ty } [$($field:ident),*]) => {
        for $byte in <$bty as tests::Samples>::all() {
            let mut n = 0x0102_0304u32;
            $(let $field = { n = n.wrapping_mul(3).wrapping_add(0x1010_1010); n };)*
            $all.push(Event::$variant { $byte, $($field),* });
        }
    };
    (@samples $all:ident, $variant:ident { } [$($field:ident),*]) => {
        #[allow(unused_mut, unused_assignments, unused_variables)]
        let mut n = 0x0102_0304u32;
        $(let $field = { n = n.wrapping_mul(3).wrapping_add(0x1010_1010); n };)*
        $all.push(Event::$variant { $($field),* });
    };
}

events! {
    Start { node: u32 } = 0,
    Timer { @byte kind: TimerKind, node: u32, incarnation: u32, generation: Generation } = 1,
    ReconcileTick { node: u32, incarnation: u32, generation: u32 } = 2,
    /// A request reaches the API server (message slot `msg`).
    Arrive { msg: u32 } = 3,
    /// The server applies it, after a slowdown's extra processing time.
    Apply { msg: u32 } = 4,
    /// Its answer reaches the node.
    Respond { msg: u32 } = 5,
    /// A request's timeout; `id` is the low 32 bits of the request id (a run's event budget
    /// keeps ids far below 2^32, so they never collide).
    Timeout { @byte origin: Origin, node: u32, incarnation: u32, id: u32 } = 6,
    /// The connection was refused or reset (a `refuse` partition): the request fails now.
    Reset { @byte origin: Origin, node: u32, incarnation: u32, id: u32 } = 7,
    /// The client sends message `msg` again after its Retry-After.
    Resend { msg: u32 } = 8,
    Resume { node: u32, incarnation: u32 } = 9,
    /// The kubelet probes the process's health check (`failed`: a probe that got no answer in
    /// time, reported at its timeout).
    Probe { @byte failed: bool, node: u32, incarnation: u32 } = 10,
    Fault { index: u32 } = 11,
    RandomFault { process: u32 } = 12,
    PartitionEnd { node: u32 } = 13,
    Action { index: u32 } = 14,
    /// The leader's work stops (a blocking stop hook returned, or the runnables drained).
    StopActing { node: u32, incarnation: u32, generation: u32 } = 15,
    /// A watch event reaches the node (its content waits in `Watches`, in order).
    Watch { node: u32, incarnation: u32 } = 16,
    /// The LeaseCandidate's `ensureLease` runs (its queue's item; a newer generation replaces it).
    CandidateEnsure { node: u32, incarnation: u32, generation: u32 } = 17,
    /// A write to the node's LeaseCandidate reaches its informer.
    CandidateWatch { node: u32, incarnation: u32 } = 18,
    /// The election controller's queue hands it Lease `key` (a newer generation replaces it).
    Election { key: u32, generation: u32 } = 19,
    /// The LeaseCandidate garbage collector's period.
    ElectionGc {} = 20,
    /// A request waited its turn at the client-side rate limiter: it is sent now.
    Throttled { msg: u32 } = 21,
    /// The node's reconciler's burst of reads is due.
    ReconcileBurst { node: u32 } = 22,
}

// SAFETY: `word` writes the tag and every field at the offsets `repr(u8)` gives them, every
// other byte zero (checked for every variant by `every_event_is_its_word`), and an event is at
// most 16 bytes (asserted below).
unsafe impl QueueEvent for Event {
    const WHOLE: bool = true;

    #[inline(always)]
    fn pack(self) -> Packed<Self> {
        // SAFETY: as above: `word`'s bytes are those of `self`.
        unsafe { Packed::from_word(self.word()) }
    }
}

const _: () = assert!(std::mem::size_of::<Event>() <= 16, "events stay small: payloads live in the slab");

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The values of a byte-sized event field, for [`Event::samples`].
    pub(in crate::world) trait Samples: Sized {
        fn all() -> Vec<Self>;
    }

    impl Samples for bool {
        fn all() -> Vec<bool> {
            vec![false, true]
        }
    }

    impl Samples for TimerKind {
        fn all() -> Vec<TimerKind> {
            use TimerKind::*;
            let all = vec![Retry, RoundTick, RoundDeadline, NextRound, Drain, Delay];
            assert_eq!(all.len(), TimerKind::COUNT);
            all
        }
    }

    impl Samples for Origin {
        fn all() -> Vec<Origin> {
            vec![Origin::Elector, Origin::Reconciler, Origin::Recorder, Origin::Candidate]
        }
    }

    /// Every variant read back from its word (the samples come from the same table as the
    /// enum, so a new variant is in them).
    #[test]
    fn every_event_is_its_word() {
        let samples = Event::samples();
        assert!(samples.len() >= 21);
        for event in samples {
            assert_eq!(*event.pack().get(), event, "{event:?}");
        }
    }
}
