//! What a sweep is: the sweep file or command line read into a `SweepSpec` — the scenario,
//! its grid axes (values, ranges, zipped axes), the seeds, the metrics — and the run numbering
//! that maps run `r` to a grid point and a seed.

use super::files::err;
use super::plots;
use crate::scenario_file::{CliError, located, parse_value, span_of_path};
use crate::{run, scenario_file};
use serde_json::{Value, json};
use sim_core::scenario::did_you_mean;
use std::cell::RefCell;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

/// Bumped whenever the meaning of a sweep's files changes; part of the sweep id. (3: the series
/// names in `plot.boundaries` name keys by their shortest unique path end.)
pub const SWEEP_FORMAT: u32 = 3;

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
pub(super) const VARIABLE_METRIC_PREFIX: &str = "api_requests_by_verb_status.";

/// A grid point as each of its runs needs it: its scenario loaded, the replay command of its
/// runs on either side of the seed ([`crate::run::replay_around_seed`]), its world spec.
pub(super) struct Point {
    pub(super) loaded: scenario_file::LoadedScenario,
    replay: (String, String),
    /// Its world spec at the first seed run, for the next seeds (`run::check`).
    pub(super) spec: crate::run::SpecTemplate,
}

impl Point {
    /// `leasesim run <file> --seed <seed> --set …`, as [`crate::run::replay_command`] writes it.
    pub(super) fn replay_command(&self, seed: u64) -> String {
        crate::run::replay_at_seed((&self.replay.0, &self.replay.1), seed)
    }
}

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
pub(super) fn expand_range(path: &str, table: &toml::Table) -> Result<Vec<AxisValue>, String> {
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
        // In 128 bits: `b - a` and the last step may pass i64's bounds (a range up to i64::MAX
        // used to wrap around and never end).
        let count = (i128::from(b) - i128::from(a)) / i128::from(s) + 1;
        if count > MAX_AXIS_VALUES as i128 {
            return Err(format!(
                "grid axis {path:?}: from {a} to {b} by {s} is {count} values, more than a grid axis may have \
                 ({MAX_AXIS_VALUES}); use a larger step"
            ));
        }
        return Ok((0..count)
            .map(|i| i128::from(a) + i * i128::from(s))
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
pub(super) fn normalise(path: &Path) -> PathBuf {
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

/// A sweep file's `set` entry with a relative `from_cluster` path taken from the file's folder.
fn set_beside_file(entry: &str, file: &Path) -> String {
    let Some((key, value)) = entry.split_once('=') else { return entry.to_string() };
    if key.trim() != "from_cluster" {
        return entry.to_string();
    }
    let raw = value.trim();
    let path = match parse_value(raw) {
        toml::Value::String(s) => s,
        _ => raw.to_string(),
    };
    let placed = crate::scenario_file::beside_file(&file.to_string_lossy(), &path);
    format!("{}={}", key.trim(), toml::Value::String(placed))
}

impl SweepSpec {
    /// Combines a sweep file (if any) with the command line.
    pub fn from_args(args: &SweepArgs) -> Result<SweepSpec, CliError> {
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
                let doc: SweepFile = toml::from_str(&source).map_err(|e| {
                    let hint = crate::commands::FileKind::hint(&source, crate::commands::FileKind::Sweep, &name);
                    err(located(&name, &source, e.span(), e.message().trim_end()) + &hint)
                })?;
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
                // A path the sweep file names is relative to it, as its `scenario` is.
                set = doc.set.iter().map(|o| set_beside_file(o, file)).collect();
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
        let mut given: Vec<String> = Vec::new();
        for g in &args.grid {
            let axis = parse_grid_arg(g).map_err(err)?;
            if given.contains(&axis.path) {
                return Err(err(format!(
                    "--grid {:?} is given twice: give its values once, comma-separated",
                    axis.path
                )));
            }
            given.push(axis.path.clone());
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
        // A key both set and swept: one would silently overwrite the other in every run.
        for o in &set {
            let key = o.split_once('=').map_or(o.as_str(), |(k, _)| k).trim();
            if axes.iter().any(|a| a.path == key) {
                return Err(err(format!(
                    "{key:?} is both set (`set`/--set {o:?}) and a grid axis: keep one (the axis sweeps it; `set` fixes it)"
                )));
            }
        }
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
                crate::format::group_digits(MAX_RUNS)
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

    /// On `--resume`: if the sweep in `out` names the same scenario spelled another way
    /// (`./scenarios/x.toml`, an absolute path, or a relative path from the directory the sweep
    /// began in), keep its spelling, so the sweep is recognised and its replay commands stay as
    /// they began. "The same" is the same file, or a file of the same name and the same bytes
    /// (the hash `sweep.json` keeps): a relative spelling cannot be resolved from another
    /// working directory, and the scenario's text is all a run reads of it.
    pub fn adopt_scenario_spelling(&mut self, out: &Path) {
        let Ok(text) = std::fs::read_to_string(out.join("sweep.json")) else { return };
        let Ok(doc) = serde_json::from_str::<Value>(&text) else { return };
        let Some(stored) = doc["scenario"].as_str().map(String::from) else { return };
        let same_file = match (std::fs::canonicalize(&stored), std::fs::canonicalize(&self.scenario_path)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        let same_text = doc["scenario_fnv1a64"].as_str() == Some(fnv1a64(self.scenario_source.as_bytes()).as_str())
            && Path::new(&stored).file_name() == Path::new(&self.scenario_path).file_name();
        if same_file || same_text {
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

    pub(super) fn load_point(&self, point: usize) -> Result<scenario_file::LoadedScenario, CliError> {
        scenario_file::load(&self.scenario_path, &self.scenario_source, &self.overrides(point))
    }

    /// [`Self::load_point`], parsed once for a thread's run of consecutive runs of one grid
    /// point (runs are numbered point by point, and each job takes a contiguous range): the
    /// parse cost as much as a tenth of a short run. The cache is keyed by everything the load
    /// reads, so a different sweep in the same process never sees another's scenario.
    /// Its runs' replay commands are built around the seed once, too.
    pub(super) fn load_point_cached(&self, point: usize) -> Result<Rc<Point>, CliError> {
        type Key = (String, String, Vec<String>);
        thread_local! {
            static LAST: RefCell<Option<(Key, Rc<Point>)>> = const { RefCell::new(None) };
        }
        let overrides = self.overrides(point);
        let same = |k: &Key| k.0 == self.scenario_path && k.1 == self.scenario_source && k.2 == overrides;
        if let Some(hit) = LAST.with_borrow(|last| last.as_ref().filter(|(k, _)| same(k)).map(|(_, p)| Rc::clone(p))) {
            return Ok(hit);
        }
        let loaded = scenario_file::load(&self.scenario_path, &self.scenario_source, &overrides)?;
        let replay = crate::run::replay_around_seed(&self.scenario_path, &loaded.overrides);
        let point = Rc::new(Point { loaded, replay, spec: Default::default() });
        LAST.set(Some(((self.scenario_path.clone(), self.scenario_source.clone(), overrides), Rc::clone(&point))));
        Ok(point)
    }

    /// Checks every axis path and every grid point before anything runs or is written.
    pub fn validate(&self) -> Result<(), CliError> {
        for axis in &self.axes {
            let probe = [format!("{}={}", axis.path, axis.values[0].text)];
            let mut overrides = self.set.clone();
            overrides.extend(probe);
            scenario_file::load(&self.scenario_path, &self.scenario_source, &overrides).map_err(|e| {
                let message = e.message.split_once(": ").filter(|(head, _)| head.starts_with("--set ")).map(|x| x.1);
                err(format!("grid axis {:?}: {}", axis.path, message.unwrap_or(&e.message)))
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
    /// the whole sweep and one core's wall seconds for them. Every point of a grid of up to
    /// 10,000 points is checked; of a larger one, the first and last thousand and a thousand
    /// spread between (the rest are checked as they run: a failure then stops the sweep, naming
    /// the point, with the rows before it kept).
    pub fn check_points(&self, max_events: u64) -> Result<(u64, f64), CliError> {
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
        let mut seconds = 0.0f64;
        for &point in &sample {
            let loaded = self.load_point(point).map_err(|e| err(format!("{}: {e}", self.describe_point(point))))?;
            let (prepared, _) = run::prepare(&loaded, Some(self.seeds.0), false, max_events)
                .map_err(|e| err(format!("{}: {e}", self.describe_point(point))))?;
            events += prepared.estimate.events as f64;
            seconds += prepared.estimate.seconds;
        }
        let per_run_events = events / sample.len().max(1) as f64;
        let per_run_seconds = seconds / sample.len().max(1) as f64;
        Ok((
            (per_run_events * self.run_count() as f64).min(u64::MAX as f64) as u64,
            per_run_seconds * self.run_count() as f64,
        ))
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
            let zipped: Vec<bool> = self.axes.iter().map(|a| a.zipped).collect();
            let series = plots::series_label(&names, &zipped, &values, &self.x_group(x_index));
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

#[cfg(test)]
mod tests {
    use super::expand_range;

    fn range(from: i64, to: i64, step: i64) -> Result<Vec<String>, String> {
        let table: toml::Table = toml::from_str(&format!("from = {from}\nto = {to}\nstep = {step}")).unwrap();
        expand_range("nodes.0.clock.drift_ppm", &table).map(|v| v.into_iter().map(|a| a.text).collect())
    }

    /// Ranges at i64's bounds end (a fuzzing find: `to = i64::MAX` wrapped around and filled
    /// memory; `b - a` overflowed past the axis cap).
    #[test]
    fn integer_ranges_at_the_bounds_of_i64_end_and_are_capped() {
        assert_eq!(range(i64::MAX, i64::MAX, 1).unwrap(), [i64::MAX.to_string()]);
        assert_eq!(range(i64::MAX - 2, i64::MAX, 2).unwrap(), [(i64::MAX - 2).to_string(), i64::MAX.to_string()]);
        assert_eq!(range(i64::MIN, i64::MIN + 1, 1).unwrap().len(), 2);
        let e = range(-5_000_000_000_000_000_000, 5_000_000_000_000_000_000, 1).unwrap_err();
        assert!(e.contains("more than a grid axis may have"), "{e}");
        assert_eq!(range(0, 10, 5).unwrap(), ["0", "5", "10"]);
    }
}
