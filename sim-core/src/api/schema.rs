//! The fields each kind's Go type has, for field validation: which fields of a create's or an
//! update's body the server's strict decoding calls unknown.
//!
//! kube-apiserver decodes a body with its strict serializer when `fieldValidation` is `Warn`
//! (the default) or `Strict` (what kubectl sends): sigs.k8s.io/json reports each key no field of
//! the Go type takes as `unknown field "<path>"`, the path made of the keys from the top joined
//! with `.` and array positions as `[i]`, in the order the keys come, each once, at most 100
//! (docs/sources/apiserver-wire.md §11). The types here are the external (versioned) ones a
//! body is decoded into, read from kubernetes/api and apimachinery at the commits that section
//! names. A typo here would refuse a valid body to kubectl: `serve_kubectl.rs` sends the seed
//! lab's manifests with validation on.

use std::borrow::Cow;

use serde::Deserializer;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::types::Kind;

/// What a field of a Go type holds, as far as unknown fields go.
enum Field {
    /// A value with no fields of its own: a string, a number, a time, a list of strings.
    Leaf,
    /// A `map[string]string` (labels, a ConfigMap's data): any key.
    Map,
    /// A struct: its fields by JSON name.
    Struct(&'static [(&'static str, Field)]),
    /// A list of structs.
    List(&'static [(&'static str, Field)]),
    /// Raw JSON the type keeps as it is (`FieldsV1`): nothing inside is unknown.
    Raw,
}

use Field::{Leaf, List, Map, Raw, Struct};

/// metav1.OwnerReference (apimachinery `pkg/apis/meta/v1/types.go`).
const OWNER_REFERENCE: &[(&str, Field)] = &[
    ("apiVersion", Leaf),
    ("kind", Leaf),
    ("name", Leaf),
    ("uid", Leaf),
    ("controller", Leaf),
    ("blockOwnerDeletion", Leaf),
];

/// metav1.ManagedFieldsEntry.
const MANAGED_FIELDS_ENTRY: &[(&str, Field)] = &[
    ("manager", Leaf),
    ("operation", Leaf),
    ("apiVersion", Leaf),
    ("time", Leaf),
    ("fieldsType", Leaf),
    ("fieldsV1", Raw),
    ("subresource", Leaf),
];

/// metav1.ObjectMeta.
const OBJECT_META: &[(&str, Field)] = &[
    ("name", Leaf),
    ("generateName", Leaf),
    ("namespace", Leaf),
    ("selfLink", Leaf),
    ("uid", Leaf),
    ("resourceVersion", Leaf),
    ("generation", Leaf),
    ("creationTimestamp", Leaf),
    ("deletionTimestamp", Leaf),
    ("deletionGracePeriodSeconds", Leaf),
    ("labels", Map),
    ("annotations", Map),
    ("ownerReferences", List(OWNER_REFERENCE)),
    ("finalizers", Leaf),
    ("managedFields", List(MANAGED_FIELDS_ENTRY)),
];

/// core/v1 ObjectReference.
const OBJECT_REFERENCE: &[(&str, Field)] = &[
    ("kind", Leaf),
    ("namespace", Leaf),
    ("name", Leaf),
    ("uid", Leaf),
    ("apiVersion", Leaf),
    ("resourceVersion", Leaf),
    ("fieldPath", Leaf),
];

const LEASE: &[(&str, Field)] = &[
    ("kind", Leaf),
    ("apiVersion", Leaf),
    ("metadata", Struct(OBJECT_META)),
    (
        "spec",
        Struct(&[
            ("holderIdentity", Leaf),
            ("leaseDurationSeconds", Leaf),
            ("acquireTime", Leaf),
            ("renewTime", Leaf),
            ("leaseTransitions", Leaf),
            ("strategy", Leaf),
            ("preferredHolder", Leaf),
        ]),
    ),
];

const LEASE_CANDIDATE: &[(&str, Field)] = &[
    ("kind", Leaf),
    ("apiVersion", Leaf),
    ("metadata", Struct(OBJECT_META)),
    (
        "spec",
        Struct(&[
            ("leaseName", Leaf),
            ("pingTime", Leaf),
            ("renewTime", Leaf),
            ("binaryVersion", Leaf),
            ("emulationVersion", Leaf),
            ("strategy", Leaf),
        ]),
    ),
];

