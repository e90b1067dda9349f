//! `leasesim run`: one scenario, one seed → trace, summary, Perfetto timeline (and plots).

use crate::expect::{self, Expectation};
use crate::format::group_digits;
use crate::scenario_file::{CliError, LoadedScenario, located, scenario_error, span_of_path};
use serde_json::json;
use sim_core::scenario::metric_values;
use sim_core::time::format_duration;
use sim_core::world::{RunResult, SetupError, World};

/// Everything one run produced, in memory, ready to be written.
pub struct RunOutput {
    pub result: RunResult,
    pub expectations: Vec<ExpectationResult>,
    pub replay: String,
    pub seed: u64,
    pub unsafe_mode: bool,
    pub scenario_name: String,
    pub description: String,
    /// The scenario as run (defaults and overrides applied): `summary.json`'s `config`
    /// (`None` writes `null`). Kept typed and serialised where it is written: as a JSON tree it
    /// was 80 MB of a 30,000-elector run.
    pub effective: Option<sim_core::scenario::Scenario>,
    /// Whether the event trace was kept.
    pub traced: bool,
    /// Key parameters for plot titles (`LD 15s · RD 10s · RP 2s · skew +2m0s`).
    pub subtitle: String,
    /// Each Lease elected on, with its settings in words, for plot labels.
    pub lease_groups: Vec<crate::report::LeaseGroup>,
    /// The history checks of a traced run with a reconciler, computed once per run (the summary,
    /// the table, `history.jsonl` and hunts all read them).
    pub history: Option<sim_core::history::HistoryReport>,
}

#[derive(Clone, Debug)]
pub struct ExpectationResult {
    pub text: String,
    pub passed: bool,
    pub seen: String,
}

impl RunOutput {
    pub fn all_passed(&self) -> bool {
        self.expectations.iter().all(|e| e.passed)
    }
}

/// The one-line command that replays a run exactly.
pub fn replay_command(path: &str, seed: u64, overrides: &[String]) -> String {
    let (head, tail) = replay_around_seed(path, overrides);
    replay_at_seed((&head, &tail), seed)
}

/// The replay command from [`replay_around_seed`]'s two parts and the seed between them.
pub fn replay_at_seed((head, tail): (&str, &str), seed: u64) -> String {
    let mut cmd = String::with_capacity(head.len() + 20 + tail.len());
    cmd.push_str(head);
    cmd.push_str(sim_core::digits::decimal(seed, &mut [0; 20]));
    cmd.push_str(tail);
    cmd
}

/// [`replay_command`] before its seed and after it (a sweep builds the two once a grid point).
pub fn replay_around_seed(path: &str, overrides: &[String]) -> (String, String) {
    let head = format!("leasesim run {} --seed ", shell_quote(path));
    let mut tail = String::new();
    for o in overrides {
        tail.push_str(" --set ");
        tail.push_str(&shell_quote(o));
    }
    (head, tail)
}

