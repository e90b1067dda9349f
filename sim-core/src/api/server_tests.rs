//! Behaviour tests of the fake API server, one real behaviour each (apiserver.md sections cited).

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::time::{DEFAULT_EPOCH_UNIX_NANOS, Nanos, secs};

const NS: &str = "default";

fn server() -> ApiServer {
    ApiServer::new(DEFAULT_EPOCH_UNIX_NANOS)
}

fn request(user: &User, verb: Verb, kind: Kind, name: &str, body: Body) -> Request {
    Request {
        user: Arc::new(user.clone()),
        verb,
        kind,
        namespace: Arc::from(NS),
        name: Arc::from(name),
        body,
        field_manager: None,
        force: false,
        field_validation: FieldValidation::Ignore,
    }
}

fn admin(verb: Verb, kind: Kind, name: &str, body: Body) -> Request {
    request(&User::admin(), verb, kind, name, body)
}

fn with_manager(mut req: Request, manager: &str, force: bool) -> Request {
    req.field_manager = Some(Arc::from(manager));
    req.force = force;
    req
}

fn lease(name: &str, holder: &str, renew_secs: i64, rv: &str) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: name.into(),
            namespace: NS.into(),
            resource_version: rv.into(),
            ..ObjectMeta::default()
        },
        spec: LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(MicroTime::from_unix_nanos(DEFAULT_EPOCH_UNIX_NANOS)),
            renew_time: Some(MicroTime::from_unix_nanos(DEFAULT_EPOCH_UNIX_NANOS + renew_secs * 1_000_000_000)),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        },
    }
}

fn create_lease(s: &mut ApiServer, now: Nanos, name: &str, holder: &str) -> Arc<Lease> {
    let req = with_manager(
        admin(Verb::Create, Kind::Lease, "", Body::Lease(Arc::new(lease(name, holder, 0, "")))),
        "kube-controller-manager",
        false,
    );
    match s.handle(now, &req).unwrap() {
        Object::Lease(l) => l,
        other => panic!("expected a Lease, got {other:?}"),
    }
}

fn put_lease(s: &mut ApiServer, now: Nanos, l: Lease) -> Result<Object, ApiError> {
    let name = l.metadata.name.clone();
    let req = with_manager(
        admin(Verb::Update, Kind::Lease, &name, Body::Lease(Arc::new(l))),
        "kube-controller-manager",
        false,
    );
    s.handle(now, &req)
}

fn create_config_map(s: &mut ApiServer, name: &str, data: &[(&str, &str)]) {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": data.iter().map(|(k, v)| (k.to_string(), Value::from(*v))).collect::<serde_json::Map<_, _>>()});
    s.handle(0, &admin(Verb::Create, Kind::ConfigMap, "", Body::Json(body))).unwrap();
}

fn rv_of(object: &Object) -> u64 {
    to_json(object)["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

fn managers_of(s: &mut ApiServer, kind: Kind, name: &str) -> Vec<(String, String, Value)> {
    let v = s.peek_json(kind, NS, name).unwrap();
    v["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap().to_string(),
                        e["operation"].as_str().unwrap().to_string(),
                        e["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

// ---- resourceVersion, create, get (apiserver.md §3, §4) ----

#[test]
fn a_fresh_server_has_default_and_kube_system_namespaces() {
    let mut s = server();
    assert!(s.can_i(&User::admin(), "get", Kind::Namespace, "", Some("default")));
    assert!(s.peek_json(Kind::Namespace, "", "default").is_some());
    assert!(s.peek_json(Kind::Namespace, "", "kube-system").is_some());
    assert_eq!(s.resource_version(), 2);
}

#[test]
fn every_successful_write_takes_the_next_global_revision() {
    let mut s = server();
    let start = s.resource_version();
    let created = create_lease(&mut s, 0, "lock", "a");
    assert_eq!(created.metadata.resource_version, (start + 1).to_string());
    create_config_map(&mut s, "cm", &[("k", "v")]);
    assert_eq!(s.resource_version(), start + 2);
    let updated = put_lease(&mut s, secs(2), lease("lock", "a", 2, &created.metadata.resource_version)).unwrap();
    assert_eq!(rv_of(&updated), start + 3, "one counter shared by all objects, like the etcd revision");
}

#[test]
fn get_of_a_lease_returns_the_stored_arc_without_a_copy() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let Object::Lease(got) = s.handle(0, &admin(Verb::Get, Kind::Lease, "lock", Body::None)).unwrap() else { panic!() };
    assert!(Arc::ptr_eq(&got, s.peek_lease(NS, "lock").unwrap()));
}

#[test]
fn server_sets_uid_creation_timestamp_and_managed_fields_from_its_own_clock() {
    let mut s = server();
    let created = create_lease(&mut s, secs(3), "lock", "a");
    assert_eq!(created.metadata.uid, "00000000-0000-4000-8000-000000000003", "deterministic counter uids");
    assert_eq!(created.metadata.creation_timestamp.unwrap().to_rfc3339(), "2026-01-01T00:00:03Z");
    let entry = &created.metadata.managed_fields[0];
    assert_eq!(
        (&*entry.manager, &*entry.operation, &*entry.api_version),
        ("kube-controller-manager", "Update", "coordination.k8s.io/v1")
    );
    assert_eq!(entry.time.unwrap().to_rfc3339(), "2026-01-01T00:00:03Z");
    assert_eq!(
        serde_json::to_string(&entry.fields_v1).unwrap(),
        r#"{"f:spec":{"f:acquireTime":{},"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:leaseTransitions":{},"f:renewTime":{}}}"#
    );
}

#[test]
fn create_of_an_existing_lease_is_409_already_exists() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let err = s
        .handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Lease(Arc::new(lease("lock", "b", 0, "")))))
        .unwrap_err();
    assert_eq!((err.code, err.reason), (409, Reason::AlreadyExists));
    assert_eq!(err.message, r#"leases.coordination.k8s.io "lock" already exists"#);
}

#[test]
fn create_in_a_missing_namespace_is_404_namespace_not_found() {
    let mut s = server();
    let mut req = admin(Verb::Create, Kind::Lease, "", Body::Json(json!({"metadata": {"name": "lock"}})));
    req.namespace = Arc::from("nope");
    let err = s.handle(0, &req).unwrap_err();
    assert_eq!(err.kubectl_stderr(), r#"Error from server (NotFound): namespaces "nope" not found"#);
}

#[test]
fn get_of_a_missing_lease_or_config_map_is_404_with_the_real_text() {
    let mut s = server();
    let err = s.handle(0, &admin(Verb::Get, Kind::Lease, "x", Body::None)).unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.message, r#"leases.coordination.k8s.io "x" not found"#);
    let err = s.handle(0, &admin(Verb::Get, Kind::ConfigMap, "x", Body::None)).unwrap_err();
    assert_eq!(err.message, r#"configmaps "x" not found"#);
}

#[test]
fn create_without_a_name_is_422_name_required() {
    let mut s = server();
    let err = s.handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Json(json!({"spec": {}})))).unwrap_err();
    assert_eq!(
        err.kubectl_stderr(),
        r#"The Lease "" is invalid: metadata.name: Required value: name or generateName is required"#
    );
}

// ---- update (apiserver.md §1 registry strategy, §3, §4) ----

#[test]
fn lease_put_to_a_missing_name_creates_it() {
    let mut s = server();
    let created = put_lease(&mut s, 0, lease("new", "a", 0, "")).unwrap();
    assert_eq!(rv_of(&created), 3);
    assert!(s.peek_lease(NS, "new").is_some());
}

#[test]
fn config_map_put_to_a_missing_name_is_404() {
    let mut s = server();
    let body = json!({"metadata": {"name": "cm"}, "data": {"a": "b"}});
    let err = s.handle(0, &admin(Verb::Update, Kind::ConfigMap, "cm", Body::Json(body))).unwrap_err();
    assert_eq!(err.message, r#"configmaps "cm" not found"#);
}

#[test]
fn lease_put_without_resource_version_is_422_must_be_specified_for_an_update() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let err = put_lease(&mut s, 0, lease("lock", "b", 1, "")).unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        r#"leases.coordination.k8s.io "lock" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"#
    );
    assert_eq!(
        err.kubectl_stderr(),
        r#"The leases "lock" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"#
    );
}

#[test]
fn config_map_put_without_resource_version_is_unconditional() {
    let mut s = server();
    create_config_map(&mut s, "cm", &[("a", "1")]);
    let body = json!({"metadata": {"name": "cm"}, "data": {"a": "2"}});
    s.handle(0, &admin(Verb::Update, Kind::ConfigMap, "cm", Body::Json(body))).unwrap();
    assert_eq!(s.peek_config_map(NS, "cm").unwrap().data["a"], "2");
}

#[test]
fn stale_resource_version_update_is_409_with_the_real_text() {
    let mut s = server();
    let first = create_lease(&mut s, 0, "lock", "a");
    put_lease(&mut s, secs(2), lease("lock", "a", 2, &first.metadata.resource_version)).unwrap();
    let before = s.resource_version();
    let err = put_lease(&mut s, secs(3), lease("lock", "b", 3, &first.metadata.resource_version)).unwrap_err();
    assert!(err.is_conflict());
    assert_eq!(
        err.kubectl_stderr(),
        r#"Error from server (Conflict): Operation cannot be fulfilled on leases.coordination.k8s.io "lock": the object has been modified; please apply your changes to the latest version and try again"#
    );
    assert_eq!(s.resource_version(), before, "a rejected write is not persisted");
    assert_eq!(s.peek_lease(NS, "lock").unwrap().spec.holder_identity.as_deref(), Some("a"));
}

#[test]
fn a_write_that_changes_nothing_keeps_the_resource_version() {
    let mut s = server();
    let first = create_lease(&mut s, 0, "lock", "a");
    let before = s.resource_version();
    let same = put_lease(&mut s, secs(5), Lease::clone(&first)).unwrap();
    assert_eq!(rv_of(&same), before);
    assert_eq!(s.resource_version(), before);
    assert_eq!(
        s.peek_lease(NS, "lock").unwrap().metadata.managed_fields[0].time.unwrap().unix_secs(),
        1_767_225_600,
        "time untouched"
    );
}

#[test]
fn a_renewal_bumps_the_rv_and_only_refreshes_the_renewers_time() {
    let mut s = server();
    let first = create_lease(&mut s, 0, "lock", "a");
    let mut renewed = Lease::clone(&first);
    renewed.spec.renew_time = Some(MicroTime::from_unix_nanos(DEFAULT_EPOCH_UNIX_NANOS + 2_500_000_123));
    let Object::Lease(after) = put_lease(&mut s, secs(2), renewed).unwrap() else { panic!() };
    assert_eq!(after.spec.renew_time.unwrap().to_rfc3339(), "2026-01-01T00:00:02.500000Z");
    assert_eq!(after.metadata.managed_fields.len(), 1);
    assert_eq!(after.metadata.managed_fields[0].time.unwrap().to_rfc3339(), "2026-01-01T00:00:02Z");
}

#[test]
fn an_update_takes_changed_fields_from_other_managers_and_drops_empty_ones() {
    let mut s = server();
    create_config_map(&mut s, "cm", &[("a", "1")]); // kubectl-create owns data, data.a
    let body = json!({"metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}});
    s.handle(0, &with_manager(admin(Verb::Update, Kind::ConfigMap, "cm", Body::Json(body)), "writer", false)).unwrap();
    let managers = managers_of(&mut s, Kind::ConfigMap, "cm");
    assert_eq!(managers[0].0, "kubectl-create");
    assert_eq!(
        managers[0].2,
        json!({"f:data": {".": {}, "f:a": {}}}),
        "setting a field to its current value does not take it"
    );
    assert_eq!(managers[1].0, "writer");
    assert_eq!(managers[1].2, json!({"f:data": {"f:b": {}}}));
    let body = json!({"metadata": {"name": "cm"}, "data": {"a": "9", "b": "2"}});
    s.handle(secs(1), &with_manager(admin(Verb::Update, Kind::ConfigMap, "cm", Body::Json(body)), "writer", false))
        .unwrap();
    let body = json!({"metadata": {"name": "cm"}, "data": {"a": "9", "b": "2", "c": "3"}});
    s.handle(secs(1), &with_manager(admin(Verb::Update, Kind::ConfigMap, "cm", Body::Json(body)), "third", false))
        .unwrap();
    let managers = managers_of(&mut s, Kind::ConfigMap, "cm");
    let names: Vec<&str> = managers.iter().map(|m| m.0.as_str()).collect();
    assert_eq!(names, ["kubectl-create", "third", "writer"], "server order: operation, time, then manager name");
    // It still owns the map itself, written `{}` with no keys beside it (SMD
    // `fieldpath/serialize.go` `emitContentsV1`: "." only beside children).
    assert_eq!(managers[0].2, json!({"f:data": {}}));
    assert_eq!(managers[1].2, json!({"f:data": {"f:c": {}}}));
    assert_eq!(managers[2].2, json!({"f:data": {"f:a": {}, "f:b": {}}}));
}

#[test]
fn put_with_a_bad_microtime_is_400_cannot_be_handled_as_a_lease() {
    let mut s = server();
    let text = r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"lock"},"spec":{"renewTime":"2026-01-01T00:00:00Z"}}"#;
    for verb in [Verb::Create, Verb::Update] {
        let name = if verb == Verb::Create { "" } else { "lock" };
        let err = s.handle(0, &admin(verb, Kind::Lease, name, Body::Text(text.into()))).unwrap_err();
        assert_eq!((err.code, err.reason), (400, Reason::BadRequest));
        assert_eq!(
            err.message,
            r#"Lease in version "v1" cannot be handled as a Lease: parsing time "2026-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#
        );
    }
}

#[test]
fn malformed_bodies_are_400s_never_panics() {
    let mut s = server();
    let err = s.handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Text("{not json".into()))).unwrap_err();
    assert_eq!(err.code, 400);
    assert!(err.message.starts_with(
        "the object provided is unrecognized (must be of type Lease): couldn't get version/kind; json parse error: "
    ));
    let err = s.handle(0, &admin(Verb::Create, Kind::Lease, "", Body::None)).unwrap_err();
    assert_eq!(
        err.message,
        "the object provided is unrecognized (must be of type Lease): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)"
    );
    let err = s
        .handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Json(json!({"apiVersion": "v1", "kind": "Lease"}))))
        .unwrap_err();
    assert_eq!(
        err.message,
        "the API version in the data (v1) does not match the expected API version (coordination.k8s.io/v1)"
    );
    let err = s
        .handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Json(json!({"spec": {"leaseDurationSeconds": "x"}}))))
        .unwrap_err();
    assert_eq!(err.code, 400);
    let err = s
        .handle(0, &admin(Verb::Update, Kind::Lease, "a", Body::Json(json!({"metadata": {"name": "b"}}))))
        .unwrap_err();
    assert_eq!(err.message, "the name of the object (b) does not match the name on the URL (a)");
    let err = s
        .handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Json(json!({"metadata": {"name": "Bad Name"}}))))
        .unwrap_err();
    assert_eq!(err.code, 422);
}

