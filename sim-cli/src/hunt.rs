//! `leasesim hunt`: search fault schedules within bounds for one that breaks a property, shrink
//! it to a minimal scenario, and say how close the search came when it finds none.
//!
//! A hunt file names a scenario and the bounds of the search:
//!
//! ```toml
//! scenario = "../valid-but-unsafe-base.toml"
//! property = "no-dual-leader"
//! [bounds]
//! faults = 1                       # at most this many faults per schedule
//! kinds = ["partition"]            # pause, partition, crash, stop, restart
//! window = ["20s", "60s"]          # when they may start
//! partition = "25s"                # the longest partition (pause = … for pauses)
//! ```
//!
//! The search is deterministic for a given `--seed` whatever `--jobs` is: candidates are drawn
//! a batch at a time from the hunt's seed and the batch index, the batch runs in parallel, and
//! the results are read in candidate order. The first batches are random; later ones are half
//! random, half mutations of the schedules that came closest (largest dual window, then the
//! smallest gap between the old leader's last act and the takeover), as a coverage-guided
//! fuzzer keeps its most interesting inputs.

use crate::expect::{self, Expectation};
use crate::run::{self, RunJudged};
use crate::scenario_file::{CliError, LoadedScenario};
use serde::Deserialize;
use serde_json::{Value, json};
use sim_core::rng::ComponentRng;
use sim_core::scenario::{Duration, FaultDoc, LatencyDoc, Scenario, metric_values};
use sim_core::time::{Nanos, format_duration, secs};
use sim_core::world::{RunResult, SpanKind};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const SECOND: Nanos = 1_000_000_000;
/// Candidates per batch: large enough to keep every core busy, small enough that a hunt
/// stops soon after its first violation.
const BATCH: usize = 32;
/// Schedules kept for mutation.
const CORPUS: usize = 8;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HuntFile {
    pub description: Option<String>,
    pub scenario: String,
    pub property: Option<String>,
    #[serde(default)]
    pub bounds: BoundsDoc,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundsDoc {
    /// At most this many faults per schedule (default 2).
    pub faults: Option<usize>,
    /// Fault kinds to draw from (default pause and partition).
    pub kinds: Option<Vec<String>>,
    /// `[from, until]`: when faults may start (default the middle of the run).
    pub window: Option<[Duration; 2]>,
    /// Longest pause (default 20 s).
    pub pause: Option<Duration>,
    /// Longest partition (default 30 s).
    pub partition: Option<Duration>,
    /// Partition modes to draw from (default `drop`).
    pub partition_modes: Option<Vec<String>>,
    /// Each node's clock drift is drawn within ±this (ppm; default 0: the scenario's clocks).
    pub drift_ppm: Option<f64>,
    /// Each node's one-way latency is drawn in [1 ms, this] (default: the scenario's network).
    pub latency: Option<Duration>,
    /// Fault targets to draw from: `holder`, `non-holder`, or node identities (default
    /// `holder` and `non-holder`).
    pub targets: Option<Vec<String>>,
}

/// The bounds with their defaults filled in.
#[derive(Clone, Debug)]
pub struct Bounds {
    pub faults: usize,
    pub kinds: Vec<String>,
    pub window: (Nanos, Nanos),
    pub pause: Nanos,
    pub partition: Nanos,
    pub partition_modes: Vec<String>,
    pub drift_ppm: f64,
    pub latency: Option<Nanos>,
    pub targets: Vec<String>,
}

const KINDS: [&str; 5] = ["pause", "partition", "crash", "stop", "restart"];

impl Bounds {
    fn from_doc(doc: &BoundsDoc, scenario: &Scenario) -> Result<Bounds, String> {
        let duration = scenario.duration.0;
        let kinds = doc.kinds.clone().unwrap_or_else(|| vec!["pause".into(), "partition".into()]);
        for k in &kinds {
            if !KINDS.contains(&k.as_str()) {
                return Err(format!("bounds.kinds: unknown fault kind {k:?} (one of {})", KINDS.join(", ")));
            }
        }
        if kinds.is_empty() {
            return Err("bounds.kinds: name at least one fault kind".into());
        }
        let window = match doc.window {
            Some([a, b]) => (a.0, b.0),
            None => (duration / 5, duration * 3 / 5),
        };
        if window.0 > window.1 || window.1 >= duration {
            return Err(format!(
                "bounds.window: [{}, {}] must be in order and inside the run's {}",
                format_duration(window.0),
                format_duration(window.1),
                format_duration(duration)
            ));
        }
        let modes = doc.partition_modes.clone().unwrap_or_else(|| vec!["drop".into()]);
        for m in &modes {
            if !["drop", "hold", "refuse"].contains(&m.as_str()) {
                return Err(format!("bounds.partition_modes: unknown mode {m:?} (drop, hold or refuse)"));
            }
        }
        if modes.is_empty() {
            return Err("bounds.partition_modes: name at least one mode (drop, hold or refuse)".into());
        }
        let identities: Vec<String> = scenario.nodes.iter().filter_map(|n| n.identity.clone()).collect();
        let targets = doc.targets.clone().unwrap_or_else(|| vec!["holder".into(), "non-holder".into()]);
        for t in &targets {
            if t != "holder" && t != "non-holder" && !identities.contains(t) {
                return Err(format!("bounds.targets: {t:?} is neither holder, non-holder nor a node identity"));
            }
        }
        if targets.is_empty() {
            return Err("bounds.targets: name at least one target (holder, non-holder or a node identity)".into());
        }
        let drift = doc.drift_ppm.unwrap_or(0.0);
        if !(0.0..=900_000.0).contains(&drift) {
            return Err("bounds.drift_ppm: between 0 and 900000 (a clock cannot stop)".into());
        }
        let faults = doc.faults.unwrap_or(2);
        if faults == 0 && drift == 0.0 && doc.latency.is_none() {
            return Err("bounds: nothing to search (faults = 0, no drift, no latency bound)".into());
        }
        if faults > 20 {
            return Err("bounds.faults: at most 20".into());
        }
        // A kind whose longest fault is 0 s injects nothing: as faults = 0 for that kind.
        let pause = doc.pause.map(|d| d.0).unwrap_or(secs(20));
        let partition = doc.partition.map(|d| d.0).unwrap_or(secs(30));
        for (kind, longest) in [("pause", pause), ("partition", partition)] {
            if longest == 0 && kinds.iter().any(|k| k == kind) {
                return Err(format!(
                    "bounds.{kind}: a {kind} of at most 0s does nothing (as faults = 0): give it a length, or \
                     leave \"{kind}\" out of bounds.kinds"
                ));
            }
        }
        Ok(Bounds {
            faults,
            kinds,
            window,
            pause,
            partition,
            partition_modes: modes,
            drift_ppm: drift,
            latency: doc.latency.map(|d| d.0.max(1_000_000)),
            targets,
        })
    }

    fn longest(&self, kind: &str) -> Nanos {
        match kind {
            "pause" => self.pause,
            "partition" => self.partition,
            "restart" => secs(30),
            _ => 0,
        }
    }
}

/// One fault of a schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub at: Nanos,
    pub target: String,
    pub kind: String,
    pub duration: Nanos,
    pub mode: String,
}