/// `s` as one shell word.
pub fn shell_quote(s: &str) -> String {
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Parses the expectations up front so a typo is an input error, not a failed run.
pub fn parse_expectations(loaded: &LoadedScenario) -> Result<Vec<(String, Expectation)>, CliError> {
    if loaded.scenario.expect.is_empty() {
        return Ok(Vec::new()); // (the names below cost a serialisation of a whole Metrics)
    }
    let names = expect::metric_names(&loaded.scenario.identities(), &lease_keys(&loaded.scenario));
    let mut out = Vec::new();
    for (i, text) in loaded.scenario.expect.iter().enumerate() {
        let at = |m: String| {
            let span = span_of_path(&loaded.source, &["expect".into(), i.to_string()]);
            CliError::input(located(&loaded.path, &loaded.source, span, &format!("expect[{i}]: {m}")))
        };
        let e = expect::parse(text, &names).map_err(at)?;
        // An expectation about an action the scenario does not script could never pass: an
        // input error now, not a FAIL (exit 1) at the end of the run.
        if let Some(name) = e.action()
            && !loaded.scenario.actions.iter().any(|a| a.name == name)
        {
            let names: Vec<&str> = loaded.scenario.actions.iter().map(|a| a.name.as_str()).collect();
            let hint = sim_core::scenario::did_you_mean(name, names.iter().copied());
            return Err(at(format!(
                "no [[actions]] entry is named {name:?}{hint}{}",
                if names.is_empty() { " (the scenario scripts no actions)".to_string() } else { String::new() }
            )));
        }
        out.push((text.clone(), e));
    }
    Ok(out)
}

/// The `namespace/name` of every Lease the scenario's nodes elect on.
pub fn lease_keys(s: &sim_core::scenario::Scenario) -> Vec<String> {
    let mut keys: Vec<String> = s
        .nodes
        .iter()
        .map(|n| {
            let (namespace, name) = s.lease_of(n);
            format!("{namespace}/{name}")
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// A run's default event budget: about five minutes of one core on a large fleet, far above
/// any shipped scenario; `--max-events` raises it.
pub const DEFAULT_MAX_EVENTS: u64 = 1_000_000_000;

/// How much a run may cost, and whom to tell how it goes.
pub struct Budget<'a> {
    pub max_events: u64,
    /// Called with (true time, duration, events so far) as the run goes.
    pub progress: Option<&'a mut dyn FnMut(u64, u64, u64)>,
}

impl Budget<'_> {
    pub fn default_budget() -> Budget<'static> {
        Budget { max_events: DEFAULT_MAX_EVENTS, progress: None }
    }
}

/// Everything a run needs, checked: what `validate` does in full and `run` does first, so that
/// whatever `run` would refuse, `validate` refuses.
pub struct Prepared {
    pub scenario: sim_core::scenario::Scenario,
    pub spec: sim_core::model::WorldSpec,
    pub expectations: Vec<(String, Expectation)>,
    pub estimate: sim_core::model::WorkEstimate,
}

/// Checks and builds everything short of running: the `from_cluster` dump, the world spec, the
/// expectations, the world itself, and the work estimate against `max_events`.
pub fn prepare(
    loaded: &LoadedScenario,
    seed: Option<u64>,
    trace: bool,
    max_events: u64,
) -> Result<(Prepared, World), CliError> {
    let prepared = check(loaded, seed, trace, max_events, None)?;
    let Prepared { scenario, spec, .. } = &prepared;
    let world = World::new(spec.clone()).map_err(|m| setup_error(loaded, scenario, spec, &m))?;
    Ok((prepared, world))
}

/// A scenario's world spec at one seed, kept for its next seeds (see [`check`]).
pub type SpecTemplate = std::cell::RefCell<Option<sim_core::model::WorldSpec>>;

/// Everything `prepare` checks before it builds the world, in its order.
///
/// `template`, when given, holds the scenario's spec at an earlier seed (or is filled with this
/// one's): the spec is then built from it, drawing again only what the seed draws
/// (`Scenario::to_world_spec_from`), the same spec at a fraction of the cost.
fn check(
    loaded: &LoadedScenario,
    seed: Option<u64>,
    trace: bool,
    max_events: u64,
    template: Option<&SpecTemplate>,
) -> Result<Prepared, CliError> {
    let mut scenario = loaded.scenario.clone();
    if let Some(s) = seed {
        scenario.seed = s;
    }
    if let Some(dump) = scenario.from_cluster.clone() {
        start_from_cluster(&mut scenario, &dump).map_err(|m| {
            let span = crate::scenario_file::span_of_path(&loaded.source, &["from_cluster".to_string()]);
            match span {
                Some(_) if !loaded.overrides.iter().any(|o| o.trim_start().starts_with("from_cluster")) => {
                    CliError::input(crate::scenario_file::located(&loaded.path, &loaded.source, span, &m))
                }
                _ => {
                    CliError::input(format!("{}: {m} (given with --from-cluster, --set or a sweep's set)", loaded.path))
                }
            }
        })?;
    }
    // The nodes first: expectations name metrics of nodes that must exist.
    // A cluster dump is read again for each run: its spec is built afresh too.
    let template = template.filter(|_| scenario.from_cluster.is_none());
    let from_template =
        template.and_then(|t| t.borrow().as_ref().filter(|t| t.trace == trace).map(|t| scenario.to_world_spec_from(t)));
    let built = from_template.unwrap_or_else(|| {
        let built = scenario.to_world_spec(trace);
        if let (Some(t), Ok(spec)) = (template, &built) {
            *t.borrow_mut() = Some(spec.clone());
        }
        built
    });
    let mut spec = built.map_err(|e| scenario_error(loaded, &e))?;
    spec.skip_quiet = skip_quiet();
    let expectations = parse_expectations(loaded)?;
    let estimate = spec.estimate();
    if estimate.events > max_events {
        return Err(CliError::input(over_budget(loaded, &spec, &estimate, max_events)));
    }
    Ok(Prepared { scenario, spec, expectations, estimate })
}

fn over_budget(
    loaded: &LoadedScenario,
    spec: &sim_core::model::WorldSpec,
    estimate: &sim_core::model::WorkEstimate,
    max: u64,
) -> String {
    let events = estimate.events;
    format!(
        "{}: this run is expected to handle about {} events ({} simulated, {} node(s)), above the budget of {} \
         (--max-events): it would take {}. To run it anyway, pass \
         --max-events {}",
        loaded.path,
        group_digits(events),
        format_duration(spec.duration),
        spec.nodes.len(),
        group_digits(max),
        crate::format::rough_seconds(estimate.seconds),
        events.saturating_add(events / 4)
    )
}

/// Where a run that passed its budget check is stopped, and whether that is the traced bound.
/// The estimate passed the budget, so the budget (or ten times the estimate, if higher) only
/// catches an estimate that is far off: what `validate` accepts, `run` finishes or stops with a
/// message. A trace is kept in memory until the run ends (about 200 bytes an event), and a run
/// whose estimate is far off (a client looping every few microseconds) would fill memory long
/// before the budget: traced, it stops at ten times its estimate, at least the automatic limit
/// and at most four times it (~2.4 GB), but never below twice its estimate (a large run traced on
/// purpose, `--trace on`, was shown its trace size by `validate`).
fn hard_stop(max_events: u64, estimate: u64, trace: bool) -> (u64, bool) {
    let stop = max_events.max(estimate.saturating_mul(10));
    let traced =
        estimate.saturating_mul(10).clamp(AUTO_TRACE_LIMIT, 4 * AUTO_TRACE_LIMIT).max(estimate.saturating_mul(2));
    if trace && traced < stop { (traced, true) } else { (stop, false) }
}

/// Validates and runs. `seed` overrides the file's seed.
pub fn run(loaded: &LoadedScenario, seed: Option<u64>, trace: bool) -> Result<RunOutput, CliError> {
    run_budgeted(loaded, seed, trace, Budget::default_budget())
}

/// [`run`] within `budget`: a run expected to exceed it is refused before it starts, and one
/// that reaches it stops with an error (exit 2) naming the flag that raises it.
pub fn run_budgeted(
    loaded: &LoadedScenario,
    seed: Option<u64>,
    trace: bool,
    budget: Budget,
) -> Result<RunOutput, CliError> {
    let built = build(loaded, seed, trace, budget.max_events)?;
    finish(loaded, built, trace, budget)
}

/// [`run_budgeted`] for a caller that owns the scenario (`leasesim run`): its node tables
/// (~600 bytes a node, kept only for `summary.json`'s `config`) are let go once the world is
/// built and read again from the file's text when the run has ended, so that a fleet does not
/// hold them beside its world. `load` is a function of the path, the text and the overrides,
/// so the tables read again are the ones let go; the scenario comes back whole either way.
pub fn run_owned(
    mut loaded: LoadedScenario,
    seed: Option<u64>,
    trace: bool,
    budget: Budget,
) -> (LoadedScenario, Result<RunOutput, CliError>) {
    crate::release_freed_memory();
    let mut built = match build(&loaded, seed, trace, budget.max_events) {
        Ok(built) => built,
        Err(e) => return (loaded, Err(e)),
    };
    built.scenario.nodes = Default::default();
    loaded.scenario.nodes = Default::default();
    crate::release_freed_memory();
    let out = finish(&loaded, built, trace, budget);
    crate::release_freed_memory();
    match crate::scenario_file::load(&loaded.path, &loaded.source, &loaded.overrides) {
        Ok(again) => loaded.scenario.nodes = again.scenario.nodes,
        Err(e) => return (loaded, Err(e)),
    }
    let out = out.map(|mut out| {
        if let Some(effective) = out.effective.as_mut() {
            effective.nodes = std::sync::Arc::clone(&loaded.scenario.nodes);
        }
        out
    });
    (loaded, out)
}

/// A checked run with its world built, and what its outputs need of the spec.
struct Built {
    scenario: sim_core::scenario::Scenario,
    world: World,
    expectations: Vec<(String, Expectation)>,
    estimate: sim_core::model::WorkEstimate,
    subtitle: String,
    unsafe_mode: bool,
    lease_groups: Vec<crate::report::LeaseGroup>,
    duration: u64,
}

fn build(loaded: &LoadedScenario, seed: Option<u64>, trace: bool, max_events: u64) -> Result<Built, CliError> {
    let Prepared { scenario, spec, expectations, estimate } = check(loaded, seed, trace, max_events, None)?;
    let subtitle = crate::report::subtitle_from_spec(&spec);
    let spec_unsafe = spec.unsafe_mode;
    let lease_groups = crate::report::lease_groups_from_spec(&spec);
    let duration = spec.duration;
    // The spec is moved into the world, not copied (`prepare` copies it for the callers that
    // read it after): a fleet's peak of memory was while both lived, with the setup objects as
    // JSON (~1.2 KB an elector) held by the copy until the world was built.
    let world = World::new(spec).map_err(|m| {
        // Built again only to name the setup object that failed, as `prepare` does.
        match scenario.to_world_spec(trace) {
            Ok(spec) => setup_error(loaded, &scenario, &spec, &m),
            Err(e) => scenario_error(loaded, &e),
        }
    })?;
    Ok(Built { scenario, world, expectations, estimate, subtitle, unsafe_mode: spec_unsafe, lease_groups, duration })
}

/// Runs a built world within `budget` and gathers what its files need.
fn finish(loaded: &LoadedScenario, built: Built, trace: bool, budget: Budget) -> Result<RunOutput, CliError> {
    let Built { scenario, world, expectations, estimate, subtitle, unsafe_mode, lease_groups, duration } = built;
    let result = run_world(loaded, world, duration, estimate.events, trace, budget)?;
    // Every metric by path, for the expectations only (20 MB at 10,000 electors: not kept).
    let expectations = if expectations.is_empty() {
        Vec::new()
    } else {
        let values = metric_values(&result.metrics);
        expectations
            .into_iter()
            .map(|(text, e)| {
                let (passed, seen) = expect::check(&e, &values, &result.actions);
                ExpectationResult { text, passed, seen }
            })
            .collect()
    };
    let history = check_history(&result, trace);
    Ok(RunOutput {
        history,
        result,
        expectations,
        replay: replay_command(&loaded.path, scenario.seed, &loaded.overrides),
        seed: scenario.seed,
        unsafe_mode,
        scenario_name: scenario.name.clone(),
        description: scenario.description.clone(),
        effective: Some(scenario),
        subtitle,
        lease_groups,
        traced: trace,
    })
}

/// What a sweep keeps of a run: its result and whether it ran under `unsafe`.
pub struct RunMetrics {
    pub result: RunResult,
    pub unsafe_mode: bool,
}

/// [`run_budgeted`] for a sweep's row: the same checks, the same world and the same errors, but
/// none of what only `run`'s files read (the effective scenario as JSON, plot titles, the replay
/// command, the expectations' verdicts), and the world spec is moved into the world, not copied.
/// Per run of a 500-run sweep that was a tenth of the time outside the event loop.
/// `template` carries the scenario's spec from one seed to the next (see [`check`]).
pub fn run_metrics(
    loaded: &LoadedScenario,
    seed: Option<u64>,
    budget: Budget,
    template: &SpecTemplate,
) -> Result<RunMetrics, CliError> {
    let Prepared { scenario, spec, estimate, .. } = check(loaded, seed, false, budget.max_events, Some(template))?;
    let unsafe_mode = spec.unsafe_mode;
    let result = run_cached(loaded, &scenario, spec, estimate.events, false, budget)?;
    Ok(RunMetrics { result, unsafe_mode })
}

/// What a hunt judges of a run: its result and, when it was traced, the history checks.
pub struct RunJudged {
    pub result: RunResult,
    pub history: Option<sim_core::history::HistoryReport>,
}

/// [`run`] for a hunt's candidate: the same checks, world and errors, and the same history
/// report, but none of what only `run`'s files read (the metric values by path, the effective
/// scenario as JSON, plot titles, the replay command). A hunt's runs are short, so that was
/// more than half of each run's time.
pub fn run_judged(loaded: &LoadedScenario, seed: Option<u64>, trace: bool) -> Result<RunJudged, CliError> {
    let budget = Budget::default_budget();
    let Prepared { scenario, spec, estimate, .. } = check(loaded, seed, trace, budget.max_events, None)?;
    let result = run_cached(loaded, &scenario, spec, estimate.events, trace, budget)?;
    let history = check_history(&result, trace);
    Ok(RunJudged { result, history })
}

/// `--no-skip`: every run of this process handles each event through the queue.
static NO_SKIP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sets `--no-skip` for every run this process makes (see `WorldSpec::skip_quiet`).
pub fn set_no_skip(no_skip: bool) {
    NO_SKIP.store(no_skip, std::sync::atomic::Ordering::Relaxed);
}

fn skip_quiet() -> bool {
    !NO_SKIP.load(std::sync::atomic::Ordering::Relaxed)
}

/// Builds the world of a checked `spec` and runs it. Sweeps and hunts run many worlds set up
/// alike on each thread (a grid point's seeds, a hunt's schedules of one scenario), so the
/// server one leaves is the next one's start (`World::new_cached` checks that it is).
fn run_cached(
    loaded: &LoadedScenario,
    scenario: &sim_core::scenario::Scenario,
    spec: sim_core::model::WorldSpec,
    estimate: u64,
    trace: bool,
    budget: Budget,
) -> Result<RunResult, CliError> {
    thread_local! {
        static SETUP: std::cell::RefCell<Option<sim_core::world::SetupCache>> = const { std::cell::RefCell::new(None) };
    }
    let duration = spec.duration;
    let world = match SETUP.with(|cache| World::new_cached(spec, &mut cache.borrow_mut())) {
        Ok(world) => world,
        Err(m) => {
            // Built again only to name the setup object that failed, as `prepare` does.
            let spec = scenario.to_world_spec(trace).map_err(|e| scenario_error(loaded, &e))?;
            return Err(setup_error(loaded, scenario, &spec, &m));
        }
    };
    run_world(loaded, world, duration, estimate, trace, budget)
}

/// A world's setup failed: the setup object named with its place in the scenario file.
fn setup_error(
    loaded: &LoadedScenario,
    scenario: &sim_core::scenario::Scenario,
    spec: &sim_core::model::WorldSpec,
    error: &SetupError,
) -> CliError {
    match error {
        SetupError::Object { index, message } => {
            scenario_error(loaded, &scenario.setup_object_error(spec, *index, message))
        }
        SetupError::Spec(message) => CliError::input(format!("{}: {message}", loaded.path)),
    }
}

/// Runs a prepared world to its end within `budget`, or stops it with the message that says
/// why (stuck, a traced run far above its estimate, the event budget).
fn run_world(
    loaded: &LoadedScenario,
    world: World,
    duration: u64,
    estimate: u64,
    trace: bool,
    mut budget: Budget,
) -> Result<RunResult, CliError> {
    let (hard_stop, trace_bound) = hard_stop(budget.max_events, estimate, trace);
    let mut progress = |t: u64, events: u64| {
        if let Some(p) = budget.progress.as_mut() {
            p(t, duration, events);
        }
    };
    world.run_with(hard_stop, &mut progress).map_err(|stop| {
        if stop.stuck {
            return CliError::input(format!(
                "{}: the run is stuck at {} of {} simulated: {} events in a row happened at that same instant \
                 without time moving on, so it would never end. Something loops without waiting: a zero (or \
                 near-zero) request_timeout, restart_delay or jitter_factor that a client retries at once. Give \
                 it a positive value",
                loaded.path,
                format_duration(stop.at),
                format_duration(stop.duration),
                group_digits(sim_core::world::STUCK_EVENTS),
            ));
        }
        if trace_bound {
            return CliError::input(format!(
                "{}: the run reached {} events at {} of {} simulated, far above its estimate of {}; its trace \
                 is kept in memory, so a traced run stops here. Run it with --trace off to take it to the end \
                 (then --max-events bounds it)",
                loaded.path,
                group_digits(stop.events),
                format_duration(stop.at),
                format_duration(stop.duration),
                group_digits(estimate),
            ));
        }
        CliError::input(format!(
            "{}: the run reached its budget of {} events at {} of {} simulated (the estimate was lower); pass \
             --max-events {} or more to run it to the end",
            loaded.path,
            group_digits(stop.events),
            format_duration(stop.at),
            format_duration(stop.duration),
            stop.events
                .saturating_mul(stop.duration.max(1))
                .checked_div(stop.at.max(1))
                .unwrap_or(u64::MAX)
                .saturating_add(1)
        ))
    })
}

fn check_history(result: &RunResult, traced: bool) -> Option<sim_core::history::HistoryReport> {
    if !traced || result.history.is_empty() {
        return None;
    }
    let windows: Vec<(u64, u64)> = result.dual_windows.iter().map(|w| (w.from, w.until)).collect();
    Some(sim_core::history::check(&result.history, &windows))
}

/// Where two traces first differ, for `--check-determinism`.
pub fn first_divergence(a: &RunResult, b: &RunResult) -> Option<String> {
    let n = a.trace.len().min(b.trace.len());
    for i in 0..n {
        if a.trace[i] != b.trace[i] {
            return Some(format!("event #{i}: first run {:?}, second run {:?}", a.trace[i], b.trace[i]));
        }
    }
    if a.trace.len() != b.trace.len() {
        return Some(format!("the first run has {} events, the second {}", a.trace.len(), b.trace.len()));
    }
    if a.metrics != b.metrics {
        return Some("the traces agree but the metrics differ".into());
    }
    if a.events_processed != b.events_processed {
        return Some(format!("the first run handled {} events, the second {}", a.events_processed, b.events_processed));
    }
    None
}

/// Starts the scenario from a real cluster's Leases: each Lease of the dump is created before the
/// run (holder, duration, times and transitions as dumped), and true time 0 is placed at the
/// dump's latest renewTime, so the run shows what happens next to those Leases. A relative path
/// is taken from the scenario file's folder when the file names it, from the working directory
/// when `--from-cluster` or `--set` does (resolved when the file is loaded: `scenario_file::load`).
pub fn start_from_cluster(scenario: &mut sim_core::scenario::Scenario, dump: &str) -> Result<(), String> {
    let path = std::path::PathBuf::from(dump);
    let leases = crate::lease_tools::read_lease_files(&[&path]).map_err(|e| format!("from_cluster: {e}"))?;
    if leases.is_empty() {
        return Err(format!("from_cluster: {} holds no Lease", path.display()));
    }
    let latest = leases.iter().map(|l| l.renew_time).max().expect("non-empty");
    scenario.epoch = Some(latest.to_rfc3339());
    let default_ns = scenario.lease.namespace.clone().unwrap_or_else(|| "default".into());
    for l in &leases {
        let mut spec = serde_json::Map::new();
        if let Some(h) = &l.holder {
            spec.insert("holderIdentity".into(), json!(h));
        }
        spec.insert("leaseDurationSeconds".into(), json!(l.lease_duration_seconds));
        if let Some(a) = l.acquire_time {
            spec.insert("acquireTime".into(), json!(a.to_rfc3339()));
        }
        spec.insert("renewTime".into(), json!(l.renew_time.to_rfc3339()));
        spec.insert("leaseTransitions".into(), json!(l.lease_transitions));
        let namespace = if l.namespace.is_empty() { default_ns.clone() } else { l.namespace.clone() };
        scenario.objects.push(json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": l.name, "namespace": namespace},
            "spec": spec,
        }));
    }
    Ok(())
}

