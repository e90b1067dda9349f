//! `leasesim serve`: the simulated API server over HTTP, for the real kubectl and real client
//! libraries, with faults per client (docs/serve.md).
//!
//! One API server: every answer comes from the `ApiServer` inside a sim-core `World` driven in
//! real time (`core.rs`); a scenario's simulated electors run on it beside real clients. This
//! module is the adapter: flags, the listener, the kubeconfig, and the report at the end.
//!
//! - `core.rs` — the served world, authentication, faults, answers, the record;
//! - `kube.rs` — the Kubernetes API paths → the API server's requests and answers;
//! - `admin.rs`, `page.rs` — leasesim's own endpoints and the page;
//! - `http.rs` — hyper on tokio: connections, bodies, watches, bounds;
//! - `faults.rs`, `clients.rs`, `clock.rs`, `proto.rs`, `judge.rs`, `http_types.rs`.

mod admin;
mod base64;
pub mod clients;
pub mod clock;
pub mod core;
pub mod faults;
pub mod http;
pub mod http_types;
pub mod judge;
pub mod kube;
mod page;
pub mod playground;
mod proto;
mod tls;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use sim_core::model::WorldSpec;
use sim_core::time::{Nanos, format_duration, secs};
use sim_core::world::{RunResult, Span, SpanKind, World};

use crate::error::CliError;
pub use clients::{ADMIN, Clients};
pub use clock::{ClockMode, ServeClock};
use core::Core;

/// The days a served world may run (a session longer than this is ended then).
const SERVE_DAYS: u64 = 30;