impl Fault {
    fn describe(&self) -> String {
        let what = match self.kind.as_str() {
            "partition" => format!("{} partition of {} for {}", self.mode, self.target, format_duration(self.duration)),
            "pause" => format!("pause of {} for {}", self.target, format_duration(self.duration)),
            "restart" => format!("restart of {} after {}", self.target, format_duration(self.duration)),
            k => format!("{k} of {}", self.target),
        };
        format!("{what} at {}", format_duration(self.at))
    }
}

/// One schedule: the run's seed, each node's drift and latency, and the faults.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub seed: u64,
    /// Per node, ppm (0 keeps the scenario's clock when the bounds draw no drift).
    pub drift_ppm: Vec<f64>,
    /// Per node, one-way latency (`None`: the scenario's network).
    pub latency: Vec<Option<Nanos>>,
    pub faults: Vec<Fault>,
}

/// What one run of a candidate showed.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub violated: bool,
    /// Why, in words (the failing expectation, or the dual window).
    pub detail: String,
    pub dual_seconds: f64,
    /// The smallest gap between a takeover and the previous leader's last act (negative: they
    /// overlapped by that much); `None` when leadership never changed hands.
    pub margin_seconds: Option<f64>,
}

impl Outcome {
    /// Larger is closer to a violation.
    fn score(&self) -> (bool, i64, i64) {
        let margin = self.margin_seconds.map_or(i64::MIN, |m| -(m * 1e6) as i64);
        (self.violated, (self.dual_seconds * 1e6) as i64, margin)
    }
}

/// The property a hunt tries to break.
#[derive(Clone, Debug)]
pub enum Property {
    NoDualLeader,
    DualLeaderAtMost(f64),
    NoSplitBrainWrites,
    LeaderWithin(Nanos),
    /// The protected object's history (`sim_core::history`): an applied write from a node the
    /// Lease did not name.
    NoWriteFromNonHolder,
    /// A read-modify-write applied over another leader's write it had not read.
    NoLostUpdate,
    Expectation(String, Expectation),
}

impl Property {
    pub fn parse(text: &str, metric_names: &[String]) -> Result<Property, String> {
        let t = text.trim();
        if t == "no-dual-leader" {
            return Ok(Property::NoDualLeader);
        }
        if t == "no-split-brain-writes" {
            return Ok(Property::NoSplitBrainWrites);
        }
        if let Some(rest) = t.strip_prefix("dual-leader") {
            let rest = rest.trim();
            if let Some(v) = rest.strip_prefix("<=") {
                let d = sim_core::time::parse_duration(v.trim()).map_err(|e| format!("property {t:?}: {e}"))?;
                return Ok(Property::DualLeaderAtMost(d as f64 / 1e9));
            }
        }
        if let Some(rest) = t.strip_prefix("leader-within") {
            let d = sim_core::time::parse_duration(rest.trim()).map_err(|e| format!("property {t:?}: {e}"))?;
            return Ok(Property::LeaderWithin(d));
        }
        if t == "no-lost-update" {
            return Ok(Property::NoLostUpdate);
        }
        if t == "no-write-from-non-holder" {
            return Ok(Property::NoWriteFromNonHolder);
        }
        expect::parse(t, metric_names).map(|e| Property::Expectation(t.to_string(), e)).map_err(|e| {
            format!(
                "property {t:?}: not one of no-dual-leader, dual-leader <= D, no-split-brain-writes, leader-within D, \
                 no-lost-update, no-write-from-non-holder, nor an expectation ({e})"
            )
        })
    }

