//! A world run one Lease at a time.
//!
//! In a fleet the nodes of different Leases share nothing a run shows: each node talks only to
//! its own Lease, its streams are keyed by its identity, and the server's decisions for one
//! Lease (its RBAC decision cached per Lease, its Lease, the Events named after it) read nothing
//! another Lease's nodes write. What they do share is the order of events at one instant (the
//! queue's sequence numbers), and through it the server's revision counter, the request ids and
//! the interned identities: numbers no untraced output shows, compared by equality only (a
//! wedge compares a node's request ids with the next id when it struck: it keeps the world
//! whole).
//! So when nothing else is shared, [`World::run_with`] runs the first Lease's nodes from time 0
//! to the end, then the next Lease's from time 0, and so on: each Lease's events are handled in
//! the order a run of the whole world handles them (ties within a Lease still go by sequence
//! number, taken in the same relative order), and the observer keeps per node and per Lease
//! what it shows. Its whole-run lists take changes at one instant in the Leases' order in any
//! run (`Observer::acting_series`, the dual windows' and failovers' sorts), so both runs write
//! the same.
//!
//! What it gains: a Lease's few nodes, its entry in the server and its queue stay in the
//! caches while its hour is run, where the whole world's events visit every node's state in
//! turn and find it in memory. The time per simulated elector-hour no longer grows with the
//! fleet (docs/performance.md, "A fleet run Lease by Lease").
//!
//! **When** (`World::lease_phases`): a fresh, untraced world of two or more Leases with quiet
//! stepping allowed (`WorldSpec::skip_quiet`: `--no-skip` runs the whole world at once), no
//! random faults, no scripted actions, no server windows or injected errors, no Lease watches,
//! no coordinated election, and no node with a reconciler or a health probe: each of these acts
//! across Leases or records in the whole run's order. Timeline faults are allowed when each
//! names one node and is neither the server's nor a wedge (a crash, restart, pause, stop,
//! clock step, partition or work fault acts on that node alone), and faults on different Leases'
//! nodes never share an instant (the run's fault list keeps one instant's faults in the order
//! the queue takes them); each goes to its node's Lease. Failovers ending at one instant on
//! two Leases are listed in the Leases' order in any run (`Observer::finish`).
//!
//! **Stopping.** A Lease's run stops on the event budget (the events of the Leases before it
//! counted; the instant reported is its share of the run, as progress reports it). A whole run
//! also stops at the first instant that holds [`STUCK_EVENTS`] events in a row, counting every
//! Lease's. So each Lease's run counts its instants with two events or more; one that reaches
//! the bound alone ends there, and the Leases after it run only up to that instant. After the
//! last Lease the run stops as stuck at the first instant where those counts, and one event of
//! every other Lease, could pass the bound ([`first_crowded`]; a world of more than half that
//! many Leases runs whole). That is exact but where the Leases that counted fewer than two
//! events at such an instant had none there: then a split run stops as stuck where a whole run
//! would have gone on, which takes over half a million events counted at one instant. Where a
//! whole run would stop both on its budget and as stuck, the two may name different reasons.

use super::event::Event;
use super::{STUCK_EVENTS, World};
use crate::model::{FaultKind, Target};
use crate::time::Nanos;
use crate::world::result::BudgetExceeded;

impl World {
    /// Whether [`World::run_with`] will run this world one Lease at a time (for tests and
    /// benches: the result is the same either way).
    pub fn runs_lease_by_lease(&self) -> bool {
        self.lease_phases().is_some()
    }

    /// How many Leases there are, when this world may be run one Lease at a time (see the
    /// module's text); `None` otherwise.
    pub(super) fn lease_phases(&self) -> Option<usize> {
        let spec = &self.spec;
        let leases = self.obs.leases.len();
        let alone = spec.skip_quiet
            && !self.obs.tracing()
            && leases >= 2
            // An instant then holds at most one event a Lease but where a Lease counts more
            // (`advance_phased`'s test of a whole run's stuck instant).
            && (leases as u64) <= STUCK_EVENTS / 2
            && self.events_processed == 0
            && self.faults_stay_in_their_lease()
            && spec.random_faults.is_empty()
            && spec.actions.is_empty()
            && spec.server_errors.is_empty()
            && spec.server.outages.is_empty()
            && spec.server.slowdowns.is_empty()
            && self.injector.is_empty()
            && !self.watches.any()
            && self.cle.is_none()
            && spec.nodes.iter().all(|n| n.reconciler.is_none() && n.candidacy.is_none() && n.healthz.is_none())
            && self.agenda.iter().all(|(_, _, e)| matches!(e, Event::Start { .. } | Event::Fault { .. }));
        alone.then_some(leases)
    }

