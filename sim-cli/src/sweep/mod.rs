//! `leasesim sweep` and `leasesim merge`: run a scenario over a grid of `--set` overrides × a
//! range of seeds, in parallel, and write `runs.csv` (one row per run), `aggregate.csv` (per
//! grid point), `sweep.json` (what was swept) and plots.
//!
//! Determinism: run `r` is grid point `r / seeds` with seed `seeds[r % seeds]`, and its seed is
//! the seed value itself (so the replay command is an ordinary `leasesim run --seed N`, and every
//! grid point sees the same seeds: common random numbers). Nothing depends on threads or shards.
//! Rows are written in run order, so `runs.csv` is the same for any `--jobs`, and a resumed or
//! merged sweep is byte-identical to an uninterrupted one. `aggregate.csv` and the plots are
//! computed from `runs.csv` and `sweep.json` alone, which is what lets `merge` produce them.

pub mod csv;
pub mod plots;
pub mod stats;

use crate::run::{self, replay_command};
use crate::scenario_file::{self, InputError, located, parse_value, span_of_path};
use serde_json::{Value, json};
use sim_core::scenario::did_you_mean;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

/// Bumped whenever the meaning of a sweep's files changes; part of the sweep id.
pub const SWEEP_FORMAT: u32 = 2;

/// The most values one grid axis may have, and the most runs a sweep may have (a sweep of more
/// would take years; shards split one of at most this size).
pub const MAX_AXIS_VALUES: usize = 100_000;
pub const MAX_RUNS: u64 = 1_000_000_000_000;

/// Metrics summarised in `aggregate.csv` unless the sweep names its own.
pub const DEFAULT_METRICS: [&str; 6] = [
    "dual_leader_seconds",
    "max_dual_leader_seconds",
    "leaderless_seconds",
    "lease_transitions",
    "transitions_per_hour",
    "failover_seconds.max",
];

/// `api_requests_by_verb_status.*` keys appear only when a run saw that verb and status, so
/// they cannot be fixed columns; `api_requests` keeps the total.
const VARIABLE_METRIC_PREFIX: &str = "api_requests_by_verb_status.";

#[derive(Clone, Debug, PartialEq)]
pub struct AxisValue {
    /// The right-hand side of the override, exactly as `--set` takes it (`8s`, `150000`).
    pub text: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// A `--set` key path (`defaults.renew_deadline`, `nodes.widget-operator-1.clock.drift_ppm`).
    pub path: String,
    pub values: Vec<AxisValue>,
    /// Varies together with the axis before it (a `[[zip]]` group): value i goes with value i.
    pub zipped: bool,
}

/// An effective sweep: everything that decides its runs and outputs.
#[derive(Clone, Debug)]
pub struct SweepSpec {
    /// The scenario as the replay command names it (relative to the working directory).
    pub scenario_path: String,
    pub scenario_source: String,
    /// Fixed overrides applied to every run before the grid's.
    pub set: Vec<String>,
    /// Grid axes; the first varies slowest.
    pub axes: Vec<Axis>,
    /// Seeds `from..to` (end exclusive).
    pub seeds: (u64, u64),
    pub metrics: Vec<String>,
    /// The axis drawn along x in the plots (default: the first).
    pub plot_x: Option<String>,
}

/// What the command line says, before it is combined with a sweep file.
#[derive(Clone, Debug, Default)]
pub struct SweepArgs {
    pub file: Option<PathBuf>,
    /// A scenario path (already resolved from a shipped name) for a sweep without a file.
    pub scenario: Option<PathBuf>,
    pub seeds: Option<String>,
    /// `PATH=V1,V2,…`: adds an axis, or replaces the file's axis with the same path.
    pub grid: Vec<String>,
    pub set: Vec<String>,
    pub metrics: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepFile {
    scenario: String,
    #[serde(default)]
    #[allow(dead_code)] // documentation for people reading the file
    description: Option<String>,
    seeds: Option<toml::Value>,
    #[serde(default)]
    grid: toml::Table,
    /// `[[zip]]`: keys that vary together (all lists of one length), as one more dimension.
    #[serde(default)]
    zip: Vec<toml::Table>,
    metrics: Option<Vec<String>>,
    #[serde(default)]
    set: Vec<String>,
    plot_x: Option<String>,
}

fn err(message: impl Into<String>) -> InputError {
    InputError(message.into())
}

/// FNV-1a, 64 bits: a stable fingerprint of text (not a security measure).
pub fn fnv1a64(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// `A..B` (B excluded, as in Rust), `A..=B` (B included) or a single seed `A`.
pub fn parse_seeds(text: &str) -> Result<(u64, u64), String> {
    let t = text.trim();
    let num = |s: &str| {
        s.trim().parse::<u64>().map_err(|_| format!("seeds {text:?}: {s:?} is not a seed (a whole number ≥ 0)"))
    };
    let (from, to) = if let Some((a, b)) = t.split_once("..=") {
        let (a, b) = (num(a)?, num(b)?);
        if b < a {
            return Err(format!("seeds {text:?}: the end {b} is below the start {a}"));
        }
        (a, b.checked_add(1).ok_or_else(|| format!("seeds {text:?}: the end is too large"))?)
    } else if let Some((a, b)) = t.split_once("..") {
        let (a, b) = (num(a)?, num(b)?);
        if b < a {
            return Err(format!("seeds {text:?}: the end {b} is below the start {a}"));
        }
        (a, b)
    } else {
        let a = num(t)?;
        (a, a + 1)
    };
    if from == to {
        return Err(format!("seeds {text:?} is empty (A..B excludes B; write {from}..={to} to include it)"));
    }
    Ok((from, to))
}

/// The text `--set` takes for a TOML value: bare when `--set` would read it back the same.
fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) if parse_value(s) == toml::Value::String(s.clone()) => s.clone(),
        other => other.to_string(),
    }
}

/// `{ from, to, step }` → numbers from `from` to `to` inclusive (when a step lands on it).
fn expand_range(path: &str, table: &toml::Table) -> Result<Vec<AxisValue>, String> {
    for key in table.keys() {
        if !["from", "to", "step"].contains(&key.as_str()) {
            return Err(format!(
                "grid axis {path:?}: unknown key {key:?} in a range{}; expected from, to, step",
                did_you_mean(key, ["from", "to", "step"].into_iter())
            ));
        }
    }
    let get = |k: &str| -> Result<&toml::Value, String> {
        table.get(k).ok_or_else(|| format!("grid axis {path:?}: a range needs from, to and step; {k} is missing"))
    };
    let (from, to, step) = (get("from")?, get("to")?, get("step")?);
    if let (Some(a), Some(b), Some(s)) = (from.as_integer(), to.as_integer(), step.as_integer()) {
        if s <= 0 {
            return Err(format!("grid axis {path:?}: step {s} must be above zero"));
        }
        if b < a {
            return Err(format!("grid axis {path:?}: the range {a} to {b} is empty (to is below from)"));
        }
        let count = (b - a) / s + 1;
        if count > MAX_AXIS_VALUES as i64 {
            return Err(format!(
                "grid axis {path:?}: from {a} to {b} by {s} is {count} values, more than a grid axis may have \
                 ({MAX_AXIS_VALUES}); use a larger step"
            ));
        }
        return Ok((0..)
            .map(|i| a + i * s)
            .take_while(|v| *v <= b)
            .map(|v| AxisValue { text: v.to_string() })
            .collect());
    }
    let as_f = |v: &toml::Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
    let (Some(a), Some(b), Some(s)) = (as_f(from), as_f(to), as_f(step)) else {
        return Err(format!(
            "grid axis {path:?}: range bounds must be numbers (list durations and names explicitly: [\"8s\", \"10s\"])"
        ));
    };
    if s <= 0.0 || !s.is_finite() {
        return Err(format!("grid axis {path:?}: step {s} must be above zero"));
    }
    if b < a {
        return Err(format!("grid axis {path:?}: the range {a} to {b} is empty (to is below from)"));
    }
    let count = ((b - a) / s + 1e-9).floor() + 1.0;
    if count > MAX_AXIS_VALUES as f64 {
        return Err(format!(
            "grid axis {path:?}: from {a} to {b} by {s} is {count:.0} values, more than a grid axis may have \
             ({MAX_AXIS_VALUES}); use a larger step"
        ));
    }
    let count = count as usize;
    // Computed as from + i·step and rounded to 1e-9 so 0.1 steps do not print as 0.30000000000000004.
    Ok((0..count)
        .map(|i| {
            let v = ((a + i as f64 * s) * 1e9).round() / 1e9;
            AxisValue { text: toml::Value::Float(v).to_string() }
        })
        .collect())
}

