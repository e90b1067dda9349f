//! Trace events: the record of everything that happened in a run, in order.
//!
//! Events are stored typed (no formatting) while the run goes, and only when the run's spec asks
//! for a trace; [`TraceEvent::to_json`] renders the documented JSON Lines schema
//! (`docs/trace-schema.md`) at the edge.

use crate::elector::{Note, TimerKind};
use crate::time::{Nanos, UnixNanos};
use serde_json::{Map, Value, json};
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq)]
pub enum TraceKind {
    ProcessStart {
        incarnation: u32,
    },
    ProcessExit,
    Crash,
    PauseStart {
        until: Nanos,
    },
    PauseEnd,
    StopRequested,
    ClockStep {
        delta_ns: i64,
    },
    PartitionStart {
        cut: &'static str,
        until: Nanos,
    },
    PartitionEnd,
    ServerOutage {
        until: Nanos,
    },
    ServerSlow {
        until: Nanos,
        extra_ns: Nanos,
    },
    /// A node sent a request (`origin`: elector or reconciler).
    Request {
        id: u64,
        origin: &'static str,
        verb: &'static str,
        resource: &'static str,
        name: Arc<str>,
    },
    /// The network lost it (`why`: loss or partition) in direction `dir`.
    Lost {
        id: u64,
        dir: &'static str,
        why: &'static str,
    },
    /// The API server was down when it arrived: not applied, not answered.
    ServerDown {
        id: u64,
    },
    /// The server handled it.
    Applied {
        id: u64,
        code: u16,
        rv_before: u64,
        rv_after: u64,
        message: String,
    },
    Response {
        id: u64,
        code: u16,
    },
    Timeout {
        id: u64,
    },
    Timer {
        kind: TimerKind,
    },
    Note {
        note: Note,
    },
    StartedLeading,
    StoppedLeading,
    NewLeader {
        holder: Arc<str>,
    },
    /// The Lease (`namespace/name`) on the server changed holder or transitions.
    LeaseChanged {
        lease: Arc<str>,
        holder: Arc<str>,
        transitions: i32,
        rv: u64,
    },
    ReconcileWrite {
        id: u64,
        code: u16,
        outcome: &'static str,
        message: String,
        /// For an apply conflict with one manager: the field manager that owns the field. Not
        /// written into the trace: the message names it.
        owner: Option<String>,
    },
    SplitBrainWrite {
        id: u64,
        lease_holder: Arc<str>,
    },
    FencedRejection {
        lease_holder: Arc<str>,
    },
    DualLeaderStart {
        lease: Arc<str>,
        leaders: Vec<String>,
    },
    DualLeaderEnd {
        lease: Arc<str>,
        seconds: f64,
    },
    Action {
        name: String,
        code: u16,
        message: String,
    },
    /// The elector's recorder created an Event (`name`, message "<identity> <message>").
    EventRecorded {
        name: String,
        message: &'static str,
    },
    /// The connection was refused (a `refuse` partition): the call fails without reaching
    /// the other side (`dir` up) or its answer is reset (`dir` down).
    Refused {
        id: u64,
        dir: &'static str,
    },
    /// A `hold` partition keeps the message until it heals; it arrives then.
    Held {
        id: u64,
        dir: &'static str,
        until: Nanos,
    },
    /// `[[server.errors]]` answered this request with `code` instead of handling it (504: after
    /// handling it).
    InjectedError {
        id: u64,
        code: u16,
    },
    /// The client waits `wait_ns` (the answer's Retry-After) and sends the request again.
    RetryAfter {
        id: u64,
        wait_ns: Nanos,
    },
    /// An exception escaped the elector's `run()` (the Python client): no OnStoppedLeading.
    Exception {
        message: &'static str,
    },
    /// A liveness probe of the leader-election health check failed (`failures` in a row).
    ProbeFailed {
        failures: u32,
    },
    /// The kubelet kills the container after too many failed probes.
    LivenessKill,
    /// The leader's work ended (a `work` fault: `returns`, `raises`, `blocks`); `then` is what
    /// the library does about it (`unnoticed`, `process-dies`, `elector-stops-next-round`,
    /// `graceful-stop`).
    WorkEnded {
        ends: &'static str,
        then: &'static str,
    },
    /// The request waits `wait_ns` (local) for a token of its process's client-side rate
    /// limiter before it is sent.
    Throttled {
        id: u64,
        wait_ns: Nanos,
    },
    /// The wait for a token would pass the request's context deadline: it fails at once,
    /// unsent (client-go: `rate: Wait(n=1) would exceed context deadline`).
    RateLimited {
        id: u64,
    },
    /// The node's HTTP client wedged (a `wedge` fault): requests in flight and those sent
    /// before `until` (`None`: until the process ends) never complete.
    Wedged {
        until: Option<Nanos>,
    },
    /// One `reconcileElectionStep` of the apiserver's election controller that did something:
    /// pinged candidates, installed a holder, set a preferred holder, or failed.
    /// (Boxed: rare, and every trace event is as large as the largest kind.)
    Election(Box<ElectionTrace>),
    /// The LeaseCandidate garbage collector deleted these expired candidates.
    CandidatesCollected {
        names: Vec<String>,
    },
}

