//! The served world and everything the server decides: who a request is from, which fault it
//! gets (by identity and that identity's request number), its answer (from the world's API
//! server), and the record of it. No sockets here: `http.rs` carries requests in and answers
//! out, so tests drive this directly.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::sync::Arc;

use serde_json::{Value, json};
use sim_core::api::{ApiError, ChangeType, Kind, User};
use sim_core::time::{Nanos, UnixNanos, format_duration};
use sim_core::world::{RunResult, World};

use super::clients::{Client, Clients};
use super::clock::ServeClock;
use super::faults::{Action, FaultBook, RuleDoc, Seen};
use super::http_types::{HttpRequest, Reply};
use super::kube::{self, Route};

/// A Lease as written, for the record and the judge of who held it (`judge.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseWrite {
    pub t: Nanos,
    pub rv: u64,
    /// `namespace/name`.
    pub lease: String,
    pub holder: String,
    pub renew_time: Option<UnixNanos>,
    pub duration_seconds: Option<i64>,
    pub transitions: Option<i64>,
    pub deleted: bool,
}

/// A client's own word that it started or stopped leading (`POST /leasesim/v1/leading`).
#[derive(Clone, Debug, PartialEq)]
pub struct Belief {
    pub t: Nanos,
    pub identity: String,
    pub lease: String,
    pub leading: bool,
}

/// Committed changes kept for watches: a watch from an older revision is told it is too old
/// (kube-apiserver keeps a watch cache of about a hundred per resource).
const CHANGES_KEPT: usize = 4096;

/// Recent record lines kept in memory for the live view.
const RECENT: usize = 2000;

/// One line of the record: a request and what became of it.
#[derive(Clone, Debug)]
pub struct RecordLine {
    pub n: u64,
    pub t: Nanos,
    pub latency: Nanos,
    pub identity: String,
    pub request: u64,
    pub user_agent: String,
    pub kubectl_command: Option<String>,
    pub method: String,
    pub path: String,
    pub query: String,
    pub verb: String,
    pub resource: String,
    pub status: Option<u16>,
    pub fault: Option<Action>,
}

impl RecordLine {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a record line is JSON")
    }
}

/// The record's line, written straight to the file (no JSON tree built per request).
impl serde::Serialize for RecordLine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(14))?;
        m.serialize_entry("n", &self.n)?;
        m.serialize_entry("t", &secs(self.t))?;
        m.serialize_entry("identity", &self.identity)?;
        m.serialize_entry("request", &self.request)?;
        m.serialize_entry("user_agent", &self.user_agent)?;
        m.serialize_entry("kubectl_command", &self.kubectl_command)?;
        m.serialize_entry("method", &self.method)?;
        m.serialize_entry("path", &self.path)?;
        m.serialize_entry("query", &self.query)?;
        m.serialize_entry("verb", &self.verb)?;
        m.serialize_entry("resource", &self.resource)?;
        m.serialize_entry("status", &self.status)?;
        m.serialize_entry("latency_ms", &((self.latency as f64 / 1e3).round() / 1e3))?;
        m.serialize_entry("fault", &self.fault.as_ref().map(Action::to_json))?;
        m.end()
    }
}

pub struct Core {
    world: Option<World>,
    pub clock: ServeClock,
    pub clients: Clients,
    pub faults: FaultBook,
    /// The server's wall clock at true time 0.
    pub epoch: UnixNanos,
    /// The Kubernetes minor version `/version` reports (it picks kubectl's binary).
    pub minor: u32,
    /// What `/api` reports as the server's address.
    pub address: String,
    numbers: BTreeMap<String, u64>,
    /// Lease writes, one per run of a holder (renewals extend the run's entry).
    pub lease_writes: Vec<LeaseWrite>,
    /// Each Lease's last entry in `lease_writes`.
    last_write: BTreeMap<String, usize>,
    pub beliefs: Vec<Belief>,
    seen_rv: u64,
    record_file: Option<std::io::BufWriter<std::fs::File>>,
    recent: VecDeque<RecordLine>,
    pub requests: u64,
    /// Identities already warned that a Go client cannot follow a scaled clock.
    warned_go: std::collections::BTreeSet<String>,
    /// Real clients' requests by (verb, status), for the summary's request counts.
    pub by_verb_status: BTreeMap<(String, u16), u64>,
    /// Live-view lines (SSE), for whoever listens.
    pub live: Option<tokio::sync::broadcast::Sender<String>>,
    /// The revision watchers have been told of.
    pub revision: Option<tokio::sync::watch::Sender<u64>>,
}

