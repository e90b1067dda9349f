//! The runtime description of one experiment: what [`crate::world::World`] is built from.
//!
//! Scenario files (TOML, parsed in `sim-cli`) and sweeps produce a [`WorldSpec`]; tests build one
//! directly. Everything here is plain data; all validation that needs more than one field lives
//! in [`WorldSpec::validate`].

use crate::api::{Kind, User, Verb};
use crate::clock::ClockSpec;
use crate::elector::ElectorConfig;
use crate::net::{Cut, LinkSpec, ServerAvailability};
use crate::time::{NANOS_PER_MILLI, Nanos, UnixNanos, format_duration};
use std::sync::Arc;

/// How a reconciler writes its child object while its node acts as leader.
#[derive(Clone, Debug, PartialEq)]
pub enum ReconcileMode {
    /// Server-side apply of `data.<field>: <value>`; `force` takes ownership on conflict.
    Apply { force: bool },
    /// POST the object; AlreadyExists is counted and otherwise ignored.
    CreateIfAbsent,
    /// Read the Lease first and write only if it still names this node with the
    /// leaseTransitions it acquired with (the fencing token); then update the child with the
    /// child's resourceVersion as precondition.
    FencedUpdate,
    /// Read the child, then update it with no precondition (no resourceVersion): an unguarded
    /// read-modify-write, last write wins.
    Update,
}

impl ReconcileMode {
    /// Whether a round reads the child before writing it (its write can then be based on a
    /// stale read: a lost update); apply and create write blind.
    pub fn reads_before_writing(&self) -> bool {
        matches!(self, ReconcileMode::FencedUpdate | ReconcileMode::Update)
    }

