//! The seed lab "조정이 두 번 일어났다" (issue 6), run offline: its eight kubectl steps against
//! the simulated API server on a simulated clock, producing the files the lab asks for with its
//! names and line formats. kubectl steps act as the cluster admin; the RBAC check asks the
//! server's authorizer as the service account, as `kubectl auth can-i --as` does.
//!
//! Only times and uids differ from a real cluster: the clock starts at `epoch` and advances a
//! fixed amount per step, uids come from the server's counter.

mod runbook;

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use sim_core::api::{
    ApiError, ApiServer, Body, FieldValidation, Kind, MicroTime, Object, Request, User, Verb,
    kubectl_apply_conflict_stderr, kubectl_auth_can_i, kubectl_yaml, to_json,
};
use sim_core::time::{NANOS_PER_SEC, Nanos, UnixNanos, secs};

use crate::lease_tools::{
    AuditOptions, Liveness, audit_lines, expiry_report, parse_expectations, parse_lease_documents,
};

pub use runbook::{RunbookNumbers, runbook_numbers, runbook_text};

/// The lab's namespace and the names its steps use.
pub const NAMESPACE: &str = "op-leader";
pub const SERVICE_ACCOUNT: &str = "widget-operator";

/// Every file the lab writes, in step order (issue 6's list).
pub const LAB_FILES: [&str; 16] = [
    "lease-widget.yaml",
    "lease-initial.yaml",
    "renew-log.txt",
    "lease-stale.yaml",
    "lease-fresh.yaml",
    "leases.tsv",
    "expiry.txt",
    "takeover.txt",
    "microtime-error.txt",
    "rbac.yaml",
    "rbac-check.txt",
    "child-a.yaml",
    "child-b.yaml",
    "split-brain.txt",
    "lease-audit.txt",
    "runbook.txt",
];

/// The lab's output: `(file name, contents)` in [`LAB_FILES`] order, and the epoch it ran at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabArtifacts {
    pub epoch: UnixNanos,
    pub files: Vec<(String, String)>,
}

impl LabArtifacts {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.files.iter().find(|(file, _)| file == name).map(|(_, contents)| contents.as_str())
    }
}

/// The admin's terminal: a kubectl that talks to the simulated server, on a clock that only
/// moves when a step says so.
struct Terminal {
    server: ApiServer,
    epoch: UnixNanos,
    now: Nanos,
    admin: Arc<User>,
}

impl Terminal {
    fn new(epoch: UnixNanos) -> Self {
        Terminal { server: ApiServer::new(epoch), epoch, now: 0, admin: Arc::new(User::admin()) }
    }

    fn advance(&mut self, by: Nanos) {
        self.now += by;
    }

    /// `date -u +%Y-%m-%dT%H:%M:%S.%6NZ` on the lab machine, whose clock is the server's.
    fn micro_now(&self) -> MicroTime {
        MicroTime::from_unix_nanos(self.epoch + self.now as i64)
    }

    fn send(
        &mut self,
        verb: Verb,
        kind: Kind,
        name: &str,
        body: Body,
        field_manager: Option<&str>,
    ) -> Result<Object, Box<ApiError>> {
        let namespace = if kind.is_namespaced() { NAMESPACE } else { "" };
        let request = Request {
            user: Arc::clone(&self.admin),
            verb,
            kind,
            namespace: Arc::from(namespace),
            name: Arc::from(name),
            body,
            field_manager: field_manager.map(Arc::from),
            force: false,
            // kubectl's default, `--validate=strict`.
            field_validation: FieldValidation::Strict,
        };
        // Boxed: an ApiError is large and errors are the rare path here.
        self.server.handle(self.now, &request).map_err(Box::new)
    }

    /// `kubectl create -f FILE` for every document of a manifest.
    fn create_from_manifest(&mut self, file: &str, manifest: &str) -> Result<(), String> {
        for document in manifest_documents(file, manifest)? {
            let kind = document_kind(file, &document)?;
            self.send(Verb::Create, kind, "", Body::Json(document), None)
                .map_err(|e| lab_failure(file, &e.kubectl_stderr_with_file("creating", file)))?;
        }
        Ok(())
    }

