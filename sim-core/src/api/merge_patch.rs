//! JSON merge patch (RFC 7386) as the API server applies it with `evanphx/json-patch` v4
//! `MergePatch` (apiserver.md §2.1): `null` deletes a key; objects merge recursively; anything
//! else replaces. Maps the patch touches come out with **sorted keys** (they were re-marshalled
//! from Go maps); untouched sub-objects keep their order.

use serde_json::{Map, Value};

/// Applies `patch` to `document`. `Err` is the library's `Invalid JSON Patch` (a non-object
/// patch), which the server returns as 400 BadRequest.
pub fn merge_patch(document: &Value, patch: &Value) -> Result<Value, &'static str> {
    let Value::Object(patch_map) = patch else {
        return Err("Invalid JSON Patch");
    };
    let base = match document {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    Ok(Value::Object(merge_maps(base, patch_map)))
}

fn merge_maps(mut document: Map<String, Value>, patch: &Map<String, Value>) -> Map<String, Value> {
    for (key, patch_value) in patch {
        match patch_value {
            Value::Null => {
                document.remove(key);
            }
            Value::Object(patch_child) => {
                let merged = match document.remove(key) {
                    Some(Value::Object(existing)) => merge_maps(existing, patch_child),
                    _ => prune_nulls_in_map(patch_child),
                };
                document.insert(key.clone(), Value::Object(merged));
            }
            other => {
                document.insert(key.clone(), prune_nulls(other));
            }
        }
    }
    sorted(document)
}

/// A value supplied by the patch itself: nulls dropped, and (being re-marshalled from Go maps)
/// every object in it sorted.
fn prune_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(prune_nulls_in_map(map)),
        Value::Array(items) => Value::Array(items.iter().map(prune_nulls).collect()),
        other => other.clone(),
    }
}

fn prune_nulls_in_map(map: &Map<String, Value>) -> Map<String, Value> {
    sorted(map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), prune_nulls(v))).collect())
}

fn sorted(map: Map<String, Value>) -> Map<String, Value> {
    let mut entries: Vec<(String, Value)> = map.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_in_a_merge_patch_deletes_the_key() {
        let doc = json!({"spec": {"holderIdentity": "a", "leaseTransitions": 1}});
        let out = merge_patch(&doc, &json!({"spec": {"holderIdentity": null}})).unwrap();
        assert_eq!(out, json!({"spec": {"leaseTransitions": 1}}));
    }

    #[test]
    fn touched_maps_come_out_sorted_and_untouched_ones_keep_their_order() {
        let doc = json!({"spec": {"renewTime": "x", "holderIdentity": "a"}, "metadata": {"name": "n", "namespace": "d"}, "kind": "Lease"});
        let out = merge_patch(&doc, &json!({"spec": {"leaseTransitions": 2}})).unwrap();
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            r#"{"kind":"Lease","metadata":{"name":"n","namespace":"d"},"spec":{"holderIdentity":"a","leaseTransitions":2,"renewTime":"x"}}"#
        );
    }

    #[test]
    fn a_non_object_patch_is_invalid_json_patch() {
        assert_eq!(merge_patch(&json!({}), &json!([1])), Err("Invalid JSON Patch"));
    }
}
