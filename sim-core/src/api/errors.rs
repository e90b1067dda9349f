//! API errors as `metav1.Status` values, with the exact texts of apimachinery's
//! `pkg/api/errors` constructors and kubectl's rendering of them (apiserver.md §3, §5, §6, §9).

use serde_json::{Map, Value, json};

use super::types::Kind;

/// `metav1.StatusReason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    NotFound,
    AlreadyExists,
    Conflict,
    Invalid,
    BadRequest,
    Forbidden,
    ServiceUnavailable,
    InternalError,
    Timeout,
    TooManyRequests,
    RequestEntityTooLarge,
    /// `StatusReasonUnknown` (`""`): an error that is not an API status, turned into a 500 by
    /// `ErrorToAPIStatus`; the Status carries no `reason` and kubectl prints none.
    Unknown,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotFound => "NotFound",
            Reason::AlreadyExists => "AlreadyExists",
            Reason::Conflict => "Conflict",
            Reason::Invalid => "Invalid",
            Reason::BadRequest => "BadRequest",
            Reason::Forbidden => "Forbidden",
            Reason::ServiceUnavailable => "ServiceUnavailable",
            Reason::InternalError => "InternalError",
            Reason::Timeout => "Timeout",
            Reason::TooManyRequests => "TooManyRequests",
            Reason::RequestEntityTooLarge => "RequestEntityTooLarge",
            Reason::Unknown => "",
        }
    }
}

/// `metav1.StatusCause`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusCause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldManagerConflict`, …
    pub reason: String,
    pub message: String,
    pub field: String,
    /// For a `FieldManagerConflict`: the manager that owns the field (not on the wire; the
    /// message names it).
    pub manager: Option<String>,
}

/// `metav1.StatusDetails`; `kind` is what the constructor was given (a resource plural for
/// NotFound/Conflict, a Kind for NewInvalid).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusDetails {
    pub name: String,
    pub group: String,
    pub kind: String,
    pub causes: Vec<StatusCause>,
    /// Sent even when empty (`"details":{}`), as `errors.NewGenericServerResponse` builds them.
    pub sent_empty: bool,
}

impl StatusDetails {
    fn is_empty(&self) -> bool {
        self.name.is_empty() && self.group.is_empty() && self.kind.is_empty() && self.causes.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: Reason,
    pub message: String,
    pub details: StatusDetails,
}

/// `OptimisticLockErrorMsg` in apiserver's `registry/generic/registry/store.go`.
pub const OPTIMISTIC_LOCK_ERROR_MSG: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// A `field.Error` (apimachinery `util/validation/field`): `<field>: <body>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden`, `FieldValueNotSupported`.
    pub cause_reason: &'static str,
    /// `ErrorBody()`: `Invalid value: 0: must be greater than 0`.
    pub body: String,
}

impl FieldError {
    /// `field.Invalid`; `value_text` is the value as Go prints it (`0`, `"text"` quoted).
    pub fn invalid(field: &str, value_text: &str, detail: &str) -> FieldError {
        FieldError {
            field: field.to_string(),
            cause_reason: "FieldValueInvalid",
            body: format!("Invalid value: {value_text}: {detail}"),
        }
    }
    pub fn required(field: &str, detail: &str) -> FieldError {
        FieldError {
            field: field.to_string(),
            cause_reason: "FieldValueRequired",
            // `ErrorBody`: the detail follows a colon only when there is one.
            body: if detail.is_empty() { "Required value".to_string() } else { format!("Required value: {detail}") },
        }
    }
    /// `field.TooLong` with a maximum: the value is never shown.
    pub fn too_long(field: &str, max_bytes: usize) -> FieldError {
        let unit = if max_bytes == 1 { "byte" } else { "bytes" };
        FieldError {
            field: field.to_string(),
            cause_reason: "FieldValueTooLong",
            body: format!("Too long: may not be more than {max_bytes} {unit}"),
        }
    }
    pub fn forbidden(field: &str, detail: &str) -> FieldError {
        FieldError {
            field: field.to_string(),
            cause_reason: "FieldValueForbidden",
            body: format!("Forbidden: {detail}"),
        }
    }
    pub fn not_supported(field: &str, value_text: &str, supported: &[&str]) -> FieldError {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        FieldError {
            field: field.to_string(),
            cause_reason: "FieldValueNotSupported",
            body: format!("Unsupported value: {value_text}: supported values: {}", list.join(", ")),
        }
    }
    fn text(&self) -> String {
        format!("{}: {}", self.field, self.body)
    }
}

