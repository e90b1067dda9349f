//! Tools for real Lease dumps (`kubectl get lease -A -o yaml`, a single Lease, a `List`, JSON or
//! YAML): `expiry` classifies each Lease as LIVE or EXPIRED the naive way, `audit` prints one
//! stable line per Lease and can flag suspicious ones. Both read every input completely before
//! printing anything, so bad input produces an error naming file, object and field, and no output.

use std::path::Path;

use serde_json::Value;
use sim_core::api::{MicroTime, Time};
use sim_core::time::{NANOS_PER_SEC, Nanos, UnixNanos, days_from_civil};

/// Printed (on stderr) by `expiry`: the rule it applies is not the one leader electors use.
pub const NAIVE_RULE_NOTE: &str = "note: this is the naive rule: a Lease is LIVE while renewTime + leaseDurationSeconds is after \
now on THIS machine's clock, so it is only as right as the writer's clock and this one agree. \
client-go does not compare renewTime with any clock: each candidate remembers when it last saw \
the record change (observedTime, on its own monotonic clock) and treats the lease as expired \
only once observedTime + the observed record's leaseDurationSeconds has passed.";

/// `audit --flag`: a Lease is flagged for many transitions only with at least this many...
pub const MANY_TRANSITIONS_MIN: i64 = 3;
/// ...and more than this many per hour of its age (one holder change every 10 minutes,
/// sustained). With the 15 s / 10 s / 2 s defaults a healthy Lease changes holder only when a
/// holder dies or is rolled; a steady climb points at clock skew, API latency or a crash loop.
pub const MANY_TRANSITIONS_PER_HOUR: i64 = 6;

/// The fields of one Lease the tools use, read strictly from a dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseRecord {
    /// The file it came from, as given on the command line.
    pub source: String,
    /// `""` when the dump carries no `metadata.namespace`.
    pub namespace: String,
    pub name: String,
    /// `None` when `spec.holderIdentity` is absent.
    pub holder: Option<String>,
    pub lease_duration_seconds: i64,
    pub renew_time: MicroTime,
    pub acquire_time: Option<MicroTime>,
    /// Absent reads as 0, as client-go's `LeaseSpecToLeaderElectionRecord` reads it.
    pub lease_transitions: i64,
    pub creation_timestamp: Option<Time>,
}

impl LeaseRecord {
    /// `renewTime + leaseDurationSeconds`: the instant after which the naive rule calls it expired.
    pub fn naive_expiry(&self) -> UnixNanos {
        self.renew_time.unix_nanos().saturating_add(self.lease_duration_seconds.saturating_mul(NANOS_PER_SEC as i64))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Live,
    Expired,
}

impl Liveness {
    pub fn as_str(self) -> &'static str {
        match self {
            Liveness::Live => "LIVE",
            Liveness::Expired => "EXPIRED",
        }
    }

    pub fn parse(text: &str) -> Option<Liveness> {
        match text {
            "LIVE" => Some(Liveness::Live),
            "EXPIRED" => Some(Liveness::Expired),
            _ => None,
        }
    }
}

/// LIVE while `renewTime + leaseDurationSeconds` is strictly after `now` (client-go's
/// `isLeaseValid` uses `After` too, only on its observedTime).
pub fn classify(lease: &LeaseRecord, now: UnixNanos) -> Liveness {
    if lease.naive_expiry() > now { Liveness::Live } else { Liveness::Expired }
}

/// The machine's clock, for the tools' default `now` and the lab's default epoch.
pub fn machine_now() -> UnixNanos {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since_epoch.as_nanos()).unwrap_or(i64::MAX)
}