fn axis_from_toml(path: &str, value: &toml::Value) -> Result<Axis, String> {
    let values = match value {
        toml::Value::Array(items) => items.iter().map(|v| AxisValue { text: value_text(v) }).collect(),
        toml::Value::Table(t) => expand_range(path, t)?,
        other => {
            return Err(format!(
                "grid axis {path:?}: expected a list of values or {{ from, to, step }}, found {}",
                other.type_str()
            ));
        }
    };
    if Vec::is_empty(&values) {
        return Err(format!("grid axis {path:?} has no values"));
    }
    Ok(Axis { path: path.to_string(), values, zipped: false })
}

/// Is the axis after the one at `path` zipped to it (so `path` leads a zip group)?
fn axes_zipped_after(axes: &[Axis], path: &str) -> bool {
    axes.iter().position(|a| a.path == path).and_then(|i| axes.get(i + 1)).is_some_and(|a| a.zipped)
}

/// `PATH=V1,V2,…` from the command line.
pub fn parse_grid_arg(text: &str) -> Result<Axis, String> {
    let (path, values) = text.split_once('=').ok_or_else(|| format!("--grid {text:?}: expected PATH=V1,V2,…"))?;
    let values: Vec<AxisValue> =
        values.split(',').map(str::trim).filter(|v| !v.is_empty()).map(|v| AxisValue { text: v.to_string() }).collect();
    if values.is_empty() {
        return Err(format!("--grid {text:?}: no values after ="));
    }
    Ok(Axis { path: path.trim().to_string(), values, zipped: false })
}

/// `a/b/../c` → `a/c` without touching the file system (the scenario may be named relative to
/// the sweep file, and the replay command should read naturally).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.components().next_back(), Some(Component::Normal(_))) => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() { PathBuf::from(".") } else { out }
}

impl SweepSpec {
    /// Combines a sweep file (if any) with the command line.
    pub fn from_args(args: &SweepArgs) -> Result<SweepSpec, InputError> {
        let mut axes: Vec<Axis> = Vec::new();
        let mut seeds_text = None;
        let mut metrics = None;
        let mut set = Vec::new();
        let mut plot_x = None;
        let scenario_path = match (&args.file, &args.scenario) {
            (Some(_), Some(_)) => return Err(err("give either a sweep file or --scenario, not both")),
            (None, None) => return Err(err("give a sweep file, or --scenario with --grid and --seeds")),
            (None, Some(s)) => normalise(s),
            (Some(file), None) => {
                let source = std::fs::read_to_string(file)
                    .map_err(|e| err(format!("{}: cannot read the sweep file: {e}", file.display())))?;
                let name = file.display().to_string();
                let doc: SweepFile = toml::from_str(&source)
                    .map_err(|e| err(located(&name, &source, e.span(), e.message().trim_end())))?;
                let mut keyed: Vec<(usize, Axis)> = Vec::new();
                for (path, value) in &doc.grid {
                    let span = span_of_path(&source, &["grid".into(), path.clone()]);
                    let axis =
                        axis_from_toml(path, value).map_err(|m| err(located(&name, &source, span.clone(), &m)))?;
                    keyed.push((span.map(|s| s.start).unwrap_or(0), axis));
                }
                // TOML tables are unordered; the file's order is the natural nesting order.
                keyed.sort_by_key(|(at, _)| *at);
                axes = keyed.into_iter().map(|(_, a)| a).collect();
                for (g, group) in doc.zip.iter().enumerate() {
                    let mut members: Vec<(usize, Axis)> = Vec::new();
                    for (path, value) in group {
                        let span = span_of_path(&source, &["zip".into(), g.to_string(), path.clone()]);
                        let at = |m: &str| err(located(&name, &source, span.clone(), m));
                        if !matches!(value, toml::Value::Array(_)) {
                            return Err(at(&format!("zip key {path:?}: expected a list of values")));
                        }
                        let axis = axis_from_toml(path, value).map_err(|m| at(&m))?;
                        if axes.iter().any(|a| a.path == axis.path) || members.iter().any(|(_, a)| a.path == axis.path)
                        {
                            return Err(at(&format!("{path:?} is already an axis of this sweep")));
                        }
                        members.push((span.map(|s| s.start).unwrap_or(0), axis));
                    }
                    members.sort_by_key(|(at, _)| *at);
                    if members.len() < 2 {
                        return Err(err(format!("{name}: [[zip]] #{} needs two or more keys to vary together", g + 1)));
                    }
                    let len = members[0].1.values.len();
                    if let Some((_, odd)) = members.iter().find(|(_, a)| a.values.len() != len) {
                        return Err(err(format!(
                            "{name}: [[zip]] #{}: {:?} has {} values but {:?} has {len}; zipped keys need one value each per step",
                            g + 1,
                            odd.path,
                            odd.values.len(),
                            members[0].1.path
                        )));
                    }
                    for (k, (_, mut axis)) in members.into_iter().enumerate() {
                        axis.zipped = k > 0;
                        axes.push(axis);
                    }
                }
                seeds_text = match doc.seeds {
                    None => None,
                    Some(toml::Value::String(s)) => Some(s),
                    Some(toml::Value::Integer(i)) => Some(i.to_string()),
                    Some(other) => {
                        return Err(err(format!(
                            "{name}: seeds must be a string such as \"1..=20\", found {}",
                            other.type_str()
                        )));
                    }
                };
                metrics = doc.metrics;
                set = doc.set;
                plot_x = doc.plot_x;
                let dir = file.parent().unwrap_or(Path::new(""));
                let beside = normalise(&dir.join(&doc.scenario));
                let bare = !doc.scenario.contains('/') && !doc.scenario.ends_with(".toml");
                if !beside.exists() && bare && crate::shipped::find(&doc.scenario).is_some() {
                    PathBuf::from(&doc.scenario)
                } else {
                    beside
                }
            }
        };
        for g in &args.grid {
            let axis = parse_grid_arg(g).map_err(err)?;
            let in_zip = axes.iter().any(|a| a.path == axis.path && a.zipped) || axes_zipped_after(&axes, &axis.path);
            if in_zip {
                return Err(err(format!(
                    "--grid {:?}: that key is in a [[zip]] group of the sweep file; change it there",
                    axis.path
                )));
            }
            match axes.iter_mut().find(|a| a.path == axis.path) {
                Some(existing) => *existing = axis,
                None => axes.push(axis),
            }
        }
        set.extend(args.set.iter().cloned());
        if let Some(s) = &args.seeds {
            seeds_text = Some(s.clone());
        }
        let seeds_text =
            seeds_text.ok_or_else(|| err("no seeds: give seeds = \"1..=10\" in the sweep file, or --seeds 1..=10"))?;
        let seeds = parse_seeds(&seeds_text).map_err(err)?;
        if !args.metrics.is_empty() {
            metrics = Some(args.metrics.clone());
        }
        let metrics = metrics.unwrap_or_else(|| DEFAULT_METRICS.iter().map(|s| s.to_string()).collect());
        if let Some(x) = plot_x.as_ref().filter(|x| !axes.iter().any(|a| &a.path == *x)) {
            let names: Vec<&str> = axes.iter().map(|a| a.path.as_str()).collect();
            return Err(err(format!(
                "plot_x {x:?} is not a grid axis{}; axes: {}",
                did_you_mean(x, names.iter().copied()),
                names.join(", ")
            )));
        }
        let runs = axes
            .iter()
            .filter(|a| !a.zipped)
            .try_fold(seeds.1 - seeds.0, |acc, a| acc.checked_mul(a.values.len() as u64))
            .filter(|&runs| runs <= MAX_RUNS);
        if runs.is_none() {
            return Err(err(format!(
                "this sweep has more than {} runs (grid points × seeds); narrow the grid or the seeds",
                crate::run::group_digits(MAX_RUNS)
            )));
        }
        let scenario_source = crate::shipped::read_scenario(&scenario_path)?;
        Ok(SweepSpec {
            scenario_path: scenario_path.display().to_string(),
            scenario_source,
            set,
            axes,
            seeds,
            metrics,
            plot_x,
        })
    }