    /// The expectation written into a shrunk scenario: it fails on the violating run.
    pub fn as_expectation(&self) -> String {
        match self {
            Property::NoDualLeader => "dual_leader_seconds == 0".into(),
            Property::DualLeaderAtMost(s) => format!("max_dual_leader_seconds <= {s}"),
            Property::NoSplitBrainWrites => "split_brain_writes == 0".into(),
            Property::LeaderWithin(d) => format!("leaderless_seconds < {}", *d as f64 / 1e9),
            // The history's checks have no metric path; a non-holder write is a split-brain write.
            Property::NoWriteFromNonHolder => "split_brain_writes == 0".into(),
            Property::NoLostUpdate => "overwrites == 0".into(),
            Property::Expectation(text, _) => text.clone(),
        }
    }
}

/// Everything a hunt needs, validated.
pub struct Hunt {
    pub path: String,
    pub base: LoadedScenario,
    pub bounds: Bounds,
    pub property: Property,
    pub property_text: String,
    pub identities: Vec<String>,
}

impl Hunt {
    pub fn load(path: &Path, property: Option<&str>) -> Result<Hunt, CliError> {
        let text = crate::scenario_file::read_file(path)?;
        let display = path.display().to_string();
        let file: HuntFile = toml::from_str(&text).map_err(|e| {
            let hint = crate::commands::FileKind::hint(&text, crate::commands::FileKind::Hunt, &display);
            CliError::input(crate::scenario_file::located(&display, &text, e.span(), e.message().trim_end()) + &hint)
        })?;
        let scenario_path = path.parent().unwrap_or(Path::new(".")).join(&file.scenario);
        let source = crate::scenario_file::read_file(&scenario_path)?;
        let base = crate::scenario_file::load(&scenario_path.display().to_string(), &source, &[])?;
        // The base must run as it is (validate = run).
        let (prepared, _) = run::prepare(&base, None, false, u64::MAX)?;
        // A bounds error names its key ("bounds.partition: …"): shown there, with the caret.
        let bounds = Bounds::from_doc(&file.bounds, &base.scenario).map_err(|e| {
            let key = e.strip_prefix("bounds.").and_then(|rest| rest.split_once(':')).map(|(key, _)| key);
            let path: Vec<String> = match key {
                Some(key) => vec!["bounds".into(), key.into()],
                None => vec!["bounds".into()],
            };
            let span = crate::scenario_file::span_of_path(&text, &path);
            CliError::input(crate::scenario_file::located(&display, &text, span, &e))
        })?;
        let property_text = property
            .map(str::to_string)
            .or(file.property.clone())
            .ok_or_else(|| CliError::input(format!("{display}: no property (set `property` or pass --property)")))?;
        let identities: Vec<String> = base.scenario.identities();
        let metric_names = expect::metric_names(&identities, &run::lease_keys(&base.scenario));
        let property =
            Property::parse(&property_text, &metric_names).map_err(|e| CliError::input(format!("{display}: {e}")))?;
        if let Property::Expectation(_, e) = &property
            && let Some(name) = e.action()
            && !base.scenario.actions.iter().any(|a| a.name == name)
        {
            return Err(CliError::input(format!(
                "{display}: property {property_text:?} is about action {name:?}, and {} scripts no action of that \
                 name",
                scenario_path.display()
            )));
        }
        // The history properties read the reconcilers' reads and writes: without them, or
        // without a read before each write, they could never be violated, and a hunt would
        // report "no violation" for a question it cannot ask.
        let reconcilers: Vec<_> = prepared.spec.nodes.iter().filter_map(|n| n.reconciler.as_ref()).collect();
        if matches!(property, Property::NoLostUpdate | Property::NoWriteFromNonHolder | Property::NoSplitBrainWrites)
            && reconcilers.is_empty()
        {
            return Err(CliError::input(format!(
                "{display}: property {property_text:?} checks the reconcilers' writes, and no node of {} has a \
                 [nodes.reconciler]",
                scenario_path.display()
            )));
        }
        if matches!(property, Property::NoLostUpdate) && !reconcilers.iter().any(|r| r.mode.reads_before_writing()) {
            return Err(CliError::input(format!(
                "{display}: property \"no-lost-update\" needs a reconciler that reads before it writes (mode \
                 update or fenced-update); apply, apply-force and create write without reading, so no update of \
                 theirs can be lost"
            )));
        }
        Ok(Hunt { path: display, base, bounds, property, property_text, identities })
    }

    /// The base scenario with `c` applied.
    pub fn scenario_of(&self, c: &Candidate) -> Scenario {
        let mut s = self.base.scenario.clone();
        s.seed = c.seed;
        for (i, node) in std::sync::Arc::make_mut(&mut s.nodes).iter_mut().enumerate() {
            if self.bounds.drift_ppm > 0.0 {
                let clock = node.clock.get_or_insert_with(Box::default);
                clock.drift_ppm = Some(c.drift_ppm[i]);
                clock.drift_ppm_dist = None;
            }
            // The drawn latency replaces the scenario's in both directions; its loss stays.
            if let Some(l) = c.latency[i] {
                let network = node.network.get_or_insert_with(Box::default);
                network.latency = Some(LatencyDoc::Fixed(Duration(l)));
                for direction in [&mut network.up, &mut network.down].into_iter().flatten() {
                    direction.latency = None;
                }
            }
        }
        for f in &c.faults {
            let (node, target) = if f.target == "holder" || f.target == "non-holder" {
                (None, Some(f.target.clone()))
            } else {
                (Some(f.target.clone()), None)
            };
            s.faults.push(FaultDoc {
                at: Duration(f.at),
                node,
                target,
                kind: f.kind.clone(),
                duration: matches!(f.kind.as_str(), "pause" | "partition").then_some(Duration(f.duration)),
                cut: None,
                mode: (f.kind == "partition" && f.mode != "drop").then(|| f.mode.clone()),
                delay: (f.kind == "restart").then_some(Duration(f.duration)),
                delta: None,
                extra: None,
                ends: None,
            });
        }
        s.faults.sort_by_key(|f| f.at.0);
        s
    }