/// RFC 3339 with an optional fraction of up to nine digits and a `Z` or `±hh:mm` zone:
/// `2026-01-01T00:00:00Z`, `2026-01-01T09:00:00.5+09:00`.
pub fn parse_rfc3339(text: &str) -> Result<UnixNanos, String> {
    let bad = || format!("{text:?} is not an RFC 3339 time such as \"2026-01-01T00:00:00Z\"");
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let number = |range: std::ops::Range<usize>| -> Result<i64, String> {
        let part = text.get(range).ok_or_else(bad)?;
        if part.bytes().all(|c| c.is_ascii_digit()) { part.parse().map_err(|_| bad()) } else { Err(bad()) }
    };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 59 {
        return Err(bad());
    }
    let mut rest = &text[19..];
    let mut fraction_nanos = 0i64;
    if let Some(after_dot) = rest.strip_prefix('.') {
        let digits = after_dot.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return Err(bad());
        }
        let padded = format!("{:0<9}", &after_dot[..digits]);
        fraction_nanos = padded.parse().map_err(|_| bad())?;
        rest = &after_dot[digits..];
    }
    let offset_secs = match rest {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && matches!(&zone[..1], "+" | "-") && &zone[3..4] == ":" => {
            let hours: i64 = zone[1..3].parse().map_err(|_| bad())?;
            let minutes: i64 = zone[4..6].parse().map_err(|_| bad())?;
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            sign * (hours * 3600 + minutes * 60)
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(year, month as u32, day as u32);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    // A valid time that nanoseconds since 1970 in 64 bits cannot hold (before 1677-09-21 or
    // after 2262-04-11): say so, not that the text is malformed.
    secs.checked_mul(NANOS_PER_SEC as i64)
        .and_then(|n| n.checked_add(fraction_nanos))
        .ok_or_else(|| format!("{text:?} is outside the times leasesim can represent (1677-09-21 to 2262-04-11, UTC)"))
}

/// Reads every file; the first bad one stops everything (nothing is printed by the callers).
pub fn read_lease_files<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<LeaseRecord>, String> {
    let mut leases = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let label = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{label}: cannot read: {e}"))?;
        leases.extend(parse_lease_documents(&label, &text)?);
    }
    Ok(leases)
}

/// The Leases in one file's text: YAML (one or more `---` documents) or JSON; each document a
/// Lease, a `LeaseList` or a `List` of Leases. Errors read `<file>: <object>: <field>: <problem>`.
pub fn parse_lease_documents(file: &str, text: &str) -> Result<Vec<LeaseRecord>, String> {
    let documents = parse_documents(file, text)?;
    let several = documents.len() > 1;
    let mut leases = Vec::new();
    for (index, document) in documents.iter().enumerate() {
        let where_ = if several { format!("document {}", index + 1) } else { String::new() };
        leases.extend(leases_of_document(file, &where_, document)?);
    }
    if leases.is_empty() && !documents.iter().any(is_list) {
        return Err(format!("{file}: no Lease found (expected a Lease, a LeaseList or a List of Leases)"));
    }
    Ok(leases)
}

fn parse_documents(file: &str, text: &str) -> Result<Vec<Value>, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("{file}: not a Lease: invalid JSON: {e}"))?;
        return Ok(vec![value]);
    }
    // Depth-bounded before parsing: a deeply nested flow sequence is quadratic in the parser.
    crate::yaml::documents(text).map_err(|e| format!("{file}: not a Lease: invalid YAML: {e}"))
}

fn is_list(document: &Value) -> bool {
    document.get("kind").and_then(Value::as_str).is_some_and(|k| k == "List" || k == "LeaseList")
}

/// `Lease "ns/name"`, with the position in front when there is one.
fn describe(position: &str, kind: &str, object: &Value) -> String {
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
    let kind = if kind.is_empty() { "object" } else { kind };
    let who = match (namespace, name) {
        (_, "") => format!("{kind} without a name"),
        ("", name) => format!("{kind} {name:?}"),
        (ns, name) => format!("{kind} \"{ns}/{name}\""),
    };
    if position.is_empty() { who } else { format!("{position} ({who})") }
}

