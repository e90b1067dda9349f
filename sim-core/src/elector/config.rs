//! Elector configuration, its errors, and client-go's validation of it.

use super::library::{Algorithm, ClientGoRelease};
use crate::time::{NANOS_PER_SEC, Nanos};

/// client-go's `JitterFactor` package constant.
pub const JITTER_FACTOR: f64 = 1.2;

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
    /// The library's release, an index into its [`Library::versions`](super::Library) (0: the
    /// newest modelled; the `version` node key).
    pub version: u8,
}

/// controller-runtime's `defaultGracefulShutdownPeriod` (pkg/manager/internal.go:57).
pub const GRACEFUL_SHUTDOWN_TIMEOUT: Nanos = 30 * NANOS_PER_SEC;

impl ElectorConfig {
    /// The defaults of kube-controller-manager and controller-runtime: 15 s / 10 s / 2 s.
    /// Other libraries' defaults where they have their own (see [`default_durations`]).
    pub fn new(identity: &str, algorithm: Algorithm) -> Self {
        let library = algorithm.library();
        let [lease_duration, renew_deadline, retry_period, grace] = library.durations;
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
            request_timeout: library.request_timeout.resolve(renew_deadline),
            after_lost: library.after_lost(),
            client_go: library.default_client_go().unwrap_or(ClientGoVersion::LATEST),
            expiry: None,
            fast_path: None,
            labels: Vec::new(),
            record_events: false,
            drain: 0,
            grace,
            coordinated: false,
            version: 0,
        }
    }

    /// The client-go release whose code this node runs, if it runs client-go's loop.
    pub fn client_go_version(&self) -> Option<ClientGoVersion> {
        match self.algorithm.library().client_go {
            ClientGoRelease::None => None,
            ClientGoRelease::Fixed(v) => Some(v),
            ClientGoRelease::Chosen(_) => Some(self.client_go),
        }
    }

    /// `int(LeaseDuration / time.Second)`: what the elector writes into the Lease.
    pub fn lease_duration_seconds(&self) -> i32 {
        (self.lease_duration / NANOS_PER_SEC).min(i32::MAX as u64) as i32
    }

    /// The node's library's own checks ([`super::Library::validate`]), in its order and words.
    pub fn validate(&self) -> Result<(), ConfigError> {
        (self.algorithm.library().validate)(self)
    }

    /// For the libraries that check nothing (the C# client, nestjs, kubert,
    /// kube-leader-election).
    pub(super) fn validate_nothing(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    /// client-go's `NewLeaderElector` checks, in client-go's order, with its exact messages
    /// (`leaderelection.go`). The Python client's own checks are not modelled: its nodes get
    /// these.
    pub(super) fn validate_client_go(&self) -> Result<(), ConfigError> {
        use ConfigKey::*;
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::ordering(RenewDeadline, "leaseDuration must be greater than renewDeadline"));
        }
        let bound = (JITTER_FACTOR * self.retry_period as f64) as Nanos;
        if self.renew_deadline <= bound {
            return Err(ConfigError::ordering(
                RenewDeadline,
                "renewDeadline must be greater than retryPeriod*JitterFactor",
            ));
        }
        if self.lease_duration < 1 {
            return Err(ConfigError::new(LeaseDuration, "leaseDuration must be greater than zero"));
        }
        if self.renew_deadline < 1 {
            return Err(ConfigError::new(RenewDeadline, "renewDeadline must be greater than zero"));
        }
        if self.retry_period < 1 {
            return Err(ConfigError::new(RetryPeriod, "retryPeriod must be greater than zero"));
        }
        // v0.28.0 (client-go 0011bf6b0) added the identity check, last.
        if self.identity.is_empty() && self.client_go_version().is_none_or(|v| v.minor >= 28) {
            return Err(ConfigError::new(Identity, "Lock identity is empty"));
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

/// A library's default request timeout for this RenewDeadline ([`super::Library::request_timeout`]:
/// client-go's `NewFromKubeconfig` sets `max(1s, RenewDeadline/2)`; `None` is "no timeout").
pub fn default_request_timeout_for(algorithm: Algorithm, renew_deadline: Nanos) -> Option<Nanos> {
    algorithm.library().request_timeout.resolve(renew_deadline)
}

/// Which node key a configuration error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigKey {
    LeaseDuration,
    RenewDeadline,
    RetryPeriod,
    Grace,
    RequestTimeout,
    Identity,
}

impl ConfigKey {
    /// The scenario file's key.
    pub fn name(self) -> &'static str {
        match self {
            ConfigKey::LeaseDuration => "lease_duration",
            ConfigKey::RenewDeadline => "renew_deadline",
            ConfigKey::RetryPeriod => "retry_period",
            ConfigKey::Grace => "grace",
            ConfigKey::RequestTimeout => "request_timeout",
            ConfigKey::Identity => "identity",
        }
    }
}

/// A library's refusal of a configuration: its own words, and the key they are about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub key: ConfigKey,
    pub message: String,
    /// An ordering rule between the durations (LD > RD > RP·jitter): what `unsafe = true` is
    /// for, so the message says so.
    pub ordering: bool,
}

impl ConfigError {
    pub fn new(key: ConfigKey, message: impl Into<String>) -> Self {
        ConfigError { key, message: message.into(), ordering: false }
    }

    pub fn ordering(key: ConfigKey, message: impl Into<String>) -> Self {
        ConfigError { key, message: message.into(), ordering: true }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.message)
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
            cfg(secs(10), secs(10), secs(2)).validate().unwrap_err().message,
            "leaseDuration must be greater than renewDeadline"
        );
        // 2 s × 1.2 = 2.4 s: a renew deadline of exactly 2.4 s is refused, 2.4 s + 1 ns is fine.
        assert_eq!(
            cfg(secs(15), 2_400_000_000, secs(2)).validate().unwrap_err().message,
            "renewDeadline must be greater than retryPeriod*JitterFactor"
        );
        assert_eq!(cfg(secs(15), 2_400_000_001, secs(2)).validate(), Ok(()));
        // An all-zero config fails the first check, not a "greater than zero" one.
        assert_eq!(cfg(0, 0, 0).validate().unwrap_err().message, "leaseDuration must be greater than renewDeadline");
        assert_eq!(cfg(secs(15), secs(10), 0).validate().unwrap_err().message, "retryPeriod must be greater than zero");
        let mut empty = cfg(secs(15), secs(10), secs(2));
        empty.identity.clear();
        assert_eq!(empty.validate().unwrap_err().message, "Lock identity is empty");
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
