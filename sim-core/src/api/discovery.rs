//! What the API server says about itself: `/version`, discovery (legacy and aggregated), and
//! the OpenAPI answers kubectl needs, for the resources the fake server serves. Shapes from
//! kube-apiserver 1.32/1.33 (docs/sources/apiserver-wire.md, shared/reference/kubectl-wire.md
//! §2.2–2.3).

use serde_json::{Value, json};

use super::types::Kind;

/// One served resource, as discovery describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resource {
    pub group: &'static str,
    pub version: &'static str,
    pub name: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub verbs: &'static [&'static str],
    pub short_names: &'static [&'static str],
    /// The object kind it stores, if the store keeps it (the access review is not stored).
    pub stored: Option<Kind>,
}

const RW: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const NAMESPACE_VERBS: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];

/// Every resource served, in discovery order (by group, then name).
pub const RESOURCES: &[Resource] = &[
    Resource {
        group: "",
        version: "v1",
        name: "configmaps",
        singular: "configmap",
        kind: "ConfigMap",
        namespaced: true,
        verbs: RW,
        short_names: &["cm"],
        stored: Some(Kind::ConfigMap),
    },
    Resource {
        group: "",
        version: "v1",
        name: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        verbs: RW,
        short_names: &["ev"],
        stored: Some(Kind::Event),
    },
    Resource {
        group: "",
        version: "v1",
        name: "namespaces",
        singular: "namespace",
        kind: "Namespace",
        namespaced: false,
        verbs: NAMESPACE_VERBS,
        short_names: &["ns"],
        stored: Some(Kind::Namespace),
    },
    Resource {
        group: "",
        version: "v1",
        name: "serviceaccounts",
        singular: "serviceaccount",
        kind: "ServiceAccount",
        namespaced: true,
        verbs: RW,
        short_names: &["sa"],
        stored: Some(Kind::ServiceAccount),
    },
    Resource {
        group: "authorization.k8s.io",
        version: "v1",
        name: "selfsubjectaccessreviews",
        singular: "selfsubjectaccessreview",
        kind: "SelfSubjectAccessReview",
        namespaced: false,
        verbs: &["create"],
        short_names: &[],
        stored: None,
    },
    Resource {
        group: "coordination.k8s.io",
        version: "v1",
        name: "leases",
        singular: "lease",
        kind: "Lease",
        namespaced: true,
        verbs: RW,
        short_names: &[],
        stored: Some(Kind::Lease),
    },
    Resource {
        group: "coordination.k8s.io",
        version: "v1beta1",
        name: "leasecandidates",
        singular: "leasecandidate",
        kind: "LeaseCandidate",
        namespaced: true,
        verbs: RW,
        short_names: &[],
        stored: Some(Kind::LeaseCandidate),
    },
    Resource {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        name: "rolebindings",
        singular: "rolebinding",
        kind: "RoleBinding",
        namespaced: true,
        verbs: RW,
        short_names: &[],
        stored: Some(Kind::RoleBinding),
    },
    Resource {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        name: "roles",
        singular: "role",
        kind: "Role",
        namespaced: true,
        verbs: RW,
        short_names: &[],
        stored: Some(Kind::Role),
    },
];

/// The resource `name` of group-version `group`/`version`.
pub fn resource(group: &str, version: &str, name: &str) -> Option<&'static Resource> {
    RESOURCES.iter().find(|r| r.group == group && r.version == version && r.name == name)
}

/// The group-versions served, in discovery order (core first).
pub fn group_versions() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for r in RESOURCES {
        if !out.contains(&(r.group, r.version)) {
            out.push((r.group, r.version));
        }
    }
    out
}

/// `GET /version` for a server of minor version `minor` (1.`minor`.0): the dispatcher in front
/// of kubectl picks the client binary by it.
pub fn version(minor: u32) -> Value {
    json!({
        "major": "1",
        "minor": minor.to_string(),
        "emulationMajor": "1",
        "emulationMinor": minor.to_string(),
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": (minor - 1).to_string(),
        "gitVersion": format!("v1.{minor}.0"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// `GET /api` (legacy): the core group's versions.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

/// `GET /apis` (legacy): the named groups.
pub fn api_group_list() -> Value {
    let mut groups: Vec<Value> = Vec::new();
    for (group, _) in group_versions().into_iter().filter(|(g, _)| !g.is_empty()) {
        if groups.iter().any(|g| g["name"] == group) {
            continue;
        }
        let versions: Vec<Value> = group_versions()
            .into_iter()
            .filter(|(g, _)| *g == group)
            .map(|(g, v)| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
            .collect();
        let preferred = versions[0].clone();
        groups.push(json!({"name": group, "versions": versions, "preferredVersion": preferred}));
    }
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /api/v1` or `GET /apis/{group}/{version}`: the group-version's resources; `None` for a
/// group-version not served.
pub fn api_resource_list(group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .map(|r| {
            let mut entry = json!({
                "name": r.name,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": r.verbs,
            });
            if !r.short_names.is_empty() {
                entry["shortNames"] = json!(r.short_names);
            }
            entry
        })
        .collect();
    if resources.is_empty() {
        return None;
    }
    // `/api/v1` carries no apiVersion; `/apis/G/V` does (docs/sources/apiserver-wire.md §2).
    Some(if group.is_empty() {
        json!({"kind": "APIResourceList", "groupVersion": version, "resources": resources})
    } else {
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group}/{version}"), "resources": resources})
    })
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2`, `APIGroupDiscoveryList`): for `/api` the
/// core group alone (`core = true`), for `/apis` the named groups. Served only when the
/// request's Accept header asks for v2 (kubectl 1.27 asks for v2beta1 only, and a v2 answer
/// breaks it).
pub fn aggregated(core: bool) -> Value {
    let mut items: Vec<Value> = Vec::new();
    let mut groups: Vec<&str> = Vec::new();
    for (group, _) in group_versions() {
        if (group.is_empty()) == core && !groups.contains(&group) {
            groups.push(group);
        }
    }
    for group in groups {
        let versions: Vec<Value> = group_versions()
            .into_iter()
            .filter(|(g, _)| *g == group)
            .map(|(g, v)| {
                let resources: Vec<Value> = RESOURCES
                    .iter()
                    .filter(|r| r.group == g && r.version == v)
                    .map(|r| {
                        let mut entry = json!({
                            "resource": r.name,
                            "responseKind": {"group": "", "version": "", "kind": r.kind},
                            "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                            "singularResource": r.singular,
                            "verbs": r.verbs,
                        });
                        if !r.short_names.is_empty() {
                            entry["shortNames"] = json!(r.short_names);
                        }
                        entry
                    })
                    .collect();
                json!({"version": v, "resources": resources, "freshness": "Current"})
            })
            .collect();
        items.push(json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": versions}));
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_lists_every_served_resource_once() {
        assert_eq!(api_resource_list("coordination.k8s.io", "v1").unwrap()["resources"][0]["name"], "leases");
        assert!(api_resource_list("apps", "v1").is_none());
        let groups = api_group_list();
        let names: Vec<&str> =
            groups["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["authorization.k8s.io", "coordination.k8s.io", "rbac.authorization.k8s.io"]);
        assert_eq!(aggregated(true)["items"][0]["versions"][0]["resources"].as_array().unwrap().len(), 4);
        for kind in Kind::ALL {
            assert!(RESOURCES.iter().any(|r| r.stored == Some(kind)), "{kind:?}");
        }
    }
}
