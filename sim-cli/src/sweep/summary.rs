//! After the runs: `aggregate.csv`, `sweep.json` and the plots computed from `runs.csv` alone
//! (`finish`), and several shards' folders merged into one sweep (`merge`).

use super::files::{err, io, write_file};
use super::stats::PointSummary;
use super::{csv, plots, stats};
use crate::scenario_file::CliError;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

fn num(x: f64) -> String {
    if x.is_nan() { String::new() } else { x.to_string() }
}

/// Reads `dir/runs.csv` point by point (rows are in run order, so a point's rows are together)
/// and writes `aggregate.csv` and the plots. Needs only `runs.csv` and `sweep.json`.
pub fn finish(dir: &Path) -> Result<Vec<PointSummary>, CliError> {
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
    // Only the columns read below are split out of each row (a row has a hundred).
    let read_cols =
        metric_cols.iter().copied().chain([dual_col, point_col, unsafe_col, 1 + axes.len()]).max().unwrap_or(0) + 1;
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
        let fields = csv::parse_first(&line, read_cols);
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
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Vec<PointSummary>, CliError> {
    if dirs.is_empty() {
        return Err(err("merge: name the shard directories"));
    }
    crate::output::check_folder_path(out).map_err(err)?;
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
        // A finished shard's rows each end with a newline; one cut off (a copy that stopped
        // short, an edit) would be merged as a short row and skew aggregate.csv.
        let rows = dir.join("runs.csv");
        if !ends_with_newline(&rows).map_err(|e| io(&rows, "read", e))? {
            return Err(err(format!(
                "{}: its last row is cut off (no newline at the end); the shard was copied or edited after it \
                 finished: run it again with --resume into a fresh copy, or restore the file",
                rows.display()
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
    // Written under the output's lock, as `StagedDir::write` does: an interrupt waits for the
    // files in progress instead of removing the folder under them.
    let summaries = staged.with_lock(|dir| merge_rows(dir, readers, header_line, total, count))?;
    staged.commit().map_err(err)?;
    Ok(summaries)
}

/// Is the last byte of `path` a newline (an empty file has no rows and is not)?
fn ends_with_newline(path: &Path) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

type ShardLines = (usize, PathBuf, std::io::Lines<BufReader<File>>);

/// Writes the merged runs.csv (rows round-robin from the shards) into `dir`, then its aggregate
/// and plots.
fn merge_rows(
    dir: &Path,
    mut readers: Vec<ShardLines>,
    header_line: Option<String>,
    total: usize,
    count: usize,
) -> Result<Vec<PointSummary>, CliError> {
    let merged_path = dir.join("runs.csv");
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
    finish(dir)
}