    fn loaded(&self, c: &Candidate) -> LoadedScenario {
        LoadedScenario {
            path: self.base.path.clone(),
            source: self.base.source.clone(),
            scenario: self.scenario_of(c),
            overrides: Vec::new(),
        }
    }

    /// Runs `c` once (no trace) and judges it.
    pub fn evaluate(&self, c: &Candidate) -> Result<Outcome, String> {
        let history = matches!(self.property, Property::NoLostUpdate | Property::NoWriteFromNonHolder);
        let out = run::run_judged(&self.loaded(c), Some(c.seed), history).map_err(|e| e.message)?;
        Ok(self.judge(c, &out))
    }

    fn judge(&self, c: &Candidate, out: &RunJudged) -> Outcome {
        let r = &out.result;
        let m = &r.metrics;
        let dual = m.dual_leader_seconds;
        let margin = margin_seconds(r);
        let (violated, detail) = match &self.property {
            Property::NoDualLeader => {
                (dual > 0.0, format!("two leaders acted at once for {dual:.3} s ({} windows)", m.dual_leader_windows))
            }
            Property::DualLeaderAtMost(limit) => (
                m.max_dual_leader_seconds > *limit,
                format!("the longest dual-leader window is {:.3} s (limit {limit} s)", m.max_dual_leader_seconds),
            ),
            Property::NoSplitBrainWrites => {
                let writes: u64 = m.nodes.values().map(|n| n.split_brain_writes).sum();
                (writes > 0, format!("{writes} writes applied while the Lease named another holder"))
            }
            Property::LeaderWithin(limit) => {
                let healed = c.faults.iter().map(|f| f.at + f.duration).max().unwrap_or(0);
                let gap = leaderless_after(r, healed);
                (gap > *limit, format!("no leader for {} after the last fault healed", format_duration(gap)))
            }
            Property::NoWriteFromNonHolder | Property::NoLostUpdate => {
                let none = sim_core::history::HistoryReport::default();
                let h = out.history.as_ref().unwrap_or(&none);
                if matches!(self.property, Property::NoLostUpdate) {
                    (
                        !h.lost_updates.is_empty(),
                        format!("{} lost update(s) of the protected object", h.lost_updates.len()),
                    )
                } else {
                    (
                        !h.non_holder_writes.is_empty(),
                        format!("{} write(s) applied from a non-holder", h.non_holder_writes.len()),
                    )
                }
            }
            Property::Expectation(text, e) => {
                let (passed, seen) = expect::check(e, &metric_values(m), &r.actions);
                (!passed, format!("{text}: {seen}"))
            }
        };
        Outcome { violated, detail, dual_seconds: dual, margin_seconds: margin }
    }

    fn random(&self, rng: &mut ComponentRng) -> Candidate {
        let n = self.base.scenario.nodes.len();
        let b = &self.bounds;
        let drift_ppm =
            (0..n).map(|_| if b.drift_ppm > 0.0 { (rng.unit_f64() * 2.0 - 1.0) * b.drift_ppm } else { 0.0 }).collect();
        let latency = (0..n).map(|_| b.latency.map(|max| rng.uniform_u64(1_000_000, max))).collect();
        let count = if b.faults == 0 { 0 } else { rng.uniform_u64(1, b.faults as u64) as usize };
        let faults = (0..count).map(|_| self.random_fault(rng)).collect();
        Candidate { seed: rng.uniform_u64(1, 1 << 32), drift_ppm, latency, faults }
    }

    fn random_fault(&self, rng: &mut ComponentRng) -> Fault {
        let b = &self.bounds;
        let kind = b.kinds[rng.uniform_u64(0, b.kinds.len() as u64 - 1) as usize].clone();
        let longest = b.longest(&kind);
        Fault {
            at: rng.uniform_u64(b.window.0, b.window.1),
            target: b.targets[rng.uniform_u64(0, b.targets.len() as u64 - 1) as usize].clone(),
            duration: if longest > 0 { rng.uniform_u64(longest / 20, longest) } else { 0 },
            mode: b.partition_modes[rng.uniform_u64(0, b.partition_modes.len() as u64 - 1) as usize].clone(),
            kind,
        }
    }