fn leases_of_document(file: &str, position: &str, document: &Value) -> Result<Vec<LeaseRecord>, String> {
    let Value::Object(_) = document else {
        let at = if position.is_empty() { "the document" } else { position };
        return Err(format!(
            "{file}: {at}: kind: expected a Lease, a LeaseList or a List, found {}",
            type_name(document)
        ));
    };
    let kind = document.get("kind").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "Lease" => Ok(vec![lease_of(file, position, document)?]),
        "List" | "LeaseList" => {
            let items = document.get("items").and_then(Value::as_array).ok_or_else(|| {
                let at = if position.is_empty() { kind.to_string() } else { format!("{position} ({kind})") };
                format!("{file}: {at}: items: missing or not a list")
            })?;
            let mut leases = Vec::new();
            for (index, item) in items.iter().enumerate() {
                let item_position =
                    if position.is_empty() { format!("items[{index}]") } else { format!("{position} items[{index}]") };
                // Items of a typed LeaseList carry no kind of their own; a List's always do.
                let item_kind = match item.get("kind").and_then(Value::as_str) {
                    Some(k) => k,
                    None if kind == "LeaseList" => "Lease",
                    None => "",
                };
                if item_kind != "Lease" {
                    return Err(format!(
                        "{file}: {}: kind: expected Lease, found {}",
                        describe(&item_position, item_kind, item),
                        if item_kind.is_empty() { "no kind".to_string() } else { format!("{item_kind:?}") }
                    ));
                }
                leases.push(lease_of(file, &item_position, item)?);
            }
            Ok(leases)
        }
        "" => Err(format!(
            "{file}: {}: kind: missing (expected Lease, LeaseList or List)",
            describe(position, "", document)
        )),
        other => Err(format!(
            "{file}: {}: kind: expected Lease, LeaseList or List, found {other:?}",
            describe(position, other, document)
        )),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// One Lease, strictly: metadata.name, spec.leaseDurationSeconds (an int32; not checked for > 0,
/// a dump shows what the server holds) and spec.renewTime (a MicroTime) must be there; the other
/// fields are optional but must have the right type when present.
fn lease_of(file: &str, position: &str, object: &Value) -> Result<LeaseRecord, String> {
    let who = describe(position, "Lease", object);
    let fail = |field: &str, problem: String| format!("{file}: {who}: {field}: {problem}");
    let api_version = object.get("apiVersion").and_then(Value::as_str);
    if let Some(version) = api_version
        && version != "coordination.k8s.io/v1"
        && version != "coordination.k8s.io/v1beta1"
    {
        return Err(fail("apiVersion", format!("expected coordination.k8s.io/v1, found {version:?}")));
    }
    let name = match object.pointer("/metadata/name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        Some(Value::String(_)) | None => return Err(fail("metadata.name", "missing".into())),
        Some(other) => return Err(fail("metadata.name", format!("expected a string, found {}", type_name(other)))),
    };
    let namespace = optional_string(object, "/metadata/namespace").map_err(|p| fail("metadata.namespace", p))?;
    let creation_timestamp = match object.pointer("/metadata/creationTimestamp") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(Time::parse(text).map_err(|e| fail("metadata.creationTimestamp", e))?),
        Some(other) => {
            return Err(fail("metadata.creationTimestamp", format!("expected a time, found {}", type_name(other))));
        }
    };
    match object.get("spec") {
        Some(Value::Object(_)) => {}
        None | Some(Value::Null) => return Err(fail("spec", "missing".into())),
        Some(other) => return Err(fail("spec", format!("expected a mapping, found {}", type_name(other)))),
    }
    let holder = optional_string(object, "/spec/holderIdentity").map_err(|p| fail("spec.holderIdentity", p))?;
    let lease_duration_seconds = optional_int32(object, "/spec/leaseDurationSeconds")
        .map_err(|p| fail("spec.leaseDurationSeconds", p))?
        .ok_or_else(|| fail("spec.leaseDurationSeconds", "missing".into()))?;
    let renew_time = optional_micro_time(object, "/spec/renewTime")
        .map_err(|p| fail("spec.renewTime", p))?
        .ok_or_else(|| fail("spec.renewTime", "missing".into()))?;
    let acquire_time = optional_micro_time(object, "/spec/acquireTime").map_err(|p| fail("spec.acquireTime", p))?;
    let lease_transitions =
        optional_int32(object, "/spec/leaseTransitions").map_err(|p| fail("spec.leaseTransitions", p))?.unwrap_or(0);
    Ok(LeaseRecord {
        source: file.to_string(),
        namespace: namespace.unwrap_or_default(),
        name,
        holder,
        lease_duration_seconds,
        renew_time,
        acquire_time,
        lease_transitions,
        creation_timestamp,
    })
}