/// What a request is, for faults and the record.
#[derive(Clone, Debug, Default)]
pub struct Classified {
    pub verb: String,
    pub resource: String,
}

pub fn classify(req: &HttpRequest) -> Classified {
    match kube::route(&req.path) {
        Route::Resource { resource, name, watch_path, .. } => {
            let watch = watch_path || req.query("watch").is_some_and(|w| w == "true" || w == "1");
            let verb = match (req.method.as_str(), name.is_empty()) {
                ("GET", _) if watch => "watch",
                ("GET", true) => "list",
                ("GET", false) => "get",
                ("POST", _) => "create",
                ("PUT", _) => "update",
                ("PATCH", _) => "patch",
                ("DELETE", _) => "delete",
                _ => "other",
            };
            Classified { verb: verb.into(), resource: resource.name.into() }
        }
        _ => Classified {
            verb: if req.method == "GET" { "get".into() } else { req.method.to_lowercase() },
            resource: String::new(),
        },
    }
}

impl Core {
    pub fn new(mut world: World, clock: ServeClock, clients: Clients, seed: u64, epoch: UnixNanos) -> Core {
        world.server_mut().enable_changes(CHANGES_KEPT);
        let seen_rv = world.server().resource_version();
        Core {
            world: Some(world),
            clock,
            clients,
            faults: FaultBook::new(seed),
            epoch,
            minor: 32,
            address: String::new(),
            numbers: BTreeMap::new(),
            lease_writes: Vec::new(),
            last_write: BTreeMap::new(),
            beliefs: Vec::new(),
            seen_rv,
            record_file: None,
            recent: VecDeque::new(),
            requests: 0,
            warned_go: std::collections::BTreeSet::new(),
            by_verb_status: BTreeMap::new(),
            live: None,
            revision: None,
        }
    }

    /// Writes every record line to `path` as well (JSONL).
    pub fn record_to(&mut self, path: &std::path::Path) -> Result<(), String> {
        let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        self.record_file = Some(std::io::BufWriter::new(file));
        Ok(())
    }

    pub fn world(&self) -> &World {
        self.world.as_ref().expect("the world lives until finish")
    }

    fn world_mut(&mut self) -> &mut World {
        self.world.as_mut().expect("the world lives until finish")
    }

    pub fn now(&self) -> Nanos {
        self.clock.now()
    }

    pub fn wall(&self, t: Nanos) -> UnixNanos {
        self.epoch + t as i64
    }

    /// Brings the world to now (its simulated electors' events due by then), notes what was
    /// written and flushes the record file; returns when the next simulated event is due. The
    /// server's own timer calls it at least every 100 ms.
    pub fn tick(&mut self) -> Option<Nanos> {
        self.catch_up();
        self.flush_record();
        self.world().next_event_at()
    }

    /// [`Self::tick`] without the flush, before each answer: a request's record line reaches
    /// the file with the next tick, not with a write of its own.
    fn catch_up(&mut self) {
        let now = self.now();
        if let Err(stuck) = self.world_mut().advance_to(now) {
            eprintln!(
                "warning: the served world's simulated clients stand still at {} s ({stuck:?})",
                stuck.at / 1_000_000_000
            );
        }
        self.drain_changes(now);
    }