/// Above this many expected events `--trace auto` runs without a trace (a stored trace event
/// with its share of the written files costs about 200 bytes; 3 M events is about 600 MB).
pub const AUTO_TRACE_LIMIT: u64 = 3_000_000;

/// The events a scenario is expected to produce (clock rates, reconcilers and random faults
/// counted: `WorldSpec::estimate`), or `None` if it does not convert.
pub fn estimated_events(s: &sim_core::scenario::Scenario) -> Option<u64> {
    s.to_world_spec(false).ok().map(|spec| spec.estimate().events)
}

#[cfg(test)]
mod tests {
    use super::{AUTO_TRACE_LIMIT, DEFAULT_MAX_EVENTS, SpecTemplate, check, hard_stop};

    /// `check` with a template gives each seed the spec it builds without one: a template is
    /// kept from the first seed whose spec builds (a seed whose drawn drift makes the wander run
    /// backwards fails alike either way and keeps nothing), and one kept for an untraced run is
    /// not used for a traced one (nor the other way round).
    #[test]
    fn a_template_gives_each_seed_the_spec_built_afresh() {
        let text = "name = \"t\"\ndescription = \"d\"\nduration = \"10s\"\n\
                    [defaults.clock]\n\
                    wander = { amplitude = \"100ms\", period = \"1s\" }\n\
                    drift_ppm_dist = { uniform = [-500000, 500000] }\n\
                    [[nodes]]\nidentity = \"a\"\n[[nodes]]\nidentity = \"b\"\n[[nodes]]\nidentity = \"c\"\n";
        let loaded = crate::scenario_file::load("t.toml", text, &[]).expect("a scenario");
        let spec = |seed, trace, template: Option<&SpecTemplate>| {
            check(&loaded, Some(seed), trace, DEFAULT_MAX_EVENTS, template).map(|p| p.spec).map_err(|e| e.message)
        };
        let template = SpecTemplate::default();
        let (mut failed, mut built) = (0, 0);
        for seed in 1..=30 {
            let fresh = spec(seed, false, None);
            assert_eq!(spec(seed, false, Some(&template)), fresh, "seed {seed}");
            if fresh.is_err() {
                failed += 1;
                assert_eq!(template.borrow().is_some(), built > 0, "a failed seed keeps nothing");
            } else {
                built += 1;
                assert!(template.borrow().is_some(), "kept from the first seed that builds");
            }
            assert_eq!(spec(seed, true, Some(&template)), spec(seed, true, None), "traced, seed {seed}");
        }
        assert!(failed > 0 && built > 0, "{failed} failed, {built} built");
    }

