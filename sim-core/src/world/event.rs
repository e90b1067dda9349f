//! The closed set of things that can happen in a run: one place shows them all.
//!
//! An event is 16 bytes (a heap entry 32 with its key): everything bulky — a request and its
//! answer — waits in the network's message slab and the event names its slot.

use crate::elector::{Generation, TimerKind};

/// Which part of a node sent a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

#[derive(Clone, Copy, Debug)]
pub(super) enum Event {
    Start {
        node: u32,
    },
    Timer {
        node: u32,
        incarnation: u32,
        generation: Generation,
        kind: TimerKind,
    },
    ReconcileTick {
        node: u32,
        incarnation: u32,
        generation: u32,
    },
    /// A request reaches the API server (message slot `msg`).
    Arrive {
        msg: u32,
    },
    /// The server applies it, after a slowdown's extra processing time.
    Apply {
        msg: u32,
    },
    /// Its answer reaches the node.
    Respond {
        msg: u32,
    },
    /// A request's timeout; `id` is the low 32 bits of the request id (a run's event budget
    /// keeps ids far below 2^32, so they never collide).
    Timeout {
        node: u32,
        incarnation: u32,
        id: u32,
        origin: Origin,
    },
    /// The connection was refused or reset (a `refuse` partition): the request fails now.
    Reset {
        node: u32,
        incarnation: u32,
        id: u32,
        origin: Origin,
    },
    /// The client sends message `msg` again after its Retry-After.
    Resend {
        msg: u32,
    },
    Resume {
        node: u32,
        incarnation: u32,
    },
    /// The kubelet probes the process's health check (`failed`: a probe that got no answer in
    /// time, reported at its timeout).
    Probe {
        node: u32,
        incarnation: u32,
        failed: bool,
    },
    Fault {
        index: u32,
    },
    RandomFault {
        process: u32,
    },
    PartitionEnd {
        node: u32,
    },
    Action {
        index: u32,
    },
    /// The leader's work stops (a blocking stop hook returned, or the runnables drained).
    StopActing {
        node: u32,
        incarnation: u32,
        generation: u32,
    },
    /// A watch event reaches the node (its content waits in `Watches`, in order).
    Watch {
        node: u32,
        incarnation: u32,
    },
    /// The LeaseCandidate's `ensureLease` runs (its queue's item; a newer generation replaces it).
    CandidateEnsure {
        node: u32,
        incarnation: u32,
        generation: u32,
    },
    /// A write to the node's LeaseCandidate reaches its informer.
    CandidateWatch {
        node: u32,
        incarnation: u32,
    },
    /// The election controller's queue hands it Lease `key` (a newer generation replaces it).
    Election {
        key: u32,
        generation: u32,
    },
    /// The LeaseCandidate garbage collector's period.
    ElectionGc,
}

const _: () = assert!(std::mem::size_of::<Event>() <= 16, "events stay small: payloads live in the slab");