#[derive(clap::Args)]
pub struct ServeFlags {
    /// A scenario (file or shipped name) whose objects, RBAC and simulated electors to serve;
    /// without one the server starts empty, as a new cluster does.
    pub scenario: Option<String>,
    /// Address to listen on (loopback by default; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: String,
    /// Write the port here once the server accepts connections.
    #[arg(long, value_name = "FILE")]
    pub port_file: Option<PathBuf>,
    /// Where to write the kubeconfig (default: kubeconfig in the session folder, printed).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// `wall` (rate 1: real clients read the kernel's clock) or `scaled:K` (K times faster, for
    /// clients run under libfaketime).
    #[arg(long, default_value = "wall", value_parser = ClockMode::parse)]
    pub clock: ClockMode,
    /// A further user with its own token (repeatable): an elector you run yourself.
    #[arg(long = "client", value_name = "NAME")]
    pub clients: Vec<String>,
    /// Fault rules for real clients (TOML, `[[faults]]` tables; docs/serve.md).
    #[arg(long, value_name = "FILE")]
    pub faults: Option<PathBuf>,
    /// The seed of tokens and of random faults.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The Kubernetes version `/version` reports (it picks kubectl's binary), as 1.MINOR.
    #[arg(long, default_value = "1.32")]
    pub kubernetes_version: String,
    /// Where the record and the report are written when the server stops (Ctrl-C).
    #[arg(long, default_value = "out/serve")]
    pub out: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultFile {
    #[serde(default)]
    faults: Vec<faults::RuleDoc>,
}

/// What a session serves: the world, the ServiceAccounts that get tokens, its name.
struct Served {
    spec: WorldSpec,
    accounts: Vec<(String, String)>,
    name: String,
}

/// The world a session serves: the scenario's (epoch now, run for days) or an empty one.
fn served_world(flags: &ServeFlags, epoch: i64) -> Result<Served, CliError> {
    let (mut spec, name) = match &flags.scenario {
        Some(name) => {
            let loaded = crate::shipped::load_named(name, &[])?;
            let spec =
                loaded.scenario.to_world_spec(true).map_err(|e| crate::scenario_file::scenario_error(&loaded, &e))?;
            (spec, loaded.scenario.name.clone())
        }
        None => {
            // As a new cluster: namespaces default and kube-system, nothing else.
            let mut spec = WorldSpec::basic(flags.seed, 0, sim_core::elector::Algorithm::ClientGo, secs(1));
            spec.nodes.clear();
            spec.setup_objects = std::sync::Arc::new(Vec::new());
            (spec, "serve".to_string())
        }
    };
    spec.epoch = epoch;
    spec.duration = SERVE_DAYS * 86_400 * 1_000_000_000;
    spec.trace = true;
    // Every ServiceAccount the scenario's nodes run as gets a token.
    let mut accounts: Vec<(String, String)> = Vec::new();
    for n in &spec.nodes {
        if let Some(rest) = n.user.name.strip_prefix("system:serviceaccount:")
            && let Some((ns, sa)) = rest.split_once(':')
        {
            accounts.push((ns.to_string(), sa.to_string()));
        }
    }
    for o in spec.setup_objects.iter() {
        if o["kind"] == "ServiceAccount" {
            let ns = o.pointer("/metadata/namespace").and_then(|v| v.as_str()).unwrap_or("default");
            let sa = o.pointer("/metadata/name").and_then(|v| v.as_str()).unwrap_or_default();
            accounts.push((ns.to_string(), sa.to_string()));
        }
    }
    Ok(Served { spec, accounts, name })
}

fn minor_of(text: &str) -> Result<u32, CliError> {
    text.strip_prefix("1.")
        .and_then(|m| m.parse::<u32>().ok())
        .filter(|m| (20..=40).contains(m))
        .ok_or_else(|| CliError::input(format!("--kubernetes-version {text:?}: expected 1.MINOR, such as 1.32")))
}

/// The first line of every kubeconfig serve writes: a file without it is not overwritten.
const KUBECONFIG_MARK: &str = "# written by leasesim serve";

fn write_kubeconfig(path: &Path, text: &str) -> Result<(), CliError> {
    if let Ok(existing) = std::fs::read_to_string(path)
        && !existing.starts_with(KUBECONFIG_MARK)
    {
        return Err(CliError::input(format!(
            "{}: exists and was not written by leasesim serve; choose another --kubeconfig",
            path.display()
        )));
    }
    std::fs::write(path, format!("{KUBECONFIG_MARK}\n{text}"))
        .map_err(|e| CliError::input(format!("{}: {e}", path.display())))
}

/// `leasesim serve`.
pub fn command(flags: ServeFlags) -> Result<ExitCode, CliError> {
    let minor = minor_of(&flags.kubernetes_version)?;
    crate::output::check_replaceable(&flags.out, crate::output::Command::Serve).map_err(CliError::input)?;
    let epoch = clock::wall_now();
    let Served { spec, accounts, name } = served_world(&flags, epoch)?;
    let clients = Clients::new(flags.seed, &accounts, &flags.clients);
    let world = World::new(spec.clone()).map_err(|e| CliError::input(e.to_string()))?;
    let mut core = Core::new(world, ServeClock::running(flags.clock), clients, flags.seed, epoch);
    core.minor = minor;
    if let Some(path) = &flags.faults {
        let text = std::fs::read_to_string(path).map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
        let file: FaultFile = toml::from_str(&text).map_err(|e| {
            let name = path.display().to_string();
            CliError::input(crate::scenario_file::located(&name, &text, e.span(), e.message().trim_end()))
        })?;
        for (i, doc) in file.faults.iter().enumerate() {
            core.faults.add(doc, 0).map_err(|m| CliError::input(format!("{}: faults[{i}]: {m}", path.display())))?;
        }
    }
    // The report goes to --out on stop: judged now, so a session's record is never left with
    // nowhere to go.
    crate::output::check_replaceable(&flags.out, crate::output::Command::Serve).map_err(CliError::input)?;
    let session = flags.out.with_extension("session");
    open_session(&session)?;
    core.record_to(&session.join("record.jsonl")).map_err(CliError::input)?;
    let running = spawn(core, &flags.listen, flags.clock.rate(), http::Limits::default()).map_err(CliError::input)?;
    // Ctrl-C (or SIGTERM) ends the session and writes the report; a second one exits at once.
    let stopping = std::sync::atomic::AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let _ = ctrlc::set_handler(move || {
        if stopping.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
        let _ = tx.send(());
    });
    let kubeconfig_path = flags.kubeconfig.clone().unwrap_or_else(|| session.join("kubeconfig"));
    write_kubeconfig(&kubeconfig_path, &running.kubeconfig())?;
    let kubeconfig_path = std::fs::canonicalize(&kubeconfig_path).unwrap_or(kubeconfig_path);
    if let Some(path) = &flags.port_file {
        std::fs::write(path, format!("{}\n", running.port))
            .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
    }
    println!("leasesim serve: the API server of {name:?} at {}", running.api_url());
    println!("export KUBECONFIG={}", kubeconfig_path.display());
    if let ClockMode::Scaled(k) = flags.clock {
        let start = chrono_free_rfc3339(running.shared.lock().epoch);
        println!(
            "clock: {k}x the wall clock. Run Python clients under it: faketime -f \"@{start} x{k}\" python3 …\n\
             (Go clients such as kubectl read the kernel's clock and will be off by that factor)"
        );
    }
    println!(
        "page: {}   live view (instructor): {}?token={}#live\nrecord: {}   stop: Ctrl-C (writes {})",
        running.page_url(),
        running.page_url(),
        running.admin_token(),
        session.join("record.jsonl").display(),
        flags.out.display()
    );
    let _ = rx.recv();
    let shared = running.shared.clone();
    running.stop();
    finish(&shared, &flags.out, &session, &spec, &name)
}

/// A server running on threads of its own: what `spawn` started.
pub struct Running {
    pub port: u16,
    host: String,
    pub ca_pem: String,
    pub shared: Arc<http::Shared>,
    shutdown: tokio::sync::watch::Sender<bool>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Running {
    pub fn api_url(&self) -> String {
        format!("https://{}:{}", self.host, self.port)
    }

    pub fn page_url(&self) -> String {
        format!("http://{}:{}/", self.host, self.port)
    }

    /// A kubeconfig for every user the server knows.
    pub fn kubeconfig(&self) -> String {
        self.shared.lock().clients.kubeconfig(&self.api_url(), &base64::encode(self.ca_pem.as_bytes()))
    }

    /// The administrator's bearer token.
    pub fn admin_token(&self) -> String {
        self.shared.lock().clients.admin().token.clone()
    }

    /// Stops accepting and ends every stream; the core (and its world) stays for the report.
    pub fn stop(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(std::time::Duration::from_secs(2));
        }
    }
}

/// Serves `core` on `listen` (port 0 picks one) from a runtime of two worker threads; the
/// world's clock runs `rate` times the wall clock.
pub fn spawn(mut core: Core, listen: &str, rate: f64, limits: http::Limits) -> Result<Running, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("leasesim-serve")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    let listener =
        runtime.block_on(tokio::net::TcpListener::bind(listen)).map_err(|e| format!("--listen {listen}: {e}"))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    if !address.ip().is_loopback() {
        eprintln!("warning: listening on {address}, beyond this machine: anyone who can reach it can use the API");
    }
    let tls = tls::make(address.ip())?;
    let host = if address.ip().is_unspecified() { "127.0.0.1".to_string() } else { address.ip().to_string() };
    let host = if host.contains(':') { format!("[{host}]") } else { host };
    core.address = address.to_string();
    let (revision_tx, revision_rx) = tokio::sync::watch::channel(0u64);
    let (live_tx, _) = tokio::sync::broadcast::channel(1024);
    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    core.revision = Some(revision_tx);
    core.live = Some(live_tx.clone());
    let shared = Arc::new(http::Shared {
        core: Mutex::new(core),
        revision: revision_rx,
        live: live_tx,
        shutdown: shutdown_rx,
        real_per_true: 1.0 / rate,
        limits,
    });
    runtime.spawn(http::serve(listener, shared.clone(), tls.config.clone()));
    runtime.spawn(tick(shared.clone()));
    Ok(Running {
        port: address.port(),
        host,
        ca_pem: tls.ca_pem,
        shared,
        shutdown: shutdown_tx,
        runtime: Some(runtime),
    })
}