    /// `kubectl apply --server-side --field-manager=M -f FILE`: (exit code, what it printed).
    fn apply_server_side(&mut self, file: &str, manifest: &str, manager: &str) -> Result<(i32, String), String> {
        let document = manifest_documents(file, manifest)?.pop().ok_or_else(|| format!("{file}: empty"))?;
        let kind = document_kind(file, &document)?;
        let name = document.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
        Ok(match self.send(Verb::Apply, kind, &name, Body::Json(document), Some(manager)) {
            Ok(_) => (0, sim_core::api::kubectl_serverside_applied_stdout(kind, &name)),
            Err(error) => (1, kubectl_apply_conflict_stderr(&error)),
        })
    }

    /// `kubectl patch KIND NAME --type=merge -p PATCH`: (exit code, what it printed).
    fn merge_patch(&mut self, kind: Kind, name: &str, patch: Value) -> (i32, String) {
        let before = self.get_json(kind, name).ok();
        match self.send(Verb::Patch, kind, name, Body::Json(patch), None) {
            Ok(object) => {
                let changed = before.as_ref() != Some(&to_json(&object));
                (0, sim_core::api::kubectl_patched_stdout(kind, name, changed))
            }
            Err(error) => (1, error.kubectl_stderr()),
        }
    }

    fn get_json(&mut self, kind: Kind, name: &str) -> Result<Value, String> {
        self.send(Verb::Get, kind, name, Body::None, None)
            .map(|object| to_json(&object))
            .map_err(|e| lab_failure(&format!("get {name}"), &e.kubectl_stderr()))
    }

    /// `kubectl -n op-leader get lease -o json`.
    fn list_leases_json(&mut self) -> Result<Value, String> {
        self.send(Verb::List, Kind::Lease, "", Body::None, None)
            .map(|object| to_json(&object))
            .map_err(|e| lab_failure("get lease", &e.kubectl_stderr()))
    }
}

/// A step that should have worked did not: the simulated server disagrees with the lab.
fn lab_failure(what: &str, stderr: &str) -> String {
    format!("lab step failed ({what}): {stderr}")
}

fn manifest_documents(file: &str, manifest: &str) -> Result<Vec<Value>, String> {
    serde_norway::Deserializer::from_str(manifest)
        .map(|document| Value::deserialize(document).map_err(|e| format!("{file}: {e}")))
        .filter(|document| !matches!(document, Ok(Value::Null)))
        .collect()
}

fn document_kind(file: &str, document: &Value) -> Result<Kind, String> {
    let kind_name = document.get("kind").and_then(Value::as_str).unwrap_or_default();
    Kind::from_kind_name(kind_name).ok_or_else(|| format!("{file}: kind {kind_name:?} is not served"))
}

fn with_newline(text: &str) -> String {
    if text.ends_with('\n') { text.to_string() } else { format!("{text}\n") }
}

/// Step 1 and 3's Lease manifests, written as a person would (fields in the order the lab names
/// them; times quoted so YAML keeps them strings).
fn lease_manifest(
    name: &str,
    holder: &str,
    duration: i64,
    acquire: Option<MicroTime>,
    renew: MicroTime,
    transitions: Option<i32>,
) -> String {
    let mut manifest = format!(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: {name}\n  namespace: {NAMESPACE}\nspec:\n  holderIdentity: {holder}\n  leaseDurationSeconds: {duration}\n"
    );
    if let Some(acquire) = acquire {
        manifest.push_str(&format!("  acquireTime: \"{}\"\n", acquire.to_rfc3339()));
    }
    manifest.push_str(&format!("  renewTime: \"{}\"\n", renew.to_rfc3339()));
    if let Some(transitions) = transitions {
        manifest.push_str(&format!("  leaseTransitions: {transitions}\n"));
    }
    manifest
}