const CONFIG_MAP: &[(&str, Field)] = &[
    ("kind", Leaf),
    ("apiVersion", Leaf),
    ("metadata", Struct(OBJECT_META)),
    ("immutable", Leaf),
    ("data", Map),
    ("binaryData", Map),
];

const NAMESPACE: &[(&str, Field)] = &[
    ("kind", Leaf),
    ("apiVersion", Leaf),
    ("metadata", Struct(OBJECT_META)),
    ("spec", Struct(&[("finalizers", Leaf)])),
    (
        "status",
        Struct(&[
            ("phase", Leaf),
            (
                "conditions",
                List(&[
                    ("type", Leaf),
                    ("status", Leaf),
                    ("lastTransitionTime", Leaf),
                    ("reason", Leaf),
                    ("message", Leaf),
                ]),
            ),
        ]),
    ),
];

const SERVICE_ACCOUNT: &[(&str, Field)] = &[
    ("kind", Leaf),
    ("apiVersion", Leaf),
    ("metadata", Struct(OBJECT_META)),
    ("secrets", List(OBJECT_REFERENCE)),
    ("imagePullSecrets", List(&[("name", Leaf)])),
    ("automountServiceAccountToken", Leaf),
];

const ROLE: &[(&str, Field)] = &[
    ("kind", Leaf),
    ("apiVersion", Leaf),
    ("metadata", Struct(OBJECT_META)),
    (
        "rules",
        List(&[
            ("verbs", Leaf),
            ("apiGroups", Leaf),
            ("resources", Leaf),
            ("resourceNames", Leaf),
            ("nonResourceURLs", Leaf),
        ]),
    ),
];

const ROLE_BINDING: &[(&str, Field)] = &[
    ("kind", Leaf),
    ("apiVersion", Leaf),
    ("metadata", Struct(OBJECT_META)),
    ("subjects", List(&[("kind", Leaf), ("apiGroup", Leaf), ("name", Leaf), ("namespace", Leaf)])),
    ("roleRef", Struct(&[("apiGroup", Leaf), ("kind", Leaf), ("name", Leaf)])),
];

/// core/v1 Event.
const EVENT: &[(&str, Field)] = &[
    ("kind", Leaf),
    ("apiVersion", Leaf),
    ("metadata", Struct(OBJECT_META)),
    ("involvedObject", Struct(OBJECT_REFERENCE)),
    ("reason", Leaf),
    ("message", Leaf),
    ("source", Struct(&[("component", Leaf), ("host", Leaf)])),
    ("firstTimestamp", Leaf),
    ("lastTimestamp", Leaf),
    ("count", Leaf),
    ("type", Leaf),
    ("eventTime", Leaf),
    ("series", Struct(&[("count", Leaf), ("lastObservedTime", Leaf)])),
    ("action", Leaf),
    ("related", Struct(OBJECT_REFERENCE)),
    ("reportingComponent", Leaf),
    ("reportingInstance", Leaf),
];

fn fields_of(kind: Kind) -> &'static [(&'static str, Field)] {
    match kind {
        Kind::Lease => LEASE,
        Kind::LeaseCandidate => LEASE_CANDIDATE,
        Kind::ConfigMap => CONFIG_MAP,
        Kind::Namespace => NAMESPACE,
        Kind::ServiceAccount => SERVICE_ACCOUNT,
        Kind::Role => ROLE,
        Kind::RoleBinding => ROLE_BINDING,
        Kind::Event => EVENT,
    }
}

/// The most strict decoding reports (sigs.k8s.io/json `saveStrictError`).
const MAX_REPORTED: usize = 100;

/// The paths of the fields of `body` (an object of `kind` as JSON) that `kind`'s Go type does
/// not have, as strict decoding names them (`spec.bogus`, `rules[0].verb`), in order.
pub(crate) fn unknown_fields(kind: Kind, body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    // A tree cannot fail to be read; a part of the wrong shape is the decoder's error, not ours.
    let _ = Walk { fields: fields_of(kind), list: false, path: String::new(), out: &mut out }.deserialize(body);
    out
}