    /// On `--resume`: if the sweep in `out` names the same scenario file spelled another way
    /// (`./scenarios/x.toml`, an absolute path), keep its spelling, so the sweep is recognised and
    /// its replay commands stay as they began.
    pub fn adopt_scenario_spelling(&mut self, out: &Path) {
        let Ok(text) = std::fs::read_to_string(out.join("sweep.json")) else { return };
        let Some(stored) =
            serde_json::from_str::<Value>(&text).ok().and_then(|v| v["scenario"].as_str().map(String::from))
        else {
            return;
        };
        let same = match (std::fs::canonicalize(&stored), std::fs::canonicalize(&self.scenario_path)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if same {
            self.scenario_path = stored;
        }
    }

    pub fn point_count(&self) -> usize {
        self.axes.iter().filter(|a| !a.zipped).map(|a| a.values.len()).product()
    }

    pub fn seed_count(&self) -> usize {
        (self.seeds.1 - self.seeds.0) as usize
    }

    pub fn run_count(&self) -> usize {
        self.point_count() * self.seed_count()
    }

    /// The value index on each axis of grid point `point` (the last axis varies fastest; a
    /// zipped axis takes the index of the axis it is zipped to).
    pub fn point_indices(&self, point: usize) -> Vec<usize> {
        let mut rest = point;
        let mut out = vec![0; self.axes.len()];
        let mut i = self.axes.len();
        while i > 0 {
            // A group: its leading axis and the zipped axes after it.
            let mut lead = i - 1;
            while lead > 0 && self.axes[lead].zipped {
                lead -= 1;
            }
            let len = self.axes[lead].values.len();
            let index = rest % len;
            rest /= len;
            for slot in &mut out[lead..i] {
                *slot = index;
            }
            i = lead;
        }
        out
    }

    pub fn point_values(&self, point: usize) -> Vec<&str> {
        self.point_indices(point).iter().zip(&self.axes).map(|(i, a)| a.values[*i].text.as_str()).collect()
    }

    /// Every override of a point: the fixed ones, then one per axis.
    pub fn overrides(&self, point: usize) -> Vec<String> {
        let mut out = self.set.clone();
        for (axis, value) in self.axes.iter().zip(self.point_values(point)) {
            out.push(format!("{}={value}", axis.path));
        }
        out
    }

    /// (grid point, seed) of run `run`.
    pub fn run_of(&self, run: usize) -> (usize, u64) {
        (run / self.seed_count(), self.seeds.0 + (run % self.seed_count()) as u64)
    }

    fn load_point(&self, point: usize) -> Result<scenario_file::LoadedScenario, InputError> {
        scenario_file::load(&self.scenario_path, &self.scenario_source, &self.overrides(point))
    }

    /// [`Self::load_point`], parsed once for a thread's run of consecutive runs of one grid
    /// point (runs are numbered point by point, and each job takes a contiguous range): the
    /// parse cost as much as a tenth of a short run. The cache is keyed by everything the load
    /// reads, so a different sweep in the same process never sees another's scenario.
    fn load_point_cached(&self, point: usize) -> Result<Rc<scenario_file::LoadedScenario>, InputError> {
        type Key = (String, String, Vec<String>);
        thread_local! {
            static LAST: RefCell<Option<(Key, Rc<scenario_file::LoadedScenario>)>> = const { RefCell::new(None) };
        }
        let key: Key = (self.scenario_path.clone(), self.scenario_source.clone(), self.overrides(point));
        if let Some(hit) = LAST.with_borrow(|last| last.as_ref().filter(|(k, _)| *k == key).map(|(_, l)| Rc::clone(l)))
        {
            return Ok(hit);
        }
        let loaded = Rc::new(scenario_file::load(&key.0, &key.1, &key.2)?);
        LAST.set(Some((key, Rc::clone(&loaded))));
        Ok(loaded)
    }

    /// Checks every axis path and every grid point before anything runs or is written.
    pub fn validate(&self) -> Result<(), InputError> {
        for axis in &self.axes {
            let probe = [format!("{}={}", axis.path, axis.values[0].text)];
            let mut overrides = self.set.clone();
            overrides.extend(probe);
            scenario_file::load(&self.scenario_path, &self.scenario_source, &overrides).map_err(|e| {
                let message = e.0.split_once(": ").filter(|(head, _)| head.starts_with("--set ")).map(|x| x.1);
                err(format!("grid axis {:?}: {}", axis.path, message.unwrap_or(&e.0)))
            })?;
        }
        Ok(())
    }

    /// `grid point 3 (defaults.renew_deadline=8s)`.
    pub fn describe_point(&self, point: usize) -> String {
        let settings: Vec<String> =
            self.axes.iter().zip(self.point_values(point)).map(|(a, v)| format!("{}={v}", a.path)).collect();
        format!("grid point {point} ({})", settings.join(", "))
    }

    /// Checks grid points as `leasesim validate` checks a scenario (with the first seed, against
    /// the per-run budget), before anything runs or is written; returns the expected events of
    /// the whole sweep. Every point of a grid of up to 10,000 points is checked; of a larger one,
    /// the first and last thousand and a thousand spread between (the rest are checked as they
    /// run: a failure then stops the sweep, naming the point, with the rows before it kept).
    pub fn check_points(&self, max_events: u64) -> Result<u64, InputError> {
        let points = self.point_count();
        let sample: Vec<usize> = if points <= 10_000 {
            (0..points).collect()
        } else {
            let stride = points / 1000;
            let mut v: Vec<usize> =
                (0..1000).chain((0..1000).map(|i| i * stride)).chain(points - 1000..points).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut events = 0.0f64;
        for &point in &sample {
            let loaded = self.load_point(point).map_err(|e| err(format!("{}: {e}", self.describe_point(point))))?;
            let (prepared, _) = run::prepare(&loaded, Some(self.seeds.0), false, max_events)
                .map_err(|e| err(format!("{}: {e}", self.describe_point(point))))?;
            events += prepared.estimate.events as f64;
        }
        let per_run = events / sample.len().max(1) as f64;
        Ok((per_run * self.run_count() as f64).min(u64::MAX as f64) as u64)
    }

    /// The plot's x axis and, when it is a clock drift, the renew deadline or the lease
    /// duration, where the safety envelope (docs/safety-envelope.md, zero latency, leader cut off)
    /// puts the boundary: one per line of the plot (each combination of the other axes' values,
    /// read from that line's first grid point), so a sweep over two lease durations draws two.
    fn plot_json(&self) -> Value {
        let Some(x) = self.plot_x.clone().or_else(|| self.axes.first().map(|a| a.path.clone())) else {
            return Value::Null;
        };
        let x_index = self.axes.iter().position(|a| a.path == x);
        let names: Vec<String> = self.axes.iter().map(|a| a.path.clone()).collect();
        // Points with the x axis at its first value, one per line; the plot shows at most this many.
        const MAX_LINES: usize = 32;
        let mut boundaries = Vec::new();
        // The first points with the x axis at its first value, one per line: at most MAX_LINES
        // of them, found within MAX_LINES × (values of x) points.
        let x_len = x_index.map(|i| self.axes[i].values.len()).unwrap_or(1);
        let firsts = (0..self.point_count())
            .take(MAX_LINES.saturating_mul(x_len))
            .filter(|&p| x_index.is_none_or(|i| self.axis_digit(p, i) == 0))
            .take(MAX_LINES);
        for point in firsts {
            let Ok(loaded) = self.load_point(point) else { continue };
            let values: Vec<String> =
                (0..self.axes.len()).map(|i| self.axes[i].values[self.axis_digit(point, i)].text.clone()).collect();
            let series = plots::series_label(&names, &values, &self.x_group(x_index));
            if let Some(mut b) = envelope_boundary(&loaded, &x) {
                b["series"] = json!(series);
                boundaries.push(b);
            }
        }
        json!({"x": x, "boundaries": boundaries})
    }

    /// The axes that move with the plot's x axis (its zip group), by index.
    fn x_group(&self, x_index: Option<usize>) -> Vec<usize> {
        let zipped: Vec<bool> = self.axes.iter().map(|a| a.zipped).collect();
        plots::zip_group(&zipped, x_index)
    }

    /// The index into axis `axis`'s values of grid point `point` (mixed radix, last axis fastest).
    fn axis_digit(&self, point: usize, axis: usize) -> usize {
        self.point_indices(point)[axis]
    }

    /// `sweep.json`: the effective sweep and its id (a hash of everything else in it).
    pub fn sweep_json(&self) -> Value {
        let mut doc = json!({
            "tool": "leasesim",
            "version": env!("CARGO_PKG_VERSION"),
            "sweep_format": SWEEP_FORMAT,
            "scenario": self.scenario_path,
            "scenario_fnv1a64": fnv1a64(self.scenario_source.as_bytes()),
            "set": self.set,
            "grid": self.axes.iter().map(|a| {
                let mut axis = json!({"path": a.path, "values": a.values.iter().map(|v| &v.text).collect::<Vec<_>>()});
                if a.zipped {
                    axis["zipped_with_previous"] = json!(true);
                }
                axis
            }).collect::<Vec<_>>(),
            "seeds": {"from": self.seeds.0, "to_exclusive": self.seeds.1, "count": self.seed_count()},
            "points": self.point_count(),
            "runs": self.run_count(),
            "run_order": "run = point × seeds + (seed − from); point = mixed radix over the grid, last axis fastest; each run's seed is the seed value",
            "metrics": self.metrics,
            "plot": self.plot_json(),
        });
        let id = fnv1a64(doc.to_string().as_bytes());
        doc["sweep_id"] = json!(id);
        doc
    }
}

/// Which runs this process does: `run % count == index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub fn new(index: usize, count: usize) -> Result<Shard, String> {
        if count == 0 {
            return Err("shard count must be at least 1".into());
        }
        if index >= count {
            return Err(format!("shard {index}/{count}: the index must be below the count (0..{count})"));
        }
        Ok(Shard { index, count })
    }