fn optional_string(object: &Value, pointer: &str) -> Result<Option<String>, String> {
    match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("expected a string, found {}", type_name(other))),
    }
}

fn optional_int32(object: &Value, pointer: &str) -> Result<Option<i64>, String> {
    match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(v) if i32::try_from(v).is_ok() => Ok(Some(v)),
            _ => Err(format!("expected a 32-bit integer, found {n}")),
        },
        Some(other) => Err(format!("expected an integer, found {}", type_name(other))),
    }
}

fn optional_micro_time(object: &Value, pointer: &str) -> Result<Option<MicroTime>, String> {
    match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => MicroTime::parse(text).map(Some).map_err(|e| format!("not a MicroTime: {e}")),
        Some(other) => Err(format!("expected a MicroTime string, found {}", type_name(other))),
    }
}

/// One line of an expectations TSV: `<lease name or ns/name><TAB><LIVE|EXPIRED>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectation {
    pub lease: String,
    pub expected: Liveness,
}

/// Blank lines and `#` comments are skipped; anything else must be two tab-separated columns.
pub fn parse_expectations(file: &str, text: &str) -> Result<Vec<Expectation>, String> {
    let mut expectations = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let columns: Vec<&str> = line.split('\t').collect();
        if columns.len() != 2 || columns[0].trim().is_empty() {
            return Err(format!("{file}: line {line_no}: expected <lease name><TAB><LIVE or EXPIRED>, found {line:?}"));
        }
        let state = columns[1].trim();
        let expected = Liveness::parse(state).ok_or_else(|| {
            format!("{file}: line {line_no} ({}): column 2: expected LIVE or EXPIRED, found {state:?}", columns[0])
        })?;
        expectations.push(Expectation { lease: columns[0].trim().to_string(), expected });
    }
    Ok(expectations)
}

/// What `expiry` prints (stdout lines) and whether any expectation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpiryReport {
    pub lines: Vec<String>,
    pub mismatches: usize,
}

