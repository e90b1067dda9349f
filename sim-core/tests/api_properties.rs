//! Properties of the fake API server under random interleavings of three clients writing one
//! Lease and one ConfigMap: create, PUT with a fresh or stale resourceVersion, merge patch, and
//! server-side apply with random managers and force (apiserver.md §4, §5).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};
use sim_core::api::*;
use sim_core::time::DEFAULT_EPOCH_UNIX_NANOS;

const NS: &str = "default";
const NAME: &str = "shared";

#[derive(Clone, Debug)]
enum Op {
    Create {
        client: usize,
        kind: Kind,
    },
    /// PUT: `fresh` re-reads first; otherwise sends the RV the client last saw (maybe stale).
    Update {
        client: usize,
        kind: Kind,
        fresh: bool,
        value: u8,
    },
    MergePatch {
        client: usize,
        kind: Kind,
        value: u8,
    },
    /// Applies one or both fields with small values, so co-ownership and conflicts both happen.
    Apply {
        client: usize,
        kind: Kind,
        first: Option<u8>,
        second: Option<u8>,
        force: bool,
    },
}

fn kind_strategy() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::Lease), Just(Kind::ConfigMap)]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3usize, kind_strategy()).prop_map(|(client, kind)| Op::Create { client, kind }),
        (0..3usize, kind_strategy(), any::<bool>(), 0..3u8).prop_map(|(client, kind, fresh, value)| Op::Update {
            client,
            kind,
            fresh,
            value
        }),
        (0..3usize, kind_strategy(), 0..3u8).prop_map(|(client, kind, value)| Op::MergePatch { client, kind, value }),
        (0..3usize, kind_strategy(), proptest::option::of(0..2u8), proptest::option::of(0..2u8), any::<bool>())
            .prop_map(|(client, kind, first, second, force)| Op::Apply { client, kind, first, second, force }),
    ]
}

/// The two fields each kind's writers touch, as JSON pointers and SMD paths.
fn fields(kind: Kind) -> [(&'static str, &'static str); 2] {
    match kind {
        Kind::Lease => {
            [("/spec/holderIdentity", ".spec.holderIdentity"), ("/spec/leaseTransitions", ".spec.leaseTransitions")]
        }
        _ => [("/data/a", ".data.a"), ("/data/b", ".data.b")],
    }
}

fn field_value(kind: Kind, index: usize, v: u8) -> Value {
    match (kind, index) {
        (Kind::Lease, 0) => json!(format!("holder-{v}")),
        (Kind::Lease, _) => json!(v as i64),
        _ => json!(format!("value-{v}")),
    }
}

/// An object body holding both fields set from `value`.
fn full_object(kind: Kind, value: u8, rv: Option<&str>) -> Value {
    let mut v = json!({"apiVersion": kind.api_version(), "kind": kind.kind_name(), "metadata": {"name": NAME}});
    if let Some(rv) = rv {
        v["metadata"]["resourceVersion"] = json!(rv);
    }
    for (i, (pointer, _)) in fields(kind).iter().enumerate() {
        set_pointer(&mut v, pointer, field_value(kind, i, value));
    }
    v
}

fn set_pointer(v: &mut Value, pointer: &str, value: Value) {
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    let mut node = v;
    for part in &parts[..parts.len() - 1] {
        node = node.as_object_mut().unwrap().entry(part.to_string()).or_insert_with(|| json!({}));
    }
    node.as_object_mut().unwrap().insert(parts[parts.len() - 1].to_string(), value);
}

fn request(client: usize, verb: Verb, kind: Kind, name: &str, body: Body, force: bool) -> Request {
    Request {
        user: Arc::new(User::admin()),
        verb,
        kind,
        namespace: Arc::from(NS),
        name: Arc::from(name),
        body,
        field_manager: Some(Arc::from(format!("client-{client}"))),
        force,
        field_validation: sim_core::api::FieldValidation::Ignore,
    }
}

fn rv_of(object: &Object) -> String {
    to_json(object)["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string()
}

/// managedFields as ((manager, operation) → SMD paths).
fn ownership(server: &mut ApiServer, kind: Kind) -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut out = BTreeMap::new();
    let Some(object) = server.peek_json(kind, NS, NAME) else {
        return out;
    };
    for entry in object["metadata"]["managedFields"].as_array().cloned().unwrap_or_default() {
        let mut paths = BTreeSet::new();
        collect(&entry["fieldsV1"], "", &mut paths);
        out.insert(
            (entry["manager"].as_str().unwrap().to_string(), entry["operation"].as_str().unwrap().to_string()),
            paths,
        );
    }
    out
}