    /// Lease writes since the last look, into the judge's list and the live view.
    fn drain_changes(&mut self, now: Nanos) {
        let mut writes = Vec::new();
        let mut seen = self.seen_rv;
        if let Ok(changes) = self.world.as_ref().expect("the world lives until finish").server().changes_after(seen) {
            for c in changes {
                seen = c.rv;
                if c.kind != Kind::Lease {
                    continue;
                }
                let Some(spec) = c.lease_spec() else { continue };
                writes.push(LeaseWrite {
                    t: now,
                    rv: c.rv,
                    lease: format!("{}/{}", c.namespace, c.name),
                    holder: spec.holder_identity.clone().unwrap_or_default(),
                    renew_time: spec.renew_time.map(|m| m.unix_nanos()),
                    duration_seconds: spec.lease_duration_seconds.map(i64::from),
                    transitions: spec.lease_transitions.map(i64::from),
                    deleted: c.change == ChangeType::Deleted,
                });
            }
        }
        self.seen_rv = seen;
        for write in writes {
            // A renewal (the same holder again) only extends the run's claim: the judge reads
            // a run's first write and its latest claim, so keeping one entry per run keeps the
            // log as long as the changes of holder, not the renewals.
            let last = self.last_write.get(&write.lease).copied();
            let renewal = last.is_some_and(|i| {
                let l = &self.lease_writes[i];
                l.holder == write.holder && !l.deleted && !write.deleted
            });
            if self.listening() {
                self.publish(json!({"event": "lease", "t": secs(now), "lease": write.lease, "holder": write.holder,
                    "rv": write.rv.to_string(), "renewTime": write.renew_time.map(|r| sim_core::api::MicroTime::from_unix_nanos(r).to_rfc3339()),
                    "leaseDurationSeconds": write.duration_seconds, "leaseTransitions": write.transitions, "deleted": write.deleted}));
            }
            match last {
                Some(i) if renewal => {
                    let run = &mut self.lease_writes[i];
                    run.rv = write.rv;
                    run.renew_time = write.renew_time;
                    run.duration_seconds = write.duration_seconds;
                    run.transitions = write.transitions;
                }
                _ => {
                    self.last_write.insert(write.lease.clone(), self.lease_writes.len());
                    self.lease_writes.push(write);
                }
            }
        }
        let rv = self.world().server().resource_version();
        if let Some(tx) = &self.revision {
            tx.send_if_modified(|v| {
                let changed = *v != rv;
                *v = rv;
                changed
            });
        }
    }

    /// Someone follows the live view.
    fn listening(&self) -> bool {
        self.live.as_ref().is_some_and(|tx| tx.receiver_count() > 0)
    }

    fn publish(&mut self, value: Value) {
        if let Some(tx) = &self.live {
            let _ = tx.send(value.to_string());
        }
    }