    fn mutate(&self, parent: &Candidate, rng: &mut ComponentRng) -> Candidate {
        let mut c = parent.clone();
        let b = &self.bounds;
        for _ in 0..rng.uniform_u64(1, 3) {
            match rng.uniform_u64(0, 6) {
                0 => c.seed = rng.uniform_u64(1, 1 << 32),
                1 if !c.faults.is_empty() => {
                    let i = rng.uniform_u64(0, c.faults.len() as u64 - 1) as usize;
                    let shift = rng.uniform_u64(0, 2 * SECOND) as i64 - SECOND as i64;
                    c.faults[i].at =
                        (c.faults[i].at as i64 + shift).clamp(b.window.0 as i64, b.window.1 as i64) as Nanos;
                }
                2 if !c.faults.is_empty() => {
                    let i = rng.uniform_u64(0, c.faults.len() as u64 - 1) as usize;
                    let longest = b.longest(&c.faults[i].kind);
                    let shift = rng.uniform_u64(0, 4 * SECOND) as i64 - 2 * SECOND as i64;
                    c.faults[i].duration = (c.faults[i].duration as i64 + shift).clamp(0, longest as i64) as Nanos;
                }
                3 if c.faults.len() < b.faults => c.faults.push(self.random_fault(rng)),
                4 if c.faults.len() > 1 => {
                    let i = rng.uniform_u64(0, c.faults.len() as u64 - 1) as usize;
                    c.faults.remove(i);
                }
                5 if b.drift_ppm > 0.0 => {
                    let i = rng.uniform_u64(0, c.drift_ppm.len() as u64 - 1) as usize;
                    // Half the time a step, half the time an edge of the bound: the worst
                    // clocks are at the edges (a slow leader, a fast candidate).
                    c.drift_ppm[i] = if rng.bernoulli(0.5) {
                        (c.drift_ppm[i] + (rng.unit_f64() - 0.5) * b.drift_ppm * 0.4).clamp(-b.drift_ppm, b.drift_ppm)
                    } else if rng.bernoulli(0.5) {
                        b.drift_ppm
                    } else {
                        -b.drift_ppm
                    };
                }
                6 => {
                    if let Some(max) = b.latency {
                        let i = rng.uniform_u64(0, c.latency.len() as u64 - 1) as usize;
                        c.latency[i] = Some(rng.uniform_u64(1_000_000, max));
                    }
                }
                _ => c.faults.iter_mut().for_each(|f| f.at = f.at.clamp(b.window.0, b.window.1)),
            }
        }
        c
    }
}

/// The smallest gap between the end of one node's acting span and the start of another's on
/// the same Lease (negative when they overlap): how close the run came to two leaders.
pub fn margin_seconds(r: &RunResult) -> Option<f64> {
    let mut spans: Vec<(&str, Nanos, Nanos, usize)> = r
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::Leader)
        .map(|s| (r.node_leases[s.node].as_str(), s.from, s.until, s.node))
        .collect();
    spans.sort();
    let mut best = f64::INFINITY;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            if b.0 != a.0 {
                break;
            }
            if b.3 != a.3 {
                best = best.min((b.1 as f64 - a.2 as f64) / 1e9);
            }
        }
    }
    best.is_finite().then_some(best)
}

/// How long after `from` every Lease waited for an acting leader (the longest).
fn leaderless_after(r: &RunResult, from: Nanos) -> Nanos {
    let mut leases: Vec<&str> = r.node_leases.iter().map(String::as_str).collect();
    leases.sort();
    leases.dedup();
    let mut worst = 0;
    for lease in leases {
        let spans = r.spans.iter().filter(|s| s.kind == SpanKind::Leader && r.node_leases[s.node] == lease);
        let mut first = None;
        for s in spans {
            if s.from <= from && s.until > from {
                first = Some(from);
                break;
            }
            if s.from > from {
                first = Some(first.map_or(s.from, |f: Nanos| f.min(s.from)));
            }
        }
        worst = worst.max(first.unwrap_or(r.duration).saturating_sub(from));
    }
    worst
}

/// The hunt's result.
pub struct HuntResult {
    pub runs: u64,
    pub found: Option<(Candidate, Outcome)>,
    /// The candidate that came closest (the violation, when found).
    pub closest: Option<(Candidate, Outcome)>,
}

/// Searches until a violation or `budget` runs. `jobs` threads run each batch.
pub fn search(
    hunt: &Hunt,
    seed: u64,
    budget: u64,
    jobs: usize,
    progress: &mut dyn FnMut(u64, u64),
    stop: &dyn Fn() -> bool,
) -> Result<HuntResult, String> {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build().map_err(|e| e.to_string())?;
    let mut corpus: Vec<(Candidate, Outcome)> = Vec::new();
    let mut runs = 0u64;
    let mut batch = 0u64;
    while runs < budget && !stop() {
        let mut rng = ComponentRng::new(seed, &format!("hunt/batch/{batch}"));
        let size = BATCH.min((budget - runs) as usize);
        let candidates: Vec<Candidate> = (0..size)
            .map(|i| {
                if batch < 2 || corpus.is_empty() || i % 2 == 0 {
                    hunt.random(&mut rng)
                } else {
                    let parent = &corpus[rng.uniform_u64(0, corpus.len() as u64 - 1) as usize].0;
                    hunt.mutate(parent, &mut rng)
                }
            })
            .collect();
        let outcomes: Vec<Result<Outcome, String>> =
            pool.install(|| candidates.par_iter().map(|c| hunt.evaluate(c)).collect());
        runs += size as u64;
        batch += 1;
        progress(runs, budget);
        for (c, o) in candidates.into_iter().zip(outcomes) {
            let o = o?;
            if o.violated {
                return Ok(HuntResult { runs, found: Some((c.clone(), o.clone())), closest: Some((c, o)) });
            }
            corpus.push((c, o));
        }
        // Stable: ties keep the earlier candidate first, so the corpus does not depend on jobs.
        corpus.sort_by_key(|c| std::cmp::Reverse(c.1.score()));
        corpus.truncate(CORPUS);
    }
    let closest = corpus.into_iter().next();
    Ok(HuntResult { runs, found: None, closest })
}