/// The fields of an apply configuration that structured-merge-diff's validation reports
/// (kubernetes-sigs/structured-merge-diff@15d0754 `typed/validate.go:172-190`
/// `visitMapItems`): a map's iteration stops at its first undeclared key, so each map reports
/// at most one, and the keys after it (and what lies under them) are not visited. Go visits a
/// map's keys in a random order; here, the configuration's. Paths as its `PathElement`s print
/// them: `.spec.holderIdentiy`, `.rules[1].verb` (an associative list's keyed form, as
/// `ownerReferences[uid="…"]`, is printed by index).
pub(crate) fn undeclared_in_apply(kind: Kind, config: &Value) -> Vec<String> {
    // `unknown_fields` lists every unknown key in document order; a key is not visited when an
    // earlier one of its own map, or of a map above it, was undeclared.
    let parent = |path: &str| path.rfind('.').map_or("", |i| &path[..i]).to_string();
    let mut stopped: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for path in unknown_fields(kind, config) {
        let map = parent(&path);
        let under = |stop: &String| {
            stop.is_empty()
                || map == *stop
                || map.strip_prefix(stop.as_str()).is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
        };
        if !stopped.iter().any(under) {
            out.push(format!(".{path}"));
        }
        stopped.push(map);
    }
    out
}

/// [`unknown_fields`] of a body still as text, read without building its tree (the HTTP
/// adapter's Lease renewals); `None` if it is not JSON.
pub fn unknown_fields_in_text(kind: Kind, text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut reader = serde_json::Deserializer::from_str(text);
    Walk { fields: fields_of(kind), list: false, path: String::new(), out: &mut out }.deserialize(&mut reader).ok()?;
    reader.end().ok()?;
    Some(out)
}

/// A map's key, borrowed from the body where it can be (a key without escapes, a tree's key).
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Cow<'de, str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(key))
    }
    fn visit_str<E>(self, key: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(key.to_string()))
    }
}