/// Keeps the simulated part of the world running in real time, until shutdown.
async fn tick(shared: Arc<http::Shared>) {
    let mut shutdown = shared.shutdown.clone();
    loop {
        let wait = {
            let mut core = shared.lock();
            let next = core.tick();
            next.map(|t| core.clock.real_secs_until(t)).unwrap_or(0.1).clamp(0.001, 0.1)
        };
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs_f64(wait)) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// `YYYY-MM-DD HH:MM:SS` for faketime's absolute start.
fn chrono_free_rfc3339(unix_nanos: i64) -> String {
    let t = sim_core::api::Time::from_unix_nanos(unix_nanos).to_rfc3339();
    t.trim_end_matches('Z').replace('T', " ")
}

/// Marks the session folder as serve's; a folder of that name serve did not make is refused
/// (it is emptied and removed when the session ends).
const SESSION_MARK: &str = ".leasesim-serve-session";
/// What serve writes into its session folder: only these are removed when it ends.
const SESSION_FILES: [&str; 3] = [SESSION_MARK, "record.jsonl", "kubeconfig"];

fn open_session(session: &Path) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError::input(format!("{}: {e}", session.display()));
    if session.exists() && !session.join(SESSION_MARK).is_file() {
        return Err(CliError::input(format!(
            "{}: exists and was not made by leasesim serve; choose another --out (the session folder is named \
             after it)",
            session.display()
        )));
    }
    std::fs::create_dir_all(session).map_err(fail)?;
    std::fs::write(session.join(SESSION_MARK), "leasesim serve's session folder: removed when the session ends\n")
        .map_err(fail)
}