    /// `I/N`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text.split_once('/').ok_or_else(|| format!("--shard {text:?}: expected I/N, such as 0/4"))?;
        let num = |s: &str| s.trim().parse::<usize>().map_err(|_| format!("--shard {text:?}: {s:?} is not a number"));
        Shard::new(num(i)?, num(n)?)
    }

    /// From a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`, count from `--shard-count` or
    /// `LEASESIM_SHARD_COUNT`) or a Slurm array (`SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN`
    /// of `SLURM_ARRAY_TASK_COUNT`).
    pub fn from_env(env: impl Fn(&str) -> Option<String>, shard_count: Option<usize>) -> Result<Shard, String> {
        let num = |name: &str| -> Result<Option<usize>, String> {
            env(name)
                .map(|v| v.trim().parse::<usize>().map_err(|_| format!("{name}={v:?} is not a number")))
                .transpose()
        };
        if let Some(index) = num("JOB_COMPLETION_INDEX")? {
            let count = match shard_count {
                Some(c) => c,
                None => num("LEASESIM_SHARD_COUNT")?.ok_or(
                    "JOB_COMPLETION_INDEX is set but not the shard count: pass --shard-count N (the Job's completions)",
                )?,
            };
            return Shard::new(index, count);
        }
        if let Some(task) = num("SLURM_ARRAY_TASK_ID")? {
            let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let count =
                num("SLURM_ARRAY_TASK_COUNT")?.ok_or("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not")?;
            let index = task
                .checked_sub(min)
                .ok_or(format!("SLURM_ARRAY_TASK_ID {task} is below SLURM_ARRAY_TASK_MIN {min}"))?;
            return Shard::new(index, count);
        }
        Err("--shard-from-env: neither JOB_COMPLETION_INDEX (Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID is set"
            .into())
    }

    fn json(&self, complete: bool, runs: usize) -> Value {
        json!({"shard": self.index, "of": self.count, "complete": complete, "runs": runs})
    }
}

/// A shard's runs, computed rather than listed so memory does not grow with the sweep.
struct ShardRuns {
    shard: Shard,
    /// How many runs the shard has.
    len: usize,
}

impl ShardRuns {
    fn new(shard: Shard, total: usize) -> ShardRuns {
        ShardRuns { shard, len: total.saturating_sub(shard.index).div_ceil(shard.count) }
    }

    /// The run index of the shard's `k`-th run.
    fn get(&self, k: usize) -> usize {
        self.shard.index + k * self.shard.count
    }
}

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub out: PathBuf,
    pub jobs: usize,
    pub shard: Option<Shard>,
    pub resume: bool,
    pub quiet: bool,
    /// Stop after this many runs (the sweep stays resumable): for tests and for chopping a long
    /// sweep into sittings.
    pub max_runs: Option<usize>,
    /// Each run's event budget (as `run --max-events`).
    pub max_events: u64,
}

#[derive(Debug, PartialEq)]
pub struct Outcome {
    /// Runs done by this invocation.
    pub ran: usize,
    /// Runs this shard (or the whole sweep) has done so far, and has in all.
    pub done: usize,
    pub total: usize,
}

