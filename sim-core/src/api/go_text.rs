//! Go's text encodings that reach error messages: `encoding/json` compact output (with its HTML
//! escaping) and `strconv.Quote` (`%q`). The patch decode error embeds the patched object with
//! both (apiserver.md §2.1), so byte-exact messages need them.

use serde_json::Value;

/// `json.Marshal` of an already-ordered value: compact, `<`, `>`, `&`, U+2028, U+2029 escaped as
/// `\u003c` etc., map keys in the order the value holds them.
pub fn go_json_marshal(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Go's `strconv.Quote` (what `%q` prints for a string).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `fmt.Sprintf("%+v", m)` of what `sigs.k8s.io/json.UnmarshalStrict` decodes a JSON
/// object into (`map[string]interface{}`, integers as `int64`, other numbers as `float64`): the
/// strategic patcher names a patch it cannot apply this way (apiserver@24a394e5
/// `pkg/endpoints/handlers/patch.go:778-790`). Maps print as `map[k:v k2:v2]` with their keys
/// sorted (fmt sorts map keys), lists as `[a b]`, strings raw, null as `<nil>`, a `float64`
/// as `%v` does (`strconv`'s shortest `'g'`: an exponent from 1e+06 up and below 1e-04).
pub fn go_percent_v(value: &Value) -> String {
    let mut out = String::new();
    write_percent_v(&mut out, value);
    out
}

fn write_percent_v(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) if !n.is_f64() => out.push_str(&n.to_string()),
        Value::Number(n) => out.push_str(&go_float_v(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_percent_v(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(key);
                out.push(':');
                write_percent_v(out, &map[key]);
            }
            out.push(']');
        }
    }
}

/// `%v` of a `float64`: `strconv.FormatFloat(f, 'g', -1, 64)`, the shortest digits, with an
/// exponent (`e+06`, at least two digits) when the decimal exponent is below −4 or at least 6.
fn go_float_v(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return match f {
            f if f.is_nan() => "NaN".into(),
            f if f == f64::INFINITY => "+Inf".into(),
            f if f == f64::NEG_INFINITY => "-Inf".into(),
            f if f.is_sign_negative() => "-0".into(),
            _ => "0".into(),
        };
    }
    let scientific = format!("{f:e}"); // shortest digits: "1.234567e6", "-5e-7"
    let (mantissa, exponent) = scientific.split_once('e').expect("`{:e}` writes an exponent");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    if (-4..6).contains(&exponent) {
        return format!("{f}");
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `%+v` as Go prints a decoded patch (values checked against Go's `fmt` and `strconv`
    /// rules: map keys sorted, `<nil>`, the float exponent from 1e+06).
    #[test]
    fn go_percent_v_prints_a_decoded_map_as_fmt_does() {
        let v = serde_json::json!({"spec": {"z": [1, "a b", null, true], "holderIdentiy": "x"}, "a": {}});
        assert_eq!(go_percent_v(&v), "map[a:map[] spec:map[holderIdentiy:x z:[1 a b <nil> true]]]");
        let floats = [
            (1.5, "1.5"),
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1e21, "1e+21"),
            (0.0, "0"),
        ];
        for (f, text) in floats {
            assert_eq!(go_float_v(f), text, "{f}");
        }
    }

    #[test]
    fn go_json_escapes_html_characters_like_encoding_json() {
        let v = serde_json::json!({"b": "<a&b>", "a": [1, null, true]});
        assert_eq!(go_json_marshal(&v), r#"{"b":"\u003ca\u0026b\u003e","a":[1,null,true]}"#);
    }

    #[test]
    fn go_quote_escapes_quotes_and_backslashes() {
        assert_eq!(go_quote(r#"{"a":"b\c"}"#), r#""{\"a\":\"b\\c\"}""#);
        assert_eq!(go_quote("tab\there"), r#""tab\there""#);
    }
}