#[test]
fn lease_validation_is_422_and_kubectl_renders_it_from_details() {
    let mut s = server();
    let mut bad = lease("lock", "a", 0, "");
    bad.spec.lease_duration_seconds = Some(0);
    let err = s.handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Lease(Arc::new(bad)))).unwrap_err();
    assert_eq!(
        err.message,
        r#"Lease.coordination.k8s.io "lock" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"#
    );
    assert_eq!(
        err.kubectl_stderr(),
        r#"The Lease "lock" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"#
    );
    let mut bad = lease("lock", "a", 0, "");
    bad.spec.preferred_holder = Some("b".into());
    let err = s.handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Lease(Arc::new(bad)))).unwrap_err();
    assert_eq!(
        err.kubectl_stderr(),
        "The Lease \"lock\" is invalid: spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"
    );
}

// ---- merge patch (apiserver.md §2.1, §4) ----

fn merge_patch_req(name: &str, patch: Value) -> Request {
    with_manager(admin(Verb::Patch, Kind::Lease, name, Body::Json(patch)), "kubectl-patch", false)
}

#[test]
fn merge_patch_null_deletes_a_field_and_bumps_the_rv() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let before = s.resource_version();
    let out = s
        .handle(0, &merge_patch_req("lock", json!({"spec": {"holderIdentity": null, "leaseTransitions": 4}})))
        .unwrap();
    assert_eq!(rv_of(&out), before + 1);
    let l = s.peek_lease(NS, "lock").unwrap();
    assert_eq!((l.spec.holder_identity.clone(), l.spec.lease_transitions), (None, Some(4)));
    let managers = managers_of(&mut s, Kind::Lease, "lock");
    assert_eq!(
        managers[1],
        ("kubectl-patch".to_string(), "Update".to_string(), json!({"f:spec": {"f:leaseTransitions": {}}}))
    );
}

#[test]
fn merge_patch_of_a_missing_lease_is_404() {
    let mut s = server();
    let err = s.handle(0, &merge_patch_req("x", json!({"spec": {}}))).unwrap_err();
    assert_eq!(err.kubectl_stderr(), r#"Error from server (NotFound): leases.coordination.k8s.io "x" not found"#);
}

#[test]
fn merge_patch_with_a_bad_microtime_is_422_quoting_the_patched_object() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let before = s.resource_version();
    let err =
        s.handle(0, &merge_patch_req("lock", json!({"spec": {"renewTime": "2026-01-01T00:00:00Z"}}))).unwrap_err();
    let patched = concat!(
        r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"lock","namespace":"default","uid":"00000000-0000-4000-8000-000000000003","resourceVersion":"3","creationTimestamp":"2026-01-01T00:00:00Z","managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"coordination.k8s.io/v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:acquireTime":{},"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:leaseTransitions":{},"f:renewTime":{}}}}]},"#,
        r#""spec":{"acquireTime":"2026-01-01T00:00:00.000000Z","holderIdentity":"a","leaseDurationSeconds":15,"leaseTransitions":0,"renewTime":"2026-01-01T00:00:00Z"}}"#
    );
    let parse_error =
        r#"parsing time "2026-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#;
    assert_eq!((err.code, err.reason), (422, Reason::Invalid));
    assert_eq!(err.message, format!(r#" "" is invalid: patch: Invalid value: {}: {parse_error}"#, go_quote(patched)));
    assert_eq!(
        err.kubectl_stderr(),
        format!("The request is invalid: patch: Invalid value: {}: {parse_error}", go_quote(patched))
    );
    assert_eq!(err.details.causes[0].reason, "FieldValueInvalid");
    assert_eq!(s.resource_version(), before, "nothing stored");
}

#[test]
fn a_resource_version_inside_a_merge_patch_is_a_precondition() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let err = s
        .handle(
            0,
            &merge_patch_req("lock", json!({"metadata": {"resourceVersion": "1"}, "spec": {"holderIdentity": "b"}})),
        )
        .unwrap_err();
    assert!(err.is_conflict());
    let current = s.resource_version().to_string();
    s.handle(
        0,
        &merge_patch_req("lock", json!({"metadata": {"resourceVersion": current}, "spec": {"holderIdentity": "b"}})),
    )
    .unwrap();
}

#[test]
fn merge_patch_as_text_and_force_on_a_non_apply_patch_are_handled() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let mut req = admin(Verb::Patch, Kind::Lease, "lock", Body::Text(r#"{"spec":{"leaseTransitions":2}}"#.into()));
    s.handle(0, &req).unwrap();
    assert_eq!(s.peek_lease(NS, "lock").unwrap().spec.lease_transitions, Some(2));
    // Not JSON: the handler's `json.Valid` (apiserver@24a394e5 `handlers/patch.go:866-868`);
    // JSON but not an object: the library's `ErrBadJSONPatch`.
    req.body = Body::Text("[1]".into());
    assert_eq!(s.handle(0, &req).unwrap_err().message, "Invalid JSON Patch");
    req.body = Body::Text("[".into());
    assert_eq!(s.handle(0, &req).unwrap_err().message, "invalid JSON patch");
    req.force = true;
    assert_eq!(
        s.handle(0, &req).unwrap_err().kubectl_stderr(),
        "The PatchOptions \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
}

// ---- server-side apply (apiserver.md §5) ----

fn apply_cm(s: &mut ApiServer, now: Nanos, manager: &str, force: bool, data: Value) -> Result<Object, ApiError> {
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "order-1"}, "data": data});
    s.handle(now, &with_manager(admin(Verb::Apply, Kind::ConfigMap, "order-1", Body::Json(config)), manager, force))
}

#[test]
fn apply_requires_a_field_manager() {
    let mut s = server();
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "order-1"}});
    let err = s.handle(0, &admin(Verb::Apply, Kind::ConfigMap, "order-1", Body::Json(config))).unwrap_err();
    assert_eq!(
        err.message,
        r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch"#
    );
}

#[test]
fn apply_creates_a_missing_object_and_owns_exactly_its_config() {
    let mut s = server();
    let out = apply_cm(&mut s, 0, "widget-operator-0", false, json!({"phase": "new"})).unwrap();
    assert_eq!(rv_of(&out), 3);
    let managers = managers_of(&mut s, Kind::ConfigMap, "order-1");
    assert_eq!(managers, [("widget-operator-0".to_string(), "Apply".to_string(), json!({"f:data": {"f:phase": {}}}))]);
}

#[test]
fn apply_with_a_wrong_version_or_managed_fields_is_400() {
    let mut s = server();
    let config = json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "order-1"}});
    let err = s
        .handle(0, &with_manager(admin(Verb::Apply, Kind::ConfigMap, "order-1", Body::Json(config)), "m", false))
        .unwrap_err();
    assert_eq!(err.message, "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1");
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "order-1", "managedFields": []}});
    let err = s
        .handle(0, &with_manager(admin(Verb::Apply, Kind::ConfigMap, "order-1", Body::Json(config)), "m", false))
        .unwrap_err();
    assert_eq!(err.message, "metadata.managedFields must be nil");
}

#[test]
fn applying_the_same_value_another_manager_owns_is_co_ownership_not_a_conflict() {
    let mut s = server();
    apply_cm(&mut s, 0, "widget-operator-0", false, json!({"phase": "new"})).unwrap();
    apply_cm(&mut s, 0, "widget-operator-1", false, json!({"phase": "new"})).unwrap();
    let managers = managers_of(&mut s, Kind::ConfigMap, "order-1");
    assert_eq!(managers.len(), 2);
    assert!(managers.iter().all(|m| m.2 == json!({"f:data": {"f:phase": {}}})));
}

#[test]
fn applying_a_different_value_another_manager_owns_is_409_and_writes_nothing() {
    let mut s = server();
    apply_cm(&mut s, 0, "widget-operator-0", false, json!({"phase": "new"})).unwrap();
    let before = s.resource_version();
    let err = apply_cm(&mut s, 0, "widget-operator-1", false, json!({"phase": "done"})).unwrap_err();
    assert_eq!((err.code, err.reason), (409, Reason::Conflict));
    assert_eq!(err.message, r#"Apply failed with 1 conflict: conflict with "widget-operator-0": .data.phase"#);
    assert_eq!(err.details.causes[0].field, ".data.phase");
    assert_eq!(
        err.kubectl_stderr(),
        r#"Error from server (Conflict): Apply failed with 1 conflict: conflict with "widget-operator-0": .data.phase"#
    );
    assert_eq!(s.resource_version(), before);
    assert_eq!(s.peek_config_map(NS, "order-1").unwrap().data["phase"], "new");
}

#[test]
fn forced_apply_moves_ownership_to_the_applier() {
    let mut s = server();
    apply_cm(&mut s, 0, "widget-operator-0", false, json!({"phase": "new", "owner": "zero"})).unwrap();
    apply_cm(&mut s, secs(1), "widget-operator-1", true, json!({"phase": "done"})).unwrap();
    assert_eq!(s.peek_config_map(NS, "order-1").unwrap().data["phase"], "done");
    let managers = managers_of(&mut s, Kind::ConfigMap, "order-1");
    assert_eq!(managers[0].0, "widget-operator-0");
    assert_eq!(managers[0].2, json!({"f:data": {"f:owner": {}}}));
    assert_eq!(managers[1].2, json!({"f:data": {"f:phase": {}}}));
}

#[test]
fn an_apply_conflict_with_an_update_manager_names_its_api_version() {
    let mut s = server();
    create_config_map(&mut s, "order-1", &[("phase", "new")]);
    let err = apply_cm(&mut s, 0, "widget-operator-1", false, json!({"phase": "done"})).unwrap_err();
    assert_eq!(err.message, r#"Apply failed with 1 conflict: conflict with "kubectl-create" using v1: .data.phase"#);
}

#[test]
fn fields_an_applier_stops_applying_are_removed_unless_someone_else_owns_them() {
    let mut s = server();
    apply_cm(&mut s, 0, "a", false, json!({"x": "1", "y": "2"})).unwrap();
    apply_cm(&mut s, 0, "b", false, json!({"y": "2"})).unwrap();
    apply_cm(&mut s, 0, "a", false, json!({})).unwrap();
    let data = &s.peek_config_map(NS, "order-1").unwrap().data;
    assert_eq!(data.keys().collect::<Vec<_>>(), ["y"]);
}

/// An apply of an empty map owns the map itself (SMD `typed/tofieldset.go`); when that manager
/// stops applying it, the keys other managers own beneath it stay (`merge/update.go`
/// `addBackOwnedItems`), and the map goes only if nobody owns anything in it.
#[test]
fn dropping_an_empty_map_from_an_apply_keeps_what_others_own_in_it() {
    let mut s = server();
    apply_cm(&mut s, 0, "a", false, json!({"x": "1"})).unwrap();
    apply_cm(&mut s, 0, "b", false, json!({})).unwrap();
    let b = managers_of(&mut s, Kind::ConfigMap, "order-1").into_iter().find(|m| m.0 == "b").unwrap();
    assert_eq!(b.2, json!({"f:data": {}}));
    let bare = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "order-1", "labels": {"k": "v"}}});
    s.handle(0, &with_manager(admin(Verb::Apply, Kind::ConfigMap, "order-1", Body::Json(bare.clone())), "b", false))
        .unwrap();
    assert_eq!(s.peek_config_map(NS, "order-1").unwrap().data.keys().collect::<Vec<_>>(), ["x"]);
    // With nobody owning a key of it, the map goes.
    apply_cm(&mut s, 0, "a", false, json!({})).unwrap();
    let bare_a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "order-1"}});
    s.handle(0, &with_manager(admin(Verb::Apply, Kind::ConfigMap, "order-1", Body::Json(bare_a)), "a", false)).unwrap();
    assert!(s.peek_config_map(NS, "order-1").unwrap().data.is_empty());
}

