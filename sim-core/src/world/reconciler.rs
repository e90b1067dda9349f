//! Reconcilers: the leader's work on its child object, and the evidence a split brain leaves
//! (conflicts, writes while the Lease names another, overwrites of another leader's value).
//!
//! A reconciler runs while its node acts as leader: every period it writes (or, fenced, first
//! checks the Lease and reads the child). It never touches the network or the server itself:
//! it says what to send, and the loop tells it what came back.

use super::network::{Payload, Response};
use crate::api::{Body, FieldValidation, Kind, LeaseOp, LeaseRef, Object, Request, User, UserId, Verb};
use crate::model::{FieldManager, ReconcileMode, ReconcilerSpec};
use crate::sym::Sym;
use std::sync::Arc;

/// The reconciler's request in flight and what it was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    Write,
    LeaseCheck,
    ChildGet,
}

#[derive(Debug)]
pub(super) struct Reconciler {
    /// Fixed for the run ([`Reconciler::spec`]): `body` is built from it.
    spec: ReconcilerSpec,
    /// The child object's name, shared with trace events.
    pub(super) object_name: Arc<str>,
    pub(super) active: bool,
    pub(super) generation: u32,
    pub(super) in_flight: Option<(u64, Step)>,
    /// leaseTransitions when this node started leading (the fencing token).
    pub(super) token: Option<i32>,
    /// When the request in flight was sent (for the history).
    pub(super) sent_at: crate::time::Nanos,
    /// The child's resourceVersion the last read returned: what a read-modify-write is based on.
    pub(super) read_rv: Option<u64>,
    /// The body every write starts from (the child with the field set), built once: a write
    /// without a resourceVersion or fencing token (an apply, a create, an unguarded update)
    /// sends it shared; the others copy it and add theirs.
    body: Arc<serde_json::Value>,
}

/// What the reconciler wants sent next.
pub(super) struct Send {
    pub(super) step: Step,
    pub(super) payload: Payload,
    pub(super) verb: Verb,
    pub(super) kind: Kind,
}

/// What the reconciler does with an answer.
pub(super) enum Next {
    /// Nothing more this round: wait a period.
    Rearm,
    /// The Lease no longer names this node with its token (holder as the Lease had it).
    Fenced(Sym),
    Send(Send),
}

impl Reconciler {
    pub(super) fn spec(&self) -> &ReconcilerSpec {
        &self.spec
    }

    pub(super) fn new(spec: ReconcilerSpec) -> Reconciler {
        Reconciler {
            object_name: spec.object.as_str().into(),
            body: Arc::new(body_template(&spec)),
            spec,
            active: false,
            generation: 0,
            in_flight: None,
            token: None,
            sent_at: 0,
            read_rv: None,
        }
    }

    /// Starts (on acquiring) with the fencing token the Lease had then.
    pub(super) fn activate(&mut self, token: Option<i32>) {
        self.active = true;
        self.generation = self.generation.wrapping_add(1);
        self.token = token;
    }

    /// Stops; a tick or answer still on its way finds a newer generation and does nothing.
    pub(super) fn deactivate(&mut self) {
        self.active = false;
        self.generation = self.generation.wrapping_add(1);
    }

    /// The first request of a round, if the reconciler is active and idle.
    pub(super) fn round(&self, identity: &str, user: &Arc<User>, user_id: UserId, lease: LeaseRef) -> Option<Send> {
        if !self.active || self.in_flight.is_some() {
            return None;
        }
        Some(match self.spec.mode {
            ReconcileMode::FencedUpdate => Send {
                step: Step::LeaseCheck,
                payload: Payload::Lease { lease, user: user_id, op: LeaseOp::Get },
                verb: Verb::Get,
                kind: Kind::Lease,
            },
            ReconcileMode::Update => Send {
                step: Step::ChildGet,
                payload: Payload::Generic(Box::new(self.request(user, Verb::Get, Body::None, None, false))),
                verb: Verb::Get,
                kind: Kind::ConfigMap,
            },
            ReconcileMode::Apply { force } => self.child_write(identity, user, Verb::Apply, None, force),
            ReconcileMode::CreateIfAbsent => self.child_write(identity, user, Verb::Create, None, false),
        })
    }

    /// What follows an answer to the request `step` (already taken off `in_flight`).
    pub(super) fn after(&mut self, step: Step, response: Response, me: Sym, identity: &str, user: &Arc<User>) -> Next {
        match (step, response) {
            (Step::LeaseCheck, Response::Lease(Ok(lease))) => {
                let holder = lease.spec.holder_identity.unwrap_or(Sym::EMPTY);
                if holder != me || lease.spec.lease_transitions != self.token {
                    return Next::Fenced(holder);
                }
                Next::Send(Send {
                    step: Step::ChildGet,
                    payload: Payload::Generic(Box::new(self.request(user, Verb::Get, Body::None, None, false))),
                    verb: Verb::Get,
                    kind: Kind::ConfigMap,
                })
            }
            (Step::ChildGet, Response::Object(result)) => {
                let send = match result {
                    Ok(Object::ConfigMap(cm)) => {
                        self.read_rv = cm.metadata.resource_version.parse().ok();
                        // `update` sends no precondition: the server takes it whatever happened
                        // since the read (ConfigMaps allow unconditional updates).
                        let precondition = (self.spec.mode == ReconcileMode::FencedUpdate)
                            .then_some(cm.metadata.resource_version.as_str());
                        self.child_write(identity, user, Verb::Update, precondition, false)
                    }
                    Err(404) => {
                        self.read_rv = None;
                        self.child_write(identity, user, Verb::Create, None, false)
                    }
                    _ => return Next::Rearm,
                };
                Next::Send(Send { step: Step::Write, ..send })
            }
            _ => Next::Rearm,
        }
    }

