//! Fidelity round two (issue 11), each behaviour from a scenario file and pinned to the real
//! code it follows (file and function in the test's comment; docs/algorithms.md has the table).

use sim_cli::run::{self, RunOutput};
use sim_cli::scenario_file;
use sim_core::trace::TraceKind;

fn run_with(source: &str, sets: &[&str], seed: u64) -> RunOutput {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let loaded = scenario_file::load("test.toml", source, &sets).unwrap_or_else(|e| panic!("{}", e.message));
    run::run(&loaded, Some(seed), true).unwrap_or_else(|e| panic!("{}", e.message))
}

fn refused(source: &str) -> String {
    let loaded = match scenario_file::load("test.toml", source, &[]) {
        Ok(l) => l,
        Err(e) => return e.message,
    };
    match run::run(&loaded, Some(1), false) {
        Ok(_) => panic!("the scenario ran"),
        Err(e) => e.message,
    }
}

fn failover(out: &RunOutput) -> f64 {
    *out.result.metrics.failover_seconds.first().expect("a failover")
}

fn notes(out: &RunOutput, node: &str) -> Vec<&'static str> {
    let n = out.result.node_names.iter().position(|x| x == node).unwrap();
    out.result
        .trace
        .iter()
        .filter(|e| e.node == Some(n))
        .filter_map(|e| match &e.kind {
            TraceKind::Note { note } => Some(note.name()),
            _ => None,
        })
        .collect()
}

fn count(out: &RunOutput, pred: impl Fn(&TraceKind) -> bool) -> usize {
    out.result.trace.iter().filter(|e| pred(&e.kind)).count()
}

fn metric(out: &RunOutput, key: &str) -> f64 {
    *sim_core::scenario::metric_values(&out.result.metrics).get(key).unwrap_or_else(|| panic!("no metric {key}"))
}

const TWO_NODES: &str = r#"
name = "t"
description = "t"
duration = "60s"
[lease]
namespace = "op"
name = "ctl"
[[nodes]]
identity = "a"
[[nodes]]
identity = "b"
start_at = "3s"
"#;