    pub fn name(&self) -> &'static str {
        match self {
            ReconcileMode::Apply { force: false } => "apply",
            ReconcileMode::Apply { force: true } => "apply-force",
            ReconcileMode::CreateIfAbsent => "create",
            ReconcileMode::FencedUpdate => "fenced-update",
            ReconcileMode::Update => "update",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum FieldManager {
    /// The node's identity (as in the seed lab: `--field-manager=widget-operator-0`).
    Identity,
    /// One name shared by every replica (what an operator binary usually sends).
    Shared(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ReconcilerSpec {
    pub period: Nanos,
    pub mode: ReconcileMode,
    pub namespace: String,
    /// The child ConfigMap's name (the seed lab's `order-1`).
    pub object: String,
    /// The data key written (`phase`).
    pub field: String,
    /// This node's value (`A`, `B`, ...).
    pub value: String,
    pub field_manager: FieldManager,
    /// Client-side timeout of each reconciler request (a controller's write deadline).
    pub timeout: Nanos,
    /// Bursts of extra reads (a resync, a relist storm): `requests` GETs of the child at once,
    /// at `at` and every `every` after, while the process runs.
    pub burst: Option<ReconcileBurst>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReconcileBurst {
    pub at: Nanos,
    pub requests: u32,
    pub every: Option<Nanos>,
}

/// client-go's client-side rate limiter of a process (`rest.Config` QPS and Burst; docs/
/// sources/client-go.md §8).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientLimiterSpec {
    pub qps: f64,
    pub burst: u32,
    /// The elector and the reconciler wait on one bucket (else each has its own).
    pub shared: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    /// Shared with the node's elector (each start's elector holds the same one): read it here,
    /// change it with [`NodeSpec::elector_mut`].
    pub elector: Arc<ElectorConfig>,
    /// Shared, as `elector`: a fleet's nodes mostly have the same clock and link (136 bytes a
    /// node otherwise, kept for the whole run; `Scenario::to_world_spec` shares equal ones).
    pub clock: Arc<ClockSpec>,
    pub link: Arc<LinkSpec>,
    /// Boxed: 176 bytes inline for every node of a fleet, few of which have one.
    pub reconciler: Option<Box<ReconcilerSpec>>,
    /// Who the process authenticates as (shared with the API server's table of users).
    pub user: Arc<User>,
    /// The field manager of its Lease writes (client-go: the User-Agent's first word).
    pub lease_field_manager: String,
    /// True time at which the process starts.
    pub start_at: Nanos,
    /// Boxed, as `candidacy`: few nodes of a fleet have one (48 bytes inline each).
    pub healthz: Option<Box<HealthzSpec>>,
    /// When the leader's work stops once its elector says it stopped leading.
    pub stop_acting: StopActing,
    /// Coordinated leader election: the LeaseCandidate this node keeps (client-go
    /// `NewCandidate`), with its versions.
    pub candidacy: Option<Box<Candidacy>>,
    /// A fresh identity `<identity>_<uuid>` at every process start (kube-controller-manager,
    /// kube-scheduler, controller-runtime's default: docs/sources/kubernetes.md §1–2).
    pub identity_per_start: bool,
    /// How the kubelet spaces the restarts it makes.
    pub restart_backoff: RestartBackoff,
    /// client-go's client-side rate limiter (`None`: requests are never throttled).
    pub client_limiter: Option<ClientLimiterSpec>,
}

/// The delay before a restart the kubelet makes (after a liveness kill, or an exit the pod's
/// `restartPolicy` restarts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RestartBackoff {
    /// The node's `restart_delay` (the healthz `restart_delay` after a liveness kill) every time.
    #[default]
    Fixed,
    /// CrashLoopBackOff (kubelet `newCrashLoopBackOff`, client-go `flowcontrol.Backoff`;
    /// docs/sources/kubernetes.md §3): the first restart at once, then 10 s doubling to 300 s
    /// after each exit, back to "at once" when an exit comes more than 600 s after the previous
    /// one. Pod-sync granularity is not modelled: the restart comes at the delay exactly.
    CrashLoop,
}

impl RestartBackoff {
    pub const INITIAL: Nanos = 10 * 1_000_000_000;
    pub const MAX: Nanos = 300 * 1_000_000_000;
    pub const RESET_AFTER: Nanos = 600 * 1_000_000_000;

    /// CrashLoopBackOff for an exit at `now`, given the container's back-off entry (the next
    /// delay, the exit it was last updated at): the delay before the restart and the new entry.
    /// `IsInBackOffSince` then `Next` (client-go `util/flowcontrol/backoff.go`), with the
    /// kubelet's `HasExpiredFunc` (`now − lastUpdate > 600 s`).
    pub fn crashloop_next(entry: Option<(Nanos, Nanos)>, now: Nanos) -> (Nanos, (Nanos, Nanos)) {
        match entry {
            Some((delay, last)) if now.saturating_sub(last) <= Self::RESET_AFTER => {
                (delay, (delay.saturating_mul(2).min(Self::MAX), now))
            }
            _ => (0, (Self::INITIAL, now)),
        }
    }

    pub fn parse(text: &str) -> Result<RestartBackoff, String> {
        match text {
            "fixed" => Ok(RestartBackoff::Fixed),
            "crashloop" => Ok(RestartBackoff::CrashLoop),
            other => Err(format!("unknown restart_backoff {other:?}; expected fixed or crashloop")),
        }
    }
}

/// A coordinated node's LeaseCandidate versions (strategy OldestEmulationVersion).
#[derive(Clone, Debug, PartialEq)]
pub struct Candidacy {
    pub binary_version: String,
    pub emulation_version: String,
}

/// When a leader's work stops after its elector reports that it stopped leading (the
/// `stop_acting` node key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StopActing {
    /// At once (work on the leader context, or an exit on OnStoppedLeading).
    #[default]
    AtOnce,
    /// After this long on the node's clock: shutdown hooks that block OnStoppedLeading, so the
    /// process cannot exit meanwhile either (cilium/cilium#42920).
    After(Nanos),
    /// Not until the process exits: workers started on the process context
    /// (argoproj/argo-rollouts#2117).
    Never,
}

impl StopActing {
    /// `"at-once"`, `"never"` or a duration such as `"8s"`.
    pub fn parse(text: &str) -> Result<StopActing, String> {
        match text {
            "at-once" => Ok(StopActing::AtOnce),
            "never" => Ok(StopActing::Never),
            other => match crate::time::parse_duration(other) {
                Ok(0) => Ok(StopActing::AtOnce),
                Ok(d) => Ok(StopActing::After(d)),
                Err(_) => Err(format!(
                    "{other:?} is not a stop_acting value: expected \"at-once\", \"never\" or a duration such as \"8s\""
                )),
            },
        }
    }
}

impl NodeSpec {
    pub fn identity(&self) -> &str {
        &self.elector.identity
    }

    /// The elector's settings to change (copied first if an elector already shares them).
    pub fn elector_mut(&mut self) -> &mut ElectorConfig {
        Arc::make_mut(&mut self.elector)
    }

    /// The clock's settings to change (copied first if another node shares them).
    pub fn clock_mut(&mut self) -> &mut ClockSpec {
        Arc::make_mut(&mut self.clock)
    }

    /// The link's settings to change (copied first if another node shares them).
    pub fn link_mut(&mut self) -> &mut LinkSpec {
        Arc::make_mut(&mut self.link)
    }
}

/// Whom a fault hits.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Node(usize),
    /// Whoever the Lease on the server names when the fault fires (nothing if nobody).
    Holder,
    /// A node drawn uniformly from the fault process's stream.
    Random,
    /// A node drawn uniformly among those the Lease does not name.
    NonHolder,
    /// The API server (outages, slowdowns).
    Server,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FaultKind {
    /// The process dies: no release, no callbacks; its requests in flight may still land.
    Crash,
    /// Crash (if running) and start a fresh process with the same identity after `delay`.
    Restart {
        delay: Nanos,
    },
    /// Stop-the-world: timers and responses wait until it resumes.
    Pause {
        duration: Nanos,
    },
    /// Graceful stop: the run context is cancelled (release if ReleaseOnCancel).
    Stop,
    /// Wall-clock jump on the node.
    ClockStep {
        delta_ns: i64,
    },
    Partition {
        duration: Nanos,
        cut: Cut,
        mode: crate::net::PartitionMode,
    },
    /// The API server is unavailable; `mode` as a partition's: `drop` (hung: nothing applied
    /// or answered), `hold` (applied when it ends), `refuse` (restarting: connections refused).
    ServerOutage {
        duration: Nanos,
        mode: crate::net::PartitionMode,
    },
    ServerSlow {
        duration: Nanos,
        extra: Nanos,
    },
    /// The leader's work (what the started-leading callback runs) returns, raises or blocks;
    /// the elector goes on as its library does ([`crate::elector::Library::work_ends`]).
    Work {
        ends: crate::elector::WorkEnd,
    },
    /// The node's HTTP client wedges: requests in flight and every request sent for `duration`
    /// (`None`: for the rest of the process's life) never complete and ignore their timeouts,
    /// while the process, its timers and its probes live on. A restart gets a new client.
    Wedge {
        duration: Option<Nanos>,
    },
}

impl FaultKind {
    /// The fault's drawn parameters as a timeline labels them: durations to the millisecond
    /// (`3.2s`, `after 5s`, `+250ms`, `+2s for 30s`), a partition's mode when it is not `drop`.
    pub fn detail(&self) -> String {
        let show = |ns: Nanos| format_duration(ns.div_ceil(NANOS_PER_MILLI) * NANOS_PER_MILLI);
        match self {
            FaultKind::Partition { duration, mode, .. } | FaultKind::ServerOutage { duration, mode }
                if *mode != crate::net::PartitionMode::Drop =>
            {
                format!("{}, {}", show(*duration), mode.name())
            }
            FaultKind::Pause { duration }
            | FaultKind::Partition { duration, .. }
            | FaultKind::ServerOutage { duration, .. } => show(*duration),
            FaultKind::Restart { delay } => format!("after {}", show(*delay)),
            FaultKind::ClockStep { delta_ns } => {
                let sign = if *delta_ns < 0 { "-" } else { "+" };
                format!("{sign}{}", show(delta_ns.unsigned_abs()))
            }
            FaultKind::ServerSlow { duration, extra } => format!("+{} for {}", show(*extra), show(*duration)),
            FaultKind::Work { ends } => ends.name().to_string(),
            FaultKind::Wedge { duration: Some(d) } => show(*d),
            FaultKind::Wedge { duration: None } => "until restart".to_string(),
            FaultKind::Crash | FaultKind::Stop => String::new(),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Crash => "crash",
            FaultKind::Restart { .. } => "restart",
            FaultKind::Pause { .. } => "pause",
            FaultKind::Stop => "stop",
            FaultKind::ClockStep { .. } => "clock-step",
            FaultKind::Partition { .. } => "partition",
            FaultKind::ServerOutage { .. } => "server-outage",
            FaultKind::ServerSlow { .. } => "server-slow",
            FaultKind::Work { .. } => "work",
            FaultKind::Wedge { .. } => "wedge",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TimedFault {
    pub at: Nanos,
    pub target: Target,
    pub kind: FaultKind,
}

/// A duration drawn per occurrence.
#[derive(Clone, Debug, PartialEq)]
pub enum DurationDist {
    Fixed(Nanos),
    Uniform { min: Nanos, max: Nanos },
    Exponential { mean: Nanos },
}

impl DurationDist {
    pub fn sample(&self, rng: &mut crate::rng::ComponentRng) -> Nanos {
        match *self {
            DurationDist::Fixed(d) => d,
            DurationDist::Uniform { min, max } => rng.uniform_u64(min, max),
            DurationDist::Exponential { mean } => rng.exponential(mean as f64).round() as Nanos,
        }
    }
}

/// The kinds of fault a random process can produce, with their random parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum RandomFaultKind {
    Crash,
    /// Crash, then restart after a random delay.
    CrashRestart {
        restart_after: DurationDist,
    },
    Pause {
        duration: DurationDist,
    },
    Stop,
    Partition {
        duration: DurationDist,
        cut: Cut,
        mode: crate::net::PartitionMode,
    },
    ClockStep {
        delta: DurationDist,
        backwards: bool,
    },
    ServerOutage {
        duration: DurationDist,
        mode: crate::net::PartitionMode,
    },
}

/// A Poisson process of faults: occurrences at exponential intervals of mean `mean_interval`
/// within `[from, until)`.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomFault {
    /// Stable key naming this process's random stream (its position-independent name).
    pub key: String,
    pub mean_interval: Nanos,
    pub from: Nanos,
    pub until: Nanos,
    pub target: Target,
    pub kind: RandomFaultKind,
}

/// A request a person or script makes directly at the API server (as `kubectl` would), outside
/// any node's network link.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedAction {
    pub name: String,
    pub at: Nanos,
    pub user: User,
    pub op: ActionOp,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ActionOp {
    Get {
        kind: Kind,
        namespace: String,
        name: String,
    },
    /// All objects of a kind in a namespace (`kubectl get events -n ns -o json`).
    List {
        kind: Kind,
        namespace: String,
    },
    Create {
        body: serde_json::Value,
    },
    Update {
        body: serde_json::Value,
    },
    MergePatch {
        kind: Kind,
        namespace: String,
        name: String,
        patch: serde_json::Value,
    },
    Apply {
        body: serde_json::Value,
        field_manager: String,
        force: bool,
    },
    Delete {
        kind: Kind,
        namespace: String,
        name: String,
    },
    CanI {
        verb: String,
        kind: Kind,
        namespace: String,
        name: Option<String>,
        user: User,
    },
}

/// `[[server.errors]]`: the API server answers matching requests with an error instead of
/// handling them (a 504 after handling them: the timeout filter answers while the handler runs
/// on, so the write lands).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerErrorRule {
    pub from: Nanos,
    pub until: Nanos,
    pub verb: Option<Verb>,
    pub kind: Option<Kind>,
    /// Only requests from this node.
    pub node: Option<usize>,
    /// Chance that a matching request gets the error (each drawn from the rule's own stream).
    pub probability: f64,
    /// 409, 429, 500, 503 or 504.
    pub code: u16,
    /// The `Retry-After` header (seconds on the wire); 429 has one by default.
    pub retry_after: Option<Nanos>,
    /// For 500 and 503: the message.
    pub message: String,
}

/// A liveness probe on client-go's `HealthzAdaptor` (see `docs/algorithms.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct HealthzSpec {
    /// `NewLeaderHealthzAdaptor(timeout)`: the check fails once a leader's last observation is
    /// older than LeaseDuration + this.
    pub tolerance: Nanos,
    pub initial_delay: Nanos,
    pub period: Nanos,
    /// A probe not answered within this fails (a paused process answers nothing).
    pub timeout: Nanos,
    pub failure_threshold: u32,
    /// The kubelet starts the container again this long after killing it.
    pub restart_delay: Nanos,
    /// What the probed endpoint checks.
    pub check: HealthCheck,
}

/// What a liveness probe's endpoint checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthCheck {
    /// client-go's leader-election watchdog (`HealthzAdaptor` → `LeaderElector.Check`): fails
    /// while the process believes it leads and its last observation is older than LeaseDuration
    /// + tolerance; a non-leader passes.
    LeaderElection,
    /// A plain liveness endpoint (`healthz.Ping`): answers as long as the process runs; it
    /// fails only when nothing answers (a paused process).
    Ping,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WorldSpec {
    pub seed: u64,
    pub duration: Nanos,
    /// Wall-clock reading of true time 0 on a perfect clock.
    pub epoch: UnixNanos,
    pub nodes: Vec<NodeSpec>,
    pub server: ServerAvailability,
    pub server_errors: Vec<ServerErrorRule>,
    pub faults: Vec<TimedFault>,
    pub random_faults: Vec<RandomFault>,
    pub actions: Vec<ScriptedAction>,
    /// Objects created (as admin) before anything runs: namespaces, RBAC, pre-existing Leases.
    /// Shared: every run of a sweep or a hunt has the same (see `Scenario::to_world_spec`), and
    /// the setup cache compares them by address first.
    pub setup_objects: std::sync::Arc<Vec<serde_json::Value>>,
    /// Run configurations client-go would refuse (teaching mode). Shown in every output.
    pub unsafe_mode: bool,
    /// Keep a trace of every event (off for sweeps: nothing is formatted or stored then).
    pub trace: bool,
    /// The kube-apiserver's clock (its leader-election controller reads it).
    pub server_clock: ClockSpec,
    /// Step over quiet stretches (`world/quiet.rs`) and run a fleet one Lease at a time
    /// (`world/phases.rs`): the outputs are the same either way; off (`--no-skip`) every event
    /// goes through the queue of the whole world.
    pub skip_quiet: bool,
}

impl WorldSpec {
    pub fn validate(&self) -> Result<(), String> {
        if self.duration == 0 {
            return Err("duration must be greater than zero".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for node in &self.nodes {
            if !seen.insert(node.identity()) {
                return Err(format!("two nodes have the identity {:?}: identities must be unique", node.identity()));
            }
            node.elector.validate_simulable().map_err(|e| format!("node {}: {e}", node.identity()))?;
            if !self.unsafe_mode {
                node.elector.validate().map_err(|e| {
                    format!(
                        "node {}: {e} (client-go refuses this configuration; set unsafe = true to run it anyway, for teaching)",
                        node.identity()
                    )
                })?;
            }
            node.link.up.latency.validate().map_err(|e| format!("node {}: up link: {e}", node.identity()))?;
            node.link.down.latency.validate().map_err(|e| format!("node {}: down link: {e}", node.identity()))?;
            for (dir, loss) in [("up", node.link.up.loss), ("down", node.link.down.loss)] {
                if !(0.0..=1.0).contains(&loss) {
                    return Err(format!("node {}: {dir} loss {loss} must be between 0 and 1", node.identity()));
                }
            }
            if let Some(r) = &node.reconciler
                && r.period == 0
            {
                return Err(format!("node {}: reconciler period must be greater than zero", node.identity()));
            }
        }
        for fault in &self.faults {
            if let Target::Node(i) = fault.target
                && i >= self.nodes.len()
            {
                return Err(format!("a fault targets node #{i}, but there are {} nodes", self.nodes.len()));
            }
            if fault.at > self.duration {
                return Err(format!("a {} fault at {}ns is beyond the run's duration", fault.kind.name(), fault.at));
            }
        }
        for rf in &self.random_faults {
            if rf.mean_interval == 0 {
                return Err(format!("random fault {:?}: mean interval must be greater than zero", rf.key));
            }
        }
        Ok(())
    }
}

/// The RBAC objects that let the given service accounts run leader election and a reconciler
/// in `namespace`: the seed lab's Role (leases get/create/update) plus `patch` for the
/// merge-patching algorithms and ConfigMap rights for reconcilers.
pub fn default_rbac_objects(namespace: &str, service_accounts: &[String], events: bool) -> Vec<serde_json::Value> {
    default_rbac_objects_for(namespace, service_accounts, events, false)
}

/// The Namespace object a world's setup creates for `namespace`; none for the two a fresh
/// cluster has (`default`, `kube-system`).
pub fn namespace_object(namespace: &str) -> Option<serde_json::Value> {
    (namespace != "default" && namespace != "kube-system")
        .then(|| serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}))
}

/// [`default_rbac_objects`], plus LeaseCandidate rights when nodes run coordinated election.
pub fn default_rbac_objects_for(
    namespace: &str,
    service_accounts: &[String],
    events: bool,
    candidates: bool,
) -> Vec<serde_json::Value> {
    let mut objects: Vec<serde_json::Value> = namespace_object(namespace).into_iter().collect();
    for sa in service_accounts {
        objects.push(serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": namespace}}));
    }
    let mut rules = vec![
        serde_json::json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update", "patch"]}),
        serde_json::json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "update", "patch"]}),
    ];
    // What an event recorder needs (kube-controller-manager's role grants the same).
    if events {
        rules.push(serde_json::json!({"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}));
    }
    // client-go's LeaseCandidate: a lister (list, watch) and its own create/update.
    if candidates {
        rules.push(serde_json::json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leasecandidates"], "verbs": ["get", "list", "watch", "create", "update"]}));
    }
    objects.push(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "leader-election", "namespace": namespace},
        "rules": rules
    }));
    let subjects: Vec<_> = service_accounts
        .iter()
        .map(|sa| serde_json::json!({"kind": "ServiceAccount", "name": sa, "namespace": namespace}))
        .collect();
    objects.push(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "leader-election", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "leader-election"},
        "subjects": subjects
    }));
    objects
}

