//! What requests carry and the store holds: a request and its body as a client sent them, the
//! object an answer returns, and the typed form the server stores each kind in.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::microtime::MicroTime;
use super::types::{
    ConfigMap, JsonObject, Kind, Lease, LeaseCandidate, Namespace, ObjectMeta, Role, RoleBinding, ServiceAccount, User,
    Verb,
};

/// A request body, as a client sent it.
#[derive(Clone, Debug, Default)]
pub enum Body {
    #[default]
    None,
    /// A typed Lease (the hot path of client-go's LeaseLock: no JSON at all).
    Lease(Arc<Lease>),
    ConfigMap(Arc<ConfigMap>),
    /// A typed LeaseCandidate: `object` with `time` set, if one is given. A candidate's
    /// `ensureLease` and the election controller's ping send their cached copy with one time
    /// set, and no JSON is built, copied and decoded for it; the server makes the one copy (as
    /// it decodes, or, for a time write on the object it holds, into a recycled old version:
    /// `ApiServer::candidate_time_write`).
    LeaseCandidate {
        object: Arc<LeaseCandidate>,
        time: Option<CandidateTime>,
    },
    /// Any object, or a merge patch / apply configuration.
    Json(Value),
    /// The same, shared by its sender: a body sent again and again unchanged (a reconciler's
    /// apply every period) is neither built nor copied per request, and the server's memory
    /// of an unchanged write knows it by its pointer.
    SharedJson(Arc<Value>),
    /// Raw JSON text as a user sent it: decode errors are the server's.
    Text(String),
    /// A strategic merge patch's text as a user sent it (`application/strategic-merge-patch+
    /// json`: kubectl's client-side apply to an existing object). Applied as a merge patch (no
    /// simulated kind has a list a strategy merges), but a patch that does not decode is named
    /// as the strategic patcher names it (`ApiServer::patch`).
    StrategicMergePatch(String),
    /// A JSON patch's text as a user sent it (`application/json-patch+json`, RFC 6902: a list
    /// of operations), applied by the server to the live object (`json_patch`).
    JsonPatch(String),
    /// An object of a kind kept as JSON (an Event) as the server keeps it (what decoding its
    /// JSON gives): an elector's recorder builds it directly, so no JSON is built, copied and
    /// decoded for it.
    JsonKind(Kind, Arc<JsonObject>),
    /// The same, frozen to text ([`FrozenJson`]): an elector's Event, a sixth of the size of
    /// its tree while it is in flight (a fleet's leaders all record one at once at the start).
    Frozen(Kind, Arc<FrozenJson>),
}

/// The time a LeaseCandidate's writer sets: its owner's renewal, or the controller's ping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CandidateTime {
    Renew(MicroTime),
    Ping(MicroTime),
}

impl CandidateTime {
    /// The field this time is, as a bit of a manager's mask (`managed_fields::renewal_writer`).
    pub fn bit(self) -> u8 {
        match self {
            CandidateTime::Renew(_) => super::managed_fields::RENEW_TIME_BIT,
            CandidateTime::Ping(_) => super::managed_fields::PING_TIME_BIT,
        }
    }

    /// Is this time already `object`'s?
    pub fn is_set_on(self, object: &LeaseCandidate) -> bool {
        match self {
            CandidateTime::Renew(t) => object.spec.renew_time == Some(t),
            CandidateTime::Ping(t) => object.spec.ping_time == Some(t),
        }
    }

    /// `object` with this time set: what the writer's body decodes to.
    pub fn set_on(self, object: &LeaseCandidate) -> LeaseCandidate {
        let mut copy = object.clone();
        self.set(&mut copy);
        copy
    }

    /// Sets this time on `object`.
    pub fn set(self, object: &mut LeaseCandidate) {
        match self {
            CandidateTime::Renew(t) => object.spec.renew_time = Some(t),
            CandidateTime::Ping(t) => object.spec.ping_time = Some(t),
        }
    }
}

