//! One row per elector library: everything leasesim knows about a library outside its loop,
//! in one place, reached by one exhaustive match ([`Algorithm::library`]).
//!
//! Adding a library is a new file with its loop (implementing [`super::ElectorLoop`]), a
//! variant in the [`libraries!`] table below with its row, and an [`super::Elector`] variant if
//! the loop is a new type; the compiler names every other place (there is no `_ =>` fallback
//! on an algorithm anywhere). The facts in each row come from the source it names;
//! `docs/algorithms.md` and `docs/sources/` cite the files and lines.

use super::config::{AfterLost, ClientGoVersion, ConfigError, ElectorConfig};
use super::{Elector, csharp, fabric8, java, kube_coordinate, kube_leader_election, kube_lease_manager, kubert};
use super::{loops, manager, nestjs, python};
use crate::rng::ComponentRng;
use crate::sym::Sym;
use crate::time::{NANOS_PER_SEC, Nanos};
use std::sync::Arc;

const S: Nanos = NANOS_PER_SEC;

/// Where a library's behaviour was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    /// `owner/name` on GitHub.
    pub repo: &'static str,
    /// The commit the modelled code was read at.
    pub commit: &'static str,
    /// The release(s) that code is.
    pub version: &'static str,
}

/// A library's default request timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestTimeout {
    /// No timeout: a request whose answer never comes waits for ever.
    None,
    Fixed(Nanos),
    /// client-go's `NewFromKubeconfig` (and controller-runtime's): `max(1s, RenewDeadline/2)`.
    HalfRenewDeadline,
}

impl RequestTimeout {
    pub fn resolve(self, renew_deadline: Nanos) -> Option<Nanos> {
        match self {
            RequestTimeout::None => None,
            RequestTimeout::Fixed(t) => Some(t),
            RequestTimeout::HalfRenewDeadline => Some((renew_deadline / 2).max(NANOS_PER_SEC)),
        }
    }
}

/// Which client-go release a node of this library runs, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientGoRelease {
    /// Not client-go: the `client_go`, `events`, `labels` and `healthz` keys do not apply.
    None,
    /// Always this release (`client-go-legacy` is v0.26): the `client_go` key does not apply.
    Fixed(ClientGoVersion),
    /// The node's `client_go` key, this one by default.
    Chosen(ClientGoVersion),
}

/// The field manager a library writes its Lease with, unless `lease_field_manager` says
/// otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldManager {
    /// The node's identity.
    Identity,
    /// This prefix and the identity.
    Prefixed(&'static str),
    /// One name shared by every instance.
    Shared(&'static str),
}

impl FieldManager {
    pub fn for_identity(self, identity: &str) -> String {
        match self {
            FieldManager::Identity => identity.to_string(),
            FieldManager::Prefixed(prefix) => format!("{prefix}{identity}"),
            FieldManager::Shared(name) => name.to_string(),
        }
    }
}

/// How the node's HTTP layer retries an answer that carries a Retry-After.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfter {
    /// client-go's `rest` client: 429 and 5xx, every verb, up to 10 tries.
    ClientGo,
    /// urllib3's default `Retry(3)`: 413, 429 and 503 on GET and PUT, 3 retries.
    Urllib3,
}

/// Which node keys a library's nodes accept, beyond the common ones. `client_go`, `events`,
/// `labels` (v0.34+) and `healthz` follow [`Library::client_go`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keys {
    /// `expiry` and `fast_path`: the node runs client-go's loop ([`loops::LoopElector`]).
    pub client_go_loop: bool,
    /// `grace`: a renew grace before the lease's expiry.
    pub grace: bool,
    /// `drain`: controller-runtime's runnables draining after a graceful stop.
    pub drain: bool,
}

