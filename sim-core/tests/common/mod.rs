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

/// `default` cases, or the number in the environment variable `var` (for a longer search).
pub fn cases(var: &str, default: u32) -> proptest::test_runner::Config {
    let cases = std::env::var(var).ok().and_then(|n| n.parse().ok()).unwrap_or(default);
    proptest::test_runner::Config { cases, ..Default::default() }
}

/// A client-go elector's timings and link, drawn once for every node of a random world.
#[derive(Clone, Debug)]
pub struct Knobs {
    pub minor: u8,
    pub rp_ms: u64,
    pub rd_extra_ms: u64,
    pub ld_extra_s: u64,
    /// A latency's least milliseconds and its spread (none when `fixed`).
    pub latency: (u64, u64),
    pub fixed: bool,
    pub loss: f64,
    pub timeout_ms: Option<u64>,
    pub release: bool,
}

/// Releases v0.26 to v0.37, retry periods 0.3–3 s with a renew deadline and a Lease duration
/// above them, latencies to 230 ms (a fixed one keeps no stream: `net::Way::Certain`), up to
/// 2 % loss, request timeouts.
pub fn knobs() -> impl proptest::strategy::Strategy<Value = Knobs> {
    use proptest::prelude::*;
    (
        prop::sample::select(vec![26u8, 27, 29, 30, 31, 33, 34, 36, 37]),
        300u64..3000,
        0u64..4000,
        0u64..10,
        (0u64..30, 0u64..200),
        any::<bool>(),
        prop::sample::select(vec![0.0, 0.0, 0.01, 0.02]),
        prop::option::of(200u64..5000),
        any::<bool>(),
    )
        .prop_map(|(minor, rp_ms, rd_extra_ms, ld_extra_s, latency, fixed, loss, timeout_ms, release)| Knobs {
            minor,
            rp_ms,
            rd_extra_ms,
            ld_extra_s,
            latency,
            fixed,
            loss,
            timeout_ms,
            release,
        })
}

impl Knobs {
    /// Sets them on `node`, with its clock's drift and a restart 2 s after a lost Lease.
    pub fn apply(&self, node: &mut sim_core::model::NodeSpec, drift_ppm: i64) {
        use sim_core::time::{millis, secs};
        let rp = millis(self.rp_ms);
        let rd = rp + millis(self.rd_extra_ms);
        let ld = (rd + rp).div_ceil(secs(1)) * secs(1) + secs(self.ld_extra_s);
        let e = node.elector_mut();
        e.client_go = sim_core::elector::ClientGoVersion { minor: self.minor, patch: None };
        e.lease_duration = ld;
        e.renew_deadline = rd;
        e.retry_period = rp;
        e.request_timeout = self.timeout_ms.map(millis);
        e.release_on_cancel = self.release;
        e.after_lost = sim_core::elector::AfterLost::Restart { delay: secs(2) };
        node.clock_mut().drift_ppb = drift_ppm * 1000;
        let (least, spread) = self.latency;
        let latency = if self.fixed {
            sim_core::net::Latency::Fixed(millis(least))
        } else {
            sim_core::net::Latency::Uniform { min: millis(least), max: millis(least + spread) }
        };
        node.link_mut().up.latency = latency.clone();
        node.link_mut().down.latency = latency;
        node.link_mut().up.loss = self.loss;
    }
}
