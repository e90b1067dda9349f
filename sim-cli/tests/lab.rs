//! The seed lab run offline (issue 6) and the `expiry` / `audit` tools, each test named after
//! what it shows. Expected server and kubectl texts are the ones of
//! `shared/vectors/api-texts.json`, with its placeholders filled in.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sim_cli::lab::{LAB_FILES, LabArtifacts, run_lab};
use sim_cli::lease_tools::{machine_now, parse_lease_documents, parse_rfc3339};
use sim_core::api::MicroTime;

const EPOCH: &str = "2026-03-01T09:00:00.123456Z";
/// The `now` the fixtures are judged against: 10 s after their widget/fresh renewTime.
const FIXTURE_NOW: &str = "2026-01-01T00:00:10Z";

/// api-texts.json `server_side_apply.kubectl_stderr`, MANAGER = widget-operator-0, PATH = .data.phase.
const APPLY_CONFLICT_STDERR: &str =
    "error: Apply failed with 1 conflict: conflict with \"widget-operator-0\": .data.phase
Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the `--force-conflicts` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts";
/// api-texts.json, the merge-patch MicroTime case: kubectl_stderr_prefix and message_suffix.
const MICROTIME_STDERR_PREFIX: &str = "The request is invalid: patch: Invalid value: \"";
const MICROTIME_SUFFIX: &str = "\": parsing time \"2026-01-01T00:00:00Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\"";

fn lab() -> LabArtifacts {
    run_lab(Some(parse_rfc3339(EPOCH).unwrap())).expect("the lab runs")
}

fn file<'a>(artifacts: &'a LabArtifacts, name: &str) -> &'a str {
    artifacts.get(name).unwrap_or_else(|| panic!("no {name}"))
}

fn leasesim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim")).args(args).output().expect("leasesim runs")
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).display().to_string()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[test]
fn the_lab_writes_exactly_the_issue_files_in_step_order() {
    let artifacts = lab();
    let names: Vec<&str> = artifacts.files.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, LAB_FILES);
    assert_eq!(names.len(), 16);
}

#[test]
fn lease_initial_is_kubectl_get_yaml_of_what_lease_widget_created() {
    let artifacts = lab();
    let widget = file(&artifacts, "lease-widget.yaml");
    assert!(widget.contains("holderIdentity: widget-operator-0\n  leaseDurationSeconds: 15\n"));
    assert!(widget.contains("  acquireTime: \"2026-03-01T09:00:00.123456Z\"\n  renewTime: \"2026-03-01T09:00:00.123456Z\"\n  leaseTransitions: 0\n"));
    let initial = file(&artifacts, "lease-initial.yaml");
    // Keys sorted at every level, times quoted, resourceVersion a quoted string, no managedFields.
    assert!(initial.starts_with("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  creationTimestamp: \"2026-03-01T09:00:00Z\"\n  name: widget-operator\n  namespace: op-leader\n  resourceVersion: \""));
    assert!(initial.ends_with(
        "spec:
  acquireTime: \"2026-03-01T09:00:00.123456Z\"
  holderIdentity: widget-operator-0
  leaseDurationSeconds: 15
  leaseTransitions: 0
  renewTime: \"2026-03-01T09:00:00.123456Z\"
"
    ));
    assert!(initial.contains("\n  uid: "));
    assert!(!initial.contains("managedFields"));
}

#[test]
fn renewals_are_three_microtimes_one_second_apart() {
    let artifacts = lab();
    let times: Vec<MicroTime> =
        file(&artifacts, "renew-log.txt").lines().map(|l| MicroTime::parse(l).unwrap()).collect();
    assert_eq!(times.len(), 3);
    for pair in times.windows(2) {
        assert_eq!(pair[1].unix_micros() - pair[0].unix_micros(), 1_000_000);
    }
    assert!(times[0] > MicroTime::parse("2026-03-01T09:00:00.123456Z").unwrap());
}

#[test]
fn stale_and_fresh_leases_classify_as_expected_and_expiry_prints_ok_lines() {
    let artifacts = lab();
    assert!(
        file(&artifacts, "lease-stale.yaml").contains("leaseDurationSeconds: 15\n  renewTime: \"2026-03-01T08:50:")
    );
    assert!(file(&artifacts, "lease-fresh.yaml").contains("leaseDurationSeconds: 86400\n"));
    assert_eq!(file(&artifacts, "leases.tsv"), "stale-operator\tEXPIRED\nfresh-operator\tLIVE\n");
    assert_eq!(file(&artifacts, "expiry.txt"), "OK stale-operator EXPIRED\nOK fresh-operator LIVE\n");
}

