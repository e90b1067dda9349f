//! Lease watches: the electors that keep a watch on their Lease (kube-coordinate's
//! `watch_object`) get every change of it, from any writer, after their link's down latency.
//!
//! The loop routes: a write to a watched Lease sends one event per watching node down its link
//! (`World::notify_watchers`); the event names only the node, and its content — the Lease as it
//! was written, or `None` once deleted — waits here in arrival order. An event lost to a `drop`
//! or `refuse` partition breaks the watch, which re-lists (one event with the Lease as it is)
//! when the cut heals. With no watching node nothing here is allocated and the loop's only cost
//! is one branch per Lease write.

use crate::api::LeaseView;
use std::collections::VecDeque;

#[derive(Debug, Default)]
pub(super) struct Watches {
    /// Per Lease track: the nodes whose elector watches it.
    by_lease: Vec<Vec<u32>>,
    /// Per node: the events on their way, oldest first, each with the incarnation it was sent
    /// to (a restarted process's events for its previous incarnation are skipped).
    queues: Vec<VecDeque<(u32, Option<LeaseView>)>>,
    /// Per node: an event met a partition; the watch re-lists when the cut heals.
    broken: Vec<bool>,
}

impl Watches {
    /// `watchers`: (Lease track, node) for every node that watches its Lease.
    pub(super) fn new(nodes: usize, leases: usize, watchers: impl Iterator<Item = (usize, u32)>) -> Watches {
        let mut w = Watches::default();
        for (lease, node) in watchers {
            if w.by_lease.is_empty() {
                w.by_lease = vec![Vec::new(); leases];
                w.queues = vec![VecDeque::new(); nodes];
                w.broken = vec![false; nodes];
            }
            w.by_lease[lease].push(node);
        }
        w
    }

    /// Does any node watch?
    #[inline]
    pub(super) fn any(&self) -> bool {
        !self.by_lease.is_empty()
    }

    pub(super) fn watchers(&self, lease: usize) -> &[u32] {
        self.by_lease.get(lease).map_or(&[], |w| w.as_slice())
    }

    pub(super) fn push(&mut self, node: usize, incarnation: u32, view: Option<LeaseView>) {
        self.queues[node].push_back((incarnation, view));
    }

    /// The oldest event for `incarnation` (older incarnations' events are dropped on the way).
    pub(super) fn pop(&mut self, node: usize, incarnation: u32) -> Option<Option<LeaseView>> {
        let queue = self.queues.get_mut(node)?;
        while let Some((sent_to, view)) = queue.pop_front() {
            if sent_to == incarnation {
                return Some(view);
            }
        }
        None
    }

    pub(super) fn set_broken(&mut self, node: usize) {
        self.broken[node] = true;
    }

    /// Was the watch broken (and is it now being re-listed)?
    pub(super) fn take_broken(&mut self, node: usize) -> bool {
        self.broken.get_mut(node).is_some_and(std::mem::take)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_in_order_and_a_restart_skips_the_old_ones() {
        let mut w = Watches::new(2, 1, [(0, 1)].into_iter());
        assert!(w.any());
        assert_eq!(w.watchers(0), &[1]);
        w.push(1, 1, None);
        w.push(
            1,
            2,
            Some(LeaseView { resource_version: 7, spec: Default::default(), labels: None, annotations: None }),
        );
        // The incarnation-1 event was never delivered (the process restarted): skipped.
        let got = w.pop(1, 2).expect("one event for incarnation 2");
        assert_eq!(got.map(|v| v.resource_version), Some(7));
        assert!(w.pop(1, 2).is_none());
        assert!(!Watches::new(2, 1, std::iter::empty()).any());
    }

    #[test]
    fn a_broken_watch_is_reported_once() {
        let mut w = Watches::new(1, 1, [(0, 0)].into_iter());
        w.set_broken(0);
        assert!(w.take_broken(0));
        assert!(!w.take_broken(0));
    }
}
