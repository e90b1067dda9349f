//! Expectations: assertions a scenario makes about its run, checked afterwards.
//!
//! Forms: `<metric> <op> <number>` (`dual_leader_seconds == 0`,
//! `nodes.widget-operator-0.split_brain_writes > 0`, `failover_seconds.max <= 20`), and about
//! scripted actions: `action "apply-b" fails with conflict`, `action "x" succeeds`,
//! `action "can-delete" answers no`, `action "apply-b" message contains "widget-operator-0"`.

use sim_core::world::ActionOutcome;
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq)]
pub enum Expectation {
    Metric { path: String, op: Op, value: f64 },
    // (Action names are checked against the scenario's actions by `run::parse_expectations`.)
    ActionFails { name: String, reason: String },
    ActionSucceeds { name: String },
    ActionAnswers { name: String, yes: bool },
    ActionMessageContains { name: String, text: String },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Eq => a == b,
            Op::Ne => a != b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

/// Reasons an action can fail with, as users write them, and the API reasons they mean.
const REASONS: [(&str, &str); 8] = [
    ("conflict", "Conflict"),
    ("already-exists", "AlreadyExists"),
    ("not-found", "NotFound"),
    ("forbidden", "Forbidden"),
    ("invalid", "Invalid"),
    ("bad-request", "BadRequest"),
    ("unavailable", "ServiceUnavailable"),
    ("any", ""),
];

/// A double-quoted string at the start of `s` (`\"` and `\\` escapes), and what follows it.
fn quoted(s: &str) -> Option<(String, &str)> {
    let rest = s.trim_start().strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?.1),
            '"' => return Some((out, &rest[i + 1..])),
            c => out.push(c),
        }
    }
    None
}

pub fn parse(text: &str, metric_names: &[String]) -> Result<Expectation, String> {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix("action ") {
        let (name, rest) = quoted(rest)
            .ok_or("expected the action's name in double quotes: action \"apply-b\" fails with conflict")?;
        let rest = rest.trim();
        if let Some(reason) = rest.strip_prefix("fails with ") {
            let reason = reason.trim();
            if !REASONS.iter().any(|(r, _)| *r == reason) {
                let names: Vec<&str> = REASONS.iter().map(|(r, _)| *r).collect();
                return Err(format!("unknown failure {reason:?}; expected one of {}", names.join(", ")));
            }
            return Ok(Expectation::ActionFails { name, reason: reason.into() });
        }
        if rest == "succeeds" {
            return Ok(Expectation::ActionSucceeds { name });
        }
        if let Some(ans) = rest.strip_prefix("answers ") {
            return match ans.trim() {
                "yes" => Ok(Expectation::ActionAnswers { name, yes: true }),
                "no" => Ok(Expectation::ActionAnswers { name, yes: false }),
                other => Err(format!("expected `answers yes` or `answers no`, found {other:?}")),
            };
        }
        if let Some(m) = rest.strip_prefix("message contains ") {
            let (text, _) = quoted(m).ok_or("expected the text in double quotes")?;
            return Ok(Expectation::ActionMessageContains { name, text });
        }
        return Err(format!(
            "after the action's name expected `fails with <reason>`, `succeeds`, `answers yes|no` or `message contains \"…\"`, found {rest:?}"
        ));
    }
    let parts: Vec<&str> = t.split_whitespace().collect();
    if parts.len() != 3 {
        return Err("expected `<metric> <op> <number>` such as `dual_leader_seconds == 0`".into());
    }
    let op = match parts[1] {
        "==" => Op::Eq,
        "!=" => Op::Ne,
        "<" => Op::Lt,
        "<=" => Op::Le,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        other => return Err(format!("unknown comparison {other:?}; expected ==, !=, <, <=, > or >=")),
    };
    let value: f64 = parts[2]
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| format!("{:?} is not a number (a finite one, such as 0 or 2.5)", parts[2]))?;
    let path = parts[0].to_string();
    if !metric_names.contains(&path) {
        let hint = sim_core::scenario::did_you_mean(&path, metric_names.iter().map(String::as_str));
        return Err(format!("unknown metric {path:?}{hint}"));
    }
    Ok(Expectation::Metric { path, op, value })
}

impl Expectation {
    /// The scripted action it is about, if any.
    pub fn action(&self) -> Option<&str> {
        match self {
            Expectation::Metric { .. } => None,
            Expectation::ActionFails { name, .. }
            | Expectation::ActionSucceeds { name }
            | Expectation::ActionAnswers { name, .. }
            | Expectation::ActionMessageContains { name, .. } => Some(name),
        }
    }
}

/// The metric names an expectation may use for a run with these node identities.
pub fn metric_names(identities: &[String], leases: &[String]) -> Vec<String> {
    let mut m = sim_core::metrics::Metrics::default();
    for id in identities {
        m.nodes.insert(id.clone(), Default::default());
    }
    for lease in leases {
        m.leases.insert(lease.clone(), Default::default());
    }
    sim_core::scenario::metric_values(&m).into_keys().collect()
}

/// Checks one expectation; returns (passed, what was seen).
pub fn check(e: &Expectation, metrics: &BTreeMap<String, f64>, actions: &[ActionOutcome]) -> (bool, String) {
    let find = |name: &str| actions.iter().find(|a| a.name == name);
    match e {
        Expectation::Metric { path, op, value } => {
            let got = metrics.get(path).copied().unwrap_or(0.0);
            (op.holds(got, *value), format!("{path} = {got}"))
        }
        Expectation::ActionFails { name, reason } => match find(name) {
            None => (false, format!("action {name:?} did not run")),
            Some(a) => {
                let want = REASONS.iter().find(|(r, _)| r == reason).map(|(_, api)| *api).unwrap_or("");
                let ok = a.code >= 400 && (want.is_empty() || a.reason == want);
                (
                    ok,
                    if a.code >= 400 {
                        format!("{} {}: {}", a.code, a.reason, a.message)
                    } else {
                        format!("succeeded ({})", a.code)
                    },
                )
            }
        },
        Expectation::ActionSucceeds { name } => match find(name) {
            None => (false, format!("action {name:?} did not run")),
            Some(a) => (
                a.code < 400 && a.allowed != Some(false),
                if a.code < 400 { "succeeded".into() } else { format!("{} {}: {}", a.code, a.reason, a.message) },
            ),
        },
        Expectation::ActionAnswers { name, yes } => match find(name) {
            None => (false, format!("action {name:?} did not run")),
            Some(a) => (a.allowed == Some(*yes), format!("answered {}", a.message)),
        },
        Expectation::ActionMessageContains { name, text } => match find(name) {
            None => (false, format!("action {name:?} did not run")),
            Some(a) => (a.message.contains(text.as_str()), format!("message: {}", a.message)),
        },
    }
}
