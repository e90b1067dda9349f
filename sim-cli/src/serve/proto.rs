//! The protobuf request bodies kubectl 1.32 and later sends for typed `create` commands and
//! `auth can-i` (shared/reference/kubectl-wire.md §2.2): `k8s\0`, then a `runtime.Unknown`
//! holding the TypeMeta and the object's bytes. Decoded into the JSON the server would have
//! been sent, so the one API server handles it; answers stay JSON (kubectl accepts them).
//! Field numbers from k8s.io/api's `generated.proto` files (docs/sources/apiserver-wire.md).

use std::collections::BTreeMap;

use prost::Message;
use serde_json::{Map, Value, json};

/// The four magic bytes before a protobuf-encoded object.
const MAGIC: &[u8] = b"k8s\0";

#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", tag = "2")]
    raw: Vec<u8>,
    #[prost(string, tag = "3")]
    content_encoding: String,
    #[prost(string, tag = "4")]
    content_type: String,
}

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, tag = "1")]
    api_version: String,
    #[prost(string, tag = "2")]
    kind: String,
}

#[derive(Clone, PartialEq, Message)]
struct ObjectMeta {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    generate_name: String,
    #[prost(string, tag = "3")]
    namespace: String,
    #[prost(string, tag = "6")]
    resource_version: String,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    annotations: BTreeMap<String, String>,
}

/// Namespace, ServiceAccount, SelfSubjectAccessReview (and any kind read for its metadata
/// only): `metadata` is field 1 of every object.
#[derive(Clone, PartialEq, Message)]
struct MetadataOnly {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
}