impl Outcome {
    pub fn complete(&self) -> bool {
        self.done == self.total
    }
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("json");
    s.push('\n');
    s
}

/// The metric columns of `runs.csv`: every metric of the sweep's first run (its key set is the
/// same for every run of a scenario with these nodes), plus `transitions_per_hour`.
fn discover_columns(spec: &SweepSpec) -> Result<Vec<String>, InputError> {
    let loaded = spec.load_point(0)?;
    let mut out = run::run(&loaded, Some(spec.seeds.0), false)?;
    let mut columns: Vec<String> = run_metrics(&mut out).into_keys().collect();
    columns.sort();
    for m in &spec.metrics {
        if !columns.contains(m) {
            return Err(err(format!(
                "metric {m:?} is not a metric of this scenario{}; metrics: {}",
                did_you_mean(m, columns.iter().map(String::as_str)),
                columns.join(", ")
            )));
        }
    }
    Ok(columns)
}

fn run_metrics(out: &mut run::RunOutput) -> BTreeMap<String, f64> {
    let mut values = std::mem::take(&mut out.metric_values);
    values.retain(|k, _| !k.starts_with(VARIABLE_METRIC_PREFIX));
    let hours = out.result.duration as f64 / 3.6e12;
    values.insert(
        "transitions_per_hour".into(),
        if hours > 0.0 { out.result.metrics.lease_transitions as f64 / hours } else { 0.0 },
    );
    values
}

fn header(spec: &SweepSpec, columns: &[String]) -> String {
    let mut fields: Vec<&str> = vec!["run", "point"];
    fields.extend(spec.axes.iter().map(|a| a.path.as_str()));
    fields.push("seed");
    // 1 where the run's configuration is one client-go refuses (run under `unsafe`).
    fields.push("unsafe");
    fields.extend(columns.iter().map(String::as_str));
    fields.push("replay");
    csv::record(fields)
}

/// One `runs.csv` line (without the newline).
fn run_row(spec: &SweepSpec, columns: &[String], run: usize, max_events: u64) -> Result<String, InputError> {
    let (point, seed) = spec.run_of(run);
    let within = |e: InputError| err(format!("run {run}, {} seed {seed}: {e}", spec.describe_point(point)));
    let loaded = spec.load_point_cached(point).map_err(within)?;
    let budget = run::Budget { max_events, progress: None };
    let mut out = run::run_budgeted(&loaded, Some(seed), false, budget).map_err(within)?;
    let values = run_metrics(&mut out);
    if let Some(extra) = values.keys().find(|k| !columns.contains(k)) {
        return Err(err(format!(
            "run {run} (grid point {point}) has a metric {extra:?} the first run did not: a grid axis changes the \
             nodes; sweep such scenarios separately"
        )));
    }
    let mut fields = vec![run.to_string(), point.to_string()];
    fields.extend(spec.point_values(point).iter().map(|s| s.to_string()));
    fields.push(seed.to_string());
    fields.push(if out.unsafe_mode { "1" } else { "0" }.to_string());
    fields.extend(columns.iter().map(|c| values.get(c).map(|v| v.to_string()).unwrap_or_default()));
    fields.push(replay_command(&spec.scenario_path, seed, &loaded.overrides));
    Ok(csv::record(fields))
}

fn io(path: &Path, what: &str, e: std::io::Error) -> InputError {
    err(format!("{}: cannot {what}: {e}", path.display()))
}

/// What an output directory holds, judged before anything is written to it.
/// The file a running sweep holds an exclusive lock on, inside its `--out`.
const LOCK_FILE: &str = ".leasesim-sweep.lock";

/// Takes an advisory lock on `out` for the life of the returned file: a second sweep (or a
/// `--resume` started while the first still runs) is refused instead of interleaving rows. The
/// kernel drops the lock when the process dies, so a killed sweep never blocks its `--resume`.
fn lock_out_dir(out: &Path) -> Result<std::fs::File, InputError> {
    let path = out.join(LOCK_FILE);
    let file =
        OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(|e| io(&path, "open", e))?;
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: flock on a descriptor we own; no memory is shared with the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            return Err(err(format!(
                "--out {}: another leasesim sweep is writing this directory; wait for it or choose another --out",
                out.display()
            )));
        }
    }
    Ok(file)
}

fn check_out_dir(out: &Path, sweep_json: &str, shard: Option<Shard>, resume: bool) -> Result<bool, InputError> {
    if !out.exists() {
        return Ok(false);
    }
    if !out.is_dir() {
        return Err(err(format!("--out {}: exists and is not a directory", out.display())));
    }
    let existing = std::fs::read_to_string(out.join("sweep.json")).ok();
    let Some(existing) = existing else {
        // Only our own lock file (left by a sweep killed before it wrote sweep.json) is allowed.
        let empty = std::fs::read_dir(out)
            .map_err(|e| io(out, "list", e))?
            .filter_map(|e| e.ok())
            .all(|e| e.file_name() == LOCK_FILE);
        if empty {
            return Ok(false);
        }
        return Err(err(format!(
            "--out {}: the directory holds files but no sweep.json; refusing to write a sweep into it",
            out.display()
        )));
    };
    if existing != sweep_json {
        let id = |s: &str| serde_json::from_str::<Value>(s).ok().and_then(|v| v["sweep_id"].as_str().map(String::from));
        return Err(err(format!(
            "--out {}: holds another sweep (sweep_id {}, this one is {}); choose another --out{}",
            out.display(),
            id(&existing).unwrap_or_else(|| "unreadable".into()),
            id(sweep_json).unwrap_or_default(),
            if resume { " (--resume continues only the same sweep)" } else { "" }
        )));
    }
    if !resume {
        return Err(err(format!(
            "--out {}: already holds this sweep; pass --resume to continue it, or choose another --out",
            out.display()
        )));
    }
    let shard_file =
        std::fs::read_to_string(out.join("shard.json")).ok().and_then(|s| serde_json::from_str::<Value>(&s).ok());
    let existing_shard =
        shard_file.map(|v| (v["shard"].as_u64().unwrap_or(0) as usize, v["of"].as_u64().unwrap_or(0) as usize));
    if existing_shard != shard.map(|s| (s.index, s.count)) {
        let show = |s: Option<(usize, usize)>| s.map(|(i, n)| format!("shard {i}/{n}")).unwrap_or("unsharded".into());
        return Err(err(format!(
            "--out {}: holds {} of this sweep, not {}",
            out.display(),
            show(existing_shard),
            show(shard.map(|s| (s.index, s.count)))
        )));
    }
    Ok(true)
}