/// `<head><group resource> "<name>"<tail>`: the name quoted as Go's `%q` quotes it (Rust's
/// `Debug` of a `str`, which agrees on every name a server takes), a name with nothing to
/// escape written without the formatter (a run's first election answers 404s and 409s).
fn quoted_name_message(head: &str, kind: Kind, name: &str, tail: &[&str]) -> String {
    let resource = kind.group_resource();
    if !name.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\') {
        return format!("{head}{resource} {name:?}{}", tail.concat());
    }
    let tail_len: usize = tail.iter().map(|t| t.len()).sum();
    let mut text = String::with_capacity(head.len() + resource.len() + name.len() + tail_len + 3);
    for part in [head, resource, " \"", name, "\""].into_iter().chain(tail.iter().copied()) {
        text.push_str(part);
    }
    text
}

impl ApiError {
    fn with_details(code: u16, reason: Reason, message: String, kind: Kind, name: &str) -> ApiError {
        ApiError {
            code,
            reason,
            message,
            details: StatusDetails {
                name: name.to_string(),
                group: kind.group().to_string(),
                kind: kind.resource().to_string(),
                causes: Vec::new(),
                sent_empty: false,
            },
        }
    }

    /// `errors.NewNotFound`: `leases.coordination.k8s.io "NAME" not found`.
    pub fn not_found(kind: Kind, name: &str) -> ApiError {
        Self::with_details(404, Reason::NotFound, quoted_name_message("", kind, name, &[" not found"]), kind, name)
    }

    /// `errors.NewAlreadyExists`.
    pub fn already_exists(kind: Kind, name: &str) -> ApiError {
        Self::with_details(
            409,
            Reason::AlreadyExists,
            quoted_name_message("", kind, name, &[" already exists"]),
            kind,
            name,
        )
    }

    /// `errors.NewConflict(resource, name, OptimisticLockErrorMsg)`.
    pub fn optimistic_lock_conflict(kind: Kind, name: &str) -> ApiError {
        Self::with_details(
            409,
            Reason::Conflict,
            quoted_name_message("Operation cannot be fulfilled on ", kind, name, &[": ", OPTIMISTIC_LOCK_ERROR_MSG]),
            kind,
            name,
        )
    }

    /// The API server's 429 from priority-and-fairness or max-in-flight
    /// (`filters.tooManyRequests`: `http.Error(w, "Too many requests, please try again later.",
    /// 429)` with a `Retry-After` header): a plain-text body, not a Status.
    pub fn too_many_requests() -> ApiError {
        ApiError {
            code: 429,
            reason: Reason::TooManyRequests,
            message: "Too many requests, please try again later.".into(),
            details: StatusDetails::default(),
        }
    }

    /// `errors.NewServiceUnavailable(reason)`: no details.
    pub fn service_unavailable(message: &str) -> ApiError {
        ApiError {
            code: 503,
            reason: Reason::ServiceUnavailable,
            message: message.to_string(),
            details: StatusDetails::default(),
        }
    }

    /// `errors.NewTimeoutError("request did not complete within the allotted timeout", 0)`
    /// from the timeout filter (`filters/timeout.go`): the handler may still be running.
    pub fn request_timeout() -> ApiError {
        ApiError {
            code: 504,
            reason: Reason::Timeout,
            message: "Timeout: request did not complete within the allotted timeout".into(),
            details: StatusDetails::default(),
        }
    }

    /// A JSON patch operation that does not apply: `errors.NewGenericServerResponse(422, "",
    /// schema.GroupResource{}, "", err.Error(), 0, false)` (apiserver@24a394e5
    /// `pkg/endpoints/handlers/patch.go:423-426`; apimachinery `pkg/api/errors/errors.go:476-478`):
    /// reason Invalid and a fixed message, the operation's error dropped; its details are empty.
    pub fn json_patch_failed() -> ApiError {
        ApiError {
            code: 422,
            reason: Reason::Invalid,
            message: "the server rejected our request due to an error in our request".to_string(),
            details: StatusDetails { sent_empty: true, ..StatusDetails::default() },
        }
    }

    /// `errors.NewRequestEntityTooLargeError`: no details.
    pub fn request_entity_too_large(message: &str) -> ApiError {
        ApiError {
            code: 413,
            reason: Reason::RequestEntityTooLarge,
            message: format!("Request entity too large: {message}"),
            details: StatusDetails::default(),
        }
    }

    /// A plain Go error out of the handler (`responsewriters.ErrorToAPIStatus`' default
    /// branch): 500, no reason, no details, the error's text as the message.
    pub fn plain(message: String) -> ApiError {
        ApiError { code: 500, reason: Reason::Unknown, message, details: StatusDetails::default() }
    }

