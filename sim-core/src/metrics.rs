//! Leadership metrics, all measured in true time. Each definition is given once, here, on the
//! field that holds it; `docs/metrics.md` repeats them for readers of `summary.json`.

use crate::time::{Nanos, as_secs_f64};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NodeMetrics {
    /// Total true time this node acted as leader: from OnStartedLeading until OnStoppedLeading
    /// or a crash. A paused leader still acts (it believes it leads and resumes acting).
    pub acting_leader_seconds: f64,
    /// Number of OnStartedLeading calls.
    pub acquisitions: u64,
    /// True time its elector led (from its started-leading to its stopped-leading, an exit or
    /// a crash) while no work of its ran: the Lease held, renewed, and nothing done (a `work`
    /// fault the library does not notice).
    pub held_idle_seconds: f64,
    /// True time its work ran while the Lease on the server did not name it (another holder,
    /// none, or none yet): work done by a leader that is not the holder.
    pub work_not_holder_seconds: f64,
    /// Reconciler writes refused with 409: field-manager conflicts (SSA) or optimistic-lock
    /// conflicts (fenced updates). The evidence a second leader leaves.
    pub conflicts: u64,
    /// Reconciler writes the server accepted while the Lease on the server named another
    /// (non-empty) holder: the damage a deposed leader does.
    pub split_brain_writes: u64,
    /// Reconciler writes the server accepted.
    pub writes_accepted: u64,
    /// Accepted reconciler writes that replaced a different value last written by another node.
    pub overwrites: u64,
    /// Reconciler creates refused with AlreadyExists.
    pub already_exists: u64,
    /// Reconciler rounds skipped because the Lease no longer named this node with its token.
    pub fenced_rejections: u64,
    /// 409s the elector received on Lease writes (lost races, stale fast paths).
    pub lease_conflicts: u64,
    /// Requests this node sent (elector, reconciler and event recorder), by verb.
    pub requests_sent: RequestCounts,
    /// Of those, the ones that got no answer from the API server because the network lost the
    /// request or its answer (loss, a partition, a refused connection) or the server was down.
    pub requests_lost: RequestCounts,
}

/// A count per request verb (`nodes.<id>.requests_sent.update` in expectations and sweeps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RequestCounts {
    pub get: u64,
    pub list: u64,
    pub create: u64,
    pub update: u64,
    pub patch: u64,
    pub apply: u64,
    pub delete: u64,
}

impl RequestCounts {
    pub fn add(&mut self, verb: crate::api::Verb) {
        self.add_n(verb, 1);
    }

    /// `n` requests of `verb`.
    pub fn add_n(&mut self, verb: crate::api::Verb, n: u64) {
        use crate::api::Verb;
        let slot = match verb {
            Verb::Get => &mut self.get,
            Verb::List => &mut self.list,
            Verb::Create => &mut self.create,
            Verb::Update => &mut self.update,
            Verb::Patch => &mut self.patch,
            Verb::Apply => &mut self.apply,
            Verb::Delete => &mut self.delete,
        };
        *slot += n;
    }

    pub fn total(&self) -> u64 {
        self.get + self.list + self.create + self.update + self.patch + self.apply + self.delete
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Total true time during which two or more nodes acted as leader at once.
    pub dual_leader_seconds: f64,
    /// Number of maximal intervals with two or more acting leaders.
    pub dual_leader_windows: u64,
    /// The longest such interval.
    pub max_dual_leader_seconds: f64,
    /// True time with no acting leader, counted from the first acquisition to the end of the run.
    pub leaderless_seconds: f64,
    /// Leases no node ever led in the run (their `leaderless_seconds` read 0).
    pub leases_never_elected: u64,
    /// The nodes' `held_idle_seconds`, summed.
    pub held_idle_seconds: f64,
    /// The nodes' `work_not_holder_seconds`, summed.
    pub work_not_holder_seconds: f64,
    /// `spec.leaseTransitions` of the Lease on the server at the end of the run (0 if absent).
    pub lease_transitions: i64,
    /// Times the Lease on the server changed from one non-empty holder to a different one
    /// (including changes through an empty holder after a release).
    pub leader_changes: u64,
    /// Requests the API server handled (arrived while it was up).
    pub api_requests: u64,
    /// Handled requests by `"<verb> <status>"`.
    pub api_requests_by_verb_status: BTreeMap<String, u64>,
    /// For each fault that hit the acting leader (crash, pause, stop, partition): true seconds
    /// until another node started leading. Faults after which the same node kept leading, or
    /// nobody took over before the end, are not counted.
    pub failover_seconds: Vec<f64>,
    pub nodes: BTreeMap<String, NodeMetrics>,
    /// The leadership figures of each Lease (`namespace/name`). The whole-run figures above are
    /// their sums (their maximum for `max_dual_leader_seconds`); a dual-leader window needs two
    /// acting leaders of the *same* Lease.
    pub leases: BTreeMap<String, LeaseMetrics>,
}

/// One Lease's leadership figures; definitions as the fields of [`Metrics`] of the same names.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LeaseMetrics {
    pub dual_leader_seconds: f64,
    pub dual_leader_windows: u64,
    pub max_dual_leader_seconds: f64,
    pub leaderless_seconds: f64,
    /// True time from the start to its first acting leader (the run's length if none ever).
    pub first_leader_seconds: f64,
    /// Some node acted as its leader at some point (`leaderless_seconds` counts from the first
    /// leader on, so a Lease nobody ever led reads 0 there and `false` here).
    pub elected: bool,
    pub lease_transitions: i64,
    pub leader_changes: u64,
}

/// A maximal interval with two or more acting leaders.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DualWindow {
    pub from: Nanos,
    pub until: Nanos,
    pub leaders: Vec<String>,
    /// The Lease (`namespace/name`) the leaders share.
    pub lease: String,
}

impl DualWindow {
    pub fn seconds(&self) -> f64 {
        as_secs_f64(self.until - self.from)
    }
}
