//! Parity with the exact texts in `shared/vectors/api-texts.json` (copied into
//! `sim-core/tests/fixtures/api-texts.json` so the tests do not depend on shared/ being there).

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::time::DEFAULT_EPOCH_UNIX_NANOS;

const FIXTURE: &str = include_str!("../../tests/fixtures/api-texts.json");
const NS: &str = "team-a";
const NAME: &str = "widget-operator";

fn vectors() -> Value {
    serde_json::from_str(FIXTURE).expect("fixture is JSON")
}

fn vector_case(case: &str) -> Value {
    vectors()["api_errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == case)
        .unwrap_or_else(|| panic!("no vector {case:?}"))
        .clone()
}

fn fill(template: &str, subs: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (placeholder, value) in [("<NAME>", NAME), ("<NS>", NS)].iter().chain(subs) {
        out = out.replace(placeholder, value);
    }
    out
}

/// Checks status, reason, message and (when the vector has it) kubectl's stderr.
fn check(case: &str, error: &ApiError, subs: &[(&str, &str)]) {
    let v = vector_case(case);
    assert_eq!(error.code as u64, v["status"].as_u64().unwrap(), "{case}");
    assert_eq!(error.reason.as_str(), v["reason"], "{case}");
    if let Some(message) = v["message"].as_str() {
        assert_eq!(error.message, fill(message, subs), "{case}");
    }
    if let Some(stderr) = v["kubectl_stderr"].as_str() {
        assert_eq!(error.kubectl_stderr(), fill(stderr, subs), "{case}");
    }
}

fn server() -> ApiServer {
    let mut s = ApiServer::new(DEFAULT_EPOCH_UNIX_NANOS);
    s.seed_object(0, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})).unwrap();
    s
}

fn admin(verb: Verb, kind: Kind, name: &str, body: Body) -> Request {
    Request {
        user: Arc::new(User::admin()),
        verb,
        kind,
        namespace: Arc::from(NS),
        name: Arc::from(name),
        body,
        field_manager: Some(Arc::from("parity")),
        force: false,
        field_validation: FieldValidation::Ignore,
    }
}

fn lease_json(rv: Option<&str>, duration: i64, transitions: i64) -> Value {
    let mut v = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": NAME},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": duration, "renewTime": "2026-01-01T00:00:00.000000Z", "leaseTransitions": transitions}});
    if let Some(rv) = rv {
        v["metadata"]["resourceVersion"] = json!(rv);
    }
    v
}

fn with_lease() -> ApiServer {
    let mut s = server();
    s.handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Json(lease_json(None, 15, 0)))).unwrap();
    s
}

fn with_config_map() -> ApiServer {
    let mut s = server();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME}, "data": {"phase": "new"}});
    s.handle(0, &admin(Verb::Create, Kind::ConfigMap, "", Body::Json(cm))).unwrap();
    s
}

#[test]
fn the_fixture_still_matches_the_shared_vectors_when_they_are_present() {
    let shared_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/vectors/api-texts.json");
    let Ok(text) = std::fs::read_to_string(shared_path) else {
        return;
    };
    let shared: Value = serde_json::from_str(&text).unwrap();
    let fixture = vectors();
    for section in ["api_errors", "server_side_apply", "microtime", "kubectl_other"] {
        assert_eq!(fixture[section], shared[section], "section {section} drifted: copy it again");
    }
}

#[test]
fn not_found_texts_match_the_vectors() {
    let mut s = server();
    for verb in [Verb::Get, Verb::Patch, Verb::Delete] {
        let err = s.handle(0, &admin(verb, Kind::Lease, NAME, Body::Json(json!({})))).unwrap_err();
        check("get/update/patch of a missing Lease", &err, &[]);
    }
    let err = s.handle(0, &admin(Verb::Get, Kind::ConfigMap, NAME, Body::None)).unwrap_err();
    check("missing ConfigMap", &err, &[]);
}

#[test]
fn already_exists_texts_match_the_vectors() {
    let mut s = with_lease();
    let err = s.handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Json(lease_json(None, 15, 0)))).unwrap_err();
    check("create of an existing Lease", &err, &[]);
    let mut s = with_config_map();
    let err = s
        .handle(0, &admin(Verb::Create, Kind::ConfigMap, "", Body::Json(json!({"metadata": {"name": NAME}}))))
        .unwrap_err();
    check("create of an existing ConfigMap", &err, &[]);
}

#[test]
fn optimistic_lock_conflict_texts_match_the_vectors() {
    let mut s = with_lease();
    let err =
        s.handle(0, &admin(Verb::Update, Kind::Lease, NAME, Body::Json(lease_json(Some("1"), 15, 1)))).unwrap_err();
    check("update of a Lease with a stale resourceVersion", &err, &[]);
    let mut s = with_config_map();
    let cm = json!({"metadata": {"name": NAME, "resourceVersion": "1"}, "data": {"phase": "x"}});
    let err = s.handle(0, &admin(Verb::Update, Kind::ConfigMap, NAME, Body::Json(cm))).unwrap_err();
    check("update of a ConfigMap with a stale resourceVersion", &err, &[]);
}