/// Shrinks a violating candidate while it still violates; returns it and the steps taken.
pub fn shrink(hunt: &Hunt, found: &Candidate) -> Result<(Candidate, Outcome, Vec<String>), String> {
    let mut best = found.clone();
    let mut outcome = hunt.evaluate(&best)?;
    let mut steps = Vec::new();
    let still = |c: &Candidate| -> Result<Option<Outcome>, String> {
        let o = hunt.evaluate(c)?;
        Ok(o.violated.then_some(o))
    };
    for _round in 0..6 {
        let before = best.clone();
        // Fewer faults.
        let mut i = 0;
        while i < best.faults.len() {
            let mut c = best.clone();
            let removed = c.faults.remove(i);
            if let Some(o) = still(&c)? {
                steps.push(format!("removed the {}", removed.describe()));
                best = c;
                outcome = o;
            } else {
                i += 1;
            }
        }
        // Shorter faults: bisect to 0.1 s, then round up to a whole second within the bound.
        for i in 0..best.faults.len() {
            let first = best.faults[i].duration;
            if first == 0 {
                continue;
            }
            let (mut lo, mut hi) = (0u64, first);
            while hi - lo > SECOND / 10 {
                let mid = lo + (hi - lo) / 2;
                let mut c = best.clone();
                c.faults[i].duration = mid;
                if let Some(o) = still(&c)? {
                    hi = mid;
                    best = c;
                    outcome = o;
                } else {
                    lo = mid;
                }
            }
            let rounded = hi.div_ceil(SECOND) * SECOND;
            if rounded != hi && rounded <= hunt.bounds.longest(&best.faults[i].kind) {
                let mut c = best.clone();
                c.faults[i].duration = rounded;
                if let Some(o) = still(&c)? {
                    best = c;
                    outcome = o;
                }
            }
            if best.faults[i].duration != first {
                steps.push(format!(
                    "fault {}: {} {} → {}",
                    i + 1,
                    best.faults[i].kind,
                    format_duration(first),
                    format_duration(best.faults[i].duration)
                ));
            }
        }
        // Earlier, round times.
        for i in 0..best.faults.len() {
            for at in
                [hunt.bounds.window.0, best.faults[i].at / SECOND * SECOND, best.faults[i].at.div_ceil(SECOND) * SECOND]
            {
                if at == best.faults[i].at || at < hunt.bounds.window.0 || at > hunt.bounds.window.1 {
                    continue;
                }
                let mut c = best.clone();
                c.faults[i].at = at;
                if let Some(o) = still(&c)? {
                    steps.push(format!("fault {}: moved to {}", i + 1, format_duration(at)));
                    best = c;
                    outcome = o;
                    break;
                }
            }
        }
        // Smaller skew: each drift to 0, else halved, then to a whole thousand ppm.
        for i in 0..best.drift_ppm.len() {
            for d in [0.0, best.drift_ppm[i] / 2.0, (best.drift_ppm[i] / 1000.0).round() * 1000.0] {
                if d == best.drift_ppm[i] {
                    continue;
                }
                let mut c = best.clone();
                c.drift_ppm[i] = d;
                if let Some(o) = still(&c)? {
                    steps.push(format!(
                        "node {}: drift {:.0} ppm",
                        hunt.identities.get(i).map_or("?", String::as_str),
                        d
                    ));
                    best = c;
                    outcome = o;
                    break;
                }
            }
        }
        // Less latency: 1 ms, else whole milliseconds.
        for i in 0..best.latency.len() {
            let Some(l) = best.latency[i] else { continue };
            for v in [1_000_000, l.div_ceil(1_000_000) * 1_000_000] {
                if v == l {
                    continue;
                }
                let mut c = best.clone();
                c.latency[i] = Some(v);
                if let Some(o) = still(&c)? {
                    steps.push(format!(
                        "node {}: latency {}",
                        hunt.identities.get(i).map_or("?", String::as_str),
                        format_duration(v)
                    ));
                    best = c;
                    outcome = o;
                    break;
                }
            }
        }
        if best == before {
            break;
        }
    }
    Ok((best, outcome, steps))
}

/// The schedule in one line.
pub fn describe(c: &Candidate) -> String {
    let mut parts: Vec<String> = c.faults.iter().map(Fault::describe).collect();
    if c.drift_ppm.iter().any(|&d| d != 0.0) {
        parts.push(format!("drift ppm {:?}", c.drift_ppm.iter().map(|d| d.round() as i64).collect::<Vec<_>>()));
    }
    if c.latency.iter().any(Option::is_some) {
        parts.push(format!(
            "latency {}",
            c.latency
                .iter()
                .map(|l| l.map(format_duration).unwrap_or_else(|| "as scenario".into()))
                .collect::<Vec<_>>()
                .join("/")
        ));
    }
    format!("seed {}: {}", c.seed, if parts.is_empty() { "no faults".into() } else { parts.join("; ") })
}

/// The shrunk schedule as a scenario file: the base scenario with the schedule applied, its own
/// name, and the property as the expectation that fails.
pub fn scenario_toml(hunt: &Hunt, c: &Candidate, outcome: &Outcome) -> Result<String, String> {
    let mut s = hunt.scenario_of(c);
    s.name = format!("{}-{}", s.name, slug(&hunt.property_text));
    s.description = format!(
        "Found by `leasesim hunt {}` and shrunk: {}. {}. Replay: leasesim run <this file> (the expectation fails).",
        hunt.path,
        describe(c),
        outcome.detail
    );
    s.expect = vec![hunt.property.as_expectation()];
    let json = serde_json::to_value(&s).map_err(|e| e.to_string())?;
    let table = to_toml(strip_nulls(json)).ok_or("the scenario has no TOML form")?;
    let body = toml::to_string(&table).map_err(|e| e.to_string())?;
    Ok(format!("# Written by leasesim hunt: a minimal schedule that breaks `{}`.\n{body}", hunt.property_text))
}

