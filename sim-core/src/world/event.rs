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

/// `repr(u8)`: each variant is laid out as a `repr(C)` struct of the tag (byte 0) and its
/// fields in the order written, so its bytes are known: a byte field first (byte 1), then
/// 32-bit fields at bytes 4, 8 and 12. [`Event::word`] builds those bytes by arithmetic, and
/// the queue writes a new event with one store (see `engine::QueueEvent`). Keep a variant's
/// one byte-sized field first and its 32-bit fields after; the test of every variant checks it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(u8)]
pub(super) enum Event {
    Start {
        node: u32,
    } = 0,
    Timer {
        kind: TimerKind,
        node: u32,
        incarnation: u32,
        generation: Generation,
    } = 1,
    ReconcileTick {
        node: u32,
        incarnation: u32,
        generation: u32,
    } = 2,
    /// A request reaches the API server (message slot `msg`).
    Arrive {
        msg: u32,
    } = 3,
    /// The server applies it, after a slowdown's extra processing time.
    Apply {
        msg: u32,
    } = 4,
    /// Its answer reaches the node.
    Respond {
        msg: u32,
    } = 5,
    /// A request's timeout; `id` is the low 32 bits of the request id (a run's event budget
    /// keeps ids far below 2^32, so they never collide).
    Timeout {
        origin: Origin,
        node: u32,
        incarnation: u32,
        id: u32,
    } = 6,
    /// The connection was refused or reset (a `refuse` partition): the request fails now.
    Reset {
        origin: Origin,
        node: u32,
        incarnation: u32,
        id: u32,
    } = 7,
    /// The client sends message `msg` again after its Retry-After.
    Resend {
        msg: u32,
    } = 8,
    Resume {
        node: u32,
        incarnation: u32,
    } = 9,
    /// The kubelet probes the process's health check (`failed`: a probe that got no answer in
    /// time, reported at its timeout).
    Probe {
        failed: bool,
        node: u32,
        incarnation: u32,
    } = 10,
    Fault {
        index: u32,
    } = 11,
    RandomFault {
        process: u32,
    } = 12,
    PartitionEnd {
        node: u32,
    } = 13,
    Action {
        index: u32,
    } = 14,
    /// The leader's work stops (a blocking stop hook returned, or the runnables drained).
    StopActing {
        node: u32,
        incarnation: u32,
        generation: u32,
    } = 15,
    /// A watch event reaches the node (its content waits in `Watches`, in order).
    Watch {
        node: u32,
        incarnation: u32,
    } = 16,
    /// The LeaseCandidate's `ensureLease` runs (its queue's item; a newer generation replaces it).
    CandidateEnsure {
        node: u32,
        incarnation: u32,
        generation: u32,
    } = 17,
    /// A write to the node's LeaseCandidate reaches its informer.
    CandidateWatch {
        node: u32,
        incarnation: u32,
    } = 18,
    /// The election controller's queue hands it Lease `key` (a newer generation replaces it).
    Election {
        key: u32,
        generation: u32,
    } = 19,
    /// The LeaseCandidate garbage collector's period.
    ElectionGc = 20,
}

impl Event {
    /// The event's 16 bytes as one little-endian word, padding bytes zero: byte 0 the tag,
    /// byte 1 the byte-sized field, then the 32-bit fields from byte 4 (see the layout above).
    /// Inlined where an event of a known kind is scheduled, it folds to a few shifts.
    #[inline(always)]
    pub(super) fn word(self) -> u128 {
        let (tag, byte, a, b, c): (u8, u8, u32, u32, u32) = match self {
            Event::Start { node } => (0, 0, node, 0, 0),
            Event::Timer { kind, node, incarnation, generation } => (1, kind as u8, node, incarnation, generation),
            Event::ReconcileTick { node, incarnation, generation } => (2, 0, node, incarnation, generation),
            Event::Arrive { msg } => (3, 0, msg, 0, 0),
            Event::Apply { msg } => (4, 0, msg, 0, 0),
            Event::Respond { msg } => (5, 0, msg, 0, 0),
            Event::Timeout { origin, node, incarnation, id } => (6, origin as u8, node, incarnation, id),
            Event::Reset { origin, node, incarnation, id } => (7, origin as u8, node, incarnation, id),
            Event::Resend { msg } => (8, 0, msg, 0, 0),
            Event::Resume { node, incarnation } => (9, 0, node, incarnation, 0),
            Event::Probe { failed, node, incarnation } => (10, failed as u8, node, incarnation, 0),
            Event::Fault { index } => (11, 0, index, 0, 0),
            Event::RandomFault { process } => (12, 0, process, 0, 0),
            Event::PartitionEnd { node } => (13, 0, node, 0, 0),
            Event::Action { index } => (14, 0, index, 0, 0),
            Event::StopActing { node, incarnation, generation } => (15, 0, node, incarnation, generation),
            Event::Watch { node, incarnation } => (16, 0, node, incarnation, 0),
            Event::CandidateEnsure { node, incarnation, generation } => (17, 0, node, incarnation, generation),
            Event::CandidateWatch { node, incarnation } => (18, 0, node, incarnation, 0),
            Event::Election { key, generation } => (19, 0, key, generation, 0),
            Event::ElectionGc => (20, 0, 0, 0, 0),
        };
        tag as u128 | (byte as u128) << 8 | (a as u128) << 32 | (b as u128) << 64 | (c as u128) << 96
    }
}

impl QueueEvent for Event {
    const WHOLE: bool = true;

    #[inline(always)]
    fn pack(self) -> Packed<Self> {
        // SAFETY: `word` writes the tag and every field at the offsets `repr(u8)` gives them
        // (checked for every variant by `every_event_is_its_word`).
        unsafe { Packed::from_word(self.word()) }
    }
}

const _: () = assert!(std::mem::size_of::<Event>() <= 16, "events stay small: payloads live in the slab");

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant, its fields all different and non-zero, read back from its word.
    #[test]
    fn every_event_is_its_word() {
        let (n, i, g) = (0x0102_0304, 0x1112_1314, 0x2122_2324);
        let kinds = [TimerKind::Retry, TimerKind::Delay];
        let origins = [Origin::Elector, Origin::Candidate];
        let mut events = vec![
            Event::Start { node: n },
            Event::ReconcileTick { node: n, incarnation: i, generation: g },
            Event::Arrive { msg: n },
            Event::Apply { msg: n },
            Event::Respond { msg: n },
            Event::Resend { msg: n },
            Event::Resume { node: n, incarnation: i },
            Event::Probe { failed: true, node: n, incarnation: i },
            Event::Probe { failed: false, node: n, incarnation: i },
            Event::Fault { index: n },
            Event::RandomFault { process: n },
            Event::PartitionEnd { node: n },
            Event::Action { index: n },
            Event::StopActing { node: n, incarnation: i, generation: g },
            Event::Watch { node: n, incarnation: i },
            Event::CandidateEnsure { node: n, incarnation: i, generation: g },
            Event::CandidateWatch { node: n, incarnation: i },
            Event::Election { key: n, generation: g },
            Event::ElectionGc,
        ];
        for kind in kinds {
            events.push(Event::Timer { kind, node: n, incarnation: i, generation: g });
        }
        for origin in origins {
            events.push(Event::Timeout { origin, node: n, incarnation: i, id: g });
            events.push(Event::Reset { origin, node: n, incarnation: i, id: g });
        }
        for event in events {
            assert_eq!(*event.pack().get(), event);
        }
    }
}