/// Removes what serve wrote into the session folder, then the folder if nothing else is in it.
fn close_session(session: &Path) {
    for file in SESSION_FILES {
        let _ = std::fs::remove_file(session.join(file));
    }
    let _ = std::fs::remove_dir(session);
}

/// The end of a session: the world's result, the real clients' leadership judged from the
/// record, written as a run's outputs beside `record.jsonl`.
fn finish(
    shared: &http::Shared,
    out: &Path,
    session: &Path,
    spec: &WorldSpec,
    name: &str,
) -> Result<ExitCode, CliError> {
    let mut core = shared.lock();
    let Some((mut result, end)) = core.finish() else { return Ok(ExitCode::SUCCESS) };
    merge_real_clients(&mut result, &core, end);
    result.metrics.api_requests += core.requests;
    for ((verb, status), n) in &core.by_verb_status {
        *result.metrics.api_requests_by_verb_status.entry(format!("{verb} {status}")).or_insert(0) += n;
    }
    let output = session_output(result, spec, name, core.requests);
    let mut staged = crate::output::StagedDir::new(out, crate::output::Command::Serve).map_err(CliError::input)?;
    for (file, bytes) in
        crate::outputs::report_files(&output, crate::report::ImageFormat::Svg).map_err(CliError::input)?
    {
        staged.write(&file, bytes).map_err(CliError::input)?;
    }
    staged.write_with("summary.json", |w| crate::outputs::Summary::of(&output).write(w)).map_err(CliError::input)?;
    staged.write_with("trace.jsonl", |w| crate::outputs::write_trace_jsonl(&output, w)).map_err(CliError::input)?;
    let record = std::fs::read(session.join("record.jsonl")).unwrap_or_default();
    staged.write("record.jsonl", record).map_err(CliError::input)?;
    let written = staged.commit().map_err(CliError::input)?;
    close_session(session);
    println!(
        "served {} requests over {}; dual-leader time {:.3} s in {} window(s); outputs: {}/",
        core.requests,
        format_duration(end),
        output.result.metrics.dual_leader_seconds,
        output.result.dual_windows.len(),
        written.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Adds the real clients that held a Lease to the world's result: a node each, its leader
/// spans as judged (`judge.rs`), and every Lease's dual-leader windows recomputed over the
/// simulated and the real leaders together.
pub fn merge_real_clients(result: &mut RunResult, core: &Core, end: Nanos) {
    let spans = judge::leaders(&core.lease_writes, &core.beliefs, core.epoch, end);
    let mut everyone: Vec<judge::LeaderSpan> = Vec::new();
    for s in result.spans.iter().filter(|s| s.kind == SpanKind::Leader) {
        everyone.push(judge::LeaderSpan {
            identity: result.node_names[s.node].clone(),
            lease: result.node_leases[s.node].clone(),
            from: s.from,
            until: s.until,
            reported: false,
        });
    }
    let simulated: Vec<String> = result.node_names.clone();
    for s in spans.into_iter().filter(|s| !simulated.contains(&s.identity)) {
        let node = match result.node_names.iter().position(|n| n == &s.identity) {
            Some(node) => node,
            None => {
                result.node_names.push(s.identity.clone());
                result.node_leases.push(s.lease.clone());
                result.metrics.nodes.insert(s.identity.clone(), Default::default());
                result.node_names.len() - 1
            }
        };
        result.spans.push(Span { node, kind: SpanKind::Running, from: 0, until: end });
        result.spans.push(Span { node, kind: SpanKind::Leader, from: s.from, until: s.until });
        if let Some(m) = result.metrics.nodes.get_mut(&s.identity) {
            m.acting_leader_seconds += (s.until - s.from) as f64 / 1e9;
            m.acquisitions += 1;
        }
        everyone.push(s);
    }
    result.spans.sort_by_key(|s| (s.node, s.kind, s.from));
    result.dual_windows = judge::dual_windows(&everyone);
    let m = &mut result.metrics;
    m.dual_leader_seconds = result.dual_windows.iter().map(|w| w.seconds()).fold(0.0, |a, b| a + b);
    m.dual_leader_windows = result.dual_windows.len() as u64;
    m.max_dual_leader_seconds = result.dual_windows.iter().map(|w| w.seconds()).fold(0.0, f64::max);
    // A Lease only real clients led is a Lease of the session too, and when it first had a
    // leader counts from anyone's span.
    for s in &everyone {
        let lm = m.leases.entry(s.lease.clone()).or_insert_with(|| sim_core::metrics::LeaseMetrics {
            first_leader_seconds: end as f64 / 1e9,
            ..Default::default()
        });
        let from = s.from as f64 / 1e9;
        if !lm.elected || from < lm.first_leader_seconds {
            lm.first_leader_seconds = from;
        }
        lm.elected = true;
    }
    m.leases_never_elected = m.leases.values().filter(|l| !l.elected).count() as u64;
    for (lease, lm) in m.leases.iter_mut() {
        let windows: Vec<_> = result.dual_windows.iter().filter(|w| &w.lease == lease).collect();
        lm.dual_leader_seconds = windows.iter().map(|w| w.seconds()).fold(0.0, |a, b| a + b);
        lm.dual_leader_windows = windows.len() as u64;
        lm.max_dual_leader_seconds = windows.iter().map(|w| w.seconds()).fold(0.0, f64::max);
    }
}

fn session_output(result: RunResult, spec: &WorldSpec, name: &str, requests: u64) -> crate::run::RunOutput {
    crate::run::RunOutput {
        history: None,
        expectations: Vec::new(),
        replay: format!("(a live session of leasesim serve: {requests} requests, record.jsonl)"),
        seed: spec.seed,
        unsafe_mode: spec.unsafe_mode,
        scenario_name: name.to_string(),
        description: "A live session of leasesim serve: the simulated electors and the real clients' Lease writes (or their own word) as judged by the server.".into(),
        effective: None,
        subtitle: crate::report::subtitle_from_spec(spec),
        lease_groups: crate::report::lease_groups_from_spec(spec),
        traced: true,
        result,
    }
}
