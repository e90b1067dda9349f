//! Server-side validation with the real field-error texts (apiserver.md §1; sources:
//! `pkg/apis/coordination/validation/validation.go`, apimachinery `util/validation`).

use super::errors::FieldError;
use super::go_text::go_quote;
use super::object::Stored;
use super::semver::Version;
use super::types::{Kind, LeaseCandidateSpec, LeaseSpec, ObjectMeta};

const DNS1123_SUBDOMAIN_ERROR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL_ERROR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_NAME_ERROR: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(matches_dns1123_label_text)
}

const LABEL_VALUE_ERROR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// apimachinery's `ValidateLabels` for one label (a scenario's `labels` key): the first of the
/// messages `validate_metadata` gives the server's 422 for it.
pub fn check_label(key: &str, value: &str) -> Result<(), String> {
    if let Some(message) = label_key_errors(key).into_iter().next() {
        return Err(format!("label key {key:?}: {message}"));
    }
    if let Some(message) = label_value_errors(value).into_iter().next() {
        return Err(format!("label value {value:?}: {message}"));
    }
    Ok(())
}

/// `metadata.name`: required; a DNS-1123 label for Namespaces, a subdomain otherwise.
pub fn validate_name(kind: Kind, name: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required("metadata.name", "name or generateName is required")];
    }
    // Quoted only for an error: every create and apply passes here.
    let invalid = |detail: &str| vec![FieldError::invalid("metadata.name", &format!("{name:?}"), detail)];
    let each = |details: Vec<String>| {
        details.iter().map(|d| FieldError::invalid("metadata.name", &format!("{name:?}"), d)).collect()
    };
    match kind {
        // RBAC's `minimalNameRequirements` = `path.IsValidPathSegmentName` (k/k
        // pkg/apis/rbac/validation/validation.go@036ae50761:29-31): `:` is fine
        // (`system::leader-locking-kube-scheduler`); docs/sources/kubernetes.md §5.
        Kind::Role | Kind::RoleBinding => return each(path_segment_name(name)),
        // `ValidLeaseCandidateName` = `IsConfigMapKey` (coordination validation.go:83-92):
        // underscores and uppercase allowed, so `hostname_uuid` identities are valid.
        Kind::LeaseCandidate => return each(config_map_key(name)),
        _ => {}
    }
    if kind == Kind::Namespace {
        // `IsDNS1123Label` (apimachinery validation.go:167-182 at eed236ce): the length, then
        // "must not contain dots" for a valid subdomain, else the label's regex message.
        let mut details = Vec::new();
        if name.len() > 63 {
            details.push("must be no more than 63 characters".to_string());
        }
        // The regexes, without their length limits (checked above).
        if !matches_dns1123_label_text(name) {
            let subdomain = name.split('.').all(matches_dns1123_label_text);
            details.push(if subdomain { "must not contain dots" } else { DNS1123_LABEL_ERROR }.into());
        }
        return each(details);
    } else if name.len() > 253 {
        return invalid("must be no more than 253 characters");
    } else if !is_dns1123_subdomain(name) {
        return invalid(DNS1123_SUBDOMAIN_ERROR);
    }
    Vec::new()
}

/// apimachinery `content.IsPathSegmentName` (`pkg/api/validate/content/path.go:26-63` at
/// `eed236ce`): not `.` or `..`, no `/` or `%`; no length or charset limit.
fn path_segment_name(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"].iter().filter(|bad| name.contains(*bad)).map(|bad| format!("may not contain '{bad}'")).collect()
}

/// apimachinery `IsConfigMapKey` (`pkg/util/validation/validation.go:405-421`, `RegexError`
/// `:430-443`, `hasChDirPrefix` `:457-467`).
fn config_map_key(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > 253 {
        errors.push("must be no more than 253 characters".to_string());
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')) {
        errors.push(
            // `RegexError` joins its examples with ", " then " or ": two spaces.
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or \
             'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
                .to_string(),
        );
    }
    if name == "." {
        errors.push("must not be '.'".into());
    } else if name == ".." {
        errors.push("must not be '..'".into());
    } else if name.starts_with("..") {
        errors.push("must not start with '..'".into());
    }
    errors
}