#[test]
fn re_applying_the_same_config_is_not_persisted() {
    let mut s = server();
    apply_cm(&mut s, 0, "a", false, json!({"x": "1"})).unwrap();
    let before = s.resource_version();
    apply_cm(&mut s, secs(10), "a", false, json!({"x": "1"})).unwrap();
    assert_eq!(s.resource_version(), before);
}

#[test]
fn kubectl_server_side_apply_prints_the_v1_33_conflict_block() {
    let mut s = server();
    apply_cm(&mut s, 0, "widget-operator-0", false, json!({"phase": "new"})).unwrap();
    let err = apply_cm(&mut s, 0, "kubectl", false, json!({"phase": "done"})).unwrap_err();
    let text = kubectl_apply_conflict_stderr(&err);
    assert!(text.starts_with(
        "error: Apply failed with 1 conflict: conflict with \"widget-operator-0\": .data.phase\nPlease review"
    ));
    assert!(text.ends_with("See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts"));
}

#[test]
fn apply_of_a_lease_with_an_rv_is_a_precondition() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let config = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lock", "resourceVersion": "1"}, "spec": {"holderIdentity": "b"}});
    let err =
        s.handle(0, &with_manager(admin(Verb::Apply, Kind::Lease, "lock", Body::Json(config)), "m", true)).unwrap_err();
    assert!(err.is_conflict() && !err.is_apply_conflict());
}

// ---- RBAC (apiserver.md §6) ----

fn grant(s: &mut ApiServer, sa: &str, verbs: &[&str], resource_names: &[&str]) {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": format!("{sa}-role"), "namespace": NS},
        "rules": [{"verbs": verbs, "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": resource_names}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": format!("{sa}-binding"), "namespace": NS},
        "subjects": [{"kind": "ServiceAccount", "name": sa}], "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("{sa}-role")}});
    s.seed_object(0, role).unwrap();
    s.seed_object(0, binding).unwrap();
}

#[test]
fn a_denied_named_request_is_403_with_the_real_text() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let sa = User::service_account(NS, "elector");
    let err = s
        .handle(0, &request(&sa, Verb::Update, Kind::Lease, "lock", Body::Lease(Arc::new(lease("lock", "b", 0, "3")))))
        .unwrap_err();
    assert_eq!(
        err.kubectl_stderr(),
        r#"Error from server (Forbidden): leases.coordination.k8s.io "lock" is forbidden: User "system:serviceaccount:default:elector" cannot update resource "leases" in API group "coordination.k8s.io" in the namespace "default""#
    );
}

#[test]
fn a_denied_create_has_no_name_and_a_denied_config_map_get_names_the_core_group() {
    let mut s = server();
    let sa = User::service_account(NS, "elector");
    let err = s
        .handle(0, &request(&sa, Verb::Create, Kind::Lease, "", Body::Lease(Arc::new(lease("lock", "b", 0, "")))))
        .unwrap_err();
    assert_eq!(
        err.message,
        r#"leases.coordination.k8s.io is forbidden: User "system:serviceaccount:default:elector" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "default""#
    );
    let err = s.handle(0, &request(&sa, Verb::Get, Kind::ConfigMap, "cm", Body::None)).unwrap_err();
    assert_eq!(
        err.message,
        r#"configmaps "cm" is forbidden: User "system:serviceaccount:default:elector" cannot get resource "configmaps" in API group "" in the namespace "default""#
    );
}

#[test]
fn role_bindings_grant_service_accounts_their_role_rules() {
    let mut s = server();
    grant(&mut s, "elector", &["get", "create", "update"], &[]);
    let sa = User::service_account(NS, "elector");
    s.handle(0, &request(&sa, Verb::Create, Kind::Lease, "", Body::Lease(Arc::new(lease("lock", "a", 0, "")))))
        .unwrap();
    s.handle(0, &request(&sa, Verb::Get, Kind::Lease, "lock", Body::None)).unwrap();
    assert!(s.can_i(&sa, "update", Kind::Lease, NS, Some("lock")));
    assert!(!s.can_i(&sa, "delete", Kind::Lease, NS, Some("lock")));
    assert!(
        !s.can_i(&sa, "get", Kind::Lease, "kube-system", Some("lock")),
        "a RoleBinding grants only in its namespace"
    );
    assert!(!s.can_i(&User::service_account(NS, "other"), "get", Kind::Lease, NS, None));
}

#[test]
fn resource_names_grant_the_named_lease_but_never_a_create() {
    let mut s = server();
    grant(&mut s, "elector", &["get", "create", "update"], &["lock"]);
    let sa = User::service_account(NS, "elector");
    assert!(s.can_i(&sa, "get", Kind::Lease, NS, Some("lock")));
    assert!(!s.can_i(&sa, "get", Kind::Lease, NS, Some("other")));
    let err = s
        .handle(0, &request(&sa, Verb::Create, Kind::Lease, "", Body::Lease(Arc::new(lease("lock", "a", 0, "")))))
        .unwrap_err();
    assert!(err.is_forbidden());
}

#[test]
fn a_put_that_creates_is_also_authorised_as_create_with_the_name() {
    let mut s = server();
    grant(&mut s, "updater", &["update"], &[]);
    let sa = User::service_account(NS, "updater");
    let err = s
        .handle(0, &request(&sa, Verb::Update, Kind::Lease, "lock", Body::Lease(Arc::new(lease("lock", "a", 0, "")))))
        .unwrap_err();
    assert_eq!(
        err.message,
        r#"leases.coordination.k8s.io "lock" is forbidden: User "system:serviceaccount:default:updater" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "default""#
    );
    grant(&mut s, "creator", &["update", "create"], &["lock"]);
    let sa = User::service_account(NS, "creator");
    s.handle(0, &request(&sa, Verb::Update, Kind::Lease, "lock", Body::Lease(Arc::new(lease("lock", "a", 0, "")))))
        .unwrap();
}

#[test]
fn apply_is_authorised_as_patch() {
    let mut s = server();
    grant(&mut s, "patcher", &["patch", "create"], &[]);
    let sa = User::service_account(NS, "patcher");
    let config = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lock"}, "spec": {"holderIdentity": "b"}});
    let req = with_manager(request(&sa, Verb::Apply, Kind::Lease, "lock", Body::Json(config)), "m", false);
    s.handle(0, &req).unwrap();
}

// ---- delete, list, audit ----

#[test]
fn delete_returns_deleted_and_bumps_the_rv_and_a_second_delete_is_404() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let before = s.resource_version();
    assert_eq!(s.handle(0, &admin(Verb::Delete, Kind::Lease, "lock", Body::None)).unwrap(), Object::Deleted);
    assert_eq!(s.resource_version(), before + 1);
    assert!(s.handle(0, &admin(Verb::Delete, Kind::Lease, "lock", Body::None)).unwrap_err().is_not_found());
}

#[test]
fn list_returns_items_and_the_current_revision() {
    let mut s = server();
    create_lease(&mut s, 0, "a", "x");
    create_lease(&mut s, 0, "b", "y");
    let out = to_json(&s.handle(0, &admin(Verb::List, Kind::Lease, "", Body::None)).unwrap());
    assert_eq!(out["kind"], "LeaseList");
    assert_eq!(out["metadata"]["resourceVersion"], s.resource_version().to_string());
    assert_eq!(out["items"].as_array().unwrap().len(), 2);
}

#[test]
fn the_audit_log_records_each_request_with_rvs_and_codes() {
    let mut s = server();
    s.set_audit(true);
    let created = create_lease(&mut s, secs(1), "lock", "a");
    let _ = put_lease(&mut s, secs(2), lease("lock", "b", 2, "1"));
    put_lease(&mut s, secs(3), lease("lock", "b", 3, &created.metadata.resource_version)).unwrap();
    let log = s.take_audit();
    assert_eq!(log.len(), 3);
    assert_eq!((log[0].code, log[0].name.as_str(), log[0].rv_before, log[0].rv_after), (201, "lock", None, Some(3)));
    assert_eq!((log[1].code, log[1].rv_before, log[1].rv_after), (409, Some(3), None));
    assert!(log[1].message.starts_with("Operation cannot be fulfilled"));
    assert_eq!((log[2].code, log[2].rv_after, log[2].at), (200, Some(4), secs(3)));
    assert!(s.audit().is_empty());
}

#[test]
fn seeded_objects_keep_their_uid_and_creation_timestamp_and_get_a_namespace() {
    let mut s = server();
    let obj = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "lock", "namespace": "team", "uid": "abc", "creationTimestamp": "2025-09-09T18:51:59Z"},
        "spec": {"holderIdentity": "x", "leaseDurationSeconds": 60}});
    s.seed_object(0, obj).unwrap();
    let l = s.peek_lease("team", "lock").unwrap();
    assert_eq!(l.metadata.uid, "abc");
    assert_eq!(l.metadata.creation_timestamp.unwrap().to_rfc3339(), "2025-09-09T18:51:59Z");
    assert!(s.peek_json(Kind::Namespace, "", "team").is_some());
}

#[test]
fn kubectl_get_yaml_of_a_served_lease_hides_managed_fields() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let yaml = kubectl_yaml(&s.peek_json(Kind::Lease, NS, "lock").unwrap());
    assert_eq!(
        yaml,
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  name: lock\n  namespace: default\n  resourceVersion: \"3\"\n  uid: 00000000-0000-4000-8000-000000000003\nspec:\n  acquireTime: \"2026-01-01T00:00:00.000000Z\"\n  holderIdentity: a\n  leaseDurationSeconds: 15\n  leaseTransitions: 0\n  renewTime: \"2026-01-01T00:00:00.000000Z\"\n"
    );
}

