//! The Kubernetes API over HTTP: a request's method, path, query, headers and body turned into
//! the API server's request, and its answer into the status, body and content type kube-apiserver
//! sends. Every answer comes from sim-core's `ApiServer` (inside the served `World`): this file
//! is only the translation.

use std::sync::Arc;

use serde_json::{Value, json};
use sim_core::api::{
    self, ApiError, Body, FieldError, FieldSelector, FieldValidation, Kind, LabelSelector, Object, Request, Resource,
    User, Verb,
};
use sim_core::time::{Nanos, UnixNanos};
use sim_core::world::World;

use super::http_types::{HttpRequest, Reply, WatchSpec};
use super::proto;

/// The largest request body the API server reads (`MaxRequestBodyBytes`, 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Where a path leads.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    Version,
    /// `/api` (core) or `/apis` (named groups).
    Discovery {
        core: bool,
    },
    ResourceList {
        group: String,
        version: String,
    },
    OpenApiV2,
    OpenApiV3,
    /// A resource's collection (`name` empty) or one object; `namespace` empty for
    /// cluster-scoped kinds and lists across namespaces.
    Resource {
        resource: &'static Resource,
        namespace: String,
        name: String,
        watch_path: bool,
    },
    NotFound,
}

/// Parses a path into a [`Route`].
pub fn route(path: &str) -> Route {
    let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest): (&str, &str, &[&str]) = match segments.as_slice() {
        ["version"] => return Route::Version,
        ["api"] => return Route::Discovery { core: true },
        ["apis"] => return Route::Discovery { core: false },
        ["openapi", "v2"] => return Route::OpenApiV2,
        ["openapi", "v3", ..] => return Route::OpenApiV3,
        ["api", "v1"] => return Route::ResourceList { group: String::new(), version: "v1".into() },
        ["apis", group, version] => {
            return Route::ResourceList { group: group.to_string(), version: version.to_string() };
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", group, version, rest @ ..] => (group, version, rest),
        _ => return Route::NotFound,
    };
    let (watch_path, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let resource = |name: &str| api::served_resource(group, version, name);
    let found = match rest {
        ["namespaces", ns, resource_name] => resource(resource_name).filter(|r| r.namespaced).map(|r| (r, *ns, "")),
        ["namespaces", ns, resource_name, name] => {
            resource(resource_name).filter(|r| r.namespaced).map(|r| (r, *ns, *name))
        }
        [resource_name] => resource(resource_name).map(|r| (r, "", "")),
        [resource_name, name] => resource(resource_name).filter(|r| !r.namespaced).map(|r| (r, "", *name)),
        _ => None,
    };
    match found {
        Some((resource, namespace, name)) => {
            Route::Resource { resource, namespace: namespace.into(), name: name.into(), watch_path }
        }
        None => Route::NotFound,
    }
}

/// A path outside every served group-version: the delegation chain's plain-text 404.
pub fn page_not_found() -> Reply {
    Reply::Body {
        status: 404,
        content_type: "text/plain; charset=utf-8".into(),
        body: b"404 page not found\n".to_vec(),
        headers: Vec::new(),
    }
}

/// An unknown resource under a served group-version: go-restful's 404 as a Status.
pub fn not_found() -> Reply {
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the server could not find the requested resource", "reason": "NotFound",
        "details": {}, "code": 404});
    Reply::json(404, &status)
}

pub fn error_reply(e: &ApiError) -> Reply {
    Reply::json(e.code, &e.to_status_json())
}

fn status_reply(code: u16, reason: &str, message: &str) -> Reply {
    Reply::json(
        code,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}),
    )
}

/// Whether the client asked for a server-side Table.
fn wants_table(req: &HttpRequest) -> bool {
    req.header("accept").is_some_and(|a| a.contains("as=Table"))
}

