//! The protected object's history: every reconciler read and write of the child object as the
//! API server applied it, and the checks that say whether an overlap of two leaders corrupted it.
//!
//! Overlap time says how long two processes believed they led; it does not say whether anything
//! was damaged. The history does: who read or wrote, when the request was sent and when the
//! server applied it, the object's resourceVersion before and after, the writer's fencing token,
//! the Lease's holder at that instant, and the outcome. Two checks:
//!
//! - **no-write-from-non-holder**: an applied write whose writer was not the Lease's holder when
//!   the server applied it.
//! - **no-lost-update**: a read-modify-write (modes `update` and `fenced-update`) applied over a
//!   write by another node that its read had not seen: the other write is lost, and the history
//!   of the object is not linearizable with respect to the holders' terms. Blind writes
//!   (`apply`, `create`) read nothing, so they cannot lose an update in this sense; their
//!   overwrites are counted by the `overwrites` metric.
//!
//! A dual-leader window *corrupted* the object when a violating write was sent or applied
//! during it; otherwise it was harmless.

use crate::time::Nanos;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Read,
    Write,
}

impl OpKind {
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
        }
    }
}

/// One reconciler request on the child object, as the server applied it.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryOp {
    /// Index into the run's nodes.
    pub node: usize,
    pub kind: OpKind,
    /// `get`, `create`, `update`, `apply`.
    pub verb: &'static str,
    /// The reconciler mode of the node (`apply`, `apply-force`, `create`, `update`, `fenced-update`).
    pub mode: &'static str,
    pub sent: Nanos,
    pub applied: Nanos,
    /// The object's resourceVersion before the request was applied (`None`: it did not exist).
    pub rv_before: Option<u64>,
    /// After it (a read, or a refused write: the same).
    pub rv_after: Option<u64>,
    /// A read-modify-write: the resourceVersion its read returned (`None`: a blind write, or the
    /// read found nothing).
    pub based_on: Option<u64>,
    /// The writer's fencing token (leaseTransitions when it started leading).
    pub token: Option<i32>,
    /// The Lease's holder when the server applied the request ("" for none).
    pub holder: String,
    /// The writer's identity.
    pub writer: String,
    /// The object read or written, `namespace/name`: each is checked on its own.
    pub object: String,
    /// `ok`, `conflict`, `already-exists`, `error`.
    pub outcome: &'static str,
    /// The value a write carried.
    pub value: Option<String>,
}

impl HistoryOp {
    fn applied_write(&self) -> bool {
        self.kind == OpKind::Write && self.outcome == "ok"
    }
}

/// What the checks found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistoryReport {
    /// Indices (into the history) of applied writes from a node the Lease did not name.
    pub non_holder_writes: Vec<usize>,
    /// `(lost, overwriter)`: an applied write, and the read-modify-write applied over it
    /// without having read it.
    pub lost_updates: Vec<(usize, usize)>,
    /// Dual-leader windows during which a violating write was sent or applied.
    pub corrupting_windows: usize,
    pub harmless_windows: usize,
}

impl HistoryReport {
    pub fn violations(&self) -> usize {
        self.non_holder_writes.len() + self.lost_updates.len()
    }
}

/// Checks `ops` (in the order the server applied them) against the dual-leader windows
/// `(from, until)` of the run. Each object's operations are checked on their own: the server's
/// resourceVersions are shared by every object, so another object's write between a read and a
/// write is not a lost update.
pub fn check(ops: &[HistoryOp], dual_windows: &[(Nanos, Nanos)]) -> HistoryReport {
    let mut report = HistoryReport::default();
    for (i, op) in ops.iter().enumerate() {
        if op.applied_write() && op.holder != op.writer {
            report.non_holder_writes.push(i);
        }
    }
    // Each object's operations, in the server's order: one sort, then one stretch per object.
    let mut by_object: Vec<usize> = (0..ops.len()).collect();
    by_object.sort_by(|&a, &b| ops[a].object.cmp(&ops[b].object).then(a.cmp(&b)));
    for of_object in by_object.chunk_by(|&a, &b| ops[a].object == ops[b].object) {
        lost_updates(ops, of_object, &mut report.lost_updates);
    }
    report.lost_updates.sort_unstable_by_key(|&(v, w)| (w, v));
    let bad: Vec<&HistoryOp> = report
        .non_holder_writes
        .iter()
        .map(|&i| &ops[i])
        .chain(report.lost_updates.iter().map(|&(_, w)| &ops[w]))
        .collect();
    for &(from, until) in dual_windows {
        let inside = |t: Nanos| t >= from && t <= until;
        if bad.iter().any(|op| inside(op.sent) || inside(op.applied)) {
            report.corrupting_windows += 1;
        } else {
            report.harmless_windows += 1;
        }
    }
    report
}