    /// Whether a write of this mode is a read-modify-write (based on `read_rv`).
    pub(super) fn reads_before_writing(&self) -> bool {
        self.spec.mode.reads_before_writing()
    }

    fn manager(&self, identity: &str) -> String {
        match &self.spec.field_manager {
            FieldManager::Identity => identity.to_string(),
            FieldManager::Shared(name) => name.clone(),
        }
    }

    /// A write of the child object under the reconciler's field manager.
    fn child_write(
        &self,
        identity: &str,
        user: &Arc<User>,
        verb: Verb,
        resource_version: Option<&str>,
        force: bool,
    ) -> Send {
        let body = self.child_body(resource_version);
        let request = self.request(user, verb, body, Some(self.manager(identity)), force);
        Send { step: Step::Write, payload: Payload::Generic(Box::new(request)), verb, kind: Kind::ConfigMap }
    }

    /// The template itself, shared, when the write adds nothing to it; else a copy with the
    /// resourceVersion and the fencing token added.
    fn child_body(&self, resource_version: Option<&str>) -> Body {
        let fenced = self.spec.mode == ReconcileMode::FencedUpdate;
        if resource_version.is_none() && !fenced {
            return Body::SharedJson(Arc::clone(&self.body));
        }
        let mut body = serde_json::Value::clone(&self.body);
        if let Some(rv) = resource_version {
            body["metadata"]["resourceVersion"] = serde_json::json!(rv);
        }
        if fenced {
            body["data"]["fencingToken"] = serde_json::json!(self.token.unwrap_or(0).to_string());
        }
        Body::Json(body)
    }

    /// A GET of the child (a burst's read).
    pub(super) fn read_request(&self, user: &Arc<User>) -> Request {
        self.request(user, Verb::Get, Body::None, None, false)
    }

    fn request(&self, user: &Arc<User>, verb: Verb, body: Body, field_manager: Option<String>, force: bool) -> Request {
        Request {
            user: user.clone(),
            verb,
            kind: Kind::ConfigMap,
            namespace: self.spec.namespace.as_str().into(),
            name: self.spec.object.as_str().into(),
            body,
            field_manager: field_manager.map(|m| m.into()),
            force,
            field_validation: FieldValidation::Ignore,
        }
    }
}

/// The child's body without a resourceVersion or fencing token: `{apiVersion, kind, metadata:
/// {name, namespace}, data: {field: value}}`, keys in that order (a write adds
/// `metadata.resourceVersion` and `data.fencingToken` after them).
fn body_template(spec: &ReconcilerSpec) -> serde_json::Value {
    let metadata = serde_json::json!({ "name": spec.object, "namespace": spec.namespace });
    let mut data = serde_json::Map::new();
    data.insert(spec.field.clone(), serde_json::json!(spec.value));
    serde_json::json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A write's body built from the template is the body built whole, key order included,
    /// for every mode, with and without a resourceVersion and a fencing token (and a field
    /// that is itself named `fencingToken`).
    #[test]
    fn a_write_body_from_the_template_is_the_body_built_whole() {
        let whole = |spec: &ReconcilerSpec, rv: Option<&str>, token: Option<i32>| {
            let mut metadata = json!({ "name": spec.object, "namespace": spec.namespace });
            if let Some(rv) = rv {
                metadata["resourceVersion"] = json!(rv);
            }
            let mut data = serde_json::Map::new();
            data.insert(spec.field.clone(), json!(spec.value));
            if spec.mode == ReconcileMode::FencedUpdate {
                data.insert("fencingToken".into(), json!(token.unwrap_or(0).to_string()));
            }
            json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data })
        };
        let modes = [
            ReconcileMode::Apply { force: false },
            ReconcileMode::Apply { force: true },
            ReconcileMode::CreateIfAbsent,
            ReconcileMode::FencedUpdate,
            ReconcileMode::Update,
        ];
        for mode in &modes {
            for field in ["phase", "fencingToken"] {
                let spec = ReconcilerSpec {
                    period: 1_000_000_000,
                    mode: mode.clone(),
                    namespace: "op".into(),
                    object: "order-1".into(),
                    field: field.into(),
                    value: "A".into(),
                    field_manager: FieldManager::Identity,
                    timeout: 1_000_000_000,
                    burst: None,
                };
                let mut r = Reconciler::new(spec.clone());
                // What an apply, a create or an unguarded update sends shared.
                if *mode != ReconcileMode::FencedUpdate {
                    assert_eq!(r.body.to_string(), whole(&spec, None, None).to_string());
                    assert!(matches!(r.child_body(None), Body::SharedJson(b) if Arc::ptr_eq(&b, &r.body)));
                }
                for token in [None, Some(7)] {
                    r.token = token;
                    for rv in [None, Some("42")] {
                        let built = r.child_body(rv).json().cloned().expect("a JSON body");
                        let expected = whole(&spec, rv, token);
                        assert_eq!(built, expected);
                        assert_eq!(built.to_string(), expected.to_string(), "key order, {mode:?} {field} {rv:?}");
                    }
                }
            }
        }
    }
}
