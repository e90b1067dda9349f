//! The shipped scenarios, compiled into the binary so `leasesim run split-brain` and
//! `leasesim list` work from any directory. A test keeps this list equal to `scenarios/`.

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
    ("gc-pause", include_str!("../../scenarios/gc-pause.toml")),
    ("mixed-fleet", include_str!("../../scenarios/mixed-fleet.toml")),
    ("mixed-lease-durations", include_str!("../../scenarios/incidents/mixed-lease-durations.toml")),
    ("python-hung-call", include_str!("../../scenarios/python-hung-call.toml")),
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
    ("workers-on-process-context", include_str!("../../scenarios/incidents/workers-on-process-context.toml")),
];

/// The shipped scenarios that reproduce a real incident (`scenarios/incidents/`).
pub const INCIDENTS: &[&str] = &[
    "cpu-starvation",
    "csharp-own-lease-duration",
    "expired-lease-after-restart",
    "mixed-lease-durations",
    "release-blanks-new-holder",
    "release-races-renew",
    "release-without-duration",
    "request-timeout-vs-renew-deadline",
    "run-never-restarted",
    "slow-stop-hooks",
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
pub fn read_scenario(path: &std::path::Path) -> Result<String, crate::scenario_file::CliError> {
    if !path.exists()
        && let Some(name) = path.to_str().filter(|n| !n.contains('/') && !n.ends_with(".toml"))
        && let Some(text) = find(name)
    {
        return Ok(text.to_string());
    }
    crate::scenario_file::read_file(path)
}
