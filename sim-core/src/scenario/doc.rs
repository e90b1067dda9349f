//! The scenario file's tables as serde reads them: durations as users write them, latency and
//! duration distributions, and one `…Doc` struct per table (`docs/scenarios.md` documents each
//! key). Plain data: turning them into a `WorldSpec` is `super`'s and `node`'s work.

use crate::model::DurationDist;
use crate::net::Latency;
use crate::rng::ComponentRng;
use crate::time::{Nanos, parse_duration};
use serde::de::Deserializer;
use serde::{Deserialize, Serialize, de};
use std::collections::BTreeMap;

/// A duration written as Kubernetes users write them: `"15s"`, `"1m30s"`, `"250ms"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(into = "String")]
pub struct Duration(pub Nanos);

impl From<Duration> for String {
    fn from(d: Duration) -> String {
        crate::time::format_duration(d.0)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration such as \"15s\", \"1m30s\" or \"250ms\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Duration, E> {
                parse_duration(s).map(Duration).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
                if v == 0 {
                    Ok(Duration(0))
                } else {
                    Err(E::custom(format!("the number {v} has no unit: write a duration such as \"{v}s\"")))
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
                self.visit_i64(v as i64)
            }
        }
        d.deserialize_any(V)
    }
}

/// A signed duration (`"-30s"`), for clock offsets and steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub struct SignedDuration(pub i64);

impl From<SignedDuration> for String {
    fn from(d: SignedDuration) -> String {
        let sign = if d.0 < 0 { "-" } else { "" };
        format!("{sign}{}", crate::time::format_duration(d.0.unsigned_abs()))
    }
}

impl<'de> Deserialize<'de> for SignedDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = SignedDuration;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a signed duration such as \"-30s\" or \"2m\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<SignedDuration, E> {
                let (neg, rest) = match s.trim().strip_prefix('-') {
                    Some(r) => (true, r),
                    None => (false, s.trim().strip_prefix('+').unwrap_or(s.trim())),
                };
                let ns = parse_duration(rest).map_err(E::custom)?;
                let ns = i64::try_from(ns).map_err(|_| E::custom(format!("duration {s:?} is too large")))?;
                Ok(SignedDuration(if neg { -ns } else { ns }))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SignedDuration, E> {
                if v == 0 {
                    Ok(SignedDuration(0))
                } else {
                    Err(E::custom(format!("the number {v} has no unit: write a duration such as \"{v}s\"")))
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SignedDuration, E> {
                self.visit_i64(v as i64)
            }
        }
        d.deserialize_any(V)
    }
}