/// The typed Lease path (what electors use) answers exactly as the generic path does for the
/// same request: results, error texts, resourceVersions, managedFields and the stored object,
/// over renewals, takeovers, stale resourceVersions, no-op writes, forbidden callers, invalid
/// specs, a second writer taking fields, label changes and an Update of a deleted Lease; and
/// `lease_request_into` answers as `lease_request` does.
#[test]
fn the_typed_lease_path_agrees_with_the_generic_path_request_for_request() {
    let mut typed = server();
    let mut generic = server();
    let sa = User::service_account(NS, "elector");
    for s in [&mut typed, &mut generic] {
        for (kind, body) in [
            (
                "Role",
                json!({"rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update", "create"]}]}),
            ),
            (
                "RoleBinding",
                json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}, "subjects": [{"kind": "ServiceAccount", "name": "elector", "namespace": NS}]}),
            ),
        ] {
            let mut object = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": "r", "namespace": NS}});
            object.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
            s.seed_object(0, object).unwrap();
        }
    }
    let lease_ref = typed.lease_ref(NS, "lock");
    let elector = typed.user_id(&Arc::new(sa.clone()));
    let stranger = typed.user_id(&Arc::new(User::named("stranger")));
    let admin_id = typed.user_id(&Arc::new(User::admin()));
    let spec = |s: &mut ApiServer, holder: &str, renew: i64, transitions: i32| LeaseSpecC {
        holder_identity: Some(s.intern(holder)),
        lease_duration_seconds: Some(15),
        acquire_time: Some(MicroTime::from_unix_micros(1_000_000)),
        renew_time: Some(MicroTime::from_unix_micros(renew)),
        lease_transitions: Some(transitions),
        ..Default::default()
    };
    let step =
        |now: Nanos, user: UserId, manager: &str, op: LeaseOp, typed: &mut ApiServer, generic: &mut ApiServer| {
            let manager = typed.intern(manager);
            let request = typed.generic_lease_request(lease_ref, user, manager, &op);
            // What the world's untraced path calls: the answer written into a slot.
            let mut twin = typed.clone();
            let mut slot = Err(0);
            let code = twin.lease_request_into(now, lease_ref, user, manager, &op, &mut slot);
            let a = typed.lease_request(now, lease_ref, user, manager, &op);
            assert_eq!(slot, a.clone().map_err(|e| e.code), "{op:?}");
            assert_eq!(code, a.as_ref().map(|_| ()).map_err(|e| e.code), "{op:?}");
            assert_eq!(twin.peek_json(Kind::Lease, NS, "lock"), typed.peek_json(Kind::Lease, NS, "lock"), "{op:?}");
            assert_eq!(twin.resource_version(), typed.resource_version());
            let b = generic.handle(now, &request).map(|o| match o {
                Object::Lease(l) => typed.view_of(&l),
                other => panic!("{other:?}"),
            });
            assert_eq!(a, b, "{op:?}");
            assert_eq!(typed.peek_json(Kind::Lease, NS, "lock"), generic.peek_json(Kind::Lease, NS, "lock"), "{op:?}");
            assert_eq!(typed.resource_version(), generic.resource_version());
            a
        };
    let create = LeaseOp::Create { spec: spec(&mut typed, "a", 1_000_000, 0), labels: None };
    let mut rv = step(1, elector, "a", create, &mut typed, &mut generic).unwrap().resource_version;
    // Renewals by the holder: only its managedFields time moves.
    for k in 2..6 {
        let op = LeaseOp::Update {
            resource_version: rv,
            spec: spec(&mut typed, "a", k * 1_000_000, 0),
            labels: None,
            annotations: None,
        };
        rv = step(secs(k as u64), elector, "a", op, &mut typed, &mut generic).unwrap().resource_version;
    }
    // A no-op write, a stale resourceVersion, a forbidden caller, an invalid spec.
    let same = LeaseOp::Update {
        resource_version: rv,
        spec: spec(&mut typed, "a", 5_000_000, 0),
        labels: None,
        annotations: None,
    };
    assert_eq!(step(secs(6), elector, "a", same, &mut typed, &mut generic).unwrap().resource_version, rv);
    let stale = LeaseOp::Update {
        resource_version: rv - 1,
        spec: spec(&mut typed, "a", 7_000_000, 0),
        labels: None,
        annotations: None,
    };
    assert_eq!(step(secs(7), elector, "a", stale, &mut typed, &mut generic).unwrap_err().code, 409);
    let forbidden = LeaseOp::Update {
        resource_version: rv,
        spec: spec(&mut typed, "a", 7_000_000, 0),
        labels: None,
        annotations: None,
    };
    assert_eq!(step(secs(7), stranger, "a", forbidden, &mut typed, &mut generic).unwrap_err().code, 403);
    assert_eq!(step(secs(7), stranger, "a", LeaseOp::Get, &mut typed, &mut generic).unwrap_err().code, 403);
    let mut bad = spec(&mut typed, "a", 7_000_000, 0);
    bad.lease_duration_seconds = Some(0);
    let invalid = LeaseOp::Update { resource_version: rv, spec: bad, labels: None, annotations: None };
    assert_eq!(step(secs(7), elector, "a", invalid, &mut typed, &mut generic).unwrap_err().code, 422);
    // A takeover by another manager: the holder field changes hands.
    let takeover = LeaseOp::Update {
        resource_version: rv,
        spec: spec(&mut typed, "b", 8_000_000, 1),
        labels: None,
        annotations: None,
    };
    rv = step(secs(8), elector, "b", takeover, &mut typed, &mut generic).unwrap().resource_version;
    // A strategy (validated the long way), then labels sent that differ from the stored ones.
    let mut coordinated = spec(&mut typed, "b", 9_000_000, 1);
    coordinated.strategy = Some(typed.intern("OldestEmulationVersion"));
    let op = LeaseOp::Update { resource_version: rv, spec: coordinated, labels: None, annotations: None };
    rv = step(secs(9), admin_id, "b", op, &mut typed, &mut generic).unwrap().resource_version;
    let labels = Some(Arc::new(Labels::from([("app".to_string(), "x".to_string())])));
    let op = LeaseOp::Update {
        resource_version: rv,
        spec: spec(&mut typed, "b", 10_000_000, 1),
        labels: labels.clone(),
        annotations: None,
    };
    rv = step(secs(10), elector, "b", op, &mut typed, &mut generic).unwrap().resource_version;
    let op =
        LeaseOp::Update { resource_version: rv, spec: spec(&mut typed, "b", 11_000_000, 1), labels, annotations: None };
    rv = step(secs(11), elector, "b", op, &mut typed, &mut generic).unwrap().resource_version;
    assert_eq!(step(secs(11), elector, "b", LeaseOp::Get, &mut typed, &mut generic).unwrap().resource_version, rv);
    // The Lease is deleted; an Update then creates it again (Leases allow create-on-update).
    for s in [&mut typed, &mut generic] {
        s.handle(secs(12), &admin(Verb::Delete, Kind::Lease, "lock", Body::None)).unwrap();
    }
    assert_eq!(step(secs(12), elector, "b", LeaseOp::Get, &mut typed, &mut generic).unwrap_err().code, 404);
    let op = LeaseOp::Update {
        resource_version: rv,
        spec: spec(&mut typed, "b", 13_000_000, 1),
        labels: None,
        annotations: None,
    };
    step(secs(13), elector, "b", op, &mut typed, &mut generic).unwrap();
    let op = LeaseOp::MergePatch { spec: spec(&mut typed, "c", 14_000_000, 2) };
    assert_eq!(step(secs(14), elector, "c", op.clone(), &mut typed, &mut generic).unwrap_err().code, 403);
    step(secs(14), admin_id, "c", op, &mut typed, &mut generic).unwrap();
}

/// The typed path reads RBAC through an index of the bindings' subjects (built once per RBAC
/// change); the decision must be the plain scan's (`rbac.go`: any binding naming the user whose
/// Role has a matching rule) for every kind of subject: User, Group, a ServiceAccount in its
/// binding's namespace (namespace left empty) or named in another, a subject of an unknown kind,
/// a binding to a missing Role, a binding in another namespace.
#[test]
fn the_subject_index_decides_as_the_scan_of_every_binding() {
    let mut s = server();
    s.seed_object(0, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})).unwrap();
    let role = |ns: &str, name: &str, verbs: &[&str], names: &[&str]| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name, "namespace": ns},
               "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": verbs, "resourceNames": names}]})
    };
    let binding = |ns: &str, name: &str, role: &str, subjects: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name, "namespace": ns},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role}, "subjects": subjects})
    };
    for object in [
        role(NS, "get-all", &["get"], &[]),
        role(NS, "update-a", &["update", "get"], &["a"]),
        role("other", "all", &["*"], &[]),
        binding(NS, "b1", "get-all", json!([{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "readers"}])),
        binding(
            NS,
            "b2",
            "update-a",
            json!([{"kind": "ServiceAccount", "name": "sa1"},
                                              {"kind": "ServiceAccount", "name": "sa2", "namespace": "other"},
                                              {"kind": "Robot", "name": "bob"}]),
        ),
        binding(NS, "b3", "missing-role", json!([{"kind": "User", "name": "carol"}])),
        binding(
            "other",
            "b4",
            "all",
            json!([{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa1"}]),
        ),
    ] {
        s.seed_object(0, object).unwrap();
    }
    let users = [
        User { name: "alice".into(), groups: Arc::from([]) },
        User { name: "bob".into(), groups: Arc::from([]) },
        User { name: "carol".into(), groups: Arc::from([]) },
        User { name: "dave".into(), groups: Arc::from(["readers".to_string()]) },
        User::service_account(NS, "sa1"),
        User::service_account("other", "sa1"),
        User::service_account("other", "sa2"),
        User::service_account(NS, "sa2"),
        User::admin(),
    ];
    let mut cases = Vec::new();
    for user in &users {
        for verb in ["get", "update", "create", "delete"] {
            for ns in [NS, "other", "nowhere"] {
                for name in [Some("a"), Some("b"), None] {
                    cases.push((user, verb, ns, name));
                }
            }
        }
    }
    let scanned: Vec<bool> = cases.iter().map(|&(u, v, ns, n)| s.can_i(u, v, Kind::Lease, ns, n)).collect();
    s.refresh_subject_index();
    let indexed: Vec<bool> = cases.iter().map(|&(u, v, ns, n)| s.can_i(u, v, Kind::Lease, ns, n)).collect();
    assert_eq!(scanned, indexed);
    // Both kinds of answer occur, and the ones the cases were written for.
    assert!(scanned.iter().any(|&a| a) && scanned.iter().any(|&a| !a));
    let decide = |user: &User, verb, ns, name| s.can_i(user, verb, Kind::Lease, ns, name);
    assert!(decide(&users[0], "get", NS, Some("b")));
    assert!(!decide(&users[1], "get", NS, Some("b")), "a subject of an unknown kind names no one");
    assert!(!decide(&users[2], "get", NS, Some("b")), "a binding to a missing Role grants nothing");
    assert!(decide(&users[3], "get", NS, Some("b")), "by group");
    assert!(decide(&users[4], "update", NS, Some("a")) && !decide(&users[4], "update", NS, Some("b")));
    assert!(!decide(&users[5], "update", NS, Some("a")), "the ServiceAccount of another namespace");
    assert!(decide(&users[6], "update", NS, Some("a")), "a ServiceAccount named with its namespace");
    assert!(decide(&users[0], "delete", "other", Some("b")) && !decide(&users[0], "delete", NS, Some("b")));
}

/// A sequence of applies (co-ownership, a conflict, a force, a field dropped, a no-op) answers
/// exactly as before the live object was merged onto without its managedFields, whether or not
/// a client still holds each answer (the stored object shared, or not). The digest is of the
/// previous implementation's answers, with one correction since: an apply's field set has no
/// `.` for a map it sets keys of (structured-merge-diff `typed/tofieldset.go`), and a map owned
/// with no keys is written `{}` (`fieldpath/serialize.go`).
#[test]
fn apply_answers_do_not_depend_on_merging_without_managed_fields_or_on_a_held_answer() {
    let run = |hold: bool| {
        let mut s = server();
        let mut held = Vec::new();
        let mut text = String::new();
        let steps: [(&str, bool, Value); 7] = [
            ("a", false, json!({"phase": "new", "owner": "a"})),
            ("b", false, json!({"phase": "new"})),
            ("b", false, json!({"phase": "done"})),
            ("b", true, json!({"phase": "done"})),
            ("a", false, json!({"owner": "a2"})),
            ("a", false, json!({"owner": "a2"})),
            ("b", false, json!({})),
        ];
        for (i, (manager, force, data)) in steps.into_iter().enumerate() {
            match apply_cm(&mut s, secs(i as u64), manager, force, data) {
                Ok(o) => {
                    text.push_str(&to_json(&o).to_string());
                    if hold {
                        held.push(o);
                    }
                }
                Err(e) => text.push_str(&e.message),
            }
            text.push('\n');
        }
        text.push_str(&s.peek_json(Kind::ConfigMap, NS, "order-1").unwrap().to_string());
        text
    };
    let (held, dropped) = (run(true), run(false));
    assert_eq!(held, dropped);
    assert_eq!(held, include_str!("../../tests/fixtures/apply-sequence.txt"));
}

/// A create of a JSON-kept object takes its creator's managedFields entry from the last create
/// of the same kind and shape: each Event a server creates in a row is stored exactly as a
/// fresh server (nothing remembered) stores it, and a create of another shape, or with labels,
/// is not mistaken for one.
#[test]
fn creates_from_the_remembered_shape_are_the_generic_creates() {
    let event = |name: &str, extra: Option<(&str, Value)>, labels: bool| {
        let mut body = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": NS},
            "involvedObject": {"kind": "Lease", "name": "lock", "uid": ""},
            "reason": "LeaderElection", "message": format!("{name} became leader"),
            "count": 1, "eventTime": null, "source": {"component": "lock"},
        });
        if let Some((key, value)) = extra {
            body[key] = value;
        }
        if labels {
            body["metadata"]["labels"] = json!({"app": "x"});
        }
        body
    };
    let cases = [
        ("e1", None, false, "m1"),
        ("e2", None, false, "m2"),
        (
            "e3",
            Some(("involvedObject", json!({"kind": "Lease", "name": "lock", "uid": "u", "extra": {}}))),
            false,
            "m1",
        ),
        ("e4", None, false, "m3"),
        ("e5", None, true, "m1"),
        ("e6", Some(("note", json!(null))), false, "m2"),
        ("e7", Some(("data", json!({"a": "1"}))), false, "m2"),
        ("e8", None, false, "m4"),
    ];
    let mut remembering = server();
    for (i, (name, extra, labels, manager)) in cases.into_iter().enumerate() {
        let request =
            with_manager(admin(Verb::Create, Kind::Event, "", Body::Json(event(name, extra, labels))), manager, false);
        let now = secs(i as u64 * 7);
        remembering.handle_for_effect(now, &request).unwrap();
        let mut fresh = server();
        fresh.handle_for_effect(now, &request).unwrap();
        let stored = |s: &mut ApiServer| {
            let mut v = s.peek_json(Kind::Event, NS, name).unwrap();
            // The uid and revision count the server's earlier creates.
            v["metadata"].as_object_mut().unwrap().remove("uid");
            v["metadata"].as_object_mut().unwrap().remove("resourceVersion");
            v
        };
        assert_eq!(stored(&mut remembering), stored(&mut fresh), "{name}");
    }
}

/// Lease creates are remembered by the fields they set, and the memory is shared by clones of a
/// server (a sweep's runs start from clones of one set-up server): each create, taken from the
/// memory or not, stores what a fresh server stores for it.
#[test]
fn lease_creates_remembered_across_clones_are_the_generic_creates() {
    let variant = |name: &str, fields: u8, labels: bool| {
        let mut l = lease(name, "a", 0, "");
        if fields & 1 != 0 {
            l.spec.acquire_time = None;
        }
        if fields & 2 != 0 {
            l.spec.lease_transitions = None;
        }
        if labels {
            l.metadata.labels.insert("app".into(), "x".into());
        }
        l
    };
    let cases = [
        ("l1", 0, false, "m1"),
        ("l2", 0, false, "m2"),
        ("l3", 1, false, "m1"),
        ("l4", 3, false, "m3"),
        ("l5", 0, true, "m1"),
        ("l6", 0, true, "m2"),
        ("l7", 2, false, "m4"),
        ("l8", 0, false, "m4"),
    ];
    let origin = server();
    for (i, (name, fields, labels, manager)) in cases.into_iter().enumerate() {
        let mut clone = origin.clone();
        let request = with_manager(
            admin(Verb::Create, Kind::Lease, "", Body::Lease(Arc::new(variant(name, fields, labels)))),
            manager,
            false,
        );
        let now = secs(i as u64 * 7);
        clone.handle(now, &request).unwrap();
        let mut fresh = server();
        fresh.handle(now, &request).unwrap();
        let stored = |s: &mut ApiServer| s.peek_json(Kind::Lease, NS, name).unwrap();
        assert_eq!(stored(&mut clone), stored(&mut fresh), "{name}");
    }
    // Five field sets were created (a label is a field), each remembered once, by `origin` too.
    assert_eq!(origin.create_memos.lock().unwrap().len(), 5);
}

