//! Who may do what, asked outright: a SelfSubjectAccessReview (what `kubectl auth can-i` sends)
//! and impersonation (`Impersonate-User`, what `--as` sends), as the API server answers them
//! (docs/sources/apiserver-wire.md).

use std::sync::Arc;

use serde_json::{Value, json};

use super::errors::ApiError;
use super::object::Stored;
use super::rbac::{self, Attributes};
use super::server::ApiServer;
use super::types::{Kind, User};

/// `spec.resourceAttributes` of an access review.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    pub namespace: String,
    pub verb: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
}

impl ResourceAttributes {
    /// From a review's JSON `spec.resourceAttributes`.
    pub fn from_json(spec: &Value) -> ResourceAttributes {
        let a = spec.pointer("/resourceAttributes").cloned().unwrap_or(Value::Null);
        let field = |k: &str| a.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        ResourceAttributes {
            namespace: field("namespace"),
            verb: field("verb"),
            group: field("group"),
            version: field("version"),
            resource: field("resource"),
            subresource: field("subresource"),
            name: field("name"),
        }
    }

    fn to_json(&self) -> Value {
        let mut map = serde_json::Map::new();
        for (k, v) in [
            ("namespace", &self.namespace),
            ("verb", &self.verb),
            ("group", &self.group),
            ("version", &self.version),
            ("resource", &self.resource),
            ("subresource", &self.subresource),
            ("name", &self.name),
        ] {
            if !v.is_empty() {
                map.insert(k.to_string(), Value::String(v.clone()));
            }
        }
        Value::Object(map)
    }
}

impl ApiServer {
    /// The authorizer's decision for `user` and its reason (`""` when denied or when
    /// `system:masters` allows: the privileged-group authorizer gives none).
    pub fn authorize(&self, user: &User, attributes: &ResourceAttributes) -> (bool, String) {
        if user.is_system_master() {
            return (true, String::new());
        }
        let resource = if attributes.subresource.is_empty() {
            attributes.resource.clone()
        } else {
            format!("{}/{}", attributes.resource, attributes.subresource)
        };
        let attrs = Attributes {
            verb: &attributes.verb,
            api_group: &attributes.group,
            resource: &resource,
            namespace: &attributes.namespace,
            name: &attributes.name,
        };
        let ns = attributes.namespace.as_str();
        let role_named = |role: &str| match &self.record(Kind::Role, ns, role)?.object {
            Stored::Role(r) => Some(r.as_ref()),
            _ => None,
        };
        let bindings = self
            .store
            .get(&Kind::RoleBinding)
            .and_then(|by_ns| by_ns.get(ns))
            .into_iter()
            .flat_map(|by_name| by_name.values())
            .filter_map(|&slot| match &self.record_at(slot).object {
                Stored::RoleBinding(b) => Some(b.as_ref()),
                _ => None,
            });
        match rbac::allowed_reason(user, &attrs, bindings, role_named) {
            Some(reason) => (true, reason),
            None => (false, String::new()),
        }
    }

