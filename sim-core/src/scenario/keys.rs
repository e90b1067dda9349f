//! The keys each table accepts, and "did you mean" for a key or name that is not one of them.

/// `" (did you mean \"x\"?)"` when a candidate is within a small edit distance.
pub fn did_you_mean<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    let best = candidates.map(|c| (edit_distance(word, c), c)).filter(|(d, c)| *d <= 2.max(c.len() / 3)).min();
    match best {
        Some((_, c)) => format!(" (did you mean {c:?}?)"),
        None => String::new(),
    }
}

/// `unknown <what> "<word>" (did you mean "…"?); expected one of a, b, c`: the message for a
/// word that names none of `candidates`.
pub fn unknown_word(what: &str, word: &str, candidates: &[&str]) -> String {
    format!(
        "unknown {what} {word:?}{}; expected one of {}",
        did_you_mean(word, candidates.iter().copied()),
        candidates.join(", ")
    )
}

pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Every key a scenario file may hold, per table, for did-you-mean on unknown keys and `--set`.
pub fn known_keys(table: &str) -> &'static [&'static str] {
    match table {
        "" => &[
            "name",
            "description",
            "duration",
            "seed",
            "unsafe",
            "epoch",
            "from_cluster",
            "lease",
            "leases",
            "defaults",
            "nodes",
            "faults",
            "random_faults",
            "server",
            "rbac",
            "objects",
            "actions",
            "expect",
        ],
        "lease" => &["namespace", "name", "unsafe"],
        "defaults" | "nodes" => &[
            "identity",
            "algorithm",
            "lease_duration",
            "renew_deadline",
            "retry_period",
            "jitter_factor",
            "release_on_cancel",
            "request_timeout",
            "after_lost",
            "restart_delay",
            "start_at",
            "client_go",
            "version",
            "client_limiter",
            "expiry",
            "fast_path",
            "labels",
            "events",
            "healthz",
            "stop_acting",
            "identity_per_start",
            "restart_backoff",
            "coordinated",
            "binary_version",
            "emulation_version",
            "drain",
            "grace",
            "value",
            "user",
            "lease_field_manager",
            "lease_name",
            "clock",
            "network",
            "reconciler",
        ],
        "healthz" => {
            &["tolerance", "period", "failure_threshold", "initial_delay", "timeout", "restart_delay", "check"]
        }
        "clock" => &["offset", "drift_ppm", "steps", "wander", "offset_seconds_dist", "drift_ppm_dist"],
        "network" => &["latency", "loss", "up", "down"],
        "reconciler" => &["mode", "period", "object", "field", "field_manager", "timeout", "burst"],
        "burst" => &["at", "requests", "every"],
        "client_limiter" => &["qps", "burst", "shared"],
        "faults" => &["at", "node", "target", "kind", "duration", "cut", "mode", "delay", "delta", "extra", "ends"],
        "random_faults" => &[
            "name",
            "kind",
            "target",
            "mean_interval",
            "from",
            "until",
            "duration",
            "restart_after",
            "delta",
            "backwards",
            "cut",
            "mode",
        ],
        "server" => &["outages", "slowdowns", "errors", "clock"],
        "errors" => &["from", "duration", "code", "verb", "resource", "node", "probability", "retry_after", "message"],
        "rbac" => &["auto"],
        "actions" => &[
            "name",
            "at",
            "as",
            "verb",
            "resource",
            "namespace",
            "object",
            "body",
            "patch",
            "field_manager",
            "force",
            "can_i_verb",
        ],
        _ => &[],
    }
}