    /// The client a request authenticates as, or the 401 it gets.
    pub fn authenticate(&self, req: &HttpRequest) -> Result<Client, Reply> {
        let token = req.header("authorization").and_then(|h| h.strip_prefix("Bearer ")).map(str::trim);
        match token.and_then(|t| self.clients.by_token(t)) {
            Some(client) => Ok(client.clone()),
            None => Err(Reply::json(
                401,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}),
            )),
        }
    }

    /// Under `--clock scaled:K`, a Go client (client-go's User-Agent `name/version (os/arch)
    /// kubernetes/commit`, or Go's default `Go-http-client/`) reads the kernel's clock, which
    /// libfaketime cannot change for it: said once per identity, on stderr.
    fn warn_go_client(&mut self, identity: &str, req: &HttpRequest) {
        let ServeClock::Running { rate, .. } = self.clock else { return };
        if rate == 1.0 || self.warned_go.contains(identity) {
            return;
        }
        let agent = req.header("user-agent").unwrap_or("");
        if agent.contains(" kubernetes/") || agent.starts_with("Go-http-client/") {
            self.warned_go.insert(identity.to_string());
            eprintln!(
                "warning: {identity} ({agent}) looks like a Go client: it reads the kernel's clock, not the \
                 server's {rate}x clock, so its times and the server's will disagree (docs/serve.md, Time)"
            );
        }
    }

    /// Numbers the client's request and decides its fault.
    pub fn decide(&mut self, identity: &str, req: &HttpRequest, class: &Classified) -> (u64, Option<(usize, Action)>) {
        let number = match self.numbers.get_mut(identity) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                self.numbers.insert(identity.to_string(), 1);
                1
            }
        };
        let now = self.now();
        self.warn_go_client(identity, req);
        let seen = Seen {
            identity,
            impersonate: req.header("impersonate-user"),
            user_agent: req.header("user-agent").unwrap_or(""),
            verb: &class.verb,
            resource: &class.resource,
            now,
        };
        (number, self.faults.decide(seen, number))
    }

    /// The reply an injected status gets: the API server's own body for that code, naming the
    /// request's object as the server would.
    pub fn fault_status(
        &self,
        req: &HttpRequest,
        client: &Client,
        code: u16,
        retry_after: Option<Nanos>,
        message: Option<&str>,
    ) -> Reply {
        let (kind, ns, name) = match kube::route(&req.path) {
            Route::Resource { resource, namespace, name, .. } => (resource.stored, namespace, name),
            _ => (None, String::new(), String::new()),
        };
        let kind = kind.unwrap_or(Kind::Lease);
        let class = classify(req);
        let error = match code {
            409 => ApiError::optimistic_lock_conflict(kind, &name),
            429 => ApiError::too_many_requests(),
            500 => ApiError::internal(message.unwrap_or("injected by leasesim serve")),
            503 => {
                ApiError::service_unavailable(message.unwrap_or("the server is currently unable to handle the request"))
            }
            504 => ApiError::request_timeout(),
            400 => ApiError::bad_request(message.unwrap_or("injected by leasesim serve")),
            403 => ApiError::forbidden(kind, &name, &client.user.name, &class.verb, &ns),
            _ => ApiError::not_found(kind, &name),
        };
        let mut reply = kube::error_reply(&error);
        if let (Some(after), Reply::Body { headers, .. }) = (retry_after, &mut reply) {
            headers.push(("retry-after".into(), after.div_ceil(1_000_000_000).to_string()));
        }
        reply
    }

    /// The answer to a Kubernetes API request from `client` (after its fault, if any).
    pub fn answer(&mut self, client: &Client, req: &HttpRequest) -> Reply {
        let now = self.now();
        self.catch_up();
        let user: Arc<User> = match req.header("impersonate-user") {
            Some(target) => {
                let groups: Vec<String> = req.headers_named("impersonate-group").map(str::to_string).collect();
                match self.world().server().impersonate(&client.user, target, &groups) {
                    Ok(user) => user,
                    Err(e) => return kube::error_reply(&e),
                }
            }
            None => client.user.clone(),
        };
        let (wall, minor, address) = (self.wall(now), self.minor, self.address.clone());
        let reply = kube::answer(self.world_mut(), req, &user, now, wall, minor, &address);
        self.drain_changes(now);
        reply
    }

    /// A client says it started or stopped leading.
    pub fn belief(&mut self, identity: &str, body: &[u8]) -> Reply {
        let parsed: Result<Value, _> = serde_json::from_slice(body);
        let Some((leading, lease)) = parsed.ok().and_then(|v| {
            Some((v.get("leading")?.as_bool()?, v.get("lease").and_then(Value::as_str).unwrap_or("").to_string()))
        }) else {
            return kube::error_reply(&ApiError::bad_request(
                "expected {\"leading\": true|false, \"lease\": \"namespace/name\"}",
            ));
        };
        let t = self.now();
        self.beliefs.push(Belief { t, identity: identity.into(), lease: lease.clone(), leading });
        self.publish(
            json!({"event": "belief", "t": secs(t), "identity": identity, "lease": lease, "leading": leading}),
        );
        Reply::json(200, &json!({"identity": identity, "leading": leading, "t": secs(t)}))
    }

    /// Adds a fault rule (from now on) and says so in the record.
    pub fn add_fault(&mut self, doc: &RuleDoc, by: &str) -> Reply {
        let now = self.now();
        match self.faults.add(doc, now) {
            Ok(rule) => {
                let described = describe_rule(rule);
                self.publish(
                    json!({"event": "control", "t": secs(now), "by": by, "action": "fault", "rule": described}),
                );
                self.write_line(&json!({"control": "fault", "t": secs(now), "by": by, "rule": described}));
                Reply::json(201, &described)
            }
            Err(m) => kube::error_reply(&ApiError::bad_request(m)),
        }
    }

    pub fn clear_faults(&mut self, by: &str) -> Reply {
        let now = self.now();
        self.faults.clear(now);
        self.publish(json!({"event": "control", "t": secs(now), "by": by, "action": "clear"}));
        self.write_line(&json!({"control": "clear", "t": secs(now), "by": by}));
        Reply::json(200, &json!({"cleared": true}))
    }

    /// Records one exchange: identity, what it asked, the answer's status, how long it took,
    /// the fault it got. Kept typed; rendered as JSON for the record file, the live view and
    /// the admin endpoint only.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        identity: &str,
        number: u64,
        req: &HttpRequest,
        class: &Classified,
        status: Option<u16>,
        started: Nanos,
        fault: Option<&Action>,
    ) {
        self.requests += 1;
        if let Some(status) = status {
            *self.by_verb_status.entry((class.verb.clone(), status)).or_insert(0) += 1;
        }
        let line = RecordLine {
            n: self.requests,
            t: started,
            latency: self.now().saturating_sub(started),
            identity: identity.to_string(),
            request: number,
            user_agent: req.header("user-agent").unwrap_or("").to_string(),
            kubectl_command: req.header("kubectl-command").map(str::to_string),
            method: req.method.clone(),
            path: req.path.clone(),
            query: req.query.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&"),
            verb: class.verb.clone(),
            resource: class.resource.clone(),
            status,
            fault: fault.cloned(),
        };
        if let Some(f) = &mut self.record_file {
            let _ = serde_json::to_writer(&mut *f, &line);
            let _ = f.write_all(b"\n");
        }
        if self.listening() {
            let mut live = line.to_json();
            live["event"] = json!("request");
            self.publish(live);
        }
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(line);
    }

    /// A record line (buffered: flushed by [`Self::flush_record`], on each tick and at the end).
    fn write_line(&mut self, line: &Value) {
        if let Some(f) = &mut self.record_file {
            let _ = writeln!(f, "{line}");
        }
    }

    pub fn flush_record(&mut self) {
        if let Some(f) = &mut self.record_file {
            let _ = f.flush();
        }
    }

    /// The last record lines kept in memory (2,000), after line `since`.
    pub fn recent_after(&self, since: u64) -> Vec<Value> {
        self.recent.iter().filter(|l| l.n > since).map(RecordLine::to_json).collect()
    }

    /// The Leases on the server now, for the live view: holder, resourceVersion, renewTime and
    /// its age by the server's clock, transitions.
    pub fn leases(&mut self) -> Vec<Value> {
        let now_wall = self.wall(self.now());
        let mut out = Vec::new();
        for (ns, name) in self.world().server().names_of(Kind::Lease) {
            let Some(lease) = self.world_mut().server_mut().peek_json(Kind::Lease, &ns, &name) else { continue };
            let spec = &lease["spec"];
            let renew = spec["renewTime"].as_str().and_then(|t| sim_core::api::MicroTime::parse(t).ok());
            out.push(json!({
                "lease": format!("{ns}/{name}"),
                "holder": spec["holderIdentity"],
                "resourceVersion": lease["metadata"]["resourceVersion"],
                "renewTime": spec["renewTime"],
                "renewAge": renew.map(|r| format_duration(now_wall.saturating_sub(r.unix_nanos()).max(0) as u64)),
                "leaseDurationSeconds": spec["leaseDurationSeconds"],
                "leaseTransitions": spec["leaseTransitions"],
            }));
        }
        out
    }

    /// Ends the session: the world's result at now, and what was recorded.
    pub fn finish(&mut self) -> Option<(RunResult, Nanos)> {
        let end = self.now();
        let world = self.world.take()?;
        if let Some(f) = &mut self.record_file {
            let _ = f.flush();
        }
        Some((world.finish_at(end), end))
    }
}