    #[test]
    fn a_traced_run_stops_at_ten_times_its_estimate_within_the_trace_bounds() {
        // Untraced: the budget, or ten times the estimate if higher.
        assert_eq!(hard_stop(DEFAULT_MAX_EVENTS, 136, false), (DEFAULT_MAX_EVENTS, false));
        assert_eq!(hard_stop(1_000, 500, false), (5_000, false));
        // Traced, an estimate far below the budget: at least the automatic limit ...
        assert_eq!(hard_stop(DEFAULT_MAX_EVENTS, 136, true), (AUTO_TRACE_LIMIT, true));
        assert_eq!(hard_stop(DEFAULT_MAX_EVENTS, 500_000, true), (5_000_000, true));
        // ... at most four times it ...
        assert_eq!(hard_stop(DEFAULT_MAX_EVENTS, 2_900_000, true), (4 * AUTO_TRACE_LIMIT, true));
        // ... never below twice the estimate (a large run traced on purpose) ...
        assert_eq!(hard_stop(DEFAULT_MAX_EVENTS, 20_000_000, true), (40_000_000, true));
        // ... and never above the untraced stop: a small budget stays the budget's message.
        assert_eq!(hard_stop(1_000, 136, true), (1_360, false));
    }
}

#[cfg(test)]
mod judged_tests {
    use super::{run, run_judged};
    use sim_core::world::RunResult;

