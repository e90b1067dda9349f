//! Elector configuration and client-go's validation of it.

use crate::time::{NANOS_PER_SEC, Nanos};

/// client-go's `JitterFactor` package constant.
pub const JITTER_FACTOR: f64 = 1.2;

/// Which expiry rule and loop a node follows. Every variant is a real implementation's
/// behaviour; see `docs/algorithms.md` for the sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Algorithm {
    /// client-go ≥ v0.30: expiry from the local observedTime and the *record's* duration,
    /// optimistic fast-path renewals, PUT with resourceVersion.
    ClientGo,
    /// client-go before v0.27: the follower uses its *own* configured LeaseDuration, and there
    /// is no fast path (it arrived in v0.30).
    ClientGoLegacy,
    /// Expired iff `renewTime + leaseDurationSeconds < local wall now` (kube-lease-manager,
    /// kubert, the seed lab's expiry script); takeover fenced by resourceVersion.
    RenewTime,
    /// The same rule, but every write is a JSON merge patch without resourceVersion
    /// (kube-leader-election): last write wins.
    RenewTimeUnfenced,
    /// The official Python client (kubernetes 37.x `leaderelection.py`).
    PythonClient,
}

impl Algorithm {
    pub const ALL: [Algorithm; 5] = [
        Algorithm::ClientGo,
        Algorithm::ClientGoLegacy,
        Algorithm::RenewTime,
        Algorithm::RenewTimeUnfenced,
        Algorithm::PythonClient,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::ClientGo => "client-go",
            Algorithm::ClientGoLegacy => "client-go-legacy",
            Algorithm::RenewTime => "renew-time",
            Algorithm::RenewTimeUnfenced => "renew-time-unfenced",
            Algorithm::PythonClient => "python-client",
        }
    }

    pub fn parse(s: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.name() == s)
    }
}

/// What a node's process does after its elector's `Run` returns (leadership lost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterLost {
    /// The process exits (kube-controller-manager's `klog.Fatalf("leaderelection lost")`,
    /// controller-runtime's manager returning) and is restarted after `delay` (kubelet's first
    /// crash-loop back-off is 10 s).
    Restart { delay: Nanos },
    /// The process exits and stays down.
    Exit,
    /// The same process calls `Run` again (keeping nothing: a new LeaderElector).
    Rejoin,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ElectorConfig {
    pub identity: String,
    pub lease_namespace: String,
    pub lease_name: String,
    pub algorithm: Algorithm,
    pub lease_duration: Nanos,
    pub renew_deadline: Nanos,
    pub retry_period: Nanos,
    /// client-go's JitterFactor is a constant 1.2; it is configurable here for experiments.
    pub jitter_factor: f64,
    pub release_on_cancel: bool,
    /// HTTP client timeout per request. client-go's `NewFromKubeconfig` sets
    /// `max(1s, RenewDeadline/2)`; `None` means "no timeout" (the Python client).
    pub request_timeout: Option<Nanos>,
    pub after_lost: AfterLost,
}

impl ElectorConfig {
    /// The defaults of kube-controller-manager and controller-runtime: 15 s / 10 s / 2 s.
    pub fn new(identity: &str, algorithm: Algorithm) -> Self {
        let renew_deadline = 10 * NANOS_PER_SEC;
        ElectorConfig {
            identity: identity.to_string(),
            lease_namespace: "default".into(),
            lease_name: "leasesim".into(),
            algorithm,
            lease_duration: 15 * NANOS_PER_SEC,
            renew_deadline,
            retry_period: 2 * NANOS_PER_SEC,
            jitter_factor: JITTER_FACTOR,
            release_on_cancel: false,
            request_timeout: default_request_timeout_for(algorithm, renew_deadline),
            after_lost: AfterLost::Restart { delay: 10 * NANOS_PER_SEC },
        }
    }

    /// `int(LeaseDuration / time.Second)`: what the elector writes into the Lease.
    pub fn lease_duration_seconds(&self) -> i32 {
        (self.lease_duration / NANOS_PER_SEC).min(i32::MAX as u64) as i32
    }