/// The body as the JSON the API server was sent: JSON as text (its decode errors are the
/// server's), protobuf decoded, YAML (an apply's) read into JSON.
fn body_of(req: &HttpRequest) -> Result<Body, Reply> {
    if let Some(body) = &req.typed_body {
        return Ok(body.clone());
    }
    let content_type = req.header("content-type").unwrap_or("application/json");
    if req.body.is_empty() {
        return Ok(Body::None);
    }
    if content_type.starts_with("application/vnd.kubernetes.protobuf") || proto::is_protobuf(&req.body) {
        return proto::decode(&req.body).map(Body::Json).map_err(|m| error_reply(&ApiError::bad_request(m)));
    }
    if content_type.starts_with("application/apply-patch+yaml") {
        let text = String::from_utf8_lossy(&req.body);
        return crate::yaml::parse_bounded(&text)
            .map(Body::Json)
            .map_err(|m| error_reply(&ApiError::bad_request(format!("error decoding YAML: {m}"))));
    }
    match std::str::from_utf8(&req.body) {
        Ok(text) => Ok(Body::Text(text.to_string())),
        Err(_) => Err(error_reply(&ApiError::bad_request("the request body is not UTF-8"))),
    }
}

/// The typed object a create or update's JSON body decodes to, where that can be known
/// without the server (no lock held): a PUT or POST whose body [`body_of`] sends as JSON text.
/// `None` leaves the decoding to the server.
pub fn typed_body(req: &HttpRequest) -> Option<Body> {
    if !matches!(req.method.as_str(), "PUT" | "POST") {
        return None;
    }
    let Route::Resource { resource, .. } = route(&req.path) else { return None };
    let Ok(Body::Text(text)) = body_of(req) else { return None };
    // An invalid `fieldValidation` is refused in `answer`; here it only keeps the server's path.
    let field_validation = FieldValidation::parse(req.query("fieldValidation")).ok()?;
    api::typed_body_from_text(resource.stored?, &text, field_validation)
}