#[test]
fn invalid_texts_match_the_vectors() {
    let mut s = with_lease();
    let err = s.handle(0, &admin(Verb::Update, Kind::Lease, NAME, Body::Json(lease_json(None, 15, 1)))).unwrap_err();
    check("PUT of an existing Lease without resourceVersion", &err, &[]);
    let rv = s.resource_version().to_string();
    for n in [0, -5] {
        let err =
            s.handle(0, &admin(Verb::Update, Kind::Lease, NAME, Body::Json(lease_json(Some(&rv), n, 0)))).unwrap_err();
        check("Lease spec.leaseDurationSeconds <= 0", &err, &[("<N>", &n.to_string())]);
    }
    let err =
        s.handle(0, &admin(Verb::Update, Kind::Lease, NAME, Body::Json(lease_json(Some(&rv), 15, -1)))).unwrap_err();
    check("Lease spec.leaseTransitions < 0", &err, &[("<N>", "-1")]);
}

#[test]
fn bad_microtime_on_create_and_put_matches_the_vector() {
    let mut s = server();
    let case = "create or PUT of a Lease whose renewTime lacks six fractional digits";
    let mut body = lease_json(None, 15, 0);
    body["spec"]["renewTime"] = json!("2026-01-01T00:00:00Z");
    let err = s.handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Text(body.to_string()))).unwrap_err();
    check(case, &err, &[]);
    let with_file = vector_case(case)["kubectl_stderr_with_file"].as_str().unwrap().replace("<FILE>", "lease.json");
    assert_eq!(err.kubectl_stderr_with_file("creating", "lease.json"), with_file);
    let err = s.handle(0, &admin(Verb::Update, Kind::Lease, NAME, Body::Json(body))).unwrap_err();
    check(case, &err, &[]);
}

#[test]
fn bad_microtime_in_a_merge_patch_matches_the_vector_around_the_quoted_object() {
    let mut s = with_lease();
    let v = vector_case("merge patch setting spec.renewTime to 2026-01-01T00:00:00Z");
    let err = s
        .handle(
            0,
            &admin(
                Verb::Patch,
                Kind::Lease,
                NAME,
                Body::Text(r#"{"spec":{"renewTime":"2026-01-01T00:00:00Z"}}"#.into()),
            ),
        )
        .unwrap_err();
    check("merge patch setting spec.renewTime to 2026-01-01T00:00:00Z", &err, &[]);
    let prefix = v["message_prefix"].as_str().unwrap();
    let suffix = v["message_suffix"].as_str().unwrap();
    assert!(err.message.starts_with(prefix) && err.message.ends_with(suffix), "{}", err.message);
    let quoted = &err.message[prefix.len() - 1..err.message.len() - suffix.len() + 1];
    assert_eq!(
        quoted,
        go_quote(&go_json_marshal(&serde_json::from_str::<Value>(&unquote(quoted)).unwrap())),
        "the embedded object is Go JSON, %q-quoted"
    );
    assert!(err.kubectl_stderr().starts_with(v["kubectl_stderr_prefix"].as_str().unwrap()));
    assert!(err.kubectl_stderr().ends_with(suffix));
}

/// Undoes `go_quote` for the ASCII JSON the test produces.
fn unquote(quoted: &str) -> String {
    quoted[1..quoted.len() - 1].replace("\\\"", "\"").replace("\\\\", "\\")
}

#[test]
fn forbidden_texts_match_the_vectors() {
    let mut s = with_lease();
    let sa = Arc::new(User::service_account(NS, "elector"));
    let mut req = admin(Verb::Update, Kind::Lease, NAME, Body::Json(lease_json(Some("9"), 15, 0)));
    req.user = Arc::clone(&sa);
    check("denied named request (RBAC)", &s.handle(0, &req).unwrap_err(), &[("<SA>", "elector"), ("<VERB>", "update")]);
    req.verb = Verb::Create;
    req.name = Arc::from("");
    check("denied create (no name) (RBAC)", &s.handle(0, &req).unwrap_err(), &[("<SA>", "elector")]);
    let user = User::named("jane");
    let req = Request { user: Arc::new(user), ..admin(Verb::Get, Kind::ConfigMap, NAME, Body::None) };
    check("denied ConfigMap get (core group)", &s.handle(0, &req).unwrap_err(), &[("<USER>", "jane")]);
}

fn apply_cm(s: &mut ApiServer, manager: &str, force: bool, data: Value) -> Result<Object, ApiError> {
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "order-1"}, "data": data});
    let mut req = admin(Verb::Apply, Kind::ConfigMap, "order-1", Body::Json(config));
    req.field_manager = Some(Arc::from(manager));
    req.force = force;
    s.handle(0, &req)
}

