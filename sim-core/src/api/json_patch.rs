//! JSON patch (RFC 6902) as kube-apiserver applies one (`application/json-patch+json`): the
//! operations decoded, then applied in order to the live object's JSON
//! (apiserver@24a394e5 `pkg/endpoints/handlers/patch.go:398-427` `applyJSPatch`, with
//! `gopkg.in/evanphx/json-patch.v4`); the result is decoded and written as a merge patch's is
//! (`ApiServer::patch_fully`). A failed operation is a 422 whose message is the generic one
//! (`errors.NewGenericServerResponse`: the library's own text is not sent).

use serde_json::Value;

use super::errors::ApiError;

/// At most this many operations (apiserver `handlers/patch.go:65`, `:418-422`: a 413).
const MAX_OPERATIONS: usize = 10_000;

/// At most this many bytes copied by `copy` operations in one patch (apiserver
/// `pkg/server/config.go:464`, `JSONPatchMaxCopyBytes`, set as the library's
/// `AccumulatedCopySizeLimit`): past it the patch fails as any operation does.
const MAX_COPIED_BYTES: usize = 3 * 1024 * 1024;

/// A visitor's scalar methods, each answering `$wrap(kind)` with the kind Go's decoder names.
macro_rules! forward_scalars {
    ($wrap:path) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($wrap("bool"))
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($wrap("number"))
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($wrap("number"))
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($wrap("number"))
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($wrap("string"))
        }
    };
}