/// The answer to a Kubernetes API request by `user`, at true time `now` (`wall`: the server's
/// wall clock then), against the world's API server. `address` is what `/api` reports.
pub fn answer(
    world: &mut World,
    req: &HttpRequest,
    user: &Arc<User>,
    now: Nanos,
    wall: UnixNanos,
    minor: u32,
    address: &str,
) -> Reply {
    match route(&req.path) {
        // Written with `json.MarshalIndent(obj, "", "  ")`.
        Route::Version => Reply::Body {
            status: 200,
            content_type: "application/json".into(),
            body: serde_json::to_vec_pretty(&api::version_info(minor)).expect("JSON serialises"),
            headers: Vec::new(),
        },
        Route::Discovery { core } => {
            let accept = req.header("accept").unwrap_or("");
            // Aggregated discovery only when the client lists v2 (kubectl 1.27 knows v2beta1 only).
            if accept.contains("as=APIGroupDiscoveryList") && accept.contains("v=v2;") || accept.contains("v=v2,") {
                return Reply::typed(
                    200,
                    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
                    &api::aggregated(core),
                );
            }
            if core { Reply::json(200, &api::api_versions(address)) } else { Reply::json(200, &api::api_group_list()) }
        }
        Route::ResourceList { group, version } => match api::api_resource_list(&group, &version) {
            Some(list) => Reply::json(200, &list),
            None => not_found(),
        },
        // An empty protobuf document: enough for kubectl's client-side validation
        // (kubectl-wire.md §2.2).
        Route::OpenApiV2 => Reply::Body {
            status: 200,
            content_type: "application/octet-stream".into(),
            body: Vec::new(),
            headers: Vec::new(),
        },
        Route::OpenApiV3 => page_not_found(),
        Route::NotFound => {
            // Under a served group-version the Status; anywhere else the plain text.
            let served = api::RESOURCES.iter().any(|r| {
                let prefix = if r.group.is_empty() {
                    format!("/api/{}/", r.version)
                } else {
                    format!("/apis/{}/{}/", r.group, r.version)
                };
                req.path.starts_with(&prefix)
            });
            if served { not_found() } else { page_not_found() }
        }
        Route::Resource { resource, namespace, name, watch_path } => {
            resource_request(world, req, user, now, wall, resource, &namespace, &name, watch_path)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn resource_request(
    world: &mut World,
    req: &HttpRequest,
    user: &Arc<User>,
    now: Nanos,
    wall: UnixNanos,
    resource: &'static Resource,
    namespace: &str,
    name: &str,
    watch_path: bool,
) -> Reply {
    let Some(kind) = resource.stored else {
        // The access review: created, never stored.
        if req.method != "POST" {
            return status_reply(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            );
        }
        let body = match body_of(req) {
            Ok(Body::Text(t)) => match serde_json::from_str::<Value>(&t) {
                Ok(v) => v,
                Err(e) => return error_reply(&ApiError::bad_request(format!("error decoding body: {e}"))),
            },
            Ok(body) => body.json().cloned().unwrap_or(Value::Null),
            Err(reply) => return reply,
        };
        return Reply::json(201, &world.server_mut().self_subject_access_review(user, &body));
    };
    if req.query("dryRun").is_some() {
        return error_reply(&ApiError::bad_request("dryRun is not supported by leasesim serve"));
    }
    let watching = watch_path || req.query("watch").is_some_and(|w| w == "true" || w == "1");
    let verb = match (req.method.as_str(), name.is_empty()) {
        ("GET", true) => Verb::List,
        ("GET", false) if watching => Verb::List,
        ("GET", false) => Verb::Get,
        ("POST", true) => Verb::Create,
        ("PUT", false) => Verb::Update,
        ("PATCH", false) => match req.header("content-type").unwrap_or("") {
            t if t.starts_with("application/apply-patch+yaml") => Verb::Apply,
            t if t.starts_with("application/merge-patch+json")
                || t.starts_with("application/strategic-merge-patch+json")
                || t.starts_with("application/json-patch+json") =>
            {
                Verb::Patch
            }
            _ => {
                let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "415: Unsupported Media Type", "reason": "UnsupportedMediaType", "details": {}, "code": 415});
                return Reply::json(415, &status);
            }
        },
        ("DELETE", false) => Verb::Delete,
        _ => {
            return status_reply(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            );
        }
    };
    if verb == Verb::List {
        return list_or_watch(world, req, user, now, wall, kind, namespace, name, watching);
    }
    if matches!(verb, Verb::Create | Verb::Update)
        && let Some(content_type) = req.header("content-type")
        && !["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
            .iter()
            .any(|t| content_type.starts_with(t))
    {
        return status_reply(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        );
    }
    let body = match body_of(req) {
        Ok(Body::Text(text)) if verb == Verb::Patch => match req.header("content-type").unwrap_or("") {
            // A strategic merge patch is applied as a merge patch, but named as its own patcher
            // names it when it fails (`Body::StrategicMergePatch`).
            t if t.starts_with("application/strategic-merge-patch+json") => Body::StrategicMergePatch(text),
            // A JSON patch (RFC 6902): its operations, applied by the server (`api::json_patch`).
            t if t.starts_with("application/json-patch+json") => Body::JsonPatch(text),
            _ => Body::Text(text),
        },
        Ok(body) => body,
        Err(reply) => return reply,
    };
    if verb == Verb::Apply && req.query("fieldManager").is_none_or(str::is_empty) {
        return error_reply(&ApiError::bad_request(
            "PATCH, application/apply-patch+yaml: fieldManager is required for apply requests",
        ));
    }
    // `fieldValidation` (create, update and patch options; absent: Warn). A create's and an
    // update's body and a merge patch's result are searched for unknown fields (docs/serve.md,
    // "Field validation"); a server-side apply's configuration is not.
    let field_validation = match FieldValidation::parse(req.query("fieldValidation")) {
        Ok(directive) => directive,
        Err(value) if matches!(verb, Verb::Create | Verb::Update | Verb::Patch | Verb::Apply) => {
            let options = match verb {
                Verb::Create => "CreateOptions",
                Verb::Update => "UpdateOptions",
                _ => "PatchOptions",
            };
            let supported = ["", "Ignore", "Strict", "Warn"];
            let field = FieldError::not_supported("fieldValidation", &api::go_quote(value), &supported);
            return error_reply(&ApiError::invalid("meta.k8s.io", options, "", &[field]));
        }
        Err(_) => FieldValidation::Warn,
    };
    let request = Request {
        user: user.clone(),
        verb,
        kind,
        namespace: namespace.into(),
        name: name.into(),
        body,
        field_manager: req.query("fieldManager").filter(|m| !m.is_empty()).map(Arc::from),
        force: req.query("force").is_some_and(|f| f == "true"),
        field_validation,
    };
    let answer = world.external_request(now, &request);
    let warnings = world.server_mut().take_warnings();
    match answer {
        Ok((object, created)) => {
            if matches!(object, Object::Deleted) {
                let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": {"name": name, "group": kind.group(), "kind": kind.resource()}});
                return Reply::json(200, &status);
            }
            if wants_table(req) && verb == Verb::Get {
                let rv = world.server_mut().resource_version();
                return Reply::typed(
                    200,
                    TABLE_TYPE,
                    &api::table(kind, &[api::to_json(&object)], rv, wall, include_object(req)),
                );
            }
            Reply::Object { status: if created { 201 } else { 200 }, object, warnings }
        }
        // Warnings go with a refusal too (the server adds them as it decodes, before it fails).
        Err(e) => error_reply(&e).warned(&warnings),
    }
}

/// A Table answer's Content-Type is plain JSON (docs/sources/apiserver-wire.md §1).
const TABLE_TYPE: &str = "application/json";

fn include_object(req: &HttpRequest) -> bool {
    req.query("includeObject") == Some("Object")
}

#[allow(clippy::too_many_arguments)]
fn list_or_watch(
    world: &mut World,
    req: &HttpRequest,
    user: &Arc<User>,
    now: Nanos,
    wall: UnixNanos,
    kind: Kind,
    namespace: &str,
    name: &str,
    watching: bool,
) -> Reply {
    let labels = match LabelSelector::parse(req.query("labelSelector").unwrap_or("")) {
        Ok(s) => s,
        Err(e) => return error_reply(&e),
    };
    let mut field_text = req.query("fieldSelector").unwrap_or("").to_string();
    if !name.is_empty() {
        // A watch on `/…/leases/NAME`: the one object, as `fieldSelector=metadata.name=NAME`.
        if !field_text.is_empty() {
            field_text.push(',');
        }
        field_text.push_str(&format!("metadata.name={name}"));
    }
    let fields = match FieldSelector::parse(&field_text, kind) {
        Ok(s) => s,
        Err(e) => return error_reply(&e),
    };
    let list = Request {
        user: user.clone(),
        verb: Verb::List,
        kind,
        namespace: namespace.into(),
        name: "".into(),
        body: Body::None,
        field_manager: None,
        force: false,
        field_validation: FieldValidation::Ignore,
    };
    let listed = match world.external_request(now, &list) {
        Ok((object, _)) => api::to_json(&object),
        Err(e) => return error_reply(&e),
    };
    let rv: u64 =
        listed.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok()).unwrap_or(0);
    let items: Vec<Value> = listed["items"]
        .as_array()
        .map(|items| items.iter().filter(|o| labels.matches(o) && fields.matches(o)).cloned().collect())
        .unwrap_or_default();
    if watching {
        let from = match req.query("resourceVersion") {
            None | Some("") | Some("0") => None,
            Some(v) => match v.parse::<u64>() {
                Ok(v) => Some(v),
                Err(_) => {
                    return error_reply(&ApiError::bad_request(format!("invalid resource version \"{v}\"")));
                }
            },
        };
        let spec = WatchSpec {
            kind,
            namespace: namespace.into(),
            labels,
            fields,
            from,
            table: wants_table(req),
            bookmarks: req.query("allowWatchBookmarks") == Some("true"),
            timeout_secs: req.query("timeoutSeconds").and_then(|t| t.parse().ok()),
            sent_table: false,
        };
        // From "any" version: the current objects first, as ADDED events.
        let mut spec = spec;
        let mut initial = Vec::new();
        let (start, items) = match spec.from {
            None => (rv, items),
            Some(from) => (from, Vec::new()),
        };
        for item in items {
            // List items come without kind and apiVersion; a watch event's object has them.
            let mut object = serde_json::Map::new();
            object.insert("kind".into(), json!(kind.kind_name()));
            object.insert("apiVersion".into(), json!(kind.api_version()));
            if let Value::Object(fields) = item {
                object.extend(fields);
            }
            initial.push(watch_line("ADDED", &Value::Object(object), &mut spec, rv, wall));
        }
        return Reply::Watch { spec: Box::new(spec), initial, rv: start };
    }
    // `limit` and `continue`: a page of the list, the token the offset of the next.
    let offset: usize = req.query("continue").and_then(decode_continue).unwrap_or(0);
    let limit: usize = req.query("limit").and_then(|l| l.parse().ok()).filter(|&l| l > 0).unwrap_or(usize::MAX);
    let total = items.len();
    let page: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
    let next = offset + page.len();
    // `remainingItemCount` only for an unfiltered list (docs/sources/apiserver-wire.md §6).
    let unfiltered = labels.is_empty() && fields.is_empty();
    let mark = |metadata: &mut Value| {
        if next < total {
            metadata["continue"] = json!(encode_continue(next));
            if unfiltered {
                metadata["remainingItemCount"] = json!(total - next);
            }
        }
    };
    if wants_table(req) {
        let mut table = api::table(kind, &page, rv, wall, include_object(req));
        mark(&mut table["metadata"]);
        return Reply::typed(200, TABLE_TYPE, &table);
    }
    let mut out = listed;
    out["items"] = Value::Array(page);
    mark(&mut out["metadata"]);
    Reply::json(200, &out)
}

fn encode_continue(offset: usize) -> String {
    format!("leasesim-{offset}")
}

fn decode_continue(token: &str) -> Option<usize> {
    token.strip_prefix("leasesim-").and_then(|n| n.parse().ok())
}

/// One watch event line: `{"type":…,"object":…}` and a newline; the object a one-row Table
/// when the watch asked for Tables, its column definitions in the first event only.
pub fn watch_line(event: &str, object: &Value, spec: &mut WatchSpec, rv: u64, wall: UnixNanos) -> Vec<u8> {
    let object = if spec.table {
        let mut table = api::table(spec.kind, std::slice::from_ref(object), rv, wall, false);
        if spec.sent_table {
            table["columnDefinitions"] = Value::Null;
        }
        spec.sent_table = true;
        table
    } else {
        object.clone()
    };
    let mut line = serde_json::to_vec(&json!({"type": event, "object": object})).expect("JSON serialises");
    line.push(b'\n');
    line
}

/// The lines of a watch since revision `from`: each committed change that matches it, or the
/// `410 Gone` ERROR event when the changes after `from` are no longer kept.
pub fn watch_changes(world: &World, spec: &mut WatchSpec, from: u64, wall: UnixNanos) -> (Vec<Vec<u8>>, u64, bool) {
    match world.server().changes_after(from) {
        Ok(changes) => {
            let mut last = from;
            let mut lines = Vec::new();
            for c in changes {
                last = c.rv;
                if c.kind != spec.kind || (!spec.namespace.is_empty() && c.namespace != spec.namespace) {
                    continue;
                }
                let object = c.object();
                if !spec.labels.matches(&object) || !spec.fields.matches(&object) {
                    continue;
                }
                lines.push(watch_line(c.change.name(), &object, spec, c.rv, wall));
            }
            (lines, last.max(from), false)
        }
        Err(oldest) => {
            let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("too old resource version: {from} ({oldest})"), "reason": "Expired", "code": 410});
            let mut line = serde_json::to_vec(&json!({"type": "ERROR", "object": status})).expect("JSON serialises");
            line.push(b'\n');
            (vec![line], from, true)
        }
    }
}