/// Everything leasesim knows about one library outside its loop.
#[derive(Clone, Copy, Debug)]
pub struct Library {
    /// The `algorithm` value a scenario names it by.
    pub name: &'static str,
    /// How messages name it ("the Python client").
    pub called: &'static str,
    pub source: Source,
    /// Who refuses a configuration [`Self::validate`] rejects, as messages quote it.
    pub refuser: &'static str,
    /// The library's own checks of a configuration, in its order and words.
    pub validate: fn(&ElectorConfig) -> Result<(), ConfigError>,
    /// LeaseDuration, RenewDeadline, RetryPeriod, grace: the library's defaults (or its callers').
    pub durations: [Nanos; 4],
    pub request_timeout: RequestTimeout,
    /// What the process does when `Run` returns (restarts wait `restart_delay`).
    pub after_lost: AfterLostDefault,
    /// The kubelet's first crash-loop back-off.
    pub restart_delay: Nanos,
    pub client_go: ClientGoRelease,
    pub keys: Keys,
    pub field_manager: FieldManager,
    /// Keeps a watch on its Lease: the world delivers every change of it (kube-coordinate).
    pub watches_lease: bool,
    /// Its lock writes some requests as JSON with the client's own serialisation (the Python
    /// client's `isoformat` times).
    pub json_lock: bool,
    /// Its lock discards the answer of a patch (fabric8): the cached Lease stays the last Get's.
    pub ignores_patch_answers: bool,
    pub retry_after: RetryAfter,
    /// Which closed form says whether its settings let a cut-off leader overlap the next.
    pub envelope: Envelope,
    /// What it does when the leader's work ends ([`WorkEnd`]); may depend on the release.
    pub work_ends: fn(WorkEnd, &ElectorConfig) -> AfterWorkEnds,
    /// The releases a node can name with the `version` key, the default (newest) first; the
    /// node's [`ElectorConfig::version`] indexes it. Empty: one release is modelled
    /// ([`Source::version`]) and the key is refused. client-go's releases are `client_go`.
    pub versions: &'static [&'static str],
    /// The loop, built for one node.
    pub build: fn(Arc<ElectorConfig>, Sym, ComponentRng) -> Elector,
}

/// How the leader's work — what the started-leading callback runs — ends in a `work` fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkEnd {
    /// The callback returns (the work is done, or gave up quietly).
    Returns,
    /// The callback raises: a Go panic, a Python or Java exception, a runnable's error.
    Raises,
    /// The callback blocks for ever (a deadlock): it neither works nor returns.
    Blocks,
}

impl WorkEnd {
    pub const NAMES: [&'static str; 3] = ["returns", "raises", "blocks"];

    pub fn parse(text: &str) -> Option<WorkEnd> {
        match text {
            "returns" => Some(WorkEnd::Returns),
            "raises" => Some(WorkEnd::Raises),
            "blocks" => Some(WorkEnd::Blocks),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            WorkEnd::Returns => "returns",
            WorkEnd::Raises => "raises",
            WorkEnd::Blocks => "blocks",
        }
    }
}

/// What a library does when its leader's work ends ([`WorkEnd`]), as its source says
/// (docs/algorithms.md, "When the leader's work ends").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterWorkEnds {
    /// Nothing watches the work: the elector renews on and the Lease is held with no work
    /// running, for as long as the process lives.
    Unnoticed,
    /// The process dies at once (an unrecovered panic in any goroutine ends a Go program): no
    /// release, no callbacks; the kubelet starts it again.
    ProcessDies,
    /// The elector returns at the top of its next renew round and calls its stopped-leading
    /// callback, without releasing; then the process does what `after_lost` says.
    ElectorStopsNextRound,
    /// The process stops as on SIGTERM (its run context is cancelled: release if
    /// `release_on_cancel`), exits with the error and is started again by the kubelet.
    GracefulStop,
}

impl AfterWorkEnds {
    pub fn name(self) -> &'static str {
        match self {
            AfterWorkEnds::Unnoticed => "unnoticed",
            AfterWorkEnds::ProcessDies => "process-dies",
            AfterWorkEnds::ElectorStopsNextRound => "elector-stops-next-round",
            AfterWorkEnds::GracefulStop => "graceful-stop",
        }
    }
}