/// What one run of the apiserver's election controller did.
#[derive(Clone, Debug, PartialEq)]
pub struct ElectionTrace {
    pub lease: String,
    pub installed: Option<String>,
    pub preferred: Option<String>,
    pub pinged: u32,
    pub error: Option<String>,
}

impl TraceKind {
    /// The fields of the controller's kinds, in their key order.
    fn fields_json(&self) -> Value {
        match self {
            TraceKind::Election(e) => json!({
                "lease": e.lease, "installed": e.installed, "preferred_holder": e.preferred, "pinged": e.pinged,
                "error": e.error,
            }),
            TraceKind::CandidatesCollected { names } => json!({ "names": names }),
            _ => json!({}),
        }
    }
}

impl TraceKind {
    pub fn name(&self) -> &'static str {
        match self {
            TraceKind::ProcessStart { .. } => "process-start",
            TraceKind::ProcessExit => "process-exit",
            TraceKind::Crash => "crash",
            TraceKind::PauseStart { .. } => "pause-start",
            TraceKind::PauseEnd => "pause-end",
            TraceKind::StopRequested => "stop",
            TraceKind::ClockStep { .. } => "clock-step",
            TraceKind::PartitionStart { .. } => "partition-start",
            TraceKind::PartitionEnd => "partition-end",
            TraceKind::ServerOutage { .. } => "server-outage",
            TraceKind::ServerSlow { .. } => "server-slow",
            TraceKind::Request { .. } => "request",
            TraceKind::Lost { .. } => "lost",
            TraceKind::ServerDown { .. } => "server-down",
            TraceKind::Applied { .. } => "applied",
            TraceKind::Response { .. } => "response",
            TraceKind::Timeout { .. } => "timeout",
            TraceKind::Timer { .. } => "timer",
            TraceKind::Note { .. } => "note",
            TraceKind::StartedLeading => "started-leading",
            TraceKind::StoppedLeading => "stopped-leading",
            TraceKind::NewLeader { .. } => "new-leader",
            TraceKind::LeaseChanged { .. } => "lease-changed",
            TraceKind::ReconcileWrite { .. } => "reconcile-write",
            TraceKind::SplitBrainWrite { .. } => "split-brain-write",
            TraceKind::FencedRejection { .. } => "fenced-rejection",
            TraceKind::DualLeaderStart { .. } => "dual-leader-start",
            TraceKind::DualLeaderEnd { .. } => "dual-leader-end",
            TraceKind::Action { .. } => "action",
            TraceKind::EventRecorded { .. } => "event-recorded",
            TraceKind::Refused { .. } => "refused",
            TraceKind::Held { .. } => "held",
            TraceKind::InjectedError { .. } => "injected-error",
            TraceKind::RetryAfter { .. } => "retry-after",
            TraceKind::Exception { .. } => "exception",
            TraceKind::ProbeFailed { .. } => "probe-failed",
            TraceKind::LivenessKill => "liveness-kill",
            TraceKind::WorkEnded { .. } => "work-ended",
            TraceKind::Wedged { .. } => "wedged",
            TraceKind::Throttled { .. } => "throttled",
            TraceKind::RateLimited { .. } => "rate-limited",
            TraceKind::Election(_) => "election",
            TraceKind::CandidatesCollected { .. } => "candidates-collected",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// True time.
    pub t: Nanos,
    /// The node this happened on or for (index into the run's node list).
    pub node: Option<usize>,
    /// That node's wall clock at `t` (absent for server and global events).
    pub local: Option<UnixNanos>,
    pub kind: TraceKind,
}

impl TraceEvent {
    /// [`Self::to_json`] written straight to `w`, byte for byte the same, without building a
    /// JSON tree (a long trace is written at the speed of formatting its numbers).
    pub fn write_json(&self, node_names: &[String], w: &mut dyn std::io::Write) -> std::io::Result<()> {
        fn string(w: &mut dyn std::io::Write, s: &str) -> std::io::Result<()> {
            serde_json::to_writer(&mut *w, s).map_err(std::io::Error::other)
        }
        write!(w, "{{\"t_ns\":{}", self.t)?;
        if let Some(n) = self.node {
            w.write_all(b",\"node\":")?;
            string(w, &node_names[n])?;
        }
        if let Some(l) = self.local {
            write!(w, ",\"local_ns\":{l}")?;
        }
        write!(w, ",\"kind\":\"{}\"", self.kind.name())?;
        match &self.kind {
            TraceKind::ProcessStart { incarnation } => write!(w, ",\"incarnation\":{incarnation}")?,
            TraceKind::PauseStart { until } | TraceKind::ServerOutage { until } => write!(w, ",\"until_ns\":{until}")?,
            TraceKind::ClockStep { delta_ns } => write!(w, ",\"delta_ns\":{delta_ns}")?,
            TraceKind::PartitionStart { cut, until } => write!(w, ",\"cut\":\"{cut}\",\"until_ns\":{until}")?,
            TraceKind::ServerSlow { until, extra_ns } => write!(w, ",\"until_ns\":{until},\"extra_ns\":{extra_ns}")?,
            TraceKind::Request { id, origin, verb, resource, name } => {
                write!(
                    w,
                    ",\"id\":{id},\"origin\":\"{origin}\",\"verb\":\"{verb}\",\"resource\":\"{resource}\",\"name\":"
                )?;
                string(w, name)?;
            }
            TraceKind::Lost { id, dir, why } => write!(w, ",\"id\":{id},\"dir\":\"{dir}\",\"why\":\"{why}\"")?,
            TraceKind::ServerDown { id } | TraceKind::Timeout { id } => write!(w, ",\"id\":{id}")?,
            TraceKind::Applied { id, code, rv_before, rv_after, message } => {
                write!(
                    w,
                    ",\"id\":{id},\"code\":{code},\"rv_before\":{rv_before},\"rv_after\":{rv_after},\"message\":"
                )?;
                string(w, message)?;
            }
            TraceKind::Response { id, code } => write!(w, ",\"id\":{id},\"code\":{code}")?,
            TraceKind::Timer { kind } => write!(w, ",\"timer\":\"{}\"", kind.name())?,
            TraceKind::Note { note } => write!(w, ",\"note\":\"{}\"", note.name())?,
            TraceKind::NewLeader { holder } => {
                w.write_all(b",\"holder\":")?;
                string(w, holder)?;
            }
            TraceKind::LeaseChanged { lease, holder, transitions, rv } => {
                w.write_all(b",\"lease\":")?;
                string(w, lease)?;
                w.write_all(b",\"holder\":")?;
                string(w, holder)?;
                write!(w, ",\"transitions\":{transitions},\"rv\":{rv}")?;
            }
            TraceKind::ReconcileWrite { id, code, outcome, message, .. } => {
                write!(w, ",\"id\":{id},\"code\":{code},\"outcome\":\"{outcome}\",\"message\":")?;
                string(w, message)?;
            }
            TraceKind::SplitBrainWrite { id, lease_holder } => {
                write!(w, ",\"id\":{id},\"lease_holder\":")?;
                string(w, lease_holder)?;
            }
            TraceKind::FencedRejection { lease_holder } => {
                w.write_all(b",\"lease_holder\":")?;
                string(w, lease_holder)?;
            }
            TraceKind::DualLeaderStart { lease, leaders } => {
                w.write_all(b",\"lease\":")?;
                string(w, lease)?;
                w.write_all(b",\"leaders\":")?;
                serde_json::to_writer(&mut *w, leaders).map_err(std::io::Error::other)?;
            }
            TraceKind::DualLeaderEnd { lease, seconds } => {
                w.write_all(b",\"lease\":")?;
                string(w, lease)?;
                w.write_all(b",\"seconds\":")?;
                serde_json::to_writer(&mut *w, seconds).map_err(std::io::Error::other)?;
            }
            TraceKind::Action { name, code, message } => {
                w.write_all(b",\"name\":")?;
                string(w, name)?;
                write!(w, ",\"code\":{code},\"message\":")?;
                string(w, message)?;
            }
            TraceKind::EventRecorded { name, message } => {
                w.write_all(b",\"name\":")?;
                string(w, name)?;
                write!(w, ",\"message\":\"{message}\"")?;
            }
            TraceKind::Refused { id, dir } => write!(w, ",\"id\":{id},\"dir\":\"{dir}\"")?,
            TraceKind::Held { id, dir, until } => write!(w, ",\"id\":{id},\"dir\":\"{dir}\",\"until_ns\":{until}")?,
            TraceKind::InjectedError { id, code } => write!(w, ",\"id\":{id},\"code\":{code}")?,
            TraceKind::RetryAfter { id, wait_ns } => write!(w, ",\"id\":{id},\"wait_ns\":{wait_ns}")?,
            TraceKind::Exception { message } => write!(w, ",\"message\":\"{message}\"")?,
            TraceKind::ProbeFailed { failures } => write!(w, ",\"failures\":{failures}")?,
            TraceKind::WorkEnded { ends, then } => write!(w, ",\"ends\":\"{ends}\",\"then\":\"{then}\"")?,
            TraceKind::RateLimited { id } => write!(w, ",\"id\":{id}")?,
            TraceKind::Throttled { id, wait_ns } => write!(w, ",\"id\":{id},\"wait_ns\":{wait_ns}")?,
            TraceKind::Wedged { until: Some(until) } => write!(w, ",\"until_ns\":{until}")?,
            TraceKind::Wedged { until: None } => w.write_all(b",\"until_ns\":null")?,
            TraceKind::Election(_) | TraceKind::CandidatesCollected { .. } => {
                // Rare: through serde_json, same keys and order as `to_json`.
                let Value::Object(fields) = self.kind.fields_json() else { unreachable!("an object") };
                for (k, v) in fields {
                    write!(w, ",{}:{}", Value::String(k), v)?;
                }
            }
            TraceKind::ProcessExit
            | TraceKind::Crash
            | TraceKind::PauseEnd
            | TraceKind::StopRequested
            | TraceKind::PartitionEnd
            | TraceKind::StartedLeading
            | TraceKind::StoppedLeading
            | TraceKind::LivenessKill => {}
        }
        w.write_all(b"}")
    }

