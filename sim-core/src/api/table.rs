//! Server-side printing (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): the columns
//! kube-apiserver's printers give each kind and the cells they compute, so `kubectl get` shows
//! what it shows against a real cluster (HOLDER for Leases, LAST SEEN … MESSAGE for Events).
//! Sources: kubernetes `pkg/printers/internalversion/printers.go`, apimachinery
//! `pkg/util/duration` (docs/sources/apiserver-wire.md).

use serde_json::{Value, json};

use super::microtime::{MicroTime, Time};
use super::types::Kind;
use crate::time::UnixNanos;

/// A column: name, type, format, priority (0 is shown by `get`, 1 by `get -o wide`).
struct Column {
    name: &'static str,
    kind: &'static str,
    format: &'static str,
    priority: u32,
    description: &'static str,
}

const NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

const fn col(name: &'static str, priority: u32, description: &'static str) -> Column {
    Column { name, kind: "string", format: "", priority, description }
}

fn columns(kind: Kind) -> Vec<Column> {
    let name = Column { name: "Name", kind: "string", format: "name", priority: 0, description: NAME };
    match kind {
        Kind::Lease => vec![
            name,
            col(
                "Holder",
                0,
                "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
            ),
            col("Age", 0, AGE),
        ],
        Kind::ConfigMap => vec![
            name,
            Column {
                name: "Data",
                kind: "string",
                format: "",
                priority: 0,
                description: "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
            },
            col("Age", 0, AGE),
        ],
        Kind::Namespace => vec![name, col("Status", 0, "The status of the namespace"), col("Age", 0, AGE)],
        Kind::ServiceAccount => vec![
            name,
            col(
                "Secrets",
                0,
                "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret",
            ),
            col("Age", 0, AGE),
        ],
        // No printer of its own: the default columns, `Created At` a date.
        Kind::Role => {
            vec![name, Column { name: "Created At", kind: "date", format: "", priority: 0, description: AGE }]
        }
        Kind::RoleBinding => vec![
            name,
            col(
                "Role",
                0,
                "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.",
            ),
            col("Age", 0, AGE),
            col("Users", 1, "Users in the roleBinding"),
            col("Groups", 1, "Groups in the roleBinding"),
            col("ServiceAccounts", 1, "ServiceAccounts in the roleBinding"),
        ],
        Kind::Event => vec![
            col("Last Seen", 0, "The time at which the most recent occurrence of this event was recorded."),
            col("Type", 0, "Type of this event (Normal, Warning), new types could be added in the future"),
            col(
                "Reason",
                0,
                "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
            ),
            col("Object", 0, "The object that this event is about."),
            col(
                "Subobject",
                1,
                "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.",
            ),
            col("Source", 1, "The component reporting this event. Should be a short machine understandable string."),
            col("Message", 0, "A human-readable description of the status of this operation."),
            col(
                "First Seen",
                1,
                "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
            ),
            col("Count", 1, "The number of times this event has occurred."),
            Column { name: "Name", kind: "string", format: "name", priority: 1, description: NAME },
        ],
        Kind::LeaseCandidate => vec![
            name,
            col(
                "LeaseName",
                0,
                "LeaseName is the name of the lease for which this candidate is contending. The limits on this field are the same as on Lease.name. Multiple lease candidates may reference the same Lease.name. This field is immutable.",
            ),
            col(
                "BinaryVersion",
                0,
                "BinaryVersion is the binary version. It must be in a semver format without leading `v`. This field is required.",
            ),
            col(
                "EmulationVersion",
                0,
                "EmulationVersion is the emulation version. It must be in a semver format without leading `v`. EmulationVersion must be less than or equal to BinaryVersion. This field is required when strategy is \"OldestEmulationVersion\"",
            ),
            col("Age", 0, AGE),
        ],
    }
}

/// apimachinery's `duration.HumanDuration`: `45s`, `2m30s`, `5h12m`, `3d4h`, `2y30d`; a time
/// more than a second in the future is `<invalid>`.
pub fn human_duration(nanos: i64) -> String {
    let seconds = nanos.div_euclid(1_000_000_000);
    if seconds < -1 {
        return "<invalid>".into();
    } else if seconds < 0 {
        return "0s".into();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    } else if hours < 48 {
        return format!("{hours}h");
    } else if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{dy}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}

/// `translateTimestampSince`: `<unknown>` for an absent time, else its age.
fn age(time: Option<&Value>, now: UnixNanos) -> String {
    let text = time.and_then(Value::as_str);
    let unix_nanos = text.and_then(|t| match Time::parse(t) {
        Ok(t) => Some(t.unix_secs() * 1_000_000_000),
        Err(_) => MicroTime::parse(t).ok().map(|m| m.unix_nanos()),
    });
    match unix_nanos {
        Some(t) => human_duration(now - t),
        None => "<unknown>".into(),
    }
}