    /// Whether every timeline fault acts on one named node alone (not the holder, a random
    /// node or the server), and faults on different Leases' nodes never share an instant: the
    /// run's fault list is in time order, and faults of one instant in the order the queue
    /// takes them.
    fn faults_stay_in_their_lease(&self) -> bool {
        let mut instants: Vec<(Nanos, usize)> = Vec::with_capacity(self.spec.faults.len());
        for fault in &self.spec.faults {
            let Target::Node(node) = fault.target else { return false };
            // A wedge compares the node's request ids with the next one when it struck, 32 bits
            // wide: in a Lease's run every Lease before it has taken ids for the whole run.
            if matches!(
                fault.kind,
                FaultKind::ServerOutage { .. } | FaultKind::ServerSlow { .. } | FaultKind::Wedge { .. }
            ) {
                return false;
            }
            instants.push((fault.at, self.obs.node_lease[node]));
        }
        instants.sort_unstable();
        instants.windows(2).all(|w| w[0].0 != w[1].0 || w[0].1 == w[1].1)
    }

    /// Runs each Lease's nodes in turn from time 0 to `end` (see the module's text).
    pub(super) fn advance_phased(
        &mut self,
        leases: usize,
        end: Nanos,
        max_events: u64,
        progress: &mut dyn FnMut(Nanos, u64),
    ) -> Result<(), BudgetExceeded> {
        // Each Lease's starts and faults, in the agenda's order (it is popped from its end).
        let mut agendas: Vec<Vec<(Nanos, u64, Event)>> = vec![Vec::new(); leases];
        for &entry in std::mem::take(&mut self.agenda).iter() {
            let node = match entry.2 {
                Event::Start { node } => node as usize,
                Event::Fault { index } => match self.spec.faults[index as usize].target {
                    Target::Node(node) => node,
                    _ => unreachable!("a fault on one node (`lease_phases`)"),
                },
                _ => unreachable!("only starts and faults (`lease_phases`)"),
            };
            agendas[self.obs.node_lease[node]].push(entry);
        }
        // The state of a Lease's nodes stays in the caches while it runs: nothing to prefetch.
        self.prefetching = false;
        self.keep_ties = true;
        debug_assert!(!self.quiet, "stretches take one Lease's world: their steps are not counted in `ties`");
        // Each instant at which some Lease had two events or more: the events there of every
        // such Lease, and how many Leases.
        let mut ties: crate::FastMap<Nanos, (u64, u64)> = Default::default();
        let phases = leases as u128;
        // Once a Lease's run is stuck, the Leases after it run only up to that instant: a whole
        // run stops at the first crowded instant, which may be another Lease's or theirs
        // together.
        let mut until = end;
        for (k, agenda) in agendas.into_iter().enumerate() {
            self.queue.restart();
            self.agenda = agenda;
            self.queue_agenda_next();
            // Progress, and the instant a budget stops at: this Lease's share of the run, as a
            // time in the run (`--max-events` is suggested from it).
            let share = |t: Nanos| ((k as u128 * end as u128 + t as u128) / phases) as Nanos;
            match self.advance(until, max_events, &mut |t, events| progress(share(t), events)) {
                // Its instant is counted in `ties`, past the bound.
                Err(stop) if stop.stuck => until = stop.at,
                Err(mut stop) => {
                    stop.at = share(stop.at);
                    return Err(stop);
                }
                Ok(()) => {}
            }
            for (t, n) in self.ties.drain(..) {
                let entry = ties.entry(t).or_default();
                *entry = (entry.0 + n, entry.1 + 1);
            }
        }
        self.agenda.clear();
        if let Some(at) = first_crowded(&ties, leases as u64, STUCK_EVENTS) {
            return Err(BudgetExceeded { events: self.events_processed, at, duration: end, stuck: true });
        }
        Ok(())
    }
}

/// The first instant at which a run of the whole world could stop as stuck (`bound` events in a
/// row after the first), from each instant's events counted by the Leases with two or more
/// there and how many such Leases (`ties`), of `leases`. An instant holds those counted and at
/// most one event of every other Lease; one that no Lease counted, at most one event a Lease.
fn first_crowded(ties: &crate::FastMap<Nanos, (u64, u64)>, leases: u64, bound: u64) -> Option<Nanos> {
    debug_assert!(leases <= bound, "`lease_phases` keeps such worlds whole");
    let at_most = |(events, counted): (u64, u64)| events + (leases - counted);
    ties.iter().filter(|&(_, &c)| at_most(c) > bound).map(|(&t, _)| t).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_crowded_instant_counts_one_event_for_every_lease_not_counted() {
        let ties: crate::FastMap<Nanos, (u64, u64)> = [(50, (9, 2)), (20, (6, 1)), (30, (11, 1))].into_iter().collect();
        // Ten Leases, a bound of 10 events after the first: instant 50 holds at most 9 + 8 =
        // 17, instant 20 6 + 9 = 15, instant 30 11 + 9 = 20; the first is 20.
        assert_eq!(first_crowded(&ties, 10, 10), Some(20));
        // Two Leases: instant 50 holds 9 (both counted), 20 at most 7, 30 at most 12.
        assert_eq!(first_crowded(&ties, 2, 10), Some(30));
        assert_eq!(first_crowded(&ties, 2, 12), None);
        assert_eq!(first_crowded(&Default::default(), 2, 10), None);
    }
}
