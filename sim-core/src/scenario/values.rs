//! A run's metrics flattened to dotted paths (`per_node.a.lease_conflicts`): what expectations
//! and sweeps name.

use std::collections::BTreeMap;

/// Metric values by path (`dual_leader_seconds`, `nodes.<id>.split_brain_writes`,
/// `failover_seconds.max`), for expectations and sweeps.
///
/// The paths are those of the metrics' JSON (`serde_json::to_value`, each object's keys joined
/// by dots, an array as its count, max and mean), but walked over the structs directly: a
/// sweep asks this of every run, and building the JSON (a map insert hashes its key) cost a
/// sixth of a one-second run. The test below holds the two to the same map, so a metric added to
/// the structs and not here fails it. Later entries win over earlier ones with the same path.
pub fn metric_values(metrics: &crate::metrics::Metrics) -> BTreeMap<String, f64> {
    walk(metrics).into_iter().collect()
}

/// The values in the order walked, which is their paths' order (see `metric_values`).
fn walk(metrics: &crate::metrics::Metrics) -> Vec<(String, f64)> {
    let mut out = Vec::with_capacity(48 + 24 * metrics.nodes.len());
    visit_metric_values(metrics, |path, value| out.push((path.to_string(), value)));
    out
}

/// Each of [`metric_values`]'s entries handed to `visit` as it is walked, path and value, in
/// the walk's order (its paths' order but where a node id sorts differently from its paths,
/// and where a later entry repeats a path: the map keeps the later), with no path allocated.
/// A sweep's row takes its values this way, straight into its columns.
pub fn visit_metric_values(metrics: &crate::metrics::Metrics, visit: impl FnMut(&str, f64)) {
    use crate::metrics::RequestCounts;
    let mut w = Walk { path: String::with_capacity(96), visit };
    let m = metrics;
    // Walked in the paths' order (the map is built by a sort, which finds a sorted list
    // sorted in one pass; a node id that sorts differently from its paths, "a" beside "a-b",
    // only costs the sort its work).
    let sum = |f: fn(&crate::metrics::NodeMetrics) -> u64| metrics.nodes.values().map(f).sum::<u64>() as f64;
    w.number("api_requests", m.api_requests as f64);
    w.object("api_requests_by_verb_status", |w| {
        for (key, &n) in &m.api_requests_by_verb_status {
            w.number(key, n as f64);
        }
    });
    // Whole-run sums of the reconcilers' evidence (each node's is under `nodes.<id>.`).
    w.put("conflicts", sum(|n| n.conflicts));
    w.number("dual_leader_seconds", m.dual_leader_seconds);
    w.number("dual_leader_windows", m.dual_leader_windows as f64);
    w.array("failover_seconds", &m.failover_seconds);
    w.number("held_idle_seconds", m.held_idle_seconds);
    w.number("leader_changes", m.leader_changes as f64);
    w.number("leaderless_seconds", m.leaderless_seconds);
    w.number("lease_transitions", m.lease_transitions as f64);
    w.object("leases", |w| {
        for (key, l) in &m.leases {
            w.object(key, |w| {
                w.number("dual_leader_seconds", l.dual_leader_seconds);
                w.number("dual_leader_windows", l.dual_leader_windows as f64);
                w.number("elected", f64::from(u8::from(l.elected)));
                w.number("first_leader_seconds", l.first_leader_seconds);
                w.number("leader_changes", l.leader_changes as f64);
                w.number("leaderless_seconds", l.leaderless_seconds);
                w.number("lease_transitions", l.lease_transitions as f64);
                w.number("max_dual_leader_seconds", l.max_dual_leader_seconds);
            });
        }
    });
    w.number("leases_never_elected", m.leases_never_elected as f64);
    w.number("max_dual_leader_seconds", m.max_dual_leader_seconds);
    let counts = |w: &mut Walk<_>, name: &str, c: &RequestCounts| {
        w.object(name, |w| {
            for (verb, n) in [
                ("apply", c.apply),
                ("create", c.create),
                ("delete", c.delete),
                ("get", c.get),
                ("list", c.list),
                ("patch", c.patch),
                ("update", c.update),
            ] {
                w.number(verb, n as f64);
            }
        })
    };
    w.object("nodes", |w| {
        for (id, n) in &m.nodes {
            w.object(id, |w| {
                w.number("acquisitions", n.acquisitions as f64);
                w.number("acting_leader_seconds", n.acting_leader_seconds);
                w.number("already_exists", n.already_exists as f64);
                w.number("conflicts", n.conflicts as f64);
                w.number("fenced_rejections", n.fenced_rejections as f64);
                w.number("held_idle_seconds", n.held_idle_seconds);
                w.number("lease_conflicts", n.lease_conflicts as f64);
                w.number("overwrites", n.overwrites as f64);
                counts(w, "requests_lost", &n.requests_lost);
                counts(w, "requests_sent", &n.requests_sent);
                w.number("split_brain_writes", n.split_brain_writes as f64);
                w.number("work_not_holder_seconds", n.work_not_holder_seconds);
                w.number("writes_accepted", n.writes_accepted as f64);
            });
        }
    });
    w.put("overwrites", sum(|n| n.overwrites));
    w.put("split_brain_writes", sum(|n| n.split_brain_writes));
    w.put("transitions", metrics.lease_transitions as f64);
    w.put("work_not_holder_seconds", metrics.work_not_holder_seconds);
}