impl Body {
    /// The JSON of a [`Body::Json`] or [`Body::SharedJson`] body, as it lies.
    pub fn json(&self) -> Option<&Value> {
        match self {
            Body::Json(value) => Some(value),
            Body::SharedJson(value) => Some(value),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Request {
    pub user: Arc<User>,
    pub verb: Verb,
    pub kind: Kind,
    /// `""` for cluster-scoped kinds (Namespace) and for a List across namespaces.
    pub namespace: Arc<str>,
    /// The name in the URL; `""` for create (then the body's name is used) and list.
    pub name: Arc<str>,
    pub body: Body,
    /// The `fieldManager` query parameter; required for Apply. Without it the manager is what
    /// kubectl's user agent would give: `kubectl-create`, `kubectl-replace`, `kubectl-patch`.
    pub field_manager: Option<Arc<str>>,
    /// `force=true` (apply only).
    pub force: bool,
    /// The `fieldValidation` query parameter: what a create or update does with fields of its
    /// body that the kind's type does not have.
    pub field_validation: FieldValidation,
}

/// The `fieldValidation` query parameter of a create, update or patch (apiserver
/// `handlers/rest.go` `fieldValidation`; docs/sources/apiserver-wire.md §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Unknown fields are dropped. The simulated clients send this: client-go sends no
    /// parameter, whose default, `Warn`, only adds warnings, and no simulated client reads
    /// them; with `Ignore` no body is searched for unknown fields.
    Ignore,
    /// Unknown fields are dropped and named in `Warning` headers: the default (no parameter).
    Warn,
    /// An unknown field fails the request (400): what kubectl sends unless `--validate=false`.
    Strict,
}

impl FieldValidation {
    /// The parameter's value (`None`: absent); `Err` for a value the server does not take.
    pub fn parse(value: Option<&str>) -> Result<FieldValidation, &str> {
        match value {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(other),
        }
    }
}

/// A response body.
#[derive(Clone, Debug, PartialEq)]
pub enum Object {
    Lease(Arc<Lease>),
    ConfigMap(Arc<ConfigMap>),
    LeaseCandidate(Arc<LeaseCandidate>),
    /// Other kinds and lists, as the server's JSON.
    Json(Value),
    /// An object of a kind kept as JSON (an Event) as stored: its JSON
    /// (`kubectl::to_json`) is rendered only where it is wanted, not for every write's answer.
    JsonKind(Kind, Arc<JsonObject>),
    Deleted,
}

/// A stored object, typed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stored {
    Lease(Arc<Lease>),
    ConfigMap(Arc<ConfigMap>),
    Namespace(Arc<Namespace>),
    ServiceAccount(Arc<ServiceAccount>),
    Role(Arc<Role>),
    RoleBinding(Arc<RoleBinding>),
    LeaseCandidate(Arc<LeaseCandidate>),
    Json(Kind, Arc<JsonObject>),
    /// An Event, kept as text: see [`FrozenJson`].
    Frozen(Kind, Arc<FrozenJson>),
}

/// An object of a kind kept as JSON, its fields other than `metadata` held as compact JSON text
/// in their order. Events are written once (an elector records one at each leadership change)
/// and seldom read; as a tree each was ~3.2 KB (an `IndexMap` of `Value`s, 112 bytes an entry
/// with its hash index, and a string per key), a tenth of a fleet's memory, and as text ~0.5 KB.
/// A read decodes it again ([`FrozenJson::thaw`]): the same map, key for key and in order, since
/// only maps with no floating-point number are frozen (integers and strings round-trip through
/// the text exactly; a float might move in its last bit).
#[derive(Clone, Debug)]
pub struct FrozenJson {
    pub metadata: ObjectMeta,
    rest: Box<str>,
    /// The text's shape (the server's `frozen_shape`), where its writer knew it without
    /// reading the text: a recorder's Event, whose keys never change.
    shape: Option<&'static str>,
}

/// Equal objects: the shape follows from the text.
impl PartialEq for FrozenJson {
    fn eq(&self, other: &Self) -> bool {
        self.metadata == other.metadata && self.rest == other.rest
    }
}

impl FrozenJson {
    /// An object frozen from its text, written by hand: `rest` must be what [`FrozenJson::of`]
    /// writes for the map it decodes to (compact JSON, keys in order, no floating-point
    /// number), and `shape` its shape (checked in debug builds).
    pub(crate) fn from_text(metadata: ObjectMeta, rest: String, shape: &'static str) -> FrozenJson {
        let frozen = FrozenJson { metadata, rest: rest.into_boxed_str(), shape: Some(shape) };
        debug_assert_eq!(
            FrozenJson::of(&frozen.thaw()).as_ref().map(FrozenJson::text),
            Some(frozen.text()),
            "the text is the map's as `of` writes it"
        );
        frozen
    }