fn slug(text: &str) -> String {
    let s: String = text.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-")
}

fn strip_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .filter(|(_, v)| !matches!(v, Value::Array(a) if a.is_empty()))
                .filter(|(_, v)| !matches!(v, Value::Object(o) if o.is_empty()))
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(strip_nulls).collect()),
        v => v,
    }
}

fn to_toml(v: Value) -> Option<toml::Value> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => toml::Value::Boolean(b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        Value::String(s) => toml::Value::String(s),
        Value::Array(a) => toml::Value::Array(a.into_iter().filter_map(to_toml).collect()),
        Value::Object(m) => toml::Value::Table(m.into_iter().filter_map(|(k, v)| Some((k, to_toml(v)?))).collect()),
    })
}

/// The envelope's verdict for the hunt's bounds (client-go's closed form), when the property
/// is about two leaders: `Some(true)` when the bounds are inside the safe region.
pub fn envelope_verdict(hunt: &Hunt) -> Option<(bool, String)> {
    if !matches!(hunt.property, Property::NoDualLeader | Property::DualLeaderAtMost(_)) {
        return None;
    }
    let (prepared, _) = run::prepare(&hunt.base, None, false, u64::MAX).ok()?;
    let spec = &prepared.spec;
    let e0 = &spec.nodes.first()?.elector;
    // The envelope is client-go's: it reads nothing of another library's loop.
    if spec
        .nodes
        .iter()
        .any(|n| n.elector.algorithm.library().envelope != sim_core::elector::library::Envelope::ClientGo)
    {
        return None;
    }
    if spec.nodes.iter().any(|n| {
        let e = &n.elector;
        e.lease_duration != e0.lease_duration
            || e.renew_deadline != e0.renew_deadline
            || e.retry_period != e0.retry_period
    }) {
        return None;
    }
    let d = hunt.bounds.drift_ppm * 1e-6;
    let input = crate::envelope::EnvelopeInput {
        lease_duration: e0.lease_duration as f64 / 1e9,
        renew_deadline: e0.renew_deadline as f64 / 1e9,
        retry_period: e0.retry_period as f64 / 1e9,
        latency_max: hunt.bounds.latency.unwrap_or(0) as f64 / 1e9,
        rate_ratio: (1.0 + d) / (1.0 - d),
        pause: if hunt.bounds.kinds.iter().any(|k| k == "pause") { hunt.bounds.pause as f64 / 1e9 } else { 0.0 },
    };
    let e = crate::envelope::evaluate(&input);
    let inside = if input.pause > 0.0 { e.inside_failing } else { e.inside_no_pause };
    Some((
        inside,
        format!(
            "envelope (LD {} s, RD {} s, RP {} s, latency ≤ {} s, rate ratio ≤ {:.4}, pause ≤ {} s): the leader acts up to \
             {:.3} s after its last renewal, a candidate can take over {:.3} s after it → {}",
            input.lease_duration,
            input.renew_deadline,
            input.retry_period,
            input.latency_max,
            input.rate_ratio,
            input.pause,
            e.leader_gives_up + input.pause,
            e.candidate_takeover,
            if inside { "SAFE: no dual-leader window is possible" } else { "a dual-leader window is possible" }
        ),
    ))
}

/// `hunt.json`: what was searched and what was found (no wall-clock figures: the file is the
/// same for the same seed and jobs).
pub fn summary_json(
    hunt: &Hunt,
    seed: u64,
    result: &HuntResult,
    shrunk: Option<&(Candidate, Outcome, Vec<String>)>,
) -> Value {
    let envelope = envelope_verdict(hunt);
    json!({
        "tool": "leasesim",
        "hunt": hunt.path,
        "scenario": hunt.base.path,
        "property": hunt.property_text,
        "seed": seed,
        "runs": result.runs,
        "violated": result.found.is_some(),
        "found": result.found.as_ref().map(|(c, o)| json!({"schedule": describe(c), "detail": o.detail})),
        "shrunk": shrunk.map(|(c, o, steps)| json!({"schedule": describe(c), "detail": o.detail, "steps": steps})),
        "closest": result.closest.as_ref().map(|(c, o)| json!({
            "schedule": describe(c),
            "dual_leader_seconds": o.dual_seconds,
            "margin_seconds": o.margin_seconds,
            "handover": o.margin_seconds.is_some(),
        })),
        "envelope": envelope.as_ref().map(|(inside, text)| json!({"safe": inside, "reading": text})),
        "envelope_contradicted": matches!((&envelope, &result.found), (Some((true, _)), Some(_))),
    })
}