#[test]
fn takeover_changes_holder_and_transitions_and_renewals_did_not() {
    assert_eq!(
        file(&lab(), "takeover.txt"),
        "before-holder=widget-operator-0\nafter-holder=widget-operator-1\nbefore-transitions=0\nafter-transitions=1\n"
    );
}

#[test]
fn a_seconds_renew_time_is_refused_with_the_servers_sentence_as_kubectl_prints_it() {
    let artifacts = lab();
    let text = file(&artifacts, "microtime-error.txt");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0], "patch-rc=1");
    assert!(lines[1].starts_with(MICROTIME_STDERR_PREFIX), "{}", lines[1]);
    assert!(lines[1].ends_with(MICROTIME_SUFFIX), "{}", lines[1]);
    // The embedded object is the patched Lease: spec keys sorted, the bad value in place.
    assert!(lines[1].contains(r#"\"spec\":{\"acquireTime\":"#));
    assert!(lines[1].contains(r#"\"renewTime\":\"2026-01-01T00:00:00Z\"}}"#));
    // Nothing was stored: the audit still shows the takeover's values.
    assert!(file(&artifacts, "lease-audit.txt").contains("widget-operator holder=widget-operator-1 transitions=1"));
}

#[test]
fn rbac_gives_get_create_update_and_not_delete() {
    let artifacts = lab();
    assert_eq!(file(&artifacts, "rbac-check.txt"), "get=yes\ncreate=yes\nupdate=yes\ndelete=no\n");
    let rbac = file(&artifacts, "rbac.yaml");
    for kind in ["kind: ServiceAccount", "kind: Role\n", "kind: RoleBinding"] {
        assert!(rbac.contains(kind), "{kind}");
    }
    assert!(rbac.contains("verbs:\n  - get\n  - create\n  - update\n"));
}

#[test]
fn the_second_leaders_apply_meets_the_first_ones_field_manager_and_phase_stays_a() {
    let artifacts = lab();
    assert!(file(&artifacts, "child-a.yaml").ends_with("data:\n  phase: A\n"));
    assert!(file(&artifacts, "child-b.yaml").ends_with("data:\n  phase: B\n"));
    assert_eq!(file(&artifacts, "split-brain.txt"), format!("apply-b-rc=1\n{APPLY_CONFLICT_STDERR}\nfinal-phase=A\n"));
}

#[test]
fn the_audit_lists_every_lease_sorted_without_times() {
    assert_eq!(
        file(&lab(), "lease-audit.txt"),
        "fresh-operator holder=fresh-operator-0 transitions=0 duration=86400
stale-operator holder=stale-operator-0 transitions=0 duration=15
widget-operator holder=widget-operator-1 transitions=1 duration=15
"
    );
}

/// The number after `label` up to " s", e.g. the dual-leader seconds of one run.
fn seconds_after(text: &str, label: &str) -> f64 {
    let at = text.find(label).unwrap_or_else(|| panic!("no {label:?} in the runbook")) + label.len();
    text[at..].split(" s").next().unwrap().trim().parse().unwrap()
}

#[test]
fn the_runbook_names_the_three_flags_and_quotes_the_simulators_dual_leader_seconds() {
    let artifacts = lab();
    let runbook = file(&artifacts, "runbook.txt");
    for flag in ["--leader-elect-lease-duration", "--leader-elect-renew-deadline", "--leader-elect-retry-period"] {
        assert!(runbook.contains(flag), "{flag}");
    }
    assert!(runbook.contains("renew-deadline < lease-duration"));
    assert!(runbook.contains("clock skew") && runbook.contains("API server latency"));
    let safe = seconds_after(runbook, "renew-deadline 10s: dual-leader time");
    let unsafe_ = seconds_after(runbook, "renew-deadline 20s (client-go would refuse it): dual-leader time");
    assert_eq!(safe, 0.0);
    assert!(unsafe_ > 1.0, "{unsafe_}");
}

#[test]
fn a_fixed_epoch_gives_byte_identical_artifacts_and_another_epoch_changes_only_times() {
    let a = lab();
    assert_eq!(a, lab());
    let b = run_lab(Some(parse_rfc3339("2027-06-15T12:00:00Z").unwrap())).unwrap();
    for name in [
        "leases.tsv",
        "expiry.txt",
        "takeover.txt",
        "rbac.yaml",
        "rbac-check.txt",
        "split-brain.txt",
        "lease-audit.txt",
        "runbook.txt",
    ] {
        assert_eq!(a.get(name), b.get(name), "{name}");
    }
    assert_ne!(a.get("renew-log.txt"), b.get("renew-log.txt"));
}

#[test]
fn without_an_epoch_the_lab_starts_at_the_machine_clock() {
    let before = machine_now();
    let artifacts = run_lab(None).unwrap();
    assert!(artifacts.epoch >= before && artifacts.epoch <= machine_now());
    let lease = &parse_lease_documents("lease-initial.yaml", file(&artifacts, "lease-initial.yaml")).unwrap()[0];
    assert_eq!(lease.renew_time, MicroTime::from_unix_nanos(artifacts.epoch));
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn read_dir_sorted(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut entries: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
        })
        .collect();
    entries.sort();
    entries
}

#[test]
fn the_lab_command_writes_the_same_bytes_twice_with_a_fixed_epoch() {
    let tmp = temp_dir();
    let (one, two): (PathBuf, PathBuf) = (tmp.path().join("one"), tmp.path().join("two"));
    for out in [&one, &two] {
        let output = leasesim(&["lab", "--out", out.to_str().unwrap(), "--epoch", EPOCH]);
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let mut files = read_dir_sorted(&one);
    // The lab's sixteen files, and the marker that says the folder is leasesim's output.
    let marker = files.iter().position(|(name, _)| name == sim_cli::output::MARKER).expect("the output marker");
    files.remove(marker);
    assert_eq!(files.len(), 16);
    let mut files_two = read_dir_sorted(&two);
    files_two.retain(|(name, _)| name != sim_cli::output::MARKER);
    assert_eq!(files, files_two);
    let from_library = lab();
    assert_eq!(std::fs::read_to_string(one.join("split-brain.txt")).unwrap(), file(&from_library, "split-brain.txt"));
}

#[test]
fn a_bad_epoch_is_refused_and_nothing_is_written() {
    let tmp = temp_dir();
    let out = tmp.path().join("out");
    let output = leasesim(&["lab", "--out", out.to_str().unwrap(), "--epoch", "yesterday"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--epoch") && stderr(&output).contains("\"yesterday\""));
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "no staging directory left behind");
}

#[test]
fn expiry_classifies_a_list_against_now_and_says_it_is_the_naive_rule() {
    let output = leasesim(&["expiry", &fixture("op-leader-list.yaml"), "--now", FIXTURE_NOW]);
    assert!(output.status.success());
    assert_eq!(stdout(&output), "fresh-operator LIVE\nstale-operator EXPIRED\nwidget-operator LIVE\n");
    let note = stderr(&output);
    assert!(note.contains("naive rule") && note.contains("client-go") && note.contains("observedTime"), "{note}");
    // 15 s after the widget's renewTime it is expired.
    let later = leasesim(&["expiry", &fixture("op-leader-list.yaml"), "--now", "2026-01-01T00:00:15Z"]);
    assert!(stdout(&later).contains("widget-operator EXPIRED"));
}

#[test]
fn expiry_with_expectations_prints_ok_lines_and_exits_zero() {
    let output = leasesim(&[
        "expiry",
        &fixture("op-leader-list.yaml"),
        "--now",
        FIXTURE_NOW,
        "--expect",
        &fixture("expect-ok.tsv"),
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "OK stale-operator EXPIRED\nOK fresh-operator LIVE\nOK widget-operator LIVE\n");
}

#[test]
fn expiry_with_a_wrong_expectation_prints_mismatch_and_exits_non_zero() {
    let output = leasesim(&[
        "expiry",
        &fixture("op-leader-list.yaml"),
        "--now",
        FIXTURE_NOW,
        "--expect",
        &fixture("expect-mismatch.tsv"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stdout(&output),
        "OK stale-operator EXPIRED\nMISMATCH widget-operator expected=EXPIRED got=LIVE\nMISMATCH gone-operator expected=LIVE got=MISSING\n"
    );
}

#[test]
fn audit_reads_yaml_json_and_multi_document_files_and_sorts_by_namespace_and_name() {
    let output = leasesim(&["audit", &fixture("kcm-lease.json"), &fixture("two-documents.yaml"), "--now", FIXTURE_NOW]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "flapping-operator holder=flapping-operator-2 transitions=40 duration=15
kube-controller-manager holder=cp-1_1b7e0c6a-8d7e-4f1e-9d55-5a2b4f0a9e11 transitions=2 duration=15
released-operator holder= transitions=4 duration=1
"
    );
    // Across namespaces the names are qualified, so they cannot collide.
    let both = leasesim(&["audit", &fixture("op-leader-list.yaml"), &fixture("kcm-lease.json"), "--now", FIXTURE_NOW]);
    assert!(stdout(&both).starts_with("kube-system/kube-controller-manager holder="));
    assert!(stdout(&both).contains("op-leader/widget-operator holder=widget-operator-1 transitions=1 duration=15\n"));
}

#[test]
fn audit_flag_marks_an_empty_holder_a_future_renew_time_and_many_transitions_for_the_age() {
    let files = [fixture("op-leader-list.yaml"), fixture("kcm-lease.json"), fixture("two-documents.yaml")];
    let mut args = vec!["audit", "--flag", "--now", FIXTURE_NOW];
    args.extend(files.iter().map(String::as_str));
    let output = leasesim(&args);
    assert_eq!(
        stdout(&output),
        "kube-system/flapping-operator holder=flapping-operator-2 transitions=40 duration=15 flags=many-transitions
kube-system/kube-controller-manager holder=cp-1_1b7e0c6a-8d7e-4f1e-9d55-5a2b4f0a9e11 transitions=2 duration=15 flags=renew-in-future
kube-system/released-operator holder= transitions=4 duration=1 flags=empty-holder
op-leader/fresh-operator holder=fresh-operator-0 transitions=0 duration=86400
op-leader/stale-operator holder=stale-operator-0 transitions=0 duration=15
op-leader/widget-operator holder=widget-operator-1 transitions=1 duration=15
"
    );
    // The controller-manager's renewTime is 50 s ahead of now: inside a 1m tolerance.
    args.extend(["--tolerance", "1m"]);
    assert!(!stdout(&leasesim(&args)).contains("renew-in-future"));
}

/// Each bad input: exit 2, one error naming file, object and field, and nothing on stdout even
/// though a good file came first.
fn assert_refused(bad: &str, expected: &[&str]) {
    for tool in ["expiry", "audit"] {
        let output = leasesim(&[tool, "--now", FIXTURE_NOW, &fixture("op-leader-list.yaml"), &fixture(bad)]);
        assert_eq!(output.status.code(), Some(2), "{tool} {bad}");
        assert_eq!(stdout(&output), "", "{tool} {bad}: nothing written");
        let message = stderr(&output);
        assert!(message.starts_with("error: ") && message.contains(bad), "{message}");
        for part in expected {
            assert!(message.contains(part), "{tool} {bad}: {part:?} not in {message}");
        }
    }
}

#[test]
fn text_that_is_not_yaml_is_refused_with_the_file_and_position() {
    assert_refused("bad-not-yaml.yaml", &["invalid YAML", "line 3 column 1"]);
}

#[test]
fn a_list_of_other_kinds_is_refused_naming_the_item_and_its_kind() {
    assert_refused(
        "bad-list-of-configmaps.yaml",
        &["items[0] (ConfigMap \"op-leader/order-1\")", "kind: expected Lease"],
    );
}

#[test]
fn a_renew_time_without_microseconds_is_refused_with_gos_parse_error() {
    assert_refused(
        "bad-renew-time.yaml",
        &[
            "Lease \"op-leader/widget-operator\"",
            "spec.renewTime: not a MicroTime",
            "cannot parse \"Z\" as \".000000\"",
        ],
    );
}

#[test]
fn a_lease_without_its_duration_is_refused_naming_the_field() {
    assert_refused(
        "bad-missing-duration.yaml",
        &["Lease \"op-leader/widget-operator\"", "spec.leaseDurationSeconds: missing"],
    );
}

#[test]
fn a_configmap_is_not_a_lease() {
    assert_refused("bad-configmap.json", &["ConfigMap \"op-leader/order-1\"", "kind: expected Lease"]);
}

#[test]
fn a_malformed_expectations_file_is_refused_naming_its_line_and_column() {
    let tmp = temp_dir();
    let tsv = tmp.path().join("leases.tsv");
    std::fs::write(&tsv, "stale-operator\tEXPIRED\nfresh-operator\tALIVE\n").unwrap();
    let output =
        leasesim(&["expiry", &fixture("op-leader-list.yaml"), "--now", FIXTURE_NOW, "--expect", tsv.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stdout(&output), "");
    let message = stderr(&output);
    assert!(
        message.contains("leases.tsv: line 2 (fresh-operator): column 2: expected LIVE or EXPIRED, found \"ALIVE\""),
        "{message}"
    );
}
