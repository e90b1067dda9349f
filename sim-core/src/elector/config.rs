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
    /// Expired iff `renewTime + leaseDurationSeconds < local wall now` (the seed lab's expiry
    /// script) on client-go's loop; takeover fenced by resourceVersion.
    RenewTime,
    /// `kube-leader-election` under the name it had when it was client-go's loop with that
    /// crate's rule and unfenced writes.
    RenewTimeUnfenced,
    /// The official Python client (`leaderelection.py` after v36.0.3, with PR #2314's Lease lock).
    PythonClient,
    /// kubernetes-sigs/controller-runtime's manager: client-go's elector (v0.36 by default, the
    /// release controller-runtime v0.24 depends on) with the manager's stop procedure.
    ControllerRuntime,
    /// fabric8io/kubernetes-client's `LeaderElector` (Java, v7.5+).
    Fabric8,
    /// kubernetes-client/java's `LeaderElector`.
    JavaClient,
    /// kubernetes-client/csharp's `LeaderElector` from commit 06c216b9 (v19.0.2): expiry from
    /// the record's leaseDurationSeconds.
    CSharpClient,
    /// The same before 06c216b9: expiry from the elector's own configured LeaseDuration.
    CSharpClientPre2026,
    /// Precise-Finance/nestjs-k8s-leader-election (TypeScript, v2.0.0).
    NestJs,
    /// alex-karpenko/kube-lease-manager (Rust, v0.12.0).
    KubeLeaseManager,
    /// thedodd/kube-coordinate (Rust, v0.2.1).
    KubeCoordinate,
    /// olix0r/kubert's `lease` module (Rust, v0.25.0).
    Kubert,
    /// hendrikmaus/kube-leader-election (Rust, v0.43.0), polled as its README does.
    KubeLeaderElection,
}

impl Algorithm {
    pub const ALL: [Algorithm; 15] = [
        Algorithm::ClientGo,
        Algorithm::ClientGoLegacy,
        Algorithm::RenewTime,
        Algorithm::RenewTimeUnfenced,
        Algorithm::PythonClient,
        Algorithm::ControllerRuntime,
        Algorithm::Fabric8,
        Algorithm::JavaClient,
        Algorithm::CSharpClient,
        Algorithm::CSharpClientPre2026,
        Algorithm::NestJs,
        Algorithm::KubeLeaseManager,
        Algorithm::KubeCoordinate,
        Algorithm::Kubert,
        Algorithm::KubeLeaderElection,
    ];

    /// Runs client-go's loop (`loops::LoopElector`), so client-go's keys (`expiry`,
    /// `fast_path`) apply.
    pub fn runs_client_go_loop(self) -> bool {
        matches!(
            self,
            Algorithm::ClientGo | Algorithm::ClientGoLegacy | Algorithm::RenewTime | Algorithm::ControllerRuntime
        )
    }

    /// Keeps a watch on its Lease: the world delivers every change of it (kube-coordinate).
    pub fn watches_lease(self) -> bool {
        self == Algorithm::KubeCoordinate
    }

    /// Has a renew grace (the `grace` node key): kube-lease-manager and kubert.
    pub fn has_grace(self) -> bool {
        matches!(self, Algorithm::KubeLeaseManager | Algorithm::Kubert)
    }

    /// Who refuses a configuration this algorithm's validation rejects.
    pub fn library(self) -> &'static str {
        match self {
            Algorithm::Fabric8 => "fabric8's LeaderElectorBuilder",
            Algorithm::JavaClient => "the Java client's LeaderElector",
            Algorithm::KubeLeaseManager => "kube-lease-manager's LeaseParams::new",
            Algorithm::KubeCoordinate => "kube-coordinate's Config::validate",
            _ => "client-go",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::ClientGo => "client-go",
            Algorithm::ClientGoLegacy => "client-go-legacy",
            Algorithm::RenewTime => "renew-time",
            Algorithm::RenewTimeUnfenced => "renew-time-unfenced",
            Algorithm::PythonClient => "python-client",
            Algorithm::ControllerRuntime => "controller-runtime",
            Algorithm::Fabric8 => "fabric8",
            Algorithm::JavaClient => "java-client",
            Algorithm::CSharpClient => "csharp-client",
            Algorithm::CSharpClientPre2026 => "csharp-client-pre-2026",
            Algorithm::NestJs => "nestjs",
            Algorithm::KubeLeaseManager => "kube-lease-manager",
            Algorithm::KubeCoordinate => "kube-coordinate",
            Algorithm::Kubert => "kubert",
            Algorithm::KubeLeaderElection => "kube-leader-election",
        }
    }

    pub fn parse(s: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.name() == s)
    }
}