/// A bookmark at revision `rv`.
pub fn bookmark_line(kind: Kind, rv: u64) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({"type": "BOOKMARK", "object": {
        "kind": kind.kind_name(), "apiVersion": kind.api_version(), "metadata": {"resourceVersion": rv.to_string()}}}))
    .expect("JSON serialises");
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_route_to_their_resources() {
        let r = route("/apis/coordination.k8s.io/v1/namespaces/op-leader/leases/widget-operator");
        let Route::Resource { resource, namespace, name, watch_path } = r else { panic!("{r:?}") };
        assert_eq!(
            (resource.name, namespace.as_str(), name.as_str(), watch_path),
            ("leases", "op-leader", "widget-operator", false)
        );
        assert!(matches!(route("/api/v1/namespaces/op-leader"), Route::Resource { name, .. } if name == "op-leader"));
        assert!(matches!(route("/api/v1/namespaces"), Route::Resource { .. }));
        assert!(
            matches!(route("/apis/coordination.k8s.io/v1/leases"), Route::Resource { namespace, .. } if namespace.is_empty())
        );
        assert_eq!(route("/apis/apps/v1/namespaces/x/deployments"), Route::NotFound);
        assert_eq!(route("/healthz/../etc"), Route::NotFound);
        assert_eq!(route("/api/v1/namespaces/x/leases"), Route::NotFound, "leases are not core");
        assert!(matches!(route("/api/v1/watch/namespaces/x/configmaps"), Route::Resource { watch_path: true, .. }));
    }
}
