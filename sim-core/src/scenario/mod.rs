//! The scenario model: the human-written description of one experiment, as scenario files
//! hold it (`docs/scenarios.md` documents every key), and its conversion into a [`WorldSpec`].
//!
//! This module knows serde, not TOML: `sim-cli` parses the file and hands the value here. Errors
//! carry the path of the offending key (`faults[2].node`) so the caller can point at its line
//! and column.

use crate::api::Kind;
use crate::clock::{ClockSpec, ClockStep};
use crate::model::{FaultKind, NodeSpec, RandomFault, RandomFaultKind, Target, TimedFault, WorldSpec};
use crate::net::{Cut, ServerAvailability};
use crate::time::UnixNanos;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod doc;
mod keys;
mod node;
mod values;

pub use doc::*;
pub use keys::{did_you_mean, edit_distance, known_keys, unknown_word};
pub use values::{metric_values, visit_metric_values};

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
    /// Shared by the scenario's clones: `leasesim run` keeps the file's scenario and the one it
    /// ran (its seed, a cluster dump's objects), and a fleet's node tables are most of both
    /// (~600 bytes a node; `Arc::make_mut` copies them for the rare caller that edits them).
    #[serde(default)]
    pub nodes: std::sync::Arc<Vec<NodeDoc>>,
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

/// `Some(None)`: well formed but outside what i64 nanoseconds since 1970 hold.
fn parse_rfc3339_seconds(s: &str) -> Option<Option<UnixNanos>> {
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
    let seconds = days * 86_400 + h * 3600 + mi * 60 + se;
    Some(seconds.checked_mul(1_000_000_000).and_then(|n| n.checked_add(nanos)))
}

pub fn parse_epoch(s: &str) -> Result<UnixNanos, String> {
    let parsed = parse_rfc3339_seconds(s)
        .ok_or_else(|| format!("{s:?} is not an RFC 3339 UTC time such as \"2026-01-01T00:00:00Z\""))?;
    parsed.ok_or_else(|| format!("{s:?} is outside the times leasesim can represent ({})", crate::time::WALL_RANGE))
}

/// Where a clock's readings can go over a run: its lowest and highest wall time, with every
/// offset, step, wander and rate error at its extreme (in i128: no reading may wrap).
fn wall_reach(epoch: UnixNanos, duration: crate::time::Nanos, clock: &ClockSpec) -> (i128, i128) {
    let steps: i128 = clock.steps.iter().map(|s| (s.delta_ns as i128).abs()).sum();
    let wander = clock.wander.as_ref().map_or(0, |w| w.amplitude_ns.unsigned_abs() as i128);
    let start = epoch as i128 + clock.offset_ns as i128;
    let run = duration as i128 * (1_000_000_000 + clock.drift_ppb.max(0) as i128) / 1_000_000_000;
    (start - steps - wander, start + run + steps + wander)
}

/// Refuses a clock whose readings would leave the i64 nanosecond range over the run.
fn check_wall_reach(
    epoch: UnixNanos,
    duration: crate::time::Nanos,
    clock: &ClockSpec,
    path: &[&str],
) -> Result<(), ScenarioError> {
    let (low, high) = wall_reach(epoch, duration, clock);
    if low < i64::MIN as i128 || high > i64::MAX as i128 {
        return Err(err(
            path,
            format!(
                "its readings over the run would leave the times leasesim can represent ({}): move the epoch or \
                 shrink the offset",
                crate::time::WALL_RANGE
            ),
        ));
    }
    Ok(())
}

impl Scenario {
    /// The `(namespace, name)` of the Lease a node elects on: its `lease_name` (or
    /// `[defaults]`'s, or `[lease] name`), in that Lease's `[leases."<name>"] namespace` (or
    /// `[lease] namespace`).
    pub fn lease_of(&self, node: &NodeDoc) -> (String, String) {
        let name = node
            .lease_name
            .clone()
            .or(self.defaults.lease_name.clone())
            .unwrap_or_else(|| self.lease.name.clone().unwrap_or_else(|| "leasesim".into()));
        let namespace = self
            .leases
            .get(&name)
            .and_then(|o| o.namespace.clone())
            .unwrap_or_else(|| self.lease.namespace.clone().unwrap_or_else(|| "default".into()));
        (namespace, name)
    }

    pub fn identities(&self) -> Vec<String> {
        self.nodes.iter().enumerate().map(|(i, n)| n.identity.clone().unwrap_or_else(|| format!("node-{i}"))).collect()
    }