    /// The shape its writer gave it (see [`FrozenJson::from_text`]).
    pub(crate) fn shape(&self) -> Option<&'static str> {
        self.shape
    }

    /// `object` frozen, or `None` if a field holds a floating-point number.
    pub fn of(object: &JsonObject) -> Option<FrozenJson> {
        fn exact(v: &Value) -> bool {
            match v {
                Value::Number(n) => !n.is_f64(),
                Value::Array(items) => items.iter().all(exact),
                Value::Object(map) => map.values().all(exact),
                Value::Null | Value::Bool(_) | Value::String(_) => true,
            }
        }
        if !object.rest.values().all(exact) {
            return None;
        }
        let rest = serde_json::to_string(&object.rest).expect("a map of JSON values serialises").into_boxed_str();
        let frozen = FrozenJson { metadata: object.metadata.clone(), rest, shape: None };
        debug_assert!(frozen.thaw() == *object, "a frozen object thaws to itself");
        Some(frozen)
    }

    /// Its fields other than `metadata`, as the compact JSON text of their map.
    pub fn text(&self) -> &str {
        &self.rest
    }

    pub fn thaw(&self) -> JsonObject {
        JsonObject {
            metadata: self.metadata.clone(),
            rest: serde_json::from_str(&self.rest).expect("text frozen from a map decodes"),
        }
    }
}

/// The wire JSON of a typed object: `kind`, `apiVersion`, then the struct's fields in Go order.
/// [`object_json`] written straight to bytes, the same bytes `serde_json::to_vec` of it gives
/// (a test holds them equal): the kind and apiVersion, then the struct's fields, without the
/// tree of values in between (an HTTP answer's rendering).
pub fn object_bytes<T: Serialize>(kind: Kind, object: &T) -> Vec<u8> {
    let inner = serde_json::to_vec(object).unwrap_or_else(|_| b"{}".to_vec());
    let mut out = Vec::with_capacity(inner.len() + 64);
    out.extend_from_slice(b"{\"kind\":");
    serde_json::to_writer(&mut out, kind.kind_name()).expect("a string serialises");
    out.extend_from_slice(b",\"apiVersion\":");
    serde_json::to_writer(&mut out, kind.api_version()).expect("a string serialises");
    match inner.as_slice() {
        b"{}" => out.push(b'}'),
        [b'{', rest @ ..] => {
            out.push(b',');
            out.extend_from_slice(rest);
        }
        _ => out.push(b'}'),
    }
    out
}

pub fn object_json<T: Serialize>(kind: Kind, object: &T) -> Value {
    let mut map = Map::new();
    map.insert("kind".into(), json!(kind.kind_name()));
    map.insert("apiVersion".into(), json!(kind.api_version()));
    if let Ok(Value::Object(fields)) = serde_json::to_value(object) {
        map.extend(fields);
    }
    Value::Object(map)
}

fn decode_typed<T: DeserializeOwned>(value: &Value) -> Result<Arc<T>, String> {
    T::deserialize(value).map(Arc::new).map_err(|e| e.to_string())
}

