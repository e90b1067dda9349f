//! Who led when, for clients the server cannot see into. A real client's belief is invisible to
//! the server; two things stand in for it, in this order:
//! - **its own word** — a client that posts `{"leading": true|false}` to
//!   `/leasesim/v1/leading` when its callbacks run leads between those posts;
//! - **its claims in the Lease** — a holder claims the Lease from the write that names it until
//!   the renewTime it last wrote plus the leaseDurationSeconds it wrote (or its release, a write
//!   of an empty holder). A claim outliving a takeover is a dual-leader window by the Lease's
//!   own record: the new holder took a Lease whose holder had said it was still valid.
//!
//! Simulated nodes are judged by the world itself (their acting spans); this adds the rest.

use std::collections::BTreeMap;

use sim_core::metrics::DualWindow;
use sim_core::time::{Nanos, UnixNanos};

use super::core::{Belief, LeaseWrite};

/// One holder's time as leader of one Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderSpan {
    pub identity: String,
    pub lease: String,
    pub from: Nanos,
    pub until: Nanos,
    /// From the client's own word (else from its claims in the Lease).
    pub reported: bool,
}

/// Claims in the Lease, per holder run: from the first write naming the holder to its last
/// renewTime + duration (converted to true time through `epoch`), cut at its release.
pub fn claims(writes: &[LeaseWrite], epoch: UnixNanos, end: Nanos) -> Vec<LeaderSpan> {
    let mut by_lease: BTreeMap<&str, Vec<&LeaseWrite>> = BTreeMap::new();
    for w in writes {
        by_lease.entry(w.lease.as_str()).or_default().push(w);
    }
    let mut spans = Vec::new();
    for (lease, writes) in by_lease {
        let mut current: Option<LeaderSpan> = None;
        for w in writes {
            let holder = if w.deleted { "" } else { w.holder.as_str() };
            let claim_end = match (w.renew_time, w.duration_seconds) {
                (Some(renew), Some(d)) => ((renew - epoch) + d * 1_000_000_000).max(0) as Nanos,
                _ => w.t,
            };
            match &mut current {
                Some(span) if span.identity == holder => span.until = span.until.max(claim_end),
                _ => {
                    if let Some(mut span) = current.take() {
                        if holder.is_empty() {
                            // A release: the claim ends with it.
                            span.until = span.until.min(w.t);
                        }
                        spans.push(span);
                    }
                    if !holder.is_empty() {
                        current = Some(LeaderSpan {
                            identity: holder.to_string(),
                            lease: lease.to_string(),
                            from: w.t,
                            until: claim_end.max(w.t),
                            reported: false,
                        });
                    }
                }
            }
        }
        spans.extend(current);
    }
    for s in &mut spans {
        s.until = s.until.min(end);
    }
    spans.retain(|s| s.until > s.from);
    spans
}

/// Spans from the clients' own words: leading from a `true` to the next `false` (or the end).
pub fn reported(beliefs: &[Belief], end: Nanos) -> Vec<LeaderSpan> {
    let mut open: BTreeMap<(String, String), Nanos> = BTreeMap::new();
    let mut spans = Vec::new();
    for b in beliefs {
        let key = (b.identity.clone(), b.lease.clone());
        match (b.leading, open.remove(&key)) {
            (true, None) => {
                open.insert(key, b.t);
            }
            (true, Some(from)) => {
                open.insert(key, from);
            }
            (false, Some(from)) => spans.push(LeaderSpan {
                identity: b.identity.clone(),
                lease: b.lease.clone(),
                from,
                until: b.t,
                reported: true,
            }),
            (false, None) => {}
        }
    }
    for ((identity, lease), from) in open {
        spans.push(LeaderSpan { identity, lease, from, until: end, reported: true });
    }
    spans.retain(|s| s.until > s.from);
    spans
}

/// Each identity's spans: its own word where it gave any, else its claims. A reported span
/// with no Lease named is put on the Lease the identity held.
pub fn leaders(writes: &[LeaseWrite], beliefs: &[Belief], epoch: UnixNanos, end: Nanos) -> Vec<LeaderSpan> {
    let claimed = claims(writes, epoch, end);
    let mut told = reported(beliefs, end);
    for s in &mut told {
        if s.lease.is_empty()
            && let Some(c) = claimed.iter().find(|c| c.identity == s.identity)
        {
            s.lease = c.lease.clone();
        }
    }
    // A word never taken back (the span runs to the end) ends where the client's own claim in
    // that Lease ends: a client that stopped renewing without saying so — killed, or still
    // hung when the session stopped — is taken at its Lease's word. A live leader renews, so
    // its claim reaches past the end and nothing is cut.
    for s in &mut told {
        if s.until == end
            && let Some(claim_end) = claimed
                .iter()
                .filter(|c| c.identity == s.identity && c.lease == s.lease && c.from <= end)
                .map(|c| c.until)
                .max()
        {
            s.until = claim_end.max(s.from);
        }
    }
    told.retain(|s| s.until > s.from);
    let mut out: Vec<LeaderSpan> =
        claimed.into_iter().filter(|c| !told.iter().any(|t| t.identity == c.identity)).collect();
    out.extend(told);
    out.sort_by(|a, b| (&a.lease, a.from, &a.identity).cmp(&(&b.lease, b.from, &b.identity)));
    out
}

