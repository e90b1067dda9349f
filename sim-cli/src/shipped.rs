//! The shipped scenarios, compiled into the binary so `leasesim run split-brain` and
//! `leasesim list` work from any directory. A test keeps this list equal to `scenarios/`.

/// `(name, file contents)` of every `scenarios/*.toml`, sorted by name.
pub const SHIPPED: &[(&str, &str)] = &[
    ("clock-offset-skew", include_str!("../../scenarios/clock-offset-skew.toml")),
    ("clock-rate-skew-above", include_str!("../../scenarios/clock-rate-skew-above.toml")),
    ("clock-rate-skew-below", include_str!("../../scenarios/clock-rate-skew-below.toml")),
    ("expire", include_str!("../../scenarios/expire.toml")),
    ("gc-pause", include_str!("../../scenarios/gc-pause.toml")),
    ("renew", include_str!("../../scenarios/renew.toml")),
    ("renew-deadline-vs-lease-duration", include_str!("../../scenarios/renew-deadline-vs-lease-duration.toml")),
    ("seed-lab", include_str!("../../scenarios/seed-lab.toml")),
    ("split-brain", include_str!("../../scenarios/split-brain.toml")),
    ("takeover", include_str!("../../scenarios/takeover.toml")),
];

pub fn find(name: &str) -> Option<&'static str> {
    SHIPPED.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// The text of a scenario named by a path, or by the name of a shipped scenario when no such
/// file exists (then the name is also what replay commands say: `leasesim run NAME` finds it).
pub fn read_scenario(path: &std::path::Path) -> Result<String, crate::scenario_file::InputError> {
    if !path.exists()
        && let Some(name) = path.to_str().filter(|n| !n.contains('/') && !n.ends_with(".toml"))
        && let Some(text) = find(name)
    {
        return Ok(text.to_string());
    }
    crate::scenario_file::read_file(path)
}
