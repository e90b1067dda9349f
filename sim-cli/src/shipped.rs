//! The shipped scenarios, compiled into the binary so `leasesim run split-brain` and
//! `leasesim list` work from any directory. A test keeps this list equal to `scenarios/`.

use crate::error::CliError;
use std::path::PathBuf;

/// `(name, file contents)` of every `scenarios/*.toml` and `scenarios/incidents/*.toml`, sorted
/// by name (names are unique across both).
pub const SHIPPED: &[(&str, &str)] = &[
    ("clock-offset-skew", include_str!("../../scenarios/clock-offset-skew.toml")),
    ("clock-rate-skew-above", include_str!("../../scenarios/clock-rate-skew-above.toml")),
    ("clock-rate-skew-below", include_str!("../../scenarios/clock-rate-skew-below.toml")),
    ("coordinated-stall", include_str!("../../scenarios/coordinated-stall.toml")),
    ("coordinated-upgrade", include_str!("../../scenarios/coordinated-upgrade.toml")),
    ("cpu-starvation", include_str!("../../scenarios/incidents/cpu-starvation.toml")),
    ("csharp-own-lease-duration", include_str!("../../scenarios/incidents/csharp-own-lease-duration.toml")),
    ("expire", include_str!("../../scenarios/expire.toml")),
    ("expired-lease-after-restart", include_str!("../../scenarios/incidents/expired-lease-after-restart.toml")),
    ("fabric8-release-skips-stop", include_str!("../../scenarios/incidents/fabric8-release-skips-stop.toml")),
    ("gc-pause", include_str!("../../scenarios/gc-pause.toml")),
    ("mixed-fleet", include_str!("../../scenarios/mixed-fleet.toml")),
    ("mixed-lease-durations", include_str!("../../scenarios/incidents/mixed-lease-durations.toml")),
    ("python-hung-call", include_str!("../../scenarios/python-hung-call.toml")),
    ("rate-limited-renewals", include_str!("../../scenarios/rate-limited-renewals.toml")),
    ("release-blanks-new-holder", include_str!("../../scenarios/incidents/release-blanks-new-holder.toml")),
    ("release-races-renew", include_str!("../../scenarios/incidents/release-races-renew.toml")),
    ("release-without-duration", include_str!("../../scenarios/incidents/release-without-duration.toml")),
    ("renew", include_str!("../../scenarios/renew.toml")),
    ("renew-deadline-vs-lease-duration", include_str!("../../scenarios/renew-deadline-vs-lease-duration.toml")),
    (
        "request-timeout-vs-renew-deadline",
        include_str!("../../scenarios/incidents/request-timeout-vs-renew-deadline.toml"),
    ),
    ("rolling-upgrade", include_str!("../../scenarios/rolling-upgrade.toml")),
    ("run-never-restarted", include_str!("../../scenarios/incidents/run-never-restarted.toml")),
    ("seed-lab", include_str!("../../scenarios/seed-lab.toml")),
    ("slow-stop-hooks", include_str!("../../scenarios/incidents/slow-stop-hooks.toml")),
    ("split-brain", include_str!("../../scenarios/split-brain.toml")),
    ("takeover", include_str!("../../scenarios/takeover.toml")),
    ("valid-but-unsafe", include_str!("../../scenarios/valid-but-unsafe.toml")),
    ("wedged-client", include_str!("../../scenarios/wedged-client.toml")),
    ("work-died-elector-renews", include_str!("../../scenarios/incidents/work-died-elector-renews.toml")),
    ("workers-on-process-context", include_str!("../../scenarios/incidents/workers-on-process-context.toml")),
];

/// The shipped scenarios that reproduce a real incident (`scenarios/incidents/`).
pub const INCIDENTS: &[&str] = &[
    "cpu-starvation",
    "csharp-own-lease-duration",
    "expired-lease-after-restart",
    "fabric8-release-skips-stop",
    "mixed-lease-durations",
    "release-blanks-new-holder",
    "release-races-renew",
    "release-without-duration",
    "request-timeout-vs-renew-deadline",
    "run-never-restarted",
    "slow-stop-hooks",
    "work-died-elector-renews",
    "workers-on-process-context",
];

/// Where a shipped scenario lives in the repository, relative to its root.
pub fn repo_path(name: &str) -> String {
    if INCIDENTS.contains(&name) {
        format!("scenarios/incidents/{name}.toml")
    } else {
        format!("scenarios/{name}.toml")
    }
}

pub fn find(name: &str) -> Option<&'static str> {
    SHIPPED.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// The text of a scenario named by a path, or by the name of a shipped scenario when no such
/// file exists (then the name is also what replay commands say: `leasesim run NAME` finds it).
pub fn read_scenario(path: &std::path::Path) -> Result<String, CliError> {
    if !path.exists()
        && let Some(name) = path.to_str().filter(|n| !n.contains('/') && !n.ends_with(".toml"))
        && let Some(text) = find(name)
    {
        return Ok(text.to_string());
    }
    crate::scenario_file::read_file(path)
}

/// A file path as given, or `scenarios/<name>.toml` for a shipped scenario's name (sweeps need
/// the file itself: they hash its text).
pub fn resolve_scenario(name: &str) -> PathBuf {
    let p = PathBuf::from(name);
    let shipped = PathBuf::from(repo_path(name));
    if !p.exists() && !name.contains('/') && !name.ends_with(".toml") && shipped.exists() { shipped } else { p }
}

/// Loads a scenario file, or a shipped scenario by name: `scenarios/<name>.toml` when it is
/// there (the repository), else the copy compiled into the binary.
pub fn load_named(name: &str, overrides: &[String]) -> Result<crate::scenario_file::LoadedScenario, CliError> {
    let path = PathBuf::from(name);
    let looks_like_path = name.contains('/') || name.ends_with(".toml");
    if path.is_file() || looks_like_path {
        if path.is_dir() {
            return Err(CliError::input(format!("{name}: is a directory, not a scenario file")));
        }
        let source = crate::scenario_file::read_file(&path)?;
        return crate::scenario_file::load(&path.display().to_string(), &source, overrides);
    }
    let in_repo = PathBuf::from(repo_path(name));
    if in_repo.is_file() {
        let source = crate::scenario_file::read_file(&in_repo)?;
        return crate::scenario_file::load(&in_repo.display().to_string(), &source, overrides);
    }
    match find(name) {
        Some(source) => crate::scenario_file::load(name, source, overrides),
        None => {
            let names = SHIPPED.iter().map(|(n, _)| *n);
            let hint = sim_core::scenario::did_you_mean(name, names);
            Err(CliError::input(format!(
                "{name}: no such scenario file, and no shipped scenario has that name{hint}; `leasesim list` shows them"
            )))
        }
    }
}
