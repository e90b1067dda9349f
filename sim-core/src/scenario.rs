//! The scenario model: the human-written description of one experiment, as scenario files
//! hold it (`docs/scenarios.md` documents every key), and its conversion into a [`WorldSpec`].
//!
//! This module knows serde, not TOML: `sim-cli` parses the file and hands the value here. Errors
//! carry the path of the offending key (`faults[2].node`) so the caller can point at its line
//! and column.

use crate::api::{Kind, User};
use crate::clock::{ClockSpec, ClockStep, Wander};
use crate::elector::{AfterLost, Algorithm, ElectorConfig, default_request_timeout_for};
use crate::model::{
    ActionOp, DurationDist, FaultKind, FieldManager, NodeSpec, RandomFault, RandomFaultKind, ReconcileMode,
    ReconcilerSpec, ScriptedAction, Target, TimedFault, WorldSpec,
};
use crate::net::{Cut, DirectionSpec, Latency, LinkSpec, ServerAvailability};
use crate::rng::ComponentRng;
use crate::time::{Nanos, UnixNanos, parse_duration};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
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
    fn to_latency(&self) -> Latency {
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
    fn to_dist(&self) -> DurationDist {
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
    fn sample(&self, rng: &mut ComponentRng) -> f64 {
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
    /// Overrides the algorithm's expiry rule: `observed-time` or `renew-time`.
    pub expiry: Option<String>,
    /// Overrides whether the leader renews with an optimistic update without a Get.
    pub fast_path: Option<bool>,
    /// Labels the lock sets on the Lease (client-go ≥ v0.34 `NewWithLabels`).
    pub labels: Option<BTreeMap<String, String>>,
    /// Record "became leader" / "stopped leading" Events (default: true for client-go).
    pub events: Option<bool>,
    /// A liveness probe on client-go's leader-election health check.
    pub healthz: Option<HealthzDoc>,
    /// When the leader's work stops after its elector says it stopped leading: `"at-once"`
    /// (default), a duration (`"8s"`: shutdown hooks that block), or `"never"` (until the process
    /// exits: workers on the process context).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_acting: Option<String>,
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
    pub clock: Option<ClockDoc>,
    pub network: Option<NetworkDoc>,
    pub reconciler: Option<ReconcilerDoc>,
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

/// A whole scenario file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub duration: Duration,
    #[serde(default)]
    pub seed: u64,
    #[serde(default, rename = "unsafe")]
    pub unsafe_mode: bool,
    /// RFC 3339 wall-clock time of true time 0 (default 2026-01-01T00:00:00Z).
    pub epoch: Option<String>,
    /// A real cluster's Lease dump (`kubectl get lease -A -o yaml`) to start from: its Leases
    /// are created before the run and the epoch becomes the dump's latest renewTime. Read by
    /// `sim-cli` (this crate reads no files).
    pub from_cluster: Option<String>,
    #[serde(default)]
    pub lease: LeaseDoc,
    /// Per-Lease settings, by Lease name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub leases: BTreeMap<String, LeaseOptionsDoc>,
    #[serde(default)]
    pub defaults: NodeDoc,
    #[serde(default)]
    pub nodes: Vec<NodeDoc>,
    #[serde(default)]
    pub faults: Vec<FaultDoc>,
    #[serde(default)]
    pub random_faults: Vec<RandomFaultDoc>,
    #[serde(default)]
    pub server: ServerDoc,
    #[serde(default)]
    pub rbac: RbacDoc,
    #[serde(default)]
    pub objects: Vec<serde_json::Value>,
    #[serde(default)]
    pub actions: Vec<ActionDoc>,
    /// Assertions checked after the run: `dual_leader_seconds == 0`, `lease_transitions >= 3`,
    /// `action "apply-b" fails with conflict`.
    #[serde(default)]
    pub expect: Vec<String>,
}

/// A problem in a scenario, with the path of the key at fault.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    /// Keys and indices from the top: `["faults", "2", "node"]`.
    pub path: Vec<String>,
    pub message: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}: {}", display_path(&self.path), self.message)
    }
}

pub fn display_path(path: &[String]) -> String {
    let mut out = String::new();
    for seg in path {
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
    }
    out
}

fn err(path: &[&str], message: impl Into<String>) -> ScenarioError {
    ScenarioError { path: path.iter().map(|s| s.to_string()).collect(), message: message.into() }
}

fn parse_rfc3339_seconds(s: &str) -> Option<UnixNanos> {
    // YYYY-MM-DDTHH:MM:SS[.frac]Z
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    let rest = &s[19..];
    let (frac, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            (&r[..end], &r[end..])
        }
        None => ("", rest),
    };
    if zone != "Z" || !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut nanos: i64 = 0;
    for (i, c) in frac.bytes().take(9).enumerate() {
        nanos += (c - b'0') as i64 * 10i64.pow(8 - i as u32);
    }
    let days = crate::time::days_from_civil(y, mo as u32, d as u32);
    Some(((days * 86_400 + h * 3600 + mi * 60 + se) * 1_000_000_000) + nanos)
}

pub fn parse_epoch(s: &str) -> Result<UnixNanos, String> {
    parse_rfc3339_seconds(s)
        .ok_or_else(|| format!("{s:?} is not an RFC 3339 UTC time such as \"2026-01-01T00:00:00Z\""))
}

impl Scenario {
    pub fn identities(&self) -> Vec<String> {
        self.nodes.iter().enumerate().map(|(i, n)| n.identity.clone().unwrap_or_else(|| format!("node-{i}"))).collect()
    }

