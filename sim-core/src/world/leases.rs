//! A Lease written, in the loop: the observer tracks its holder and transitions, the nodes that
//! watch it get a watch event (kube-coordinate's watch: `watch`), and the election controller
//! of coordinated nodes hears of it (`candidacy`).

use super::World;
use super::event::Event;
use crate::api::LeaseRef;
use crate::net::{Delivery, Direction};
use crate::sym::Sym;
use crate::time::Nanos;

impl World {
    /// A Lease the election controller wrote (by name).
    #[cold]
    pub(super) fn lease_written_by_name(&mut self, now: Nanos, namespace: &str, name: &str) {
        if let Some(lease) = self.server.find_lease_ref(namespace, name) {
            self.lease_written(now, lease);
        }
    }

    /// Tracks a Lease on the server after a write to it.
    pub(super) fn lease_written(&mut self, now: Nanos, lease: LeaseRef) {
        if self.watches.any() {
            self.notify_watchers(now, lease);
        }
        if self.cle.is_some() {
            self.election_lease_written(now, lease);
        }
        let track = lease.0 as usize;
        if track >= self.obs.leases.len() || self.obs.leases[track].lease_ref != Some(lease) {
            return; // a Lease no node elects on
        }
        let (holder, transitions) = match self.server.lease_spec(lease) {
            Some(s) => (s.holder_identity.unwrap_or(Sym::EMPTY), s.lease_transitions.unwrap_or(0)),
            None => (Sym::EMPTY, 0),
        };
        let rv = self.server.resource_version();
        // The holder's name only for a trace of a change: cloning its `Arc` on every renewal
        // touched the name's heap block, out of cache in a large fleet.
        let server = &self.server;
        self.obs.lease_written(now, track, holder, || server.symbols().name(holder).clone(), transitions, rv);
    }

    /// Every node watching `lease` gets the Lease as it is now, after its link's down latency.
    #[cold]
    pub(super) fn notify_watchers(&mut self, now: Nanos, lease: LeaseRef) {
        let track = lease.0 as usize;
        let view = self.server.lease_view(lease);
        for i in 0..self.watches.watchers(track).len() {
            let node = self.watches.watchers(track)[i] as usize;
            self.send_watch_event(now, node, view.clone());
        }
    }

    /// The watch re-lists after its connection broke: the Lease as it is now.
    #[cold]
    pub(super) fn relist(&mut self, now: Nanos, node: usize) {
        let view = self.server.lease_view(self.procs[node].lease);
        self.send_watch_event(now, node, view);
    }

    pub(super) fn send_watch_event(&mut self, now: Nanos, node: usize, view: Option<crate::api::LeaseView>) {
        if !self.procs[node].is_running() {
            return;
        }
        let incarnation = self.procs[node].incarnation;
        match self.net.send(node, Direction::Down, now) {
            Delivery::Arrives(at) | Delivery::Held(at) => {
                self.watches.push(node, incarnation, view);
                self.queue.schedule(at, Event::Watch { node: node as u32, incarnation });
            }
            // A message lost at random: the event is missed; the next one carries the newer Lease.
            Delivery::Lost => {}
            // The connection is cut: the watch breaks and re-lists when the cut heals.
            Delivery::Partitioned | Delivery::Refused => self.watches.set_broken(node),
        }
    }

    /// A watch event reaches `node`: its lock keeps the Lease, its elector sees it.
    #[cold]
    pub(super) fn watch_event(&mut self, now: Nanos, node: usize) {
        let incarnation = self.procs[node].incarnation;
        let Some(view) = self.watches.pop(node, incarnation) else { return };
        let record = view.as_ref().map(|v| crate::lock::record_of(&v.spec));
        if let Some(view) = view {
            self.procs[node].lock.observe(view);
        }
        let mut out = self.take_scratch();
        self.procs[node].drive(now, &mut out, |e, clock_now, out| e.on_watch(clock_now, record, out));
        self.process_outputs(now, node, out);
    }
}

#[cfg(test)]
mod tests {
    use crate::elector::Algorithm;
    use crate::model::WorldSpec;
    use crate::time::secs;
    use crate::trace::TraceKind;
    use crate::world::World;

    /// Every write of the Lease reaches the observer: the holder and transitions it records
    /// change with the writes that change them, and a renewal (same holder) records nothing.
    #[test]
    fn the_observer_sees_each_change_of_holder_and_nothing_for_a_renewal() {
        let mut spec = WorldSpec::basic(1, 2, Algorithm::ClientGo, secs(60));
        spec.trace = true;
        let r = World::new(spec).expect("valid").run();
        let changes: Vec<(&str, i32)> = r
            .trace
            .iter()
            .filter_map(|e| match &e.kind {
                TraceKind::LeaseChanged { holder, transitions, .. } => Some((&**holder, *transitions)),
                _ => None,
            })
            .collect();
        // The first acquisition only: 30 renewals later, still one holder.
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].1, 0);
        assert_eq!(r.metrics.lease_transitions, 0);
    }
}
