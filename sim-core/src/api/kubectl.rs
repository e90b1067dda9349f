//! What kubectl prints for objects (apiserver.md §7): `kubectl get -o yaml` through
//! sigs.k8s.io/yaml (JSON → sorted map → go-yaml v2), and the full JSON of a response object.

use serde_json::Value;

use super::object::{Object, object_json};
use super::types::Kind;

/// The full wire JSON of a response object, with `kind` and `apiVersion`.
pub fn to_json(obj: &Object) -> Value {
    match obj {
        Object::Lease(lease) => object_json(Kind::Lease, lease.as_ref()),
        Object::ConfigMap(cm) => object_json(Kind::ConfigMap, cm.as_ref()),
        Object::LeaseCandidate(c) => object_json(Kind::LeaseCandidate, c.as_ref()),
        Object::Json(value) => value.clone(),
        Object::JsonKind(kind, o) => object_json(*kind, o.as_ref()),
        Object::Deleted => Value::Null,
    }
}

/// [`to_json`] serialised, the same bytes as `serde_json::to_vec(&to_json(obj))`, without the
/// tree of values between (an HTTP answer's body).
pub fn to_json_bytes(obj: &Object) -> Vec<u8> {
    match obj {
        Object::Lease(lease) => super::object::object_bytes(Kind::Lease, lease.as_ref()),
        Object::ConfigMap(cm) => super::object::object_bytes(Kind::ConfigMap, cm.as_ref()),
        Object::LeaseCandidate(c) => super::object::object_bytes(Kind::LeaseCandidate, c.as_ref()),
        Object::Json(value) => serde_json::to_vec(value).expect("JSON serialises"),
        Object::JsonKind(kind, o) => super::object::object_bytes(*kind, o.as_ref()),
        Object::Deleted => b"null".to_vec(),
    }
}

/// `kubectl patch` success line: `lease.coordination.k8s.io/NAME patched` or `… patched (no change)`.
pub fn kubectl_patched_stdout(kind: Kind, name: &str, changed: bool) -> String {
    format!("{}/{name} patched{}", kind.kubectl_singular(), if changed { "" } else { " (no change)" })
}

/// `kubectl apply --server-side` success line: `configmap/order-1 serverside-applied`.
pub fn kubectl_serverside_applied_stdout(kind: Kind, name: &str) -> String {
    format!("{}/{name} serverside-applied", kind.kubectl_singular())
}

/// `kubectl auth can-i`: stdout and exit code (`yes` 0, `no` 1; RBAC gives no deny reason).
pub fn kubectl_auth_can_i(allowed: bool) -> (&'static str, i32) {
    if allowed { ("yes", 0) } else { ("no", 1) }
}

/// `kubectl get -o yaml` (v1.21+): keys sorted at every level, 2-space indentation, lists not
/// indented under their key, `metadata.managedFields` hidden, strings that YAML would read as
/// something else (timestamps, numbers, booleans, empty) double-quoted. Ends with a newline.
pub fn kubectl_yaml(obj: &Value) -> String {
    let mut shown = obj.clone();
    if let Some(Value::Object(meta)) = shown.get_mut("metadata") {
        meta.shift_remove("managedFields");
    }
    let mut out = String::new();
    match &shown {
        Value::Object(_) | Value::Array(_) => write_block(&mut out, &shown, 0),
        scalar => {
            out.push_str(&scalar_text(scalar));
            out.push('\n');
        }
    }
    out
}

fn write_block(out: &mut String, value: &Value, indent: usize) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                let child = &map[key];
                out.push_str(&pad);
                out.push_str(&yaml_string(key));
                out.push(':');
                match child {
                    Value::Object(m) if !m.is_empty() => {
                        out.push('\n');
                        write_block(out, child, indent + 2);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push('\n');
                        write_block(out, child, indent);
                    }
                    scalar => {
                        out.push(' ');
                        out.push_str(&scalar_text(scalar));
                        out.push('\n');
                    }
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                out.push_str(&pad);
                out.push('-');
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        // The first key shares the dash's line; the rest align under it.
                        let mut nested = String::new();
                        write_block(&mut nested, item, indent + 2);
                        out.push(' ');
                        out.push_str(&nested[indent + 2..]);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        let mut nested = String::new();
                        write_block(&mut nested, item, indent + 2);
                        out.push(' ');
                        out.push_str(&nested[indent + 2..]);
                    }
                    scalar => {
                        out.push(' ');
                        out.push_str(&scalar_text(scalar));
                        out.push('\n');
                    }
                }
            }
        }
        scalar => {
            out.push_str(&pad);
            out.push_str(&scalar_text(scalar));
            out.push('\n');
        }
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => yaml_string(s),
        Value::Object(_) => "{}".to_string(),
        Value::Array(_) => "[]".to_string(),
    }
}

/// go-yaml v2 `encode.go` stringv plus the emitter's style choice: double quotes when a plain
/// scalar would resolve to another type; single quotes when plain is not allowed.
fn yaml_string(s: &str) -> String {
    if s.contains('\n') || s.chars().any(|c| c.is_control()) || resolves_to_non_string(s) {
        return double_quoted(s);
    }
    if plain_allowed(s) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "''"))
}

fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// yaml.v2 `resolve`: booleans (YAML 1.1 spellings), null, numbers, timestamps.
fn resolves_to_non_string(s: &str) -> bool {
    const WORDS: [&str; 27] = [
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True",
        "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
    ];
    if WORDS.contains(&s) {
        return true;
    }
    let plain = s.replace('_', "");
    let unsigned = plain.trim_start_matches(['+', '-']);
    let is_number = plain.parse::<i64>().is_ok()
        || (plain.parse::<f64>().is_ok()
            && !unsigned.eq_ignore_ascii_case("inf")
            && !unsigned.eq_ignore_ascii_case("infinity")
            && !unsigned.eq_ignore_ascii_case("nan"))
        || [".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"].contains(&unsigned)
        || ["0x", "0b", "0o"].iter().any(|p| {
            unsigned.starts_with(p)
                && unsigned.len() > 2
                && i64::from_str_radix(
                    &unsigned[2..],
                    if *p == "0x" {
                        16
                    } else if *p == "0b" {
                        2
                    } else {
                        8
                    },
                )
                .is_ok()
        });
    is_number || looks_like_timestamp(s)
}

/// yaml.v2 timestamp formats: `2006-1-2`, optionally followed by `T`/`t`/space and a time.
fn looks_like_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let rest = &s[5..];
    let (date, time) = match rest.find(['T', 't', ' ']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut parts = date.split('-');
    let ok_num =
        |p: Option<&str>| p.is_some_and(|p| (1..=2).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()));
    if !(ok_num(parts.next()) && ok_num(parts.next()) && parts.next().is_none()) {
        return false;
    }
    time.is_none_or(|t| t.len() >= 5 && t.as_bytes()[0].is_ascii_digit())
}

/// The emitter's plain-scalar test for block context.
fn plain_allowed(s: &str) -> bool {
    if s.is_empty() || s.starts_with(' ') || s.ends_with(' ') || s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_space = chars.get(i + 1).is_none_or(|n| n.is_whitespace());
        let preceded_by_space = i > 0 && chars[i - 1].is_whitespace();
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%' | '@' | '`' => {
                    return false;
                }
                '?' | ':' | '-' if followed_by_space => return false,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_space => return false,
                '#' if preceded_by_space => return false,
                _ => {}
            }
        }
    }
    true
}

#[cfg(test)]
mod bytes_tests {
    use super::*;
    use crate::api::types::{Lease, LeaseSpec};
    use std::sync::Arc;

    #[test]
    fn bytes_are_the_json_values_bytes() {
        let mut lease = Lease::default();
        lease.metadata.name = "w".into();
        lease.spec =
            LeaseSpec { holder_identity: Some("a\"b".into()), lease_duration_seconds: Some(15), ..Default::default() };
        for obj in [Object::Lease(Arc::new(lease)), Object::Lease(Arc::new(Lease::default()))] {
            assert_eq!(to_json_bytes(&obj), serde_json::to_vec(&to_json(&obj)).unwrap());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn get_lease_yaml_matches_the_real_transcript_byte_for_byte() {
        let lease = json!({
            "kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
            "metadata": {"name": "datadog-operator-lock", "namespace": "datadog-agent", "uid": "296995da-eac4-4b15-b989-0a9a87591b1e",
                "resourceVersion": "163524", "creationTimestamp": "2025-09-09T18:51:59Z",
                "managedFields": [{"manager": "x", "operation": "Update"}]},
            "spec": {"holderIdentity": "datadog-datadog-operator-749847cdfc-p52tr_5dd9cd6b-db08-491d-846d-707dca1fc53b",
                "leaseDurationSeconds": 60, "acquireTime": "2025-09-10T18:54:49.377568Z", "renewTime": "2025-09-10T18:57:04.437106Z",
                "leaseTransitions": 10}
        });
        let expected = "apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  creationTimestamp: \"2025-09-09T18:51:59Z\"
  name: datadog-operator-lock
  namespace: datadog-agent
  resourceVersion: \"163524\"
  uid: 296995da-eac4-4b15-b989-0a9a87591b1e
spec:
  acquireTime: \"2025-09-10T18:54:49.377568Z\"
  holderIdentity: datadog-datadog-operator-749847cdfc-p52tr_5dd9cd6b-db08-491d-846d-707dca1fc53b
  leaseDurationSeconds: 60
  leaseTransitions: 10
  renewTime: \"2025-09-10T18:57:04.437106Z\"
";
        assert_eq!(kubectl_yaml(&lease), expected);
    }

    #[test]
    fn released_lease_shows_an_empty_quoted_holder_and_lists_sit_under_their_key() {
        let v = json!({"spec": {"holderIdentity": "", "leaseDurationSeconds": 1}, "rules": [{"verbs": ["get", "update"], "apiGroups": ["coordination.k8s.io"]}]});
        assert_eq!(
            kubectl_yaml(&v),
            "rules:\n- apiGroups:\n  - coordination.k8s.io\n  verbs:\n  - get\n  - update\nspec:\n  holderIdentity: \"\"\n  leaseDurationSeconds: 1\n"
        );
    }

    #[test]
    fn yaml_quotes_what_would_not_read_back_as_a_string() {
        assert_eq!(yaml_string("true"), "\"true\"");
        assert_eq!(yaml_string("123"), "\"123\"");
        assert_eq!(yaml_string("1.5"), "\"1.5\"");
        assert_eq!(yaml_string("a: b"), "'a: b'");
        assert_eq!(yaml_string("#x"), "'#x'");
        assert_eq!(yaml_string("node-1_abc"), "node-1_abc");
        assert_eq!(yaml_string("app.kubernetes.io/name"), "app.kubernetes.io/name");
    }
}