/// Without expectations: `<name> <STATE>` per Lease, in input order. With them, in the TSV's
/// order as the lab's expiry.sh: `OK <name> <STATE>` or `MISMATCH <name> expected=<X> got=<Y>`
/// (`got=MISSING` when no input holds that Lease). A bare name matching Leases in several
/// namespaces is an error: the TSV must say `ns/name`.
pub fn expiry_report(
    leases: &[LeaseRecord],
    now: UnixNanos,
    expectations: Option<&[Expectation]>,
) -> Result<ExpiryReport, String> {
    let qualify = spans_namespaces(leases);
    let Some(expectations) = expectations else {
        let lines =
            leases.iter().map(|lease| format!("{} {}", display_name(lease, qualify), classify(lease, now).as_str()));
        return Ok(ExpiryReport { lines: lines.collect(), mismatches: 0 });
    };
    let mut report = ExpiryReport { lines: Vec::new(), mismatches: 0 };
    for expectation in expectations {
        let matching: Vec<&LeaseRecord> = leases
            .iter()
            .filter(|lease| match expectation.lease.split_once('/') {
                Some((ns, name)) => lease.namespace == ns && lease.name == name,
                None => lease.name == expectation.lease,
            })
            .collect();
        let namespaces: std::collections::BTreeSet<&str> = matching.iter().map(|l| l.namespace.as_str()).collect();
        if namespaces.len() > 1 {
            return Err(format!(
                "expectation {:?} matches Leases in namespaces {}: write it as <namespace>/<name>",
                expectation.lease,
                namespaces.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        let got = matching.first().map(|lease| classify(lease, now).as_str()).unwrap_or("MISSING");
        if got == expectation.expected.as_str() {
            report.lines.push(format!("OK {} {got}", expectation.lease));
        } else {
            report.mismatches += 1;
            report.lines.push(format!(
                "MISMATCH {} expected={} got={got}",
                expectation.lease,
                expectation.expected.as_str()
            ));
        }
    }
    Ok(report)
}

fn spans_namespaces(leases: &[LeaseRecord]) -> bool {
    leases.iter().any(|lease| lease.namespace != leases[0].namespace)
}

/// `name`, or `ns/name` when the input spans namespaces (names alone could then collide).
fn display_name(lease: &LeaseRecord, qualify: bool) -> String {
    if qualify { format!("{}/{}", lease.namespace, lease.name) } else { lease.name.clone() }
}

/// `audit` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuditOptions {
    /// Append ` flags=<reason,…>` to suspicious Leases.
    pub flag: bool,
    /// How far in the future a renewTime may be before its writer's clock is called skewed.
    pub future_tolerance: Nanos,
    pub now: UnixNanos,
}

/// Why `audit --flag` marks a Lease, in the order they are printed.
pub fn audit_flags(lease: &LeaseRecord, options: &AuditOptions) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if lease.holder.as_deref().unwrap_or("").is_empty() {
        flags.push("empty-holder");
    }
    if lease.renew_time.unix_nanos() > options.now.saturating_add(options.future_tolerance as i64) {
        flags.push("renew-in-future");
    }
    if let Some(created) = lease.creation_timestamp {
        let age_secs = (options.now.div_euclid(NANOS_PER_SEC as i64) - created.unix_secs()).max(0);
        // transitions / (age in hours) > MANY_TRANSITIONS_PER_HOUR, in integers.
        if lease.lease_transitions >= MANY_TRANSITIONS_MIN
            && lease.lease_transitions * 3600 > MANY_TRANSITIONS_PER_HOUR * age_secs
        {
            flags.push("many-transitions");
        }
    }
    flags
}

/// `<name> holder=<holder> transitions=<n> duration=<s>` per Lease, sorted, no ages or times.
pub fn audit_lines(leases: &[LeaseRecord], options: &AuditOptions) -> Vec<String> {
    let qualify = spans_namespaces(leases);
    let mut lines: Vec<String> = leases
        .iter()
        .map(|lease| {
            let mut line = format!(
                "{} holder={} transitions={} duration={}",
                display_name(lease, qualify),
                lease.holder.as_deref().unwrap_or(""),
                lease.lease_transitions,
                lease.lease_duration_seconds
            );
            let flags = if options.flag { audit_flags(lease, options) } else { Vec::new() };
            if !flags.is_empty() {
                line.push_str(&format!(" flags={}", flags.join(",")));
            }
            line
        })
        .collect();
    lines.sort();
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 200 kB `[[[[…]]]]` dump took the YAML parser 42–70 s (issue 33); it is refused before
    /// parsing, as JSON and TOML of that depth are.
    #[test]
    fn a_deeply_nested_yaml_dump_is_refused_before_it_is_parsed() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let e = parse_lease_documents("deep.yaml", &format!("a: {deep}\n")).unwrap_err();
        assert!(e.contains("deep.yaml") && e.contains("nested 100000 levels deep"), "{e}");
    }

    #[test]
    fn rfc3339_accepts_fractions_and_offsets() {
        assert_eq!(parse_rfc3339("2026-01-01T00:00:00Z"), Ok(1_767_225_600 * NANOS_PER_SEC as i64));
        assert_eq!(
            parse_rfc3339("2026-01-01T09:00:00.5+09:00"),
            Ok(1_767_225_600 * NANOS_PER_SEC as i64 + 500_000_000)
        );
        assert!(parse_rfc3339("2026-01-01").is_err());
        assert!(parse_rfc3339("2026-13-01T00:00:00Z").is_err());
        // Valid RFC 3339, beyond what 64-bit nanoseconds hold: the message says that.
        for text in ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"] {
            assert!(parse_rfc3339(text).unwrap_err().contains("outside the times leasesim can represent"), "{text}");
        }
    }

    #[test]
    fn a_lease_is_live_until_renew_plus_duration_and_expired_at_it() {
        let text = "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: a\nspec:\n  leaseDurationSeconds: 15\n  renewTime: \"2026-01-01T00:00:00.000000Z\"\n";
        let lease = &parse_lease_documents("a.yaml", text).unwrap()[0];
        let renew = lease.renew_time.unix_nanos();
        assert_eq!(classify(lease, renew + 14 * NANOS_PER_SEC as i64), Liveness::Live);
        assert_eq!(classify(lease, renew + 15 * NANOS_PER_SEC as i64), Liveness::Expired);
    }
}