    /// `errors.NewBadRequest`: no details.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError { code: 400, reason: Reason::BadRequest, message: message.into(), details: StatusDetails::default() }
    }

    /// `errors.NewInternalError`.
    pub fn internal(message: &str) -> ApiError {
        ApiError {
            code: 500,
            reason: Reason::InternalError,
            message: format!("Internal error occurred: {message}"),
            details: StatusDetails {
                causes: vec![StatusCause {
                    reason: String::new(),
                    message: message.to_string(),
                    field: String::new(),
                    manager: None,
                }],
                ..StatusDetails::default()
            },
        }
    }

    /// `errors.NewInvalid(GroupKind{group, kind_text}, name, errs)`: message
    /// `<GroupKind> "<name>" is invalid: <aggregate>`; an empty GroupKind gives the leading space
    /// of the patch decode error (apiserver.md §2.1).
    pub fn invalid(group: &str, kind_text: &str, name: &str, errors: &[FieldError]) -> ApiError {
        let group_kind = if group.is_empty() { kind_text.to_string() } else { format!("{kind_text}.{group}") };
        let aggregate = if errors.len() == 1 {
            errors[0].text()
        } else {
            format!("[{}]", errors.iter().map(FieldError::text).collect::<Vec<_>>().join(", "))
        };
        ApiError {
            code: 422,
            reason: Reason::Invalid,
            message: format!("{group_kind} {name:?} is invalid: {aggregate}"),
            details: StatusDetails {
                name: name.to_string(),
                group: group.to_string(),
                kind: kind_text.to_string(),
                causes: errors
                    .iter()
                    .map(|e| StatusCause {
                        reason: e.cause_reason.to_string(),
                        message: e.body.clone(),
                        manager: None,
                        field: e.field.clone(),
                    })
                    .collect(),
                sent_empty: false,
            },
        }
    }

    /// `errors.NewForbidden` as the authorisation filter builds it (apiserver.md §6).
    pub fn forbidden(kind: Kind, name: &str, user: &str, verb: &str, namespace: &str) -> ApiError {
        let subject = if name.is_empty() {
            kind.group_resource().to_string()
        } else {
            format!("{} {name:?}", kind.group_resource())
        };
        let scope = if namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {namespace:?}")
        };
        let message = format!(
            "{subject} is forbidden: User {user:?} cannot {verb} resource {:?} in API group {:?} {scope}",
            kind.resource(),
            kind.group()
        );
        Self::with_details(403, Reason::Forbidden, message, kind, name)
    }

    /// The impersonation filter's refusal (`NewForbidden(users, target, …)`): `users "<target>"
    /// is forbidden: User "<caller>" cannot impersonate resource "users" in API group "" at the
    /// cluster scope`.
    pub fn forbidden_impersonation(caller: &str, target: &str) -> ApiError {
        let message = format!(
            "users \"{target}\" is forbidden: User \"{caller}\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        );
        ApiError {
            code: 403,
            reason: Reason::Forbidden,
            message,
            details: StatusDetails { name: target.to_string(), kind: "users".to_string(), ..StatusDetails::default() },
        }
    }

    /// `NewApplyConflict` (apimachinery `managedfields/internal/conflict.go`): 409 Conflict whose
    /// details hold only causes.
    pub fn apply_conflict(message: String, causes: Vec<StatusCause>) -> ApiError {
        ApiError {
            code: 409,
            reason: Reason::Conflict,
            message,
            details: StatusDetails { causes, ..StatusDetails::default() },
        }
    }

    pub fn is_conflict(&self) -> bool {
        self.reason == Reason::Conflict
    }

    pub fn is_not_found(&self) -> bool {
        self.reason == Reason::NotFound
    }

    pub fn is_forbidden(&self) -> bool {
        self.reason == Reason::Forbidden
    }

    pub fn is_invalid(&self) -> bool {
        self.reason == Reason::Invalid
    }

    /// True for the SSA field-manager conflict (as opposed to the optimistic-lock conflict).
    pub fn is_apply_conflict(&self) -> bool {
        self.is_conflict() && self.details.causes.iter().any(|c| c.reason == "FieldManagerConflict")
    }

    /// What `kubectl` prints on stderr for this error (kubectl `cmd/util/helpers.go` `checkErr`):
    /// Invalid errors from details (`The Lease "n" is invalid: …`, `The request is invalid: …`),
    /// everything else `Error from server (<Reason>): <message>`. No trailing newline.
    pub fn kubectl_stderr(&self) -> String {
        if self.reason == Reason::Invalid && !self.details.is_empty() {
            let head = if !self.details.kind.is_empty() || !self.details.name.is_empty() {
                format!("The {} {:?} is invalid", self.details.kind, self.details.name)
            } else {
                "The request is invalid".to_string()
            };
            // statusCausesToAggrError: `field: message`, duplicates dropped; MultilineError.
            let mut lines: Vec<String> = Vec::new();
            for cause in &self.details.causes {
                let line = format!("{}: {}", cause.field, cause.message);
                if !lines.contains(&line) {
                    lines.push(line);
                }
            }
            return match lines.len() {
                0 => head,
                1 => format!("{head}: {}", lines[0]),
                _ => format!("{head}: \n{}", lines.iter().map(|l| format!("* {l}")).collect::<Vec<_>>().join("\n")),
            };
        }
        if self.reason == Reason::Unknown {
            return format!("Error from server: {}", self.message);
        }
        format!("Error from server ({}): {}", self.reason.as_str(), self.message)
    }

    /// What `kubectl create -f FILE` (`action` = `creating`; `replacing`, `applying` …) prints:
    /// kubectl's `AddSourceToErr` puts `error when <action> "FILE": ` in front of the message;
    /// Invalid errors are rendered from details, which it leaves alone.
    pub fn kubectl_stderr_with_file(&self, action: &str, file: &str) -> String {
        if self.reason == Reason::Invalid && !self.details.is_empty() {
            return self.kubectl_stderr();
        }
        format!("Error from server ({}): error when {action} {file:?}: {}", self.reason.as_str(), self.message)
    }

    /// The `metav1.Status` body the server sends, fields in Go struct order.
    pub fn to_status_json(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.message));
        if self.reason != Reason::Unknown {
            status.insert("reason".into(), json!(self.reason.as_str()));
        }
        if !self.details.is_empty() || self.details.sent_empty {
            let mut details = Map::new();
            for (key, value) in
                [("name", &self.details.name), ("group", &self.details.group), ("kind", &self.details.kind)]
            {
                if !value.is_empty() {
                    details.insert(key.into(), json!(value));
                }
            }
            if !self.details.causes.is_empty() {
                let causes: Vec<Value> = self
                    .details
                    .causes
                    .iter()
                    .map(|c| {
                        let mut cause = Map::new();
                        for (key, value) in [("reason", &c.reason), ("message", &c.message), ("field", &c.field)] {
                            if !value.is_empty() {
                                cause.insert(key.into(), json!(value));
                            }
                        }
                        Value::Object(cause)
                    })
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
            status.insert("details".into(), Value::Object(details));
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

/// The block `kubectl apply --server-side` prints for a field-manager conflict, as kubectl v1.33
/// does (apiserver.md §5, §9: v1.20 ends with a different `See …` line). For any other error this
/// is just [`ApiError::kubectl_stderr`].
pub fn kubectl_apply_conflict_stderr(error: &ApiError) -> String {
    if !error.is_apply_conflict() {
        return error.kubectl_stderr();
    }
    format!(
        "error: {}\n{}",
        error.message,
        "Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the `--force-conflicts` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 404's, a 409's and a conflict's message, written without the formatter where the name
    /// needs no escape, is the formatter's text for every name.
    #[test]
    fn named_messages_are_the_formatters() {
        for name in ["flap", "a.b-c", "", "x y", "it's", "q\"uote", "back\\slash", "tab\t", "ünï", "\u{7f}", "~!"] {
            for kind in [Kind::Lease, Kind::Event, Kind::Namespace] {
                let resource = kind.group_resource();
                assert_eq!(ApiError::not_found(kind, name).message, format!("{resource} {name:?} not found"));
                assert_eq!(ApiError::already_exists(kind, name).message, format!("{resource} {name:?} already exists"));
                assert_eq!(
                    ApiError::optimistic_lock_conflict(kind, name).message,
                    format!("Operation cannot be fulfilled on {resource} {name:?}: {OPTIMISTIC_LOCK_ERROR_MSG}")
                );
            }
        }
    }

    #[test]
    fn invalid_error_with_several_causes_aggregates_in_brackets_and_kubectl_lists_them() {
        let e = ApiError::invalid(
            "coordination.k8s.io",
            "Lease",
            "n",
            &[
                FieldError::invalid("spec.leaseDurationSeconds", "0", "must be greater than 0"),
                FieldError::invalid("spec.leaseTransitions", "-1", "must be greater than or equal to 0"),
            ],
        );
        assert_eq!(
            e.message,
            "Lease.coordination.k8s.io \"n\" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]"
        );
        assert_eq!(
            e.kubectl_stderr(),
            "The Lease \"n\" is invalid: \n* spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0\n* spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"
        );
    }

    #[test]
    fn status_json_has_go_field_order_and_details() {
        let e = ApiError::not_found(Kind::Lease, "x");
        assert_eq!(
            serde_json::to_string(&e.to_status_json()).unwrap(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"x\" not found","reason":"NotFound","details":{"name":"x","group":"coordination.k8s.io","kind":"leases"},"code":404}"#
        );
    }

    #[test]
    fn cluster_scoped_forbidden_says_at_the_cluster_scope() {
        let e = ApiError::forbidden(Kind::Namespace, "kube-system", "bob", "delete", "");
        assert_eq!(
            e.message,
            r#"namespaces "kube-system" is forbidden: User "bob" cannot delete resource "namespaces" in API group "" at the cluster scope"#
        );
    }
}