/// A client-go release, by minor version (`v0.26` … `v0.37`), with an optional patch number
/// where a patch changed behaviour (v0.34.0 and v0.34.1 panic on a Lease without labels).
/// `docs/algorithms.md` has the table of what changed in which release, with the commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientGoVersion {
    pub minor: u8,
    /// `None`: the newest patch of that minor.
    pub patch: Option<u8>,
}

impl ClientGoVersion {
    /// The oldest and newest releases modelled.
    pub const OLDEST: u8 = 26;
    pub const NEWEST: u8 = 37;
    /// The default: the newest release.
    pub const LATEST: ClientGoVersion = ClientGoVersion { minor: Self::NEWEST, patch: None };
    /// `client-go-legacy`: client-go before v0.27.
    pub const LEGACY: ClientGoVersion = ClientGoVersion { minor: 26, patch: None };
    /// What controller-runtime v0.24.1 (`3be3f1bf`) depends on: client-go v0.36.0.
    pub const CONTROLLER_RUNTIME: ClientGoVersion = ClientGoVersion { minor: 36, patch: None };

    /// `"v0.37"`, `"v0.34.1"`, `"0.30"`.
    pub fn parse(text: &str) -> Result<ClientGoVersion, String> {
        let body = text.trim().strip_prefix('v').unwrap_or(text.trim());
        let mut parts = body.split('.');
        let bad = || {
            format!(
                "{text:?} is not a client-go version: expected \"v0.{}\" … \"v0.{}\" (a patch such as \"v0.34.1\" \
                 is accepted too)",
                Self::OLDEST,
                Self::NEWEST
            )
        };
        if parts.next() != Some("0") {
            return Err(bad());
        }
        let minor: u8 = parts.next().and_then(|m| m.parse().ok()).ok_or_else(bad)?;
        let patch = match parts.next() {
            None => None,
            Some(p) => Some(p.parse::<u8>().map_err(|_| bad())?),
        };
        if parts.next().is_some() {
            return Err(bad());
        }
        if !(Self::OLDEST..=Self::NEWEST).contains(&minor) {
            return Err(format!(
                "client-go v0.{minor} is not modelled: leasesim models v0.{} … v0.{} (older releases behave as v0.{}, \
                 see docs/algorithms.md)",
                Self::OLDEST,
                Self::NEWEST,
                Self::OLDEST
            ));
        }
        Ok(ClientGoVersion { minor, patch })
    }

    pub fn name(&self) -> String {
        match self.patch {
            Some(p) => format!("v0.{}.{p}", self.minor),
            None => format!("v0.{}", self.minor),
        }
    }
}

/// How a lease's expiry is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpiryRule {
    /// Local observedTime + duration, on the local monotonic clock (client-go).
    ObservedTime,
    /// The writer's renewTime + leaseDurationSeconds against the local wall clock.
    RenewTime,
}

