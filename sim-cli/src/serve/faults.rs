//! Faults per client for `leasesim serve`: which request of which identity gets a fault, and
//! what it does. A decision depends only on the rule, the identity, that identity's request
//! number and the seed — never on how requests of different clients interleave — so a fault
//! schedule hits the same requests whatever else talks to the server.

use serde::Deserialize;
use serde_json::{Value, json};
use sim_core::rng::ComponentRng;
use sim_core::time::{Nanos, format_duration};

/// What a fault does to a request.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Answer after `delay` (the request is handled after the delay too).
    Latency { delay: Nanos },
    /// Answer nothing; close the connection after `max` (always bounded: kubectl and the
    /// Python client have no default timeout).
    Hang { max: Nanos },
    /// Close the connection without an answer (EOF).
    Close,
    /// Reset the connection (RST) without an answer.
    Reset,
    /// Answer this status with the API server's body for it, optionally with `Retry-After`.
    Status { code: u16, retry_after: Option<Nanos>, message: Option<String> },
}

impl Action {
    pub fn name(&self) -> &'static str {
        match self {
            Action::Latency { .. } => "latency",
            Action::Hang { .. } => "hang",
            Action::Close => "close",
            Action::Reset => "reset",
            Action::Status { .. } => "status",
        }
    }

    /// For the record: `{"kind": "status", "code": 500, …}`.
    pub fn to_json(&self) -> Value {
        match self {
            Action::Latency { delay } => json!({"kind": "latency", "delay": format_duration(*delay)}),
            Action::Hang { max } => json!({"kind": "hang", "max": format_duration(*max)}),
            Action::Close => json!({"kind": "close"}),
            Action::Reset => json!({"kind": "reset"}),
            Action::Status { code, retry_after, .. } => {
                json!({"kind": "status", "code": code, "retry_after": retry_after.map(format_duration)})
            }
        }
    }
}

/// One fault rule, as a file's `[[serve.faults]]` or the admin endpoint's JSON give it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleDoc {
    /// The identity (kubeconfig user) it hits; `*` or absent: every identity.
    #[serde(default)]
    pub client: Option<String>,
    /// `status`, `latency`, `hang`, `close`, `reset`, or `partition` (every request of the
    /// client hangs, or with `mode = "refuse"` is reset, while the rule lasts).
    pub kind: String,
    /// From the server's start (file) or from now (admin endpoint); default at once.
    #[serde(default)]
    pub at: Option<String>,
    /// How long the rule lasts; default for ever (or, with `count`, until it has hit).
    #[serde(default)]
    pub duration: Option<String>,
    /// Only requests that impersonate this user (`kubectl --as NAME`: the `Impersonate-User`
    /// header), a second key beside the token's identity.
    #[serde(default)]
    pub impersonate: Option<String>,
    /// Only requests whose User-Agent contains this text (`kubectl/v1.32`, `OpenAPI-Generator`).
    #[serde(default)]
    pub user_agent: Option<String>,
    /// Only this verb: get, list, watch, create, update, patch, delete.
    #[serde(default)]
    pub verb: Option<String>,
    /// Only this resource (`leases`, `configmaps`, …).
    #[serde(default)]
    pub resource: Option<String>,
    /// Only the client's `nth` matching request (1 = its first), counted per rule.
    #[serde(default)]
    pub nth: Option<u64>,
    /// At most this many requests.
    #[serde(default)]
    pub count: Option<u64>,
    /// Chance that a matching request is hit, drawn per (identity, request number).
    #[serde(default)]
    pub probability: Option<f64>,
    #[serde(default)]
    pub code: Option<u16>,
    #[serde(default)]
    pub retry_after: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    /// Latency's delay.
    #[serde(default)]
    pub delay: Option<String>,
    /// Hang's (and a hanging partition's) longest wait before the connection is closed.
    #[serde(default)]
    pub max: Option<String>,
    /// A partition's mode: `hang` (default) or `refuse`.
    #[serde(default)]
    pub mode: Option<String>,
}

/// A checked rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub client: Option<String>,
    pub impersonate: Option<String>,
    pub user_agent: Option<String>,
    pub from: Nanos,
    pub until: Option<Nanos>,
    pub verb: Option<String>,
    pub resource: Option<String>,
    pub nth: Option<u64>,
    pub count: Option<u64>,
    pub probability: f64,
    pub action: Action,
    /// Which rule it is (its place in the book), for its own random stream.
    pub index: usize,
}

/// The longest hang leasesim allows: a hung request always ends.
pub const MAX_HANG: Nanos = 3600 * 1_000_000_000;
const DEFAULT_HANG: Nanos = 20 * 1_000_000_000;
const VERBS: [&str; 7] = ["get", "list", "watch", "create", "update", "patch", "delete"];
const STATUS_CODES: [u16; 8] = [400, 403, 404, 409, 429, 500, 503, 504];