fn secs(t: Nanos) -> f64 {
    (t as f64 / 1e6).round() / 1e3
}

fn describe_rule(rule: &super::faults::Rule) -> Value {
    json!({
        "index": rule.index,
        "client": rule.client.as_deref().unwrap_or("*"),
        "from": secs(rule.from),
        "until": rule.until.map(secs),
        "verb": rule.verb,
        "resource": rule.resource,
        "nth": rule.nth,
        "count": rule.count,
        "probability": rule.probability,
        "action": rule.action.to_json(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record file's line, written without a JSON tree, is the line the tree gave: the same
    /// keys in the same order, the same numbers.
    #[test]
    fn a_record_line_is_written_as_its_json() {
        let mut line = RecordLine {
            n: 7,
            t: 1_234_567_891,
            latency: 2_500_499,
            identity: "system:serviceaccount:op:w".into(),
            request: 3,
            user_agent: "kubectl/v1.32.0 (linux/amd64) kubernetes/abc".into(),
            kubectl_command: Some("kubectl get".into()),
            method: "PUT".into(),
            path: "/apis/coordination.k8s.io/v1/namespaces/op/leases/w".into(),
            query: "a=\"b\"".into(),
            verb: "update".into(),
            resource: "leases".into(),
            status: Some(409),
            fault: Some(Action::Status { code: 409, retry_after: Some(2_000_000_000), message: None }),
        };
        for _ in 0..2 {
            let tree = json!({
                "n": line.n, "t": secs(line.t), "identity": line.identity, "request": line.request,
                "user_agent": line.user_agent, "kubectl_command": line.kubectl_command, "method": line.method,
                "path": line.path, "query": line.query, "verb": line.verb, "resource": line.resource,
                "status": line.status, "latency_ms": (line.latency as f64 / 1e3).round() / 1e3,
                "fault": line.fault.as_ref().map(Action::to_json),
            });
            assert_eq!(serde_json::to_string(&line).unwrap(), tree.to_string());
            assert_eq!(line.to_json(), tree);
            (line.kubectl_command, line.status, line.fault) = (None, None, None);
        }
    }
}