const RBAC_MANIFEST: &str = "apiVersion: v1
kind: ServiceAccount
metadata:
  name: widget-operator
  namespace: op-leader
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: leader-election
  namespace: op-leader
rules:
- apiGroups:
  - coordination.k8s.io
  resources:
  - leases
  verbs:
  - get
  - create
  - update
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: leader-election
  namespace: op-leader
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: leader-election
subjects:
- kind: ServiceAccount
  name: widget-operator
  namespace: op-leader
";

fn child_manifest(phase: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: order-1\n  namespace: {NAMESPACE}\ndata:\n  phase: {phase}\n"
    )
}

fn spec_field(lease: &Value, field: &str) -> String {
    match lease.pointer(&format!("/spec/{field}")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Runs the eight steps. `epoch` is the wall-clock reading of the first step (`None`: the
/// machine's clock now). With a fixed epoch every artifact is the same byte for byte.
pub fn run_lab(epoch: Option<UnixNanos>) -> Result<LabArtifacts, String> {
    let epoch = epoch.unwrap_or_else(crate::lease_tools::machine_now);
    let mut term = Terminal::new(epoch);
    let mut files: Vec<(String, String)> = Vec::new();
    let mut emit = |name: &str, contents: String| files.push((name.to_string(), contents));

    // Step 1: namespace, the Lease manifest, create it, read it back as kubectl renders it.
    // `kubectl create -f` (not client-side `apply -f`): the latter adds a last-applied
    // annotation to the object, which the simulated server does not model.
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
    term.send(Verb::Create, Kind::Namespace, "", Body::Json(namespace), None)
        .map_err(|e| lab_failure("create namespace", &e.kubectl_stderr()))?;
    let start = term.micro_now();
    let widget = lease_manifest("widget-operator", "widget-operator-0", 15, Some(start), start, Some(0));
    term.advance(secs(1) / 5);
    term.create_from_manifest("lease-widget.yaml", &widget)?;
    let initial = term.get_json(Kind::Lease, "widget-operator")?;
    emit("lease-widget.yaml", widget);
    emit("lease-initial.yaml", kubectl_yaml(&initial));

    // Step 2: three renewals one second apart; only renewTime changes.
    let mut renew_log = String::new();
    for _ in 0..3 {
        term.advance(secs(1));
        let patch = json!({"spec": {"renewTime": term.micro_now()}});
        let (rc, output) = term.merge_patch(Kind::Lease, "widget-operator", patch);
        if rc != 0 {
            return Err(lab_failure("renew patch", &output));
        }
        let lease = term.get_json(Kind::Lease, "widget-operator")?;
        renew_log.push_str(&spec_field(&lease, "renewTime"));
        renew_log.push('\n');
    }
    emit("renew-log.txt", renew_log);

    // Step 3: a stale and a fresh Lease, the expectations, the naive expiry check.
    term.advance(secs(1));
    let now = term.micro_now();
    let ten_minutes_ago = MicroTime::from_unix_nanos(now.unix_nanos() - 600 * NANOS_PER_SEC as i64);
    let stale = lease_manifest("stale-operator", "stale-operator-0", 15, None, ten_minutes_ago, None);
    let fresh = lease_manifest("fresh-operator", "fresh-operator-0", 86_400, None, now, None);
    term.create_from_manifest("lease-stale.yaml", &stale)?;
    term.create_from_manifest("lease-fresh.yaml", &fresh)?;
    let expectations_tsv =
        format!("stale-operator\t{}\nfresh-operator\t{}\n", Liveness::Expired.as_str(), Liveness::Live.as_str());
    let expectations = parse_expectations("leases.tsv", &expectations_tsv)?;
    let listed = term.list_leases_json()?;
    let leases = parse_lease_documents("kubectl get lease -o json", &listed.to_string())?;
    let report = expiry_report(&leases, term.epoch + term.now as i64, Some(&expectations))?;
    emit("lease-stale.yaml", stale);
    emit("lease-fresh.yaml", fresh);
    emit("leases.tsv", expectations_tsv);
    emit("expiry.txt", report.lines.iter().map(|line| format!("{line}\n")).collect());

    // Step 4: another instance takes over, in one patch of four values.
    term.advance(secs(1));
    let before = term.get_json(Kind::Lease, "widget-operator")?;
    let taken_at = term.micro_now();
    let takeover = json!({"spec": {
        "holderIdentity": "widget-operator-1", "acquireTime": taken_at, "renewTime": taken_at, "leaseTransitions": 1
    }});
    let (rc, output) = term.merge_patch(Kind::Lease, "widget-operator", takeover);
    if rc != 0 {
        return Err(lab_failure("takeover patch", &output));
    }
    let after = term.get_json(Kind::Lease, "widget-operator")?;
    emit(
        "takeover.txt",
        format!(
            "before-holder={}\nafter-holder={}\nbefore-transitions={}\nafter-transitions={}\n",
            spec_field(&before, "holderIdentity"),
            spec_field(&after, "holderIdentity"),
            spec_field(&before, "leaseTransitions"),
            spec_field(&after, "leaseTransitions"),
        ),
    );

    // Step 5: a renewTime without the six fractional digits MicroTime requires.
    term.advance(secs(1));
    let (rc, output) =
        term.merge_patch(Kind::Lease, "widget-operator", json!({"spec": {"renewTime": "2026-01-01T00:00:00Z"}}));
    emit("microtime-error.txt", format!("patch-rc={rc}\n{}", with_newline(&output)));

    // Step 6: the least privilege leader election needs, then can-i as the service account.
    term.advance(secs(1));
    term.create_from_manifest("rbac.yaml", RBAC_MANIFEST)?;
    let service_account = User::service_account(NAMESPACE, SERVICE_ACCOUNT);
    let mut rbac_check = String::new();
    for verb in ["get", "create", "update", "delete"] {
        let allowed = term.server.can_i(&service_account, verb, Kind::Lease, NAMESPACE, None);
        rbac_check.push_str(&format!("{verb}={}\n", kubectl_auth_can_i(allowed).0));
    }
    emit("rbac.yaml", RBAC_MANIFEST.to_string());
    emit("rbac-check.txt", rbac_check);

    // Step 7: two instances that both believe they lead apply the same field.
    term.advance(secs(1));
    let child_a = child_manifest("A");
    let child_b = child_manifest("B");
    let (rc_a, output_a) = term.apply_server_side("child-a.yaml", &child_a, "widget-operator-0")?;
    if rc_a != 0 {
        return Err(lab_failure("apply child-a.yaml", &output_a));
    }
    term.advance(secs(1));
    let (rc_b, output_b) = term.apply_server_side("child-b.yaml", &child_b, "widget-operator-1")?;
    let order = term.get_json(Kind::ConfigMap, "order-1")?;
    let final_phase = order.pointer("/data/phase").and_then(Value::as_str).unwrap_or_default().to_string();
    emit("child-a.yaml", child_a);
    emit("child-b.yaml", child_b);
    emit("split-brain.txt", format!("apply-b-rc={rc_b}\n{}final-phase={final_phase}\n", with_newline(&output_b)));

    // Step 8: the audit of every Lease in the namespace, and the runbook.
    term.advance(secs(1));
    let listed = term.list_leases_json()?;
    let leases = parse_lease_documents("kubectl get lease -o json", &listed.to_string())?;
    let options = AuditOptions { flag: false, future_tolerance: secs(5), now: term.epoch + term.now as i64 };
    emit("lease-audit.txt", audit_lines(&leases, &options).iter().map(|line| format!("{line}\n")).collect());
    emit("runbook.txt", runbook_text(&runbook_numbers()?));

    debug_assert!(files.iter().map(|(name, _)| name.as_str()).eq(LAB_FILES));
    Ok(LabArtifacts { epoch, files })
}
