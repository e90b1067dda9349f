//! `leasesim reports`: regenerates `reports/` from every shipped scenario — per scenario a folder
//! with `report.html`, `timeline.svg`, `transitions.svg` and `summary.json`, plus `index.html`.
//! Only text formats are written (PNG rasterisation may differ between CPUs), so the committed
//! folder can be compared byte for byte by a test.

use crate::output::StagedDir;
use crate::report::ImageFormat;
use crate::run;
use crate::scenario_file;
use std::path::Path;

/// One scenario's line in the index.
pub struct ReportEntry {
    pub name: String,
    pub passed: bool,
}

/// Runs every `*.toml` in `scenarios_dir` (with its own seed) and writes the reports to `out`,
/// replacing it atomically. `scenarios_dir` is used as given in replay commands, so run this from
/// the repository root for committed reports.
pub fn generate(scenarios_dir: &Path, out: &Path) -> Result<Vec<ReportEntry>, String> {
    // (name, label for replay commands, source): the folder's files, or, where there is no such
    // folder (leasesim run from elsewhere), the scenarios built into the binary, by name.
    let mut sources: Vec<(String, String, String)> = Vec::new();
    if scenarios_dir.is_dir() {
        // The folder's scenarios, then its incidents (reports/incidents/<name>/).
        for (prefix, folder) in [("", scenarios_dir.to_path_buf()), ("incidents/", scenarios_dir.join("incidents"))] {
            if !folder.is_dir() {
                continue;
            }
            let mut files: Vec<_> = std::fs::read_dir(&folder)
                .map_err(|e| format!("{}: cannot list scenarios: {e}", folder.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            files.sort();
            for path in files {
                let name = format!("{prefix}{}", path.file_stem().unwrap_or_default().to_string_lossy());
                let source = scenario_file::read_file(&path).map_err(|e| e.message)?;
                sources.push((name, path.display().to_string(), source));
            }
        }
    } else if scenarios_dir == Path::new("scenarios") {
        let (incidents, others): (Vec<_>, Vec<_>) =
            crate::shipped::SHIPPED.iter().partition(|(name, _)| crate::shipped::INCIDENTS.contains(name));
        for (name, source) in others.into_iter().chain(incidents.clone()) {
            let page =
                if crate::shipped::INCIDENTS.contains(&name) { format!("incidents/{name}") } else { name.to_string() };
            sources.push((page, name.to_string(), source.to_string()));
        }
    } else {
        return Err(format!("{}: no such folder of scenarios", scenarios_dir.display()));
    }
    let mut staged = StagedDir::new(out, crate::output::Command::Reports)?;
    let mut index = Vec::new();
    let mut entries = Vec::new();
    for (name, label, source) in sources {
        let loaded = scenario_file::load(&label, &source, &[]).map_err(|e| e.message)?;
        let output = run::run(&loaded, None, true).map_err(|e| e.message)?;
        for (file, bytes) in crate::outputs::report_files(&output, ImageFormat::Svg)? {
            staged.write(&format!("{name}/{file}"), bytes)?;
        }
        let mut summary = serde_json::to_string_pretty(&crate::outputs::summary_json(&output)).expect("json");
        summary.push('\n');
        staged.write(&format!("{name}/summary.json"), summary)?;
        let first_line = output.description.split(". ").next().unwrap_or("").trim_end_matches('.').to_string();
        index.push((name.clone(), first_line, format!("{name}/report.html"), output.all_passed()));
        entries.push(ReportEntry { name, passed: output.all_passed() });
    }
    staged.write("index.html", crate::report::index_html(&index))?;
    staged.write(
        "README.md",
        "Generated example reports: one folder per shipped scenario (report.html, timeline.svg, transitions.svg, summary.json) and index.html linking them. Regenerate from the repository root with `cargo run --release --bin leasesim -- reports`; a test checks these files are current.\n",
    )?;
    staged.commit()?;
    Ok(entries)
}
