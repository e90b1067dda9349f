//! Reading scenario files: TOML text → [`Scenario`], with `--set` overrides, and errors that say
//! `file:line:col` and what was expected.

use sim_core::scenario::{Scenario, ScenarioError, did_you_mean, display_path, known_keys};
use std::ops::Range;
use std::path::Path;

pub use crate::error::CliError;

/// A loaded scenario with where it came from.
#[derive(Debug)]
pub struct LoadedScenario {
    pub path: String,
    pub source: String,
    pub scenario: Scenario,
    pub overrides: Vec<String>,
}

/// A decoder's message in a user's words: serde's Rust names (`usize`, `u32`, `f64`, "a
/// sequence", "struct HealthzDoc", "an array of length 2") become what a file holds (a whole
/// number, a number, a list, a table, a list of 2 values). Messages of leasesim's own pass
/// through unchanged.
pub fn plain_words(message: &str) -> String {
    let mut out = message.to_string();
    // "invalid length 1, expected an array of length 2"
    if let Some(rest) = out.strip_prefix("invalid length ")
        && let Some((found, wanted)) = rest.split_once(", expected an array of length ")
    {
        return format!("expected a list of {wanted} values, found {found}");
    }
    for (rust, plain) in [
        ("expected usize", "expected a whole number"),
        ("expected u8", "expected a whole number"),
        ("expected u16", "expected a whole number"),
        ("expected u32", "expected a whole number"),
        ("expected u64", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected a sequence", "expected a list"),
        ("invalid type: sequence", "found a list"),
        ("invalid type: map", "found a table"),
        ("invalid type: ", "found "),
    ] {
        out = out.replace(rust, plain);
    }
    // "expected an array of length 2" → "expected a list of 2 values"
    if let Some(i) = out.find("expected an array of length ") {
        let digits: String = out[i + 28..].chars().take_while(char::is_ascii_digit).collect();
        out.replace_range(i..i + 28 + digits.len(), &format!("expected a list of {digits} values"));
    }
    // "expected struct HealthzDoc" → "expected a table"
    while let Some(i) = out.find("expected struct ") {
        let end =
            out[i + 16..].find(|c: char| !c.is_alphanumeric() && c != '_').map(|e| i + 16 + e).unwrap_or(out.len());
        out.replace_range(i..end, "expected a table");
    }
    out
}

#[cfg(test)]
mod plain_words_tests {
    use super::plain_words;

    /// No Rust type names reach a user (issue 33).
    #[test]
    fn decoder_messages_name_what_a_file_holds() {
        assert_eq!(
            plain_words("invalid length 1, expected an array of length 2"),
            "expected a list of 2 values, found 1"
        );
        assert_eq!(
            plain_words("invalid type: string \"one\", expected usize"),
            "found string \"one\", expected a whole number"
        );
        assert_eq!(
            plain_words("invalid type: integer `5`, expected an array of length 2"),
            "found integer `5`, expected a list of 2 values"
        );
        assert_eq!(
            plain_words("invalid type: integer `5`, expected struct HealthzDoc"),
            "found integer `5`, expected a table"
        );
        assert_eq!(
            plain_words("invalid type: string \"p\", expected a sequence"),
            "found string \"p\", expected a list"
        );
        assert_eq!(
            plain_words("a crash fault takes no other keys, not `mode`"),
            "a crash fault takes no other keys, not `mode`"
        );
    }
}

/// `file:line:col: message` plus the offending line and a caret under the span.
pub fn located(path: &str, source: &str, span: Option<Range<usize>>, message: &str) -> String {
    let message = &plain_words(message);
    let Some(span) = span else { return format!("{path}: {message}") };
    let start = span.start.min(source.len());
    let line_start = source[..start].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line_no = source[..start].matches('\n').count() + 1;
    let col = source[line_start..start].chars().count() + 1;
    let line_end = source[start..].find('\n').map(|i| start + i).unwrap_or(source.len());
    let line = &source[line_start..line_end];
    let width = source[start..span.end.min(line_end).max(start)].chars().count().max(1);
    let gutter = " ".repeat(line_no.to_string().len());
    format!(
        "{path}:{line_no}:{col}: {message}\n{gutter} |\n{line_no} | {line}\n{gutter} | {}{}",
        " ".repeat(col - 1),
        "^".repeat(width)
    )
}

/// The byte span of the value at `path` in the TOML `source` (`["faults", "2", "node"]`),
/// falling back to the nearest existing ancestor.
pub fn span_of_path(source: &str, path: &[String]) -> Option<Range<usize>> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(source).ok()?;
    let mut best: Option<Range<usize>> = None;
    let mut table = doc.get_ref();
    let mut array: Option<&[toml::Spanned<DeValue>]> = None;
    for seg in path {
        let next = if let Some(arr) = array.take() {
            seg.parse::<usize>().ok().and_then(|i| arr.get(i))
        } else {
            table.iter().find(|(k, _)| k.get_ref().as_ref() == seg.as_str()).map(|(_, v)| v)
        };
        let Some(value) = next else { break };
        best = Some(value.span());
        match value.get_ref() {
            DeValue::Table(t) => table = t,
            DeValue::Array(a) => array = Some(a.as_ref()),
            _ => break,
        }
    }
    best
}