impl WorldSpec {
    /// `n` nodes `widget-operator-0..n` running `algorithm` with the 15 s / 10 s / 2 s defaults
    /// on perfect clocks and 1 ms links, each as its own service account, contending for the
    /// Lease `op-leader/widget-operator` (the seed lab's names). A starting point for tests and
    /// scenarios.
    pub fn basic(seed: u64, n: usize, algorithm: crate::elector::Algorithm, duration: Nanos) -> WorldSpec {
        let namespace = "op-leader";
        let names: Vec<String> = (0..n).map(|i| format!("widget-operator-{i}")).collect();
        let nodes = names
            .iter()
            .map(|name| {
                let mut elector = ElectorConfig::new(name, algorithm);
                elector.lease_namespace = namespace.into();
                elector.lease_name = "widget-operator".into();
                NodeSpec {
                    elector: Arc::new(elector),
                    clock: Arc::default(),
                    link: Arc::default(),
                    reconciler: None,
                    user: Arc::new(User::service_account(namespace, name)),
                    lease_field_manager: name.clone(),
                    start_at: 0,
                    healthz: None,
                    stop_acting: StopActing::AtOnce,
                    candidacy: None,
                    identity_per_start: false,
                    restart_backoff: RestartBackoff::Fixed,
                    client_limiter: None,
                }
            })
            .collect();
        WorldSpec {
            seed,
            duration,
            epoch: crate::time::DEFAULT_EPOCH_UNIX_NANOS,
            nodes,
            server: ServerAvailability::default(),
            server_errors: Vec::new(),
            faults: Vec::new(),
            random_faults: Vec::new(),
            actions: Vec::new(),
            setup_objects: std::sync::Arc::new(default_rbac_objects(namespace, &names, false)),
            unsafe_mode: false,
            trace: false,
            server_clock: ClockSpec::default(),
            skip_quiet: true,
        }
    }