/// An object's labels and annotations, then its kind's own fields (`ValidateObjectMeta` comes
/// first in every kind's validation, e.g. `ValidateLease`).
pub(crate) fn validate_object(object: &Stored) -> Vec<FieldError> {
    let mut errors = validate_metadata(object.meta());
    errors.extend(match object {
        Stored::Lease(lease) => validate_lease_spec(&lease.spec),
        Stored::LeaseCandidate(candidate) => validate_lease_candidate_spec(&candidate.spec),
        _ => Vec::new(),
    });
    errors
}

/// [`validate_object`] of an update over `live`: a LeaseCandidate whose spec has the live
/// object's texts (its leaseName, versions and strategy: all that `ValidateLeaseCandidateSpec`
/// reads) has the live spec's errors, none, since every stored object passed at its write; its
/// two semver parses were a fifteenth of a candidate's write (docs/performance.md). Debug
/// builds check the answer against the whole validation.
pub(crate) fn validate_update(object: &Stored, live: &Stored) -> Vec<FieldError> {
    if let (Stored::LeaseCandidate(new), Stored::LeaseCandidate(old)) = (object, live)
        && new.spec.same_texts(&old.spec)
    {
        let errors = validate_metadata(object.meta());
        debug_assert_eq!(errors, validate_object(object), "a stored LeaseCandidate's spec is valid");
        return errors;
    }
    validate_object(object)
}

/// apimachinery `ValidateObjectMeta`'s labels and annotations (read at `eed236ce`):
/// `metav1validation.ValidateLabels` — each key an `IsLabelKey`, each value an `IsLabelValue`,
/// both reported on `metadata.labels` — and `ValidateAnnotations` — each key an `IsLabelKey`
/// once lowercased, their keys and values together at most 256 KiB. Go walks the maps in random
/// order, so a write with several bad keys lists them in any order there; here in key order.
pub(crate) fn validate_metadata(meta: &ObjectMeta) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if meta.labels.is_empty() && meta.annotations.is_empty() {
        return errors; // the common case: nothing to walk
    }
    for (key, value) in &meta.labels {
        for message in label_key_errors(key) {
            errors.push(FieldError::invalid("metadata.labels", &go_quote(key), &message));
        }
        for message in label_value_errors(value) {
            errors.push(FieldError::invalid("metadata.labels", &go_quote(value), &message));
        }
    }
    for key in meta.annotations.keys() {
        for message in label_key_errors(&key.to_lowercase()) {
            errors.push(FieldError::invalid("metadata.annotations", &go_quote(key), &message));
        }
    }
    let size: usize = meta.annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        errors.push(FieldError::too_long("metadata.annotations", TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errors
}

/// `TotalAnnotationSizeLimitB` (`pkg/api/validation/objectmeta.go`).
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// `content.IsLabelKey` (`pkg/api/validate/content/kube.go`): every message that applies. Its
/// lengths are in bytes (`content.MaxLenError`, since Kubernetes 1.35); a name's (above) are
/// still `util/validation`'s characters.
fn label_key_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(dns1123_subdomain_errors(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            name
        }
        _ => {
            let regex = QUALIFIED_NAME_ERROR.strip_prefix("name part ").expect("the constant's prefix");
            return vec![format!(
                "a valid label key {regex} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 bytes".to_string());
    }
    if !matches_label_text(name) {
        errors.push(QUALIFIED_NAME_ERROR.to_string());
    }
    errors
}

/// `content.IsLabelValue`.
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 bytes".to_string());
    }
    if !value.is_empty() && !matches_label_text(value) {
        errors.push(LABEL_VALUE_ERROR.to_string());
    }
    errors
}

/// `content.IsDNS1123Subdomain`.
fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push("must be no more than 253 bytes".to_string());
    }
    if !value.split('.').all(matches_dns1123_label_text) {
        errors.push(DNS1123_SUBDOMAIN_ERROR.to_string());
    }
    errors
}