/// One part of a body being read: a struct (`list` false) whose fields' values are read on
/// (known) or skipped (unknown, named in `out`), or a list of such structs (`list` true), each
/// at `path[i]`. A part of another shape passes: its type error is the decoder's.
struct Walk<'a> {
    fields: &'static [(&'static str, Field)],
    list: bool,
    path: String,
    out: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(Key)? {
            if self.list {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            // The path is built only where it is kept or walked on: a body's known leaves (most of
            // a Lease renewal's keys) cost a comparison each, no allocation.
            let path = || if self.path.is_empty() { key.to_string() } else { format!("{}.{key}", self.path) };
            let out = &mut *self.out;
            match self.fields.iter().find(|(name, _)| *name == key).map(|(_, field)| field) {
                Some(Struct(fields)) => map.next_value_seed(Walk { fields, list: false, path: path(), out })?,
                Some(List(fields)) => map.next_value_seed(Walk { fields, list: true, path: path(), out })?,
                Some(Leaf | Map | Raw) => {
                    map.next_value::<IgnoredAny>()?;
                }
                None => {
                    let path = path();
                    if out.len() < MAX_REPORTED && !out.contains(&path) {
                        out.push(path);
                    }
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        loop {
            let more = if self.list {
                let path = format!("{}[{i}]", self.path);
                seq.next_element_seed(Walk { fields: self.fields, list: false, path, out: &mut *self.out })?.is_some()
            } else {
                seq.next_element::<IgnoredAny>()?.is_some()
            };
            if !more {
                return Ok(());
            }
            i += 1;
        }
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{LeaseCandidateSpec, LeaseSpec, MicroTime};
    use serde_json::json;

    /// The spec tables of the two kinds the server decodes into its own types name those types'
    /// fields, in their order: a field added to one is missed by none.
    #[test]
    fn the_spec_tables_name_the_decoded_types_fields() {
        let spec_table = |table: &[(&'static str, Field)]| -> Vec<&'static str> {
            match table.iter().find(|(name, _)| *name == "spec") {
                Some((_, Struct(fields))) => fields.iter().map(|(name, _)| *name).collect(),
                _ => panic!("a spec struct"),
            }
        };
        let keys = |value: Value| -> Vec<String> { value.as_object().unwrap().keys().cloned().collect() };
        let time = Some(MicroTime::from_unix_micros(0));
        let lease = LeaseSpec {
            holder_identity: Some("a".into()),
            lease_duration_seconds: Some(1),
            acquire_time: time,
            renew_time: time,
            lease_transitions: Some(1),
            strategy: Some("s".into()),
            preferred_holder: Some("b".into()),
        };
        assert_eq!(keys(serde_json::to_value(&lease).unwrap()), spec_table(LEASE));
        let candidate = LeaseCandidateSpec {
            lease_name: "l".into(),
            ping_time: time,
            renew_time: time,
            binary_version: "1.0.0".into(),
            emulation_version: "1.0.0".into(),
            strategy: "s".into(),
        };
        assert_eq!(keys(serde_json::to_value(&candidate).unwrap()), spec_table(LEASE_CANDIDATE));
    }

    /// Paths as sigs.k8s.io/json builds them (`kubernetes_patch.go` `newFieldError`,
    /// `appendStrictFieldStackKey`, `appendStrictFieldStackIndex`): keys joined by `.`, list
    /// positions as `[i]`, a top-level key alone; in the body's order; a map's keys, a
    /// `fieldsV1` and every known field pass.
    #[test]
    fn unknown_fields_are_named_as_strict_decoding_names_them() {
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "extra": 1,
            "metadata": {"name": "r", "labels": {"any": "x"}, "finalizers": ["f"], "nmae": "typo",
                         "ownerReferences": [{"name": "o", "colour": "red"}],
                         "managedFields": [{"manager": "m", "fieldsV1": {"f:anything": {}}}]},
            "rules": [{"verbs": ["get"]}, {"verb": ["get"], "resources": ["leases"], "apiGroup": [""]}]});
        let expected =
            ["extra", "metadata.nmae", "metadata.ownerReferences[0].colour", "rules[1].verb", "rules[1].apiGroup"];
        assert_eq!(unknown_fields(Kind::Role, &role), expected);
        // Read from its text, without a tree, the same.
        assert_eq!(unknown_fields_in_text(Kind::Role, &role.to_string()).unwrap(), expected);
        assert_eq!(unknown_fields_in_text(Kind::Role, "{\"rules\": [1, {\"x\": 1}]} trailing"), None);
        // A key with an escape is read too (owned, not borrowed).
        assert_eq!(unknown_fields_in_text(Kind::Lease, r#"{"sp\u0065c": {"h\"x": 1}}"#).unwrap(), ["spec.h\"x"]);
        let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
            "spec": {"holderIdentity": "a", "holderIdentiy": "b", "leaseDurationSeconds": 15}});
        assert_eq!(unknown_fields(Kind::Lease, &lease), ["spec.holderIdentiy"]);
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"any-key": "v"}, "immutable": false});
        assert!(unknown_fields(Kind::ConfigMap, &config_map).is_empty());
    }

    /// An apply's undeclared fields as structured-merge-diff reports them: one a map, none under
    /// or after a map's first, a dot in front.
    #[test]
    fn an_applys_undeclared_fields_are_one_a_map() {
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r", "nmae": "typo", "ownerReferences": [{"name": "o", "colour": "red"}]},
            "rules": [{"verbs": ["get"]}, {"verb": ["get"], "resources": ["leases"], "apiGroup": [""]}]});
        assert_eq!(undeclared_in_apply(Kind::Role, &role), [".metadata.nmae", ".rules[1].verb"]);
        let stops = json!({"extra": 1, "metadata": {"nmae": "typo"}});
        assert_eq!(undeclared_in_apply(Kind::Role, &stops), [".extra"]);
    }

    /// At most 100 are reported, each once.
    #[test]
    fn at_most_a_hundred_unknown_fields_are_named() {
        let mut spec = serde_json::Map::new();
        for i in 0..150 {
            spec.insert(format!("f{i}"), json!(i));
        }
        let lease = json!({"spec": spec});
        let unknown = unknown_fields(Kind::Lease, &lease);
        assert_eq!(unknown.len(), 100);
        assert_eq!((unknown[0].as_str(), unknown[99].as_str()), ("spec.f0", "spec.f99"));
    }
}
