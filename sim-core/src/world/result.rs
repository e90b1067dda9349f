//! What a run hands back: its metrics, spans, faults and action outcomes for timelines, and its
//! trace; and why a run could not be built or did not end. Plain data, read by sim-cli.

use crate::metrics::{DualWindow, Metrics};
use crate::model::FaultKind;
use crate::time::Nanos;
use crate::trace::TraceEvent;

/// A span of one node's life, for timelines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SpanKind {
    /// The process is running (candidate or leader).
    Running,
    Leader,
    Paused,
    Partitioned,
}

impl SpanKind {
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Running => "running",
            SpanKind::Leader => "leader",
            SpanKind::Paused => "paused",
            SpanKind::Partitioned => "partitioned",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub node: usize,
    pub kind: SpanKind,
    pub from: Nanos,
    pub until: Nanos,
}

/// A fault as it happened (target resolved), for timelines.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRecord {
    pub at: Nanos,
    pub node: Option<usize>,
    pub kind: &'static str,
    pub detail: FaultDetail,
}

/// What a fault record says of its fault. A fault's drawn parameters are kept as they are and
/// written out only when read (`to_string`): a run records a fault every minute or so and a
/// sweep reads none of them.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultDetail {
    Of(FaultKind),
    Text(String),
    /// A write of the coordinated-election controller to one Lease (`namespace/name`).
    Election {
        lease: String,
        text: String,
    },
}

impl std::fmt::Display for FaultDetail {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            FaultDetail::Of(kind) => f.pad(&kind.detail()),
            FaultDetail::Text(text) | FaultDetail::Election { text, .. } => f.pad(text),
        }
    }
}

/// What a scripted action got back.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionOutcome {
    pub name: String,
    pub at: Nanos,
    pub code: u16,
    pub reason: String,
    pub message: String,
    /// What kubectl would print on stderr for an error ("" on success).
    pub kubectl_stderr: String,
    /// The object returned, as JSON (Null for errors and can-i).
    pub object: serde_json::Value,
    /// For can-i: the answer.
    pub allowed: Option<bool>,
}

/// Why a world could not be built, in a form a caller can place in its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetupError {
    /// The spec breaks a rule of its own (`WorldSpec::validate`).
    Spec(String),
    /// The API server refused setup object `index` of the spec.
    Object { index: usize, message: String },
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            SetupError::Spec(message) => f.write_str(message),
            SetupError::Object { index, message } => write!(f, "setup object #{index}: {message}"),
        }
    }
}

impl std::error::Error for SetupError {}

/// A run stopped because it reached its event budget, or because time stood still.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetExceeded {
    pub events: u64,
    /// True time reached, and the run's duration.
    pub at: Nanos,
    pub duration: Nanos,
    /// The last [`STUCK_EVENTS`](super::STUCK_EVENTS) events all happened at `at`: something
    /// loops without waiting (a zero timeout or delay that a client retries at once), and the
    /// run would never reach its end.
    pub stuck: bool,
}

/// Everything a run produced.
pub struct RunResult {
    pub metrics: Metrics,
    pub node_names: Vec<String>,
    /// Each node's Lease (`namespace/name`), in node order.
    pub node_leases: Vec<String>,
    pub spans: Vec<Span>,
    pub dual_windows: Vec<DualWindow>,
    /// `(true time, leaseTransitions)` each time the server's value changed, for the first
    /// node's Lease.
    pub transitions_series: Vec<(Nanos, i32)>,
    /// The same for every Lease elected on (`namespace/name`), in order of first use.
    pub lease_transitions: Vec<(String, Vec<(Nanos, i32)>)>,
    /// `(true time, number of acting leaders)` at each change.
    pub acting_series: Vec<(Nanos, usize)>,
    /// The wall-clock offsets of nodes whose clock is not perfect, sampled when asked.
    pub clock_offsets: ClockOffsets,
    pub faults: Vec<FaultRecord>,
    pub actions: Vec<ActionOutcome>,
    pub trace: Vec<TraceEvent>,
    /// Every reconciler read and write of the child object as applied (with the trace only).
    pub history: Vec<crate::history::HistoryOp>,
    pub duration: Nanos,
    pub events_processed: u64,
    /// Of those, the events stepped over in quiet stretches (`world/quiet.rs`): for benches and
    /// tests; no output shows it (they are the same either way).
    pub events_stepped: u64,
}

/// The clocks of a run's nodes whose clock is not perfect, kept to sample their wall offsets
/// for plots (most runs draw none: a sweep's, a hunt's).
#[derive(Clone, Debug, Default)]
pub struct ClockOffsets {
    pub(super) end: Nanos,
    /// (node, its clock), in node order.
    pub(super) clocks: Vec<(usize, crate::clock::NodeClock)>,
}

impl ClockOffsets {
    /// The nodes whose clock is not perfect, in order.
    pub fn nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.clocks.iter().map(|&(node, _)| node)
    }

    /// `node`'s wall offset from true time at 201 instants evenly spread over the run, `(true
    /// time, offset ns)` (none for a perfect clock).
    pub fn of(&self, node: usize) -> Vec<(Nanos, i64)> {
        const SAMPLES: u64 = 200;
        let Some((_, clock)) = self.clocks.iter().find(|&&(n, _)| n == node) else { return Vec::new() };
        (0..=SAMPLES)
            .map(|k| {
                let t = self.end / SAMPLES * k;
                (t, clock.wall_offset(t))
            })
            .collect()
    }
}