    /// A SelfSubjectAccessReview created by `user`: the review with its `status` (what the
    /// server answers with 201). Any authenticated user may create one (`system:basic-user`).
    pub fn self_subject_access_review(&self, user: &User, body: &Value) -> Value {
        let attributes = ResourceAttributes::from_json(body.get("spec").unwrap_or(&Value::Null));
        let (allowed, reason) = self.authorize(user, &attributes);
        let mut status = serde_json::Map::new();
        status.insert("allowed".into(), Value::Bool(allowed));
        if !reason.is_empty() {
            status.insert("reason".into(), Value::String(reason));
        }
        json!({
            "kind": "SelfSubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": null},
            "spec": {"resourceAttributes": attributes.to_json()},
            "status": Value::Object(status),
        })
    }

    /// The user `caller` acts as with `Impersonate-User: target` (and `Impersonate-Group`s):
    /// allowed for `system:masters` only (no ClusterRole grants `impersonate` here). A
    /// ServiceAccount's user name gets its groups, as the apiserver's impersonation filter
    /// adds them.
    pub fn impersonate(&self, caller: &User, target: &str, groups: &[String]) -> Result<Arc<User>, ApiError> {
        let service_account = target.strip_prefix("system:serviceaccount:").and_then(|rest| rest.split_once(':'));
        if !caller.is_system_master() {
            return Err(match service_account {
                Some((ns, name)) => ApiError::forbidden(Kind::ServiceAccount, name, &caller.name, "impersonate", ns),
                None => ApiError::forbidden_impersonation(&caller.name, target),
            });
        }
        let mut user = match service_account {
            Some((ns, name)) => User::service_account(ns, name),
            None => User::named(target),
        };
        if !groups.is_empty() {
            // The listed groups are the user's, and system:authenticated with them.
            let mut listed = groups.to_vec();
            if !groups.iter().any(|g| g == "system:authenticated" || g == "system:unauthenticated") {
                listed.push("system:authenticated".into());
            }
            user.groups = listed.into();
        }
        Ok(Arc::new(user))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Body, FieldValidation, Request, Verb};

    fn server_with_rbac() -> ApiServer {
        let mut s = ApiServer::new(0);
        let admin = Arc::new(User::admin());
        let create = |s: &mut ApiServer, kind: Kind, body: Value| {
            let req = Request {
                user: admin.clone(),
                verb: Verb::Create,
                kind,
                namespace: "op-leader".into(),
                name: "".into(),
                body: Body::Json(body),
                field_manager: None,
                force: false,
                field_validation: FieldValidation::Ignore,
            };
            s.handle(0, &req).expect("created");
        };
        let ns = Request {
            user: admin.clone(),
            verb: Verb::Create,
            kind: Kind::Namespace,
            namespace: "".into(),
            name: "".into(),
            body: Body::Json(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "op-leader"}})),
            field_manager: None,
            force: false,
            field_validation: FieldValidation::Ignore,
        };
        s.handle(0, &ns).expect("namespace");
        create(
            &mut s,
            Kind::Role,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "leader-election", "namespace": "op-leader"},
                "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}]}),
        );
        create(
            &mut s,
            Kind::RoleBinding,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "leader-election", "namespace": "op-leader"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "leader-election"},
                "subjects": [{"kind": "ServiceAccount", "name": "widget-operator", "namespace": "op-leader"}]}),
        );
        s
    }

    #[test]
    fn an_access_review_answers_for_the_impersonated_service_account_with_the_rbac_reason() {
        let s = server_with_rbac();
        let sa = s.impersonate(&User::admin(), "system:serviceaccount:op-leader:widget-operator", &[]).unwrap();
        let review = |verb: &str| {
            s.self_subject_access_review(
                &sa,
                &json!({"spec": {"resourceAttributes": {"namespace": "op-leader", "verb": verb,
                    "group": "coordination.k8s.io", "resource": "leases"}}}),
            )
        };
        let get = review("get");
        assert_eq!(get["status"]["allowed"], true);
        assert_eq!(
            get["status"]["reason"],
            "RBAC: allowed by RoleBinding \"leader-election/op-leader\" of Role \"leader-election\" to ServiceAccount \"widget-operator/op-leader\""
        );
        let delete = review("delete");
        assert_eq!(delete["status"]["allowed"], false);
        assert!(delete["status"].get("reason").is_none());
    }

    #[test]
    fn only_system_masters_may_impersonate() {
        let s = server_with_rbac();
        let sa = User::service_account("op-leader", "widget-operator");
        let e = s.impersonate(&sa, "kubernetes-admin", &[]).unwrap_err();
        assert_eq!(e.code, 403);
        assert!(e.message.contains("cannot impersonate resource \"users\""), "{}", e.message);
        let e = s.impersonate(&sa, "system:serviceaccount:op-leader:other", &[]).unwrap_err();
        assert_eq!(
            e.message,
            "serviceaccounts \"other\" is forbidden: User \"system:serviceaccount:op-leader:widget-operator\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"op-leader\""
        );
    }
}