    /// Gives every node a reconciler writing `order-1`'s `data.phase` with its own letter.
    pub fn with_reconcilers(mut self, mode: ReconcileMode, field_manager: FieldManager, period: Nanos) -> WorldSpec {
        for (i, node) in self.nodes.iter_mut().enumerate() {
            node.reconciler = Some(Box::new(ReconcilerSpec {
                period,
                mode: mode.clone(),
                namespace: node.elector.lease_namespace.clone(),
                object: "order-1".into(),
                field: "phase".into(),
                value: ((b'A' + (i % 26) as u8) as char).to_string(),
                field_manager: field_manager.clone(),
                timeout: crate::time::secs(2),
                burst: None,
            }));
        }
        self
    }
}

/// What a run is expected to cost, from its spec alone (before anything is built).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkEstimate {
    /// Events the loop is expected to handle (an upper-leaning estimate: within about 1.5× of
    /// the real count for the shipped scenarios and the benchmark workloads).
    pub events: u64,
    /// Bytes of `trace.jsonl` if the trace is on (about 200 bytes per event).
    pub trace_bytes: u64,
    /// One core's wall seconds for them: about 4 M events a second, but a coordinated
    /// LeaseCandidate rewrite loop's events at about 4.4 µs each (its writes go through the API
    /// server's JSON path; docs/performance.md).
    pub seconds: f64,
}

