//! A run's metrics flattened to dotted paths (`per_node.a.lease_conflicts`): what expectations
//! and sweeps name.

use std::collections::BTreeMap;

/// Metric values by path (`dual_leader_seconds`, `nodes.<id>.split_brain_writes`,
/// `failover_seconds.max`), for expectations and sweeps.
pub fn metric_values(metrics: &crate::metrics::Metrics) -> BTreeMap<String, f64> {
    // Paths are built in one growing buffer and the map is built once from the sorted list
    // (a sweep asks this of every run; a map insert and a `format!` per path cost as much as
    // a tenth of a short run's events). Later entries win over earlier ones with the same path,
    // as successive inserts would.
    let mut out = Vec::new();
    let value = serde_json::to_value(metrics).expect("metrics serialise");
    fn walk(path: &mut String, v: &serde_json::Value, out: &mut Vec<(String, f64)>) {
        match v {
            serde_json::Value::Number(n) => out.push((path.clone(), n.as_f64().unwrap_or(0.0))),
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    let len = path.len();
                    if len > 0 {
                        path.push('.');
                    }
                    path.push_str(k);
                    walk(path, v, out);
                    path.truncate(len);
                }
            }
            serde_json::Value::Array(a) => {
                let xs: Vec<f64> = a.iter().filter_map(|x| x.as_f64()).collect();
                let mean = if xs.is_empty() { 0.0 } else { xs.iter().sum::<f64>() / xs.len() as f64 };
                out.push((format!("{path}.count"), xs.len() as f64));
                out.push((format!("{path}.max"), xs.iter().copied().fold(0.0, f64::max)));
                out.push((format!("{path}.mean"), mean));
            }
            _ => {}
        }
    }
    walk(&mut String::with_capacity(96), &value, &mut out);
    out.push(("transitions".into(), metrics.lease_transitions as f64));
    // Whole-run sums of the reconcilers' evidence (each node's is under `nodes.<id>.`).
    let sum = |f: fn(&crate::metrics::NodeMetrics) -> u64| metrics.nodes.values().map(f).sum::<u64>() as f64;
    out.push(("split_brain_writes".into(), sum(|n| n.split_brain_writes)));
    out.push(("overwrites".into(), sum(|n| n.overwrites)));
    out.push(("conflicts".into(), sum(|n| n.conflicts)));
    out.into_iter().collect()
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
        assert_eq!(values["failover_seconds.max"], 7.5);
        assert_eq!(values["split_brain_writes"], 6.0);
        assert_eq!(values["nodes.b-1.acquisitions"], 2.0);
    }
}
