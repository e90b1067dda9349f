//! Running a sweep: the output folder claimed (a lock, a resume checked against what is
//! there), the runs handed out to worker threads one at a time, and `runs.csv` written in run
//! order as the rows come in.

use super::csv;
use super::files::{err, io, write_file};
use super::ordered::{OrderedError, ordered_map};
use super::shard::{Shard, ShardRuns};
use super::spec::{SweepSpec, VARIABLE_METRIC_PREFIX};
use super::summary::finish;
use crate::run;
use crate::scenario_file::CliError;
use serde_json::Value;
use sim_core::metrics::Metrics;
use sim_core::scenario::did_you_mean;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::BufReader;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

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
    /// The command that continues this sweep, printed on an interrupt (None: say nothing).
    pub resume_command: Option<String>,
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
fn discover_columns(spec: &SweepSpec) -> Result<Vec<String>, CliError> {
    let loaded = spec.load_point(0)?;
    let out = run::run(&loaded, Some(spec.seeds.0), false)?;
    let values = sim_core::scenario::metric_values(&out.result.metrics);
    let mut columns: Vec<String> = row_values_by_map(values, transitions_per_hour(&out.result)).into_keys().collect();
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

/// The sweep's column that is not one of the run's metrics.
const TRANSITIONS_PER_HOUR: &str = "transitions_per_hour";

fn row_values_by_map(mut values: BTreeMap<String, f64>, transitions_per_hour: f64) -> BTreeMap<String, f64> {
    values.retain(|k, _| !k.starts_with(VARIABLE_METRIC_PREFIX));
    values.insert(TRANSITIONS_PER_HOUR.into(), transitions_per_hour);
    values
}

fn transitions_per_hour(result: &sim_core::world::RunResult) -> f64 {
    let hours = result.duration as f64 / 3.6e12;
    if hours > 0.0 { result.metrics.lease_transitions as f64 / hours } else { 0.0 }
}

/// [`row_values_by_map`]'s values in the columns' order (`None` where the run has no such metric),
/// matched to the columns as the walk hands them over, both in their paths' order: no path
/// copied, no map built. `None` as a whole where the walk strays from that order (a node id
/// that sorts differently from its paths, a path repeated, a metric the first run did not
/// have): the map then gives the same values, or names the stray metric.
fn values_in_columns(columns: &[String], metrics: &Metrics, transitions_per_hour: f64) -> Option<Vec<Option<f64>>> {
    let mut values = vec![None; columns.len()];
    let (mut next, mut strayed) = (0, false);
    sim_core::scenario::visit_metric_values(metrics, |path, value| {
        if strayed || path.starts_with(VARIABLE_METRIC_PREFIX) {
            return;
        }
        // Most often the next column; else columns before this path have no value in this run.
        let mut found = columns.get(next).is_some_and(|c| c == path);
        if !found {
            while columns.get(next).is_some_and(|c| c.as_str() < path) {
                next += 1;
            }
            found = columns.get(next).is_some_and(|c| c == path);
        }
        if found && path != TRANSITIONS_PER_HOUR {
            values[next] = Some(value);
            next += 1;
        } else {
            strayed = true;
        }
    });
    let at = columns.binary_search_by(|c| c.as_str().cmp(TRANSITIONS_PER_HOUR)).ok()?;
    values[at] = Some(transitions_per_hour);
    (!strayed).then_some(values)
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
fn run_row(spec: &SweepSpec, columns: &[String], run: usize, max_events: u64) -> Result<String, CliError> {
    let (point, seed) = spec.run_of(run);
    let within = |e: CliError| err(format!("run {run}, {} seed {seed}: {e}", spec.describe_point(point)));
    let cached = spec.load_point_cached(point).map_err(within)?;
    let budget = run::Budget { max_events, progress: None };
    let out = run::run_metrics(&cached.loaded, Some(seed), budget, &cached.spec).map_err(within)?;
    let mut line = String::with_capacity(16 * columns.len() + 128);
    let decimal = |n: usize| sim_core::digits::decimal(n as u64, &mut [0; 20]).to_string();
    line.push_str(&decimal(run));
    line.push(',');
    line.push_str(&decimal(point));
    for value in spec.point_values(point) {
        line.push(',');
        csv::push_field(&mut line, value);
    }
    line.push(',');
    line.push_str(sim_core::digits::decimal(seed, &mut [0; 20]));
    line.push_str(if out.unsafe_mode { ",1" } else { ",0" });
    let (metrics, per_hour) = (&out.result.metrics, transitions_per_hour(&out.result));
    if let Some(values) = values_in_columns(columns, metrics, per_hour) {
        push_row_values(&mut line, &values);
    } else {
        push_values(&mut line, columns, metrics, per_hour).map_err(|key| {
            err(format!(
                "run {run} (grid point {point}) has a metric {key:?} the first run did not: a grid axis changes the \
                 nodes; sweep such scenarios separately"
            ))
        })?;
    }
    line.push(',');
    csv::push_field(&mut line, &cached.replay_command(seed));
    Ok(line)
}

/// Each value after a comma, an empty field where there is none.
fn push_row_values(line: &mut String, values: &[Option<f64>]) {
    for value in values {
        line.push(',');
        if let Some(value) = value {
            push_number(line, *value);
        }
    }
}

/// The run's values in the columns' order through [`row_values_by_map`]'s map, or the first metric
/// (in key order) the first run did not have.
fn push_values(line: &mut String, columns: &[String], metrics: &Metrics, per_hour: f64) -> Result<(), String> {
    let values = row_values_by_map(sim_core::scenario::metric_values(metrics), per_hour);
    // The columns and the values are both in key order: one walk matches them, and finds a
    // metric the first run did not have (the first such one in key order).
    let mut values = values.iter().peekable();
    for column in columns {
        if let Some((key, _)) = values.next_if(|(key, _)| key.as_str() < column.as_str()) {
            return Err(key.clone());
        }
        line.push(',');
        if let Some((_, &value)) = values.next_if(|(key, _)| *key == column) {
            push_number(line, value);
        }
    }
    match values.next() {
        Some((key, _)) => Err(key.clone()),
        None => Ok(()),
    }
}

/// `value` as `f64`'s `Display` writes it (no exponent, shortest digits that read back), with
/// the integers most metrics are (counts) written as integers without the float formatter.
fn push_number(out: &mut String, value: f64) {
    use std::fmt::Write;
    // Below 2^53 every integer is exact, and Display writes it without a fraction; -0.0 is
    // written "-0", which an integer would not be.
    if value == value.trunc() && value.abs() < 9_007_199_254_740_992.0 && !(value == 0.0 && value.is_sign_negative()) {
        if value < 0.0 {
            out.push('-');
        }
        out.push_str(sim_core::digits::decimal(value.abs() as u64, &mut [0; 20]));
    } else {
        let _ = write!(out, "{value}");
    }
}

/// What an output directory holds, judged before anything is written to it.
/// The file a running sweep holds an exclusive lock on, inside its `--out`.
const LOCK_FILE: &str = ".leasesim-sweep.lock";

/// Takes an advisory lock on `out` for the life of the returned file: a second sweep (or a
/// `--resume` started while the first still runs) is refused instead of interleaving rows. The
/// kernel drops the lock when the process dies, so a killed sweep never blocks its `--resume`.
pub(super) fn lock_out_dir(out: &Path) -> Result<std::fs::File, CliError> {
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

fn check_out_dir(out: &Path, sweep_json: &str, shard: Option<Shard>, resume: bool) -> Result<bool, CliError> {
    crate::output::check_folder_path(out).map_err(err)?;
    if !out.exists() {
        return Ok(false);
    }
    // A sweep stopped before its first row (killed or interrupted while writing sweep.json or
    // shard.json, which go through a `.partial` beside them) left only files of its own and ran
    // nothing: the directory starts afresh, whatever the flags, instead of refusing both a new
    // start and --resume. A sweep.json or shard.json counts as its own only if it reads as one
    // (a user's file of that name is not written over).
    let ours = |name: &str, key: &str| {
        std::fs::read_to_string(out.join(name))
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .is_some_and(|v| v.get(key).is_some())
    };
    let nothing_run = std::fs::read_dir(out).map_err(|e| io(out, "list", e))?.filter_map(|e| e.ok()).all(|e| match &*e
        .file_name()
        .to_string_lossy()
    {
        LOCK_FILE | "sweep.partial" | "shard.partial" => true,
        "sweep.json" => ours("sweep.json", "sweep_id"),
        "shard.json" => ours("shard.json", "shard"),
        _ => false,
    });
    if nothing_run {
        return Ok(false);
    }
    let existing = std::fs::read_to_string(out.join("sweep.json")).ok();
    let Some(existing) = existing else {
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
fn resume_rows(path: &Path, header_line: &str, runs: &ShardRuns) -> Result<usize, CliError> {
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
                let expected = if rows < runs.len {
                    format!("run {} was expected there", runs.get(rows))
                } else {
                    "the sweep has no more runs".to_string()
                };
                return Err(err(format!(
                    "{}: row {} is not the run expected ({expected}); the file was edited or mixed up",
                    path.display(),
                    rows + 1,
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
pub fn run_sweep(spec: &SweepSpec, opts: &RunOptions) -> Result<Outcome, CliError> {
    spec.validate()?;
    let (events, seconds) = spec.check_points(opts.max_events)?;
    if !opts.quiet {
        let jobs = opts.jobs.max(1) as u64;
        eprintln!(
            "{} runs ({} grid points × {} seeds), about {} events: {} on {jobs} thread(s)",
            crate::format::group_digits(spec.run_count() as u64),
            spec.point_count(),
            spec.seed_count(),
            crate::format::group_digits(events),
            crate::format::rough_seconds(seconds / jobs as f64)
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
    match run_rows(spec, opts, &columns, &runs, &runs_path, done) {
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
///
/// `opts.jobs` worker threads run them (`ordered_map`) while this thread writes the rows in
/// run order as they come and syncs the file every `32 × jobs` rows or every second, whichever
/// comes first, the workers going on meanwhile. A killed sweep keeps every row written (a
/// cut-off last line is dropped by --resume); a machine crash loses at most the rows since the
/// last sync: a second's worth (and the 50 ms a worker may hold its results before it hands
/// them over: `ordered::BATCH_WAIT`), or 32 × jobs short runs.
fn run_rows(
    spec: &SweepSpec,
    opts: &RunOptions,
    columns: &[String],
    runs: &ShardRuns,
    runs_path: &Path,
    done: usize,
) -> Result<Outcome, (CliError, usize)> {
    const SYNC_AT_LEAST_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
    let fail = |e: CliError, written: usize| (e, written);
    let mut file = OpenOptions::new().append(true).open(runs_path).map_err(|e| fail(io(runs_path, "open", e), 0))?;
    let todo = done..runs.len.min(done.saturating_add(opts.max_runs.unwrap_or(usize::MAX)));
    let jobs = opts.jobs.max(1);
    let bar = crate::progress::runs_bar(runs.len, done, opts.quiet);
    let sync_every = 32 * jobs;
    let mut text = String::new();
    let (mut unsynced, mut written) = (0usize, 0usize);
    let mut last_sync = std::time::Instant::now();
    // What Ctrl-C says: the rows synced so far and the command that goes on from them.
    let kept = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(done));
    let _note = opts.resume_command.clone().map(|command| {
        let (kept, total, file) = (kept.clone(), runs.len, runs_path.display().to_string());
        crate::output::note_on_interrupt(move || {
            let n = kept.load(std::sync::atomic::Ordering::Relaxed);
            format!("{n} of {total} runs are kept in {file}; continue with:\n  {command}")
        })
    });
    // Set once a write or sync has failed: what reached the file then is unknown, so nothing
    // more is written (a retry could repeat part of a row).
    let mut broken = false;
    // Writes and syncs the rows held, when `now` or when they are due.
    let mut flush = |now: bool, text: &mut String, unsynced: &mut usize, written: &mut usize| {
        if broken {
            // The failed write's error has been reported already.
            return Ok(());
        }
        let due = *unsynced >= sync_every || last_sync.elapsed() >= SYNC_AT_LEAST_EVERY;
        if *unsynced == 0 || !(now || due) {
            return Ok(());
        }
        broken = true;
        // Ctrl-C waits for the rows and the count it reports (a `kill -9` may still cut the
        // last row short; --resume drops it).
        let _whole = crate::output::hold_off_interrupt();
        file.write_all(text.as_bytes()).map_err(|e| io(runs_path, "write", e))?;
        file.sync_data().map_err(|e| io(runs_path, "sync", e))?;
        broken = false;
        last_sync = std::time::Instant::now();
        text.clear();
        *written += std::mem::take(unsynced);
        kept.store(done + *written, std::sync::atomic::Ordering::Relaxed);
        Ok::<(), CliError>(())
    };
    let result = ordered_map(
        jobs,
        todo.clone(),
        (1024 * jobs).max(4096),
        |k| run_row(spec, columns, runs.get(k), opts.max_events),
        |row| {
            // None: no run has ended for a while; the rows held are synced if they are due.
            if let Some((_, row)) = row {
                text.push_str(&row);
                text.push('\n');
                unsynced += 1;
                bar.inc(1);
            }
            flush(false, &mut text, &mut unsynced, &mut written)
        },
    );
    // The rows before a failed run are kept: --resume starts at the failed run. Should this
    // last write fail too after a failed run, the run's error is the one reported (`written`
    // counts only what was synced, and --resume drops a cut-off last line).
    let flushed = flush(true, &mut text, &mut unsynced, &mut written);
    match result {
        Ok(()) => flushed.map_err(|e| fail(e, written))?,
        Err(OrderedError::Failed(e)) => return Err(fail(e, written)),
        Err(OrderedError::Spawn(e)) => {
            return Err(fail(err(format!("cannot start {jobs} worker threads: {e}")), written));
        }
        Err(OrderedError::Lost(k)) => {
            return Err(fail(err(format!("run {} was lost by its worker thread", runs.get(k))), written));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A row's values taken as the walk hands them over are the values through the map, where
    /// the walk keeps to the columns' order; where it does not (node ids "a" and "a-b": the
    /// paths sort "a-b" first, the walk takes "a" first), the row takes the map's way, and a
    /// metric the first run did not have is named either way.
    #[test]
    fn a_rows_values_in_columns_are_the_maps() {
        let metrics = |ids: &[&str], nan: bool| {
            let mut m = Metrics { lease_transitions: 3, dual_leader_seconds: 2.5, ..Default::default() };
            m.failover_seconds = vec![1.0, 4.0];
            for (i, id) in ids.iter().enumerate() {
                let node = sim_core::metrics::NodeMetrics {
                    acquisitions: i as u64,
                    acting_leader_seconds: if nan && i == 1 { f64::NAN } else { 10.0 * i as f64 },
                    ..Default::default()
                };
                m.nodes.insert(id.to_string(), node);
            }
            m.api_requests_by_verb_status.insert("get 200".into(), 7);
            m.max_dual_leader_seconds = if nan { f64::NAN } else { 1.25 };
            m
        };
        let columns_of = |m: &Metrics| -> Vec<String> {
            row_values_by_map(sim_core::scenario::metric_values(m), 0.5).into_keys().collect()
        };
        let by_map = |columns: &[String], m: &Metrics| {
            let mut line = String::new();
            push_values(&mut line, columns, m, 0.5).map(|()| line)
        };
        let by_walk = |columns: &[String], m: &Metrics| {
            values_in_columns(columns, m, 0.5).map(|values| {
                let mut line = String::new();
                push_row_values(&mut line, &values);
                line
            })
        };
        let plain = metrics(&["n-0", "n-1", "n-2"], false);
        let columns = columns_of(&plain);
        assert_eq!(by_walk(&columns, &plain), Some(by_map(&columns, &plain).unwrap()));
        // A run with no value for some columns (NaN has no path) leaves them empty.
        let gaps = metrics(&["n-0", "n-1", "n-2"], true);
        let line = by_walk(&columns, &gaps).expect("in order");
        assert_eq!(Ok(line.clone()), by_map(&columns, &gaps));
        assert!(line.contains(",,"), "{line}");
        // Out of the columns' order: the map's way.
        let odd = metrics(&["a", "a-b"], false);
        let odd_columns = columns_of(&odd);
        assert_eq!(by_walk(&odd_columns, &odd), None);
        let odd_line = by_map(&odd_columns, &odd).expect("the first run's own columns");
        assert_eq!(odd_line.matches(',').count(), odd_columns.len(), "{odd_line}");
        assert!(odd_line.contains(",10,"), "a-b's acting seconds in its column: {odd_line}");
        // A metric the first run did not have: refused by the walk, named by the map.
        assert_eq!(by_walk(&columns, &metrics(&["n-0", "n-1", "n-2", "n-3"], false)), None);
        let extra = by_map(&columns, &metrics(&["n-0", "n-1", "n-2", "n-3"], false));
        assert_eq!(extra, Err("nodes.n-3.acquisitions".to_string()));
        // Without the per-hour column: refused by the walk too.
        let without: Vec<String> = columns.iter().filter(|c| *c != TRANSITIONS_PER_HOUR).cloned().collect();
        assert_eq!(by_walk(&without, &plain), None);
    }

    #[test]
    fn numbers_are_written_as_display_writes_them() {
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1e15,
            9_007_199_254_740_991.0,
            9_007_199_254_740_992.0,
            -9_007_199_254_740_993.0,
            1e21,
            1e300,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.1 + 0.2,
            3600.0,
            123.456,
        ];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(f64::from_bits(x));
            values.push((x % 1_000_000) as f64 / [1.0, 2.0, 1e3, 1e9][(x % 4) as usize]);
        }
        for v in values {
            let mut out = String::new();
            super::push_number(&mut out, v);
            assert_eq!(out, v.to_string(), "{v:?}");
        }
    }
}