impl ExpiryRule {
    pub fn parse(text: &str) -> Option<ExpiryRule> {
        match text {
            "observed-time" => Some(ExpiryRule::ObservedTime),
            "renew-time" => Some(ExpiryRule::RenewTime),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ExpiryRule::ObservedTime => "observed-time",
            ExpiryRule::RenewTime => "renew-time",
        }
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
    /// For `client-go`: the release the node runs (default the newest).
    pub client_go: ClientGoVersion,
    /// Overrides of the algorithm's expiry rule and fast path (`expiry`, `fast_path` node keys),
    /// so that one thing can be changed at a time.
    pub expiry: Option<ExpiryRule>,
    pub fast_path: Option<bool>,
    /// `resourcelock.NewWithLabels` (client-go ≥ v0.34): set on create, merged into the cached
    /// Lease's labels on every update. Sorted by key.
    pub labels: Vec<(String, String)>,
    /// The lock's EventRecorder is set: "<identity> became leader" / "stopped leading" Events
    /// are created in the Lease's namespace (kube-controller-manager and controller-runtime set
    /// one).
    pub record_events: bool,
    /// controller-runtime: how long the runnables take to stop after a graceful stop (the
    /// `drain` node key; the elector keeps renewing meanwhile, for at most
    /// [`GRACEFUL_SHUTDOWN_TIMEOUT`]).
    pub drain: Nanos,
    /// kube-lease-manager's `grace` and kubert's `renew_grace_period`: how long before its
    /// lease's expiry the holder renews (the `grace` node key).
    pub grace: Nanos,
    /// client-go's `Coordinated`: acquire and renew with `tryCoordinatedRenew` (never create or
    /// take the Lease; the election controller installs the holder).
    pub coordinated: bool,
}

/// controller-runtime's `defaultGracefulShutdownPeriod` (pkg/manager/internal.go:57).
pub const GRACEFUL_SHUTDOWN_TIMEOUT: Nanos = 30 * NANOS_PER_SEC;

impl ElectorConfig {
    /// The defaults of kube-controller-manager and controller-runtime: 15 s / 10 s / 2 s.
    /// Other libraries' defaults where they have their own (see [`default_durations`]).
    pub fn new(identity: &str, algorithm: Algorithm) -> Self {
        let (lease_duration, renew_deadline, retry_period, grace) = default_durations(algorithm);
        ElectorConfig {
            identity: identity.to_string(),
            lease_namespace: "default".into(),
            lease_name: "leasesim".into(),
            algorithm,
            lease_duration,
            renew_deadline,
            retry_period,
            jitter_factor: JITTER_FACTOR,
            release_on_cancel: false,
            request_timeout: default_request_timeout_for(algorithm, renew_deadline),
            // The Java client's `run()` returns and nothing calls it again; the C# client's
            // RunAndTryToHoldLeadershipForeverAsync re-runs in-process.
            after_lost: match algorithm {
                Algorithm::JavaClient => AfterLost::Exit,
                Algorithm::CSharpClient | Algorithm::CSharpClientPre2026 => AfterLost::Rejoin,
                _ => AfterLost::Restart { delay: 10 * NANOS_PER_SEC },
            },
            client_go: match algorithm {
                Algorithm::ClientGoLegacy => ClientGoVersion::LEGACY,
                Algorithm::ControllerRuntime => ClientGoVersion::CONTROLLER_RUNTIME,
                _ => ClientGoVersion::LATEST,
            },
            expiry: None,
            fast_path: None,
            labels: Vec::new(),
            record_events: false,
            drain: 0,
            grace,
            coordinated: false,
        }
    }