/// The windows in which two or more spans of one Lease overlap, with who led in each.
pub fn dual_windows(spans: &[LeaderSpan]) -> Vec<DualWindow> {
    let mut by_lease: BTreeMap<&str, Vec<&LeaderSpan>> = BTreeMap::new();
    for s in spans {
        by_lease.entry(s.lease.as_str()).or_default().push(s);
    }
    let mut windows = Vec::new();
    for (lease, spans) in by_lease {
        // Sweep: +1 at a start, -1 at an end (ends first at a tie: touching spans do not overlap).
        let mut edges: Vec<(Nanos, i32)> = spans.iter().flat_map(|s| [(s.from, 1), (s.until, -1)]).collect();
        edges.sort_by_key(|&(t, d)| (t, d));
        let mut count = 0;
        let mut open: Option<Nanos> = None;
        for (t, d) in edges {
            count += d;
            match (count >= 2, open) {
                (true, None) => open = Some(t),
                (false, Some(from)) => {
                    if t > from {
                        let mut leaders: Vec<String> =
                            spans.iter().filter(|s| s.from < t && s.until > from).map(|s| s.identity.clone()).collect();
                        leaders.sort();
                        leaders.dedup();
                        windows.push(DualWindow { from, until: t, leaders, lease: lease.to_string() });
                    }
                    open = None;
                }
                _ => {}
            }
        }
    }
    windows.sort_by_key(|w| (w.from, w.until));
    windows
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn write(t: i64, holder: &str, renew: i64, ld: i64) -> LeaseWrite {
        LeaseWrite {
            t: (t * S) as Nanos,
            rv: t as u64,
            lease: "ns/l".into(),
            holder: holder.into(),
            renew_time: Some(renew * S),
            duration_seconds: Some(ld),
            transitions: None,
            deleted: false,
        }
    }

    #[test]
    fn a_takeover_before_the_holders_claim_ends_is_a_window() {
        // A renews at 0, 2, 4 with LD 6 (claim to 10); B takes over at 8.
        let writes = [write(0, "A", 0, 6), write(2, "A", 2, 6), write(4, "A", 4, 6), write(8, "B", 8, 6)];
        let spans = claims(&writes, 0, 100 * S as Nanos);
        assert_eq!(spans.len(), 2);
        assert_eq!((spans[0].from, spans[0].until), (0, (10 * S) as Nanos));
        let w = dual_windows(&spans);
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].from, w[0].until), ((8 * S) as Nanos, (10 * S) as Nanos));
        assert_eq!(w[0].leaders, ["A", "B"]);
    }

    #[test]
    fn a_release_ends_the_claim_and_a_late_takeover_overlaps_nothing() {
        let mut release = write(3, "", 3, 1);
        release.renew_time = None;
        let writes = [write(0, "A", 0, 15), release, write(4, "B", 4, 15), write(30, "C", 30, 15)];
        let spans = claims(&writes, 0, (100 * S) as Nanos);
        assert_eq!(spans[0].until, (3 * S) as Nanos);
        assert!(dual_windows(&spans).is_empty(), "B's claim ends at 19, C comes at 30");
    }

    #[test]
    fn a_clients_own_word_replaces_its_claims() {
        let writes = [write(0, "A", 0, 6), write(8, "B", 8, 6)];
        let beliefs = [
            Belief { t: 0, identity: "A".into(), lease: "".into(), leading: true },
            Belief { t: (25 * S) as Nanos, identity: "A".into(), lease: "".into(), leading: false },
        ];
        let spans = leaders(&writes, &beliefs, 0, (40 * S) as Nanos);
        let a = spans.iter().find(|s| s.identity == "A").unwrap();
        assert!(a.reported && a.lease == "ns/l" && a.until == (25 * S) as Nanos);
        let w = dual_windows(&spans);
        assert_eq!((w[0].from, w[0].until), ((8 * S) as Nanos, (14 * S) as Nanos));
    }

    /// benches/python-client's `kill` run: A said it leads and was SIGKILLed before it could
    /// take it back; its word ends where its claim in the Lease ends, not at the session's end
    /// (which read 26.8 s of dual leadership for a dead process).
    #[test]
    fn a_word_never_taken_back_ends_with_the_clients_claim() {
        let writes = [write(0, "A", 0, 6), write(2, "A", 2, 6), write(4, "A", 4, 6), write(11, "C", 11, 6)];
        let beliefs = [Belief { t: 0, identity: "A".into(), lease: "ns/l".into(), leading: true }];
        let spans = leaders(&writes, &beliefs, 0, (40 * S) as Nanos);
        let a = spans.iter().find(|s| s.identity == "A").unwrap();
        assert_eq!(a.until, (10 * S) as Nanos);
        assert!(dual_windows(&spans).is_empty());
        // Still renewing at the end: its claim reaches past the end and its word stands.
        let live = [write(0, "A", 0, 6), write(38, "A", 38, 6)];
        let spans = leaders(&live, &beliefs, 0, (40 * S) as Nanos);
        assert_eq!(spans[0].until, (40 * S) as Nanos);
    }
}