    /// [`Scenario::to_world_spec`] at this scenario's seed, built from `template`: this
    /// scenario's spec at another seed (a sweep builds it once for a grid point's seeds). What
    /// the seed draws — each node's clock (its offset and drift where a distribution gives them)
    /// and start — is drawn again and checked as `to_world_spec` checks it; nothing else
    /// depends on the seed. The same spec, or the same error, as `to_world_spec` gives (debug
    /// builds, every test among them, compare the two).
    pub fn to_world_spec_from(&self, template: &WorldSpec) -> Result<WorldSpec, ScenarioError> {
        let mut spec = template.clone();
        let spec = self.draw_again(&mut spec).map(|()| spec);
        debug_assert_eq!(spec, self.to_world_spec(template.trace), "a spec built from another seed's is built afresh");
        spec
    }

    /// What this scenario's seed draws, drawn into `spec` and checked (see
    /// [`Scenario::to_world_spec_from`]).
    fn draw_again(&self, spec: &mut WorldSpec) -> Result<(), ScenarioError> {
        spec.seed = self.seed;
        let identities = self.identities();
        for (i, doc) in self.nodes.iter().enumerate() {
            spec.nodes[i].clock = std::sync::Arc::new(self.node_clock(i, doc, &identities[i])?);
            spec.nodes[i].start_at = self.node_start_at(i, doc, &identities[i])?;
        }
        share_clocks_and_links(&mut spec.nodes);
        self.check_nodes_wall_reach(spec.epoch, &spec.nodes)
    }