/// The path being walked (in one growing buffer) and where each value found goes.
struct Walk<F> {
    path: String,
    visit: F,
}

impl<F: FnMut(&str, f64)> Walk<F> {
    fn enter(&mut self, key: &str) -> usize {
        let len = self.path.len();
        if len > 0 {
            self.path.push('.');
        }
        self.path.push_str(key);
        len
    }

    /// A number at `key`. JSON has no NaN or infinity (serde_json writes them as null), so
    /// such a value has no path.
    fn number(&mut self, key: &str, value: f64) {
        if value.is_finite() {
            self.put(key, value);
        }
    }

    /// A value at `key`, whatever it is.
    fn put(&mut self, key: &str, value: f64) {
        let len = self.enter(key);
        (self.visit)(&self.path, value);
        self.path.truncate(len);
    }

    fn object(&mut self, key: &str, body: impl FnOnce(&mut Self)) {
        let len = self.enter(key);
        body(self);
        self.path.truncate(len);
    }

    /// An array of numbers at `key`: its count, max and mean (of the values JSON can hold).
    fn array(&mut self, key: &str, values: &[f64]) {
        let (mut count, mut max, mut sum) = (0usize, 0.0f64, 0.0f64);
        for &x in values.iter().filter(|x| x.is_finite()) {
            count += 1;
            max = max.max(x);
            sum += x;
        }
        let mean = if count == 0 { 0.0 } else { sum / count as f64 };
        self.object(key, |w| {
            // Pushed whatever their value, as the JSON walk does (a sum can overflow to infinity).
            for (name, v) in [("count", count as f64), ("max", max), ("mean", mean)] {
                w.put(name, v);
            }
        });
    }
}

#[cfg(test)]
mod metric_values_tests {
    use super::*;

    /// The paths and values as a map insert per path gave them (the implementation before the
    /// path buffer): the same map, entry for entry.
    fn by_inserts(metrics: &crate::metrics::Metrics) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        fn walk(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, f64>) {
            match v {
                serde_json::Value::Number(n) => {
                    out.insert(prefix.to_string(), n.as_f64().unwrap_or(0.0));
                }
                // A flag (a Lease's `elected`) is 1 or 0.
                serde_json::Value::Bool(b) => {
                    out.insert(prefix.to_string(), f64::from(u8::from(*b)));
                }
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                        walk(&key, v, out);
                    }
                }
                serde_json::Value::Array(a) => {
                    let xs: Vec<f64> = a.iter().filter_map(|x| x.as_f64()).collect();
                    out.insert(format!("{prefix}.count"), xs.len() as f64);
                    out.insert(format!("{prefix}.max"), xs.iter().copied().fold(0.0, f64::max));
                    let mean = if xs.is_empty() { 0.0 } else { xs.iter().sum::<f64>() / xs.len() as f64 };
                    out.insert(format!("{prefix}.mean"), mean);
                }
                _ => {}
            }
        }
        walk("", &serde_json::to_value(metrics).unwrap(), &mut out);
        out.insert("transitions".into(), metrics.lease_transitions as f64);
        let sum = |f: fn(&crate::metrics::NodeMetrics) -> u64| metrics.nodes.values().map(f).sum::<u64>() as f64;
        out.insert("split_brain_writes".into(), sum(|n| n.split_brain_writes));
        out.insert("overwrites".into(), sum(|n| n.overwrites));
        out.insert("conflicts".into(), sum(|n| n.conflicts));
        out
    }

    #[test]
    fn metric_values_are_the_map_that_inserts_per_path_built() {
        let mut m = crate::metrics::Metrics { lease_transitions: 4, dual_leader_seconds: 1.5, ..Default::default() };
        m.failover_seconds = vec![2.0, 7.5, 3.25];
        for (i, id) in ["a", "b-1", "c"].into_iter().enumerate() {
            let node = crate::metrics::NodeMetrics {
                acquisitions: i as u64 + 1,
                split_brain_writes: 2 * i as u64,
                conflicts: 3,
                ..Default::default()
            };
            m.nodes.insert(id.into(), node);
        }
        m.leases.insert("ns/x".into(), Default::default());
        m.api_requests_by_verb_status.insert("update 409".into(), 12);
        let values = metric_values(&m);
        assert_eq!(values, by_inserts(&m));
        // Walked in order: the map's sort has nothing to move.
        assert!(walk(&m).is_sorted_by(|a, b| a.0 < b.0));
        // What JSON cannot hold has no path (a NaN is written as null), in a field and an array.
        let mut odd = m.clone();
        odd.max_dual_leader_seconds = f64::NAN;
        odd.failover_seconds.push(f64::INFINITY);
        odd.nodes.insert(
            String::new(),
            crate::metrics::NodeMetrics { acting_leader_seconds: f64::NAN, ..Default::default() },
        );
        let odd_values = metric_values(&odd);
        assert_eq!(odd_values, by_inserts(&odd));
        assert!(!odd_values.contains_key("max_dual_leader_seconds"));
        assert_eq!(odd_values["failover_seconds.count"], 3.0);
        assert_eq!(values["failover_seconds.max"], 7.5);
        assert_eq!(values["split_brain_writes"], 6.0);
        assert_eq!(values["nodes.b-1.acquisitions"], 2.0);
    }
}