    fn fingerprint(r: &RunResult) -> String {
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {}",
            r.metrics, r.spans, r.node_leases, r.actions, r.history, r.dual_windows, r.trace, r.events_processed
        )
    }

    /// A hunt's lean run judges what `run` would have given it: the same result and history
    /// checks, traced or not, from a fresh setup and from the thread's setup cache (the second
    /// and third calls), and after another scenario's setup took the cache.
    #[test]
    fn a_judged_run_is_the_full_runs_result_and_history() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/");
        let load = |name: &str| {
            let path = format!("{root}{name}");
            let source = std::fs::read_to_string(&path).expect("a shipped scenario");
            crate::scenario_file::load(&path, &source, &[]).expect("it loads")
        };
        let (split, gc) = (load("split-brain.toml"), load("gc-pause.toml"));
        for (loaded, seed, trace) in
            [(&split, 1, true), (&split, 2, true), (&split, 3, false), (&gc, 1, true), (&split, 4, true)]
        {
            let full = run(loaded, Some(seed), trace).expect("it runs");
            let judged = run_judged(loaded, Some(seed), trace).expect("it runs");
            assert_eq!(fingerprint(&judged.result), fingerprint(&full.result), "{} seed {seed}", loaded.path);
            assert_eq!(judged.history, full.history, "{} seed {seed}", loaded.path);
            assert_eq!(judged.history.is_some(), trace, "the history checks are made of a traced run");
        }
    }
}