    /// The client-go release whose code this node runs, if it runs client-go's loop.
    pub fn client_go_version(&self) -> Option<ClientGoVersion> {
        match self.algorithm {
            Algorithm::ClientGo | Algorithm::ControllerRuntime => Some(self.client_go),
            Algorithm::ClientGoLegacy => Some(ClientGoVersion::LEGACY),
            _ => None,
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
        let (ld, rd, rp) = (self.lease_duration, self.renew_deadline, self.retry_period);
        match self.algorithm {
            // LeaderElectorBuilder.withConfig (Builder:46-72), in milliseconds; `new
            // LeaderElector(...)` skips it.
            Algorithm::Fabric8 => {
                let ms = |n: Nanos| n / 1_000_000;
                if ms(ld) <= ms(rd) {
                    return Err("leaseDuration must be greater than renewDeadline".into());
                }
                let rp_ms = ms(rp);
                let jitter_ms = (rp_ms * 12).div_ceil(10);
                if ms(rd) <= rp_ms + jitter_ms {
                    return Err("renewDeadline must be greater than retryPeriod + retryPeriod*JitterFactor".into());
                }
                if ms(ld) < 1 || ms(rd) < 1 || ms(rp) < 1 {
                    return Err("leaseDuration, renewDeadline and retryPeriod must be at least 1ms".into());
                }
                return Ok(());
            }
            // LeaderElector.java:71-105: LD > RD > RP > 0, no jitter factor.
            Algorithm::JavaClient => {
                if ld <= rd {
                    return Err("leaseDuration must be greater than renewDeadline".into());
                }
                if rd <= rp {
                    return Err("renewDeadline must be greater than retryPeriod".into());
                }
                if rp == 0 {
                    return Err("retryPeriod must be greater than zero".into());
                }
                return Ok(());
            }
            // kube-lease-manager manager.rs:317-335: whole seconds, 0 < grace < duration (the
            // builder's setters skip this; leasesim always checks).
            Algorithm::KubeLeaseManager => {
                let (ld_s, grace_s) = (ld / NANOS_PER_SEC, self.grace / NANOS_PER_SEC);
                if ld_s == 0 || grace_s == 0 {
                    return Err("duration and grace period should be greater than zero".into());
                }
                if grace_s >= ld_s {
                    return Err("grace period should be less than lease lock duration".into());
                }
                return Ok(());
            }
            // kube-coordinate lib.rs:240-286, in its order and words.
            Algorithm::KubeCoordinate => {
                if self.identity.is_empty() {
                    return Err("identity may not be empty".into());
                }
                if ld <= rd {
                    return Err("lease_duration must be greater than renew_deadline".into());
                }
                if rd <= (JITTER_FACTOR * rp as f64) as Nanos {
                    return Err("renew_deadline must be greater than retry_period*1.2".into());
                }
                if ld < NANOS_PER_SEC {
                    return Err("lease_duration must be at least 1 second".into());
                }
                if rd < NANOS_PER_SEC {
                    return Err("renew_deadline must be at least 1 second".into());
                }
                if rp < NANOS_PER_SEC {
                    return Err("retry_period must be at least 1 second".into());
                }
                if self.request_timeout.is_none_or(|t| t < NANOS_PER_SEC) {
                    return Err("api_timeout must be at least 1 second".into());
                }
                return Ok(());
            }
            // The C# client, the nestjs module, kubert and kube-leader-election validate nothing.
            Algorithm::CSharpClient
            | Algorithm::CSharpClientPre2026
            | Algorithm::NestJs
            | Algorithm::Kubert
            | Algorithm::KubeLeaderElection
            | Algorithm::RenewTimeUnfenced => return Ok(()),
            _ => {}
        }
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
        // v0.28.0 (client-go 0011bf6b0) added the identity check, last.
        if self.identity.is_empty() && self.client_go_version().is_none_or(|v| v.minor >= 28) {
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
///
/// The other libraries' timeouts (docs/algorithms.md has the sources):
/// - controller-runtime: `max(RD/2, 1s)` (leader_election.go:102-108), as client-go's;
/// - fabric8: the client's 10 s request timeout (Config:128);
/// - the Java client: OkHttp read timeout 0, i.e. none (ClientBuilder.java:70-71);
/// - the C# client: `HttpClientTimeout` 100 s (KubernetesClientConfiguration.cs:99);
/// - nestjs (client-node 0.20): none;
/// - kube-lease-manager (kube 4, `8cb0d011`): none;
/// - kube-coordinate: its `api_timeout`, 5 s (lib.rs:152-165);
/// - kubert: `API_TIMEOUT`, 10 s (lease.rs:164);
/// - kube-leader-election (kube 3): the read timeout, 295 s (kube 3.1.0 config/mod.rs:400-402).
pub fn default_request_timeout_for(algorithm: Algorithm, renew_deadline: Nanos) -> Option<Nanos> {
    match algorithm {
        Algorithm::PythonClient | Algorithm::JavaClient | Algorithm::NestJs | Algorithm::KubeLeaseManager => None,
        Algorithm::KubeCoordinate => Some(5 * NANOS_PER_SEC),
        Algorithm::Kubert => Some(10 * NANOS_PER_SEC),
        Algorithm::KubeLeaderElection | Algorithm::RenewTimeUnfenced => Some(295 * NANOS_PER_SEC),
        Algorithm::Fabric8 => Some(10 * NANOS_PER_SEC),
        Algorithm::CSharpClient | Algorithm::CSharpClientPre2026 => Some(100 * NANOS_PER_SEC),
        _ => Some((renew_deadline / 2).max(NANOS_PER_SEC)),
    }
}

/// (LeaseDuration, RenewDeadline, RetryPeriod, grace) by algorithm. client-go's callers,
/// controller-runtime (internal.go:54-57) and the C# client (LeaderElectionConfig.cs:7-11) use
/// 15/10/2; fabric8 and the Java client have no defaults (leasesim uses 15/10/2); nestjs renews
/// every `renewalInterval` = 10 s (the retry period here) with LD 20 s (service.ts:47-52; RD
/// unused). The Rust crates: kube-lease-manager LD 30 s, grace 5 s (manager.rs:24-26);
/// kube-coordinate 15/10/2 (lib.rs:152-165); kubert LD 30 s, grace 1 s (lease.rs:118-125);
/// kube-leader-election a ttl of 15 s polled every 5 s (its README; the retry period here).
/// RD and RP are unused by kube-lease-manager and kubert, RD by kube-leader-election.
pub fn default_durations(algorithm: Algorithm) -> (Nanos, Nanos, Nanos, Nanos) {
    let s = NANOS_PER_SEC;
    match algorithm {
        Algorithm::NestJs => (20 * s, 10 * s, 10 * s, 0),
        Algorithm::KubeLeaseManager => (30 * s, 10 * s, 2 * s, 5 * s),
        Algorithm::Kubert => (30 * s, 10 * s, 2 * s, s),
        Algorithm::KubeLeaderElection | Algorithm::RenewTimeUnfenced => (15 * s, 10 * s, 5 * s, 0),
        _ => (15 * s, 10 * s, 2 * s, 0),
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
