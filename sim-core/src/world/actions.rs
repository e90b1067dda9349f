//! Scripted actions: requests a person or script makes at the API server directly (as `kubectl`
//! would), outside any node's link, and what they got back.

use super::result::ActionOutcome;
use crate::api::{ApiError, Body, FieldValidation, Kind, Object, Request, User, Verb};
use crate::model::{ActionOp, ScriptedAction};
use crate::time::Nanos;
use std::sync::Arc;

/// An action as something to do at the server.
pub(super) enum ActionRequest<'a> {
    /// `kubectl auth can-i`: an RBAC question, not a request.
    CanI {
        verb: &'a str,
        kind: Kind,
        namespace: &'a str,
        name: Option<&'a str>,
        user: &'a User,
    },
    Request(Request),
}

pub(super) fn request_of(action: &ScriptedAction) -> ActionRequest<'_> {
    let user = Arc::new(action.user.clone());
    let json_request = |verb: Verb, body: &serde_json::Value, field_manager: Option<String>, force: bool| -> Request {
        let kind = body.get("kind").and_then(|k| k.as_str()).and_then(Kind::from_kind_name).unwrap_or(Kind::ConfigMap);
        let meta = body.get("metadata");
        let field = |k: &str| meta.and_then(|m| m.get(k)).and_then(|v| v.as_str()).unwrap_or("").to_string();
        let namespace = if field("namespace").is_empty() { "default".to_string() } else { field("namespace") };
        Request {
            user: user.clone(),
            verb,
            kind,
            namespace: namespace.as_str().into(),
            name: field("name").as_str().into(),
            body: Body::Json(body.clone()),
            field_manager: field_manager.map(|m| m.as_str().into()),
            force,
            field_validation: FieldValidation::Ignore,
        }
    };
    let simple = |verb: Verb, kind: Kind, namespace: &str, name: &str, body: Body| Request {
        user: user.clone(),
        verb,
        kind,
        namespace: namespace.into(),
        name: name.into(),
        body,
        field_manager: None,
        force: false,
        field_validation: FieldValidation::Ignore,
    };
    ActionRequest::Request(match &action.op {
        ActionOp::CanI { verb, kind, namespace, name, user } => {
            return ActionRequest::CanI { verb, kind: *kind, namespace, name: name.as_deref(), user };
        }
        ActionOp::Get { kind, namespace, name } => simple(Verb::Get, *kind, namespace, name, Body::None),
        ActionOp::List { kind, namespace } => simple(Verb::List, *kind, namespace, "", Body::None),
        ActionOp::Delete { kind, namespace, name } => simple(Verb::Delete, *kind, namespace, name, Body::None),
        ActionOp::MergePatch { kind, namespace, name, patch } => Request {
            field_manager: Some("kubectl-patch".into()),
            ..simple(Verb::Patch, *kind, namespace, name, Body::Json(patch.clone()))
        },
        ActionOp::Create { body } => json_request(Verb::Create, body, Some("kubectl-create".into()), false),
        ActionOp::Update { body } => json_request(Verb::Update, body, Some("kubectl-replace".into()), false),
        ActionOp::Apply { body, field_manager, force } => {
            json_request(Verb::Apply, body, Some(field_manager.clone()), *force)
        }
    })
}

pub(super) fn can_i_outcome(action: &ScriptedAction, now: Nanos, allowed: bool) -> ActionOutcome {
    ActionOutcome {
        name: action.name.clone(),
        at: now,
        code: if allowed { 0 } else { 1 },
        reason: String::new(),
        message: if allowed { "yes".into() } else { "no".into() },
        kubectl_stderr: String::new(),
        object: serde_json::Value::Null,
        allowed: Some(allowed),
    }
}

pub(super) fn outcome(
    action: &ScriptedAction,
    now: Nanos,
    verb: Verb,
    result: &Result<Object, ApiError>,
) -> ActionOutcome {
    match result {
        Ok(object) => ActionOutcome {
            name: action.name.clone(),
            at: now,
            // POST answers 201 Created; everything else 200.
            code: if verb == Verb::Create { 201 } else { 200 },
            reason: String::new(),
            message: String::new(),
            kubectl_stderr: String::new(),
            object: crate::api::to_json(object),
            allowed: None,
        },
        Err(e) => ActionOutcome {
            name: action.name.clone(),
            at: now,
            code: e.code,
            reason: e.reason.as_str().to_string(),
            message: e.message.clone(),
            kubectl_stderr: if matches!(action.op, ActionOp::Apply { .. }) && e.code == 409 {
                crate::api::kubectl_apply_conflict_stderr(e)
            } else {
                e.kubectl_stderr()
            },
            object: serde_json::Value::Null,
            allowed: None,
        },
    }
}