/// A shape writes each length as `write!("{}:")` would.
#[test]
fn shape_lengths_are_decimal() {
    for len in [0usize, 7, 10, 99, 100, 12_345, usize::MAX] {
        let mut out = String::new();
        server::push_len(&mut out, len);
        assert_eq!(out, format!("{len}:"));
    }
}

/// An apply that changed nothing (a no-op, or a failure), sent again to the same object, is
/// answered from the record's memory of it (debug builds run the full apply beside it and check
/// they agree): the same answer, no commit. Any other request (another manager, force, other
/// data) or any commit in between takes the full path.
#[test]
fn an_unchanged_apply_again_answers_the_same_again() {
    let mut s = server();
    let memos = |s: &ApiServer| s.record(Kind::ConfigMap, NS, "order-1").unwrap().unchanged_writes.len();
    let a = json!({"phase": "a"});
    let first = apply_cm(&mut s, secs(1), "m1", false, a.clone()).unwrap();
    assert_eq!(memos(&s), 0, "a create is not remembered");
    let rv = s.resource_version();
    for t in 2..5 {
        let again = apply_cm(&mut s, secs(t), "m1", false, a.clone()).unwrap();
        assert_eq!(format!("{again:?}"), format!("{first:?}"), "the same answer");
        assert_eq!(s.resource_version(), rv, "nothing committed");
        assert_eq!(memos(&s), 1);
    }
    // Another manager's conflicting apply fails, the same each time, and changes nothing.
    let conflict = apply_cm(&mut s, secs(5), "m2", false, json!({"phase": "b"})).unwrap_err();
    assert_eq!(conflict.code, 409);
    assert_eq!(memos(&s), 2);
    for t in 6..8 {
        assert_eq!(apply_cm(&mut s, secs(t), "m2", false, json!({"phase": "b"})).unwrap_err(), conflict);
        apply_cm(&mut s, secs(t), "m1", false, a.clone()).unwrap();
    }
    assert_eq!((s.resource_version(), memos(&s)), (rv, 2));
    // Forced, it takes the field: a commit, and the memory goes with the old record.
    apply_cm(&mut s, secs(8), "m2", true, json!({"phase": "b"})).unwrap();
    assert_eq!(s.resource_version(), rv + 1);
    assert_eq!(memos(&s), 0);
    // m1's apply now conflicts (m2 owns the field), every time.
    for t in 9..12 {
        let err = apply_cm(&mut s, secs(t), "m1", false, a.clone()).unwrap_err();
        assert_eq!(err.code, 409, "{}", err.message);
    }
    assert_eq!(memos(&s), 1);
    let peek = s.peek_json(Kind::ConfigMap, NS, "order-1").unwrap();
    assert_eq!(peek["data"]["phase"], "b");
}

/// The memory of unchanged writes covers PUTs and merge patches too, each by its own verb: a
/// PUT that changes nothing, again, and a stale PUT's conflict, again, answer the same.
#[test]
fn unchanged_puts_and_patches_answer_the_same_again() {
    let mut s = server();
    create_config_map(&mut s, "order-1", &[("phase", "a")]);
    let memos = |s: &ApiServer| s.record(Kind::ConfigMap, NS, "order-1").unwrap().unchanged_writes.len();
    let rv = s.resource_version();
    let put = |rv: &str| {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "order-1", "namespace": NS, "resourceVersion": rv}, "data": {"phase": "a"}});
        with_manager(admin(Verb::Update, Kind::ConfigMap, "order-1", Body::Json(body)), "m1", false)
    };
    let patch = with_manager(
        admin(Verb::Patch, Kind::ConfigMap, "order-1", Body::Json(json!({"data": {"phase": "a"}}))),
        "m1",
        false,
    );
    for t in 1..4 {
        s.handle(secs(t), &put(&rv.to_string())).unwrap();
        s.handle(secs(t), &patch).unwrap();
        let stale = s.handle(secs(t), &put("1")).unwrap_err();
        assert_eq!(stale.code, 409);
    }
    assert_eq!((s.resource_version(), memos(&s)), (rv, 3));
    // A write that changes the object commits, and the memory goes with the old record.
    let change = with_manager(
        admin(Verb::Patch, Kind::ConfigMap, "order-1", Body::Json(json!({"data": {"phase": "b"}}))),
        "m1",
        false,
    );
    s.handle(secs(5), &change).unwrap();
    assert_eq!((s.resource_version(), memos(&s)), (rv + 1, 0));
    assert_eq!(s.handle(secs(6), &put(&rv.to_string())).unwrap_err().code, 409);
}

/// Two bodies that are `==` as JSON values but not the same text (keys in another order, a
/// negative zero) are different writes: the decode reports the first bad value in key order, so
/// each answers as a server that never saw the other would.
#[test]
fn a_write_remembered_is_the_same_text_not_an_equal_value() {
    let put = |data: Value| {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "order-1", "namespace": NS}, "data": data});
        with_manager(admin(Verb::Update, Kind::ConfigMap, "order-1", Body::Json(body)), "m1", false)
    };
    let mut x_first = serde_json::Map::new();
    x_first.insert("x".into(), json!(1));
    x_first.insert("y".into(), json!(true));
    let mut y_first = serde_json::Map::new();
    y_first.insert("y".into(), json!(true));
    y_first.insert("x".into(), json!(1));
    let (a, b) = (Value::Object(x_first), Value::Object(y_first));
    assert_eq!(a, b, "equal as values");
    let mut seen = server();
    create_config_map(&mut seen, "order-1", &[("phase", "a")]);
    let mut fresh = seen.clone();
    let first = seen.handle(secs(1), &put(a.clone())).unwrap_err();
    assert_eq!(seen.handle(secs(2), &put(a)).unwrap_err(), first, "remembered");
    let other_order = seen.handle(secs(3), &put(b.clone())).unwrap_err();
    assert_eq!(other_order, fresh.handle(secs(3), &put(b)).unwrap_err());
    assert!(server::identical_json(&json!({"n": 0.0}), &json!({"n": 0.0})));
    assert!(!server::identical_json(&json!({"n": 0.0}), &json!({"n": -0.0})));
    assert!(!server::identical_json(&json!({"n": 1}), &json!({"n": 1.0})));
}

// ---- annotations (ObjectMeta) ----

/// Annotations are stored and returned as written, after the labels (the order of the
/// apiserver's ObjectMeta, `k8s.io/apimachinery/pkg/apis/meta/v1/types.go`); a merge patch of
/// one annotation alone is a change (a new resourceVersion, the patcher owning that key as
/// `f:metadata.f:annotations.f:KEY`, `fieldmanager` treating the map as granular); a PUT
/// without them removes them (a PUT replaces the object); the typed path an elector takes —
/// the in-place renewal, an Update whose labels differ (turned into the generic request), the
/// same on an audited server — keeps them, as client-go's PUT of its cached Lease does.
#[test]
fn annotations_are_stored_and_survive_an_electors_writes() {
    let mut s = server();
    let sa = User::service_account(NS, "elector");
    let lease_ref = s.lease_ref(NS, "lock");
    let admin_id = s.user_id(&Arc::new(User::admin()));
    let manager = s.intern("elector");
    let holder = s.intern("a");
    let spec = |renew: i64| LeaseSpecC {
        holder_identity: Some(holder),
        lease_duration_seconds: Some(15),
        renew_time: Some(MicroTime::from_unix_micros(renew)),
        ..Default::default()
    };
    let _ = sa;
    let created = s.lease_request(1, lease_ref, admin_id, manager, &LeaseOp::Create { spec: spec(1), labels: None });
    let rv = created.unwrap().resource_version;
    assert_eq!(s.lease_request(1, lease_ref, admin_id, manager, &LeaseOp::Get).unwrap().annotations, None);
    let patch = json!({"metadata": {"annotations": {"example.com/owner": "team-a", "note": "keep me"}}});
    let patched =
        s.handle(secs(1), &with_manager(admin(Verb::Patch, Kind::Lease, "lock", Body::Json(patch)), "ops", false));
    let after_patch = rv_of(&patched.unwrap());
    assert!(after_patch > rv, "an annotation alone is a change");
    let stored = s.peek_json(Kind::Lease, NS, "lock").unwrap();
    let keys: Vec<&str> = stored["metadata"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["name", "namespace", "uid", "resourceVersion", "creationTimestamp", "annotations", "managedFields"]
    );
    let ops = managers_of(&mut s, Kind::Lease, "lock").into_iter().find(|(m, _, _)| m == "ops").unwrap();
    assert_eq!(ops.2, json!({"f:metadata": {"f:annotations": {".": {}, "f:example.com/owner": {}, "f:note": {}}}}));
    let annotations = json!({"example.com/owner": "team-a", "note": "keep me"});
    // The elector's view (a Get) carries them; it PUTs them back: renewals in place, then an
    // Update whose labels differ (the generic request), audited too.
    let mut view = s.lease_request(secs(1), lease_ref, admin_id, manager, &LeaseOp::Get).unwrap();
    let cached = view.annotations.clone();
    assert_eq!(cached.as_deref().map(|a| a.len()), Some(2));
    for (k, labels, audit) in [(2, None, false), (3, Some(("app", "x")), false), (4, Some(("app", "y")), true)] {
        s.set_audit(audit);
        let labels = labels.map(|(k, v)| Arc::new(Labels::from([(k.to_string(), v.to_string())])));
        let op = LeaseOp::Update {
            resource_version: view.resource_version,
            spec: spec(k * 1_000_000),
            labels,
            annotations: view.annotations.clone(),
        };
        view = s.lease_request(secs(k as u64), lease_ref, admin_id, manager, &op).unwrap();
        assert_eq!(view.annotations, cached, "write {k}");
        assert_eq!(s.peek_json(Kind::Lease, NS, "lock").unwrap()["metadata"]["annotations"], annotations, "write {k}");
    }
    s.set_audit(false);
    let rv = view.resource_version;
    // A stale Update is refused whatever its body.
    let stale = LeaseOp::Update { resource_version: rv - 1, spec: spec(9_000_000), labels: None, annotations: None };
    assert_eq!(s.lease_request(secs(5), lease_ref, admin_id, manager, &stale).unwrap_err().code, 409);
    // A PUT of a Lease without annotations removes them; the patcher's entry goes with them.
    let mut bare = lease("lock", "a", 6, &rv.to_string());
    bare.metadata.labels = Labels::from([("app".to_string(), "y".to_string())]);
    put_lease(&mut s, secs(6), bare).unwrap();
    let stored = s.peek_json(Kind::Lease, NS, "lock").unwrap();
    assert!(stored["metadata"].get("annotations").is_none(), "{stored}");
    assert!(managers_of(&mut s, Kind::Lease, "lock").iter().all(|(m, _, _)| m != "ops"));
    // Deleted under an elector whose cache still has them: its PUT creates the Lease again
    // (Leases allow create-on-update) from the cached object, annotations included.
    s.handle(secs(7), &admin(Verb::Delete, Kind::Lease, "lock", Body::None)).unwrap();
    let op = LeaseOp::Update { resource_version: rv, spec: spec(8_000_000), labels: None, annotations: cached };
    s.lease_request(secs(8), lease_ref, admin_id, manager, &op).unwrap();
    assert_eq!(s.peek_json(Kind::Lease, NS, "lock").unwrap()["metadata"]["annotations"], annotations);
}

/// A ConfigMap seeded with annotations keeps them through a merge patch of its data, and a
/// server-side apply of an annotation makes its manager own just that key.
#[test]
fn annotations_of_other_kinds_are_kept_and_owned_per_key() {
    let mut s = server();
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": NS, "annotations": {"a": "1"}}, "data": {"k": "v"}});
    s.seed_object(0, body).unwrap();
    let patch = admin(Verb::Patch, Kind::ConfigMap, "cm", Body::Json(json!({"data": {"k": "w"}})));
    s.handle(secs(1), &patch).unwrap();
    assert_eq!(s.peek_json(Kind::ConfigMap, NS, "cm").unwrap()["metadata"]["annotations"], json!({"a": "1"}));
    let apply = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "annotations": {"b": "2"}}});
    s.handle(secs(2), &with_manager(admin(Verb::Apply, Kind::ConfigMap, "cm", Body::Json(apply)), "applier", false))
        .unwrap();
    let stored = s.peek_json(Kind::ConfigMap, NS, "cm").unwrap();
    assert_eq!(stored["metadata"]["annotations"], json!({"a": "1", "b": "2"}));
    let applier = managers_of(&mut s, Kind::ConfigMap, "cm").into_iter().find(|(m, _, _)| m == "applier").unwrap();
    assert_eq!(applier.2, json!({"f:metadata": {"f:annotations": {"f:b": {}}}}));
}