/// A graceful stop while a renew is in flight: the renew lands between the release's Get and
/// its PUT. client-go v0.34–v0.36 give up on the 409 and leave the Lease held until it expires;
/// v0.37 (client-go 1b1630d32 "retry release on conflict from inflight renew", `tryRelease`
/// recursing on `IsConflict`) gets it again and releases.
#[test]
fn v0_37_release_retries_a_conflict_from_an_in_flight_renew() {
    let source = format!(
        "{TWO_NODES}
[defaults]
release_on_cancel = true
after_lost = \"exit\"
network = {{ up = {{ latency = \"200ms\" }}, down = {{ latency = \"300ms\" }} }}
[[faults]]
at = \"11.1s\"
kind = \"server-slow\"
duration = \"200ms\"
extra = \"500ms\"
[[faults]]
at = \"11.25s\"
node = \"a\"
kind = \"stop\"
"
    );
    let v36 = run_with(&source, &["defaults.client_go=v0.36"], 1);
    let v37 = run_with(&source, &["defaults.client_go=v0.37"], 1);
    assert!(notes(&v36, "a").contains(&"release-failed"), "{:?}", notes(&v36, "a"));
    assert!(notes(&v37, "a").ends_with(&["release-conflict-retrying", "released"]), "{:?}", notes(&v37, "a"));
    assert!(failover(&v36) > 15.0, "v0.36 waits for expiry: {}", failover(&v36));
    assert!(failover(&v37) < 6.0, "v0.37 hands over: {}", failover(&v37));
}

/// The fast path (client-go 3c7c00d2d, v0.30: `tryAcquireOrRenew`'s "1. fast path for the leader
/// to update optimistically"): a renewal is one PUT; before v0.30 a GET and a PUT.
#[test]
fn the_fast_path_arrives_in_v0_30_and_fast_path_false_turns_it_off() {
    let gets = |out: &RunOutput| metric(out, "nodes.a.requests_sent.get");
    let v29 = run_with(TWO_NODES, &["defaults.client_go=v0.29"], 1);
    let v30 = run_with(TWO_NODES, &["defaults.client_go=v0.30"], 1);
    let off = run_with(TWO_NODES, &["defaults.client_go=v0.37", "defaults.fast_path=false"], 1);
    assert!(gets(&v29) > 20.0, "{}", gets(&v29));
    assert!(gets(&v30) <= 2.0, "{}", gets(&v30));
    assert_eq!(gets(&off), gets(&v29));
}

/// From v0.31 the record carries `strategy` and `preferredHolder` (client-go 20993758b,
/// `LeaderElectionRecord`): a change of only `preferredHolder` changes the raw record, so a v0.31+
/// follower restarts its expiry clock; a v0.30 follower does not notice it.
#[test]
fn a_preferred_holder_change_alone_restarts_the_expiry_clock_from_v0_31() {
    let source = format!(
        "{TWO_NODES}
[[faults]]
at = \"10s\"
node = \"a\"
kind = \"crash\"
[[actions]]
name = \"prefer-b\"
at = \"20s\"
verb = \"merge-patch\"
patch = {{ spec = {{ strategy = \"OldestEmulationVersion\", preferredHolder = \"b\" }} }}
"
    );
    let v30 = run_with(&source, &["defaults.client_go=v0.30", "nodes.a.after_lost=exit"], 1);
    let v31 = run_with(&source, &["defaults.client_go=v0.31", "nodes.a.after_lost=exit"], 1);
    assert!(failover(&v30) < 20.0, "v0.30 takes over ~15 s after the last renewal: {}", failover(&v30));
    assert!(failover(&v31) > 24.0, "v0.31 waits 15 s from the patch at 20 s: {}", failover(&v31));
}

/// `NewLeaderElector` (leaderelection.go): durations first, in client-go's order and words;
/// the scenario error names the key, then quotes client-go.
#[test]
fn new_leader_elector_checks_run_in_client_gos_order_with_its_words() {
    let e = refused(&format!("{TWO_NODES}\n[defaults]\nlease_duration = \"10s\"\nrenew_deadline = \"10s\"\n"));
    assert!(
        e.contains(
            "renew_deadline: client-go refuses this configuration: \"leaseDuration must be greater than renewDeadline\""
        ),
        "{e}"
    );
    let e = refused(&format!("{TWO_NODES}\n[defaults]\nrenew_deadline = \"2400ms\"\nretry_period = \"2s\"\n"));
    assert!(e.contains("\"renewDeadline must be greater than retryPeriod*JitterFactor\""), "{e}");
}

const PYTHON: &str = r#"
name = "py"
description = "py"
duration = "60s"
[lease]
namespace = "op"
name = "ctl"
[defaults]
algorithm = "python-client"
after_lost = "exit"
[[nodes]]
identity = "a"
[[nodes]]
identity = "b"
start_at = "3s"
"#;

/// kubernetes-client/python `leaderelection.py` (v36.0.3) catches only `ApiException` in its
/// lock: a timed-out call (urllib3 retries GET and PUT three times, then raises
/// `MaxRetryError`) escapes `run()`, and `onstopped_leading` is never called.
#[test]
fn a_python_timeout_escapes_run_without_onstopped_leading() {
    let source = format!(
        "{PYTHON}\n[[nodes]]\nidentity = \"c\"\nstart_at = \"4s\"\n[[faults]]\nat = \"10s\"\nnode = \"a\"\nkind = \"partition\"\nduration = \"40s\"\n"
    );
    let out = run_with(&source, &["nodes.a.request_timeout=1s"], 1);
    let a = out.result.node_names.iter().position(|x| x == "a").unwrap();
    let exceptions: Vec<&TraceKind> = out
        .result
        .trace
        .iter()
        .filter(|e| e.node == Some(a) && matches!(e.kind, TraceKind::Exception { .. }))
        .map(|e| &e.kind)
        .collect();
    assert_eq!(exceptions.len(), 1, "{exceptions:?}");
    assert!(matches!(exceptions[0], TraceKind::Exception { message } if message.contains("read timed out")));
    // Four sends of the PUT that timed out: the first and urllib3's three retries.
    let timeouts =
        out.result.trace.iter().filter(|e| e.node == Some(a) && matches!(e.kind, TraceKind::Timeout { .. })).count();
    assert_eq!(timeouts, 4);
    // No "stopped leading": the loop is gone, the process exits (after_lost = exit).
    assert!(!notes(&out, "a").contains(&"failed-to-renew"));
    assert!(out.result.trace.iter().any(|e| e.node == Some(a) && e.kind == TraceKind::ProcessExit));
}

/// A refused connection is not an ApiException either: at once, the loop ends.
#[test]
fn a_python_refused_connection_escapes_run_at_once() {
    let source = format!(
        "{PYTHON}\n[[faults]]\nat = \"10s\"\nnode = \"a\"\nkind = \"partition\"\nmode = \"refuse\"\nduration = \"20s\"\n"
    );
    let out = run_with(&source, &[], 1);
    assert_eq!(count(&out, |k| matches!(k, TraceKind::Exception { message } if message.contains("refused"))), 1);
    assert_eq!(count(&out, |k| matches!(k, TraceKind::Refused { .. })), 1);
}

/// The API server's priority-and-fairness 429 is plain text with a Retry-After: urllib3 waits
/// and retries a GET three times, then, up to 37.0.0a1, the lock's `json.loads(e.body)`
/// raises, out of `run()`; 37.0.0 (PR #2707, 37.0.2 leaderelection.py:139-148) takes it as a
/// failed try.
#[test]
fn a_python_get_answered_by_apf_429_retries_then_raises_json_decode_error_before_37_0_0() {
    let source = format!(
        "{PYTHON}\n[[server.errors]]\nfrom = \"20s\"\nduration = \"30s\"\ncode = 429\nverb = \"get\"\nnode = \"b\"\n"
    );
    let decode_errors = |out: &RunOutput| {
        count(out, |k| matches!(k, TraceKind::Exception { message } if message.contains("JSONDecodeError")))
    };
    for version in ["37.0.0a1", "36.0.3"] {
        let out = run_with(&source, &[&format!("defaults.version={version}")], 1);
        let b = out.result.node_names.iter().position(|x| x == "b").unwrap();
        let retries = out
            .result
            .trace
            .iter()
            .filter(|e| e.node == Some(b) && matches!(e.kind, TraceKind::RetryAfter { .. }))
            .count();
        assert_eq!(retries, 3, "{version}");
        assert_eq!(decode_errors(&out), 1, "{version}");
    }
    let out = run_with(&source, &[], 1);
    assert_eq!(decode_errors(&out), 0, "37.0.0: a failed try");
    assert!(notes(&out, "b").contains(&"held-by-another"), "b goes on trying");
}

const WORK: &str = r#"
name = "w"
description = "w"
duration = "90s"
[lease]
namespace = "op"
name = "ctl"
[[nodes]]
identity = "a"
start_at = "100ms"
[[nodes]]
identity = "b"
start_at = "1100ms"
[[faults]]
at = "20s"
node = "a"
kind = "work"
"#;

fn work_ended(out: &RunOutput) -> Vec<(&'static str, &'static str)> {
    out.result
        .trace
        .iter()
        .filter_map(|e| match e.kind {
            TraceKind::WorkEnded { ends, then } => Some((ends, then)),
            _ => None,
        })
        .collect()
}

fn seconds(out: &RunOutput, node: &str) -> (f64, f64) {
    let m = &out.result.metrics.nodes[node];
    (m.held_idle_seconds, m.acting_leader_seconds)
}

/// The leader's work ends while its elector runs on, each library as its source says
/// (docs/algorithms.md, "When the leader's work ends"): client-go's Run does not watch
/// `go OnStartedLeading(ctx)` (client-go leaderelection.go:220), so a return is unnoticed and
/// the Lease is held idle to the end; a panic in that goroutine is not recovered and ends the
/// program (the kubelet restarts it, the standby takes over after LD).
#[test]
fn client_go_renews_on_after_its_callback_returns_and_dies_when_it_panics() {
    let returns = run_with(&format!("{WORK}ends = \"returns\"\n"), &[], 1);
    assert_eq!(work_ended(&returns), [("returns", "unnoticed")]);
    let (idle, acting) = seconds(&returns, "a");
    assert!((idle - 70.0).abs() < 0.01 && (acting - 19.9).abs() < 0.01, "{idle} {acting}");
    assert_eq!(returns.result.metrics.leader_changes, 0, "nobody else can lead");
    assert!(returns.result.metrics.leaderless_seconds > 69.9, "and nothing is done");

    let panics = run_with(&format!("{WORK}ends = \"raises\"\n"), &[], 1);
    assert_eq!(work_ended(&panics), [("raises", "process-dies")]);
    assert_eq!(count(&panics, |k| matches!(k, TraceKind::Crash)), 1);
    assert!(seconds(&panics, "a").0 < 1e-9, "a dead process holds nothing idle");
    // The kubelet starts it again after 10 s; under the same identity it takes its own Lease
    // back at once.
    assert_eq!(panics.result.metrics.nodes["a"].acquisitions, 2);
    assert!(
        (panics.result.metrics.leaderless_seconds - 10.0).abs() < 0.1,
        "{}",
        panics.result.metrics.leaderless_seconds
    );
}

/// controller-runtime: a leader-election runnable that returns an error stops the manager
/// (runnable_group.go:260-281, internal.go:491-493): the elector is cancelled, the process
/// exits with the error and the kubelet restarts it; one that returns nil is only marked done.
#[test]
fn controller_runtime_stops_the_manager_when_a_runnable_fails() {
    let cr = |ends: &str| {
        run_with(
            &format!("{WORK}ends = \"{ends}\"\n"),
            &["defaults.algorithm=controller-runtime", "defaults.release_on_cancel=true"],
            1,
        )
    };
    let fails = cr("raises");
    assert_eq!(work_ended(&fails), [("raises", "graceful-stop")]);
    assert!(notes(&fails, "a").contains(&"released"), "cancelled with ReleaseOnCancel: released");
    assert!(count(&fails, |k| matches!(k, TraceKind::ProcessStart { incarnation: 2 })) >= 1, "restarted");
    assert_eq!(fails.result.metrics.leader_changes, 1);
    let returns = cr("returns");
    assert_eq!(work_ended(&returns), [("returns", "unnoticed")]);
    assert_eq!(returns.result.metrics.leader_changes, 0);
}

/// The Python client: 37.0.0 (`c0b60e0805`, PR #2670) stops renewing at the top of the next
/// round after a raising `onstarted_leading` and calls `onstopped_leading`, without releasing
/// (leaderelection.py:58-74, :96-100); 36.0.3 renews on for ever (kubernetes-client/python#2075).
/// A callback that returns is left alone in both.
#[test]
fn python_37_stops_renewing_after_a_raising_callback_and_36_does_not() {
    let py = |ends: &str, version: &str| {
        let sets = [
            "defaults.algorithm=python-client".to_string(),
            format!("defaults.version={version}"),
            "defaults.after_lost=exit".to_string(),
        ];
        let sets: Vec<&str> = sets.iter().map(|s| s.as_str()).collect();
        run_with(&format!("{WORK}ends = \"{ends}\"\n"), &sets, 1)
    };
    let fixed = py("raises", "37.0.0");
    assert_eq!(work_ended(&fixed), [("raises", "elector-stops-next-round")]);
    // One round later at most (RetryPeriod 2 s): the elector's term ends, nothing is released.
    assert!(seconds(&fixed, "a").0 <= 2.0 + 1e-9, "{:?}", seconds(&fixed, "a"));
    assert!(!notes(&fixed, "a").contains(&"released"));
    assert_eq!(fixed.result.metrics.leader_changes, 1, "b takes over after LD");
    let old = py("raises", "36.0.3");
    assert_eq!(work_ended(&old), [("raises", "unnoticed")]);
    assert!(seconds(&old, "a").0 > 69.9);
    assert_eq!(old.result.metrics.leader_changes, 0);
    let returns = py("returns", "37.0.0");
    assert_eq!(work_ended(&returns), [("returns", "unnoticed")]);
    assert_eq!(returns.result.metrics.leader_changes, 0);
}

/// Libraries that never look at the work once started: the Java client swallows the hook's
/// exception in a discarded Future (LeaderElector.java:163); a work fault on a node that is not
/// leading touches nothing; `version` is refused where one release is modelled.
#[test]
fn java_swallows_a_raising_hook_and_a_follower_has_no_work_to_end() {
    let java = run_with(&format!("{WORK}ends = \"raises\"\n"), &["defaults.algorithm=java-client"], 1);
    assert_eq!(work_ended(&java), [("raises", "unnoticed")]);
    let follower = run_with(
        &format!("{WORK}ends = \"raises\"\n").replace("node = \"a\"\nkind = \"work\"", "node = \"b\"\nkind = \"work\""),
        &[],
        1,
    );
    assert!(work_ended(&follower).is_empty());
    let e = refused(
        &format!("{WORK}ends = \"raises\"\n[defaults]\nversion = \"1.0\"\n").replace("[[faults]]", "[[faults]]"),
    );
    assert!(e.contains("no release of any node's library") && e.contains("client_go"), "{e}");
    let e = refused(
        &format!("{WORK}ends = \"raises\"\n").replace("identity = \"a\"", "identity = \"a\"\nversion = \"1.0\""),
    );
    assert!(e.contains("leasesim models one release of client-go") && e.contains("client_go"), "{e}");
    let e = refused(&format!("{WORK}ends = \"explodes\"\n"));
    assert!(e.contains("expected one of returns, raises, blocks"), "{e}");
}

/// client-go's rest client retries a 429 with Retry-After for any verb (`rest/request.go`
/// `checkWait`) until the request's context ends; the caller then sees the context's error. A
/// leader whose renewals meet a long 429 storm loses the Lease; one Retry-After costs nothing.
#[test]
fn client_go_retries_429_until_its_context_ends() {
    let short =
        format!("{TWO_NODES}\n[[server.errors]]\nfrom = \"20s\"\nduration = \"1500ms\"\ncode = 429\nnode = \"a\"\n");
    let long =
        format!("{TWO_NODES}\n[[server.errors]]\nfrom = \"20s\"\nduration = \"30s\"\ncode = 429\nnode = \"a\"\n");
    let short = run_with(&short, &[], 1);
    let long = run_with(&long, &[], 1);
    assert!(count(&short, |k| matches!(k, TraceKind::RetryAfter { .. })) >= 1);
    assert_eq!(short.result.metrics.leader_changes, 0, "a short storm is ridden out");
    assert!(!notes(&short, "a").contains(&"failed-to-renew"));
    assert!(notes(&long, "a").contains(&"failed-to-renew"), "RenewDeadline passes under the storm");
    assert_eq!(long.result.metrics.leader_changes, 1);
}

/// Each injected code has the real server's body; a 504 comes from the timeout filter while the
/// handler runs on, so the write lands.
#[test]
fn injected_errors_carry_the_real_bodies_and_a_504_write_still_lands() {
    let message = |code: u16| {
        let source = format!(
            "{TWO_NODES}\n[[server.errors]]\nfrom = \"10s\"\nduration = \"1s\"\ncode = {code}\nverb = \"update\"\n"
        );
        let out = run_with(&source, &[], 1);
        let applied: Vec<(String, bool)> = out
            .result
            .trace
            .iter()
            .filter_map(|e| match &e.kind {
                TraceKind::Applied { code: c, message, rv_before, rv_after, .. } if *c == code => {
                    Some((message.clone(), rv_after != rv_before))
                }
                _ => None,
            })
            .collect();
        applied.into_iter().next().unwrap_or_else(|| panic!("no {code}"))
    };
    assert!(message(409).0.starts_with("Operation cannot be fulfilled on leases.coordination.k8s.io \"ctl\""));
    assert_eq!(message(429).0, "Too many requests, please try again later.");
    assert_eq!(message(500).0, "Internal error occurred: etcdserver: request timed out");
    assert_eq!(message(503).0, "apiserver is shutting down");
    let (text, written) = message(504);
    assert_eq!(text, "Timeout: request did not complete within the allotted timeout");
    assert!(written, "the 504's write was applied");
    assert!(!message(500).1, "a 500 is not applied");
}

/// The shutdown 503 ("apiserver is shutting down", apiserver `waitGroupWriteRetryAfterToResponse`)
/// carries `Retry-After: 1`, so client-go's transport waits a second and sends again; a 503 with
/// another message carries none and is not retried.
#[test]
fn the_shutdown_503_carries_retry_after_one_second_and_client_go_resends() {
    let retries = |extra: &str| {
        let source = format!(
            "{TWO_NODES}\n[[server.errors]]\nfrom = \"10s\"\nduration = \"1500ms\"\ncode = 503\nverb = \"update\"\n{extra}"
        );
        let out = run_with(&source, &[], 1);
        count(&out, |k| matches!(k, TraceKind::RetryAfter { wait_ns, .. } if *wait_ns == 1_000_000_000))
    };
    assert!(retries("") >= 1);
    assert_eq!(retries("message = \"etcd leader changed\"\n"), 0);
}

/// Partitions that hold or refuse: a Python call without a timeout hangs forever under `drop`
/// and returns after the heal under `hold`.
#[test]
fn hold_delivers_after_the_heal_where_drop_hangs_forever() {
    let source = |mode: &str| {
        format!(
            "{PYTHON}\n[[faults]]\nat = \"10s\"\nnode = \"a\"\nkind = \"partition\"\nmode = \"{mode}\"\nduration = \"20s\"\n"
        )
    };
    let drop = run_with(&source("drop"), &[], 1);
    let hold = run_with(&source("hold"), &[], 1);
    // Under drop a's call never returns; under hold its answer comes once the cut heals (30 s).
    let answered_after_heal = |out: &RunOutput| {
        out.result
            .trace
            .iter()
            .any(|e| e.node == Some(0) && e.t >= 30_000_000_000 && matches!(e.kind, TraceKind::Response { .. }))
    };
    assert!(answered_after_heal(&hold));
    assert!(!answered_after_heal(&drop));
    assert!(
        !drop
            .result
            .trace
            .iter()
            .any(|e| e.node == Some(0) && e.t > 10_000_000_000 && e.kind == TraceKind::ProcessExit)
    );
    assert!(count(&hold, |k| matches!(k, TraceKind::Held { .. })) >= 1);
    assert!(metric(&drop, "nodes.a.requests_lost.update") + metric(&drop, "nodes.a.requests_lost.get") >= 1.0);
}

/// Create is answered 201 (apiserver `handlers/create.go`: `code := http.StatusCreated`).
#[test]
fn create_is_answered_201() {
    let out = run_with(TWO_NODES, &[], 1);
    assert_eq!(out.result.metrics.api_requests_by_verb_status.get("create 201"), Some(&2)); // Lease + Event
    assert!(count(&out, |k| matches!(k, TraceKind::Response { code: 201, .. })) >= 1);
}

/// The elector's Events (`LeaseLock.RecordEvent`): "became leader" on acquiring; "stopped
/// leading" whenever `renew` returns from v0.27 (client-go ac40ba329, a deferred call), only on
/// a failed renewal in v0.26. A `list` action reads them back, into summary.json.
#[test]
fn leader_events_are_recorded_and_readable_by_a_list_action() {
    let source = format!(
        "{TWO_NODES}\n[[faults]]\nat = \"20s\"\nnode = \"a\"\nkind = \"stop\"\n[[actions]]\nname = \"events\"\nat = \"59s\"\nverb = \"list\"\nresource = \"events\"\n"
    );
    let messages = |out: &RunOutput| -> Vec<String> {
        let object = &out.result.actions[0].object;
        object["items"].as_array().unwrap().iter().map(|e| e["message"].as_str().unwrap().to_string()).collect()
    };
    let v37 = run_with(&source, &[], 1);
    assert_eq!(messages(&v37), ["a became leader", "a stopped leading", "b became leader"]);
    let event = &v37.result.actions[0].object["items"][0];
    assert_eq!(event["reason"], "LeaderElection");
    assert_eq!(event["involvedObject"]["kind"], "Lease");
    assert!(event["metadata"]["name"].as_str().unwrap().starts_with("ctl."));
    let summary = sim_cli::outputs::summary_json(&v37);
    assert_eq!(summary["actions"][0]["object"]["kind"], "EventList");
    let v26 = run_with(&source, &["defaults.client_go=v0.26"], 1);
    assert_eq!(messages(&v26), ["a became leader", "b became leader"]);
    let off = run_with(&source, &["defaults.events=false"], 1);
    assert!(messages(&off).is_empty());
}

/// Lock labels (client-go v0.34 `NewWithLabels`, `LeaseLock.Update`): set on create, merged on
/// every update, a third party's labels kept. v0.34.0–v0.34.1 panic writing into a Lease
/// without labels (fixed in v0.34.2, 706156cea).
#[test]
fn lock_labels_are_set_merged_and_third_party_labels_kept() {
    let source = format!(
        "{TWO_NODES}\n[defaults]\nlabels = {{ \"app.kubernetes.io/name\" = \"ctl\" }}\n[[actions]]\nname = \"label\"\nat = \"10s\"\nverb = \"merge-patch\"\npatch = {{ metadata = {{ labels = {{ team = \"x\" }} }} }}\n[[actions]]\nname = \"read\"\nat = \"30s\"\nverb = \"get\"\n"
    );
    let out = run_with(&source, &[], 1);
    let labels = &out.result.actions[1].object["metadata"]["labels"];
    assert_eq!(labels["app.kubernetes.io/name"], "ctl");
    assert_eq!(labels["team"], "x");
    let e = refused(&format!("{TWO_NODES}\n[defaults]\nclient_go = \"v0.33\"\nlabels = {{ a = \"b\" }}\n"));
    assert!(e.contains("need client-go v0.34"), "{e}");
    let pre_existing = format!(
        "{TWO_NODES}\n[defaults]\nclient_go = \"v0.34.1\"\nlabels = {{ a = \"b\" }}\n[[objects]]\napiVersion = \"coordination.k8s.io/v1\"\nkind = \"Lease\"\nmetadata = {{ name = \"ctl\", namespace = \"op\" }}\nspec = {{}}\n"
    );
    let out = run_with(&pre_existing, &[], 1);
    assert!(count(&out, |k| *k == TraceKind::Crash) >= 1, "v0.34.1 panics on a Lease without labels");
}

/// client-go's health check (`healthzadaptor.go`, `LeaderElector.Check`) probed as the kubelet
/// does: a paused leader's probes fail at their timeout, and after `failure_threshold` of them
/// the kubelet kills it. A long pause is cut short (no dual-leader window when it would have
/// resumed); a short one is not (the same window with and without the probe).
#[test]
fn a_liveness_probe_on_the_health_check_cuts_a_long_stuck_leader_short_but_not_a_short_one() {
    let source = |pause: &str| {
        format!(
            "{TWO_NODES}\n[defaults]\nreconciler = {{ mode = \"apply\", period = \"1s\" }}\n[[faults]]\nat = \"10s\"\nnode = \"a\"\nkind = \"pause\"\nduration = \"{pause}\"\n"
        )
        .replace("duration = \"60s\"", "duration = \"200s\"")
    };
    let long = |probe: bool| {
        let sets: &[&str] = if probe { &["defaults.healthz={ failure_threshold = 3 }"] } else { &[] };
        run_with(&source("100s"), sets, 1)
    };
    let (without, with) = (long(false), long(true));
    // A paused leader still believes it leads: acting until it resumes and fails its renewal
    // (about 110 s) without the probe, until the kubelet kills it (about 75 s) with it.
    let dual = |out: &RunOutput| out.result.metrics.dual_leader_seconds;
    assert!(dual(&without) > 80.0, "{}", dual(&without));
    assert!(dual(&with) < 55.0 && dual(&with) > 40.0, "{}", dual(&with));
    assert_eq!(count(&with, |k| *k == TraceKind::LivenessKill), 1);
    assert_eq!(count(&with, |k| matches!(k, TraceKind::ProbeFailed { .. })), 3);
    let short = |probe: bool| {
        let sets: &[&str] = if probe { &["defaults.healthz={ failure_threshold = 3 }"] } else { &[] };
        run_with(&source("25s"), sets, 1)
    };
    let (without, with) = (short(false), short(true));
    assert!(dual(&without) > 0.0);
    assert_eq!(dual(&with), dual(&without));
    assert_eq!(count(&with, |k| *k == TraceKind::LivenessKill), 0);
}

/// `start_at` drawn per seed; `expiry` overrides the algorithm's rule (client-go with the
/// renew-time rule steals a healthy Lease from a clock 2 minutes ahead, as renew-time does).
#[test]
fn start_at_is_drawn_per_seed_and_expiry_overrides_the_rule() {
    let drawn = format!("{TWO_NODES}\n[defaults]\nstart_at = {{ uniform = [\"0s\", \"2s\"] }}\n");
    let starts: Vec<u64> = (1..6)
        .map(|seed| {
            let out = run_with(&drawn, &[], seed);
            out.result.trace.iter().find(|e| matches!(e.kind, TraceKind::ProcessStart { .. })).unwrap().t
        })
        .collect();
    assert!(starts.iter().all(|&t| t <= 2_000_000_000), "{starts:?}");
    assert!(starts.windows(2).any(|w| w[0] != w[1]), "{starts:?}");
    let skewed =
        format!("{TWO_NODES}\n[[nodes]]\nidentity = \"c\"\nstart_at = \"5s\"\nclock = {{ offset = \"120s\" }}\n");
    let go = run_with(&skewed, &[], 1);
    let renew_rule = run_with(&skewed, &["nodes.c.expiry=renew-time"], 1);
    assert_eq!(go.result.metrics.leader_changes, 0);
    assert!(renew_rule.result.metrics.leader_changes >= 1);
}

/// `unsafe` per Lease: only that Lease's nodes may run a refused configuration, and only a run
/// that does is flagged.
#[test]
fn unsafe_per_lease_waives_only_that_lease_and_flags_only_invalid_runs() {
    let source = format!("{TWO_NODES}\n[lease]\nnamespace = \"op\"\nname = \"ctl\"\nunsafe = true\n").replacen(
        "[lease]\nnamespace = \"op\"\nname = \"ctl\"\n",
        "",
        1,
    );
    let valid = run_with(&source, &[], 1);
    assert!(!valid.unsafe_mode, "nothing refused ran");
    let invalid = run_with(&source, &["defaults.renew_deadline=20s"], 1);
    assert!(invalid.unsafe_mode);
    let other = format!(
        "{TWO_NODES}\n[[nodes]]\nidentity = \"x\"\nlease_name = \"other\"\nrenew_deadline = \"20s\"\n[leases.other]\nunsafe = true\n"
    );
    assert!(run_with(&other, &[], 1).unsafe_mode);
    let e = refused(
        &other.replace("[leases.other]\nunsafe = true\n", "").replace("identity = \"x\"", "identity = \"x\"\n"),
    );
    assert!(e.contains("leaseDuration must be greater than renewDeadline"), "{e}");
}

/// `[leases."<the main Lease>"] unsafe` waives the main Lease too (it was silently ignored).
#[test]
fn unsafe_under_leases_also_waives_the_main_lease() {
    let source = format!("{TWO_NODES}\n[defaults]\nrenew_deadline = \"20s\"\n[leases.ctl]\nunsafe = true\n");
    let out = run_with(&source, &[], 1);
    assert!(out.unsafe_mode);
    let refused = refused(&source.replace("[leases.ctl]\nunsafe = true\n", ""));
    assert!(refused.contains("client-go refuses this configuration"), "{refused}");
}

const ONE_NODE: &str = r#"
name = "t"
description = "t"
duration = "90s"
[lease]
namespace = "op"
name = "ctl"
[[nodes]]
identity = "a"
[[faults]]
at = "20s"
node = "a"
kind = "restart"
delay = "1s"
"#;

/// kube-controller-manager, kube-scheduler and controller-runtime's default build their
/// identity as `hostname + "_" + uuid.NewUUID()` at every start (docs/sources/kubernetes.md
/// §1–2, Disagreements 5). With the same identity a restarted client-go node finds its own name
/// in the Lease and renews at its first try; with a fresh one it is a stranger and waits a full
/// LeaseDuration (15 s) from its first observation.
#[test]
fn a_restart_under_a_fresh_identity_waits_out_its_own_lease() {
    let same = run_with(ONE_NODE, &[], 1);
    let fresh = run_with(ONE_NODE, &["nodes.a.identity_per_start=true"], 1);
    let leaderless = |o: &RunOutput| o.result.metrics.leaderless_seconds;
    assert!(leaderless(&same) < 3.0, "same identity: {}", leaderless(&same));
    assert!((15.0..19.0).contains(&leaderless(&fresh)), "fresh identity: {}", leaderless(&fresh));
    // The Lease names each start's identity, `a_<uuid v4>`: two starts, two holders, and the
    // second acquisition is a transition as on a real cluster.
    let uuid = regex::Regex::new(r"^a_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$").unwrap();
    let mut holders: Vec<String> = fresh
        .result
        .trace
        .iter()
        .filter_map(|e| match &e.kind {
            TraceKind::LeaseChanged { holder, .. } if !holder.is_empty() => Some(holder.to_string()),
            _ => None,
        })
        .collect();
    holders.dedup();
    assert_eq!(holders.len(), 2, "{holders:?}");
    assert!(holders.iter().all(|h| uuid.is_match(h)), "{holders:?}");
    assert_eq!(fresh.result.metrics.lease_transitions, same.result.metrics.lease_transitions + 1);
    // The same seed, the same identities.
    let again = run_with(ONE_NODE, &["nodes.a.identity_per_start=true"], 1);
    assert_eq!(sim_cli::outputs::summary_json(&again), sim_cli::outputs::summary_json(&fresh));
}

/// Restarts the kubelet makes follow CrashLoopBackOff with `restart_backoff = "crashloop"`:
/// the first at once, then 10 s, then 20 s after each exit (docs/sources/kubernetes.md §3);
/// `fixed` waits `restart_delay` (10 s for client-go) every time.
#[test]
fn kubelet_restarts_back_off_as_crashloopbackoff() {
    let source = r#"
name = "t"
description = "t"
duration = "160s"
[lease]
namespace = "op"
name = "ctl"
[defaults]
after_lost = "restart"
[[nodes]]
identity = "a"
[[faults]]
at = "20s"
target = "server"
kind = "server-outage"
duration = "15s"
[[faults]]
at = "60s"
target = "server"
kind = "server-outage"
duration = "15s"
[[faults]]
at = "100s"
target = "server"
kind = "server-outage"
duration = "15s"
"#;
    let gaps = |out: &RunOutput| -> Vec<u64> {
        let mut exit = None;
        let mut gaps = Vec::new();
        for e in &out.result.trace {
            match e.kind {
                TraceKind::ProcessExit => exit = Some(e.t),
                TraceKind::ProcessStart { .. } => {
                    if let Some(x) = exit.take() {
                        gaps.push((e.t - x) / 1_000_000_000);
                    }
                }
                _ => {}
            }
        }
        gaps
    };
    assert_eq!(gaps(&run_with(source, &[], 1)), [10, 10, 10]);
    assert_eq!(gaps(&run_with(source, &["defaults.restart_backoff=\"crashloop\""], 1)), [0, 10, 20]);
}

/// A wedged client is not a pause: the elector's timers run on while its request hangs (no
/// timeout fires), and a probe of a plain liveness endpoint passes where client-go's
/// leader-election watchdog fails (`LeaderElector.Check`, leaderelection.go; docs/algorithms.md).
#[test]
fn a_wedged_client_hangs_its_requests_while_timers_and_probes_run() {
    let source = |check: &str| {
        format!(
            "{TWO_NODES}healthz = {{ check = \"{check}\", failure_threshold = 3 }}\n[[faults]]\nat = \"20s\"\nnode = \"a\"\nkind = \"wedge\"\n"
        )
        .replace("[[nodes]]\nidentity = \"a\"\n", &format!("[[nodes]]\nidentity = \"a\"\nhealthz = {{ check = \"{check}\", failure_threshold = 3 }}\n"))
        .replace("duration = \"60s\"", "duration = \"2m\"")
    };
    let ping = run_with(&source("ping"), &[], 1);
    let a = ping.result.node_names.iter().position(|x| x == "a").unwrap();
    let after = |out: &RunOutput, pred: &dyn Fn(&TraceKind) -> bool| {
        out.result.trace.iter().filter(|e| e.node == Some(a) && e.t > 20_000_000_000 && pred(&e.kind)).count()
    };
    assert!(after(&ping, &|k| matches!(k, TraceKind::Timer { .. })) > 0, "its timers still fire");
    assert_eq!(after(&ping, &|k| matches!(k, TraceKind::Timeout { .. })), 0, "no timeout ends the wait");
    assert_eq!(after(&ping, &|k| matches!(k, TraceKind::Response { .. })), 0, "nothing comes back");
    assert_eq!(count(&ping, |k| matches!(k, TraceKind::LivenessKill)), 0, "ping answers");
    assert!(ping.result.metrics.dual_leader_seconds > 20.0, "b took over; a still believes");
    let watchdog = run_with(&source("leader-election"), &[], 1);
    assert_eq!(count(&watchdog, |k| matches!(k, TraceKind::LivenessKill)), 1, "the watchdog fails it");
    assert!(watchdog.result.metrics.dual_leader_seconds < ping.result.metrics.dual_leader_seconds);
    // `check = "ping"` is any library's; the watchdog is client-go's.
    let e = refused(&format!(
        "{TWO_NODES}[defaults]\nalgorithm = \"java-client\"\nhealthz = {{ check = \"leader-election\" }}\n"
    ));
    assert!(e.contains("check = \"ping\""), "{e}");
    let java = run_with(
        &format!("{TWO_NODES}[defaults]\nalgorithm = \"java-client\"\nhealthz = {{ check = \"ping\" }}\n"),
        &[],
        1,
    );
    assert_eq!(count(&java, |k| matches!(k, TraceKind::LivenessKill)), 0);
}

/// client-go's client-side rate limiter (rest/request.go `tryThrottle`, x/time/rate `Wait`;
/// docs/sources/client-go.md §8): a burst of 100 reads on a bucket of 5 qps / burst 10 shared
/// with the elector makes the renewal wait 18 s; inside a renew round whose RenewDeadline is
/// 10 s that wait is refused at once ("would exceed context deadline"), every try of the round
/// fails and the leader steps down. With its own bucket the elector never waits.
#[test]
fn a_shared_rate_limiter_starves_renewals_behind_a_burst() {
    let source = |shared: bool| {
        format!(
            "{TWO_NODES}[defaults]\nclient_limiter = {{ qps = 5.0, burst = 10, shared = {shared} }}\nreconciler = {{ burst = {{ at = \"30s\", requests = 100 }} }}\n"
        )
    };
    let shared = run_with(&source(true), &[], 1);
    assert!(count(&shared, |k| matches!(k, TraceKind::RateLimited { .. })) >= 4);
    assert!(notes(&shared, "a").contains(&"failed-to-renew"));
    let waits: Vec<u64> = shared
        .result
        .trace
        .iter()
        .filter_map(|e| match e.kind {
            TraceKind::Throttled { wait_ns, .. } => Some(wait_ns),
            _ => None,
        })
        .collect();
    // The burst's reads past the bucket's ten wait one token (200 ms) more each: the last about
    // 90 tokens (18 s; a little more, as the reconciler's own write took one just before).
    let max = *waits.iter().max().unwrap();
    assert!((18_000_000_000..18_400_000_000).contains(&max), "{max}");
    let own = run_with(&source(false), &[], 1);
    assert_eq!(count(&own, |k| matches!(k, TraceKind::RateLimited { .. })), 0);
    assert!(!notes(&own, "a").contains(&"failed-to-renew"));
    assert_eq!(own.result.metrics.leaderless_seconds, 0.0);
}

/// `server-outage` modes: an API server restarting refuses connections (each try fails at once:
/// client-go tries again every RetryPeriod, the Python client's urllib3 raises out of `run()`,
/// docs/algorithms.md), a hung one drops them (client-go's tries wait out their timeouts), a
/// frozen one holds them and applies them when it is back (client-go leaderelection.go
/// `tryAcquireOrRenew`: the fast-path update, then a Get, each with the request timeout).
#[test]
fn server_outage_modes_refuse_drop_and_hold() {
    let outage = |mode: &str| {
        format!(
            "{TWO_NODES}[[faults]]\nat = \"20s\"\ntarget = \"server\"\nkind = \"server-outage\"\nduration = \"6s\"\nmode = \"{mode}\"\n"
        )
    };
    let sent = |out: &RunOutput| {
        out.result.metrics.nodes["a"].requests_sent.update + out.result.metrics.nodes["a"].requests_sent.get
    };
    let refuse = run_with(&outage("refuse"), &[], 1);
    assert!(count(&refuse, |k| matches!(k, TraceKind::Refused { .. })) >= 3);
    assert_eq!(count(&refuse, |k| matches!(k, TraceKind::ServerDown { .. })), 0);
    let drop = run_with(&outage("drop"), &[], 1);
    assert!(count(&drop, |k| matches!(k, TraceKind::ServerDown { .. })) >= 1);
    assert!(count(&drop, |k| matches!(k, TraceKind::Timeout { .. })) >= 1);
    assert!(sent(&refuse) > sent(&drop), "refused tries fail at once and come again sooner");
    let hold = run_with(&outage("hold"), &[], 1);
    assert!(count(&hold, |k| matches!(k, TraceKind::Held { .. })) >= 1);
    // Refused tries come again every RetryPeriod and the first after the outage renews; a
    // held one lands when the server is back. A dropped fast-path update times out at 5 s
    // (RD/2), the Get sent then is dropped too and times out past the round's deadline: a
    // 6 s hang costs the leader its Lease where a 6 s refusal does not.
    assert_eq!((refuse.result.metrics.leader_changes, hold.result.metrics.leader_changes), (0, 0));
    assert!(notes(&drop, "a").contains(&"failed-to-renew"));
    let python = run_with(
        &format!(
            "{PYTHON}[[faults]]\nat = \"20s\"\ntarget = \"server\"\nkind = \"server-outage\"\nduration = \"6s\"\nmode = \"refuse\"\n"
        ),
        &[],
        1,
    );
    assert!(count(&python, |k| matches!(k, TraceKind::Exception { message } if message.contains("refused"))) >= 1);
}

/// `[leases."<name>"] namespace`: each Lease in its own namespace, its nodes' ServiceAccounts,
/// Role and RoleBinding there (a controller's rights end at its namespace), its reconciler's
/// object there; the namespace is checked as the API server checks one (a DNS label).
#[test]
fn a_lease_per_namespace_with_rbac_per_namespace() {
    let source = r#"
name = "ns"
description = "ns"
duration = "30s"
[lease]
namespace = "kube-system"
name = "kube-scheduler"
[leases."cert-manager-controller"]
namespace = "cert-manager"
[[nodes]]
identity = "sched"
[[nodes]]
identity = "cm"
lease_name = "cert-manager-controller"
reconciler = { mode = "apply" }
[[actions]]
name = "cm-in-its-namespace"
at = "10s"
as = "cm"
verb = "can-i"
can_i_verb = "update"
namespace = "cert-manager"
[[actions]]
name = "cm-elsewhere"
at = "10s"
as = "cm"
verb = "can-i"
can_i_verb = "update"
namespace = "kube-system"
"#;
    let out = run_with(source, &[], 1);
    let m = &out.result.metrics;
    assert!(m.leases["cert-manager/cert-manager-controller"].elected && m.leases["kube-system/kube-scheduler"].elected);
    assert!(m.nodes["cm"].writes_accepted > 20, "its object lives in its namespace");
    let allowed: Vec<Option<bool>> = out.result.actions.iter().map(|a| a.allowed).collect();
    assert_eq!(allowed, [Some(true), Some(false)]);
    let e =
        refused(&source.replace("namespace = \"cert-manager\"\n[[nodes]]", "namespace = \"cert.manager\"\n[[nodes]]"));
    assert!(e.contains("leases.cert-manager-controller.namespace") && e.contains("must not contain dots"), "{e}");
}

/// Keys a fault kind, a server error or the server's table would accept and then ignore are
/// refused by name, located (issue 33).
#[test]
fn keys_that_would_be_ignored_are_refused_by_name() {
    let e =
        refused(&format!("{TWO_NODES}[[faults]]\nat = \"10s\"\nnode = \"a\"\nkind = \"crash\"\nmode = \"refuse\"\n"));
    assert!(e.contains("faults[0].mode: a crash fault takes no other keys, not `mode`"), "{e}");
    let e = refused(&format!(
        "{TWO_NODES}[[faults]]\nat = \"10s\"\nnode = \"a\"\nkind = \"pause\"\nduration = \"1s\"\nends = \"raises\"\n"
    ));
    assert!(e.contains("a pause fault takes `duration`, not `ends`"), "{e}");
    let e = refused(&format!(
        "{TWO_NODES}[[server.errors]]\nfrom = \"10s\"\nduration = \"5s\"\ncode = 429\nmessage = \"x\"\n"
    ));
    assert!(e.contains("server.errors[0].message: a 429's text is fixed"), "{e}");
    let e = refused(&format!("{TWO_NODES}[[server.errors]]\nfrom = \"60s\"\nduration = \"5s\"\ncode = 500\n"));
    assert!(e.contains("at or beyond the run's duration"), "{e}");
    let e = refused(&format!(
        "{TWO_NODES}[[random_faults]]\nname = \"r\"\nkind = \"crash\"\ntarget = \"a\"\nmean_interval = \"5s\"\nfrom = \"20s\"\nuntil = \"10s\"\n"
    ));
    assert!(e.contains("random_faults[0].until") && e.contains("not after `from`"), "{e}");
    let e = refused(&format!("{TWO_NODES}[server]\nclock = {{ offset = \"3s\" }}\n"));
    assert!(e.contains("server.clock") && e.contains("no node here is coordinated"), "{e}");
}