fn collect(node: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    for (key, child) in node.as_object().into_iter().flatten() {
        if let Some(name) = key.strip_prefix("f:") {
            let path = format!("{prefix}.{name}");
            out.insert(path.clone());
            collect(child, &path, out);
        }
    }
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut server = ApiServer::new(DEFAULT_EPOCH_UNIX_NANOS);
    // What each client last saw of each object's resourceVersion.
    let mut seen: BTreeMap<(usize, Kind), String> = BTreeMap::new();
    // The RV of the last successful write to each object (the model).
    let mut last_write: BTreeMap<Kind, String> = BTreeMap::new();
    for (step, op) in ops.into_iter().enumerate() {
        let now = step as u64 * 1_000_000_000;
        let revision_before = server.resource_version();
        let (kind, client) = match &op {
            Op::Create { client, kind }
            | Op::Update { client, kind, .. }
            | Op::MergePatch { client, kind, .. }
            | Op::Apply { client, kind, .. } => (*kind, *client),
        };
        let live_rv = last_write.get(&kind).cloned();
        let mut sent_rv: Option<String> = None;
        let mut expected_conflict: Option<BTreeSet<String>> = None;
        let result = match &op {
            Op::Create { .. } => server
                .handle(now, &request(client, Verb::Create, kind, "", Body::Json(full_object(kind, 0, None)), false)),
            Op::Update { fresh, value, .. } => {
                if *fresh
                    && let Ok(object) = server.handle(now, &request(client, Verb::Get, kind, NAME, Body::None, false))
                {
                    seen.insert((client, kind), rv_of(&object));
                }
                sent_rv = seen.get(&(client, kind)).cloned();
                server.handle(
                    now,
                    &request(
                        client,
                        Verb::Update,
                        kind,
                        NAME,
                        Body::Json(full_object(kind, *value, sent_rv.as_deref())),
                        false,
                    ),
                )
            }
            Op::MergePatch { value, .. } => {
                let mut patch = json!({});
                set_pointer(&mut patch, fields(kind)[1].0, field_value(kind, 1, *value));
                server.handle(now, &request(client, Verb::Patch, kind, NAME, Body::Json(patch), false))
            }
            Op::Apply { first, second, force, .. } => {
                let mut config =
                    json!({"apiVersion": kind.api_version(), "kind": kind.kind_name(), "metadata": {"name": NAME}});
                let live = server.peek_json(kind, NS, NAME);
                let owners = ownership(&mut server, kind);
                let me = (format!("client-{client}"), "Apply".to_string());
                let mut conflicts = BTreeSet::new();
                for (i, value) in [first, second].into_iter().enumerate() {
                    let Some(value) = value else { continue };
                    let (pointer, path) = fields(kind)[i];
                    let wanted = field_value(kind, i, *value);
                    set_pointer(&mut config, pointer, wanted.clone());
                    let changes = live.as_ref().and_then(|l| l.pointer(pointer)) != Some(&wanted);
                    let owned_by_other = owners.iter().any(|(id, paths)| *id != me && paths.contains(path));
                    if changes && owned_by_other {
                        conflicts.insert(path.to_string());
                    }
                }
                expected_conflict = Some(conflicts);
                server.handle(now, &request(client, Verb::Apply, kind, NAME, Body::Json(config), *force))
            }
        };
        match &result {
            Ok(object) => {
                let rv = rv_of(object);
                if live_rv.as_deref() == Some(rv.as_str()) {
                    prop_assert_eq!(server.resource_version(), revision_before, "a no-op write keeps the revision");
                } else {
                    prop_assert_eq!(
                        rv.parse::<u64>().unwrap(),
                        revision_before + 1,
                        "each persisted write takes the next revision"
                    );
                    last_write.insert(kind, rv.clone());
                }
                if let (Op::Update { .. }, Some(sent), Some(live)) = (&op, &sent_rv, &live_rv) {
                    prop_assert_eq!(sent, live, "a successful PUT carried the RV of the previous successful write");
                }
                seen.insert((client, kind), rv);
            }
            Err(error) => {
                prop_assert_eq!(server.resource_version(), revision_before, "a failed write changes nothing");
                match &op {
                    Op::Create { .. } => {
                        prop_assert!(live_rv.is_some() && error.reason == Reason::AlreadyExists, "{error:?}")
                    }
                    Op::Update { .. } => {
                        let precondition_failed = sent_rv.is_some() && sent_rv != live_rv;
                        let rv_missing = sent_rv.is_none() && kind == Kind::Lease;
                        prop_assert!(
                            (precondition_failed && error.is_conflict())
                                || (rv_missing && error.code == 422)
                                || (live_rv.is_none() && error.is_not_found()),
                            "unexpected {error:?}"
                        );
                    }
                    Op::MergePatch { .. } => {
                        prop_assert!(live_rv.is_none() && error.is_not_found(), "{error:?}")
                    }
                    Op::Apply { .. } => prop_assert!(error.is_apply_conflict(), "{error:?}"),
                }
            }
        }
        if let (Op::Apply { force, client, .. }, Some(conflicts)) = (&op, &expected_conflict) {
            let conflicted = matches!(&result, Err(e) if e.is_apply_conflict());
            prop_assert_eq!(
                conflicted,
                !conflicts.is_empty() && !force,
                "SSA conflicts exactly when another manager owns a field the apply changes"
            );
            if let Err(error) = &result {
                let reported: BTreeSet<String> = error.details.causes.iter().map(|c| c.field.clone()).collect();
                prop_assert_eq!(&reported, conflicts);
            } else if *force {
                let owners = ownership(&mut server, kind);
                for path in conflicts {
                    for ((manager, operation), paths) in &owners {
                        let is_me = *manager == format!("client-{client}") && operation == "Apply";
                        prop_assert_eq!(paths.contains(path), is_me, "force moves {} to the applier", path);
                    }
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn interleaved_writers_never_lose_updates_and_ssa_conflicts_are_exact(ops in proptest::collection::vec(op_strategy(), 1..40)) {
        run(ops)?;
    }
}