/// The operations of a JSON patch, as the handler reads them once the object is read, and the
/// strict decoder's errors about them. With `searched` (fieldValidation Warn or Strict) the
/// body goes through `sigs.k8s.io/json`'s `UnmarshalStrict` into `[]handlers.jsonPatchOp` first
/// (apiserver@24a394e5 `handlers/patch.go:391-412`): a value of the wrong type is Go's
/// decoder's error, a 400 (`scan_strictly`); a field the type lacks or one given twice is a
/// strict error, each prefixed `json patch` (returned, for the caller to warn of or refuse).
/// Then `jsonpatch.DecodePatch` (`:414-417`) refuses a body that is not a list of objects with
/// Go's decoder error, a 400. `null` is no operations. More than [`MAX_OPERATIONS`] is a 413.
/// (The body's JSON was checked before the object was read: [`valid_json`].)
pub(super) fn decode(text: &str, searched: bool) -> Result<(Vec<Value>, Vec<String>), ApiError> {
    let value: Value = serde_json::from_str(text).map_err(|_| ApiError::bad_request("invalid JSON patch"))?;
    let strict_errors = if searched { scan_strictly(text, &value)? } else { Vec::new() };
    let refuse = |found: &Value, into: &str| {
        ApiError::bad_request(format!("json: cannot unmarshal {} into Go value of type {into}", go_kind(found)))
    };
    let ops = match value {
        Value::Null => Vec::new(),
        Value::Array(ops) => ops,
        other => return Err(refuse(&other, "jsonpatch.Patch")),
    };
    if let Some(bad) = ops.iter().find(|op| !matches!(op, Value::Object(_) | Value::Null)) {
        return Err(refuse(bad, "jsonpatch.Operation"));
    }
    if ops.len() > MAX_OPERATIONS {
        return Err(ApiError::request_entity_too_large(&format!(
            "The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    Ok((ops, strict_errors))
}

/// The fields of `handlers.jsonPatchOp` (`Op`, `Path`, `From` strings, `Value` anything).
const OP_FIELDS: [&str; 4] = ["op", "path", "from", "value"];

/// `UnmarshalStrict` of the body into `[]handlers.jsonPatchOp` (sigs.k8s.io/json@cfa47c3
/// `internal/golang/encoding/json/decode.go`): the first value of the wrong type, in the order
/// of the text, is the error (`saveError` keeps the first and decoding goes on; `:138-143`
/// words it, `:279-288` names the struct and field); otherwise the strict errors in the same
/// order — `unknown field "[1].vaule"` for a key the type lacks (matched case-sensitively,
/// `:815-816`), `duplicate field "[0].op"` for a field given again (`:699-707`) — each
/// prefixed `json patch` by the handler.
fn scan_strictly(text: &str, value: &Value) -> Result<Vec<String>, ApiError> {
    let refuse = |message: String| ApiError::bad_request(format!("error decoding patch: json: {message}"));
    let elements = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(_) => {
            serde_json::from_str::<Vec<Element>>(text).map_err(|_| ApiError::bad_request("invalid JSON patch"))?
        }
        other => {
            let kind = go_kind(other);
            return Err(refuse(format!("cannot unmarshal {kind} into Go value of type []handlers.jsonPatchOp")));
        }
    };
    let mut errors = Vec::new();
    for (i, element) in elements.iter().enumerate() {
        let fields = match element {
            Element::Null => continue,
            Element::Other(kind) => {
                return Err(refuse(format!("cannot unmarshal {kind} into Go value of type handlers.jsonPatchOp")));
            }
            Element::Object(fields) => fields,
        };
        let mut seen = [false; OP_FIELDS.len()];
        for (key, kind) in fields {
            let path = super::go_text::go_quote(&format!("[{i}].{key}"));
            let Some(field) = OP_FIELDS.iter().position(|f| f == key) else {
                errors.push(format!("json patch unknown field {path}"));
                continue;
            };
            if *key != "value" && !matches!(*kind, "string" | "null") {
                return Err(refuse(format!(
                    "cannot unmarshal {kind} into Go struct field jsonPatchOp.{key} of type string"
                )));
            }
            if std::mem::replace(&mut seen[field], true) {
                errors.push(format!("json patch duplicate field {path}"));
            }
        }
    }
    Ok(errors)
}

/// An element of the list: `null`, an object's keys in order (repeats kept) with the kind of
/// each value, or another kind.
enum Element {
    Null,
    Object(Vec<(String, &'static str)>),
    Other(&'static str),
}

/// The kind of a JSON value, as Go's decoder names it (the value itself skipped).
struct KindOf(&'static str);

impl<'de> serde::Deserialize<'de> for Element {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Element, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Element;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Element, A::Error> {
                let mut fields = Vec::new();
                while let Some((key, kind)) = map.next_entry::<String, KindOf>()? {
                    fields.push((key, kind.0));
                }
                Ok(Element::Object(fields))
            }
            fn visit_unit<E>(self) -> Result<Element, E> {
                Ok(Element::Null)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Element, A::Error> {
                KindVisitor.visit_seq(seq).map(|k| Element::Other(k.0))
            }
            forward_scalars!(Element::Other);
        }
        d.deserialize_any(V)
    }
}

impl<'de> serde::Deserialize<'de> for KindOf {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<KindOf, D::Error> {
        d.deserialize_any(KindVisitor)
    }
}

struct KindVisitor;

impl<'de> serde::de::Visitor<'de> for KindVisitor {
    type Value = KindOf;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<KindOf, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(KindOf("array"))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<KindOf, A::Error> {
        while map.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
        Ok(KindOf("object"))
    }
    fn visit_unit<E>(self) -> Result<KindOf, E> {
        Ok(KindOf("null"))
    }
    forward_scalars!(KindOf);
}

/// `json.Valid`: the handler refuses a patch body that is not JSON before it reads the object
/// (`handlers/patch.go:138-142`, `validateAndTranscodePatch` `:866-868`).
pub(super) fn valid_json(text: &str) -> Result<(), ApiError> {
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map(|_| ())
        .map_err(|_| ApiError::bad_request("invalid JSON patch"))
}

/// The JSON type as Go's decoder names it in an `UnmarshalTypeError`.
fn go_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Applies `ops` to `doc` as `Patch.Apply` does (evanphx/json-patch v4.13.0 `patch.go`, read at
/// 84a4bb1, whose v4 root differs from the tag only in how it wraps errors), quirks included:
/// `replace` of a missing object key adds it (the library's `get` finds no error there), `copy`
/// of one adds `null`, a `test` of one passes when its value is absent or `null`, and array
/// indices may count from the end (`SupportNegativeIndices`). The text of an error is for tests:
/// the server answers every failure alike.
///
/// Key order is the library's output: the document and every object a path goes through are
/// decoded into Go maps and so marshalled with sorted keys, as is every object inside a value a
/// `test` compares (`lazyNode.equal` decodes them); the rest keeps its order. It shows in the
/// strict-decoding error, which quotes the patched object.
pub(super) fn apply(mut doc: Value, ops: &[Value]) -> Result<Value, String> {
    let mut copied_bytes = 0;
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).unwrap_or("unknown");
        let value = || op.get("value").cloned().unwrap_or(Value::Null);
        match kind {
            "add" => {
                let path = text_field(op, "path")?;
                let (con, key) = find(&mut doc, &path).ok_or_else(|| format!("add: doc is missing path: {path}"))?;
                add(con, &key, value())?;
            }
            "remove" => {
                let path = text_field(op, "path")?;
                let (con, key) = find(&mut doc, &path).ok_or_else(|| format!("remove: doc is missing path: {path}"))?;
                remove(con, &key)?;
            }
            "replace" if text_field(op, "path")?.is_empty() => match value() {
                Value::Object(mut map) => {
                    map.sort_keys();
                    doc = Value::Object(map);
                }
                Value::Array(items) => doc = Value::Array(items),
                _ => return Err("replace operation value must be object or array".into()),
            },
            "replace" => {
                let path = text_field(op, "path")?;
                let (con, key) =
                    find(&mut doc, &path).ok_or_else(|| format!("replace: doc is missing path: {path}"))?;
                get(con, &key)?;
                set(con, &key, value())?;
            }
            "move" => {
                let from = text_field(op, "from")?;
                let (con, key) = find(&mut doc, &from).ok_or_else(|| format!("move: doc is missing from: {from}"))?;
                let moved = get(con, &key)?.cloned();
                remove(con, &key)?;
                let path = text_field(op, "path")?;
                let (con, key) = find(&mut doc, &path).ok_or_else(|| format!("move: doc is missing path: {path}"))?;
                add(con, &key, moved.unwrap_or(Value::Null))?;
            }
            "copy" => {
                let from = text_field(op, "from")?;
                let (con, key) = find(&mut doc, &from).ok_or_else(|| format!("copy: doc is missing from: {from}"))?;
                get(con, &key)?;
                let path = text_field(op, "path")?;
                find(&mut doc, &path).ok_or_else(|| format!("copy: doc is missing path: {path}"))?;
                // The value is copied once both places are found (`deepCopy` marshals it then, the
                // destination's path already decoded), and counted against the limit.
                let (con, key) = find(&mut doc, &from).expect("found above");
                let copied = get(con, &key)?.cloned();
                copied_bytes += copied.as_ref().map_or(0, |v| super::go_text::go_json_marshal(v).len());
                if copied_bytes > MAX_COPIED_BYTES {
                    return Err(format!("the accumulated size increase of copy is {copied_bytes}"));
                }
                let (con, key) = find(&mut doc, &path).expect("found above");
                add(con, &key, copied.unwrap_or(Value::Null))?;
            }
            "test" => {
                let path = text_field(op, "path")?;
                let expected = op.get("value");
                let tested = if path.is_empty() {
                    Some(&mut doc)
                } else {
                    let (con, key) =
                        find(&mut doc, &path).ok_or_else(|| format!("test: doc is missing path: {path}"))?;
                    get_mut(con, &key)?
                };
                match (tested, expected) {
                    (None, None | Some(Value::Null)) => {}
                    (Some(found), Some(expected)) if found == expected => sort_all(found),
                    _ => return Err(format!("testing value {path} failed")),
                }
            }
            other => return Err(format!("Unexpected kind: {other}")),
        }
    }
    if let Value::Object(map) = &mut doc {
        map.sort_keys();
    }
    Ok(doc)
}

/// An operation's `path` or `from`: a string (absent, `null` or another type is an error).
fn text_field(op: &Value, name: &str) -> Result<String, String> {
    op.get(name).and_then(Value::as_str).map(str::to_string).ok_or_else(|| format!("operation missing {name} field"))
}

/// RFC 6901's unescaping of one reference token.
fn decode_key(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// `findObject`: the container of `path`'s last token and that token, every object on the way
/// decoded (sorted); `None` where the library's is nil (no `/`, a step missing, `null` or a
/// scalar).
fn find<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let tokens: Vec<&str> = path.split('/').collect();
    let (last, parts) = tokens.split_last()?;
    if tokens.len() < 2 {
        return None;
    }
    let mut node = doc;
    for part in &parts[1..] {
        node = get_mut(node, &decode_key(part)).ok()??;
        match node {
            Value::Object(map) => map.sort_keys(),
            Value::Array(_) => {}
            _ => return None,
        }
    }
    Some((node, decode_key(last)))
}

/// An array index as `strconv.Atoi` reads it, counted from the end when negative, within
/// `0..len`.
fn index(key: &str, len: usize) -> Result<usize, String> {
    let i: i64 = key.parse().map_err(|_| format!("value was not a proper array index: '{key}'"))?;
    let i = if i < 0 { i + len as i64 } else { i };
    usize::try_from(i).ok().filter(|&i| i < len).ok_or_else(|| format!("Unable to access invalid index: {key}"))
}

/// The container's `get`: an object's missing key is no error (`None`); an array's bad index is.
fn get<'a>(con: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match con {
        Value::Object(map) => Ok(map.get(key)),
        Value::Array(items) => Ok(Some(&items[index(key, items.len())?])),
        _ => Err("not a container".into()),
    }
}

fn get_mut<'a>(con: &'a mut Value, key: &str) -> Result<Option<&'a mut Value>, String> {
    match con {
        Value::Object(map) => Ok(map.get_mut(key)),
        Value::Array(items) => {
            let i = index(key, items.len())?;
            Ok(Some(&mut items[i]))
        }
        _ => Err("not a container".into()),
    }
}

fn add(con: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match con {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            map.sort_keys();
        }
        Value::Array(items) if key == "-" => items.push(value),
        // One past the end is a place to add at (and, from the end, one before the first).
        Value::Array(items) => items.insert(index(key, items.len() + 1)?, value),
        _ => return Err("not a container".into()),
    }
    Ok(())
}