fn duration(key: &str, text: &Option<String>) -> Result<Option<Nanos>, String> {
    text.as_deref().map(|t| sim_core::time::parse_duration(t).map_err(|e| format!("{key}: {e}"))).transpose()
}

impl RuleDoc {
    /// Checks the rule; `now` is when it was given (0 for a file's rules).
    pub fn check(&self, index: usize, now: Nanos) -> Result<Rule, String> {
        let at = duration("at", &self.at)?.unwrap_or(0);
        let from = now.saturating_add(at);
        let until = duration("duration", &self.duration)?.map(|d| from.saturating_add(d));
        if let Some(v) = &self.verb
            && !VERBS.contains(&v.as_str())
        {
            return Err(sim_core::scenario::unknown_word("verb", v, &VERBS));
        }
        let probability = self.probability.unwrap_or(1.0);
        if !(0.0..=1.0).contains(&probability) {
            return Err(format!("probability {probability} must be between 0 and 1"));
        }
        if self.nth == Some(0) || self.count == Some(0) {
            return Err("nth and count count from 1".into());
        }
        let hang_max = || -> Result<Nanos, String> {
            let max = duration("max", &self.max)?.unwrap_or(DEFAULT_HANG);
            if max == 0 || max > MAX_HANG {
                return Err(format!("max {} must be above 0 and at most 1h", format_duration(max)));
            }
            Ok(max)
        };
        let action = match self.kind.as_str() {
            "status" => {
                let code = self.code.ok_or("a status fault needs `code`")?;
                if !STATUS_CODES.contains(&code) {
                    return Err(format!(
                        "code {code}: leasesim answers {} with the API server's own bodies",
                        STATUS_CODES.map(|c| c.to_string()).join(", ")
                    ));
                }
                Action::Status {
                    code,
                    retry_after: duration("retry_after", &self.retry_after)?,
                    message: self.message.clone(),
                }
            }
            "latency" => {
                Action::Latency { delay: duration("delay", &self.delay)?.ok_or("a latency fault needs `delay`")? }
            }
            "hang" => Action::Hang { max: hang_max()? },
            "close" => Action::Close,
            "reset" => Action::Reset,
            "partition" => match self.mode.as_deref().unwrap_or("hang") {
                "hang" => Action::Hang { max: hang_max()? },
                "refuse" => Action::Reset,
                other => return Err(format!("unknown partition mode {other:?}; expected hang or refuse")),
            },
            other => {
                return Err(sim_core::scenario::unknown_word(
                    "fault kind",
                    other,
                    &["status", "latency", "hang", "close", "reset", "partition"],
                ));
            }
        };
        if self.kind != "partition" && self.mode.is_some() {
            return Err("`mode` applies to a partition".into());
        }
        Ok(Rule {
            client: self.client.clone().filter(|c| c != "*"),
            impersonate: self.impersonate.clone(),
            user_agent: self.user_agent.clone(),
            from,
            until,
            verb: self.verb.clone(),
            resource: self.resource.clone(),
            nth: self.nth,
            count: self.count,
            probability,
            action,
            index,
        })
    }
}

/// What a request is, for matching.
#[derive(Clone, Copy, Debug)]
pub struct Seen<'a> {
    pub identity: &'a str,
    /// The `Impersonate-User` header, if any.
    pub impersonate: Option<&'a str>,
    pub user_agent: &'a str,
    pub verb: &'a str,
    pub resource: &'a str,
    pub now: Nanos,
}

/// The rules in force and what they have hit, per identity.
#[derive(Debug, Default)]
pub struct FaultBook {
    seed: u64,
    rules: Vec<Rule>,
    /// Per (rule, identity): matching requests seen, and hits so far.
    counts: std::collections::BTreeMap<(usize, String), (u64, u64)>,
}

impl FaultBook {
    pub fn new(seed: u64) -> FaultBook {
        FaultBook { seed, ..FaultBook::default() }
    }

    pub fn add(&mut self, doc: &RuleDoc, now: Nanos) -> Result<&Rule, String> {
        let rule = doc.check(self.rules.len(), now)?;
        self.rules.push(rule);
        Ok(self.rules.last().expect("just pushed"))
    }