    /// Builds the runtime spec. `trace` turns the event trace on.
    pub fn to_world_spec(&self, trace: bool) -> Result<WorldSpec, ScenarioError> {
        if self.duration.0 == 0 {
            return Err(err(&["duration"], "must be greater than zero"));
        }
        if self.duration.0 > MAX_DURATION_NS {
            return Err(err(
                &["duration"],
                format!(
                    "{} is longer than the simulator supports ({}: the runs it is built for last minutes to days, \
                     and its timestamps stay exact to the nanosecond only that far)",
                    crate::time::format_duration(self.duration.0),
                    crate::time::format_duration(MAX_DURATION_NS)
                ),
            ));
        }
        if self.nodes.is_empty() && self.actions.is_empty() {
            return Err(err(
                &["nodes"],
                "a scenario needs at least one [[nodes]] entry (or only scripted [[actions]])",
            ));
        }
        let epoch = match &self.epoch {
            Some(s) => parse_epoch(s).map_err(|m| err(&["epoch"], m))?,
            None => crate::time::DEFAULT_EPOCH_UNIX_NANOS,
        };
        let namespace = self.lease.namespace.clone().unwrap_or_else(|| "default".into());
        let lease_name = self.lease.name.clone().unwrap_or_else(|| "leasesim".into());
        check_name(Kind::Namespace, &namespace, "the namespace").map_err(|m| err(&["lease", "namespace"], m))?;
        check_name(Kind::Lease, &lease_name, "a Lease name").map_err(|m| err(&["lease", "name"], m))?;
        let identities = self.identities();
        let mut seen = std::collections::BTreeSet::new();
        for (i, id) in identities.iter().enumerate() {
            if !seen.insert(id.clone()) {
                return Err(err(&["nodes", &i.to_string(), "identity"], format!("{id:?} is used by two nodes")));
            }
        }
        let node_index = |name: &str, path: &[&str]| -> Result<usize, ScenarioError> {
            identities.iter().position(|id| id == name).ok_or_else(|| {
                let hint = did_you_mean(name, identities.iter().map(String::as_str));
                err(path, format!("no node is named {name:?}{hint}; nodes: {}", identities.join(", ")))
            })
        };
        let mut nodes = Vec::new();
        for (i, doc) in self.nodes.iter().enumerate() {
            nodes.push(self.node_spec(i, doc, &identities[i], &namespace, &lease_name)?);
        }
        let nodes_unsafe: bool = nodes.iter().any(|n: &NodeSpec| n.elector.validate().is_err());
        for name in self.leases.keys() {
            if !nodes.iter().any(|n| &n.elector.lease_name == name) {
                return Err(err(
                    &["leases", name],
                    format!("no node elects on a Lease named {name:?} (set `lease_name` on the nodes that do)"),
                ));
            }
        }
        let mut faults = Vec::new();
        for (i, f) in self.faults.iter().enumerate() {
            let idx = i.to_string();
            let p = |k: &'static str| -> Vec<&str> { vec!["faults", idx.as_str(), k] };
            if f.at.0 > self.duration.0 {
                return Err(err(
                    &p("at"),
                    format!(
                        "{} is beyond the run's duration of {}",
                        crate::time::format_duration(f.at.0),
                        crate::time::format_duration(self.duration.0)
                    ),
                ));
            }
            let target = match (&f.node, &f.target) {
                (Some(n), None) => Target::Node(node_index(n, &p("node"))?),
                (None, Some(t)) => parse_target(t, &node_index).map_err(|m| err(&p("target"), m))?,
                (None, None) if is_server_fault(&f.kind) => Target::Server,
                (None, None) => return Err(err(&p("kind"), "a node fault needs `node = \"<identity>\"` or `target`")),
                (Some(_), Some(_)) => return Err(err(&p("target"), "give either `node` or `target`, not both")),
            };
            let need = |v: Option<Duration>, key: &'static str| {
                v.map(|d| d.0).ok_or_else(|| err(&p("kind"), format!("a {} fault needs `{key}`", f.kind)))
            };
            let kind = match f.kind.as_str() {
                "crash" => FaultKind::Crash,
                "restart" => FaultKind::Restart { delay: f.delay.map(|d| d.0).unwrap_or(0) },
                "pause" => FaultKind::Pause { duration: need(f.duration, "duration")? },
                "stop" => FaultKind::Stop,
                "clock-step" => FaultKind::ClockStep {
                    delta_ns: f.delta.ok_or_else(|| err(&p("kind"), "a clock-step fault needs `delta`"))?.0,
                },
                "partition" => FaultKind::Partition {
                    duration: need(f.duration, "duration")?,
                    cut: parse_cut(f.cut.as_deref()).map_err(|m| err(&p("cut"), m))?,
                    mode: parse_mode(f.mode.as_deref()).map_err(|m| err(&p("mode"), m))?,
                },
                "server-outage" => FaultKind::ServerOutage { duration: need(f.duration, "duration")? },
                "server-slow" => {
                    FaultKind::ServerSlow { duration: need(f.duration, "duration")?, extra: need(f.extra, "extra")? }
                }
                other => {
                    return Err(err(
                        &p("kind"),
                        format!(
                            "unknown fault kind {other:?}{}; expected one of {}",
                            did_you_mean(other, FAULT_KINDS.iter().copied()),
                            FAULT_KINDS.join(", ")
                        ),
                    ));
                }
            };
            faults.push(TimedFault { at: f.at.0, target, kind });
        }
        let mut random_faults = Vec::new();
        for (i, f) in self.random_faults.iter().enumerate() {
            let idx = i.to_string();
            let p = |k: &'static str| -> Vec<&str> { vec!["random_faults", idx.as_str(), k] };
            let target = parse_target(&f.target, &node_index).map_err(|m| err(&p("target"), m))?;
            let dist = |v: &Option<DurationDistDoc>, key: &'static str| {
                v.as_ref()
                    .map(|d| d.to_dist())
                    .ok_or_else(|| err(&p("kind"), format!("a random {} fault needs `{key}`", f.kind)))
            };
            let kind = match f.kind.as_str() {
                "crash" => RandomFaultKind::Crash,
                "crash-restart" => {
                    RandomFaultKind::CrashRestart { restart_after: dist(&f.restart_after, "restart_after")? }
                }
                "pause" => RandomFaultKind::Pause { duration: dist(&f.duration, "duration")? },
                "stop" => RandomFaultKind::Stop,
                "partition" => RandomFaultKind::Partition {
                    duration: dist(&f.duration, "duration")?,
                    cut: parse_cut(f.cut.as_deref()).map_err(|m| err(&p("cut"), m))?,
                    mode: parse_mode(f.mode.as_deref()).map_err(|m| err(&p("mode"), m))?,
                },
                "clock-step" => RandomFaultKind::ClockStep {
                    delta: dist(&f.delta, "delta")?,
                    backwards: f.backwards.unwrap_or(false),
                },
                "server-outage" => RandomFaultKind::ServerOutage { duration: dist(&f.duration, "duration")? },
                other => {
                    return Err(err(
                        &p("kind"),
                        format!(
                            "unknown random fault kind {other:?}{}; expected one of {}",
                            did_you_mean(other, RANDOM_FAULT_KINDS.iter().copied()),
                            RANDOM_FAULT_KINDS.join(", ")
                        ),
                    ));
                }
            };
            if f.mean_interval.0 < MIN_MEAN_INTERVAL_NS {
                return Err(err(
                    &p("mean_interval"),
                    format!(
                        "{} is below the shortest mean interval of a random fault process, {} (more often than any \
                         request can complete, and every occurrence is drawn before the run starts)",
                        crate::time::format_duration(f.mean_interval.0),
                        crate::time::format_duration(MIN_MEAN_INTERVAL_NS)
                    ),
                ));
            }
            random_faults.push(RandomFault {
                key: f.name.clone(),
                mean_interval: f.mean_interval.0,
                from: f.from.map(|d| d.0).unwrap_or(0),
                until: f.until.map(|d| d.0).unwrap_or(self.duration.0),
                target,
                kind,
            });
        }
        let mut server = ServerAvailability::default();
        for w in self.server.outages.iter().flatten() {
            server.outages.push((w.from.0, w.from.0 + w.duration.0));
        }
        for (i, w) in self.server.slowdowns.iter().flatten().enumerate() {
            let extra = w
                .extra
                .ok_or_else(|| err(&["server", "slowdowns", &i.to_string(), "extra"], "a slowdown needs `extra`"))?;
            server.slowdowns.push((w.from.0, w.from.0 + w.duration.0, extra.0));
        }
        let mut server_errors = Vec::new();
        for (i, e) in self.server.errors.iter().flatten().enumerate() {
            let idx = i.to_string();
            let p = |k: &'static str| -> Vec<&str> { vec!["server", "errors", idx.as_str(), k] };
            if !matches!(e.code, 409 | 429 | 500 | 503 | 504) {
                return Err(err(
                    &p("code"),
                    format!("{} is not an error leasesim injects; expected 409, 429, 500, 503 or 504", e.code),
                ));
            }
            let verb = match &e.verb {
                None => None,
                Some(v) => Some(crate::api::Verb::parse(v).ok_or_else(|| {
                    err(
                        &p("verb"),
                        format!("unknown verb {v:?}; expected get, list, create, update, patch, apply or delete"),
                    )
                })?),
            };
            let kind = match &e.resource {
                None => None,
                Some(r) => Some(Kind::parse(r).ok_or_else(|| err(&p("resource"), format!("unknown resource {r:?}")))?),
            };
            let node = match &e.node {
                None => None,
                Some(n) => Some(node_index(n, &p("node"))?),
            };
            let probability = e.probability.unwrap_or(1.0);
            if !(0.0..=1.0).contains(&probability) {
                return Err(err(&p("probability"), format!("{probability} must be between 0 and 1")));
            }
            if e.retry_after.is_some() && matches!(e.code, 409 | 504) {
                return Err(err(&p("retry_after"), format!("the API server sends no Retry-After with a {}", e.code)));
            }
            let default_message = match e.code {
                500 => "etcdserver: request timed out",
                503 => "apiserver is shutting down",
                _ => "",
            };
            server_errors.push(crate::model::ServerErrorRule {
                from: e.from.0,
                until: e.from.0.saturating_add(e.duration.0),
                verb,
                kind,
                node,
                probability,
                code: e.code,
                // APF's 429 always carries one (its minimum is 1 s); so does the shutdown 503
                // (apiserver `waitGroupWriteRetryAfterToResponse`: `Retry-After: 1`).
                retry_after: e
                    .retry_after
                    .map(|d| d.0)
                    .or((e.code == 429 || (e.code == 503 && e.message.is_none())).then_some(1_000_000_000)),
                message: e.message.clone().unwrap_or_else(|| default_message.to_string()),
            });
        }
        let mut actions = Vec::new();
        for (i, a) in self.actions.iter().enumerate() {
            actions.push(self.action(i, a, &identities, &namespace, &lease_name)?);
        }
        let mut setup_objects = Vec::new();
        if self.rbac.auto.unwrap_or(true) {
            let accounts: Vec<String> = self
                .nodes
                .iter()
                .zip(&identities)
                .filter(|(n, _)| n.user.is_none() && self.defaults.user.is_none())
                .map(|(_, id)| id.clone())
                .collect();
            let events = nodes.iter().any(|n| n.elector.record_events);
            let candidates = nodes.iter().any(|n| n.candidacy.is_some());
            setup_objects.extend(crate::model::default_rbac_objects_for(&namespace, &accounts, events, candidates));
        } else if namespace != "default" && namespace != "kube-system" {
            setup_objects
                .push(serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}));
        }
        setup_objects.extend(self.objects.iter().cloned());
        // The apiserver's clock: an offset and a drift, as a node's (no steps or wander).
        let server_clock = match &self.server.clock {
            None => ClockSpec::default(),
            Some(c) => {
                if c.wander.is_some() || c.offset_seconds_dist.is_some() || c.drift_ppm_dist.is_some() {
                    return Err(err(
                        &["server", "clock"],
                        "the apiserver's clock takes offset, drift_ppm and steps only",
                    ));
                }
                let drift_ppm = c.drift_ppm.unwrap_or(0.0);
                if !(MIN_DRIFT_PPM..=MAX_DRIFT_PPM).contains(&drift_ppm) {
                    return Err(err(
                        &["server", "clock", "drift_ppm"],
                        format!("drift_ppm {drift_ppm} is outside {MIN_DRIFT_PPM} to {MAX_DRIFT_PPM}"),
                    ));
                }
                ClockSpec {
                    offset_ns: c.offset.map_or(0, |o| o.0),
                    drift_ppb: (drift_ppm * 1000.0).round() as i64,
                    steps: c.steps.iter().flatten().map(|s| ClockStep { at: s.at.0, delta_ns: s.delta.0 }).collect(),
                    ..ClockSpec::default()
                }
            }
        };
        let spec = WorldSpec {
            seed: self.seed,
            duration: self.duration.0,
            epoch,
            nodes,
            server,
            server_errors,
            faults,
            random_faults,
            actions,
            setup_objects,
            // Unsafe only if a configuration client-go refuses actually runs.
            unsafe_mode: nodes_unsafe,
            trace,
            server_clock,
        };
        spec.validate().map_err(|m| err(&["nodes"], m))?;
        Ok(spec)
    }

    /// Where in the file the setup object `index` of its world spec came from (the automatic
    /// RBAC objects come first, then `[[objects]]`), and what to say when the API server refuses
    /// it with `message` (`World::new` seeds them: see [`crate::world::SetupError`]).
    pub fn setup_object_error(&self, spec: &WorldSpec, index: usize, message: &str) -> ScenarioError {
        let automatic = spec.setup_objects.len() - self.objects.len();
        if index < automatic {
            err(
                &["rbac", "auto"],
                format!("the automatic RBAC objects cannot be created: {message} (set auto = false to write your own)"),
            )
        } else {
            let i = (index - automatic).to_string();
            err(&["objects", &i], format!("the API server refuses this object: {message}"))
        }
    }

    fn node_spec(
        &self,
        i: usize,
        doc: &NodeDoc,
        identity: &str,
        namespace: &str,
        lease_name: &str,
    ) -> Result<NodeSpec, ScenarioError> {
        let d = &self.defaults;
        let idx = i.to_string();
        let p = |k: &'static str| -> Vec<String> { vec!["nodes".into(), idx.clone(), k.into()] };
        let perr = |k: &'static str, m: String| ScenarioError { path: p(k), message: m };
        macro_rules! pick {
            ($field:ident) => {
                doc.$field.clone().or_else(|| d.$field.clone())
            };
        }
        let algorithm_name = pick!(algorithm).unwrap_or_else(|| "client-go".into());
        let algorithm = Algorithm::parse(&algorithm_name).ok_or_else(|| {
            let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
            perr(
                "algorithm",
                format!(
                    "unknown algorithm {algorithm_name:?}{}; expected one of {}",
                    did_you_mean(&algorithm_name, names.iter().copied()),
                    names.join(", ")
                ),
            )
        })?;
        let mut elector = ElectorConfig::new(identity, algorithm);
        // Version, expiry and fast path: a node's own key must fit its algorithm; a default
        // applies only to the nodes it fits.
        let is_client_go = matches!(algorithm, Algorithm::ClientGo | Algorithm::ControllerRuntime);
        if let Some(v) = &doc.client_go
            && !is_client_go
        {
            return Err(perr(
                "client_go",
                format!(
                    "{v:?} names a client-go release, but this node runs {algorithm_name:?}{}",
                    if algorithm == Algorithm::ClientGoLegacy {
                        " (client-go-legacy is client-go v0.26: write algorithm = \"client-go\" with client_go instead)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if let Some(v) = pick!(client_go).filter(|_| is_client_go) {
            elector.client_go = crate::elector::ClientGoVersion::parse(&v).map_err(|m| perr("client_go", m))?;
        }
        if !algorithm.runs_client_go_loop() {
            for (key, set) in [("expiry", doc.expiry.is_some()), ("fast_path", doc.fast_path.is_some())] {
                if set {
                    let who = if algorithm == Algorithm::PythonClient {
                        "the Python client".to_string()
                    } else {
                        algorithm_name.clone()
                    };
                    return Err(perr(
                        if key == "expiry" { "expiry" } else { "fast_path" },
                        format!("{who} has its own loop; `{key}` applies to the client-go and renew-time algorithms"),
                    ));
                }
            }
        } else {
            if let Some(e) = pick!(expiry) {
                elector.expiry = Some(crate::elector::ExpiryRule::parse(&e).ok_or_else(|| {
                    perr("expiry", format!("unknown expiry rule {e:?}; expected observed-time or renew-time"))
                })?);
            }
            elector.fast_path = pick!(fast_path);
        }
        if let Some(labels) = pick!(labels) {
            if elector.client_go_version().is_none_or(|v| v.minor < 34) {
                return Err(perr(
                    "labels",
                    "Lease labels need client-go v0.34 or later (resourcelock.NewWithLabels arrived in v0.34.0)".into(),
                ));
            }
            for (k, v) in &labels {
                crate::api::check_label(k, v).map_err(|m| perr("labels", m))?;
            }
            elector.labels = labels.into_iter().collect();
        }
        if elector.client_go_version().is_some() {
            elector.record_events = pick!(events).unwrap_or(true);
        } else if doc.events == Some(true) {
            return Err(perr(
                "events",
                format!("{algorithm_name} records no leader-election Events; `events` applies to client-go"),
            ));
        }
        elector.lease_namespace = namespace.into();
        elector.lease_name = pick!(lease_name).unwrap_or_else(|| lease_name.into());
        if let Some(v) = pick!(lease_duration) {
            elector.lease_duration = v.0;
        }
        if let Some(v) = pick!(renew_deadline) {
            elector.renew_deadline = v.0;
        }
        if let Some(v) = pick!(retry_period) {
            elector.retry_period = v.0;
        }
        if let Some(v) = pick!(jitter_factor) {
            elector.jitter_factor = v;
        }
        if let Some(v) = pick!(release_on_cancel) {
            elector.release_on_cancel = v;
        }
        elector.request_timeout = match pick!(request_timeout) {
            Some(t) => Some(t.0),
            None => default_request_timeout_for(algorithm, elector.renew_deadline),
        };
        let restart_delay = pick!(restart_delay).map(|d| d.0).unwrap_or(10_000_000_000);
        // `run()` returns and nothing calls it again (the Java client); the C# client's
        // RunAndTryToHoldLeadershipForeverAsync re-runs in-process.
        let default_after_lost = match algorithm {
            Algorithm::JavaClient => "exit",
            Algorithm::CSharpClient | Algorithm::CSharpClientPre2026 => "rejoin",
            _ => "restart",
        };
        elector.after_lost = match pick!(after_lost).as_deref().unwrap_or(default_after_lost) {
            "restart" => AfterLost::Restart { delay: restart_delay },
            "exit" => AfterLost::Exit,
            "rejoin" => AfterLost::Rejoin,
            other => {
                return Err(perr("after_lost", format!("unknown value {other:?}; expected restart, exit or rejoin")));
            }
        };
        if let Some(drain) = pick!(drain) {
            if algorithm != Algorithm::ControllerRuntime {
                if doc.drain.is_some() {
                    return Err(perr(
                        "drain",
                        format!(
                            "`drain` is controller-runtime's runnables draining; this node runs {algorithm_name:?}"
                        ),
                    ));
                }
            } else {
                elector.drain = drain.0;
            }
        }
        if let Some(grace) = pick!(grace) {
            if algorithm.has_grace() {
                elector.grace = grace.0;
            } else if doc.grace.is_some() {
                return Err(perr(
                    "grace",
                    format!(
                        "`grace` is kube-lease-manager's and kubert's renew grace; this node runs {algorithm_name:?}"
                    ),
                ));
            }
        }
        if elector.retry_period == 0 {
            return Err(perr("retry_period", "must be greater than zero".into()));
        }
        if identity.is_empty() {
            return Err(perr("identity", "must not be empty (client-go: \"Lock identity is empty\")".into()));
        }
        if self.rbac.auto.unwrap_or(true) && doc.user.is_none() && d.user.is_none() {
            check_name(
                Kind::ServiceAccount,
                identity,
                "a ServiceAccount name (rbac.auto creates one per node; set `user` to run as someone else)",
            )
            .map_err(|m| perr("identity", m))?;
        }
        // `unsafe` waives client-go's checks for the whole file or for one Lease; whether the
        // run *is* unsafe (a waived check fails) is decided per node and shown only then.
        // The main Lease may be named in [leases."name"] too: either place waives it.
        let lease_unsafe = if elector.lease_name == lease_name {
            self.lease.unsafe_mode.unwrap_or(false)
                || self.leases.get(&elector.lease_name).and_then(|l| l.unsafe_mode).unwrap_or(false)
        } else {
            self.leases.get(&elector.lease_name).and_then(|l| l.unsafe_mode).unwrap_or(false)
        };
        if !self.unsafe_mode && !lease_unsafe {
            elector.validate().map_err(|m| {
                // Point at the key the message is about; only the ordering rules can be waived.
                let key = if m.starts_with("retryPeriod") || m.starts_with("retry_period") {
                    "retry_period"
                } else if m.starts_with("leaseDuration must be greater than zero")
                    || m.starts_with("lease_duration must be at least")
                {
                    "lease_duration"
                } else if m.contains("grace period") {
                    "grace"
                } else if m.starts_with("api_timeout") {
                    "request_timeout"
                } else if m.starts_with("identity") {
                    "identity"
                } else {
                    "renew_deadline"
                };
                let advice = if m.contains("greater than renewDeadline")
                    || m.contains("JitterFactor")
                    || m.contains("greater than renew_deadline")
                    || m.contains("retry_period*1.2")
                {
                    " (set `unsafe = true` at the top of the file, or for this Lease only in [lease] or \
                     [leases.\"<name>\"], to run it anyway, for teaching)"
                } else {
                    ""
                };
                // NewLeaderElector's own words, quoted, after the key they are about.
                perr(key, format!("{} refuses this configuration: \"{m}\"{advice}", algorithm.library()))
            })?;
        }
        // Clock: defaults overridden key by key.
        let dc = d.clock.clone().unwrap_or_default();
        let nc = doc.clock.clone().unwrap_or_default();
        let mut rng = ComponentRng::new(self.seed, &format!("node/{identity}/clock"));
        let offset_ns =
            match (nc.offset.or(dc.offset), nc.offset_seconds_dist.as_ref().or(dc.offset_seconds_dist.as_ref())) {
                (Some(o), _) => o.0,
                (None, Some(dist)) => (dist.sample(&mut rng) * 1e9).round() as i64,
                (None, None) => 0,
            };
        for dist in [
            nc.offset_seconds_dist.as_ref().or(dc.offset_seconds_dist.as_ref()),
            nc.drift_ppm_dist.as_ref().or(dc.drift_ppm_dist.as_ref()),
        ]
        .into_iter()
        .flatten()
        {
            match *dist {
                NumberDist::Normal([_, std]) if !(std >= 0.0 && std.is_finite()) => {
                    return Err(perr(
                        "clock",
                        format!("normal distribution standard deviation {std} must be a finite number >= 0"),
                    ));
                }
                NumberDist::Uniform([a, b]) if !(a <= b && a.is_finite() && b.is_finite()) => {
                    return Err(perr(
                        "clock",
                        format!("uniform distribution [{a}, {b}] needs finite bounds with the first <= the second"),
                    ));
                }
                _ => {}
            }
        }
        let drift_ppm = match (nc.drift_ppm.or(dc.drift_ppm), nc.drift_ppm_dist.as_ref().or(dc.drift_ppm_dist.as_ref()))
        {
            (Some(v), _) => v,
            (None, Some(dist)) => dist.sample(&mut rng),
            (None, None) => 0.0,
        };
        // A drawn drift is kept within the bounds (a normal distribution's far tail would
        // otherwise make a rare seed fail); a given one must be within them.
        let drawn = nc.drift_ppm.or(dc.drift_ppm).is_none();
        let drift_ppm = if drawn { drift_ppm.clamp(MIN_DRIFT_PPM, MAX_DRIFT_PPM) } else { drift_ppm };
        if !drift_ppm.is_finite() || !(MIN_DRIFT_PPM..=MAX_DRIFT_PPM).contains(&drift_ppm) {
            return Err(perr(
                "clock",
                format!(
                    "drift_ppm {drift_ppm} is outside {MIN_DRIFT_PPM} to {MAX_DRIFT_PPM}: a clock's rate must stay \
                     between 0.1× and 10× true time (a clock cannot stop, and a faster one multiplies every \
                     timer's events)"
                ),
            ));
        }
        let steps = nc.steps.or(dc.steps).unwrap_or_default();
        for (k, s) in steps.iter().enumerate() {
            if s.at.0 > self.duration.0 {
                return Err(ScenarioError {
                    path: vec!["nodes".into(), idx.clone(), "clock".into(), "steps".into(), k.to_string(), "at".into()],
                    message: "is beyond the run's duration".into(),
                });
            }
        }
        let clock = ClockSpec {
            offset_ns,
            drift_ppb: (drift_ppm * 1000.0).round() as i64,
            steps: steps.iter().map(|s| ClockStep { at: s.at.0, delta_ns: s.delta.0 }).collect(),
            wander: nc.wander.or(dc.wander).map(|w| Wander {
                amplitude_ns: w.amplitude.0 as i64,
                period_ns: w.period.0,
                phase_rad: w.phase,
            }),
        };
        crate::clock::NodeClock::new(clock.clone(), 0).map_err(|m| perr("clock", m))?;
        // Network.
        let dn = d.network.clone().unwrap_or_default();
        let nn = doc.network.clone().unwrap_or_default();
        let both_latency = nn.latency.clone().or(dn.latency.clone());
        let both_loss = nn.loss.or(dn.loss);
        let direction = |n: &Option<DirectionDoc>, dd: &Option<DirectionDoc>| DirectionSpec {
            latency: n
                .as_ref()
                .and_then(|x| x.latency.clone())
                .or_else(|| dd.as_ref().and_then(|x| x.latency.clone()))
                .or(both_latency.clone())
                .map(|l| l.to_latency())
                .unwrap_or_default(),
            loss: n
                .as_ref()
                .and_then(|x| x.loss)
                .or_else(|| dd.as_ref().and_then(|x| x.loss))
                .or(both_loss)
                .unwrap_or(0.0),
        };
        let link = LinkSpec { up: direction(&nn.up, &dn.up), down: direction(&nn.down, &dn.down) };
        for (dir, spec) in [("up", &link.up), ("down", &link.down)] {
            spec.latency.validate().map_err(|m| perr("network", format!("{dir}: {m}")))?;
            if !(0.0..=1.0).contains(&spec.loss) {
                return Err(perr("network", format!("{dir} loss {} must be between 0 and 1", spec.loss)));
            }
        }
        // Reconciler.
        let reconciler = match (doc.reconciler.clone(), d.reconciler.clone()) {
            (None, None) => None,
            (n, dd) => {
                let n = n.unwrap_or_default();
                let dd = dd.unwrap_or_default();
                let mode_name = n.mode.or(dd.mode).unwrap_or_else(|| "apply".into());
                let mode = match mode_name.as_str() {
                    "apply" => ReconcileMode::Apply { force: false },
                    "apply-force" => ReconcileMode::Apply { force: true },
                    "create" => ReconcileMode::CreateIfAbsent,
                    "fenced-update" => ReconcileMode::FencedUpdate,
                    "update" => ReconcileMode::Update,
                    other => {
                        return Err(perr(
                            "reconciler",
                            format!(
                                "unknown reconciler mode {other:?}; expected apply, apply-force, create, update or fenced-update"
                            ),
                        ));
                    }
                };
                let manager = n.field_manager.or(dd.field_manager).unwrap_or_else(|| "identity".into());
                Some(ReconcilerSpec {
                    period: n.period.or(dd.period).map(|p| p.0).unwrap_or(1_000_000_000),
                    mode,
                    namespace: namespace.into(),
                    object: n.object.or(dd.object).unwrap_or_else(|| "order-1".into()),
                    field: n.field.or(dd.field).unwrap_or_else(|| "phase".into()),
                    value: doc.value.clone().unwrap_or_else(|| ((b'A' + (i % 26) as u8) as char).to_string()),
                    field_manager: if manager == "identity" {
                        FieldManager::Identity
                    } else {
                        FieldManager::Shared(manager)
                    },
                    timeout: n.timeout.or(dd.timeout).map(|t| t.0).unwrap_or(2_000_000_000),
                })
            }
        };
        if reconciler.as_ref().is_some_and(|r| r.period == 0) {
            return Err(perr("reconciler", "period must be greater than zero".into()));
        }
        let user = match pick!(user) {
            Some(u) => user_named(&u, &self.identities(), namespace),
            None => User::service_account(namespace, identity),
        };
        let start_at = match pick!(start_at) {
            None => 0,
            Some(DurationDistDoc::Fixed(d)) => {
                if d.0 > self.duration.0 {
                    return Err(perr("start_at", "is beyond the run's duration".into()));
                }
                d.0
            }
            // Drawn per seed from the node's own stream; a draw past the end means the node
            // never starts in this run.
            Some(dist) => {
                if let DurationDistDoc::Shaped(DurationShape::Uniform([a, b])) = &dist
                    && a.0 > b.0
                {
                    return Err(perr("start_at", "uniform bounds must be in order (the first ≤ the second)".into()));
                }
                let mut rng = ComponentRng::new(self.seed, &format!("node/{identity}/start_at"));
                dist.to_dist().sample(&mut rng)
            }
        };
        let healthz = match pick!(healthz) {
            None => None,
            Some(_) if elector.client_go_version().is_none() => {
                return Err(perr(
                    "healthz",
                    format!("the health check is client-go's (HealthzAdaptor); {algorithm_name} has none"),
                ));
            }
            Some(h) => {
                let dh = d.healthz.clone().unwrap_or_default();
                let secs = |v: Option<Duration>, dv: Option<Duration>, default: u64| {
                    v.or(dv).map(|d| d.0).unwrap_or(default * 1_000_000_000)
                };
                let spec = crate::model::HealthzSpec {
                    tolerance: secs(h.tolerance, dh.tolerance, 20),
                    initial_delay: secs(h.initial_delay, dh.initial_delay, 10),
                    period: secs(h.period, dh.period, 10),
                    timeout: secs(h.timeout, dh.timeout, 15),
                    failure_threshold: h.failure_threshold.or(dh.failure_threshold).unwrap_or(8),
                    restart_delay: secs(h.restart_delay, dh.restart_delay, 10),
                };
                if spec.period == 0 || spec.timeout == 0 {
                    return Err(perr("healthz", "period and timeout must be greater than zero".into()));
                }
                if spec.failure_threshold == 0 {
                    return Err(perr("healthz", "failure_threshold must be at least 1".into()));
                }
                Some(spec)
            }
        };
        let stop_acting = match pick!(stop_acting) {
            None => crate::model::StopActing::AtOnce,
            Some(text) => crate::model::StopActing::parse(&text).map_err(|m| perr("stop_acting", m))?,
        };
        let candidacy = if pick!(coordinated).unwrap_or(false) {
            if elector
                .client_go_version()
                .is_none_or(|v| v < crate::elector::ClientGoVersion::parse("v0.31").expect("a version"))
            {
                return Err(perr(
                    "coordinated",
                    "coordinated leader election needs client-go v0.31 or later (algorithm client-go or controller-runtime)"
                        .into(),
                ));
            }
            let emulation_given = pick!(emulation_version).is_some();
            let binary_version = pick!(binary_version).unwrap_or_else(|| "1.33.0".into());
            let emulation_version = pick!(emulation_version).unwrap_or_else(|| binary_version.clone());
            let spec = serde_json::json!({"leaseName": elector.lease_name, "binaryVersion": binary_version,
                "emulationVersion": emulation_version, "strategy": "OldestEmulationVersion"});
            let errors = crate::api::validate_lease_candidate_spec(&spec);
            // Blame the key the user wrote: the binary version's errors first (an unset
            // emulation_version copies it), then the emulation version's.
            let on_binary = errors.iter().find(|e| e.field == "spec.binaryVersion");
            let on_emulation = errors.iter().find(|e| e.field == "spec.emulationVersion" && emulation_given);
            if let Some((key, e)) = on_binary
                .map(|e| ("binary_version", e))
                .or(on_emulation.map(|e| ("emulation_version", e)))
                .or(errors.first().map(|e| ("binary_version", e)))
            {
                let default = if pick!(binary_version).is_none() { " (binary_version unset: 1.33.0)" } else { "" };
                return Err(perr(
                    key,
                    format!(
                        "the API server would refuse this node's LeaseCandidate: {}: {}{default}; versions are \
                         MAJOR.MINOR.PATCH without a leading v, like 1.34.0",
                        e.field, e.body
                    ),
                ));
            }
            elector.coordinated = true;
            Some(crate::model::Candidacy { binary_version, emulation_version })
        } else {
            if pick!(binary_version).is_some() || pick!(emulation_version).is_some() {
                return Err(perr(
                    if pick!(binary_version).is_some() { "binary_version" } else { "emulation_version" },
                    "versions are for coordinated nodes (set coordinated = true)".into(),
                ));
            }
            None
        };
        Ok(NodeSpec {
            elector,
            clock,
            link,
            reconciler,
            user,
            lease_field_manager: pick!(lease_field_manager)
                .unwrap_or_else(|| default_field_manager(algorithm, identity)),
            start_at,
            healthz,
            stop_acting,
            candidacy,
        })
    }

    fn action(
        &self,
        i: usize,
        a: &ActionDoc,
        identities: &[String],
        namespace: &str,
        lease_name: &str,
    ) -> Result<ScriptedAction, ScenarioError> {
        let idx = i.to_string();
        let p = |k: &'static str| -> Vec<&str> { vec!["actions", idx.as_str(), k] };
        if a.at.0 > self.duration.0 {
            return Err(err(&p("at"), "is beyond the run's duration"));
        }
        let user = user_named(a.as_user.as_deref().unwrap_or("admin"), identities, namespace);
        let kind = |a: &ActionDoc| -> Result<Kind, ScenarioError> {
            let r = a.resource.as_deref().unwrap_or("lease");
            Kind::parse(r).ok_or_else(|| err(&p("resource"), format!("unknown resource {r:?}; expected leases, configmaps, namespaces, serviceaccounts, roles, rolebindings, events or leasecandidates")))
        };
        let ns = a.namespace.clone().unwrap_or_else(|| namespace.into());
        let object = a.object.clone().unwrap_or_else(|| lease_name.into());
        let body = || a.body.clone().ok_or_else(|| err(&p("verb"), format!("a {} action needs a `body`", a.verb)));
        let op = match a.verb.as_str() {
            "get" => ActionOp::Get { kind: kind(a)?, namespace: ns, name: object },
            "list" => ActionOp::List { kind: kind(a)?, namespace: ns },
            "delete" => ActionOp::Delete { kind: kind(a)?, namespace: ns, name: object },
            "create" => ActionOp::Create { body: body()? },
            "update" => ActionOp::Update { body: body()? },
            "merge-patch" => ActionOp::MergePatch {
                kind: kind(a)?,
                namespace: ns,
                name: object,
                patch: a.patch.clone().ok_or_else(|| err(&p("verb"), "a merge-patch action needs a `patch`"))?,
            },
            "apply" => ActionOp::Apply {
                body: body()?,
                field_manager: a.field_manager.clone().unwrap_or_else(|| "kubectl".into()),
                force: a.force.unwrap_or(false),
            },
            "can-i" => ActionOp::CanI {
                verb: a.can_i_verb.clone().ok_or_else(|| err(&p("verb"), "a can-i action needs `can_i_verb`"))?,
                kind: kind(a)?,
                namespace: ns,
                name: a.object.clone(),
                user: user.clone(),
            },
            other => {
                return Err(err(
                    &p("verb"),
                    format!(
                        "unknown verb {other:?}{}; expected one of {}",
                        did_you_mean(other, ACTION_VERBS.iter().copied()),
                        ACTION_VERBS.join(", ")
                    ),
                ));
            }
        };
        Ok(ScriptedAction {
            name: a.name.clone(),
            at: a.at.0,
            user: if a.verb == "can-i" { User::admin() } else { user },
            op,
        })
    }
}

/// The longest run the simulator supports (a year of simulated time).
pub const MAX_DURATION_NS: u64 = 366 * 24 * 3600 * 1_000_000_000;
/// The shortest mean interval of a random fault process.
pub const MIN_MEAN_INTERVAL_NS: u64 = 1_000_000;
/// A clock's drift bounds (ppm): its rate stays between 0.1× and 10× true time.
pub const MIN_DRIFT_PPM: f64 = -900_000.0;
pub const MAX_DRIFT_PPM: f64 = 9_000_000.0;

/// A name the API server accepts for `kind`, or the server's own words why not.
fn check_name(kind: Kind, name: &str, what: &str) -> Result<(), String> {
    match crate::api::validate_name(kind, name).first() {
        None => Ok(()),
        Some(e) => Err(format!("{name:?} is not valid as {what}: {}", e.body)),
    }
}

const FAULT_KINDS: [&str; 8] =
    ["crash", "restart", "pause", "stop", "clock-step", "partition", "server-outage", "server-slow"];
const RANDOM_FAULT_KINDS: [&str; 7] =
    ["crash", "crash-restart", "pause", "stop", "partition", "clock-step", "server-outage"];
const ACTION_VERBS: [&str; 8] = ["get", "list", "create", "update", "merge-patch", "apply", "delete", "can-i"];

fn is_server_fault(kind: &str) -> bool {
    kind == "server-outage" || kind == "server-slow"
}

/// The field manager a library writes its Lease with, unless `lease_field_manager` says
/// otherwise: kube-lease-manager's `kube-lease-manager-<identity>` (manager.rs:328), kubert's
/// `kubert`, shared by every instance (lease.rs:161), kube-coordinate's group `manager`, which
/// its docs ask to be shared (lib.rs:121-126; leasesim names it `kube-coordinate`); the others
/// the identity (client-go's User-Agent stands in for it; kube-leader-election's
/// `PatchParams::apply(holder_id)`).
fn default_field_manager(algorithm: Algorithm, identity: &str) -> String {
    match algorithm {
        Algorithm::KubeLeaseManager => format!("kube-lease-manager-{identity}"),
        Algorithm::Kubert => "kubert".into(),
        Algorithm::KubeCoordinate => "kube-coordinate".into(),
        _ => identity.to_string(),
    }
}

fn user_named(name: &str, identities: &[String], namespace: &str) -> User {
    if name == "admin" {
        User::admin()
    } else if identities.iter().any(|i| i == name) {
        User::service_account(namespace, name)
    } else if let Some(rest) = name.strip_prefix("system:serviceaccount:") {
        let (ns, sa) = rest.split_once(':').unwrap_or((namespace, rest));
        User::service_account(ns, sa)
    } else {
        User::named(name)
    }
}

fn parse_cut(s: Option<&str>) -> Result<Cut, String> {
    match s.unwrap_or("both") {
        "both" => Ok(Cut::Both),
        "up" => Ok(Cut::Up),
        "down" => Ok(Cut::Down),
        other => Err(format!("unknown cut {other:?}; expected both, up (requests lost) or down (responses lost)")),
    }
}

fn parse_mode(s: Option<&str>) -> Result<crate::net::PartitionMode, String> {
    let text = s.unwrap_or("drop");
    crate::net::PartitionMode::parse(text).ok_or_else(|| {
        format!(
            "unknown partition mode {text:?}; expected drop (messages lost), hold (delivered when it heals) or \
             refuse (the call fails at once)"
        )
    })
}

/// Looks a node identity up, reporting at the given path.
type NodeLookup<'a> = dyn Fn(&str, &[&str]) -> Result<usize, ScenarioError> + 'a;

fn parse_target(t: &str, node_index: &NodeLookup) -> Result<Target, String> {
    match t {
        "holder" => Ok(Target::Holder),
        "random" => Ok(Target::Random),
        "non-holder" => Ok(Target::NonHolder),
        "server" => Ok(Target::Server),
        name => node_index(name, &[])
            .map(Target::Node)
            .map_err(|e| format!("{}; or one of holder, random, non-holder, server", e.message)),
    }
}

/// `" (did you mean \"x\"?)"` when a candidate is within a small edit distance.
pub fn did_you_mean<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    let best = candidates.map(|c| (edit_distance(word, c), c)).filter(|(d, c)| *d <= 2.max(c.len() / 3)).min();
    match best {
        Some((_, c)) => format!(" (did you mean {c:?}?)"),
        None => String::new(),
    }
}

pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Every key a scenario file may hold, per table, for did-you-mean on unknown keys and `--set`.
pub fn known_keys(table: &str) -> &'static [&'static str] {
    match table {
        "" => &[
            "name",
            "description",
            "duration",
            "seed",
            "unsafe",
            "epoch",
            "from_cluster",
            "lease",
            "leases",
            "defaults",
            "nodes",
            "faults",
            "random_faults",
            "server",
            "rbac",
            "objects",
            "actions",
            "expect",
        ],
        "lease" => &["namespace", "name", "unsafe"],
        "defaults" | "nodes" => &[
            "identity",
            "algorithm",
            "lease_duration",
            "renew_deadline",
            "retry_period",
            "jitter_factor",
            "release_on_cancel",
            "request_timeout",
            "after_lost",
            "restart_delay",
            "start_at",
            "client_go",
            "expiry",
            "fast_path",
            "labels",
            "events",
            "healthz",
            "stop_acting",
            "coordinated",
            "binary_version",
            "emulation_version",
            "drain",
            "grace",
            "value",
            "user",
            "lease_field_manager",
            "lease_name",
            "clock",
            "network",
            "reconciler",
        ],
        "healthz" => &["tolerance", "period", "failure_threshold", "initial_delay", "timeout", "restart_delay"],
        "clock" => &["offset", "drift_ppm", "steps", "wander", "offset_seconds_dist", "drift_ppm_dist"],
        "network" => &["latency", "loss", "up", "down"],
        "reconciler" => &["mode", "period", "object", "field", "field_manager", "timeout"],
        "faults" => &["at", "node", "target", "kind", "duration", "cut", "mode", "delay", "delta", "extra"],
        "random_faults" => &[
            "name",
            "kind",
            "target",
            "mean_interval",
            "from",
            "until",
            "duration",
            "restart_after",
            "delta",
            "backwards",
            "cut",
            "mode",
        ],
        "server" => &["outages", "slowdowns", "errors", "clock"],
        "errors" => &["from", "duration", "code", "verb", "resource", "node", "probability", "retry_after", "message"],
        "rbac" => &["auto"],
        "actions" => &[
            "name",
            "at",
            "as",
            "verb",
            "resource",
            "namespace",
            "object",
            "body",
            "patch",
            "field_manager",
            "force",
            "can_i_verb",
        ],
        _ => &[],
    }
}

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