pub fn read_file(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| {
        let what = if e.kind() == std::io::ErrorKind::NotFound { "no such file".to_string() } else { e.to_string() };
        CliError::input(format!("{}: cannot read the scenario: {what}", path.display()))
    })
}

/// Parses `source` (from `path`), applies `--set` overrides and deserialises the scenario.
pub fn load(path: &str, source: &str, overrides: &[String]) -> Result<LoadedScenario, CliError> {
    let scenario = if overrides.is_empty() {
        toml::from_str::<Scenario>(source).map_err(|e| CliError::input(toml_error(path, source, &e)))?
    } else {
        let mut table: toml::Table =
            toml::from_str(source).map_err(|e| CliError::input(toml_error(path, source, &e)))?;
        for o in overrides {
            apply_override(&mut table, o).map_err(|m| CliError::input(format!("--set {o}: {m}")))?;
        }
        let value = toml::Value::Table(table);
        value
            .try_into::<Scenario>()
            .map_err(|e| CliError::input(format!("{path} with --set {}: {}", overrides.join(" --set "), e.message())))?
    };
    let mut scenario = scenario;
    // Kept for the whole run (summary.json's `config`): a fleet's node tables without the room
    // the deserialiser's doubling left (up to half again of 10,000 tables).
    std::sync::Arc::make_mut(&mut scenario.nodes).shrink_to_fit();
    // A path the file names is relative to the file (wherever the command runs, and wherever a
    // hunt's found.toml lands); one given with --from-cluster or --set, to the working directory.
    let from_flag = overrides.iter().any(|o| o.trim_start().starts_with("from_cluster"));
    if let Some(dump) = &scenario.from_cluster
        && !from_flag
    {
        scenario.from_cluster = Some(beside_file(path, dump));
    }
    Ok(LoadedScenario { path: path.to_string(), source: source.to_string(), scenario, overrides: overrides.to_vec() })
}

/// `named` as the file at `file` names it: relative paths are taken from the file's folder and
/// made absolute when they exist, so the scenario can be written elsewhere and still find it.
pub fn beside_file(file: &str, named: &str) -> String {
    let named_path = std::path::Path::new(named);
    if named_path.is_absolute() {
        return named.to_string();
    }
    let joined = match std::path::Path::new(file).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(named_path),
        _ => named_path.to_path_buf(),
    };
    std::fs::canonicalize(&joined).unwrap_or(joined).to_string_lossy().into_owned()
}

fn toml_error(path: &str, source: &str, e: &toml::de::Error) -> String {
    let mut message = e.message().trim_end().to_string();
    // A top-level key written after a [table] lands in that table: say so.
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let field = rest.split('`').next().unwrap_or("");
        let top = known_keys("");
        if top.contains(&field) && !message.contains(&format!("`{field}`, expected one of `name`")) {
            return located(
                path,
                source,
                e.span(),
                &format!(
                    "`{field}` is a top-level key, but here it belongs to the table above it: move it before the first [table] header"
                ),
            );
        }
    }
    // serde's "unknown field `x`, expected one of ..." gets a did-you-mean.
    if let Some(rest) = message.strip_prefix("unknown field `")
        && let Some((field, _)) = rest.split_once('`')
    {
        let all: Vec<&str> = message.split('`').skip(3).step_by(2).collect();
        let hint = did_you_mean(field, all.iter().copied());
        if !hint.is_empty() {
            message = format!("unknown key `{field}`{hint}; {}", message.split_once(", ").map(|x| x.1).unwrap_or(""));
        }
    }
    located(path, source, e.span(), &message)
}

/// Renders a semantic error at the key it names.
pub fn scenario_error(loaded: &LoadedScenario, e: &ScenarioError) -> CliError {
    // A key set with --set is reported against the override, not the file's old value.
    let shown = sim_core::scenario::display_path(&e.path);
    if let Some(o) = loaded.overrides.iter().find(|o| {
        let key = o.split('=').next().unwrap_or("");
        !key.is_empty()
            && (shown == key || shown.starts_with(&format!("{key}.")) || shown.starts_with(&format!("{key}[")))
    }) {
        return CliError::input(format!("{}: {shown}: {} (set by --set {o})", loaded.path, e.message));
    }
    let span = span_of_path(&loaded.source, &e.path);
    let message = format!("{}: {}", display_path(&e.path), e.message);
    CliError::input(located(&loaded.path, &loaded.source, span, &message))
}