/// Labels and annotations are validated as `ValidateObjectMeta` does (apimachinery
/// `pkg/apis/meta/v1/validation` `ValidateLabels`, `pkg/api/validation/objectmeta.go`
/// `ValidateAnnotations`, the texts of `pkg/api/validate/content`, read at `eed236ce`): a bad
/// label key or value, an annotation key that is no qualified name even lowercased, and
/// annotations over 256 KiB in all are a 422, before the spec's own errors; nothing is written.
#[test]
fn bad_labels_and_annotations_are_refused_with_the_validators_texts() {
    let mut s = server();
    create_lease(&mut s, 0, "lock", "a");
    let before = s.resource_version();
    let patch = |s: &mut ApiServer, body: Value| {
        s.handle(secs(1), &admin(Verb::Patch, Kind::Lease, "lock", Body::Json(body))).unwrap_err()
    };
    let err = patch(&mut s, json!({"metadata": {"labels": {"bad key": "ok"}}}));
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "Lease.coordination.k8s.io \"lock\" is invalid: metadata.labels: Invalid value: \"bad key\": name part must \
         consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character \
         (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
         '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    );
    let long = "v".repeat(64);
    let err = patch(&mut s, json!({"metadata": {"labels": {"app": long}}}));
    assert_eq!(
        err.message,
        format!(
            "Lease.coordination.k8s.io \"lock\" is invalid: metadata.labels: Invalid value: \"{long}\": must be no more than 63 bytes"
        )
    );
    // Both parts wrong, and a spec error after them: every message, metadata first.
    let err =
        patch(&mut s, json!({"metadata": {"labels": {"Bad_Prefix/-x": "ok"}}, "spec": {"leaseDurationSeconds": 0}}));
    assert!(err.message.starts_with(
        "Lease.coordination.k8s.io \"lock\" is invalid: [metadata.labels: Invalid value: \"Bad_Prefix/-x\": prefix part a lowercase RFC 1123 subdomain"
    ), "{}", err.message);
    assert_eq!(err.details.causes.len(), 3, "{:?}", err.details.causes);
    assert_eq!(err.details.causes[2].field, "spec.leaseDurationSeconds");
    // Annotation keys are checked lowercased: an upper-case key is fine, three parts are not.
    s.handle(
        secs(2),
        &admin(
            Verb::Patch,
            Kind::Lease,
            "lock",
            Body::Json(json!({"metadata": {"annotations": {"Example.com/Owner": "x"}}})),
        ),
    )
    .unwrap();
    let err = patch(&mut s, json!({"metadata": {"annotations": {"a/b/c": "x"}}}));
    assert!(err.message.ends_with(
        "metadata.annotations: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', \
         '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', \
         regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix \
         and '/' (e.g. 'example.com/MyName')"
    ), "{}", err.message);
    let big = "x".repeat(256 * 1024);
    let err = patch(&mut s, json!({"metadata": {"annotations": {"big": big}}}));
    assert_eq!(
        err.message,
        "Lease.coordination.k8s.io \"lock\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes"
    );
    assert_eq!(err.details.causes[0].reason, "FieldValueTooLong");
    assert_eq!(s.resource_version(), before + 1, "only the valid annotation was written");
    // A create with a bad name and a bad label: one 422 with both, the name first.
    let mut bad = lease("Bad_Name", "a", 0, "");
    bad.metadata.labels = Labels::from([("k".to_string(), "bad value".to_string())]);
    let err = s.handle(secs(3), &admin(Verb::Create, Kind::Lease, "", Body::Lease(Arc::new(bad)))).unwrap_err();
    let fields: Vec<&str> = err.details.causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, ["metadata.name", "metadata.labels"], "{}", err.message);
    // The apiserver's order (`handlers/create.go`, `registry/store.go` `create`): the namespace
    // (admission) first, then validation, then the name taken (storage).
    let mut taken = lease("lock", "a", 0, "");
    taken.metadata.labels = Labels::from([("k".to_string(), "bad value".to_string())]);
    let err = s.handle(secs(3), &admin(Verb::Create, Kind::Lease, "", Body::Lease(Arc::new(taken)))).unwrap_err();
    assert_eq!(err.code, 422, "validation before AlreadyExists: {}", err.message);
    let mut elsewhere = lease("Bad_Name", "a", 0, "");
    elsewhere.metadata.namespace = "missing".into();
    let mut req = admin(Verb::Create, Kind::Lease, "", Body::Lease(Arc::new(elsewhere)));
    req.namespace = Arc::from("missing");
    let err = s.handle(secs(3), &req).unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (404, "namespaces \"missing\" not found"));
}