#[derive(Clone, PartialEq, Message)]
struct ConfigMap {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, string", tag = "2")]
    data: BTreeMap<String, String>,
    #[prost(btree_map = "string, bytes", tag = "3")]
    binary_data: BTreeMap<String, Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct PolicyRule {
    #[prost(string, repeated, tag = "1")]
    verbs: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    api_groups: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    resources: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    resource_names: Vec<String>,
    #[prost(string, repeated, tag = "5")]
    non_resource_urls: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Role {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    rules: Vec<PolicyRule>,
}

#[derive(Clone, PartialEq, Message)]
struct Subject {
    #[prost(string, tag = "1")]
    kind: String,
    #[prost(string, tag = "2")]
    api_group: String,
    #[prost(string, tag = "3")]
    name: String,
    #[prost(string, tag = "4")]
    namespace: String,
}

#[derive(Clone, PartialEq, Message)]
struct RoleRef {
    #[prost(string, tag = "1")]
    api_group: String,
    #[prost(string, tag = "2")]
    kind: String,
    #[prost(string, tag = "3")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct RoleBinding {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    subjects: Vec<Subject>,
    #[prost(message, optional, tag = "3")]
    role_ref: Option<RoleRef>,
}

#[derive(Clone, PartialEq, Message)]
struct ResourceAttributes {
    #[prost(string, tag = "1")]
    namespace: String,
    #[prost(string, tag = "2")]
    verb: String,
    #[prost(string, tag = "3")]
    group: String,
    #[prost(string, tag = "4")]
    version: String,
    #[prost(string, tag = "5")]
    resource: String,
    #[prost(string, tag = "6")]
    subresource: String,
    #[prost(string, tag = "7")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct SelfSubjectAccessReviewSpec {
    #[prost(message, optional, tag = "1")]
    resource_attributes: Option<ResourceAttributes>,
}

#[derive(Clone, PartialEq, Message)]
struct SelfSubjectAccessReview {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<SelfSubjectAccessReviewSpec>,
}

fn meta_json(meta: Option<ObjectMeta>) -> Value {
    let meta = meta.unwrap_or_default();
    let mut map = Map::new();
    for (key, value) in [
        ("name", meta.name),
        ("generateName", meta.generate_name),
        ("namespace", meta.namespace),
        ("resourceVersion", meta.resource_version),
    ] {
        if !value.is_empty() {
            map.insert(key.into(), Value::String(value));
        }
    }
    if !meta.labels.is_empty() {
        map.insert("labels".into(), json!(meta.labels));
    }
    if !meta.annotations.is_empty() {
        map.insert("annotations".into(), json!(meta.annotations));
    }
    Value::Object(map)
}

fn non_empty(map: &mut Map<String, Value>, key: &str, value: Vec<String>) {
    if !value.is_empty() {
        map.insert(key.into(), json!(value));
    }
}

/// Is this body protobuf (by its magic)?
pub fn is_protobuf(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// The JSON object a protobuf body holds, or the decoder's complaint (answered as the API
/// server's 400 for an undecodable body).
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let rest = body.strip_prefix(MAGIC).ok_or("not a protobuf body (no k8s\\0 prefix)")?;
    let unknown = Unknown::decode(rest).map_err(|e| format!("decoding runtime.Unknown: {e}"))?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let raw = unknown.raw.as_slice();
    let bad = |e: prost::DecodeError| format!("decoding {}: {e}", type_meta.kind);
    let mut object = match type_meta.kind.as_str() {
        "Namespace" | "ServiceAccount" => {
            let o = MetadataOnly::decode(raw).map_err(bad)?;
            json!({"metadata": meta_json(o.metadata)})
        }
        "ConfigMap" => {
            let o = ConfigMap::decode(raw).map_err(bad)?;
            let mut map = Map::new();
            map.insert("metadata".into(), meta_json(o.metadata));
            if !o.data.is_empty() {
                map.insert("data".into(), json!(o.data));
            }
            if !o.binary_data.is_empty() {
                use super::base64::encode;
                let binary: BTreeMap<String, String> =
                    o.binary_data.iter().map(|(k, v)| (k.clone(), encode(v))).collect();
                map.insert("binaryData".into(), json!(binary));
            }
            if let Some(immutable) = o.immutable {
                map.insert("immutable".into(), Value::Bool(immutable));
            }
            Value::Object(map)
        }
        "Role" => {
            let o = Role::decode(raw).map_err(bad)?;
            let rules: Vec<Value> = o
                .rules
                .into_iter()
                .map(|r| {
                    let mut rule = Map::new();
                    non_empty(&mut rule, "verbs", r.verbs);
                    non_empty(&mut rule, "apiGroups", r.api_groups);
                    non_empty(&mut rule, "resources", r.resources);
                    non_empty(&mut rule, "resourceNames", r.resource_names);
                    non_empty(&mut rule, "nonResourceURLs", r.non_resource_urls);
                    Value::Object(rule)
                })
                .collect();
            json!({"metadata": meta_json(o.metadata), "rules": rules})
        }
        "RoleBinding" => {
            let o = RoleBinding::decode(raw).map_err(bad)?;
            let subjects: Vec<Value> = o
                .subjects
                .into_iter()
                .map(|s| {
                    let mut subject = Map::new();
                    for (key, value) in
                        [("kind", s.kind), ("apiGroup", s.api_group), ("name", s.name), ("namespace", s.namespace)]
                    {
                        if !value.is_empty() {
                            subject.insert(key.into(), Value::String(value));
                        }
                    }
                    Value::Object(subject)
                })
                .collect();
            let role_ref = o.role_ref.unwrap_or_default();
            json!({"metadata": meta_json(o.metadata), "subjects": subjects,
                "roleRef": {"apiGroup": role_ref.api_group, "kind": role_ref.kind, "name": role_ref.name}})
        }
        "SelfSubjectAccessReview" => {
            let o = SelfSubjectAccessReview::decode(raw).map_err(bad)?;
            let a = o.spec.unwrap_or_default().resource_attributes.unwrap_or_default();
            let mut attributes = Map::new();
            for (key, value) in [
                ("namespace", a.namespace),
                ("verb", a.verb),
                ("group", a.group),
                ("version", a.version),
                ("resource", a.resource),
                ("subresource", a.subresource),
                ("name", a.name),
            ] {
                if !value.is_empty() {
                    attributes.insert(key.into(), Value::String(value));
                }
            }
            json!({"metadata": meta_json(o.metadata), "spec": {"resourceAttributes": attributes}})
        }
        other => return Err(format!("protobuf bodies of kind {other:?} are not decoded; send JSON")),
    };
    if let Value::Object(map) = &mut object {
        let mut with_type = Map::new();
        with_type.insert("kind".into(), Value::String(type_meta.kind.clone()));
        with_type.insert("apiVersion".into(), Value::String(type_meta.api_version.clone()));
        with_type.append(map);
        object = Value::Object(with_type);
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta { api_version: api_version.into(), kind: kind.into() }),
            raw,
            content_encoding: String::new(),
            content_type: String::new(),
        };
        let mut body = MAGIC.to_vec();
        body.extend(unknown.encode_to_vec());
        body
    }

    #[test]
    fn a_namespace_and_an_access_review_decode_to_their_json() {
        let ns = MetadataOnly { metadata: Some(ObjectMeta { name: "op-leader".into(), ..Default::default() }) };
        let body = envelope("v1", "Namespace", ns.encode_to_vec());
        assert_eq!(
            decode(&body).unwrap(),
            json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "op-leader"}})
        );
        let review = SelfSubjectAccessReview {
            metadata: None,
            spec: Some(SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: "op-leader".into(),
                    verb: "get".into(),
                    group: "coordination.k8s.io".into(),
                    resource: "leases".into(),
                    ..Default::default()
                }),
            }),
        };
        let body = envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", review.encode_to_vec());
        let json = decode(&body).unwrap();
        assert_eq!(json["spec"]["resourceAttributes"]["verb"], "get");
        assert_eq!(json["spec"]["resourceAttributes"]["resource"], "leases");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode(b"k8s\0\xff\xff\xff").is_err());
        assert!(decode(b"{}").is_err());
    }
}
