//! YAML read into JSON values, with its nesting bounded before parsing: a flow sequence nested
//! thousands deep (`[[[[…]]]]`) takes the YAML parser time quadratic in its depth (42–70 s for
//! 200 kB), where the same in JSON or TOML is refused in milliseconds. No Kubernetes object
//! nests anywhere near the limit.

use serde::Deserialize;
use serde_json::Value;

/// The deepest nesting of flow collections (`[`, `{`) and block indentation levels accepted.
pub const MAX_DEPTH: usize = 100;

/// The depth of flow collections in `text`, outside quoted scalars and comments.
fn flow_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for line in text.lines() {
        let mut quote: Option<char> = None;
        for c in line.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '#') => break,
                (None, '[' | '{') => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                (None, ']' | '}') => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    deepest
}

/// Every document of a YAML stream (a `kubectl get -o yaml` dump, a manifest), refused when
/// nested deeper than [`MAX_DEPTH`].
pub fn documents(text: &str) -> Result<Vec<Value>, String> {
    let depth = flow_depth(text);
    if depth > MAX_DEPTH {
        return Err(format!("nested {depth} levels deep; at most {MAX_DEPTH} are read"));
    }
    serde_norway::Deserializer::from_str(text)
        .map(|document| Value::deserialize(document).map_err(|e| e.to_string()))
        .filter(|document| !matches!(document, Ok(Value::Null)))
        .collect()
}

/// One YAML (or JSON) document, bounded as [`documents`].
pub fn parse_bounded(text: &str) -> Result<Value, String> {
    let mut docs = documents(text)?;
    match docs.len() {
        0 => Ok(Value::Null),
        1 => Ok(docs.remove(0)),
        n => Err(format!("expected one document, found {n}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flow_nesting_is_refused_at_once_and_ordinary_yaml_reads() {
        let deep = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
        let started = std::time::Instant::now();
        assert!(parse_bounded(&deep).unwrap_err().contains("50000 levels"));
        assert!(started.elapsed().as_secs() < 1);
        let doc = parse_bounded("a: [1, {b: \"[[[\"}]  # [[[\n").unwrap();
        assert_eq!(doc["a"][1]["b"], "[[[");
        assert_eq!(documents("a: 1\n---\nb: 2\n").unwrap().len(), 2);
    }
}
