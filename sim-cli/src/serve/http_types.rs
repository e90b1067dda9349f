//! A request as the server reads it and an answer as it writes it, without the HTTP stack:
//! the server's decisions are made on these, so tests drive them without sockets.

use serde_json::Value;
use sim_core::api::{FieldSelector, Kind, LabelSelector};

#[derive(Clone, Debug, Default)]
pub struct HttpRequest {
    pub method: String,
    /// The path, percent-decoded.
    pub path: String,
    /// Query parameters in order, percent-decoded.
    pub query: Vec<(String, String)>,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body already decoded to the typed object the server would decode it to (a
    /// Lease's create or update, decoded before the server's lock is taken); `None`: the
    /// server decodes `body` itself.
    pub typed_body: Option<sim_core::api::Body>,
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn query(&self, key: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Splits `path?query` and decodes both.
    pub fn parse_target(target: &str) -> (String, Vec<(String, String)>) {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let query = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                (percent_decode(k), percent_decode(v))
            })
            .collect();
        (percent_decode(path), query)
    }
}

/// `%XX` and `+` (in a query, a space) decoded; invalid escapes kept as written.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What a watch asks for: a kind in a namespace (`""` every namespace), selectors, where to
/// start, how to render.
#[derive(Clone, Debug)]
pub struct WatchSpec {
    pub kind: Kind,
    pub namespace: String,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// Start after this revision; `None`: start with the current objects as ADDED events
    /// (`resourceVersion` absent or `0`).
    pub from: Option<u64>,
    pub table: bool,
    pub bookmarks: bool,
    /// End the stream after this many seconds (`timeoutSeconds`).
    pub timeout_secs: Option<u64>,
    /// A Table event was sent: later ones carry `columnDefinitions: null`.
    pub sent_table: bool,
}

/// An answer.
#[derive(Debug)]
pub enum Reply {
    Body {
        status: u16,
        content_type: String,
        body: Vec<u8>,
        headers: Vec<(String, String)>,
    },
    /// A chunked stream of watch events, each a JSON object and a newline; the first lines
    /// are ready now.
    Watch {
        spec: Box<WatchSpec>,
        initial: Vec<Vec<u8>>,
        rv: u64,
    },
    /// Server-sent events of the live view.
    Live,
    /// An object as JSON, rendered where it is sent (after the server's lock is let go), with
    /// the server's warnings (each a `Warning` header).
    Object {
        status: u16,
        object: sim_core::api::Object,
        warnings: Vec<String>,
    },
}

impl Reply {
    pub fn json(status: u16, value: &Value) -> Reply {
        Reply::Body {
            status,
            content_type: "application/json".into(),
            body: serde_json::to_vec(value).expect("JSON serialises"),
            headers: Vec::new(),
        }
    }

    pub fn typed(status: u16, content_type: &str, value: &Value) -> Reply {
        Reply::Body {
            status,
            content_type: content_type.into(),
            body: serde_json::to_vec(value).expect("JSON serialises"),
            headers: Vec::new(),
        }
    }

    /// An object answer's JSON as bytes, everything else as it is.
    pub fn rendered(self) -> Reply {
        match self {
            Reply::Object { status, object, warnings } => Reply::Body {
                status,
                content_type: "application/json".into(),
                body: sim_core::api::to_json_bytes(&object),
                headers: warnings.iter().map(|text| ("warning".to_string(), warning_header(text))).collect(),
            },
            other => other,
        }
    }

    /// This answer with `warnings` as `Warning` headers (a body answer's; an object answer
    /// carries its own).
    pub fn warned(self, warnings: &[String]) -> Reply {
        match self {
            Reply::Body { status, content_type, body, mut headers } => {
                headers.extend(warnings.iter().map(|text| ("warning".to_string(), warning_header(text))));
                Reply::Body { status, content_type, body, headers }
            }
            other => other,
        }
    }

    pub fn status(&self) -> u16 {
        match self {
            Reply::Body { status, .. } | Reply::Object { status, .. } => *status,
            Reply::Watch { .. } | Reply::Live => 200,
        }
    }
}

/// A `Warning` header's value as kube-apiserver writes it: code 299, agent `-`, the text quoted
/// with `"` and `\` escaped (apimachinery `pkg/util/net/http.go` `NewWarningHeader`,
/// `makeQuotedString`; docs/sources/apiserver-wire.md §11).
pub fn warning_header(text: &str) -> String {
    let mut value = String::with_capacity(text.len() + 8);
    value.push_str("299 - \"");
    for c in text.chars() {
        if c == '"' || c == '\\' {
            value.push('\\');
        }
        value.push(c);
    }
    value.push('"');
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `NewWarningHeader(299, "", text)`: agent `-`, `"` and `\` escaped, nothing else.
    #[test]
    fn a_warning_header_is_written_as_kube_apiserver_writes_it() {
        assert_eq!(warning_header(r#"unknown field "spec.a\"b""#), r#"299 - "unknown field \"spec.a\\\"b\"""#);
        assert_eq!(warning_header("ü tab"), "299 - \"ü tab\"");
    }

    #[test]
    fn targets_split_and_decode() {
        let (path, query) = HttpRequest::parse_target(
            "/api/v1/namespaces/op-leader/events?fieldSelector=involvedObject.name%3Dw%2CinvolvedObject.kind%3DLease&limit=500",
        );
        assert_eq!(path, "/api/v1/namespaces/op-leader/events");
        assert_eq!(query[0], ("fieldSelector".into(), "involvedObject.name=w,involvedObject.kind=Lease".into()));
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