    /// client-go's `NewLeaderElector` checks, in client-go's order, with its exact messages
    /// (`leaderelection.go`). The Python client checks a similar set with its own wording; we
    /// apply client-go's to every algorithm so a scenario is refused the same way whichever
    /// rule its nodes follow, and let `unsafe` mode opt out.
    pub fn validate(&self) -> Result<(), String> {
        if self.lease_duration <= self.renew_deadline {
            return Err("leaseDuration must be greater than renewDeadline".into());
        }
        let bound = (JITTER_FACTOR * self.retry_period as f64) as Nanos;
        if self.renew_deadline <= bound {
            return Err("renewDeadline must be greater than retryPeriod*JitterFactor".into());
        }
        if self.lease_duration < 1 {
            return Err("leaseDuration must be greater than zero".into());
        }
        if self.renew_deadline < 1 {
            return Err("renewDeadline must be greater than zero".into());
        }
        if self.retry_period < 1 {
            return Err("retryPeriod must be greater than zero".into());
        }
        if self.identity.is_empty() {
            return Err("Lock identity is empty".into());
        }
        Ok(())
    }

    /// Checks that even unsafe mode cannot waive: the simulation itself needs them.
    pub fn validate_simulable(&self) -> Result<(), String> {
        if self.retry_period == 0 {
            return Err("retryPeriod must be greater than zero (a zero period would loop forever)".into());
        }
        if self.lease_duration < NANOS_PER_SEC {
            return Err("leaseDuration below 1s writes leaseDurationSeconds: 0, which the API server rejects".into());
        }
        if self.identity.is_empty() {
            return Err("Lock identity is empty".into());
        }
        if !(self.jitter_factor.is_finite() && self.jitter_factor >= 0.0) {
            return Err(format!("jitter factor {} must be a finite number >= 0", self.jitter_factor));
        }
        Ok(())
    }
}

/// client-go's request timeout from `NewFromKubeconfig`: `max(1s, RenewDeadline/2)`. The
/// Python client sets none.
pub fn default_request_timeout_for(algorithm: Algorithm, renew_deadline: Nanos) -> Option<Nanos> {
    match algorithm {
        Algorithm::PythonClient => None,
        _ => Some((renew_deadline / 2).max(NANOS_PER_SEC)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::secs;

    fn cfg(ld: u64, rd: u64, rp: u64) -> ElectorConfig {
        ElectorConfig {
            lease_duration: ld,
            renew_deadline: rd,
            retry_period: rp,
            ..ElectorConfig::new("a", Algorithm::ClientGo)
        }
    }

    #[test]
    fn client_go_validation_messages_and_order() {
        assert_eq!(cfg(secs(15), secs(10), secs(2)).validate(), Ok(()));
        assert_eq!(
            cfg(secs(10), secs(10), secs(2)).validate().unwrap_err(),
            "leaseDuration must be greater than renewDeadline"
        );
        // 2 s × 1.2 = 2.4 s: a renew deadline of exactly 2.4 s is refused, 2.4 s + 1 ns is fine.
        assert_eq!(
            cfg(secs(15), 2_400_000_000, secs(2)).validate().unwrap_err(),
            "renewDeadline must be greater than retryPeriod*JitterFactor"
        );
        assert_eq!(cfg(secs(15), 2_400_000_001, secs(2)).validate(), Ok(()));
        // An all-zero config fails the first check, not a "greater than zero" one.
        assert_eq!(cfg(0, 0, 0).validate().unwrap_err(), "leaseDuration must be greater than renewDeadline");
        assert_eq!(cfg(secs(15), secs(10), 0).validate().unwrap_err(), "retryPeriod must be greater than zero");
        let mut empty = cfg(secs(15), secs(10), secs(2));
        empty.identity.clear();
        assert_eq!(empty.validate().unwrap_err(), "Lock identity is empty");
    }

    #[test]
    fn request_timeout_is_half_the_renew_deadline_but_at_least_a_second() {
        assert_eq!(default_request_timeout_for(Algorithm::ClientGo, secs(10)), Some(secs(5)));
        assert_eq!(default_request_timeout_for(Algorithm::ClientGo, 1_500_000_000), Some(secs(1)));
        assert_eq!(default_request_timeout_for(Algorithm::PythonClient, secs(10)), None);
    }

    #[test]
    fn lease_duration_seconds_truncates() {
        assert_eq!(cfg(15_900_000_000, secs(10), secs(2)).lease_duration_seconds(), 15);
    }
}