/// Go libraries on client-go's `Run`: `go OnStartedLeading(ctx)` (leaderelection.go:220) is
/// not watched, so a return or a block goes unnoticed; a panic in that goroutine is not
/// recovered (Run's `HandleCrash` is deferred on Run's own goroutine, :212) and ends the
/// program.
fn work_ends_client_go(end: WorkEnd, _: &ElectorConfig) -> AfterWorkEnds {
    match end {
        WorkEnd::Raises => AfterWorkEnds::ProcessDies,
        WorkEnd::Returns | WorkEnd::Blocks => AfterWorkEnds::Unnoticed,
    }
}

/// controller-runtime: the work is a leader-election runnable. One that returns nil is only
/// marked done (runnable_group.go:257); one that returns an error stops the manager
/// (runnable_group.go:260-281, internal.go:491-493), which exits with it.
fn work_ends_controller_runtime(end: WorkEnd, _: &ElectorConfig) -> AfterWorkEnds {
    match end {
        WorkEnd::Raises => AfterWorkEnds::GracefulStop,
        WorkEnd::Returns | WorkEnd::Blocks => AfterWorkEnds::Unnoticed,
    }
}

/// The Python client: the callback runs in its own thread. Before 37.0.0 nothing watches it;
/// from 37.0.0 (`c0b60e0805`, PR #2670) an exception sets an Event the renew loop checks at
/// the top of each round (leaderelection.py:58-74, :96-100).
fn work_ends_python(end: WorkEnd, config: &ElectorConfig) -> AfterWorkEnds {
    match end {
        // versions: 0 = 37.0.0, 1 = 37.0.0a1 (both have the fix), 2 = 36.0.3.
        WorkEnd::Raises if config.version <= 1 => AfterWorkEnds::ElectorStopsNextRound,
        _ => AfterWorkEnds::Unnoticed,
    }
}

/// Libraries whose elector never looks at the work once it has started it: the Java client
/// (the hook's exception is kept in a discarded Future, LeaderElector.java:163), fabric8, the
/// C# client and nestjs (their callbacks start the work and return: the work's end is in its
/// own thread or promise), and the Rust crates, which have no callback (the work is the
/// application's own task; tokio keeps a spawned task's panic in its JoinHandle).
fn work_ends_unnoticed(_: WorkEnd, _: &ElectorConfig) -> AfterWorkEnds {
    AfterWorkEnds::Unnoticed
}

/// Which closed form says whether a library's settings let a cut-off leader overlap the next
/// one (the per-Lease "safe / can overlap" label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Envelope {
    /// client-go's loop: a cut-off leader acts for RP + RD after its last renewal and a
    /// follower takes over LD after it, so RD + RP < LD is safe under a partition with perfect
    /// clocks (docs/safety-envelope.md).
    ClientGo,
    /// None derived for this library's loop (its leader's stop is not bounded by RD + RP, or
    /// nobody has worked it out): a run's dual-leader windows are the answer.
    NoClosedForm,
}

/// [`AfterLost`] without the restart delay, which [`Library::restart_delay`] gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterLostDefault {
    Restart,
    Exit,
    Rejoin,
}

impl AfterLostDefault {
    pub fn name(self) -> &'static str {
        match self {
            AfterLostDefault::Restart => "restart",
            AfterLostDefault::Exit => "exit",
            AfterLostDefault::Rejoin => "rejoin",
        }
    }
}

impl Library {
    pub fn after_lost(&self) -> AfterLost {
        match self.after_lost {
            AfterLostDefault::Restart => AfterLost::Restart { delay: self.restart_delay },
            AfterLostDefault::Exit => AfterLost::Exit,
            AfterLostDefault::Rejoin => AfterLost::Rejoin,
        }
    }

    /// The release a node runs by default, if it runs client-go.
    pub fn default_client_go(&self) -> Option<ClientGoVersion> {
        match self.client_go {
            ClientGoRelease::None => None,
            ClientGoRelease::Fixed(v) | ClientGoRelease::Chosen(v) => Some(v),
        }
    }
}