/// Reads the rows already in `runs.csv` on `--resume`: drops a partial last line, checks the
/// header and that the rows are this shard's runs in order, and returns how many there are.
fn resume_rows(path: &Path, header_line: &str, runs: &ShardRuns) -> Result<usize, InputError> {
    if !path.exists() {
        // Interrupted between sweep.json and the first write of runs.csv.
        write_file(path, &format!("{header_line}\n"))?;
        return Ok(0);
    }
    let file = File::open(path).map_err(|e| io(path, "open", e))?;
    let mut reader = BufReader::new(file);
    let mut complete_bytes = 0u64;
    let mut line = String::new();
    let mut rows = 0usize;
    let mut header_ok = false;
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(|e| io(path, "read", e))?;
        if n == 0 || !line.ends_with('\n') {
            break; // end, or a row cut off by the interruption: it is dropped and run again
        }
        let text = line.trim_end_matches('\n');
        if !header_ok {
            if text != header_line {
                return Err(err(format!("{}: its header is not this sweep's; refusing to resume", path.display())));
            }
            header_ok = true;
        } else {
            let run = csv::parse_line(text).first().and_then(|f| f.parse::<usize>().ok());
            if rows >= runs.len || run != Some(runs.get(rows)) {
                return Err(err(format!(
                    "{}: row {} is not the run expected there ({:?}); the file was edited or mixed up",
                    path.display(),
                    rows + 1,
                    (rows < runs.len).then(|| runs.get(rows))
                )));
            }
            rows += 1;
        }
        complete_bytes += n as u64;
    }
    let file = OpenOptions::new().write(true).open(path).map_err(|e| io(path, "open", e))?;
    file.set_len(complete_bytes).map_err(|e| io(path, "truncate", e))?;
    if !header_ok {
        let mut file = OpenOptions::new().append(true).open(path).map_err(|e| io(path, "open", e))?;
        writeln!(file, "{header_line}").map_err(|e| io(path, "write", e))?;
        file.sync_data().map_err(|e| io(path, "sync", e))?;
    }
    Ok(rows)
}

/// Runs (the rest of) a sweep into `opts.out`. Unsharded and complete, it also writes
/// `aggregate.csv` and the plots.
pub fn run_sweep(spec: &SweepSpec, opts: &RunOptions) -> Result<Outcome, InputError> {
    spec.validate()?;
    let events = spec.check_points(opts.max_events)?;
    if !opts.quiet {
        let jobs = opts.jobs.max(1) as u64;
        eprintln!(
            "{} runs ({} grid points × {} seeds), about {} events: about {} on {jobs} core(s)",
            run::group_digits(spec.run_count() as u64),
            spec.point_count(),
            spec.seed_count(),
            run::group_digits(events),
            run::rough_time(events / jobs)
        );
    }
    let columns = discover_columns(spec)?;
    let header_line = header(spec, &columns);
    let sweep_json = pretty(&spec.sweep_json());
    // Judge --out before creating anything in it: a refused directory is left as it was.
    check_out_dir(&opts.out, &sweep_json, opts.shard, opts.resume)?;
    let created_dir = !opts.out.exists();
    std::fs::create_dir_all(&opts.out).map_err(|e| io(&opts.out, "create", e))?;
    let lock = lock_out_dir(&opts.out)?;
    // Judged again under the lock: another sweep may have started in between.
    let resuming = match check_out_dir(&opts.out, &sweep_json, opts.shard, opts.resume) {
        Ok(resuming) => resuming,
        Err(e) => {
            drop(lock);
            if created_dir {
                let _ = std::fs::remove_dir_all(&opts.out);
            }
            return Err(e);
        }
    };
    let shard = opts.shard.unwrap_or(Shard { index: 0, count: 1 });
    let runs = ShardRuns::new(shard, spec.run_count());
    let runs_path = opts.out.join("runs.csv");
    let done = if resuming {
        resume_rows(&runs_path, &header_line, &runs)?
    } else {
        write_file(&opts.out.join("sweep.json"), &sweep_json)?;
        if let Some(s) = opts.shard {
            write_file(&opts.out.join("shard.json"), &pretty(&s.json(false, runs.len)))?;
        }
        write_file(&runs_path, &format!("{header_line}\n"))?;
        0
    };
    let fresh_start = !resuming;
    match run_chunks(spec, opts, &columns, &runs, &runs_path, done) {
        Ok(outcome) => Ok(outcome),
        Err((e, rows_written)) => {
            // A sweep that failed before its first row leaves nothing behind it.
            if fresh_start && rows_written == 0 {
                for name in ["runs.csv", "sweep.json", "shard.json", LOCK_FILE] {
                    let _ = std::fs::remove_file(opts.out.join(name));
                }
                drop(lock);
                if created_dir {
                    let _ = std::fs::remove_dir(&opts.out);
                }
            }
            Err(e)
        }
    }
}

/// Runs the sweep's remaining runs from `done`; on failure, also says how many rows this call
/// wrote.
fn run_chunks(
    spec: &SweepSpec,
    opts: &RunOptions,
    columns: &[String],
    runs: &ShardRuns,
    runs_path: &Path,
    done: usize,
) -> Result<Outcome, (InputError, usize)> {
    let mut written = 0usize;
    let fail = |e: InputError, written: usize| (e, written);
    let mut file =
        OpenOptions::new().append(true).open(runs_path).map_err(|e| fail(io(runs_path, "open", e), written))?;
    let todo = done..runs.len.min(done.saturating_add(opts.max_runs.unwrap_or(usize::MAX)));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.max(1))
        .build()
        .map_err(|e| fail(err(format!("cannot start {} worker threads: {e}", opts.jobs)), written))?;
    let bar = crate::progress::runs_bar(runs.len, done, opts.quiet);
    // Chunks of 32 × jobs runs keep every worker busy (a slow run is balanced by the others of
    // its chunk) while holding only a chunk's rows in memory; the chunk is written in run
    // order, whatever order its runs finished in, and synced once. A killed sweep keeps every
    // row written (a cut-off last line is dropped by --resume); a machine crash loses at most
    // the chunk being written.
    let chunk_len = 32 * opts.jobs.max(1);
    for chunk_start in todo.clone().step_by(chunk_len) {
        let chunk = chunk_start..(chunk_start + chunk_len).min(todo.end);
        let rows: Vec<Result<String, InputError>> = pool.install(|| {
            use rayon::prelude::*;
            chunk.clone().into_par_iter().map(|k| run_row(spec, columns, runs.get(k), opts.max_events)).collect()
        });
        let mut text = String::new();
        let mut failed = None;
        let mut rows_here = 0;
        for row in rows {
            match row {
                Ok(row) => {
                    text.push_str(&row);
                    text.push('\n');
                    rows_here += 1;
                }
                // The rows before the failure are kept: --resume starts at the failed run.
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        file.write_all(text.as_bytes()).map_err(|e| fail(io(runs_path, "write", e), written))?;
        file.sync_data().map_err(|e| fail(io(runs_path, "sync", e), written))?;
        written += rows_here;
        if let Some(e) = failed {
            return Err(fail(e, written));
        }
        bar.inc((chunk.end - chunk.start) as u64);
    }
    bar.finish_and_clear();
    let outcome = Outcome { ran: todo.len(), done: todo.end, total: runs.len };
    if outcome.complete() {
        match opts.shard {
            Some(s) => write_file(&opts.out.join("shard.json"), &pretty(&s.json(true, runs.len)))
                .map_err(|e| fail(e, written))?,
            None => {
                finish(&opts.out).map_err(|e| fail(e, written))?;
            }
        }
    }
    Ok(outcome)
}

/// Writes a whole file via a temporary beside it, so a reader never sees half of it.
fn write_file(path: &Path, contents: &str) -> Result<(), InputError> {
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, contents).map_err(|e| io(&tmp, "write", e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, "write", e))
}

/// One grid point of `aggregate.csv`.
#[derive(Clone, Debug)]
pub struct PointSummary {
    pub point: usize,
    pub axis_values: Vec<String>,
    /// Some run of the point ran a configuration client-go refuses.
    pub unsafe_point: bool,
    pub n: usize,
    pub dual_runs: usize,
    pub dual_fraction: f64,
    pub dual_wilson: (f64, f64),
    pub metrics: BTreeMap<String, stats::Summary>,
}

fn num(x: f64) -> String {
    if x.is_nan() { String::new() } else { x.to_string() }
}