impl Stored {
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Stored::Lease(_) => Kind::Lease,
            Stored::ConfigMap(_) => Kind::ConfigMap,
            Stored::Namespace(_) => Kind::Namespace,
            Stored::ServiceAccount(_) => Kind::ServiceAccount,
            Stored::Role(_) => Kind::Role,
            Stored::RoleBinding(_) => Kind::RoleBinding,
            Stored::LeaseCandidate(_) => Kind::LeaseCandidate,
            Stored::Json(kind, _) | Stored::Frozen(kind, _) => *kind,
        }
    }

    pub(crate) fn meta(&self) -> &ObjectMeta {
        match self {
            Stored::Lease(o) => &o.metadata,
            Stored::ConfigMap(o) => &o.metadata,
            Stored::Namespace(o) => &o.metadata,
            Stored::ServiceAccount(o) => &o.metadata,
            Stored::Role(o) => &o.metadata,
            Stored::RoleBinding(o) => &o.metadata,
            Stored::LeaseCandidate(o) => &o.metadata,
            Stored::Json(_, o) => &o.metadata,
            Stored::Frozen(_, o) => &o.metadata,
        }
    }

    /// Mutable metadata; clones the object only if a client still shares it.
    pub(super) fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Stored::Lease(o) => &mut Arc::make_mut(o).metadata,
            Stored::ConfigMap(o) => &mut Arc::make_mut(o).metadata,
            Stored::Namespace(o) => &mut Arc::make_mut(o).metadata,
            Stored::ServiceAccount(o) => &mut Arc::make_mut(o).metadata,
            Stored::Role(o) => &mut Arc::make_mut(o).metadata,
            Stored::RoleBinding(o) => &mut Arc::make_mut(o).metadata,
            Stored::LeaseCandidate(o) => &mut Arc::make_mut(o).metadata,
            Stored::Json(_, o) => &mut Arc::make_mut(o).metadata,
            Stored::Frozen(_, o) => &mut Arc::make_mut(o).metadata,
        }
    }

    /// The metadata, if no client shares the object (nothing is cloned).
    fn unique_meta_mut(&mut self) -> Option<&mut ObjectMeta> {
        match self {
            Stored::Lease(o) => Arc::get_mut(o).map(|o| &mut o.metadata),
            Stored::ConfigMap(o) => Arc::get_mut(o).map(|o| &mut o.metadata),
            Stored::Namespace(o) => Arc::get_mut(o).map(|o| &mut o.metadata),
            Stored::ServiceAccount(o) => Arc::get_mut(o).map(|o| &mut o.metadata),
            Stored::Role(o) => Arc::get_mut(o).map(|o| &mut o.metadata),
            Stored::RoleBinding(o) => Arc::get_mut(o).map(|o| &mut o.metadata),
            Stored::LeaseCandidate(o) => Arc::get_mut(o).map(|o| &mut o.metadata),
            Stored::Json(_, o) => Arc::get_mut(o).map(|o| &mut o.metadata),
            Stored::Frozen(_, o) => Arc::get_mut(o).map(|o| &mut o.metadata),
        }
    }

    /// [`Stored::to_json`] without `metadata.managedFields`, for a diff of tracked fields
    /// (managedFields is not one): the object is copied with its entries dropped (each entry's
    /// FieldsV1 trie is shared, so the copy is a few strings) instead of rendering every trie
    /// into JSON — most of a LeaseCandidate write's time (docs/performance.md).
    pub(crate) fn json_for_diff(&self) -> Value {
        if self.meta().managed_fields.is_empty() {
            return self.to_json();
        }
        let mut copy = self.clone();
        copy.meta_mut().managed_fields = Vec::new();
        copy.to_json()
    }

    /// A LeaseCandidate, shared.
    pub(crate) fn lease_candidate(&self) -> Option<&Arc<LeaseCandidate>> {
        match self {
            Stored::LeaseCandidate(o) => Some(o),
            _ => None,
        }
    }

    /// [`Stored::to_json`] without `metadata.managedFields`, the same map otherwise (its keys in
    /// the same order). Rendering the managers' entries — each a time and a FieldsV1 trie —
    /// was most of rendering a small object; a server-side apply that merges onto the live
    /// object needs none of them (see `ApiServer::apply`).
    pub(crate) fn json_without_managed_fields(&mut self) -> Value {
        let Some(entries) = self.unique_meta_mut().map(|m| std::mem::take(&mut m.managed_fields)) else {
            // Shared with a client: rendered whole, the key dropped.
            let mut json = self.to_json();
            if let Some(meta) = json.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.shift_remove("managedFields");
            }
            return json;
        };
        // (An empty list is not written: `ObjectMeta` skips it.)
        let json = self.to_json();
        self.unique_meta_mut().expect("still unshared").managed_fields = entries;
        json
    }

    pub(crate) fn to_json(&self) -> Value {
        match self {
            Stored::Lease(o) => object_json(Kind::Lease, o.as_ref()),
            Stored::ConfigMap(o) => object_json(Kind::ConfigMap, o.as_ref()),
            Stored::Namespace(o) => object_json(Kind::Namespace, o.as_ref()),
            Stored::ServiceAccount(o) => object_json(Kind::ServiceAccount, o.as_ref()),
            Stored::Role(o) => object_json(Kind::Role, o.as_ref()),
            Stored::RoleBinding(o) => object_json(Kind::RoleBinding, o.as_ref()),
            Stored::LeaseCandidate(o) => object_json(Kind::LeaseCandidate, o.as_ref()),
            Stored::Json(kind, o) => object_json(*kind, o.as_ref()),
            Stored::Frozen(kind, o) => object_json(*kind, &o.thaw()),
        }
    }

    /// Typed decode of an object's JSON; the error is the decoder's text.
    pub(super) fn decode(kind: Kind, value: &Value) -> Result<Stored, String> {
        Ok(match kind {
            Kind::Lease => Stored::Lease(decode_typed(value)?),
            Kind::ConfigMap => Stored::ConfigMap(decode_typed(value)?),
            Kind::Namespace => Stored::Namespace(decode_typed(value)?),
            Kind::ServiceAccount => Stored::ServiceAccount(decode_typed(value)?),
            Kind::Role => Stored::Role(decode_typed(value)?),
            Kind::RoleBinding => Stored::RoleBinding(decode_typed(value)?),
            // Into the Go type, as the server stores it: the spec's fields in the type's order,
            // its times checked as MicroTimes, unknown fields dropped (`LeaseCandidateSpec`).
            Kind::LeaseCandidate => Stored::LeaseCandidate(decode_typed(value)?),
            Kind::Event => {
                let mut object: JsonObject = JsonObject::deserialize(value).map_err(|e| e.to_string())?;
                // `kind` and `apiVersion` are the wire's, not the object's.
                // (shift_remove: a plain remove would swap the last field into its place.)
                let rest = Arc::make_mut(&mut object.rest);
                rest.shift_remove("kind");
                rest.shift_remove("apiVersion");
                Stored::Json(kind, Arc::new(object))
            }
        })
    }

    /// This object as the store keeps it: an Event frozen ([`FrozenJson`]), anything else as is.
    pub(super) fn for_store(self) -> Stored {
        match self {
            Stored::Json(Kind::Event, o) => match FrozenJson::of(&o) {
                Some(frozen) => Stored::Frozen(Kind::Event, Arc::new(frozen)),
                None => Stored::Json(Kind::Event, o),
            },
            other => other,
        }
    }

    pub(super) fn to_object(&self) -> Object {
        match self {
            Stored::Lease(o) => Object::Lease(Arc::clone(o)),
            Stored::ConfigMap(o) => Object::ConfigMap(Arc::clone(o)),
            Stored::LeaseCandidate(o) => Object::LeaseCandidate(Arc::clone(o)),
            Stored::Json(kind, o) => Object::JsonKind(*kind, Arc::clone(o)),
            Stored::Frozen(kind, o) => Object::JsonKind(*kind, Arc::new(o.thaw())),
            other => Object::Json(other.to_json()),
        }
    }

    /// Equal in everything a user can change (labels, annotations and body), ignoring system
    /// metadata.
    pub(super) fn same_content(&self, other: &Stored) -> bool {
        let (a, b) = (self.meta(), other.meta());
        if a.labels != b.labels || a.annotations != b.annotations {
            return false;
        }
        match (self, other) {
            (Stored::Lease(a), Stored::Lease(b)) => a.spec == b.spec,
            (Stored::ConfigMap(a), Stored::ConfigMap(b)) => a.data == b.data,
            (Stored::Namespace(_), Stored::Namespace(_)) | (Stored::ServiceAccount(_), Stored::ServiceAccount(_)) => {
                true
            }
            (Stored::Role(a), Stored::Role(b)) => a.rules == b.rules,
            (Stored::RoleBinding(a), Stored::RoleBinding(b)) => a.subjects == b.subjects && a.role_ref == b.role_ref,
            (Stored::LeaseCandidate(a), Stored::LeaseCandidate(b)) => a.spec == b.spec,
            (Stored::Json(ka, a), Stored::Json(kb, b)) => ka == kb && a.rest == b.rest,
            (Stored::Json(ka, a), Stored::Frozen(kb, b)) | (Stored::Frozen(kb, b), Stored::Json(ka, a)) => {
                ka == kb && a.rest == b.thaw().rest
            }
            (Stored::Frozen(ka, a), Stored::Frozen(kb, b)) => ka == kb && a.thaw().rest == b.thaw().rest,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(rest: Value) -> JsonObject {
        let Value::Object(rest) = rest else { panic!("an object") };
        JsonObject {
            metadata: ObjectMeta { name: "e".into(), namespace: "ns".into(), ..Default::default() },
            rest: rest.into(),
        }
    }

    /// A frozen object thaws to itself: keys in their order (not sorted), nested maps and
    /// arrays, escapes and non-ASCII text, the integers' extremes, nulls and empty strings.
    #[test]
    fn frozen_objects_thaw_to_themselves() {
        let cases = [
            serde_json::json!({}),
            serde_json::json!({"z": 1, "a": {"y": [1, -2, {"b": null}], "x": ""}, "m": true}),
            serde_json::json!({"message": "a \"quoted\"\n\tüñï ß \u{1F600} \\ /", "count": u64::MAX, "n": i64::MIN}),
            serde_json::json!({"eventTime": null, "reportingInstance": "", "list": [], "map": {}}),
        ];
        for rest in cases {
            let original = object(rest.clone());
            let frozen = FrozenJson::of(&original).expect("no floats: frozen");
            assert_eq!(frozen.thaw(), original, "{rest}");
            let keys: Vec<_> = frozen.thaw().rest.keys().cloned().collect();
            let expected: Vec<_> = original.rest.keys().cloned().collect();
            assert_eq!(keys, expected, "the order kept");
        }
    }

    /// A float anywhere (`1.5`, `1e300`, `-0.0`, deep in an array) keeps the object a tree: its
    /// text might not decode to the same bits.
    #[test]
    fn objects_with_floats_are_not_frozen() {
        for rest in [
            serde_json::json!({"count": 1.5}),
            serde_json::json!({"a": {"b": [1, 2, 1e300]}}),
            serde_json::json!({"x": -0.0}),
        ] {
            assert!(FrozenJson::of(&object(rest.clone())).is_none(), "{rest}");
        }
        let stored = Stored::Json(Kind::Event, Arc::new(object(serde_json::json!({"count": 0.1}))));
        assert!(matches!(stored.for_store(), Stored::Json(..)));
    }

    /// A stored Event is frozen and reads back as the tree it was: the same JSON, the same
    /// answer object, the same content as the tree (labels and body).
    #[test]
    fn events_are_stored_frozen_and_read_as_stored() {
        let tree = Stored::Json(
            Kind::Event,
            Arc::new(object(serde_json::json!({"involvedObject": {"kind": "Lease", "name": "l"}, "count": 1}))),
        );
        let frozen = tree.clone().for_store();
        assert!(matches!(frozen, Stored::Frozen(Kind::Event, _)));
        assert_eq!(frozen.to_json(), tree.to_json());
        assert_eq!(frozen.to_object(), tree.to_object());
        assert!(frozen.same_content(&tree) && tree.same_content(&frozen) && frozen.same_content(&frozen));
        let other = Stored::Json(Kind::Event, Arc::new(object(serde_json::json!({"count": 2}))));
        assert!(!frozen.same_content(&other) && !other.same_content(&frozen));
    }
}