    /// One JSON object with a fixed key order: `t_ns`, `node`, `local_ns`, `kind`, then the
    /// kind's fields.
    pub fn to_json(&self, node_names: &[String]) -> Value {
        let mut m = Map::new();
        m.insert("t_ns".into(), json!(self.t));
        if let Some(n) = self.node {
            m.insert("node".into(), json!(node_names[n]));
        }
        if let Some(l) = self.local {
            m.insert("local_ns".into(), json!(l));
        }
        m.insert("kind".into(), json!(self.kind.name()));
        let fields = match &self.kind {
            TraceKind::ProcessStart { incarnation } => json!({ "incarnation": incarnation }),
            TraceKind::PauseStart { until } => json!({ "until_ns": until }),
            TraceKind::ClockStep { delta_ns } => json!({ "delta_ns": delta_ns }),
            TraceKind::PartitionStart { cut, until } => json!({ "cut": cut, "until_ns": until }),
            TraceKind::ServerOutage { until } => json!({ "until_ns": until }),
            TraceKind::ServerSlow { until, extra_ns } => json!({ "until_ns": until, "extra_ns": extra_ns }),
            TraceKind::Request { id, origin, verb, resource, name } => {
                json!({ "id": id, "origin": origin, "verb": verb, "resource": resource, "name": &**name })
            }
            TraceKind::Lost { id, dir, why } => json!({ "id": id, "dir": dir, "why": why }),
            TraceKind::ServerDown { id } | TraceKind::Timeout { id } => json!({ "id": id }),
            TraceKind::Applied { id, code, rv_before, rv_after, message } => {
                json!({ "id": id, "code": code, "rv_before": rv_before, "rv_after": rv_after, "message": message })
            }
            TraceKind::Response { id, code } => json!({ "id": id, "code": code }),
            TraceKind::Timer { kind } => json!({ "timer": kind.name() }),
            TraceKind::Note { note } => json!({ "note": note.name() }),
            TraceKind::NewLeader { holder } => json!({ "holder": &**holder }),
            TraceKind::LeaseChanged { lease, holder, transitions, rv } => {
                json!({ "lease": &**lease, "holder": &**holder, "transitions": transitions, "rv": rv })
            }
            TraceKind::ReconcileWrite { id, code, outcome, message, .. } => {
                json!({ "id": id, "code": code, "outcome": outcome, "message": message })
            }
            TraceKind::SplitBrainWrite { id, lease_holder } => json!({ "id": id, "lease_holder": &**lease_holder }),
            TraceKind::FencedRejection { lease_holder } => json!({ "lease_holder": &**lease_holder }),
            TraceKind::DualLeaderStart { lease, leaders } => json!({ "lease": &**lease, "leaders": leaders }),
            TraceKind::DualLeaderEnd { lease, seconds } => json!({ "lease": &**lease, "seconds": seconds }),
            TraceKind::Action { name, code, message } => json!({ "name": name, "code": code, "message": message }),
            TraceKind::EventRecorded { name, message } => json!({ "name": name, "message": message }),
            TraceKind::Refused { id, dir } => json!({ "id": id, "dir": dir }),
            TraceKind::Held { id, dir, until } => json!({ "id": id, "dir": dir, "until_ns": until }),
            TraceKind::InjectedError { id, code } => json!({ "id": id, "code": code }),
            TraceKind::RetryAfter { id, wait_ns } => json!({ "id": id, "wait_ns": wait_ns }),
            TraceKind::Exception { message } => json!({ "message": message }),
            TraceKind::ProbeFailed { failures } => json!({ "failures": failures }),
            TraceKind::WorkEnded { ends, then } => json!({ "ends": ends, "then": then }),
            TraceKind::Wedged { until } => json!({ "until_ns": until }),
            TraceKind::RateLimited { id } => json!({ "id": id }),
            TraceKind::Throttled { id, wait_ns } => json!({ "id": id, "wait_ns": wait_ns }),
            TraceKind::Election(_) | TraceKind::CandidatesCollected { .. } => self.kind.fields_json(),
            TraceKind::ProcessExit
            | TraceKind::Crash
            | TraceKind::PauseEnd
            | TraceKind::StopRequested
            | TraceKind::PartitionEnd
            | TraceKind::StartedLeading
            | TraceKind::StoppedLeading
            | TraceKind::LivenessKill => json!({}),
        };
        if let Value::Object(extra) = fields {
            m.extend(extra);
        }
        Value::Object(m)
    }
}