/// The regex `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, with no bound on the length.
fn matches_label_text(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// One label of the regex `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, with no bound on the length.
fn matches_dns1123_label_text(label: &str) -> bool {
    !label.is_empty()
        && label.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

/// `ValidateLeaseCandidateSpec` (kubernetes `pkg/apis/coordination/validation/validation.go`,
/// v1beta1): leaseName required; binaryVersion required and a version by `semver.Parse`
/// ([`Version::parse`]); emulationVersion the same when set, not above binaryVersion (in
/// blang/semver's order, prereleases included), and not the zero version for
/// `OldestEmulationVersion`; strategy required and known or qualified. `pingTime` and
/// `renewTime` are not validated.
pub fn validate_lease_candidate_spec(spec: &LeaseCandidateSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if spec.lease_name.is_empty() {
        errors.push(FieldError::required("spec.leaseName", ""));
    }
    // A version that does not parse is the zero version from then on (`ev, err = semver.Parse`
    // assigns `Version{}` with the error), and still takes part in the order check below.
    let invalid =
        |path: &str, text: &str| FieldError::invalid(path, &go_quote(text), "must be a valid semantic version");
    let ev_text: &str = &spec.emulation_version;
    let mut ev = Version::ZERO;
    if !ev_text.is_empty() {
        match Version::parse(ev_text) {
            Ok(v) => ev = v,
            Err(_) => errors.push(invalid("spec.emulationVersion", ev_text)),
        }
    }
    let bv_text: &str = &spec.binary_version;
    let mut bv = Version::ZERO;
    if bv_text.is_empty() {
        errors.push(FieldError::required("spec.binaryVersion", ""));
    } else {
        match Version::parse(bv_text) {
            Ok(v) => bv = v,
            Err(_) => errors.push(invalid("spec.binaryVersion", bv_text)),
        }
    }
    if !bv_text.is_empty() && !ev_text.is_empty() && bv < ev {
        errors.push(FieldError::invalid(
            "spec.binaryVersion",
            &go_quote(bv_text),
            "must be greater than or equal to `emulationVersion`",
        ));
    }
    let strategy: &str = &spec.strategy;
    if strategy.is_empty() {
        errors.push(FieldError::required("spec.strategy", ""));
    } else {
        if strategy == "OldestEmulationVersion" && ev.is_zero() {
            errors.push(FieldError::required(
                "spec.emulationVersion",
                "must be specified when `strategy` is 'OldestEmulationVersion'",
            ));
        }
        errors.extend(validate_strategy(strategy));
    }
    errors
}

/// `ValidateLeaseSpec`.
pub fn validate_lease_spec(spec: &LeaseSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(d) = spec.lease_duration_seconds.filter(|d| *d <= 0) {
        errors.push(FieldError::invalid("spec.leaseDurationSeconds", &d.to_string(), "must be greater than 0"));
    }
    if let Some(t) = spec.lease_transitions.filter(|t| *t < 0) {
        errors.push(FieldError::invalid("spec.leaseTransitions", &t.to_string(), "must be greater than or equal to 0"));
    }
    if let Some(strategy) = &spec.strategy {
        errors.extend(validate_strategy(strategy));
    }
    if spec.preferred_holder.as_deref().is_some_and(|p| !p.is_empty())
        && spec.strategy.as_deref().unwrap_or("").is_empty()
    {
        errors.push(FieldError::forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"));
    }
    errors
}

/// `ValidateCoordinatedLeaseStrategy`: `OldestEmulationVersion` or a qualified `domain/name`.
/// The field path is `spec.strategy.strategy`: the caller passes `spec.strategy` and the
/// function appends `.Child("strategy")` again (validation.go@02f19cb0; a bug, reproduced).
fn validate_strategy(strategy: &str) -> Vec<FieldError> {
    let field = "spec.strategy.strategy";
    // Quoted only for an error: the common, valid strategy allocates nothing.
    let quoted = || format!("{strategy:?}");
    match strategy.split_once('/') {
        None if strategy == "OldestEmulationVersion" => Vec::new(),
        None => vec![FieldError::not_supported(field, &quoted(), &["OldestEmulationVersion"])],
        Some((prefix, name)) => {
            let quoted = quoted();
            let mut errors = Vec::new();
            if prefix.is_empty() {
                errors.push(FieldError::invalid(field, &quoted, "prefix part must be non-empty"));
            } else if !is_dns1123_subdomain(prefix) {
                errors.push(FieldError::invalid(field, &quoted, &format!("prefix part {DNS1123_SUBDOMAIN_ERROR}")));
            }
            let name_ok = !name.is_empty()
                && name.len() <= 63
                && name.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
                && name.as_bytes()[0].is_ascii_alphanumeric()
                && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric();
            if !name_ok {
                errors.push(FieldError::invalid(field, &quoted, QUALIFIED_NAME_ERROR));
            }
            errors
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario's `labels` are refused with the first message the server's 422 would carry.
    #[test]
    fn a_scenario_label_is_checked_as_the_server_checks_it() {
        assert_eq!(check_label("example.com/app", "x-1"), Ok(()));
        assert_eq!(check_label("app", ""), Ok(()));
        let first = |key: &str| label_key_errors(key).into_iter().next().unwrap();
        assert_eq!(check_label("a/b/c", "x"), Err(format!("label key \"a/b/c\": {}", first("a/b/c"))));
        assert!(first("a/b/c").starts_with("a valid label key must consist"));
        assert_eq!(check_label("/app", "x"), Err("label key \"/app\": prefix part must be non-empty".to_string()));
        assert_eq!(check_label("app", "bad value"), Err(format!("label value \"bad value\": {LABEL_VALUE_ERROR}")));
        let long = "v".repeat(64);
        assert_eq!(check_label("app", &long), Err(format!("label value {long:?}: must be no more than 63 bytes")));
    }

    /// Names by kind as the API server checks them (docs/sources/kubernetes.md §5): RBAC
    /// objects as path segments (`:` allowed), LeaseCandidates as ConfigMap keys (`_` and
    /// uppercase allowed), the rest as DNS subdomains.
    #[test]
    fn names_are_checked_by_their_kind_s_rule() {
        let bodies = |kind, name| validate_name(kind, name).into_iter().map(|e| e.body).collect::<Vec<_>>();
        assert!(bodies(Kind::Role, "cert-manager:leaderelection").is_empty());
        assert!(bodies(Kind::RoleBinding, "system::leader-locking-kube-scheduler").is_empty());
        assert_eq!(bodies(Kind::Role, ".."), ["Invalid value: \"..\": may not be '..'"]);
        assert_eq!(
            bodies(Kind::RoleBinding, "a/b%c"),
            ["Invalid value: \"a/b%c\": may not contain '/'", "Invalid value: \"a/b%c\": may not contain '%'"]
        );
        assert!(bodies(Kind::LeaseCandidate, "node-1_3f2a-Upper").is_empty());
        assert_eq!(bodies(Kind::LeaseCandidate, "..x"), ["Invalid value: \"..x\": must not start with '..'"]);
        assert!(bodies(Kind::LeaseCandidate, "a:b")[0].contains("'key.name',  or 'KEY_NAME',  or 'key-name'"));
        assert!(!bodies(Kind::Lease, "cert-manager:leaderelection").is_empty(), "a Lease's is a DNS subdomain");
        // A Namespace's is a DNS label: a valid subdomain is told it has dots.
        assert_eq!(bodies(Kind::Namespace, "cert.manager"), ["Invalid value: \"cert.manager\": must not contain dots"]);
        let long = "n".repeat(64);
        assert_eq!(bodies(Kind::Namespace, &long).len(), 1, "too long, nothing else");
        assert!(bodies(Kind::Namespace, "Cert")[0].contains("RFC 1123 label"));
    }

    #[test]
    fn lease_duration_must_be_positive_and_transitions_non_negative() {
        let spec = LeaseSpec { lease_duration_seconds: Some(0), lease_transitions: Some(-1), ..LeaseSpec::default() };
        let errors = validate_lease_spec(&spec);
        assert_eq!(errors[0].body, "Invalid value: 0: must be greater than 0");
        assert_eq!(errors[1].body, "Invalid value: -1: must be greater than or equal to 0");
    }

    #[test]
    fn preferred_holder_needs_a_strategy_and_strategy_must_be_known_or_qualified() {
        let spec = LeaseSpec { preferred_holder: Some("a".into()), ..LeaseSpec::default() };
        assert_eq!(validate_lease_spec(&spec)[0].body, "Forbidden: may only be specified if `strategy` is defined");
        assert!(validate_strategy("OldestEmulationVersion").is_empty());
        assert!(validate_strategy("example.com/mine").is_empty());
        assert_eq!(
            validate_strategy("Newest")[0].body,
            "Unsupported value: \"Newest\": supported values: \"OldestEmulationVersion\""
        );
    }

    /// validation.go@02f19cb0: `ValidateCoordinatedLeaseStrategy(strategy, fldPath.Child("strategy"))`
    /// appends `.Child("strategy")` again, so the reported path is doubled.
    #[test]
    fn a_bad_strategy_is_reported_at_the_doubled_path_spec_strategy_strategy() {
        assert_eq!(validate_strategy("Newest")[0].field, "spec.strategy.strategy");
    }

    /// `ValidateLeaseCandidateSpec` (v1beta1), each rule with the real server's words.
    #[test]
    fn lease_candidates_are_validated_as_the_real_server_does() {
        let ok = serde_json::json!({"leaseName": "kube-scheduler", "binaryVersion": "1.34.0",
            "emulationVersion": "1.33.0", "strategy": "OldestEmulationVersion"});
        let typed = |spec: serde_json::Value| serde_json::from_value::<LeaseCandidateSpec>(spec).unwrap();
        assert!(validate_lease_candidate_spec(&typed(ok)).is_empty());
        let text = |spec: serde_json::Value| -> Vec<String> {
            validate_lease_candidate_spec(&typed(spec)).iter().map(|e| format!("{}: {}", e.field, e.body)).collect()
        };
        assert_eq!(
            text(serde_json::json!({"binaryVersion": "1.33.0", "emulationVersion": "1.34.0", "leaseName": "l",
                "strategy": "OldestEmulationVersion"})),
            vec!["spec.binaryVersion: Invalid value: \"1.33.0\": must be greater than or equal to `emulationVersion`"]
        );
        assert_eq!(
            text(serde_json::json!({"leaseName": "l", "binaryVersion": "v1.33", "strategy": "OldestEmulationVersion"})),
            vec![
                "spec.binaryVersion: Invalid value: \"v1.33\": must be a valid semantic version",
                "spec.emulationVersion: Required value: must be specified when `strategy` is 'OldestEmulationVersion'",
            ]
        );
        assert_eq!(
            text(serde_json::json!({})),
            vec![
                "spec.leaseName: Required value",
                "spec.binaryVersion: Required value",
                "spec.strategy: Required value"
            ]
        );
        // blang/semver's `Parse` (v4.0.0): no leading zeros, no spaces. A version that does not
        // parse is the zero version for the order check, so an invalid binaryVersion under a
        // valid emulationVersion is also "not above" it.
        assert_eq!(
            text(serde_json::json!({"leaseName": "l", "binaryVersion": "01.34.0", "emulationVersion": "1.33.0",
                "strategy": "OldestEmulationVersion"})),
            vec![
                "spec.binaryVersion: Invalid value: \"01.34.0\": must be a valid semantic version",
                "spec.binaryVersion: Invalid value: \"01.34.0\": must be greater than or equal to `emulationVersion`",
            ]
        );
        // A prerelease is below its release; "0.0.0" is the zero version, so not "specified".
        assert_eq!(
            text(serde_json::json!({"leaseName": "l", "binaryVersion": "1.34.0-rc.1", "emulationVersion": "1.34.0",
                "strategy": "OldestEmulationVersion"})),
            vec![
                "spec.binaryVersion: Invalid value: \"1.34.0-rc.1\": must be greater than or equal to `emulationVersion`"
            ]
        );
        assert_eq!(
            text(serde_json::json!({"leaseName": "l", "binaryVersion": "1.34.0", "emulationVersion": "0.0.0",
                "strategy": "OldestEmulationVersion"})),
            vec![
                "spec.emulationVersion: Required value: must be specified when `strategy` is 'OldestEmulationVersion'"
            ]
        );
        // The value as Go's `%q` quotes it (`field.Invalid`), not as Rust's `{:?}` does.
        assert_eq!(
            text(serde_json::json!({"leaseName": "l", "binaryVersion": "1.2.3\u{1}", "strategy": "example.com/x"})),
            vec!["spec.binaryVersion: Invalid value: \"1.2.3\\x01\": must be a valid semantic version"]
        );
        // A custom `domain/name` strategy needs no emulation version.
        assert!(
            validate_lease_candidate_spec(&typed(
                serde_json::json!({"leaseName": "l", "binaryVersion": "1.33.0", "strategy": "example.com/x"})
            ))
            .is_empty()
        );
    }

    #[test]
    fn names_must_be_dns_subdomains() {
        assert!(validate_name(Kind::Lease, "kube-scheduler").is_empty());
        assert_eq!(validate_name(Kind::Lease, "")[0].body, "Required value: name or generateName is required");
        assert!(
            validate_name(Kind::Lease, "Bad_Name")[0]
                .body
                .starts_with("Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain")
        );
    }
}