/// The lost updates among `ops[i]` for `i` in `index` (one object's operations, in the
/// server's order), as `(lost, overwriter)` pairs of indices into `ops`.
fn lost_updates(ops: &[HistoryOp], index: &[usize], out: &mut Vec<(usize, usize)>) {
    // The applied writes with their versions, in the server's order. Versions never go down
    // (a write that changes nothing keeps its version), so the writes a read-modify-write
    // missed are one stretch of this list, found by binary search: the check was quadratic in
    // a run's writes (a 1 ms reconciler's traced eight minutes took 54 s). Should the versions
    // go down (a history built by hand), every earlier op is looked at, as before.
    let writes: Vec<(u64, usize)> =
        index.iter().filter(|&&i| ops[i].applied_write()).filter_map(|&i| Some((ops[i].rv_after?, i))).collect();
    let growing = writes.windows(2).all(|p| p[0].0 <= p[1].0);
    for &w in index {
        let write = &ops[w];
        let (Some(based_on), true) = (write.based_on, write.applied_write()) else { continue };
        // Every applied write by another node between the version this write read and the one it
        // replaced: none of them was seen, all are lost.
        if growing {
            let first = writes.partition_point(|&(rv, _)| rv <= based_on);
            for &(rv, v) in &writes[first..] {
                if v >= w || Some(rv) > write.rv_before {
                    break;
                }
                if ops[v].node != write.node {
                    out.push((v, w));
                }
            }
            continue;
        }
        for &v in index.iter().take_while(|&&v| v < w) {
            let victim = &ops[v];
            if victim.applied_write()
                && victim.node != write.node
                && victim.rv_after.is_some_and(|rv| rv > based_on && Some(rv) <= write.rv_before)
            {
                out.push((v, w));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(
        node: usize,
        writer: &str,
        kind: OpKind,
        applied: Nanos,
        before: Option<u64>,
        after: Option<u64>,
    ) -> HistoryOp {
        HistoryOp {
            node,
            kind,
            verb: if kind == OpKind::Read { "get" } else { "update" },
            mode: "update",
            sent: applied - 1,
            applied,
            rv_before: before,
            rv_after: after,
            based_on: None,
            token: Some(0),
            holder: writer.into(),
            writer: writer.into(),
            object: "ns/child".into(),
            outcome: "ok",
            value: Some(writer.into()),
        }
    }

    /// The binary search finds exactly the lost updates the scan of every earlier op finds, in
    /// the same order, over random histories of three nodes (writes applied, refused or
    /// changing nothing, reads, reads stale by up to six versions).
    #[test]
    fn the_lost_update_search_equals_the_scan_of_every_earlier_op() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..200 {
            let mut rv = 1u64;
            let mut ops = Vec::new();
            for t in 1..=300 {
                let node = next(3) as usize;
                if next(3) == 0 {
                    ops.push(op(node, "a", OpKind::Read, t, Some(rv), Some(rv)));
                    continue;
                }
                let mut w = op(node, "a", OpKind::Write, t, Some(rv), Some(rv + 1));
                w.based_on = (next(4) != 0).then(|| rv.saturating_sub(next(6)));
                match next(7) {
                    0 | 1 => {
                        w.outcome = "conflict";
                        w.rv_after = None;
                    }
                    // A write that changes nothing keeps the version.
                    2 => w.rv_after = Some(rv),
                    _ => rv += 1,
                }
                ops.push(w);
            }
            let mut want = Vec::new();
            for (w, write) in ops.iter().enumerate() {
                let (Some(based_on), true) = (write.based_on, write.applied_write()) else { continue };
                for (v, victim) in ops[..w].iter().enumerate() {
                    if victim.applied_write()
                        && victim.node != write.node
                        && victim.rv_after.is_some_and(|rv| rv > based_on && Some(rv) <= write.rv_before)
                    {
                        want.push((v, w));
                    }
                }
            }
            assert_eq!(check(&ops, &[]).lost_updates, want);
        }
    }

    /// A reads v10, B (now the holder) writes v11, A writes over it from its stale read: B's
    /// write is lost, and A wrote while the Lease named B. Both inside the dual window.
    #[test]
    fn a_stale_read_modify_write_loses_the_other_leaders_update_and_corrupts_the_overlap() {
        let mut a_read = op(0, "a", OpKind::Read, 10, Some(10), Some(10));
        a_read.holder = "b".into();
        let b_write = op(1, "b", OpKind::Write, 20, Some(10), Some(11));
        let mut a_write = op(0, "a", OpKind::Write, 30, Some(11), Some(12));
        a_write.based_on = Some(10);
        a_write.holder = "b".into();
        let r = check(&[a_read, b_write, a_write], &[(5, 40)]);
        assert_eq!(r.lost_updates, vec![(1, 2)]);
        assert_eq!(r.non_holder_writes, vec![2]);
        assert_eq!((r.corrupting_windows, r.harmless_windows), (1, 0));
    }

    /// Two leaders overlap, but the old one only reads and its write is refused with 409 (the
    /// resourceVersion precondition of `fenced-update`): nothing is lost, the overlap is harmless.
    #[test]
    fn an_overlap_whose_stale_write_is_refused_is_harmless() {
        let a_read = op(0, "a", OpKind::Read, 10, Some(10), Some(10));
        let b_write = op(1, "b", OpKind::Write, 20, Some(10), Some(11));
        let mut a_write = op(0, "a", OpKind::Write, 30, Some(11), Some(11));
        a_write.based_on = Some(10);
        a_write.outcome = "conflict";
        a_write.holder = "b".into();
        let r = check(&[a_read, b_write, a_write], &[(5, 40)]);
        assert!(r.lost_updates.is_empty() && r.non_holder_writes.is_empty(), "{r:?}");
        assert_eq!((r.corrupting_windows, r.harmless_windows), (0, 1));
    }

    /// A read-modify-write that read the other node's write first loses nothing.
    #[test]
    fn a_write_based_on_the_latest_version_loses_nothing() {
        let b_write = op(1, "b", OpKind::Write, 20, Some(10), Some(11));
        let mut a_write = op(0, "a", OpKind::Write, 30, Some(11), Some(12));
        a_write.based_on = Some(11);
        let r = check(&[b_write, a_write], &[]);
        assert_eq!(r.violations(), 0);
    }

    /// Issue 32: two Leases, each reconciler writing its own object, read 231 lost updates out
    /// of 202 operations: the server's resourceVersions are shared, so one object's versions
    /// fell between another's read and write. Random interleavings of two objects' histories
    /// under one version counter, checked together, give exactly the sum of each object checked
    /// alone; no write is counted lost that is not a write of the same object.
    #[test]
    fn objects_checked_together_give_the_sum_of_each_checked_alone() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..300 {
            let mut global = 1u64;
            let mut current = [1u64, 1u64];
            let mut ops = Vec::new();
            for t in 1..=120 {
                let object = next(2) as usize;
                let node = object * 3 + next(3) as usize;
                let rv = current[object];
                let mut o = if next(3) == 0 {
                    op(node, "a", OpKind::Read, t, Some(rv), Some(rv))
                } else {
                    let mut w = op(node, "a", OpKind::Write, t, Some(rv), None);
                    w.based_on = (next(4) != 0).then(|| rv.saturating_sub(next(8)));
                    if next(5) == 0 {
                        w.outcome = "conflict";
                    } else {
                        global += 1;
                        current[object] = global;
                        w.rv_after = Some(global);
                    }
                    w
                };
                o.object = format!("ns/child-{object}");
                ops.push(o);
            }
            let together = check(&ops, &[]);
            let mut separate = 0;
            for object in ["ns/child-0", "ns/child-1"] {
                let index: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].object == object).collect();
                let alone: Vec<HistoryOp> = index.iter().map(|&i| ops[i].clone()).collect();
                separate += check(&alone, &[]).lost_updates.len();
            }
            assert_eq!(together.lost_updates.len(), separate);
            for &(v, w) in &together.lost_updates {
                assert_eq!(ops[v].object, ops[w].object, "a write lost to another object's write");
                assert!(v < w);
            }
        }
    }
}