    /// Each node's clock within the wall-clock years a run can show, named by the key that set it.
    fn check_nodes_wall_reach(&self, epoch: i64, nodes: &[NodeSpec]) -> Result<(), ScenarioError> {
        for (i, n) in nodes.iter().enumerate() {
            // The key named, worked out only for a clock out of reach.
            if check_wall_reach(epoch, self.duration.0, &n.clock, &[]).is_ok() {
                continue;
            }
            let path = if self.nodes[i].clock.is_some() || self.defaults.clock.is_none() {
                vec!["nodes".to_string(), i.to_string(), "clock".to_string()]
            } else {
                vec!["defaults".to_string(), "clock".to_string()]
            };
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            let path = if n.clock.offset_ns == 0 && n.clock.steps.is_empty() { vec!["epoch"] } else { path };
            check_wall_reach(epoch, self.duration.0, &n.clock, &path)?;
        }
        Ok(())
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
        // Each Lease's namespace: `[leases."<name>"] namespace`, else `[lease] namespace`.
        for (name, options) in &self.leases {
            if let Some(ns) = &options.namespace {
                check_name(Kind::Namespace, ns, "a namespace").map_err(|m| err(&["leases", name, "namespace"], m))?;
            }
        }
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for (i, doc) in self.nodes.iter().enumerate() {
            nodes.push(self.node_spec(i, doc, &identities[i], &self.lease_of(doc).0, &lease_name)?);
        }
        share_group_lists(&mut nodes);
        share_clocks_and_links(&mut nodes);
        // `[defaults] version` applies to the nodes whose library has that release: one that
        // fits no node is a mistake, not a no-op.
        if let Some(v) = &self.defaults.version
            && !nodes.iter().any(|n| n.elector.algorithm.library().versions.contains(&v.as_str()))
        {
            let mut known: Vec<String> = Vec::new();
            for n in &nodes {
                let library = n.elector.algorithm.library();
                if !library.versions.is_empty() && !known.iter().any(|k| k.starts_with(library.called)) {
                    known.push(format!("{}: {}", library.called, library.versions.join(", ")));
                }
            }
            let why = if known.is_empty() {
                "no node here runs a library with more than one release modelled (client-go's releases are chosen \
                 with `client_go`)"
                    .to_string()
            } else {
                format!("releases modelled: {}", known.join("; "))
            };
            return Err(err(&["defaults", "version"], format!("{v:?} is no release of any node's library; {why}")));
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
            // A key the kind does not take would be silently ignored: refuse it, by name.
            if let Some(takes) = fault_keys(&f.kind) {
                let given = [
                    ("duration", f.duration.is_some()),
                    ("cut", f.cut.is_some()),
                    ("mode", f.mode.is_some()),
                    ("delay", f.delay.is_some()),
                    ("delta", f.delta.is_some()),
                    ("extra", f.extra.is_some()),
                    ("ends", f.ends.is_some()),
                ];
                if let Some((key, _)) = given.iter().find(|(key, set)| *set && !takes.contains(key)) {
                    let takes = if takes.is_empty() {
                        "no other keys".to_string()
                    } else {
                        takes.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                    };
                    return Err(err(&p(key), format!("a {} fault takes {takes}, not `{key}`", f.kind)));
                }
            }
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
                "server-outage" => FaultKind::ServerOutage {
                    duration: need(f.duration, "duration")?,
                    mode: parse_mode(f.mode.as_deref()).map_err(|m| err(&p("mode"), m))?,
                },
                "server-slow" => {
                    FaultKind::ServerSlow { duration: need(f.duration, "duration")?, extra: need(f.extra, "extra")? }
                }
                "wedge" => FaultKind::Wedge { duration: f.duration.map(|d| d.0) },
                "work" => {
                    let text = f.ends.as_deref().ok_or_else(|| {
                        err(&p("kind"), "a work fault needs `ends = \"returns\"`, `\"raises\"` or `\"blocks\"`")
                    })?;
                    let ends = crate::elector::WorkEnd::parse(text).ok_or_else(|| {
                        err(&p("ends"), unknown_word("way for work to end", text, &crate::elector::WorkEnd::NAMES))
                    })?;
                    FaultKind::Work { ends }
                }
                other => {
                    return Err(err(&p("kind"), unknown_word("fault kind", other, &FAULT_KINDS)));
                }
            };
            faults.push(TimedFault { at: f.at.0, target, kind });
        }
        let mut random_faults = Vec::new();
        for (i, f) in self.random_faults.iter().enumerate() {
            let idx = i.to_string();
            let p = |k: &'static str| -> Vec<&str> { vec!["random_faults", idx.as_str(), k] };
            let target = parse_target(&f.target, &node_index).map_err(|m| err(&p("target"), m))?;
            if let (Some(from), Some(until)) = (f.from, f.until)
                && until.0 <= from.0
            {
                return Err(err(
                    &p("until"),
                    format!(
                        "{} is not after `from` ({}): the process would never fire",
                        crate::time::format_duration(until.0),
                        crate::time::format_duration(from.0)
                    ),
                ));
            }
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
                "server-outage" => RandomFaultKind::ServerOutage {
                    duration: dist(&f.duration, "duration")?,
                    mode: parse_mode(f.mode.as_deref()).map_err(|m| err(&p("mode"), m))?,
                },
                other => {
                    return Err(err(&p("kind"), unknown_word("random fault kind", other, &RANDOM_FAULT_KINDS)));
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
            server.outages.push((
                w.from.0,
                w.from.0 + w.duration.0,
                parse_mode(w.mode.as_deref()).map_err(|m| err(&["server", "outages", "mode"], m))?,
            ));
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
            // Keys and windows that would be accepted and then do nothing.
            if e.message.is_some() && !matches!(e.code, 500 | 503) {
                return Err(err(
                    &p("message"),
                    format!(
                        "a {}'s text is fixed (`message` sets the text of a 500 or a 503): {}",
                        e.code,
                        match e.code {
                            409 => "the optimistic-lock Conflict",
                            429 => "priority-and-fairness's plain-text answer",
                            _ => "the Timeout Status",
                        }
                    ),
                ));
            }
            if e.from.0 >= self.duration.0 {
                return Err(err(
                    &p("from"),
                    format!(
                        "{} is at or beyond the run's duration of {}: no request would meet it",
                        crate::time::format_duration(e.from.0),
                        crate::time::format_duration(self.duration.0)
                    ),
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
        // One part per namespace, `[lease]`'s first, then the others in node order.
        let mut namespaces = vec![namespace.clone()];
        for n in &nodes {
            if !namespaces.contains(&n.elector.lease_namespace) {
                namespaces.push(n.elector.lease_namespace.clone());
            }
        }
        let setup = SetupKey {
            parts: namespaces
                .into_iter()
                .map(|ns| {
                    let here: Vec<usize> =
                        (0..nodes.len()).filter(|&i| nodes[i].elector.lease_namespace == ns).collect();
                    let rbac = self.rbac.auto.unwrap_or(true).then(|| RbacKey {
                        accounts: here
                            .iter()
                            .filter(|&&i| self.nodes[i].user.is_none() && self.defaults.user.is_none())
                            .map(|&i| identities[i].clone())
                            .collect(),
                        events: here.iter().any(|&i| nodes[i].elector.record_events),
                        candidates: here.iter().any(|&i| nodes[i].candidacy.is_some()),
                    });
                    (ns, rbac)
                })
                .collect(),
        };
        let setup_objects = setup_objects(setup, &self.objects);
        // The apiserver's clock: an offset and a drift, as a node's (no steps or wander).
        let server_clock = match &self.server.clock {
            None => ClockSpec::default(),
            Some(_) if !nodes.iter().any(|n| n.candidacy.is_some()) => {
                return Err(err(
                    &["server", "clock"],
                    "only the apiserver's coordinated leader election controller reads its clock, and no node here \
                     is coordinated (`coordinated = true`): it would change nothing",
                ));
            }
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
                // As for a node's clock: a step the run never reaches is a mistake in the file.
                for (k, s) in c.steps.iter().flatten().enumerate() {
                    if s.at.0 > self.duration.0 {
                        return Err(err(
                            &["server", "clock", "steps", &k.to_string(), "at"],
                            "is beyond the run's duration",
                        ));
                    }
                }
                ClockSpec {
                    offset_ns: c.offset.map_or(0, |o| o.0),
                    drift_ppb: (drift_ppm * 1000.0).round() as i64,
                    steps: c.steps.iter().flatten().map(|s| ClockStep { at: s.at.0, delta_ns: s.delta.0 }).collect(),
                    ..ClockSpec::default()
                }
            }
        };
        self.check_nodes_wall_reach(epoch, &nodes)?;
        check_wall_reach(epoch, self.duration.0, &server_clock, &["server", "clock"])?;
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
            skip_quiet: true,
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

const FAULT_KINDS: [&str; 10] =
    ["crash", "restart", "pause", "stop", "clock-step", "partition", "server-outage", "server-slow", "work", "wedge"];
const RANDOM_FAULT_KINDS: [&str; 7] =
    ["crash", "crash-restart", "pause", "stop", "partition", "clock-step", "server-outage"];

/// The keys each fault kind takes beside `at`, `node`/`target` and `kind` (`None`: an unknown
/// kind, refused below).
fn fault_keys(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "crash" | "stop" => &[],
        "restart" => &["delay"],
        "pause" => &["duration"],
        "clock-step" => &["delta"],
        "partition" => &["duration", "cut", "mode"],
        "server-outage" => &["duration", "mode"],
        "server-slow" => &["duration", "extra"],
        "wedge" => &["duration"],
        "work" => &["ends"],
        _ => return None,
    })
}

fn is_server_fault(kind: &str) -> bool {
    kind == "server-outage" || kind == "server-slow"
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

/// One list of groups for every node user that has the same (a fleet's ServiceAccounts in one
/// namespace all have the same three): 88 bytes a node otherwise, for the whole run, and the
/// server keeps the users as they are here ([`crate::api::ApiServer::user_id`]).
fn share_group_lists(nodes: &mut [NodeSpec]) {
    let mut lists: Vec<std::sync::Arc<[String]>> = Vec::new();
    for node in nodes {
        let Some(user) = std::sync::Arc::get_mut(&mut node.user) else { continue };
        match lists.iter().find(|l| ***l == *user.groups) {
            Some(list) => user.groups = std::sync::Arc::clone(list),
            None => lists.push(std::sync::Arc::clone(&user.groups)),
        }
    }
}

/// One clock and one link for each run of nodes that have the same as the node before them (a
/// fleet's nodes all do).
fn share_clocks_and_links(nodes: &mut [NodeSpec]) {
    for i in 1..nodes.len() {
        let (before, here) = nodes.split_at_mut(i);
        let (before, here) = (&before[i - 1], &mut here[0]);
        if before.clock == here.clock {
            here.clock = std::sync::Arc::clone(&before.clock);
        }
        if before.link == here.link {
            here.link = std::sync::Arc::clone(&before.link);
        }
    }
}

/// What a world's setup objects are built from, besides the scenario's own `[[objects]]`.
#[derive(Clone, PartialEq)]
struct SetupKey {
    /// Per namespace, `rbac.auto`'s: its nodes' ServiceAccounts and whether Events and
    /// LeaseCandidates need rights (`None`: no automatic RBAC, the namespace alone).
    parts: Vec<(String, Option<RbacKey>)>,
}

impl SetupKey {
    fn build(&self) -> Vec<serde_json::Value> {
        let mut built = Vec::new();
        for (ns, rbac) in &self.parts {
            built.extend(match rbac {
                Some(r) => crate::model::default_rbac_objects_for(ns, &r.accounts, r.events, r.candidates),
                None => crate::model::namespace_object(ns).into_iter().collect(),
            });
        }
        built
    }
}

#[derive(Clone, PartialEq)]
struct RbacKey {
    accounts: Vec<String>,
    events: bool,
    candidates: bool,
}

/// The setup objects: the automatic RBAC objects (or the namespace alone), then `objects`.
///
/// A sweep or a hunt builds the world spec of every run, and each built the same JSON again
/// (7.5 % of a hunt's short runs: a map insert hashes its key), then copied it into the setup
/// cache's comparison. The last answer is remembered per thread and handed out shared, so a run
/// like the one before it gets the same `Arc`, which the setup cache recognises by address. A
/// memory of a pure function (`objects` compared as text, key order and all), so no answer
/// depends on it. The answer is remembered weakly: it lives as long as a spec or a setup cache
/// holds it (a sweep's cache does, between runs), and a single run's world lets it go once its
/// server is set up (a fleet's ServiceAccounts and binding subjects as JSON are ~1.2 KB an
/// elector).
fn setup_objects(key: SetupKey, objects: &[serde_json::Value]) -> std::sync::Arc<Vec<serde_json::Value>> {
    use std::sync::{Arc, Weak};
    type Memo = Option<(SetupKey, Vec<serde_json::Value>, Weak<Vec<serde_json::Value>>)>;
    thread_local! {
        static LAST: std::cell::RefCell<Memo> = const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((k, o, answer)) = last.as_ref()
            && *k == key
            && crate::api::identical_json_slices(o, objects)
            && let Some(answer) = answer.upgrade()
        {
            return answer;
        }
        let mut built = key.build();
        built.extend(objects.iter().cloned());
        let answer = Arc::new(built);
        *last = Some((key, objects.to_vec(), Arc::downgrade(&answer)));
        answer
    })
}

#[cfg(test)]
mod setup_objects_tests {
    use super::*;

    fn key(ns: &str, rbac: Option<(&[&str], bool, bool)>) -> SetupKey {
        SetupKey {
            parts: vec![(
                ns.into(),
                rbac.map(|(names, events, candidates)| RbacKey {
                    accounts: names.iter().map(|n| n.to_string()).collect(),
                    events,
                    candidates,
                }),
            )],
        }
    }

    /// The remembered setup objects are the ones built afresh, whatever the order of the asks;
    /// the same ask again is the same list (shared), and objects equal as values but in another
    /// key order are another list, in their own order.
    #[test]
    fn remembered_setup_objects_are_the_built_ones() {
        let built = |k: &SetupKey, objects: &[serde_json::Value]| {
            let (ns, rbac) = &k.parts[0];
            let mut v = match rbac {
                Some(r) => crate::model::default_rbac_objects_for(ns, &r.accounts, r.events, r.candidates),
                None => crate::model::namespace_object(ns).into_iter().collect(),
            };
            v.extend(objects.iter().cloned());
            v
        };
        let mut ab = serde_json::Map::new();
        ab.insert("a".into(), 1.into());
        ab.insert("b".into(), 2.into());
        let mut ba = serde_json::Map::new();
        ba.insert("b".into(), 2.into());
        ba.insert("a".into(), 1.into());
        let (ab, ba) = (vec![serde_json::Value::Object(ab)], vec![serde_json::Value::Object(ba)]);
        let asks: Vec<(SetupKey, Vec<serde_json::Value>)> = vec![
            (key("op", Some((&["a", "b"], true, false))), vec![]),
            (key("op", Some((&["a", "b"], true, false))), vec![]),
            (key("op", Some((&["a", "b"], false, false))), vec![]),
            (key("op", None), vec![]),
            (key("default", None), ab.clone()),
            (key("default", None), ba.clone()),
            (key("default", Some((&["a"], false, true))), ab.clone()),
        ];
        let mut previous: Option<std::sync::Arc<Vec<serde_json::Value>>> = None;
        for (i, (k, objects)) in asks.iter().enumerate() {
            let expected = built(k, objects);
            let answer = setup_objects(k.clone(), objects);
            assert!(crate::api::identical_json_slices(&answer, &expected), "ask {i}");
            if let Some(p) = &previous {
                assert_eq!(std::sync::Arc::ptr_eq(p, &answer), i == 1, "ask {i}: shared only when asked again");
            }
            previous = Some(answer);
        }
    }
}