fn remove(con: &mut Value, key: &str) -> Result<(), String> {
    match con {
        Value::Object(map) => {
            map.shift_remove(key).ok_or_else(|| format!("Unable to remove nonexistent key: {key}"))?;
        }
        Value::Array(items) => {
            items.remove(index(key, items.len())?);
        }
        _ => return Err("not a container".into()),
    }
    Ok(())
}

/// `replace`'s `set`, after its `get` found the place.
fn set(con: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match con {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            map.sort_keys();
        }
        Value::Array(items) => {
            let i = index(key, items.len())?;
            items[i] = value;
        }
        _ => return Err("not a container".into()),
    }
    Ok(())
}

/// Every object in `value` sorted: what a successful `test` leaves (`lazyNode.equal` decodes
/// each object it compares into a Go map).
fn sort_all(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.sort_keys();
            map.values_mut().for_each(sort_all);
        }
        Value::Array(items) => items.iter_mut().for_each(sort_all),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_patches_apply_in_order() {
        let doc = json!({"spec": {"a": 1, "list": [1, 2]}});
        let ops = json!([{"op": "replace", "path": "/spec/a", "value": 2}, {"op": "add", "path": "/spec/list/-", "value": 3},
            {"op": "remove", "path": "/spec/list/0"}, {"op": "test", "path": "/spec/a", "value": 2}]);
        let out = apply(doc, ops.as_array().unwrap()).unwrap();
        assert_eq!(out, json!({"spec": {"a": 2, "list": [2, 3]}}));
        assert!(apply(json!({}), &[json!({"op": "remove", "path": "/x"})]).is_err());
    }

    /// The library's quirks (evanphx/json-patch v4 `patch.go`: `partialDoc.get` finds no error
    /// for a missing key, `deepCopy(nil)` is nil, negative indices on): each as it applies.
    #[test]
    fn the_librarys_quirks_apply_as_it_applies_them() {
        let doc = || json!({"spec": {"a": 1, "list": [1, 2, 3]}});
        let run = |ops: Value| apply(doc(), ops.as_array().unwrap());
        assert_eq!(run(json!([{"op": "replace", "path": "/spec/b", "value": 2}])).unwrap()["spec"]["b"], 2);
        assert_eq!(
            run(json!([{"op": "copy", "from": "/spec/none", "path": "/spec/c"}])).unwrap()["spec"]["c"],
            Value::Null
        );
        assert!(run(json!([{"op": "test", "path": "/spec/none", "value": null}])).is_ok());
        assert!(run(json!([{"op": "test", "path": "/spec/none"}])).is_ok());
        assert!(run(json!([{"op": "test", "path": "/spec/a"}])).is_err());
        assert!(run(json!([{"op": "move", "from": "/spec/none", "path": "/spec/c"}])).is_err());
        let out = run(json!([{"op": "move", "from": "/spec/a", "path": "/a"}])).unwrap();
        assert_eq!(out, json!({"a": 1, "spec": {"list": [1, 2, 3]}}));
        assert_eq!(run(json!([{"op": "remove", "path": "/spec/list/-1"}])).unwrap()["spec"]["list"], json!([1, 2]));
        assert_eq!(
            run(json!([{"op": "add", "path": "/spec/list/-1", "value": 9}])).unwrap()["spec"]["list"],
            json!([1, 2, 3, 9])
        );
        assert_eq!(
            run(json!([{"op": "add", "path": "/spec/list/3", "value": 9}])).unwrap()["spec"]["list"],
            json!([1, 2, 3, 9])
        );
        assert!(run(json!([{"op": "add", "path": "/spec/list/5", "value": 9}])).is_err());
        assert!(run(json!([{"op": "replace", "path": "/spec/list/3", "value": 9}])).is_err());
        assert!(run(json!([{"op": "remove", "path": "/spec/list/-4"}])).is_err());
        assert!(run(json!([{"op": "add", "path": "/spec/a/b", "value": 9}])).is_err(), "into a scalar");
        assert!(run(json!([{"op": "add", "path": "nothing", "value": 9}])).is_err(), "no slash");
        assert!(run(json!([{"op": "frobnicate", "path": "/spec"}])).is_err());
        assert_eq!(
            run(json!([{"op": "replace", "path": "", "value": {"b": 1, "a": 2}}])).unwrap(),
            json!({"a": 2, "b": 1})
        );
        assert_eq!(run(json!([{"op": "add", "path": "/spec/x~1y~0", "value": 1}])).unwrap()["spec"]["x/y~"], 1);
    }

    /// The output's key order: the document and the objects a path goes through are sorted (Go
    /// maps), as is everything a `test` compared; the rest keeps its order.
    #[test]
    fn objects_a_path_goes_through_come_out_sorted_and_the_rest_keeps_its_order() {
        let doc =
            json!({"spec": {"z": 1, "a": {"y": 1, "b": 2}}, "metadata": {"name": "n", "labels": {"k": "v", "c": "d"}}});
        let text = |ops: Value| serde_json::to_string(&apply(doc.clone(), ops.as_array().unwrap()).unwrap()).unwrap();
        assert_eq!(
            text(json!([{"op": "add", "path": "/spec/m", "value": {"q": 1, "p": 2}}])),
            r#"{"metadata":{"name":"n","labels":{"k":"v","c":"d"}},"spec":{"a":{"y":1,"b":2},"m":{"q":1,"p":2},"z":1}}"#
        );
        assert_eq!(
            text(json!([{"op": "test", "path": "/metadata", "value": {"name": "n", "labels": {"c": "d", "k": "v"}}}])),
            r#"{"metadata":{"labels":{"c":"d","k":"v"},"name":"n"},"spec":{"z":1,"a":{"y":1,"b":2}}}"#
        );
    }

    /// `copy` counts what it copies, at most 3 MiB a patch (a doubling `metadata` fails long
    /// before memory does), and copies once the destination is found: its path's objects are
    /// then sorted in the copy too.
    #[test]
    fn copies_are_bounded_and_made_once_the_destination_is_found() {
        let doubling =
            |n: usize| -> Vec<Value> { (0..n).map(|_| json!({"op": "copy", "from": "/a", "path": "/a/-"})).collect() };
        let doc = || json!({"a": ["0123456789"]});
        assert_eq!(apply(doc(), &doubling(3)).unwrap()["a"].as_array().unwrap().len(), 4);
        // Each copy doubles the list: 2^18 items of 13 bytes pass 3 MiB.
        assert!(apply(doc(), &doubling(40)).is_err());
        let doc = json!({"spec": {"z": 1, "a": 2}});
        let out = apply(doc, json!([{"op": "copy", "from": "/spec", "path": "/spec/x"}]).as_array().unwrap()).unwrap();
        assert_eq!(serde_json::to_string(&out).unwrap(), r#"{"spec":{"a":2,"x":{"a":2,"z":1},"z":1}}"#);
    }

    /// The body as the handler decodes it: `null` is no operations; anything but a list of
    /// objects is Go's decoder's error, named after the type the strict decoder (Warn, Strict) or
    /// the library (Ignore) reads into; more than 10,000 operations is a 413.
    #[test]
    fn a_body_that_is_not_a_list_of_operations_is_refused_as_go_refuses_it() {
        assert_eq!(decode("null", true).unwrap(), (Vec::<Value>::new(), Vec::new()));
        let message = |text: &str, searched: bool| decode(text, searched).unwrap_err().message;
        assert_eq!(
            message(r#"{"op": "add"}"#, false),
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        );
        assert_eq!(
            message(r#"{"op": "add"}"#, true),
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
        );
        assert_eq!(message("[1]", false), "json: cannot unmarshal number into Go value of type jsonpatch.Operation");
        assert_eq!(
            message(r#"[{"op": "test", "path": "/a"}, "x"]"#, true),
            "error decoding patch: json: cannot unmarshal string into Go value of type handlers.jsonPatchOp"
        );
        let many = serde_json::to_string(&vec![json!({"op": "test", "path": "/a"}); 10_001]).unwrap();
        let err = decode(&many, false).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (413, "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001")
        );
        assert!(valid_json("[{").is_err() && valid_json("[]").is_ok());
    }

    /// Under Warn or Strict the strict decoder reads the operations first
    /// (sigs.k8s.io/json@cfa47c3): the first value of the wrong type in the text is a 400 that
    /// names the struct's field; unknown and repeated fields are its strict errors, in the
    /// text's order, each prefixed `json patch` by the handler (apiserver@24a394e5
    /// `handlers/patch.go:403-412`). Ignore reads none of it.
    #[test]
    fn the_strict_decoder_names_wrong_types_unknown_fields_and_repeats_as_go_does() {
        let message = |text: &str| decode(text, true).unwrap_err().message;
        assert_eq!(
            message(r#"[{"op": "add", "path": "/a", "value": 1}, {"op": 1, "path": ["/b"]}]"#),
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"
        );
        assert_eq!(
            message(r#"[{"op": "add", "path": {"p": 1}}, 7]"#),
            "error decoding patch: json: cannot unmarshal object into Go struct field jsonPatchOp.path of type string"
        );
        assert_eq!(
            message(r#"[true, {"op": 1}]"#),
            "error decoding patch: json: cannot unmarshal bool into Go value of type handlers.jsonPatchOp"
        );
        // `value` takes anything; `null` leaves a string field empty.
        let text = r#"[{"op": "add", "Path": "/a", "value": [1], "op": "test", "from": null, "vaule": 2}, null,
            {"path": "/b", "path": "/c", "path": "/d"}]"#;
        let (ops, errors) = decode(text, true).unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(
            errors,
            [
                r#"json patch unknown field "[0].Path""#,
                r#"json patch duplicate field "[0].op""#,
                r#"json patch unknown field "[0].vaule""#,
                r#"json patch duplicate field "[2].path""#,
                r#"json patch duplicate field "[2].path""#,
            ]
        );
        // The library's decoder (Ignore) reads the operations as maps of raw values.
        assert_eq!(decode(r#"[{"op": 1, "path": ["/b"]}]"#, false).unwrap().1, Vec::<String>::new());
    }
}