impl WorldSpec {
    /// When the apiserver's wall clock first runs ahead of true time (a positive offset or
    /// drift from the start, else its first step that leaves it ahead); `None`: never.
    fn server_ahead_from(&self) -> Option<Nanos> {
        let c = &self.server_clock;
        if c.offset_ns > 0 || c.drift_ppb > 0 {
            return Some(0);
        }
        let mut offset = c.offset_ns;
        c.steps.iter().find_map(|s| {
            offset += s.delta_ns;
            (offset > 0).then_some(s.at)
        })
    }

    /// The expected work: every elector makes about one request per RetryPeriod of its own
    /// clock (three events each: the send, the arrival, the answer), every leader's reconciler
    /// one to three requests per period, and every random fault process one occurrence per mean
    /// interval. A fast clock makes everything on its node more frequent.
    pub fn estimate(&self) -> WorkEstimate {
        let seconds = self.duration as f64 / 1e9;
        let rate = |n: &NodeSpec| (1.0 + n.clock.drift_ppb as f64 / 1e9).max(0.0);
        let mut per_second = 0.0;
        let mut fixed_bursts = 0.0;
        let mut leases: std::collections::BTreeMap<(&str, &str), f64> = std::collections::BTreeMap::new();
        for n in &self.nodes {
            let rp = (n.elector.retry_period.max(1) as f64 / 1e9).max(1e-9);
            per_second += 3.0 * rate(n) / rp;
            if let Some(r) = &n.reconciler {
                let requests = match r.mode {
                    ReconcileMode::FencedUpdate => 3.0,
                    ReconcileMode::Update => 2.0,
                    _ => 1.0,
                };
                let per_lease = 3.0 * requests * rate(n) / (r.period.max(1) as f64 / 1e9);
                let key = (n.elector.lease_namespace.as_str(), n.elector.lease_name.as_str());
                let slot = leases.entry(key).or_insert(0.0);
                *slot = slot.max(per_lease); // one leader per Lease reconciles at a time
            }
            if let Some(h) = &n.healthz {
                per_second += 1e9 / h.period.max(1) as f64;
            }
            if let Some(b) = n.reconciler.as_ref().and_then(|r| r.burst) {
                // Three events a read (send, arrival, answer), once or every `every`.
                let times = match b.every {
                    Some(every) => (self.duration.saturating_sub(b.at) / every.max(1) + 1) as f64,
                    None => 1.0,
                };
                fixed_bursts += 3.0 * f64::from(b.requests) * times;
            }
        }
        per_second += leases.values().sum::<f64>();
        let mut looping = 0.0;
        if let Some(ahead_from) = self.server_ahead_from() {
            // Coordinated election with the apiserver's clock ahead: a candidate rewrites its
            // LeaseCandidate once a round trip until its own clock passes the controller's ping,
            // and from about 3 s ahead for the rest of the run (docs/findings.md 8). Counted at
            // that worst, about four events a write (measured: 240,409 events in the +5 s base
            // of the coordinated-skew sweep), so here the estimate is an upper bound.
            for n in self.nodes.iter().filter(|n| n.candidacy.is_some()) {
                let rtt = (n.link.up.latency.min() + n.link.down.latency.min()).max(1_000) as f64 / 1e9;
                let from = ahead_from.max(n.start_at).min(self.duration);
                looping += (self.duration - from) as f64 / 1e9 * 4.0 / rtt;
            }
        }
        let mut fixed = (self.nodes.len() + self.faults.len() + self.actions.len()) as f64 + fixed_bursts;
        for rf in &self.random_faults {
            let span = rf.until.min(self.duration).saturating_sub(rf.from) as f64;
            fixed += span / rf.mean_interval.max(1) as f64;
        }
        let events = seconds * per_second + looping + fixed;
        let events = if events.is_finite() && events < u64::MAX as f64 { events.ceil() as u64 } else { u64::MAX };
        let seconds = (events as f64 - looping).max(0.0) / 4e6 + looping * 4.4e-6;
        WorkEstimate { events, trace_bytes: events.saturating_mul(200), seconds }
    }
}