/// Where the safety envelope puts the boundary along `x` for one grid point's settings, with
/// its label, or `None` when `x` is not a drift, renew deadline or lease duration.
fn envelope_boundary(loaded: &scenario_file::LoadedScenario, x: &str) -> Option<Value> {
    let d = &loaded.scenario.defaults;
    let base = sim_core::elector::config::ElectorConfig::new("x", sim_core::elector::Algorithm::ClientGo);
    let secs = |v: Option<u64>, fallback: u64| v.unwrap_or(fallback) as f64 / 1e9;
    let ld = secs(d.lease_duration.map(|v| v.0), base.lease_duration);
    let rd = secs(d.renew_deadline.map(|v| v.0), base.renew_deadline);
    let rp = secs(d.retry_period.map(|v| v.0), base.retry_period);
    if x.ends_with(".drift_ppm") {
        let ratio = crate::envelope::max_rate_ratio(ld, rd, rp, 0.0);
        Some(json!({"x": (ratio - 1.0) * 1e6, "label": format!("envelope: rate {ratio:.3}× = LD/(RD+RP)")}))
    } else if x.ends_with("renew_deadline") {
        Some(json!({"x": ld - rp, "label": format!("envelope: RD = LD − RP = {}s", ld - rp)}))
    } else if x.ends_with("lease_duration") {
        Some(json!({"x": rd + rp, "label": format!("envelope: LD = RD + RP = {}s", rd + rp)}))
    } else {
        None
    }
}

/// Reads `dir/runs.csv` point by point (rows are in run order, so a point's rows are together)
/// and writes `aggregate.csv` and the plots. Needs only `runs.csv` and `sweep.json`.
pub fn finish(dir: &Path) -> Result<Vec<PointSummary>, InputError> {
    let sweep_path = dir.join("sweep.json");
    let sweep: Value =
        serde_json::from_str(&std::fs::read_to_string(&sweep_path).map_err(|e| io(&sweep_path, "read", e))?)
            .map_err(|e| err(format!("{}: {e}", sweep_path.display())))?;
    let axes: Vec<String> =
        sweep["grid"].as_array().into_iter().flatten().filter_map(|a| a["path"].as_str().map(String::from)).collect();
    let metrics: Vec<String> =
        sweep["metrics"].as_array().into_iter().flatten().filter_map(|m| m.as_str().map(String::from)).collect();
    let runs_path = dir.join("runs.csv");
    let reader = BufReader::new(File::open(&runs_path).map_err(|e| io(&runs_path, "open", e))?);
    let mut lines = reader.lines();
    let head = csv::parse_line(&lines.next().transpose().map_err(|e| io(&runs_path, "read", e))?.unwrap_or_default());
    let col = |name: &str| {
        head.iter().position(|h| h == name).ok_or_else(|| err(format!("{}: no column {name:?}", runs_path.display())))
    };
    let metric_cols: Vec<usize> = metrics.iter().map(|m| col(m)).collect::<Result<_, _>>()?;
    let dual_col = col("dual_leader_seconds")?;
    let point_col = col("point")?;
    let unsafe_col = col("unsafe")?;
    let mut point_unsafe = false;

    let mut summaries = Vec::new();
    let mut current: Option<(usize, Vec<String>)> = None;
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); metrics.len()];
    let mut dual_runs = 0usize;
    let close = |point: usize, axis_values: Vec<String>, values: &mut Vec<Vec<f64>>, dual_runs: &mut usize| {
        let n = values.first().map(Vec::len).unwrap_or(0);
        let summary = PointSummary {
            point,
            axis_values,
            unsafe_point: false,
            n,
            dual_runs: *dual_runs,
            dual_fraction: *dual_runs as f64 / n.max(1) as f64,
            dual_wilson: stats::wilson(*dual_runs, n),
            metrics: metrics.iter().zip(values.iter()).map(|(m, v)| (m.clone(), stats::summarise(v))).collect(),
        };
        values.iter_mut().for_each(Vec::clear);
        *dual_runs = 0;
        summary
    };
    for line in lines {
        let line = line.map_err(|e| io(&runs_path, "read", e))?;
        let fields = csv::parse_line(&line);
        let point: usize = fields
            .get(point_col)
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| err(format!("{}: a row without a point number: {line}", runs_path.display())))?;
        if current.as_ref().is_some_and(|(p, _)| *p != point) {
            let (p, axis_values) = current.take().expect("checked");
            let mut summary = close(p, axis_values, &mut values, &mut dual_runs);
            summary.unsafe_point = std::mem::take(&mut point_unsafe);
            summaries.push(summary);
        }
        point_unsafe |= fields.get(unsafe_col).is_some_and(|v| v == "1");
        if current.is_none() {
            current = Some((point, fields[2..2 + axes.len()].to_vec()));
        }
        let value = |c: usize| fields.get(c).and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::NAN);
        for (i, c) in metric_cols.iter().enumerate() {
            values[i].push(value(*c));
        }
        if value(dual_col) > 0.0 {
            dual_runs += 1;
        }
    }
    if let Some((p, axis_values)) = current.take() {
        let mut summary = close(p, axis_values, &mut values, &mut dual_runs);
        summary.unsafe_point = point_unsafe;
        summaries.push(summary);
    }

    let mut out = String::new();
    let mut head_fields: Vec<String> = vec!["point".into()];
    head_fields.extend(axes.iter().cloned());
    head_fields.push("unsafe".into());
    head_fields.extend(["n", "dual_runs", "dual_fraction", "dual_wilson_low", "dual_wilson_high"].map(String::from));
    for m in &metrics {
        for s in ["mean", "std", "ci95_low", "ci95_high", "p50", "p95", "p99", "max"] {
            head_fields.push(format!("{m}.{s}"));
        }
    }
    out.push_str(&csv::record(&head_fields));
    out.push('\n');
    for s in &summaries {
        let mut fields = vec![s.point.to_string()];
        fields.extend(s.axis_values.iter().cloned());
        fields.push(if s.unsafe_point { "1" } else { "0" }.to_string());
        fields.extend([
            s.n.to_string(),
            s.dual_runs.to_string(),
            num(s.dual_fraction),
            num(s.dual_wilson.0),
            num(s.dual_wilson.1),
        ]);
        for m in &metrics {
            let x = &s.metrics[m];
            fields.extend([x.mean, x.std, x.ci95.0, x.ci95.1, x.p50, x.p95, x.p99, x.max].map(num));
        }
        out.push_str(&csv::record(&fields));
        out.push('\n');
    }
    write_file(&dir.join("aggregate.csv"), &out)?;
    plots::write_all(dir, &sweep, &axes, &summaries).map_err(err)?;
    Ok(summaries)
}