/// The HTTP adapter decodes a Lease's JSON before taking the server's lock
/// (`typed_body_from_text`); where it does, the server's answer is the one the text would
/// have got, and where the text is anything unusual it leaves the text to the server.
#[test]
fn a_lease_decoded_before_the_server_answers_as_its_text_does() {
    let meta = r#""metadata":{"name":"lock","namespace":"default","labels":{"a":"1","a":"2"}}"#;
    let spec = r#""spec":{"holderIdentity":"x","leaseDurationSeconds":15,"renewTime":"2026-01-01T00:00:00.000000Z"}"#;
    let texts = [
        format!(r#"{{"apiVersion":"coordination.k8s.io/v1","kind":"Lease",{meta},{spec}}}"#),
        format!(r#" {{{meta},{spec},"unknown":[1,2]}}"#),
        format!(r#"{{"apiVersion":null,"kind":"Lease",{meta},{spec}}}"#),
    ];
    for text in &texts {
        // (Fields the Lease lacks are the server's to warn of: decoded here only when ignored,
        // as the requests below ask.)
        let typed = typed_body_from_text(Kind::Lease, text, FieldValidation::Ignore)
            .expect("a plain Lease is decoded before the server");
        for verb in [Verb::Create, Verb::Update] {
            let name = if verb == Verb::Create { "" } else { "lock" };
            let (mut a, mut b) = (server(), server());
            if verb == Verb::Update {
                create_lease(&mut a, 0, "lock", "x");
                create_lease(&mut b, 0, "lock", "x");
            }
            let by_text = a.handle(secs(1), &admin(verb, Kind::Lease, name, Body::Text(text.clone())));
            let by_type = b.handle(secs(1), &admin(verb, Kind::Lease, name, typed.clone()));
            assert_eq!(format!("{by_text:?}"), format!("{by_type:?}"), "{verb:?} of {text}");
        }
    }
    // Left to the server: not an object, another kind or version, a field twice, a wrong
    // type, trailing bytes, bad JSON, kinds other than Lease.
    let left = [
        format!(r#"[{{{meta}}}]"#),
        format!(r#"{{"apiVersion":"v1","kind":"Lease",{meta}}}"#),
        format!(r#"{{"kind":"ConfigMap",{meta}}}"#),
        format!(r#"{{{meta},{meta}}}"#),
        format!(r#"{{"apiVersion":1,{meta}}}"#),
        format!(r#"{{{meta}}} x"#),
        "{".to_string(),
        r#"{"spec":{"renewTime":"2026-01-01T00:00:00Z"}}"#.to_string(),
    ];
    for text in &left {
        assert!(typed_body_from_text(Kind::Lease, text, FieldValidation::Warn).is_none(), "{text}");
    }
    assert!(typed_body_from_text(Kind::ConfigMap, r#"{"metadata":{"name":"c"}}"#, FieldValidation::Warn).is_none());
}

/// A LeaseCandidate's typed field diff is the diff of its JSON, between every pair of a set of
/// candidates that set and unset each spec field (the times, the versions, an empty strategy,
/// an empty leaseName) and their labels and annotations, and from nothing (a create). A write
/// answers with the typed object, the one stored.
#[test]
fn a_leasecandidates_typed_diff_is_the_diff_of_its_json() {
    use super::managed_fields::{json_diff, lease_candidate_diff};
    use super::types::LeaseCandidate;
    let time = |s: &str| Some(MicroTime::parse(s).unwrap());
    let base = LeaseCandidate {
        metadata: ObjectMeta { name: "c".into(), namespace: NS.into(), ..Default::default() },
        spec: super::types::LeaseCandidateSpec {
            lease_name: "l".into(),
            ping_time: None,
            renew_time: time("2026-01-01T00:00:00.000000Z"),
            binary_version: "1.33.0".into(),
            emulation_version: "1.33.0".into(),
            strategy: "OldestEmulationVersion".into(),
        },
    };
    let mut variants = vec![base.clone()];
    let edits: [fn(&mut LeaseCandidate); 10] = [
        |c| c.spec.ping_time = Some(MicroTime::from_unix_nanos(1_767_225_605_000_000_000)),
        |c| c.spec.renew_time = None,
        |c| c.spec.renew_time = Some(MicroTime::from_unix_nanos(1_767_225_601_500_000_000)),
        |c| c.spec.emulation_version = "".into(),
        |c| c.spec.strategy = "".into(),
        |c| c.spec.lease_name = "".into(),
        |c| c.spec.binary_version = "1.34.0".into(),
        |c| c.metadata.labels = [("a".to_string(), "1".to_string())].into(),
        |c| c.metadata.annotations = [("n".to_string(), String::new())].into(),
        |c| {
            c.metadata.labels = [("a".to_string(), "2".to_string()), ("b".to_string(), String::new())].into();
            c.spec.binary_version = "".into();
        },
    ];
    for edit in edits {
        let mut c = base.clone();
        edit(&mut c);
        variants.push(c);
    }
    let json = |c: &LeaseCandidate| object_json(Kind::LeaseCandidate, c);
    for after in &variants {
        assert_eq!(lease_candidate_diff(None, after), json_diff(None, &json(after)), "created: {after:?}");
        for before in &variants {
            let typed = lease_candidate_diff(Some(before), after);
            assert_eq!(typed, json_diff(Some(&json(before)), &json(after)), "{before:?} → {after:?}");
        }
    }
    let mut s = server();
    let create = admin(
        Verb::Create,
        Kind::LeaseCandidate,
        "",
        Body::LeaseCandidate { object: Arc::new(base.clone()), time: None },
    );
    let Object::LeaseCandidate(created) = s.handle(0, &create).unwrap() else { panic!("a typed LeaseCandidate") };
    let renew = object::CandidateTime::Renew(time("2026-01-01T00:00:02.000000Z").unwrap());
    let body = Body::LeaseCandidate { object: Arc::clone(&created), time: Some(renew) };
    let update = admin(Verb::Update, Kind::LeaseCandidate, "c", body);
    let Object::LeaseCandidate(written) = s.handle(1, &update).unwrap() else { panic!("a typed LeaseCandidate") };
    assert_ne!(written.metadata.resource_version, created.metadata.resource_version, "written");
    assert_eq!(written.spec.renew_time, time("2026-01-01T00:00:02.000000Z"));
    let stored = s.peek_stored(Kind::LeaseCandidate, NS, "c").unwrap();
    assert!(Arc::ptr_eq(stored.lease_candidate().unwrap(), &written), "the answer is the stored object");
}

/// A LeaseCandidate's owner renewing, and the election controller pinging, on the object the
/// server holds take the in-place time write (`candidate_time_write`: the copy made into a
/// recycled old version) and answer and store what a server sent the same objects as JSON
/// (the generic path, from the start) answers and stores: the same answers, stored object,
/// managers and their times, resourceVersions, entries swapping as the writers take turns
/// (twice within one second: ties ordered by name). The controller's first ping moves a field
/// it does not own yet: the generic path's. (Debug builds also run the generic path beside
/// every such write and compare.)
#[test]
fn a_candidates_time_writes_on_the_stored_object_are_the_generic_paths() {
    use super::types::{LeaseCandidate, LeaseCandidateSpec};
    use object::CandidateTime;
    let base = LeaseCandidate {
        metadata: ObjectMeta { name: "c".into(), namespace: NS.into(), ..Default::default() },
        spec: LeaseCandidateSpec {
            lease_name: "l".into(),
            renew_time: Some(MicroTime::from_unix_nanos(DEFAULT_EPOCH_UNIX_NANOS)),
            binary_version: "1.33.0".into(),
            emulation_version: "1.33.0".into(),
            strategy: "OldestEmulationVersion".into(),
            ..Default::default()
        },
    };
    let mut s = server();
    let body = Body::LeaseCandidate { object: Arc::new(base), time: None };
    s.handle(0, &with_manager(admin(Verb::Create, Kind::LeaseCandidate, "", body), "kube-scheduler", false)).unwrap();
    let mut reference = s.clone();
    let stored =
        |s: &ApiServer| s.peek_stored(Kind::LeaseCandidate, NS, "c").unwrap().lease_candidate().cloned().unwrap();
    let (owner, controller) = ("kube-scheduler", "leader-election-controller");
    let rounds = [
        (1_000, owner),
        (2_000, owner),
        (3_200, controller),
        (3_700, owner),
        (3_900, controller),
        (5_000, owner),
        (6_000, controller),
        (7_200, owner),
    ];
    let mut recycled: Option<*const LeaseCandidate> = None;
    for (i, (ms, manager)) in rounds.into_iter().enumerate() {
        let now = ms * 1_000_000;
        let at = MicroTime::from_unix_nanos(DEFAULT_EPOCH_UNIX_NANOS + now as i64 + 123_456_000);
        let time = if manager == owner { CandidateTime::Renew(at) } else { CandidateTime::Ping(at) };
        let live = stored(&s);
        let mut json = object_json(Kind::LeaseCandidate, &time.set_on(&stored(&reference)));
        json["apiVersion"] = json!("coordination.k8s.io/v1beta1");
        json["kind"] = json!("LeaseCandidate");
        let update = |body| with_manager(admin(Verb::Update, Kind::LeaseCandidate, "c", body), manager, false);
        let expected = reference.handle(now, &update(Body::Json(json))).map(|o| to_json(&o));
        let typed = update(Body::LeaseCandidate { object: Arc::clone(&live), time: Some(time) });
        let (spares, taken) = s.candidate_time_write_counts();
        assert_eq!(spares > 0, i > 0, "the last write's old version waits");
        let answer = s.handle(now, &typed).unwrap();
        assert_eq!(Ok(to_json(&answer)), expected, "write {i}");
        assert_eq!(s.peek_json(Kind::LeaseCandidate, NS, "c"), reference.peek_json(Kind::LeaseCandidate, NS, "c"));
        let (ours, theirs) = (
            s.record(Kind::LeaseCandidate, NS, "c").unwrap(),
            reference.record(Kind::LeaseCandidate, NS, "c").unwrap(),
        );
        assert_eq!((ours.rv, &ours.managers), (theirs.rv, &theirs.managers), "write {i}");
        // In place unless this is the controller's first ping; into the last old version.
        let in_place = i != 2;
        assert_eq!(
            s.candidate_time_write_counts(),
            (spares - usize::from(in_place && spares > 0), taken + u64::from(in_place)),
            "write {i}"
        );
        let Object::LeaseCandidate(written) = &answer else { panic!("a typed LeaseCandidate") };
        if in_place && let Some(recycled) = recycled {
            assert_eq!(Arc::as_ptr(written), recycled, "write {i} is made into the version recycled last");
        }
        drop(typed);
        recycled = Some(Arc::as_ptr(&live));
        s.recycle_candidate(live);
        assert!(s.candidate_time_write_counts().0 >= 1, "the old version, held by nobody, is kept");
    }
    let managers: Vec<String> = managers_of(&mut s, Kind::LeaseCandidate, "c").into_iter().map(|m| m.0).collect();
    assert_eq!(managers, [controller, owner], "the latest writer sorts last");
    assert_eq!(s.clone().candidate_time_write_counts().0, 0, "a clone starts without spares");
}

/// `slot_of`'s memory of the slots it last found never hands out a freed or reused slot: an
/// object deleted and another created in its slot are each found (or not) as the maps say
/// (debug builds also check every hit against the maps).
#[test]
fn a_remembered_slot_is_never_another_objects() {
    let mut s = server();
    let get = |s: &mut ApiServer, name: &str| {
        s.handle(0, &admin(Verb::Get, Kind::ConfigMap, name, Body::None)).map(|o| to_json(&o)["data"]["k"].clone())
    };
    create_config_map(&mut s, "a", &[("k", "a")]);
    assert_eq!(get(&mut s, "a").unwrap(), "a");
    s.handle(0, &admin(Verb::Delete, Kind::ConfigMap, "a", Body::None)).unwrap();
    assert_eq!(get(&mut s, "a").unwrap_err().code, 404, "deleted: its remembered slot is empty");
    create_config_map(&mut s, "b", &[("k", "b")]);
    assert_eq!(get(&mut s, "a").unwrap_err().code, 404, "its slot now holds b");
    assert_eq!(get(&mut s, "b").unwrap(), "b");
    create_config_map(&mut s, "a", &[("k", "a2")]);
    assert_eq!(get(&mut s, "a").unwrap(), "a2", "created again, in another slot");
    assert_eq!(get(&mut s, "b").unwrap(), "b");
}

/// A server (and so a world) may be shared across threads: its lookup hints are atomics.
#[test]
fn the_server_and_the_world_are_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<ApiServer>();
    shareable::<crate::world::World>();
}

/// The memory of RBAC decisions by caller never answers from an older RBAC state: the same
/// caller (the same `Arc`) is refused, then allowed once a Role and RoleBinding grant it, then
/// refused again when the binding is deleted; another caller of the same name is decided the
/// same; and the memory stays bounded however many names are asked about.
#[test]
fn remembered_rbac_decisions_follow_every_change_of_roles_and_bindings() {
    let mut s = server();
    create_config_map(&mut s, "cm", &[("k", "v")]);
    let user = Arc::new(User::service_account(NS, "worker"));
    let get = |user: &Arc<User>, name: &str| Request {
        user: Arc::clone(user),
        ..request(&User::admin(), Verb::Get, Kind::ConfigMap, name, Body::None)
    };
    let code = |s: &mut ApiServer, user: &Arc<User>, name: &str| {
        s.handle(0, &get(user, name)).map(|_| 200).unwrap_or_else(|e| e.code)
    };
    assert_eq!(code(&mut s, &user, "cm"), 403);
    assert_eq!(code(&mut s, &user, "cm"), 403, "remembered");
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "read", "namespace": NS},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "read", "namespace": NS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read"},
        "subjects": [{"kind": "ServiceAccount", "name": "worker", "namespace": NS}]});
    s.handle(0, &admin(Verb::Create, Kind::Role, "", Body::Json(role))).unwrap();
    assert_eq!(code(&mut s, &user, "cm"), 403, "a Role alone grants nothing");
    s.handle(0, &admin(Verb::Create, Kind::RoleBinding, "", Body::Json(binding))).unwrap();
    assert_eq!(code(&mut s, &user, "cm"), 200, "granted once bound");
    assert_eq!(code(&mut s, &Arc::new(User::service_account(NS, "worker")), "cm"), 200, "another Arc, same caller");
    assert_eq!(code(&mut s, &Arc::new(User::service_account(NS, "other")), "cm"), 403, "another caller");
    s.handle(0, &admin(Verb::Delete, Kind::RoleBinding, "read", Body::None)).unwrap();
    assert_eq!(code(&mut s, &user, "cm"), 403, "refused again once unbound");
    use crate::api::server::AuthzMemo;
    for i in 0..(AuthzMemo::MOST + 10) {
        assert_eq!(code(&mut s, &user, &format!("cm-{i}")), 403);
    }
    assert!(s.remembered_decisions() <= AuthzMemo::MOST);
}

/// A JSON patch (`application/json-patch+json`) is a patch to the server, as kube-apiserver's
/// `jsonPatcher` applies it (apiserver@24a394e5 `pkg/endpoints/handlers/patch.go:334-385`,
/// `:398-427`): RBAC asks for `patch` (not the `get` and `update` a client could make of it);
/// the patched object is searched for unknown fields as a merge patch's is (a 422 naming the
/// patched JSON, or warnings); an operation that does not apply is a 422 with the generic
/// message and empty details (`errors.NewGenericServerResponse`); the patch is read only once
/// the object is: a missing one is a 404 whatever the body.
#[test]
fn a_json_patch_is_a_patch_authorised_applied_and_checked_as_kube_apiserver_does() {
    let mut s = server();
    let create = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "namespace": NS}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}});
    s.handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Json(create))).unwrap();
    let patch = |ops: &str| admin(Verb::Patch, Kind::Lease, "l", Body::JsonPatch(ops.to_string()));
    let set = r#"[{"op": "replace", "path": "/spec/holderIdentity", "value": "b"}]"#;
    let Object::Lease(lease) = s.handle(secs(1), &patch(set)).unwrap() else { panic!("a Lease") };
    assert_eq!(lease.spec.holder_identity.as_deref(), Some("b"));
    let managers: Vec<String> = managers_of(&mut s, Kind::Lease, "l").into_iter().map(|m| m.0).collect();
    assert!(managers.contains(&"kubectl-patch".to_string()), "{managers:?}");
    // RBAC: a caller allowed to get and update Leases may not patch one, and one allowed only
    // to patch may.
    let worker = Arc::new(User::service_account(NS, "worker"));
    for (verbs, allowed) in [(json!(["get", "update"]), false), (json!(["patch"]), true)] {
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "leases", "namespace": NS},
            "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": verbs}]});
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "leases", "namespace": NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "leases"},
            "subjects": [{"kind": "ServiceAccount", "name": "worker", "namespace": NS}]});
        let _ = s.handle(0, &admin(Verb::Delete, Kind::Role, "leases", Body::None));
        let _ = s.handle(0, &admin(Verb::Delete, Kind::RoleBinding, "leases", Body::None));
        s.handle(0, &admin(Verb::Create, Kind::Role, "", Body::Json(role))).unwrap();
        s.handle(0, &admin(Verb::Create, Kind::RoleBinding, "", Body::Json(binding))).unwrap();
        let mut req = patch(set);
        req.user = Arc::clone(&worker);
        let answer = s.handle(secs(2), &req);
        assert_eq!(answer.as_ref().map(|_| 200).unwrap_or_else(|e| e.code), if allowed { 200 } else { 403 });
        if !allowed {
            let message = answer.err().unwrap().message;
            assert!(message.contains(r#"cannot patch resource "leases""#), "{message}");
        }
    }
    // Unknown fields, as for a merge patch.
    let misspelt = r#"[{"op": "add", "path": "/spec/holderIdentiy", "value": "c"}]"#;
    let live = crate::api::to_json(&s.handle(0, &admin(Verb::Get, Kind::Lease, "l", Body::None)).unwrap());
    let mut req = patch(misspelt);
    req.field_validation = FieldValidation::Strict;
    let err = s.handle(secs(3), &req).unwrap_err();
    // The patched object as the library marshals it: the document and the object the path goes
    // through are Go maps, their keys sorted (`json_patch::apply`).
    let mut patched = live.clone();
    patched["spec"]["holderIdentiy"] = json!("c");
    patched.as_object_mut().unwrap().sort_keys();
    patched["spec"].as_object_mut().unwrap().sort_keys();
    assert_eq!(
        err.message,
        format!(
            r#" "" is invalid: patch: Invalid value: {}: strict decoding error: unknown field "spec.holderIdentiy""#,
            go_quote(&go_json_marshal(&patched))
        )
    );
    req.field_validation = FieldValidation::Warn;
    s.handle(secs(3), &req).unwrap();
    assert_eq!(s.take_warnings(), [r#"unknown field "spec.holderIdentiy""#]);
    // The operations' own fields are searched too, and come first (`handlers/patch.go:403-412`).
    let typo = r#"[{"op": "replace", "path": "/spec/leaseDurationSeconds", "vaule": 20, "value": 30}]"#;
    let mut req = patch(typo);
    req.field_validation = FieldValidation::Warn;
    let Object::Lease(lease) = s.handle(secs(3), &req).unwrap() else { panic!("a Lease") };
    assert_eq!(lease.spec.lease_duration_seconds, Some(30));
    assert_eq!(s.take_warnings(), [r#"json patch unknown field "[0].vaule""#]);
    req.field_validation = FieldValidation::Strict;
    let message = s.handle(secs(3), &req).unwrap_err().message;
    assert!(message.ends_with(r#"": strict decoding error: json patch unknown field "[0].vaule""#), "{message}");
    req.field_validation = FieldValidation::Ignore;
    s.handle(secs(3), &req).unwrap();
    assert!(s.take_warnings().is_empty());
    // An operation that does not apply.
    let err = s.handle(secs(4), &patch(r#"[{"op": "remove", "path": "/spec/nothing"}]"#)).unwrap_err();
    assert_eq!(
        err.to_status_json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "the server rejected our request due to an error in our request", "reason": "Invalid",
            "details": {}, "code": 422})
    );
    // A body that is not JSON is refused before the object is read (`handlers/patch.go:138-142`);
    // one that is JSON but not a list of operations only once it is.
    let refused = |s: &mut ApiServer, text: &str, name: &str| {
        let mut req = patch(text);
        req.name = Arc::from(name);
        let err = s.handle(secs(5), &req).unwrap_err();
        (err.code, err.message)
    };
    assert_eq!(refused(&mut s, "not JSON", "gone"), (400, "invalid JSON patch".to_string()));
    assert_eq!(refused(&mut s, r#"{"op": "add"}"#, "gone").0, 404);
    assert_eq!(
        refused(&mut s, r#"{"op": "add"}"#, "l"),
        (400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch".to_string())
    );
    // `null` is no operations: nothing changes.
    let rv = s.peek_lease(NS, "l").unwrap().metadata.resource_version.clone();
    s.handle(secs(5), &patch("null")).unwrap();
    assert_eq!(s.peek_lease(NS, "l").unwrap().metadata.resource_version, rv);
}

/// A server-side apply whose configuration names a field its kind lacks fails in
/// structured-merge-diff's typed conversion, whatever `fieldValidation` says: a plain error the
/// handler answers as a 500 without a reason (apimachinery@eed236ce
/// `managedfields/internal/structuredmerge.go:145-148`; the body as kubernetes/kubernetes#122480
/// shows it), one undeclared field a map (`typed/validate.go:172-190`), `errors:` and one a line
/// when several; nothing is written.
#[test]
fn an_apply_with_an_undeclared_field_fails_as_structured_merge_diff_fails_it() {
    let mut s = server();
    let apply = |config: Value, validation: FieldValidation| {
        let mut req = with_manager(admin(Verb::Apply, Kind::Lease, "l", Body::Json(config)), "op", false);
        req.field_validation = validation;
        req
    };
    let config = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "namespace": NS}, "spec": {"holderIdentiy": "a", "leaseDurationSeconds": 15}});
    for validation in [FieldValidation::Ignore, FieldValidation::Warn, FieldValidation::Strict] {
        let err = s.handle(0, &apply(config.clone(), validation)).unwrap_err();
        let message = "failed to create typed patch object (default/l; coordination.k8s.io/v1, Kind=Lease): \
                       .spec.holderIdentiy: field not declared in schema";
        assert_eq!(
            err.to_status_json(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "code": 500})
        );
        assert_eq!(err.kubectl_stderr(), format!("Error from server: {message}"));
        assert!(s.take_warnings().is_empty());
    }
    assert!(s.peek_lease(NS, "l").is_none(), "nothing created");
    // A key set to null is a key.
    let mut nulled = config.clone();
    nulled["spec"]["holderIdentiy"] = Value::Null;
    assert_eq!(s.handle(0, &apply(nulled, FieldValidation::Ignore)).unwrap_err().code, 500);
    // The conversion comes before the name is checked against the URL's (it runs in the patcher).
    let mut renamed = config.clone();
    renamed["metadata"]["name"] = json!("other");
    let err = s.handle(0, &apply(renamed, FieldValidation::Strict)).unwrap_err();
    assert_eq!((err.code, err.message.contains("(default/other; coordination.k8s.io/v1, Kind=Lease)")), (500, true));
    let several = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "nmae": "x", "labels": {"any": "x"}},
        "spec": {"holderIdentiy": "a", "leaseDurationSecs": 15}});
    let err = s.handle(0, &apply(several, FieldValidation::Strict)).unwrap_err();
    assert_eq!(
        err.message,
        "failed to create typed patch object (/l; coordination.k8s.io/v1, Kind=Lease): errors:\n  \
         .metadata.nmae: field not declared in schema\n  .spec.holderIdentiy: field not declared in schema"
    );
}

/// A LeaseCandidate body is decoded into the Go type and encoded again, as kube-apiserver stores
/// it (kubernetes/api@10b39a39 `coordination/v1beta1/types.go:116-153`, docs/sources/kubernetes.md
/// §6): the spec's fields in the type's order, unknown fields dropped, its times read as
/// MicroTimes and written in UTC with six digits; a time that is not a MicroTime is the decode
/// error of the Lease's, in version `v1beta1` (checked against the real kubectl in
/// `sim-cli/tests/serve_kubectl.rs`).
#[test]
fn a_leasecandidate_is_stored_as_its_go_type_encodes_it() {
    let mut s = server();
    let body = |renew: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate", "status": {"x": 1},
               "metadata": {"name": "c"},
               "spec": {"strategy": "OldestEmulationVersion", "renewTime": renew, "bogus": 1, "leaseName": "l",
                        "emulationVersion": "1.33.0", "binaryVersion": "1.33.0", "pingTime": null}})
    };
    let created =
        s.handle(0, &admin(Verb::Create, Kind::LeaseCandidate, "", Body::Json(body("2026-01-01T00:00:00.5+02:00"))));
    let err = created.unwrap_err();
    assert_eq!(
        err.message,
        r#"LeaseCandidate in version "v1beta1" cannot be handled as a LeaseCandidate: parsing time "2026-01-01T00:00:00.5+02:00" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".5+02:00" as ".000000""#
    );
    assert_eq!((err.code, err.reason), (400, Reason::BadRequest));
    let created = s.handle(
        0,
        &admin(Verb::Create, Kind::LeaseCandidate, "", Body::Json(body("2026-01-01T00:00:00.500000+02:00"))),
    );
    let json = to_json(&created.unwrap());
    assert_eq!(json.as_object().unwrap().keys().collect::<Vec<_>>(), ["kind", "apiVersion", "metadata", "spec"]);
    let spec = &json["spec"];
    assert_eq!(
        spec.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["leaseName", "renewTime", "binaryVersion", "emulationVersion", "strategy"]
    );
    assert_eq!(spec["renewTime"], "2025-12-31T22:00:00.500000Z");
    // The stored object is what its own JSON decodes to again.
    let again = object::Stored::decode(Kind::LeaseCandidate, &json).unwrap();
    assert_eq!(to_json(&again.to_object()), json);
}