#[derive(clap::Args)]
pub struct HuntFlags {
    /// A hunt file (TOML: scenario, property, [bounds]; docs/hunt.md).
    pub file: PathBuf,
    /// The property to break (replaces the file's): no-dual-leader, "dual-leader <= 2s",
    /// no-split-brain-writes, "leader-within 30s", no-lost-update, no-write-from-non-holder, or
    /// an expectation line.
    #[arg(long)]
    pub property: Option<String>,
    /// How many runs to try (a number), or how long to search (`90s`, `10m`: then the number of
    /// runs, and so the result, depends on the machine).
    #[arg(long, default_value = "2000")]
    pub budget: String,
    /// Worker threads (default: every core). With a run budget the result does not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// The search's own seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output directory: hunt.json, and when a violation is found, found.toml (the shrunk
    /// scenario), shrink.txt and its report.
    #[arg(long)]
    pub out: PathBuf,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `leasesim hunt`: search, shrink, write what was found, replay it, report.
pub fn command(args: HuntFlags) -> Result<ExitCode, CliError> {
    let h = Hunt::load(&args.file, args.property.as_deref())?;
    let jobs = crate::jobs::resolve(args.jobs)?;
    let (runs_budget, time_budget) = match args.budget.parse::<u64>() {
        Ok(0) => return Err(CliError::input("--budget 0: a hunt needs at least one run (or a duration such as 30s)")),
        Ok(n) => (n, None),
        _ => {
            let t = sim_core::time::parse_duration(&args.budget).map_err(|e| {
                CliError::input(format!("--budget {:?}: a number of runs or a duration ({e})", args.budget))
            })?;
            if t < 1_000_000_000 {
                return Err(CliError::input(format!(
                    "--budget {}: a time budget below 1s ends before the first batch of runs; give at least 1s",
                    args.budget
                )));
            }
            (u64::MAX, Some(std::time::Duration::from_nanos(t)))
        }
    };
    crate::output::check_replaceable(&args.out, crate::output::Command::Hunt).map_err(CliError::input)?;
    let started = std::time::Instant::now();
    let bar = crate::progress::runs_bar(if time_budget.is_some() { 0 } else { runs_budget as usize }, 0, args.quiet);
    let mut progress = |done: u64, _total: u64| bar.set_position(done);
    let stop = || time_budget.is_some_and(|t| started.elapsed() >= t);
    let result = search(&h, args.seed, runs_budget, jobs, &mut progress, &stop).map_err(CliError::input)?;
    bar.finish_and_clear();
    let searched = started.elapsed().as_secs_f64();
    let shrunk = match &result.found {
        Some((c, _)) => Some(shrink(&h, c).map_err(CliError::input)?),
        None => None,
    };
    let mut staged = crate::output::StagedDir::new(&args.out, crate::output::Command::Hunt).map_err(CliError::input)?;
    let mut summary =
        serde_json::to_string_pretty(&summary_json(&h, args.seed, &result, shrunk.as_ref())).expect("json");
    summary.push('\n');
    staged.write("hunt.json", summary).map_err(CliError::input)?;
    println!("hunt {}  property {:?}  seed {}", h.path, h.property_text, args.seed);
    println!(
        "{} runs in {:.1} s ({:.0} runs/s on {jobs} thread(s))",
        result.runs,
        searched,
        result.runs as f64 / searched.max(1e-9)
    );
    let envelope = envelope_verdict(&h);
    if let Some((_, reading)) = &envelope {
        println!("{reading}");
    }
    let code = match (&result.found, &shrunk) {
        (Some((c, o)), Some((small, so, steps))) => {
            println!("VIOLATED: {}", o.detail);
            println!("  found:  {}", describe(c));
            println!("  shrunk: {}  ({} steps)", describe(small), steps.len());
            println!("  {}", so.detail);
            // What was found is written first: nothing after this may lose it.
            let toml = scenario_toml(&h, small, so).map_err(CliError::input)?;
            staged.write("found.toml", &toml).map_err(CliError::input)?;
            let mut text = format!("found:  {}\n{}\n", describe(c), o.detail);
            for s in steps {
                text.push_str(&format!("shrink: {s}\n"));
            }
            text.push_str(&format!("final:  {}\n{}\n", describe(small), so.detail));
            staged.write("shrink.txt", text).map_err(CliError::input)?;
            // The file must replay the violation by itself: load it as `leasesim run` would.
            let replayed = crate::scenario_file::load("found.toml", &toml, &[]).and_then(|r| run::run(&r, None, true));
            let out = match replayed {
                Ok(out) if !out.all_passed() => out,
                failed => {
                    let why = match failed {
                        Ok(_) => "it does not break the property when replayed".to_string(),
                        Err(e) => e.message,
                    };
                    let path = staged.commit().map_err(CliError::input)?;
                    return Err(CliError::input(format!(
                        "internal error: the shrunk scenario ({}) was written to {}/found.toml, but {why}; please \
                         report it with that folder",
                        describe(small),
                        path.display()
                    )));
                }
            };
            for (file, bytes) in
                crate::outputs::report_files(&out, crate::report::ImageFormat::Svg).map_err(CliError::input)?
            {
                staged.write(&format!("found/{file}"), bytes).map_err(CliError::input)?;
            }
            if matches!(envelope, Some((true, _))) {
                println!(
                    "BUG: a violation inside the envelope's safe region: the simulator or docs/safety-envelope.md is \
                     wrong; please report it with found.toml"
                );
            }
            ExitCode::from(1)
        }
        _ => {
            println!("no violation in {} runs", result.runs);
            if let Some((c, o)) = &result.closest {
                match o.margin_seconds {
                    Some(m) => println!(
                        "closest: dual {:.3} s, margin {m:.3} s (the smallest gap between a takeover and the old leader's \
                         last act; negative = overlap)\n  {}",
                        o.dual_seconds,
                        describe(c)
                    ),
                    None => println!("closest: leadership never changed hands\n  {}", describe(c)),
                }
            }
            ExitCode::SUCCESS
        }
    };
    let path = staged.commit().map_err(CliError::input)?;
    println!("outputs: {}/", path.display());
    Ok(code)
}
