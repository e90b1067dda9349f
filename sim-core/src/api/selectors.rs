//! Label and field selectors of a list or watch (`?labelSelector=`, `?fieldSelector=`), as the
//! API server parses and applies them: apimachinery `pkg/labels/selector.go` (`Parse`) and
//! `pkg/fields/selector.go` (`ParseSelector`), and the field labels each kind's registry
//! supports (`GetAttrs`/`ToSelectableFields`, docs/sources/apiserver-wire.md).

use serde_json::Value;

use super::errors::ApiError;
use super::types::Kind;

/// A parsed label selector: every requirement must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum LabelRequirement {
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

impl LabelSelector {
    /// `labels.Parse`: `a=b,c!=d,e in (f,g),h notin (i),j,!k`.
    pub fn parse(text: &str) -> Result<LabelSelector, ApiError> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(
                parse_requirement(part)
                    .map_err(|m| ApiError::bad_request(format!("unable to parse requirement: {m}")))?,
            );
        }
        Ok(LabelSelector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels").and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| match r {
            LabelRequirement::Exists(k) => get(k).is_some(),
            LabelRequirement::NotExists(k) => get(k).is_none(),
            LabelRequirement::In(k, values) => get(k).is_some_and(|v| values.iter().any(|x| x == v)),
            LabelRequirement::NotIn(k, values) => get(k).is_none_or(|v| values.iter().all(|x| x != v)),
        })
    }
}

/// Splits at commas outside parentheses (`in (a,b)` keeps its list).
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(part: &str) -> Result<LabelRequirement, String> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(LabelRequirement::NotExists(check_key(key.trim())?));
    }
    for (op, negate) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((key, value)) = part.split_once(op) {
            let (key, value) = (check_key(key.trim())?, value.trim().to_string());
            return Ok(if negate {
                LabelRequirement::NotIn(key, vec![value])
            } else {
                LabelRequirement::In(key, vec![value])
            });
        }
    }
    for (op, negate) in [(" notin ", true), (" in ", false)] {
        if let Some((key, rest)) = part.split_once(op) {
            let rest = rest.trim();
            let inner = rest
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| format!("found '{rest}', expected: '('"))?;
            let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
            let key = check_key(key.trim())?;
            return Ok(if negate { LabelRequirement::NotIn(key, values) } else { LabelRequirement::In(key, values) });
        }
    }
    Ok(LabelRequirement::Exists(check_key(part)?))
}

fn check_key(key: &str) -> Result<String, String> {
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(format!("found '{key}', expected: identifier"));
    }
    Ok(key.to_string())
}

/// A parsed field selector: `a=b,c!=d` over the field labels a kind supports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// `fields.ParseSelector`, then each field checked against what `kind` supports (the
    /// registry's error: `field label not supported: <field>`).
    pub fn parse(text: &str, kind: Kind) -> Result<FieldSelector, ApiError> {
        let mut terms = Vec::new();
        for part in text.split(',') {
            if part.is_empty() {
                continue;
            }
            let (field, equal, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(ApiError::bad_request(format!("invalid selector: '{text}'; can't understand '{part}'")));
            };
            if !supported_field(kind, field) {
                // Kinds with their own conversion say "not supported"; the rest use the
                // default metav1 conversion's words (docs/sources/apiserver-wire.md §9).
                return Err(ApiError::bad_request(match kind {
                    Kind::Event | Kind::Namespace => format!("field label not supported: {field}"),
                    _ => format!(
                        "\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                    ),
                }));
            }
            terms.push((field.to_string(), equal, value.to_string()));
        }
        Ok(FieldSelector { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The value `metadata.name=<name>` asks for, if it is one of the terms.
    pub fn name(&self) -> Option<&str> {
        self.terms.iter().find(|(f, eq, _)| f == "metadata.name" && *eq).map(|(_, _, v)| v.as_str())
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|(field, equal, value)| {
            let actual = field_value(object, field);
            (actual == *value) == *equal
        })
    }
}

/// The field labels a kind's registry selects on: every kind's `metadata.name` and
/// `metadata.namespace`; an Event's involvedObject, reason, source, type and more.
fn supported_field(kind: Kind, field: &str) -> bool {
    if kind == Kind::Namespace {
        return matches!(field, "metadata.name" | "status.phase");
    }
    if matches!(field, "metadata.name" | "metadata.namespace") {
        return true;
    }
    match kind {
        Kind::Event => matches!(
            field,
            "involvedObject.kind"
                | "involvedObject.namespace"
                | "involvedObject.name"
                | "involvedObject.uid"
                | "involvedObject.apiVersion"
                | "involvedObject.resourceVersion"
                | "involvedObject.fieldPath"
                | "reason"
                | "reportingComponent"
                | "source"
                | "type"
        ),
        _ => false,
    }
}

/// A field's value as the registry's selectable fields give it (absent: `""`).
fn field_value(object: &Value, field: &str) -> String {
    if field == "source" {
        // `source.component`, or `reportingController` when that is empty.
        let component = object.pointer("/source/component").and_then(Value::as_str).unwrap_or_default();
        let reporting = object.pointer("/reportingController").and_then(Value::as_str).unwrap_or_default();
        return if component.is_empty() { reporting.to_string() } else { component.to_string() };
    }
    let pointer = match field {
        "reportingComponent" => "/reportingController".to_string(),
        other => format!("/{}", other.replace('.', "/")),
    };
    match object.pointer(&pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_parse_and_match_as_the_apiserver_does() {
        let object = json!({"metadata": {"labels": {"app": "op", "tier": "ctl"}}});
        for (text, want) in [
            ("", true),
            ("app=op", true),
            ("app==op", true),
            ("app!=op", false),
            ("app in (x,op)", true),
            ("app notin (x,op)", false),
            ("tier,app=op", true),
            ("!tier", false),
            ("missing", false),
            ("!missing", true),
            ("missing!=x", true),
        ] {
            assert_eq!(LabelSelector::parse(text).unwrap().matches(&object), want, "{text:?}");
        }
        assert_eq!(LabelSelector::parse("app in x").unwrap_err().code, 400);
    }

    #[test]
    fn field_selectors_check_the_kinds_labels() {
        let event = json!({"involvedObject": {"kind": "Lease", "name": "w"}, "metadata": {"name": "e1"}});
        let s = FieldSelector::parse("involvedObject.kind=Lease,involvedObject.name=w", Kind::Event).unwrap();
        assert!(s.matches(&event));
        assert!(!FieldSelector::parse("metadata.name!=e1", Kind::Event).unwrap().matches(&event));
        let e = FieldSelector::parse("spec.holderIdentity=a", Kind::Lease).unwrap_err();
        assert_eq!(
            e.message,
            "\"spec.holderIdentity\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        let e = FieldSelector::parse("spec.x=a", Kind::Event).unwrap_err();
        assert_eq!(e.message, "field label not supported: spec.x");
        assert_eq!(FieldSelector::parse("metadata.name=w", Kind::Lease).unwrap().name(), Some("w"));
    }
}
