//! A world run one Lease at a time.
//!
//! In a fleet the nodes of different Leases share nothing a run shows: each node talks only to
//! its own Lease, its streams are keyed by its identity, and the server's decisions for one
//! Lease (its RBAC decision cached per Lease, its Lease, the Events named after it) read nothing
//! another Lease's nodes write. What they do share is the order of events at one instant (the
//! queue's sequence numbers), and through it the server's revision counter, the request ids and
//! the interned identities: numbers no untraced output shows, and compared by equality only.
//! So when nothing else is shared, [`World::run_with`] runs the first Lease's nodes from time 0
//! to the end, then the next Lease's from time 0, and so on: each Lease's events are handled in
//! the order a run of the whole world handles them (ties within a Lease still go by sequence
//! number, taken in the same relative order), and the observer keeps per node and per Lease
//! what it shows. Its two whole-run series take changes at one instant in the Leases' order in
//! any run (`Observer::acting_series`, the dual windows' sort), so both runs write the same.
//!
//! What it gains: a Lease's few nodes, its entry in the server and its queue stay in the
//! caches while its hour is run, where the whole world's events visit every node's state in
//! turn and find it in memory. The time per simulated elector-hour no longer grows with the
//! fleet (docs/performance.md, "A fleet run Lease by Lease").
//!
//! **When** (`World::lease_phases`): a fresh, untraced world of two or more Leases with quiet
//! stepping allowed (`WorldSpec::skip_quiet`: `--no-skip` runs the whole world at once), no
//! timeline or random faults, no scripted actions, no server windows or injected errors, no
//! Lease watches, no coordinated election, and no node with a reconciler or a health probe:
//! each of these acts across Leases or records in the whole run's order.
//!
//! **Stopping.** A Lease's run stops on the event budget (the events of the Leases before it
//! counted) or when one of its instants holds [`STUCK_EVENTS`] events in a row, as a whole run
//! does; the reported instant is then that Lease's. A whole run counts the events of every
//! Lease at one instant: when the Leases' largest counts add up to that bound, the run is
//! stopped as stuck too (a fleet of some 300,000 electors whose starts all fall on one
//! instant), where a whole run might have gone on.

use super::event::Event;
use super::{STUCK_EVENTS, World};
use crate::time::Nanos;
use crate::world::result::BudgetExceeded;

impl World {
    /// Whether [`World::run_with`] will run this world one Lease at a time (for tests and
    /// benches: the result is the same either way).
    pub fn runs_lease_by_lease(&self) -> bool {
        self.lease_phases().is_some()
    }

    /// The nodes of each Lease, in the Leases' order (of first use), when this world may be
    /// run one Lease at a time (see the module's text); `None` otherwise.
    pub(super) fn lease_phases(&self) -> Option<Vec<Vec<u32>>> {
        let spec = &self.spec;
        let leases = self.obs.leases.len();
        let alone = spec.skip_quiet
            && !self.obs.tracing()
            && leases >= 2
            && self.events_processed == 0
            && spec.faults.is_empty()
            && spec.random_faults.is_empty()
            && spec.actions.is_empty()
            && spec.server_errors.is_empty()
            && spec.server.outages.is_empty()
            && spec.server.slowdowns.is_empty()
            && self.injector.is_empty()
            && !self.watches.any()
            && self.cle.is_none()
            && spec.nodes.iter().all(|n| n.reconciler.is_none() && n.candidacy.is_none() && n.healthz.is_none())
            && self.agenda.iter().all(|(_, _, e)| matches!(e, Event::Start { .. }));
        if !alone {
            return None;
        }
        let mut groups = vec![Vec::new(); leases];
        for (node, &lease) in self.obs.node_lease.iter().enumerate() {
            groups[lease].push(node as u32);
        }
        Some(groups)
    }

    /// Runs each Lease's nodes in turn from time 0 to `end` (see the module's text).
    pub(super) fn advance_phased(
        &mut self,
        groups: &[Vec<u32>],
        end: Nanos,
        max_events: u64,
        progress: &mut dyn FnMut(Nanos, u64),
    ) -> Result<(), BudgetExceeded> {
        // Each Lease's starts, in the agenda's order (it is popped from its end).
        let mut starts: Vec<Vec<(Nanos, u64, Event)>> = vec![Vec::new(); groups.len()];
        for &entry in std::mem::take(&mut self.agenda).iter() {
            let Event::Start { node } = entry.2 else { unreachable!("only starts (`lease_phases`)") };
            starts[self.obs.node_lease[node as usize]].push(entry);
        }
        // The state of a Lease's nodes stays in the caches while it runs: nothing to prefetch.
        self.prefetching = false;
        let phases = groups.len() as u128;
        // The most events in a row at one instant, added up over the Leases run so far.
        let mut most_at_once = 0u64;
        for (k, agenda) in starts.into_iter().enumerate() {
            self.queue.restart();
            self.agenda = agenda;
            self.queue_agenda_next();
            // Progress: this Lease's share of the run, as a time in the run.
            let before = k as u128 * end as u128;
            let mut share = |t: Nanos, events: u64| progress(((before + t as u128) / phases) as Nanos, events);
            self.advance(end, max_events, &mut share)?;
            most_at_once = most_at_once.saturating_add(self.most_at_instant + 1);
            if most_at_once >= STUCK_EVENTS {
                let at = self.queue.now();
                return Err(BudgetExceeded { events: self.events_processed, at, duration: end, stuck: true });
            }
        }
        self.agenda.clear();
        Ok(())
    }
}