#[cfg(test)]
mod tests {
    use super::RestartBackoff;

    const S: u64 = 1_000_000_000;

    /// The kubelet's CrashLoopBackOff (docs/sources/kubernetes.md §3): the first restart at
    /// once, then 10, 20, 40, 80, 160, 300, 300 s; an exit more than 600 s after the previous
    /// one starts afresh (at once, then 10 s).
    #[test]
    fn crashloop_delays_double_to_five_minutes_and_reset_after_ten_minutes_up() {
        let mut entry = None;
        let mut now = 0;
        let mut delays = Vec::new();
        for _ in 0..8 {
            let (delay, next) = RestartBackoff::crashloop_next(entry, now);
            delays.push(delay / S);
            entry = Some(next);
            now += delay + 5 * S; // restarted, up 5 s, dies again
        }
        assert_eq!(delays, [0, 10, 20, 40, 80, 160, 300, 300]);
        let (delay, next) = RestartBackoff::crashloop_next(entry, now + 601 * S);
        assert_eq!((delay, next.0), (0, 10 * S), "up more than 10 min: afresh");
        let (delay, _) = RestartBackoff::crashloop_next(entry, entry.unwrap().1 + 600 * S);
        assert_eq!(delay, 300 * S, "exactly 600 s is not past it");
    }
}