/// `fieldValidation` on a create and an update (apiserver `handlers/create.go:119-141`,
/// `update.go`; docs/sources/apiserver-wire.md §11): `Strict` refuses a body
/// with fields the type lacks with one strict decoding error naming each, in the body's order;
/// `Warn` (no parameter) writes the object without them and names each in a warning; `Ignore`
/// drops them unsaid. A wrong type is the decoder's own error first. The typed path for a
/// Lease's text takes only bodies with nothing to say.
#[test]
fn unknown_fields_are_refused_warned_of_or_dropped_as_field_validation_says() {
    let mut s = server();
    let text = |name: &str| {
        format!(
            r#"{{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{{"name":"{name}","colour":"red"}},"spec":{{"holderIdentiy":"a","leaseDurationSeconds":15}}}}"#
        )
    };
    let send = |s: &mut ApiServer, verb: Verb, name: &str, validation: FieldValidation, body: String| {
        let mut req = admin(verb, Kind::Lease, if verb == Verb::Create { "" } else { name }, Body::Text(body));
        req.field_validation = validation;
        let answer = s.handle(0, &req);
        (answer, s.take_warnings())
    };
    let refused = r#"Lease in version "v1" cannot be handled as a Lease: strict decoding error: unknown field "metadata.colour", unknown field "spec.holderIdentiy""#;
    for verb in [Verb::Create, Verb::Update] {
        let (answer, warnings) = send(&mut s, verb, "l", FieldValidation::Strict, text("l"));
        let err = answer.unwrap_err();
        assert_eq!((err.code, err.reason, err.message.as_str()), (400, Reason::BadRequest, refused), "{verb:?}");
        assert!(warnings.is_empty());
    }
    let (answer, warnings) = send(&mut s, Verb::Create, "l", FieldValidation::Warn, text("l"));
    let Object::Lease(lease) = answer.unwrap() else { panic!("a Lease") };
    assert_eq!((lease.spec.holder_identity.as_deref(), lease.spec.lease_duration_seconds), (None, Some(15)));
    assert_eq!(warnings, [r#"unknown field "metadata.colour""#, r#"unknown field "spec.holderIdentiy""#]);
    let rv = lease.metadata.resource_version.clone();
    let update = text("l").replace(r#""colour":"red""#, &format!(r#""resourceVersion":"{rv}","colour":"red""#));
    let (answer, warnings) = send(&mut s, Verb::Update, "l", FieldValidation::Ignore, update);
    assert!(answer.is_ok() && warnings.is_empty(), "{answer:?}");
    // A wrong type trumps an unknown field.
    let wrong = r#"{"metadata":{"name":"l"},"spec":{"holderIdentiy":"a","leaseDurationSeconds":"15"}}"#.to_string();
    let (answer, _) = send(&mut s, Verb::Update, "l", FieldValidation::Strict, wrong);
    assert!(!answer.unwrap_err().message.contains("strict decoding"));
    // The typed text path steps aside for a body with unknown fields unless they are ignored.
    assert!(typed_body_from_text(Kind::Lease, &text("l"), FieldValidation::Warn).is_none());
    assert!(typed_body_from_text(Kind::Lease, &text("l"), FieldValidation::Ignore).is_some());
    let plain = r#"{"metadata":{"name":"l"},"spec":{"holderIdentity":"a"}}"#;
    assert!(typed_body_from_text(Kind::Lease, plain, FieldValidation::Strict).is_some());
}

/// `fieldValidation` on a patch (apiserver@24a394e5 `handlers/patch.go:348-376` for a JSON merge
/// patch, `:771-797` for a strategic one): the patched object is searched for fields the kind
/// lacks once it decodes. `Strict` refuses with 422 `patch: Invalid value:` naming the patched
/// object's JSON (merge) or the patch as Go's `%+v` prints its map (strategic); `Warn` (no
/// parameter: `kubectl patch` sends none) writes the patch without them and warns of each;
/// `Ignore` drops them. A patch that does not decode is named the same way.
#[test]
fn a_patch_with_unknown_fields_is_refused_warned_of_or_dropped_as_field_validation_says() {
    let mut s = server();
    let create = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "namespace": NS}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}});
    s.handle(0, &admin(Verb::Create, Kind::Lease, "", Body::Json(create))).unwrap();
    let patch = r#"{"spec":{"holderIdentiy":"b","leaseDurationSeconds":30}}"#;
    let send = |s: &mut ApiServer, body: Body, validation: FieldValidation| {
        let mut req = admin(Verb::Patch, Kind::Lease, "l", body);
        req.field_validation = validation;
        let answer = s.handle(secs(1), &req);
        (answer, s.take_warnings())
    };
    let rv = |s: &mut ApiServer| s.peek_lease(NS, "l").unwrap().metadata.resource_version.clone();
    let before = rv(&mut s);
    for strategic in [false, true] {
        let body = if strategic { Body::StrategicMergePatch(patch.into()) } else { Body::Text(patch.into()) };
        let (answer, warnings) = send(&mut s, body, FieldValidation::Strict);
        let err = answer.unwrap_err();
        assert_eq!((err.code, err.reason), (422, Reason::Invalid));
        let named = if strategic {
            r#""map[spec:map[holderIdentiy:b leaseDurationSeconds:30]]""#.to_string()
        } else {
            let live = crate::api::to_json(&s.handle(0, &admin(Verb::Get, Kind::Lease, "l", Body::None)).unwrap());
            let patched = merge_patch(&live, &serde_json::from_str(patch).unwrap()).unwrap();
            go_quote(&go_json_marshal(&patched))
        };
        let expected = format!(
            r#" "" is invalid: patch: Invalid value: {named}: strict decoding error: unknown field "spec.holderIdentiy""#
        );
        assert_eq!(err.message, expected, "strategic: {strategic}");
        assert!(warnings.is_empty());
        assert_eq!(rv(&mut s), before, "nothing written");
    }
    let (answer, warnings) = send(&mut s, Body::Text(patch.into()), FieldValidation::Warn);
    let Object::Lease(lease) = answer.unwrap() else { panic!("a Lease") };
    assert_eq!((lease.spec.holder_identity.as_deref(), lease.spec.lease_duration_seconds), (Some("a"), Some(30)));
    assert_eq!(warnings, [r#"unknown field "spec.holderIdentiy""#]);
    let (answer, warnings) =
        send(&mut s, Body::StrategicMergePatch(patch.replace("30", "45")), FieldValidation::Ignore);
    assert!(answer.is_ok() && warnings.is_empty());
    // A value that does not decode: the strategic patcher names the patch, not the object.
    let bad = r#"{"spec":{"renewTime":"2026-01-01T00:00:00Z"}}"#;
    let (answer, _) = send(&mut s, Body::StrategicMergePatch(bad.into()), FieldValidation::Strict);
    let message = answer.unwrap_err().message;
    assert!(
        message.starts_with(
            r#" "" is invalid: patch: Invalid value: "map[spec:map[renewTime:2026-01-01T00:00:00Z]]": parsing time"#
        ),
        "{message}"
    );
}

/// A frozen object's shape read from its text is its tree's (`json_shape`), after a `#`,
/// whatever its strings hold (escapes, braces, brackets, commas, quotes); a text that is not
/// one map has none.
#[test]
fn a_frozen_objects_shape_is_its_trees() {
    use super::server::{frozen_shape, json_shape};
    let cases = [
        r#"{}"#,
        r#"{"a": 1}"#,
        r#"{"involvedObject": {"kind": "Lease", "uid": ""}, "reason": "x", "eventTime": null, "count": 1, "n": {"m": {}}}"#,
        r#"{"s": "}{],[\"\\", "arr": [1, {"a": [2, "]"]}, "x"], "t": true, "f": false, "neg": -3, "after": {"k": null}}"#,
        r#"{"ünï": "cödé", "e": ""}"#,
    ]
    .map(|text| serde_json::from_str::<Value>(text).expect("JSON"));
    for case in cases {
        let Value::Object(map) = case else { unreachable!("a map") };
        let object = JsonObject { metadata: ObjectMeta::default(), rest: Arc::new(map.clone()) };
        let frozen = FrozenJson::of(&object).expect("no floats");
        let (mut from_text, mut from_tree) = (String::new(), String::from("#"));
        frozen_shape(frozen.text(), &mut from_text).expect("one map");
        json_shape(&map, &mut from_tree);
        assert_eq!(from_text, from_tree, "{}", frozen.text());
    }
    for bad in ["", "[]", "{\"a\":1", "{\"a\" 1}", "{\"a\":1}x", "{\"a\":]}"] {
        assert!(frozen_shape(bad, &mut String::new()).is_none(), "{bad}");
    }
}

/// A uid written without the formatter is the formatter's, below and past twelve hex digits.
#[test]
fn uids_are_the_formatters() {
    for n in [0, 1, 9, 10, 15, 16, 255, 4096, 0xdead_beef, (1 << 48) - 1, 1 << 48, u64::MAX] {
        assert_eq!(super::server::uid_of(n), format!("00000000-0000-4000-8000-{n:012x}"), "{n}");
    }
}
