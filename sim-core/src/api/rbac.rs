//! RBAC authorisation over the Roles and RoleBindings in the store (apiserver.md §6; sources:
//! `plugin/pkg/auth/authorizer/rbac/rbac.go`, `pkg/registry/rbac/validation/rule.go`).
//! Purely additive: a request is allowed when any rule reachable from a RoleBinding in the
//! request's namespace matches; `system:masters` is always allowed. ClusterRoles are not
//! modelled (no cluster-wide grants besides `system:masters`).

use super::types::{PolicyRule, Role, RoleBinding, User};

/// What one authorisation check asks.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    pub verb: &'a str,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub namespace: &'a str,
    /// `""` for requests without a name (create, list).
    pub name: &'a str,
}

/// `RuleAllows`: verb, group, resource and (if restricted) name all match.
pub fn rule_allows(rule: &PolicyRule, attributes: &Attributes) -> bool {
    let matches = |list: &[String], want: &str| list.iter().any(|item| item == "*" || item == want);
    matches(&rule.verbs, attributes.verb)
        && matches(&rule.api_groups, attributes.api_group)
        && matches(&rule.resources, attributes.resource)
        && (rule.resource_names.is_empty()
            || (!attributes.name.is_empty() && rule.resource_names.iter().any(|n| n == attributes.name)))
}

/// Whether a binding's subject names this user: `User` by name, `Group` by group,
/// `ServiceAccount` by name and namespace (empty namespace = the binding's own).
fn subject_matches(binding: &RoleBinding, user: &User) -> bool {
    binding.subjects.iter().any(|subject| match subject.kind.as_str() {
        "User" => subject.name == user.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let ns = if subject.namespace.is_empty() {
                binding.metadata.namespace.as_str()
            } else {
                subject.namespace.as_str()
            };
            // `system:serviceaccount:<ns>:<name>`, compared piecewise (no allocation per check).
            user.name
                .strip_prefix("system:serviceaccount:")
                .and_then(|rest| rest.strip_prefix(ns))
                .and_then(|rest| rest.strip_prefix(':'))
                == Some(subject.name.as_str())
        }
        _ => false,
    })
}

/// RBAC decision for `attributes`, given the RoleBindings of the request's namespace and a way to
/// find a Role of that namespace by name.
pub fn is_allowed<'a>(
    user: &User,
    attributes: &Attributes,
    bindings: impl IntoIterator<Item = &'a RoleBinding>,
    role_named: impl Fn(&str) -> Option<&'a Role>,
) -> bool {
    if user.is_system_master() {
        return true;
    }
    is_granted(attributes, bindings.into_iter().filter(|binding| subject_matches(binding, user)), role_named)
}

/// Whether any of these RoleBindings, each already known to name the user (by an index of
/// subjects, say), grants the request through its Role.
pub fn is_granted<'a>(
    attributes: &Attributes,
    bindings_naming_user: impl IntoIterator<Item = &'a RoleBinding>,
    role_named: impl Fn(&str) -> Option<&'a Role>,
) -> bool {
    bindings_naming_user.into_iter().filter(|binding| binding.role_ref.kind == "Role").any(|binding| {
        role_named(&binding.role_ref.name)
            .is_some_and(|role| role.rules.iter().any(|rule| rule_allows(rule, attributes)))
    })
}

/// The RBAC authorizer's reason for an allowed request (`rbac.go`'s `authorizingVisitor`):
/// `RBAC: allowed by RoleBinding "<binding>/<ns>" of Role "<role>" to <subject>`, the subject
/// `ServiceAccount "<name>/<ns>"`, `User "<name>"` or `Group "<name>"`; `None` if denied.
pub fn allowed_reason<'a>(
    user: &User,
    attributes: &Attributes,
    bindings: impl IntoIterator<Item = &'a RoleBinding>,
    role_named: impl Fn(&str) -> Option<&'a Role>,
) -> Option<String> {
    for binding in bindings.into_iter().filter(|b| b.role_ref.kind == "Role") {
        let Some(role) = role_named(&binding.role_ref.name) else { continue };
        if !role.rules.iter().any(|rule| rule_allows(rule, attributes)) {
            continue;
        }
        let Some(subject) = binding.subjects.iter().find(|s| {
            let one = RoleBinding { subjects: vec![(*s).clone()], ..binding.clone() };
            subject_matches(&one, user)
        }) else {
            continue;
        };
        let ns = &binding.metadata.namespace;
        let who = match subject.kind.as_str() {
            "ServiceAccount" => {
                let sa_ns = if subject.namespace.is_empty() { ns } else { &subject.namespace };
                format!("ServiceAccount \"{}/{sa_ns}\"", subject.name)
            }
            kind => format!("{kind} \"{}\"", subject.name),
        };
        return Some(format!(
            "RBAC: allowed by RoleBinding \"{}/{ns}\" of Role \"{}\" to {who}",
            binding.metadata.name, role.metadata.name
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], names: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            api_groups: vec!["coordination.k8s.io".into()],
            resources: vec!["leases".into()],
            resource_names: names.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn attrs<'a>(verb: &'a str, name: &'a str) -> Attributes<'a> {
        Attributes { verb, api_group: "coordination.k8s.io", resource: "leases", namespace: "ns", name }
    }

    #[test]
    fn resource_names_cannot_grant_create_without_a_name() {
        let r = rule(&["create", "get"], &["lock"]);
        assert!(!rule_allows(&r, &attrs("create", "")));
        assert!(rule_allows(&r, &attrs("get", "lock")));
        assert!(!rule_allows(&r, &attrs("get", "other")));
    }

    #[test]
    fn wildcards_match_any_verb_group_or_resource() {
        let r = PolicyRule {
            verbs: vec!["*".into()],
            api_groups: vec!["*".into()],
            resources: vec!["*".into()],
            resource_names: vec![],
        };
        assert!(rule_allows(&r, &attrs("delete", "x")));
    }
}