#[cfg(test)]
mod owned_tests {
    use super::{Budget, run_budgeted, run_owned};

    /// `leasesim run` lets the node tables go while its world runs and reads them again from
    /// the text: its summary is the borrowing run's, byte for byte, with overrides that change
    /// the nodes, and the scenario it hands back is the one it was given. A failed run hands
    /// the scenario back whole too.
    #[test]
    fn an_owned_run_writes_the_borrowing_runs_summary_and_gives_the_scenario_back() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/split-brain.toml");
        let source = std::fs::read_to_string(path).expect("a shipped scenario");
        let overrides = ["nodes.1.retry_period=\"3s\"".to_string(), "defaults.jitter_factor=0.5".to_string()];
        let loaded = crate::scenario_file::load(path, &source, &overrides).expect("it loads");
        let given = serde_json::to_string(&loaded.scenario).expect("json");
        let summary = |out: &super::RunOutput| {
            let mut bytes = Vec::new();
            crate::outputs::Summary::of(out).write(&mut bytes).expect("written");
            String::from_utf8(bytes).expect("utf-8")
        };
        let borrowed = run_budgeted(&loaded, Some(7), false, Budget::default_budget()).expect("it runs");
        let (back, owned) = run_owned(loaded, Some(7), false, Budget::default_budget());
        let owned = owned.expect("it runs");
        assert!(summary(&owned).contains("\"retry_period\": \"3s\""), "the override is in the config");
        assert_eq!(summary(&owned), summary(&borrowed));
        assert_eq!(serde_json::to_string(&back.scenario).expect("json"), given);
        let (back, failed) = run_owned(back, Some(7), false, Budget { max_events: 10, progress: None });
        assert!(failed.is_err(), "a budget of ten events is refused");
        assert_eq!(serde_json::to_string(&back.scenario).expect("json"), given);
        // The C# client with no jitter spins at one instant (sim-cli/tests/robustness.rs).
        let spins = "name = \"m\"\ndescription = \"m\"\nduration = \"10s\"\n[[nodes]]\nalgorithm = \"csharp-client\"\n";
        let loaded = crate::scenario_file::load("spins.toml", spins, &["nodes.0.jitter_factor=0.0".to_string()])
            .expect("it loads");
        let given = serde_json::to_string(&loaded.scenario).expect("json");
        let (back, stuck) = run_owned(loaded, Some(1), false, Budget::default_budget());
        let message = stuck.err().expect("the run is stopped").message;
        assert!(message.contains("the run is stuck at"), "{message}");
        assert_eq!(serde_json::to_string(&back.scenario).expect("json"), given);
        assert_eq!(back.scenario.nodes.len(), 1);
    }
}