    /// Ends every rule (the admin's "clear").
    pub fn clear(&mut self, now: Nanos) {
        for r in &mut self.rules {
            r.until = Some(r.until.map_or(now, |u| u.min(now)));
        }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The fault this request gets, if any: the first rule in force that matches it and
    /// decides to hit it. `request_number` is the identity's own count of requests (from 1).
    pub fn decide(&mut self, seen: Seen, request_number: u64) -> Option<(usize, Action)> {
        for rule in &self.rules {
            let active = seen.now >= rule.from && rule.until.is_none_or(|u| seen.now < u);
            let matches = active
                && rule.client.as_deref().is_none_or(|c| c == seen.identity)
                && rule.impersonate.as_deref().is_none_or(|u| Some(u) == seen.impersonate)
                && rule.user_agent.as_deref().is_none_or(|a| seen.user_agent.contains(a))
                && rule.verb.as_deref().is_none_or(|v| v == seen.verb)
                && rule.resource.as_deref().is_none_or(|r| r == seen.resource);
            if !matches {
                continue;
            }
            let entry = self.counts.entry((rule.index, seen.identity.to_string())).or_default();
            entry.0 += 1;
            let nth = entry.0;
            if rule.nth.is_some_and(|n| n != nth) || rule.count.is_some_and(|c| entry.1 >= c) {
                continue;
            }
            if rule.probability < 1.0 {
                // A stream per (rule, identity), drawn at the identity's request number.
                let key = format!("serve/fault/{}/{}/{request_number}", rule.index, seen.identity);
                if ComponentRng::new(self.seed, &key).unit_f64() >= rule.probability {
                    continue;
                }
            }
            entry.1 += 1;
            return Some((rule.index, rule.action.clone()));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(json: &str) -> RuleDoc {
        serde_json::from_str(json).expect("a rule")
    }

    fn seen<'a>(identity: &'a str, verb: &'a str) -> Seen<'a> {
        Seen { identity, impersonate: None, user_agent: "", verb, resource: "leases", now: 0 }
    }

    #[test]
    fn the_nth_request_of_one_identity_is_hit_whatever_the_others_do() {
        let mut book = FaultBook::new(1);
        book.add(&rule(r#"{"client": "A", "kind": "status", "code": 409, "verb": "update", "nth": 3}"#), 0).unwrap();
        let mut hits = Vec::new();
        for n in 1..=5 {
            // B's requests in between change nothing for A.
            assert_eq!(book.decide(seen("B", "update"), n), None);
            hits.push(book.decide(seen("A", "update"), n).is_some());
        }
        assert_eq!(hits, [false, false, true, false, false]);
    }

    /// `Impersonate-User` and the User-Agent narrow a rule; the count stays the identity's.
    #[test]
    fn impersonation_and_user_agent_are_second_keys() {
        let mut book = FaultBook::new(1);
        book.add(&rule(r#"{"client": "admin", "kind": "close", "impersonate": "B", "user_agent": "kubectl/"}"#), 0)
            .unwrap();
        let with = |impersonate, user_agent| Seen { impersonate, user_agent, ..seen("admin", "get") };
        assert_eq!(book.decide(with(None, "kubectl/v1.32.0 (linux/amd64) kubernetes/abc"), 1), None);
        assert_eq!(book.decide(with(Some("B"), "OpenAPI-Generator/37.0.2/python"), 2), None);
        assert!(book.decide(with(Some("B"), "kubectl/v1.32.0 (linux/amd64) kubernetes/abc"), 3).is_some());
    }

    #[test]
    fn a_random_rule_draws_per_identity_and_request_number() {
        let decide_all = |order: &[&str]| {
            let mut book = FaultBook::new(7);
            book.add(&rule(r#"{"kind": "close", "probability": 0.5}"#), 0).unwrap();
            let mut numbers = std::collections::BTreeMap::new();
            let mut hits = std::collections::BTreeSet::new();
            for id in order {
                let n = numbers.entry(*id).and_modify(|n| *n += 1).or_insert(1u64);
                if book.decide(seen(id, "get"), *n).is_some() {
                    hits.insert((id.to_string(), *n));
                }
            }
            hits
        };
        let a = decide_all(&["A", "B", "A", "A", "B", "B", "A", "B"]);
        let b = decide_all(&["B", "B", "B", "A", "A", "B", "A", "A"]);
        assert_eq!(a, b, "the same (identity, number) pairs are hit in any interleaving");
        assert!(!a.is_empty() && a.len() < 8);
    }

    #[test]
    fn rules_are_checked_with_their_keys() {
        assert!(rule(r#"{"kind": "hang", "max": "2h"}"#).check(0, 0).unwrap_err().contains("at most 1h"));
        assert!(rule(r#"{"kind": "status"}"#).check(0, 0).unwrap_err().contains("needs `code`"));
        assert!(rule(r#"{"kind": "explode"}"#).check(0, 0).unwrap_err().contains("unknown fault kind"));
        let p =
            rule(r#"{"kind": "partition", "mode": "refuse", "client": "A", "duration": "5s"}"#).check(0, 0).unwrap();
        assert_eq!((p.action, p.until), (Action::Reset, Some(5_000_000_000)));
        assert!(serde_json::from_str::<RuleDoc>(r#"{"kind": "close", "colour": 1}"#).is_err());
    }
}