fn string_at(object: &Value, pointer: &str) -> String {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn cells(kind: Kind, o: &Value, now: UnixNanos) -> Vec<Value> {
    let created = o.pointer("/metadata/creationTimestamp");
    let name = json!(string_at(o, "/metadata/name"));
    match kind {
        Kind::Lease => vec![name, json!(string_at(o, "/spec/holderIdentity")), json!(age(created, now))],
        Kind::ConfigMap => {
            let count = |p: &str| o.pointer(p).and_then(Value::as_object).map_or(0, |m| m.len());
            vec![name, json!(count("/data") + count("/binaryData")), json!(age(created, now))]
        }
        Kind::Namespace => vec![name, json!(string_at(o, "/status/phase")), json!(age(created, now))],
        Kind::ServiceAccount => {
            let secrets = o.pointer("/secrets").and_then(Value::as_array).map_or(0, |s| s.len());
            vec![name, json!(secrets), json!(age(created, now))]
        }
        Kind::Role => vec![name, json!(string_at(o, "/metadata/creationTimestamp"))],
        Kind::RoleBinding => {
            let subjects = o.pointer("/subjects").and_then(Value::as_array).cloned().unwrap_or_default();
            let of = |kind: &str| -> String {
                subjects
                    .iter()
                    .filter(|s| s["kind"] == kind)
                    .map(|s| match kind {
                        "ServiceAccount" => format!(
                            "{}/{}",
                            s["namespace"].as_str().unwrap_or_default(),
                            s["name"].as_str().unwrap_or_default()
                        ),
                        _ => s["name"].as_str().unwrap_or_default().to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let role = format!("{}/{}", string_at(o, "/roleRef/kind"), string_at(o, "/roleRef/name"));
            vec![
                name,
                json!(role),
                json!(age(created, now)),
                json!(of("User")),
                json!(of("Group")),
                json!(of("ServiceAccount")),
            ]
        }
        Kind::Event => {
            let first = o.pointer("/firstTimestamp").filter(|v| !v.is_null());
            let last = o.pointer("/lastTimestamp").filter(|v| !v.is_null()).or(first);
            let last = last.or(o.pointer("/eventTime")).or(created);
            let first = first.or(o.pointer("/eventTime")).or(created);
            let object = format!(
                "{}/{}",
                string_at(o, "/involvedObject/kind").to_lowercase(),
                string_at(o, "/involvedObject/name")
            );
            let source = {
                let component = string_at(o, "/source/component");
                let component = if component.is_empty() { string_at(o, "/reportingComponent") } else { component };
                let host = string_at(o, "/source/host");
                if host.is_empty() { component } else { format!("{component}, {host}") }
            };
            let count = o.pointer("/count").and_then(Value::as_i64).unwrap_or(1);
            vec![
                json!(age(last, now)),
                json!(string_at(o, "/type")),
                json!(string_at(o, "/reason")),
                json!(object),
                json!(string_at(o, "/involvedObject/fieldPath")),
                json!(source),
                json!(string_at(o, "/message")),
                json!(age(first, now)),
                json!(count),
                name,
            ]
        }
        Kind::LeaseCandidate => vec![
            name,
            json!(string_at(o, "/spec/leaseName")),
            json!(string_at(o, "/spec/binaryVersion")),
            json!(string_at(o, "/spec/emulationVersion")),
            json!(age(created, now)),
        ],
    }
}

/// The row object: the item's whole metadata as `PartialObjectMetadata` (kubectl's default,
/// `includeObject=Metadata`), or the whole object (`includeObject=Object`).
fn row_object(o: &Value, whole: bool) -> Value {
    if whole {
        return o.clone();
    }
    let meta = o.get("metadata").cloned().unwrap_or_else(|| json!({}));
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta})
}

/// A `meta.k8s.io/v1` Table of `items` (objects of `kind`) at server revision `rv`; `now` is
/// the server's wall clock, for ages. `whole`: rows carry the whole object.
pub fn table(kind: Kind, items: &[Value], rv: u64, now: UnixNanos, whole: bool) -> Value {
    let definitions: Vec<Value> = columns(kind)
        .into_iter()
        .map(|c| {
            json!({"name": c.name, "type": c.kind, "format": c.format, "description": c.description, "priority": c.priority})
        })
        .collect();
    let rows: Vec<Value> =
        items.iter().map(|o| json!({"cells": cells(kind, o, now), "object": row_object(o, whole)})).collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv.to_string()},
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_follow_apimachinery() {
        let s = |n: i64| human_duration(n * 1_000_000_000);
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60 * 12, "3h12m"),
            (10 * 3600, "10h"),
            (50 * 3600, "2d2h"),
            (9 * 86400, "9d"),
            (800 * 86400, "2y70d"),
            (9 * 365 * 86400, "9y"),
        ];
        for (secs, want) in cases {
            assert_eq!(s(secs), want, "{secs} s");
        }
    }

    #[test]
    fn a_lease_table_has_the_holder_and_an_age() {
        let lease = json!({"metadata": {"name": "w", "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": []},
            "spec": {"holderIdentity": "w-1"}});
        let now = 1_767_225_600_000_000_000 + 20 * 60 * 1_000_000_000;
        let t = table(Kind::Lease, &[lease], 7, now, false);
        assert_eq!(t["rows"][0]["cells"], json!(["w", "w-1", "20m"]));
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["metadata"]["resourceVersion"], "7");
    }
}