/// A latency: `"2ms"`, `{ uniform = ["1ms", "5ms"] }`, `{ exponential = { floor = "1ms", mean =
/// "2ms" } }` or `{ mixture = [{ weight = 0.99, latency = "2ms" }, { weight = 0.01, latency =
/// "800ms" }] }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LatencyDoc {
    Fixed(Duration),
    Shaped(LatencyShape),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LatencyShape {
    Uniform([Duration; 2]),
    Exponential { floor: Duration, mean: Duration },
    Mixture(Vec<MixturePart>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixturePart {
    pub weight: f64,
    pub latency: LatencyDoc,
}

impl LatencyDoc {
    pub(super) fn to_latency(&self) -> Latency {
        match self {
            LatencyDoc::Fixed(d) => Latency::Fixed(d.0),
            LatencyDoc::Shaped(LatencyShape::Uniform([a, b])) => Latency::Uniform { min: a.0, max: b.0 },
            LatencyDoc::Shaped(LatencyShape::Exponential { floor, mean }) => {
                Latency::Exponential { floor: floor.0, mean: mean.0 }
            }
            LatencyDoc::Shaped(LatencyShape::Mixture(parts)) => {
                Latency::Mixture(parts.iter().map(|p| (p.weight, p.latency.to_latency())).collect())
            }
        }
    }
}

/// A random duration: `"5s"`, `{ uniform = ["1s", "20s"] }`, `{ exponential = "5s" }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DurationDistDoc {
    Fixed(Duration),
    Shaped(DurationShape),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DurationShape {
    Uniform([Duration; 2]),
    Exponential(Duration),
}

impl DurationDistDoc {
    pub(super) fn to_dist(&self) -> DurationDist {
        match self {
            DurationDistDoc::Fixed(d) => DurationDist::Fixed(d.0),
            DurationDistDoc::Shaped(DurationShape::Uniform([a, b])) => DurationDist::Uniform { min: a.0, max: b.0 },
            DurationDistDoc::Shaped(DurationShape::Exponential(m)) => DurationDist::Exponential { mean: m.0 },
        }
    }
}

/// A number drawn per node: `{ uniform = [-50, 50] }` or `{ normal = [0, 20] }` (mean, std).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum NumberDist {
    Uniform([f64; 2]),
    Normal([f64; 2]),
}

impl NumberDist {
    pub(super) fn sample(&self, rng: &mut ComponentRng) -> f64 {
        match *self {
            NumberDist::Uniform([a, b]) => a + (b - a) * rng.unit_f64(),
            NumberDist::Normal([mean, std]) => rng.normal(mean, std),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepDoc {
    pub at: Duration,
    pub delta: SignedDuration,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WanderDoc {
    pub amplitude: Duration,
    pub period: Duration,
    #[serde(default)]
    pub phase: f64,
}

/// A node's clock. Every field is optional so node entries can override single keys of
/// `[defaults.clock]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockDoc {
    pub offset: Option<SignedDuration>,
    pub drift_ppm: Option<f64>,
    pub steps: Option<Vec<StepDoc>>,
    pub wander: Option<WanderDoc>,
    /// Draw the offset (in seconds) per node from the run's seed.
    pub offset_seconds_dist: Option<NumberDist>,
    /// Draw the drift (ppm) per node from the run's seed.
    pub drift_ppm_dist: Option<NumberDist>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionDoc {
    pub latency: Option<LatencyDoc>,
    pub loss: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkDoc {
    /// Both directions' latency (each direction can override it).
    pub latency: Option<LatencyDoc>,
    pub loss: Option<f64>,
    pub up: Option<DirectionDoc>,
    pub down: Option<DirectionDoc>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcilerDoc {
    /// `apply`, `apply-force`, `create`, `update` (read, then update without a precondition) or
    /// `fenced-update`.
    pub mode: Option<String>,
    pub period: Option<Duration>,
    pub object: Option<String>,
    pub field: Option<String>,
    /// `identity` (each node its own manager) or any other string (one shared manager).
    pub field_manager: Option<String>,
    /// Client-side timeout of each reconciler request (default 2s).
    pub timeout: Option<Duration>,
    /// `{ at = "30s", requests = 100, every = "60s" }`: bursts of extra GETs of the child.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<BurstDoc>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstDoc {
    pub at: Duration,
    pub requests: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every: Option<Duration>,
}

/// `client_limiter = { qps = 5.0, burst = 10, shared = true }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientLimiterDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<bool>,
}

/// Everything a node can set; `[defaults]` has the same keys.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeDoc {
    pub identity: Option<String>,
    pub algorithm: Option<String>,
    pub lease_duration: Option<Duration>,
    pub renew_deadline: Option<Duration>,
    pub retry_period: Option<Duration>,
    pub jitter_factor: Option<f64>,
    pub release_on_cancel: Option<bool>,
    pub request_timeout: Option<Duration>,
    /// `restart`, `exit` or `rejoin`.
    pub after_lost: Option<String>,
    pub restart_delay: Option<Duration>,
    /// When the process starts: `"2s"`, or drawn per seed, `{ uniform = ["0s", "100ms"] }`.
    pub start_at: Option<DurationDistDoc>,
    /// For `algorithm = "client-go"`: the release the node runs, `"v0.26"` … `"v0.37"`.
    pub client_go: Option<String>,
    /// For other libraries with more than one release modelled: the release (the Python
    /// client's `"37.0.0"`, `"37.0.0a1"`, `"36.0.3"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Overrides the algorithm's expiry rule: `observed-time` or `renew-time`.
    pub expiry: Option<String>,
    /// Overrides whether the leader renews with an optimistic update without a Get.
    pub fast_path: Option<bool>,
    /// Labels the lock sets on the Lease (client-go ≥ v0.34 `NewWithLabels`).
    pub labels: Option<BTreeMap<String, String>>,
    /// Record "became leader" / "stopped leading" Events (default: true for client-go).
    pub events: Option<bool>,
    /// A liveness probe on client-go's leader-election health check.
    pub healthz: Option<Box<HealthzDoc>>,
    /// When the leader's work stops after its elector says it stopped leading: `"at-once"`
    /// (default), a duration (`"8s"`: shutdown hooks that block), or `"never"` (until the process
    /// exits: workers on the process context).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_acting: Option<String>,
    /// A fresh identity at every process start, `<identity>_<uuid>` (kube-controller-manager,
    /// kube-scheduler and controller-runtime's default build `hostname + "_" + uuid` at start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_per_start: Option<bool>,
    /// How the kubelet spaces the restarts it makes (after a liveness kill, or an exit with
    /// `after_lost = "restart"`): `"fixed"` (default: `restart_delay`) or `"crashloop"`
    /// (CrashLoopBackOff: at once, then 10 s doubling to 5 min, reset after 10 min up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_backoff: Option<String>,
    /// client-go's client-side rate limiter: `{ qps = 5.0, burst = 10, shared = false }`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_limiter: Option<ClientLimiterDoc>,
    /// Coordinated leader election (client-go `Coordinated`, v0.31+): register a LeaseCandidate
    /// and let the apiserver's election controller pick the holder.
    pub coordinated: Option<bool>,
    /// The LeaseCandidate's binaryVersion (default "1.33.0").
    pub binary_version: Option<String>,
    /// Its emulationVersion (default: the binary version).
    pub emulation_version: Option<String>,
    /// controller-runtime: how long the runnables take to finish after a graceful stop
    /// (default 0; the elector is cancelled after it, or after 30 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<Duration>,
    /// kube-lease-manager's `grace` (default 5 s) and kubert's `renew_grace_period` (1 s): how
    /// long before its lease's expiry the holder renews.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace: Option<Duration>,
    /// The reconciler's value for this node (default: A, B, C… by position).
    pub value: Option<String>,
    /// Who the process authenticates as (default: the service account named after it).
    pub user: Option<String>,
    pub lease_field_manager: Option<String>,
    /// The Lease this node elects on (default: `[lease] name`): nodes on different Leases run
    /// independent elections side by side in one run.
    pub lease_name: Option<String>,
    // Boxed, like `healthz`: a fleet's nodes rarely set them, and inline they were half of a
    // node's table in memory (496 of 1,088 bytes), kept for the whole run.
    pub clock: Option<Box<ClockDoc>>,
    pub network: Option<Box<NetworkDoc>>,
    pub reconciler: Option<Box<ReconcilerDoc>>,
}

/// `healthz = { tolerance = "20s", period = "10s", failure_threshold = 8 }`: client-go's
/// `HealthzAdaptor` (kube-controller-manager: `NewLeaderHealthzAdaptor(20 * time.Second)`) probed
/// as the kubelet probes a container (kubeadm's kube-controller-manager liveness probe: initial
/// delay 10 s, period 10 s, timeout 15 s, failure threshold 8).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthzDoc {
    pub tolerance: Option<Duration>,
    pub period: Option<Duration>,
    pub failure_threshold: Option<u32>,
    pub initial_delay: Option<Duration>,
    /// How long a probe waits for an answer (a paused process never answers).
    pub timeout: Option<Duration>,
    /// How long after the kill the kubelet starts the container again.
    pub restart_delay: Option<Duration>,
    /// What the endpoint checks: `leader-election` (client-go's watchdog, the default) or
    /// `ping` (a plain liveness endpoint, any library).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseDoc {
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// Run configurations client-go refuses for the nodes electing on this Lease only.
    #[serde(rename = "unsafe")]
    pub unsafe_mode: Option<bool>,
}

/// `[leases."<name>"]`: settings of a Lease other nodes elect on (`lease_name`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseOptionsDoc {
    #[serde(rename = "unsafe")]
    pub unsafe_mode: Option<bool>,
    /// The Lease's namespace (default `[lease] namespace`): its nodes' ServiceAccounts, RBAC
    /// and reconciled objects live there too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultDoc {
    pub at: Duration,
    /// A node identity; or use `target`.
    pub node: Option<String>,
    /// `holder`, `random`, `non-holder` or `server`.
    pub target: Option<String>,
    pub kind: String,
    pub duration: Option<Duration>,
    pub cut: Option<String>,
    /// For partitions: `drop` (default), `hold` or `refuse`.
    pub mode: Option<String>,
    pub delay: Option<Duration>,
    pub delta: Option<SignedDuration>,
    pub extra: Option<Duration>,
    /// For `work` faults: `returns`, `raises` or `blocks`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ends: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomFaultDoc {
    pub name: String,
    pub kind: String,
    /// A node identity, `holder`, `random`, `non-holder` or `server`.
    pub target: String,
    pub mean_interval: Duration,
    pub from: Option<Duration>,
    pub until: Option<Duration>,
    pub duration: Option<DurationDistDoc>,
    pub restart_after: Option<DurationDistDoc>,
    pub delta: Option<DurationDistDoc>,
    pub backwards: Option<bool>,
    pub cut: Option<String>,
    pub mode: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowDoc {
    pub from: Duration,
    pub duration: Duration,
    pub extra: Option<Duration>,
    /// For outages: `drop` (default), `hold` or `refuse`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerDoc {
    pub outages: Option<Vec<WindowDoc>>,
    pub slowdowns: Option<Vec<WindowDoc>>,
    pub errors: Option<Vec<ServerErrorDoc>>,
    /// The kube-apiserver's clock: `offset`, `drift_ppm` (its leader-election controller
    /// compares the holders' renewTimes with it).
    pub clock: Option<ClockDoc>,
}

/// `[[server.errors]]`: answer matching requests with an error (see [`crate::model::ServerErrorRule`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerErrorDoc {
    pub from: Duration,
    pub duration: Duration,
    /// 409, 429, 500, 503 or 504.
    pub code: u16,
    /// `get`, `create`, `update`, `patch`, `apply`, `delete` or `list`.
    pub verb: Option<String>,
    /// `leases`, `configmaps`, `events`, …
    pub resource: Option<String>,
    pub node: Option<String>,
    pub probability: Option<f64>,
    pub retry_after: Option<Duration>,
    pub message: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionDoc {
    pub name: String,
    pub at: Duration,
    /// `admin` (default), a node identity (its service account), or a full user name.
    #[serde(rename = "as")]
    pub as_user: Option<String>,
    /// `get`, `create`, `update`, `merge-patch`, `apply`, `delete` or `can-i`.
    pub verb: String,
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub object: Option<String>,
    pub body: Option<serde_json::Value>,
    pub patch: Option<serde_json::Value>,
    pub field_manager: Option<String>,
    pub force: Option<bool>,
    /// For can-i: the verb asked about.
    pub can_i_verb: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RbacDoc {
    /// Create the service accounts and a Role/RoleBinding that let every node elect and
    /// reconcile (default true).
    pub auto: Option<bool>,
}