#[test]
fn server_side_apply_texts_match_the_vectors() {
    let ssa = vectors()["server_side_apply"].clone();
    let example = &ssa["examples"][0];
    let (manager, path) = (example["manager"].as_str().unwrap(), example["path"].as_str().unwrap());
    let mut s = server();
    apply_cm(&mut s, manager, false, json!({"phase": "new"})).unwrap();
    let err = apply_cm(&mut s, "kubectl", false, json!({"phase": "done"})).unwrap_err();
    let subs = [("<MANAGER>", manager), ("<PATH>", path)];
    assert_eq!(err.code as u64, ssa["status"].as_u64().unwrap());
    assert_eq!(err.reason.as_str(), ssa["reason"]);
    assert_eq!(err.message, fill(ssa["one_conflict_message"].as_str().unwrap(), &subs));
    assert_eq!(kubectl_apply_conflict_stderr(&err), fill(ssa["kubectl_stderr"].as_str().unwrap(), &subs));
    assert!(
        kubectl_apply_conflict_stderr(&err)
            .ends_with(ssa["kubectl_stderr_last_line_by_version"]["1.33"].as_str().unwrap())
    );
    apply_cm(&mut s, "kubectl", true, json!({"phase": "done"})).unwrap();
    assert_eq!(kubectl_serverside_applied_stdout(Kind::ConfigMap, "order-1"), ssa["force_success_example"]);
    assert_eq!(
        kubectl_serverside_applied_stdout(Kind::Lease, NAME),
        fill(ssa["force_success_stdout"].as_str().unwrap(), &[("<KIND>.<GROUP>", "lease.coordination.k8s.io")])
    );
}

#[test]
fn server_side_apply_update_manager_and_several_conflicts_match_the_vector_shapes() {
    let ssa = vectors()["server_side_apply"].clone();
    let mut s = server();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "order-1"}, "data": {"phase": "new", "owner": "x"}});
    let mut create = admin(Verb::Create, Kind::ConfigMap, "", Body::Json(cm));
    create.field_manager = Some(Arc::from("kubectl-edit"));
    s.handle(0, &create).unwrap();
    let err = apply_cm(&mut s, "me", false, json!({"phase": "done"})).unwrap_err();
    let subs = [("<MANAGER>", "kubectl-edit"), ("<APIVERSION>", "v1"), ("<PATH>", ".data.phase")];
    assert_eq!(err.message, fill(ssa["one_conflict_update_manager"].as_str().unwrap(), &subs));
    apply_cm(&mut s, "other", true, json!({"extra": "1"})).unwrap();
    let err = apply_cm(&mut s, "me", false, json!({"phase": "done", "owner": "me", "extra": "2"})).unwrap_err();
    let expected = fill(
        ssa["several_conflicts_shape"].as_str().unwrap(),
        &[
            ("<N>", "3"),
            ("<M1>\"", "kubectl-edit\" using v1"),
            ("<PATH1>", ".data.owner"),
            ("<PATH2>", ".data.phase"),
            ("<M2>", "other"),
            ("<PATH3>", ".data.extra"),
        ],
    );
    assert_eq!(err.message, expected);
}

#[test]
fn microtime_vectors_parse_and_fail_as_go_does() {
    let mt = vectors()["microtime"].clone();
    assert_eq!(mt["layout"], MICRO_TIME_LAYOUT);
    for accept in mt["accept"].as_array().unwrap() {
        MicroTime::parse(accept.as_str().unwrap()).unwrap();
    }
    for reject in mt["reject"].as_array().unwrap() {
        assert_eq!(MicroTime::parse(reject["value"].as_str().unwrap()).unwrap_err(), reject["error"].as_str().unwrap());
    }
}

#[test]
fn kubectl_stdout_vectors_match() {
    let other = vectors()["kubectl_other"].clone();
    assert_eq!(
        kubectl_patched_stdout(Kind::Lease, NAME, true),
        fill(other["patch_success_stdout"].as_str().unwrap(), &[])
    );
    assert_eq!(
        kubectl_patched_stdout(Kind::Lease, NAME, false),
        fill(other["patch_no_change_stdout"].as_str().unwrap(), &[])
    );
    let yes = &other["auth_can_i"]["yes"];
    assert_eq!(kubectl_auth_can_i(true), (yes["stdout"].as_str().unwrap(), yes["exit"].as_i64().unwrap() as i32));
    let no = &other["auth_can_i"]["no"];
    assert_eq!(kubectl_auth_can_i(false), (no["stdout"].as_str().unwrap(), no["exit"].as_i64().unwrap() as i32));
}
