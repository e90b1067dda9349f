//! What the tests that compare two ways of running one world share.

use sim_core::world::RunResult;

/// Everything a run hands back that an output is made of, as text.
pub fn fingerprint(r: &RunResult) -> String {
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{}",
        r.metrics,
        r.spans,
        r.dual_windows,
        r.transitions_series,
        r.lease_transitions,
        r.acting_series,
        r.faults,
        r.actions,
        r.node_names,
        r.node_leases,
        r.events_processed,
    )
}