/// `leasesim merge`: joins complete shards of one sweep into what one machine would have
/// written. Refuses shards of different sweeps or versions, and missing, duplicated or
/// unfinished shards.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Vec<PointSummary>, InputError> {
    if dirs.is_empty() {
        return Err(err("merge: name the shard directories"));
    }
    let mut sweep_text: Option<(String, &Path)> = None;
    let mut by_index: BTreeMap<usize, &Path> = BTreeMap::new();
    let mut count = None;
    for dir in dirs {
        let read = |name: &str| {
            let p = dir.join(name);
            std::fs::read_to_string(&p).map_err(|e| io(&p, "read", e))
        };
        let text = read("sweep.json")?;
        let this: Value = serde_json::from_str(&text).map_err(|e| err(format!("{}/sweep.json: {e}", dir.display())))?;
        if let Some((first, first_dir)) = &sweep_text {
            let first: Value = serde_json::from_str(first).unwrap_or(Value::Null);
            if first["version"] != this["version"] {
                return Err(err(format!(
                    "{} was written by leasesim {} but {} by {}: rerun the shards with one version",
                    first_dir.display(),
                    first["version"],
                    dir.display(),
                    this["version"]
                )));
            }
            if first["sweep_id"] != this["sweep_id"] {
                return Err(err(format!(
                    "{} and {} hold different sweeps (sweep_id {} vs {})",
                    first_dir.display(),
                    dir.display(),
                    first["sweep_id"],
                    this["sweep_id"]
                )));
            }
        } else {
            sweep_text = Some((text, dir));
        }
        let shard: Value = serde_json::from_str(&read("shard.json").map_err(|_| {
            err(format!("{}: no shard.json; it is not a shard (an unsharded sweep needs no merge)", dir.display()))
        })?)
        .map_err(|e| err(format!("{}/shard.json: {e}", dir.display())))?;
        let (index, of) = (shard["shard"].as_u64().unwrap_or(0) as usize, shard["of"].as_u64().unwrap_or(0) as usize);
        if *count.get_or_insert(of) != of {
            return Err(err(format!(
                "{}: shard {index}/{of}, but others are of {}",
                dir.display(),
                count.unwrap_or(0)
            )));
        }
        if shard["complete"] != json!(true) {
            return Err(err(format!(
                "{}: shard {index}/{of} is unfinished; run it again with --resume",
                dir.display()
            )));
        }
        if let Some(other) = by_index.insert(index, dir) {
            return Err(err(format!("shard {index}/{of} is given twice: {} and {}", other.display(), dir.display())));
        }
    }
    let count = count.unwrap_or(0);
    let missing: Vec<String> = (0..count).filter(|i| !by_index.contains_key(i)).map(|i| i.to_string()).collect();
    if !missing.is_empty() {
        return Err(err(format!("missing shard(s) {} of {count}", missing.join(", "))));
    }
    let (sweep_text, _) = sweep_text.expect("at least one dir");
    let sweep: Value = serde_json::from_str(&sweep_text).unwrap_or(Value::Null);
    let total = sweep["runs"].as_u64().unwrap_or(0) as usize;
    if out.exists() && std::fs::read_dir(out).map_err(|e| io(out, "list", e))?.next().is_some() {
        return Err(err(format!("--out {}: exists and is not empty; choose a new directory", out.display())));
    }

    let mut staged = crate::output::StagedDir::new(out, crate::output::Command::Merge).map_err(err)?;
    staged.write("sweep.json", &sweep_text).map_err(err)?;
    let mut readers = Vec::new();
    let mut header_line: Option<String> = None;
    for (index, dir) in &by_index {
        let p = dir.join("runs.csv");
        let mut lines = BufReader::new(File::open(&p).map_err(|e| io(&p, "open", e))?).lines();
        let head = lines.next().transpose().map_err(|e| io(&p, "read", e))?.unwrap_or_default();
        match &header_line {
            Some(h) if *h != head => {
                return Err(err(format!("{}: its columns differ from shard 0's", p.display())));
            }
            _ => header_line = Some(head),
        }
        readers.push((*index, p, lines));
    }
    let merged_path = staged.path().join("runs.csv");
    let mut merged = std::io::BufWriter::new(File::create(&merged_path).map_err(|e| io(&merged_path, "create", e))?);
    let mut write = |s: &str| merged.write_all(s.as_bytes()).map_err(|e| io(&merged_path, "write", e));
    write(&format!("{}\n", header_line.unwrap_or_default()))?;
    // Run r lives in shard r % count: taking rows round-robin restores run order while holding
    // one row per shard.
    for run in 0..total {
        let (index, path, lines) = &mut readers[run % count];
        let line = lines
            .next()
            .transpose()
            .map_err(|e| io(path, "read", e))?
            .ok_or_else(|| err(format!("{}: shard {index} ends before run {run}", path.display())))?;
        if csv::parse_line(&line).first().and_then(|f| f.parse::<usize>().ok()) != Some(run) {
            return Err(err(format!("{}: expected run {run} next in shard {index}, found: {line}", path.display())));
        }
        write(&format!("{line}\n"))?;
    }
    for (index, path, lines) in &mut readers {
        if lines.next().is_some() {
            return Err(err(format!("{}: shard {index} has rows beyond the sweep's {total} runs", path.display())));
        }
    }
    merged.flush().map_err(|e| io(&merged_path, "write", e))?;
    drop(merged);
    let summaries = finish(staged.path())?;
    staged.commit().map_err(err)?;
    Ok(summaries)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_second_sweep_cannot_write_a_directory_that_one_is_writing() {
        let dir = tempfile::tempdir().unwrap();
        let first = super::lock_out_dir(dir.path()).unwrap();
        let second = super::lock_out_dir(dir.path()).unwrap_err();
        assert!(second.0.contains("another leasesim sweep is writing"), "{}", second.0);
        drop(first);
        assert!(super::lock_out_dir(dir.path()).is_ok(), "the lock goes with the process that held it");
    }

    use super::*;

    #[test]
    fn seeds_are_exclusive_with_dots_and_inclusive_with_dots_equals() {
        assert_eq!(parse_seeds("1..20"), Ok((1, 20)));
        assert_eq!(parse_seeds("1..=20"), Ok((1, 21)));
        assert_eq!(parse_seeds("7"), Ok((7, 8)));
        assert!(parse_seeds("5..2").unwrap_err().contains("below the start"));
        assert!(parse_seeds("3..3").unwrap_err().contains("empty"));
    }

    #[test]
    fn ranges_expand_inclusively() {
        let t: toml::Table = toml::from_str("from = 0\nto = 500000\nstep = 250000").unwrap();
        let texts: Vec<String> = expand_range("x", &t).unwrap().into_iter().map(|v| v.text).collect();
        assert_eq!(texts, ["0", "250000", "500000"]);
        let t: toml::Table = toml::from_str("from = 0.1\nto = 0.3\nstep = 0.1").unwrap();
        let texts: Vec<String> = expand_range("x", &t).unwrap().into_iter().map(|v| v.text).collect();
        assert_eq!(texts, ["0.1", "0.2", "0.3"]);
        let t: toml::Table = toml::from_str("from = 5\nto = 1\nstep = 1").unwrap();
        assert!(expand_range("x", &t).unwrap_err().contains("empty"));
    }

    #[test]
    fn shards_come_from_kubernetes_or_slurm() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(Shard::from_env(env(&[("JOB_COMPLETION_INDEX", "2")]), Some(3)), Ok(Shard { index: 2, count: 3 }));
        assert_eq!(
            Shard::from_env(
                env(&[("SLURM_ARRAY_TASK_ID", "5"), ("SLURM_ARRAY_TASK_MIN", "4"), ("SLURM_ARRAY_TASK_COUNT", "3")]),
                None
            ),
            Ok(Shard { index: 1, count: 3 })
        );
        assert!(Shard::parse("3/3").unwrap_err().contains("below the count"));
    }

    #[test]
    fn normalise_folds_parent_dirs() {
        assert_eq!(
            normalise(Path::new("scenarios/sweeps/../split-brain.toml")),
            Path::new("scenarios/split-brain.toml")
        );
        assert_eq!(normalise(Path::new("../x.toml")), Path::new("../x.toml"));
    }
}