/// `key.path=value`: sets a value in the document. Path segments are table keys, array indices,
/// or a node identity under `nodes` (`nodes.widget-operator-1.clock.drift_ppm=500000`).
/// The value is TOML (`20`, `true`, `"x"`, `{ uniform = ["1ms", "2ms"] }`) or else a bare string
/// (`20s`).
pub fn apply_override(table: &mut toml::Table, text: &str) -> Result<(), String> {
    let (path, raw) = text.split_once('=').ok_or("expected key.path=value")?;
    let value = parse_value(raw.trim());
    let segs: Vec<&str> = path.trim().split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err(format!("{path:?} is not a key path such as defaults.renew_deadline"));
    }
    set_path(table, &segs, value, "")
}

pub fn parse_value(raw: &str) -> toml::Value {
    match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

fn check_key(context: &str, key: &str) -> Result<(), String> {
    let keys = known_keys(context);
    if keys.is_empty() || keys.contains(&key) || matches!(context, "objects" | "body" | "patch") {
        return Ok(());
    }
    Err(format!(
        "unknown key {key:?}{} in {}; expected one of {}",
        did_you_mean(key, keys.iter().copied()),
        if context.is_empty() { "the top level".to_string() } else { format!("[{context}]") },
        keys.join(", ")
    ))
}

fn set_path(table: &mut toml::Table, segs: &[&str], value: toml::Value, context: &str) -> Result<(), String> {
    let key = segs[0];
    check_key(context, key)?;
    if segs.len() == 1 {
        table.insert(key.to_string(), value);
        return Ok(());
    }
    let entry = table.entry(key.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
    match entry {
        toml::Value::Table(t) => set_path(t, &segs[1..], value, key_context(key)),
        toml::Value::Array(items) => {
            let sel = segs[1];
            let idx = match sel.parse::<usize>() {
                Ok(i) => i,
                Err(_) => items
                    .iter()
                    .position(|it| {
                        it.get("identity").and_then(|v| v.as_str()) == Some(sel)
                            || it.get("name").and_then(|v| v.as_str()) == Some(sel)
                    })
                    .ok_or_else(|| {
                        let names: Vec<&str> = items
                            .iter()
                            .filter_map(|it| it.get("identity").or_else(|| it.get("name")).and_then(|v| v.as_str()))
                            .collect();
                        format!(
                            "no entry {sel:?} in {key}{}; entries: {}",
                            did_you_mean(sel, names.iter().copied()),
                            names.join(", ")
                        )
                    })?,
            };
            let len = items.len();
            let item =
                items.get_mut(idx).ok_or_else(|| format!("{key} has {len} entries; index {idx} is out of range"))?;
            if segs.len() == 2 {
                *item = value;
                return Ok(());
            }
            match item {
                toml::Value::Table(t) => set_path(t, &segs[2..], value, key_context(key)),
                _ => Err(format!("{key}[{idx}] is not a table")),
            }
        }
        _ => Err(format!("{key} is a value, not a table: cannot set {}", segs[1..].join("."))),
    }
}

fn key_context(key: &str) -> &'static str {
    match key {
        "lease" => "lease",
        "defaults" => "defaults",
        "nodes" => "nodes",
        "clock" => "clock",
        "network" => "network",
        "reconciler" => "reconciler",
        "healthz" => "healthz",
        "burst" => "burst",
        "client_limiter" => "client_limiter",
        "faults" => "faults",
        "random_faults" => "random_faults",
        "server" => "server",
        "rbac" => "rbac",
        "actions" => "actions",
        "objects" => "objects",
        _ => "body",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "name = \"x\"\ndescription = \"d\"\nduration = \"1m\"\n[[nodes]]\nidentity = \"a\"\n[[nodes]]\nidentity = \"b\"\n";

    #[test]
    fn overrides_reach_nodes_by_identity_and_index() {
        let loaded = load(
            "s.toml",
            SMALL,
            &["nodes.b.clock.drift_ppm=500000".into(), "defaults.renew_deadline=8s".into(), "seed=4".into()],
        )
        .unwrap();
        assert_eq!(loaded.scenario.seed, 4);
        assert_eq!(loaded.scenario.nodes[1].clock.as_ref().unwrap().drift_ppm, Some(500000.0));
        assert_eq!(loaded.scenario.defaults.renew_deadline.unwrap().0, 8_000_000_000);
    }

    #[test]
    fn unknown_override_keys_get_a_did_you_mean() {
        let e = load("s.toml", SMALL, &["defaults.renew_dedline=8s".into()]).unwrap_err();
        assert!(e.message.contains("did you mean \"renew_deadline\""), "{e}");
    }

    #[test]
    fn toml_errors_say_file_line_and_column() {
        let e = load("s.toml", "name = \"x\"\ndescription = \"d\"\nduration = 5\n[[nodes]]\n", &[]).unwrap_err();
        assert!(e.message.starts_with("s.toml:3:12: "), "{e}");
        assert!(e.message.contains("has no unit"), "{e}");
    }

    #[test]
    fn paths_find_their_spans() {
        let src = "name = \"x\"\n[[faults]]\nat = \"1s\"\nnode = \"zz\"\n";
        let span = span_of_path(src, &["faults".into(), "0".into(), "node".into()]).unwrap();
        assert_eq!(&src[span], "\"zz\"");
    }
}