/// The enum of algorithms, its list and its rows, from one table.
macro_rules! libraries {
    ($($(#[$doc:meta])* $variant:ident => $row:expr,)*) => {
        /// Which library (or rule) a node follows. Every variant is a real implementation's
        /// behaviour; its row ([`Algorithm::library`]) names the source.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Algorithm {
            $($(#[$doc])* $variant,)*
        }

        impl Algorithm {
            /// Every algorithm, in the table's order.
            pub const ALL: &[Algorithm] = &[$(Algorithm::$variant),*];

            /// This algorithm's row.
            pub fn library(self) -> &'static Library {
                match self {
                    $(Algorithm::$variant => const { &$row },)*
                }
            }
        }
    };
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        self.library().name
    }

    pub fn parse(s: &str) -> Option<Algorithm> {
        Algorithm::ALL.iter().copied().find(|a| a.name() == s)
    }

    /// Runs client-go's loop, so client-go's keys (`expiry`, `fast_path`) apply.
    pub fn runs_client_go_loop(self) -> bool {
        self.library().keys.client_go_loop
    }

    /// Keeps a watch on its Lease ([`Library::watches_lease`]).
    pub fn watches_lease(self) -> bool {
        self.library().watches_lease
    }
}

const CLIENT_GO_SOURCE: Source =
    Source {
        repo: "kubernetes/client-go", commit: "32ce75a7d6bc", version: "v0.26 … v0.37 (the node's `client_go`)"
    };

const CLIENT_GO_KEYS: Keys = Keys { client_go_loop: true, grace: false, drain: false };
const OWN_LOOP: Keys = Keys { client_go_loop: false, grace: false, drain: false };

/// client-go and its callers (kube-controller-manager, the scheduler): 15 s / 10 s / 2 s.
const CLIENT_GO: Library = Library {
    name: "client-go",
    called: "client-go",
    source: CLIENT_GO_SOURCE,
    refuser: "client-go",
    validate: ElectorConfig::validate_client_go,
    durations: [15 * S, 10 * S, 2 * S, 0],
    request_timeout: RequestTimeout::HalfRenewDeadline,
    after_lost: AfterLostDefault::Restart,
    restart_delay: 10 * S,
    client_go: ClientGoRelease::Chosen(ClientGoVersion::LATEST),
    keys: CLIENT_GO_KEYS,
    field_manager: FieldManager::Identity,
    watches_lease: false,
    json_lock: false,
    ignores_patch_answers: false,
    retry_after: RetryAfter::ClientGo,
    envelope: Envelope::ClientGo,
    work_ends: work_ends_client_go,
    versions: &[],
    build: |config, me, rng| Elector::Loop(loops::LoopElector::new(config, me, rng)),
};

/// hendrikmaus/kube-leader-election (Rust, kube 3): a library call the app polls.
const KUBE_LEADER_ELECTION: Library = Library {
    name: "kube-leader-election",
    called: "kube-leader-election",
    source: Source { repo: "hendrikmaus/kube-leader-election", commit: "24a6596e", version: "v0.43.0" },
    refuser: "kube-leader-election",
    validate: ElectorConfig::validate_nothing,
    // A ttl of 15 s polled every 5 s (its README); RD unused.
    durations: [15 * S, 10 * S, 5 * S, 0],
    // kube 3's read timeout (kube 3.1.0 config/mod.rs:400-402).
    request_timeout: RequestTimeout::Fixed(295 * S),
    after_lost: AfterLostDefault::Restart,
    restart_delay: 10 * S,
    client_go: ClientGoRelease::None,
    keys: OWN_LOOP,
    // `PatchParams::apply(holder_id)`.
    field_manager: FieldManager::Identity,
    watches_lease: false,
    json_lock: false,
    ignores_patch_answers: false,
    retry_after: RetryAfter::ClientGo,
    envelope: Envelope::NoClosedForm,
    work_ends: work_ends_unnoticed,
    versions: &[],
    build: |config, me, _| {
        Elector::KubeLeaderElection(kube_leader_election::KubeLeaderElectionElector::new(config, me))
    },
};

const CSHARP: Library = Library {
    name: "csharp-client",
    called: "csharp-client",
    source: Source { repo: "kubernetes-client/csharp", commit: "60fe2b96", version: "v19.0.2 and later (06c216b9)" },
    refuser: "the C# client",
    validate: ElectorConfig::validate_nothing,
    // LeaderElectionConfig.cs:7-11.
    durations: [15 * S, 10 * S, 2 * S, 0],
    // `HttpClientTimeout` (KubernetesClientConfiguration.cs:99).
    request_timeout: RequestTimeout::Fixed(100 * S),
    // RunAndTryToHoldLeadershipForeverAsync re-runs in-process.
    after_lost: AfterLostDefault::Rejoin,
    restart_delay: 10 * S,
    client_go: ClientGoRelease::None,
    keys: OWN_LOOP,
    field_manager: FieldManager::Identity,
    watches_lease: false,
    json_lock: false,
    ignores_patch_answers: false,
    retry_after: RetryAfter::ClientGo,
    envelope: Envelope::NoClosedForm,
    work_ends: work_ends_unnoticed,
    // "18.0.13" is `csharp-client-pre-2026`'s behaviour, named as the other libraries' releases are.
    versions: &["19.0.2", "18.0.13"],
    build: |config, me, rng| Elector::CSharp(csharp::CSharpElector::new(config, me, rng)),
};

libraries! {
    /// client-go ≥ v0.30: expiry from the local observedTime and the *record's* duration,
    /// optimistic fast-path renewals, PUT with resourceVersion.
    ClientGo => CLIENT_GO,
    /// client-go before v0.27: the follower uses its *own* configured LeaseDuration, and there
    /// is no fast path (it arrived in v0.30).
    ClientGoLegacy => Library {
        name: "client-go-legacy",
        source: Source { version: "v0.26", ..CLIENT_GO_SOURCE },
        called: "client-go-legacy",
        client_go: ClientGoRelease::Fixed(ClientGoVersion::LEGACY),
        ..CLIENT_GO
    },
    /// Expired iff `renewTime + leaseDurationSeconds < local wall now` (the seed lab's expiry
    /// script) on client-go's loop; takeover fenced by resourceVersion.
    RenewTime => Library {
        name: "renew-time",
        called: "renew-time",
        source: Source { version: "client-go's loop with the seed lab's renewTime rule", ..CLIENT_GO_SOURCE },
        client_go: ClientGoRelease::None,
        ..CLIENT_GO
    },
    /// `kube-leader-election` under the name it had when it was client-go's loop with that
    /// crate's rule and unfenced writes.
    RenewTimeUnfenced => Library { name: "renew-time-unfenced", called: "renew-time-unfenced", ..KUBE_LEADER_ELECTION },
    /// The official Python client (37.0.0: `leaderelection.py` and the Lease lock of PR #2690).
    PythonClient => Library {
        name: "python-client",
        called: "the Python client",
        source: Source { repo: "kubernetes-client/python", commit: "024658493d12", version: "37.0.0" },
        // The Python client's own checks are not modelled: client-go's apply.
        refuser: "client-go",
        validate: ElectorConfig::validate_client_go,
        durations: [15 * S, 10 * S, 2 * S, 0],
        // `LeaseLock` passes no `_request_timeout`.
        request_timeout: RequestTimeout::None,
        after_lost: AfterLostDefault::Restart,
        restart_delay: 10 * S,
        client_go: ClientGoRelease::None,
        keys: OWN_LOOP,
        field_manager: FieldManager::Identity,
        watches_lease: false,
        json_lock: true,
        ignores_patch_answers: false,
        retry_after: RetryAfter::Urllib3,
        envelope: Envelope::NoClosedForm,
        work_ends: work_ends_python,
        versions: &["37.0.0", "37.0.0a1", "36.0.3"],
        build: |config, me, _| Elector::Python(python::PythonElector::new(config, me)),
    },
    /// kubernetes-sigs/controller-runtime's manager: client-go's elector (v0.36 by default, the
    /// release controller-runtime v0.24 depends on) with the manager's stop procedure.
    ControllerRuntime => Library {
        name: "controller-runtime",
        called: "controller-runtime",
        source: Source { repo: "kubernetes-sigs/controller-runtime", commit: "3be3f1bf", version: "v0.24.1" },
        client_go: ClientGoRelease::Chosen(ClientGoVersion::CONTROLLER_RUNTIME),
        keys: Keys { drain: true, ..CLIENT_GO_KEYS },
        work_ends: work_ends_controller_runtime,
        build: |config, me, rng| Elector::Manager(manager::ManagerElector::new(config, me, rng)),
        ..CLIENT_GO
    },
    /// fabric8io/kubernetes-client's `LeaderElector` (Java, v7.7.0; `version` picks 7.5.0, 6.9.0, 6.8.1).
    Fabric8 => Library {
        name: "fabric8",
        called: "fabric8",
        source: Source { repo: "fabric8io/kubernetes-client", commit: "ceb92181", version: "v7.7.0" },
        refuser: "fabric8's LeaderElectorBuilder",
        validate: fabric8::validate,
        // fabric8 has no defaults; leasesim uses 15/10/2.
        durations: [15 * S, 10 * S, 2 * S, 0],
        // The client's request timeout (Config:128).
        request_timeout: RequestTimeout::Fixed(10 * S),
        after_lost: AfterLostDefault::Restart,
        restart_delay: 10 * S,
        client_go: ClientGoRelease::None,
        keys: OWN_LOOP,
        field_manager: FieldManager::Identity,
        watches_lease: false,
        json_lock: false,
        ignores_patch_answers: true,
        retry_after: RetryAfter::ClientGo,
        envelope: Envelope::NoClosedForm,
        work_ends: work_ends_unnoticed,
        versions: &["7.7.0", "7.5.0", "6.9.0", "6.8.1"],
        build: |config, me, rng| Elector::Fabric8(fabric8::Fabric8Elector::new(config, me, rng)),
    },
    /// kubernetes-client/java's `LeaderElector`.
    JavaClient => Library {
        name: "java-client",
        called: "java-client",
        source: Source { repo: "kubernetes-client/java", commit: "4c6b3119", version: "the code at 4c6b3119" },
        refuser: "the Java client's LeaderElector",
        validate: java::validate,
        // The Java client has no defaults; leasesim uses 15/10/2.
        durations: [15 * S, 10 * S, 2 * S, 0],
        // OkHttp's read timeout 0 (ClientBuilder.java:70-71).
        request_timeout: RequestTimeout::None,
        // `run()` returns and nothing calls it again.
        after_lost: AfterLostDefault::Exit,
        restart_delay: 10 * S,
        client_go: ClientGoRelease::None,
        keys: OWN_LOOP,
        field_manager: FieldManager::Identity,
        watches_lease: false,
        json_lock: false,
        ignores_patch_answers: false,
        retry_after: RetryAfter::ClientGo,
        envelope: Envelope::NoClosedForm,
        work_ends: work_ends_unnoticed,
        // 27.0.0 behaves as 4c6b3119 (and as every release from 19.0.0; 12.0.0–18.0.1 differ
        // only when an executor is slow to stop, which skips the release: not modelled).
        versions: &["27.0.0", "11.0.3"],
        build: |config, me, rng| Elector::Java(java::JavaElector::new(config, me, rng)),
    },
    /// kubernetes-client/csharp's `LeaderElector` from commit 06c216b9 (v19.0.2): expiry from
    /// the record's leaseDurationSeconds.
    CSharpClient => CSHARP,
    /// The same before 06c216b9: expiry from the elector's own configured LeaseDuration.
    CSharpClientPre2026 => Library {
        name: "csharp-client-pre-2026",
        called: "csharp-client-pre-2026",
        source: Source { version: "before 06c216b9 (v19.0.2)", ..CSHARP.source },
        versions: &[],
        ..CSHARP
    },
    /// Precise-Finance/nestjs-k8s-leader-election (TypeScript, v2.0.0).
    NestJs => Library {
        name: "nestjs",
        called: "nestjs",
        source: Source { repo: "Precise-Finance/nestjs-k8s-leader-election", commit: "752383eb", version: "v2.0.0" },
        refuser: "nestjs",
        validate: ElectorConfig::validate_nothing,
        // Renews every `renewalInterval` = 10 s (the retry period here) with LD 20 s
        // (service.ts:47-52); RD unused.
        durations: [20 * S, 10 * S, 10 * S, 0],
        // client-node 0.20 sets none.
        request_timeout: RequestTimeout::None,
        after_lost: AfterLostDefault::Restart,
        restart_delay: 10 * S,
        client_go: ClientGoRelease::None,
        keys: OWN_LOOP,
        field_manager: FieldManager::Identity,
        watches_lease: false,
        json_lock: false,
        ignores_patch_answers: false,
        retry_after: RetryAfter::ClientGo,
        envelope: Envelope::NoClosedForm,
        work_ends: work_ends_unnoticed,
        versions: &[],
        build: |config, me, _| Elector::NestJs(nestjs::NestJsElector::new(config, me)),
    },
    /// alex-karpenko/kube-lease-manager (Rust, v0.12.0).
    KubeLeaseManager => Library {
        name: "kube-lease-manager",
        called: "kube-lease-manager",
        source: Source { repo: "alex-karpenko/kube-lease-manager", commit: "da8e8aa7", version: "v0.12.0" },
        refuser: "kube-lease-manager's LeaseParams::new",
        validate: kube_lease_manager::validate,
        // LD 30 s, grace 5 s (manager.rs:24-26); RD and RP unused.
        durations: [30 * S, 10 * S, 2 * S, 5 * S],
        // kube 4 sets no read timeout (`8cb0d011`).
        request_timeout: RequestTimeout::None,
        after_lost: AfterLostDefault::Restart,
        restart_delay: 10 * S,
        client_go: ClientGoRelease::None,
        keys: Keys { grace: true, ..OWN_LOOP },
        // `kube-lease-manager-<identity>` (manager.rs:328).
        field_manager: FieldManager::Prefixed("kube-lease-manager-"),
        watches_lease: false,
        json_lock: false,
        ignores_patch_answers: false,
        retry_after: RetryAfter::ClientGo,
        envelope: Envelope::NoClosedForm,
        work_ends: work_ends_unnoticed,
        versions: &[],
        build: |config, me, rng| {
            Elector::KubeLeaseManager(kube_lease_manager::KubeLeaseManagerElector::new(config, me, rng))
        },
    },
    /// thedodd/kube-coordinate (Rust, v0.2.1).
    KubeCoordinate => Library {
        name: "kube-coordinate",
        called: "kube-coordinate",
        source: Source { repo: "thedodd/kube-coordinate", commit: "a1713ae1", version: "v0.2.1" },
        refuser: "kube-coordinate's Config::validate",
        validate: kube_coordinate::validate,
        // lib.rs:152-165.
        durations: [15 * S, 10 * S, 2 * S, 0],
        // Its `api_timeout` (lib.rs:152-165).
        request_timeout: RequestTimeout::Fixed(5 * S),
        after_lost: AfterLostDefault::Restart,
        restart_delay: 10 * S,
        client_go: ClientGoRelease::None,
        keys: OWN_LOOP,
        // The group's `manager`, which its docs ask to be shared (lib.rs:121-126).
        field_manager: FieldManager::Shared("kube-coordinate"),
        watches_lease: true,
        json_lock: false,
        ignores_patch_answers: false,
        retry_after: RetryAfter::ClientGo,
        envelope: Envelope::NoClosedForm,
        work_ends: work_ends_unnoticed,
        versions: &[],
        build: |config, me, rng| {
            Elector::KubeCoordinate(kube_coordinate::KubeCoordinateElector::new(config, me, rng))
        },
    },
    /// olix0r/kubert's `lease` module (Rust, v0.25.0).
    Kubert => Library {
        name: "kubert",
        called: "kubert",
        source: Source { repo: "olix0r/kubert", commit: "f46649ed", version: "v0.25.0" },
        refuser: "kubert",
        validate: ElectorConfig::validate_nothing,
        // `ClaimParams` LD 30 s, grace 1 s (lease.rs:118-125); RD and RP unused.
        durations: [30 * S, 10 * S, 2 * S, S],
        // `API_TIMEOUT` (lease.rs:164).
        request_timeout: RequestTimeout::Fixed(10 * S),
        after_lost: AfterLostDefault::Restart,
        restart_delay: 10 * S,
        client_go: ClientGoRelease::None,
        keys: Keys { grace: true, ..OWN_LOOP },
        // `"kubert"`, shared by every instance (lease.rs:161).
        field_manager: FieldManager::Shared("kubert"),
        watches_lease: false,
        json_lock: false,
        ignores_patch_answers: false,
        retry_after: RetryAfter::ClientGo,
        envelope: Envelope::NoClosedForm,
        work_ends: work_ends_unnoticed,
        versions: &[],
        build: |config, me, _| Elector::Kubert(kubert::KubertElector::new(config, me)),
    },
    /// hendrikmaus/kube-leader-election (Rust, v0.43.0), polled as its README does.
    KubeLeaderElection => KUBE_LEADER_ELECTION,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse_back() {
        for &a in Algorithm::ALL {
            assert_eq!(Algorithm::parse(a.name()), Some(a));
        }
        let mut names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Algorithm::ALL.len());
    }

    /// Each row builds the loop it says: a client-go release runs client-go's loop (or the
    /// manager around it), every other library its own.
    #[test]
    fn rows_build_their_own_loops() {
        for &a in Algorithm::ALL {
            let lib = a.library();
            let config = ElectorConfig::new("a", a);
            let elector = (lib.build)(config.into(), Sym(1), ComponentRng::new(1, "test"));
            let client_go_loop = matches!(elector, Elector::Loop(_) | Elector::Manager(_));
            assert_eq!(client_go_loop, lib.keys.client_go_loop, "{}", lib.name);
            assert_eq!(elector.config().algorithm, a);
        }
    }

    /// Every library's expiry decision on a Lease another holder renewed at the instant it read
    /// it: valid a second before the LeaseDuration has passed, expired a second after, on
    /// whichever clock and duration the library uses (both clocks and both durations agree
    /// here, so every rule must).
    #[test]
    fn every_library_judges_a_lease_expired_after_its_duration() {
        use super::super::record::micros_of;
        use super::super::{LockOp, Now, Output, Outputs, Record};
        for &a in Algorithm::ALL {
            let config = ElectorConfig::new("me", a);
            let ld = config.lease_duration as i64;
            let ld_s = config.lease_duration_seconds();
            let mut elector = Elector::new(config, Sym(1), ComponentRng::new(1, "test"));
            let mut out = Outputs::new(true);
            let t0 = Now { mono: 1_000 * S as i64, wall: 1_700_000_000 * S as i64 };
            elector.start(t0, &mut out);
            // Before a read: nothing (or a library's empty cache, which is expired).
            assert_ne!(elector.lease_expired(t0), Some(false), "{a:?} read nothing yet");
            let held = Record {
                holder_identity: Sym(2),
                lease_duration_seconds: ld_s,
                acquire_time_micros: Some(micros_of(t0.wall)),
                renew_time_micros: Some(micros_of(t0.wall)),
                leader_transitions: 1,
                ..Record::default()
            };
            // Answer its reads (a library may read more than once before it judges).
            for _ in 0..4 {
                let reads = out.iter().any(|o| matches!(o, Output::Send { op: LockOp::Get, .. }));
                out.clear();
                if !reads {
                    break;
                }
                elector.on_result(t0, Ok(held), &mut out);
            }
            let at = |d: i64| Now { mono: t0.mono + d, wall: t0.wall + d };
            assert_eq!(elector.lease_expired(at(ld - S as i64)), Some(false), "{a:?} before its duration");
            assert_eq!(elector.lease_expired(at(ld + S as i64)), Some(true), "{a:?} after its duration");
        }
    }
}
