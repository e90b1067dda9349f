//! The seed lab's kubectl commands (steps 1–7, with `get -w`, `describe`, `get events`,
//! `kubectl events`, `auth can-i` ×4, server-side apply with the conflict and
//! `--force-conflicts`, `replace` with a stale resourceVersion, the MicroTime errors) run by the
//! real kubectl against `leasesim serve`, compared with golden files after ages, uids,
//! resourceVersions and timestamps are normalised. Run with kubectl 1.27 (JSON bodies, legacy
//! discovery) and 1.32 (protobuf bodies, aggregated discovery): the image's `kubectl` is a
//! dispatcher that runs the kubectl matching the server's `/version`.
//!
//! Skipped, with a message, where no `kubectl` is on PATH. `UPDATE_GOLDEN=1` rewrites the
//! golden files (look at the diff before committing it).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LAB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kubectl-lab");
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/serve-lab");

fn have_kubectl() -> bool {
    Command::new("kubectl").arg("version").arg("--client").output().is_ok_and(|o| o.status.success())
}

/// A running `leasesim serve`, stopped (and its report written) on drop.
struct Server {
    child: Child,
    kubeconfig: PathBuf,
    out: PathBuf,
}

impl Server {
    fn start(dir: &Path, version: &str) -> Server {
        let port_file = dir.join("port");
        let kubeconfig = dir.join("kubeconfig");
        let out = dir.join("out");
        let child = Command::new(env!("CARGO_BIN_EXE_leasesim"))
            .args(["serve", "--listen", "127.0.0.1:0", "--kubernetes-version", version])
            .arg("--port-file")
            .arg(&port_file)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("leasesim starts");
        let started = Instant::now();
        while !port_file.exists() {
            assert!(started.elapsed() < Duration::from_secs(20), "serve did not write its port file");
            std::thread::sleep(Duration::from_millis(20));
        }
        Server { child, kubeconfig, out }
    }

    fn stop(&mut self) {
        // SIGINT, as a user's Ctrl-C: the server writes its report and exits.
        let _ = Command::new("kill").arg("-INT").arg(self.child.id().to_string()).status();
        let started = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Session {
    dir: PathBuf,
    kubeconfig: PathBuf,
    cache: PathBuf,
    transcript: String,
}

impl Session {
    /// kubectl in `dir` (its cache there too) against `server`.
    fn new(dir: &Path, server: &Server) -> Session {
        Session {
            dir: dir.to_path_buf(),
            kubeconfig: server.kubeconfig.clone(),
            cache: dir.join("cache"),
            transcript: String::new(),
        }
    }

    fn kubectl(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.args(args).arg("--cache-dir").arg(&self.cache).env("KUBECONFIG", &self.kubeconfig).current_dir(&self.dir);
        c
    }

    /// Runs one command and adds it, its stdout, stderr and exit code to the transcript.
    fn run(&mut self, args: &[&str]) -> (String, String, i32) {
        let out = self.kubectl(args).output().expect("kubectl runs");
        let (stdout, stderr) =
            (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
        let code = out.status.code().unwrap_or(-1);
        self.note(args, &stdout, &stderr, code);
        (stdout, stderr, code)
    }

    fn note(&mut self, args: &[&str], stdout: &str, stderr: &str, code: i32) {
        self.transcript.push_str(&format!("$ kubectl {}\n", args.join(" ")));
        if !stdout.is_empty() {
            self.transcript.push_str(&format!("[stdout]\n{}", with_newline(stdout)));
        }
        if !stderr.is_empty() {
            self.transcript.push_str(&format!("[stderr]\n{}", with_newline(stderr)));
        }
        self.transcript.push_str(&format!("[exit {code}]\n\n"));
    }

    /// A watch in the background while `then` runs; stopped once `lines` lines arrived (or
    /// after 10 s).
    fn watch(&mut self, args: &[&str], lines: usize, then: impl FnOnce(&mut Session)) {
        let mut child = self.kubectl(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("kubectl runs");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut got: Vec<String> = Vec::new();
        // The list (or the first object) before the change.
        let started = Instant::now();
        while got.is_empty() && started.elapsed() < Duration::from_secs(10) {
            if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
                got.push(l);
            }
        }
        std::thread::sleep(Duration::from_millis(300));
        then(self);
        while got.len() < lines && started.elapsed() < Duration::from_secs(10) {
            if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
                got.push(l);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        got.extend(rx.try_iter());
        let stdout: String = got.iter().map(|l| format!("{l}\n")).collect();
        self.note(args, &stdout, "", 0);
    }
}

fn with_newline(s: &str) -> String {
    if s.ends_with('\n') { s.to_string() } else { format!("{s}\n") }
}

fn now_micro() -> String {
    // The lab's `date -u +%Y-%m-%dT%H:%M:%S.%6NZ`.
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970");
    sim_core::api::MicroTime::from_unix_nanos(d.as_nanos() as i64).to_rfc3339()
}

/// Ages, uids, resourceVersions, timestamps and kubectl's build details replaced by tokens.
fn normalise(text: &str) -> String {
    // The Go layout and the lab's whole-second time stay as they are.
    let constants = [("2006-01-02T15:04:05.000000Z07:00", "@LAYOUT@"), ("2026-01-01T00:00:00Z", "@WHOLE@")];
    let mut text = text.to_string();
    for (c, marker) in constants {
        text = text.replace(c, marker);
    }
    let rules: [(&str, &str); 7] = [
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "TIME"),
        (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UID"),
        (r#"resourceVersion(\\?"?:\\?"?\s*\\?")\d+"#, "resourceVersion${1}RV"),
        (r"Resource Version:(\s+)\d+", "Resource Version:${1}RV"),
        (r"\b\d+[smhd](\d+[smh])?\b", "AGE"),
        (r#"\b\d+\\"\s*\(.*"#, "RVTAIL"),
        (r"Session-[0-9a-f-]+", "SESSION"),
    ];
    let mut out = text;
    for (pattern, replacement) in rules {
        out = regex::Regex::new(pattern).expect("a pattern").replace_all(&out, replacement).into_owned();
    }
    for (c, marker) in constants {
        out = out.replace(marker, c);
    }
    out
}

/// A fresh folder, a server reporting 1.33 and kubectl against it; `None` (the test skips,
/// saying how to run it) without kubectl on PATH.
fn kubectl_133(what: &str) -> Option<(tempfile::TempDir, Server, Session)> {
    if !have_kubectl() {
        eprintln!("skipped: no kubectl on PATH (install kubectl 1.33 to send {what} to leasesim serve)");
        return None;
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let server = Server::start(dir.path(), "1.33");
    let session = Session::new(dir.path(), &server);
    Some((dir, server, session))
}

fn lab_transcript(version: &str) -> (String, Session) {
    let dir = tempfile::tempdir().expect("a temp dir").keep();
    for f in std::fs::read_dir(LAB).expect("the lab files") {
        let f = f.expect("an entry").path();
        std::fs::copy(&f, dir.join(f.file_name().expect("a name"))).expect("copied");
    }
    let server = Server::start(&dir, version);
    let mut s = Session::new(&dir, &server);
    let ns = ["-n", "op-leader"];
    let lease = |rest: &[&str]| -> Vec<String> { ns.iter().chain(rest.iter()).map(|x| x.to_string()).collect() };
    let run = |s: &mut Session, args: Vec<String>| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        s.run(&refs)
    };
    // Which server, and which kubectl the dispatcher picked for it.
    s.run(&["version"]);
    // Step 1.
    s.run(&["create", "namespace", "op-leader"]);
    s.run(&["apply", "-f", "lease-widget.yaml"]);
    s.run(&["-n", "op-leader", "get", "lease", "widget-operator", "-o", "yaml"]);
    // Step 2: renewals, a no-op, the updated file, watches while another terminal patches.
    let renew = |s: &mut Session| {
        let p = format!("{{\"spec\":{{\"renewTime\":\"{}\"}}}}", now_micro());
        run(s, lease(&["patch", "lease", "widget-operator", "--type=merge", "-p", &p]));
    };
    renew(&mut s);
    s.run(&[
        "-n",
        "op-leader",
        "patch",
        "lease",
        "widget-operator",
        "--type=merge",
        "-p",
        r#"{"spec":{"holderIdentity":"widget-operator-0"}}"#,
    ]);
    s.run(&["apply", "-f", "lease-widget-v2.yaml"]);
    s.watch(&["-n", "op-leader", "get", "lease", "-w"], 3, renew);
    s.watch(&["-n", "op-leader", "get", "lease", "widget-operator", "-w", "-o", "yaml"], 40, renew);
    // Step 3: a replace with a stale resourceVersion.
    let stale = std::fs::read_to_string(dir.join("lease-widget.yaml"))
        .expect("the lab file")
        .replace("  namespace: op-leader\n", "  namespace: op-leader\n  resourceVersion: \"1\"\n");
    std::fs::write(dir.join("lease-stale-rv.yaml"), stale).expect("written");
    s.run(&["replace", "-f", "lease-stale-rv.yaml"]);
    // Step 5 (the lab's MicroTime step): a patch, an apply and a create of whole-second times.
    s.run(&[
        "-n",
        "op-leader",
        "patch",
        "lease",
        "widget-operator",
        "--type=merge",
        "-p",
        r#"{"spec":{"renewTime":"2026-01-01T00:00:00Z"}}"#,
    ]);
    s.run(&["apply", "-f", "lease-bad.yaml"]);
    s.run(&["create", "-f", "lease-bad.yaml"]);
    // Step 6: RBAC, then can-i as the service account.
    s.run(&["apply", "-f", "rbac.yaml"]);
    let sa = "--as=system:serviceaccount:op-leader:widget-operator";
    for verb in ["get", "create", "update", "delete"] {
        s.run(&["auth", "can-i", verb, "leases.coordination.k8s.io", sa, "-n", "op-leader"]);
    }
    s.run(&["-n", "op-leader", "get", "lease", "widget-operator", sa, "-o", "name"]);
    s.run(&["-n", "op-leader", "delete", "lease", "widget-operator", sa]);
    // Step 7: two managers apply the same field.
    s.run(&["apply", "--server-side", "--field-manager=widget-operator-0", "-f", "child-a.yaml"]);
    s.run(&["apply", "--server-side", "--field-manager=widget-operator-1", "-f", "child-b.yaml"]);
    s.run(&["apply", "--server-side", "--field-manager=widget-operator-1", "--force-conflicts", "-f", "child-b.yaml"]);
    s.run(&["-n", "op-leader", "get", "configmap", "order-1", "-o", "jsonpath={.data.phase}"]);
    // Step 4's takeover, then what an operator looks at.
    let t = now_micro();
    let takeover = format!(
        "{{\"spec\":{{\"holderIdentity\":\"widget-operator-1\",\"acquireTime\":\"{t}\",\"renewTime\":\"{t}\",\"leaseTransitions\":1}}}}"
    );
    run(&mut s, lease(&["patch", "lease", "widget-operator", "--type=merge", "-p", &takeover]));
    s.run(&["-n", "op-leader", "get", "events"]);
    s.run(&["-n", "op-leader", "get", "lease", "-o", "wide"]);
    s.run(&[
        "-n",
        "op-leader",
        "get",
        "lease",
        "-o",
        r#"jsonpath={range .items[*]}{.metadata.name} holder={.spec.holderIdentity} transitions={.spec.leaseTransitions} duration={.spec.leaseDurationSeconds}{"\n"}{end}"#,
    ]);
    s.run(&["-n", "op-leader", "describe", "lease", "widget-operator"]);
    s.run(&[
        "-n",
        "op-leader",
        "get",
        "lease",
        "-o",
        "custom-columns=NAME:.metadata.name,HOLDER:.spec.holderIdentity,RENEW:.spec.renewTime",
    ]);
    s.run(&["events", "-n", "op-leader"]);
    s.run(&["-n", "op-leader", "get", "cm", "order-1", "-o", "yaml", "--show-managed-fields"]);
    let mut server = server;
    server.stop();
    // Ctrl-C writes the session as a run's outputs, the record of every request included.
    let record = std::fs::read_to_string(server.out.join("record.jsonl")).expect("record.jsonl written on stop");
    assert!(record.contains("\"leases\""), "the record names the lab's Lease requests");
    assert!(server.out.join("summary.json").is_file() && server.out.join("report.html").is_file());
    assert!(!server.out.with_extension("session").exists(), "the session folder is removed once the report is written");
    (normalise(&s.transcript), s)
}

fn check_golden(version: &str, transcript: &str) {
    let path = PathBuf::from(GOLDEN).join(format!("kubectl-{version}.txt"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(GOLDEN).expect("golden dir");
        std::fs::write(&path, transcript).expect("golden written");
        return;
    }
    let golden =
        std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{} is missing: UPDATE_GOLDEN=1", path.display()));
    if golden != transcript {
        let got = path.with_extension("got");
        std::fs::write(&got, transcript).expect("written");
        panic!("kubectl {version}'s transcript differs from {}: see {} (diff them)", path.display(), got.display());
    }
}

/// The lab's own files (`leasesim lab`) say what the real kubectl says for the same steps.
fn agrees_with_lab(transcript: &str) {
    let lab = sim_cli::lab::run_lab(Some(1_767_225_600_000_000_000)).expect("the lab runs");
    let lab_text = |name: &str| normalise(lab.get(name).expect("a lab file"));
    // The MicroTime error: patch-rc=1 and the server's sentence, the same words from `: parsing
    // time` on (the object before it is the lab's own, without kubectl's annotation).
    let microtime = lab_text("microtime-error.txt");
    assert!(microtime.starts_with("patch-rc=1\n"));
    let sentence = microtime.lines().nth(1).expect("the sentence");
    let tail = &sentence[sentence.find(": parsing time").expect("the parse error")..];
    assert!(transcript.contains(tail), "lab: {tail}");
    // can-i: yes, yes, yes, no.
    assert_eq!(lab_text("rbac-check.txt"), "get=yes\ncreate=yes\nupdate=yes\ndelete=no\n");
    let answers: Vec<&str> =
        transcript.split("$ kubectl auth can-i ").skip(1).map(|block| block.lines().nth(2).unwrap_or("")).collect();
    assert_eq!(answers, ["yes", "yes", "yes", "no"], "{transcript}");
    // The conflict: kubectl's whole stderr, as the lab wrote it; without --force-conflicts the
    // field keeps A.
    let split = lab_text("split-brain.txt");
    let lines: Vec<&str> = split.lines().collect();
    let stderr = lines[1..lines.len() - 1].join("\n");
    assert!(transcript.contains(&stderr), "lab: {stderr}");
    assert_eq!(lines.last(), Some(&"final-phase=A"));
}

#[test]
fn the_seed_lab_runs_with_the_real_kubectl() {
    if !have_kubectl() {
        eprintln!("skipped: no kubectl on PATH (install kubectl 1.27–1.33 to run the seed lab against leasesim serve)");
        return;
    }
    for version in ["1.27", "1.32"] {
        let (transcript, _) = lab_transcript(version);
        check_golden(version, &transcript);
        agrees_with_lab(&transcript);
    }
}

/// A LeaseCandidate whose version blang/semver v4.0.0's `Parse` refuses (a leading zero) is
/// refused by `kubectl apply` and `kubectl create` with kube-apiserver's 422, both causes as
/// the real validation reports them (`ValidateLeaseCandidateSpec`: the version does not parse,
/// and, taken as 0.0.0, it is below emulationVersion; docs/sources/kubernetes.md §6); the same
/// object with a valid version is created and listed with its printer columns.
#[test]
fn a_leasecandidate_with_an_invalid_version_is_refused_to_the_real_kubectl() {
    let Some((dir, _server, mut s)) = kubectl_133("LeaseCandidates") else { return };
    let candidate = |binary: &str| {
        format!(
            "apiVersion: coordination.k8s.io/v1beta1\nkind: LeaseCandidate\nmetadata:\n  name: sched-a\n  \
             namespace: kube-system\nspec:\n  leaseName: kube-scheduler\n  binaryVersion: \"{binary}\"\n  \
             emulationVersion: \"1.34.0\"\n  strategy: OldestEmulationVersion\n"
        )
    };
    std::fs::write(dir.path().join("bad.yaml"), candidate("01.34.0")).unwrap();
    std::fs::write(dir.path().join("good.yaml"), candidate("1.34.0")).unwrap();
    let refused = "The LeaseCandidate \"sched-a\" is invalid: \n\
                   * spec.binaryVersion: Invalid value: \"01.34.0\": must be a valid semantic version\n\
                   * spec.binaryVersion: Invalid value: \"01.34.0\": must be greater than or equal to `emulationVersion`\n";
    for verb in ["apply", "create"] {
        let (stdout, stderr, code) = s.run(&[verb, "-f", "bad.yaml"]);
        assert_eq!((stdout.as_str(), stderr.as_str(), code), ("", refused, 1), "kubectl {verb}");
    }
    let (stdout, _, code) = s.run(&["apply", "-f", "good.yaml"]);
    assert_eq!(
        (stdout.as_str(), code),
        ("leasecandidate.coordination.k8s.io/sched-a created\n", 0),
        "{}",
        s.transcript
    );
    let (stdout, _, code) = s.run(&["get", "leasecandidates", "-n", "kube-system", "--no-headers"]);
    assert_eq!(code, 0, "{}", s.transcript);
    let columns: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(columns[..4], ["sched-a", "kube-scheduler", "1.34.0", "1.34.0"], "{}", s.transcript);
}

/// The real kubectl (1.33) sends LeaseCandidates whose times are not MicroTimes: kube-apiserver
/// decodes a LeaseCandidate into its Go type (kubernetes/api@10b39a39
/// `coordination/v1beta1/types.go:116-153`), so `renewTime: "…T00:00:00Z"` is refused with the
/// decode error a Lease's time gives, in version `v1beta1`, by `apply` and `create` alike; a
/// MicroTime with an offset is kept in UTC with six digits, and a field the type does not have
/// is dropped under `--validate=false` (docs/sources/kubernetes.md §6).
#[test]
fn a_leasecandidate_is_decoded_as_its_go_type_for_the_real_kubectl() {
    let Some((dir, _server, mut s)) = kubectl_133("LeaseCandidates") else { return };
    let candidate = |renew: &str| {
        format!(
            "apiVersion: coordination.k8s.io/v1beta1\nkind: LeaseCandidate\nmetadata:\n  name: sched-a\n  \
             namespace: kube-system\nspec:\n  leaseName: kube-scheduler\n  binaryVersion: \"1.34.0\"\n  \
             emulationVersion: \"1.34.0\"\n  strategy: OldestEmulationVersion\n  renewTime: \"{renew}\"\n  \
             renewInterval: 5m\n"
        )
    };
    std::fs::write(dir.path().join("seconds.yaml"), candidate("2026-01-01T00:00:00Z")).unwrap();
    std::fs::write(dir.path().join("offset.yaml"), candidate("2026-01-01T02:00:00.250000+02:00")).unwrap();
    for verb in ["apply", "create"] {
        let (stdout, stderr, code) = s.run(&[verb, "-f", "seconds.yaml"]);
        let refused = "Error from server (BadRequest): error when creating \"seconds.yaml\": LeaseCandidate in \
                       version \"v1beta1\" cannot be handled as a LeaseCandidate: parsing time \
                       \"2026-01-01T00:00:00Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \
                       \".000000\"\n";
        assert_eq!((stdout.as_str(), stderr.as_str(), code), ("", refused, 1), "kubectl {verb}");
    }
    // (`--validate=false`: the field the type lacks is dropped, not refused.)
    let (stdout, _, code) = s.run(&["create", "--validate=false", "-f", "offset.yaml"]);
    assert_eq!(
        (stdout.as_str(), code),
        ("leasecandidate.coordination.k8s.io/sched-a created\n", 0),
        "{}",
        s.transcript
    );
    let (stdout, _, code) = s.run(&["get", "leasecandidate", "sched-a", "-n", "kube-system", "-o", "jsonpath={.spec}"]);
    assert_eq!(code, 0, "{}", s.transcript);
    assert_eq!(
        stdout,
        r#"{"binaryVersion":"1.34.0","emulationVersion":"1.34.0","leaseName":"kube-scheduler","renewTime":"2026-01-01T00:00:00.250000Z","strategy":"OldestEmulationVersion"}"#,
        "{}",
        s.transcript
    );
}

/// kubectl (1.33) sends `fieldValidation=Strict` unless told otherwise, and leasesim serve
/// answers as kube-apiserver does (apiserver `handlers/create.go:119-141`; docs/serve.md,
/// "Field validation"): a manifest with a misspelt field is refused by `apply`, `create` and
/// `replace` with the strict decoding error naming every unknown field; `--validate=warn` writes
/// it without them and prints a warning for each; `--validate=false` writes it silently.
#[test]
fn a_misspelt_field_is_refused_to_the_real_kubectl_as_kube_apiserver_refuses_it() {
    let Some((dir, _server, mut s)) = kubectl_133("manifests") else { return };
    std::fs::write(
        dir.path().join("typo.yaml"),
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: widget\n  namespace: default\n\
         spec:\n  holderIdentiy: pod-a\n  leaseDurationSeconds: 15\n",
    )
    .unwrap();
    let refused = |action: &str| {
        format!(
            "Error from server (BadRequest): error when {action} \"typo.yaml\": Lease in version \"v1\" cannot be \
             handled as a Lease: strict decoding error: unknown field \"spec.holderIdentiy\"\n"
        )
    };
    for verb in ["apply", "create"] {
        let (stdout, stderr, code) = s.run(&[verb, "-f", "typo.yaml"]);
        assert_eq!((stdout.as_str(), stderr.as_str(), code), ("", refused("creating").as_str(), 1), "kubectl {verb}");
    }
    let (stdout, stderr, code) = s.run(&["apply", "--validate=warn", "-f", "typo.yaml"]);
    assert_eq!((stdout.as_str(), code), ("lease.coordination.k8s.io/widget created\n", 0), "{}", s.transcript);
    // (kubectl's own klog line, that it cannot check the schema itself, is left out: leasesim
    // serves no OpenAPI schema.)
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("Warning:")).collect();
    assert_eq!(warnings, ["Warning: unknown field \"spec.holderIdentiy\""], "{}", s.transcript);
    let (stdout, stderr, code) = s.run(&["replace", "-f", "typo.yaml"]);
    assert_eq!((stdout.as_str(), stderr.as_str(), code), ("", refused("replacing").as_str(), 1), "{}", s.transcript);
    let (stdout, stderr, code) = s.run(&["replace", "--validate=false", "-f", "typo.yaml"]);
    assert_eq!(
        (stdout.as_str(), stderr.as_str(), code),
        ("lease.coordination.k8s.io/widget replaced\n", "", 0),
        "{}",
        s.transcript
    );
    let (stdout, _, code) = s.run(&["get", "lease", "widget", "-o", "jsonpath={.spec}"]);
    assert_eq!((stdout.as_str(), code), (r#"{"leaseDurationSeconds":15}"#, 0), "{}", s.transcript);
    // `kubectl patch` sends no fieldValidation: the patch is written without the field, and
    // the server's warning is printed (apiserver `handlers/patch.go:348-376`).
    let (stdout, stderr, code) =
        s.run(&["patch", "lease", "widget", "--type=merge", "-p", r#"{"spec":{"holderIdentiy":"x"}}"#]);
    assert_eq!(
        (stdout.as_str(), stderr.as_str(), code),
        (
            "lease.coordination.k8s.io/widget patched (no change)\n",
            "Warning: unknown field \"spec.holderIdentiy\"\n",
            0
        ),
        "{}",
        s.transcript
    );
    // A JSON patch is a patch too (`:334-427`): searched the same way once applied.
    let misspelt = r#"[{"op":"add","path":"/spec/holderIdentiy","value":"x"}]"#;
    let (stdout, stderr, code) = s.run(&["patch", "lease", "widget", "--type=json", "-p", misspelt]);
    assert_eq!(
        (stdout.as_str(), stderr.as_str(), code),
        (
            "lease.coordination.k8s.io/widget patched (no change)\n",
            "Warning: unknown field \"spec.holderIdentiy\"\n",
            0
        ),
        "{}",
        s.transcript
    );
    // An operation that does not apply: 422 with the generic message (`:423-426`).
    let (_, stderr, code) =
        s.run(&["patch", "lease", "widget", "--type=json", "-p", r#"[{"op":"remove","path":"/spec/nothing"}]"#]);
    assert_eq!(
        (stderr.as_str(), code),
        ("The request is invalid: the server rejected our request due to an error in our request\n", 1),
        "{}",
        s.transcript
    );
    // A client-side apply to the existing Lease is a strategic merge patch with
    // fieldValidation=Strict: refused, the patch named as Go prints its map (`:771-797`).
    let (_, stderr, code) = s.run(&["apply", "-f", "typo.yaml"]);
    assert_eq!(code, 1, "{}", s.transcript);
    assert!(
        stderr.contains(
            "patch: Invalid value: \"map[metadata:map[annotations:map[kubectl.kubernetes.io/last-applied-configuration:"
        ),
        "{stderr}"
    );
    assert!(
        stderr
            .contains(" spec:map[holderIdentiy:pod-a]]\": strict decoding error: unknown field \"spec.holderIdentiy\""),
        "{stderr}"
    );
    let (stdout, _, code) = s.run(&["get", "lease", "widget", "-o", "jsonpath={.spec}"]);
    assert_eq!((stdout.as_str(), code), (r#"{"leaseDurationSeconds":15}"#, 0), "{}", s.transcript);
    // A server-side apply of it fails in structured-merge-diff's typed conversion: a 500 with no
    // reason (apimachinery `structuredmerge.go:145-148`), kubectl's `Error from server: …`.
    let (stdout, stderr, code) = s.run(&["apply", "--server-side", "-f", "typo.yaml"]);
    assert_eq!(
        (stdout.as_str(), stderr.as_str(), code),
        (
            "",
            "Error from server: failed to create typed patch object (default/widget; coordination.k8s.io/v1, \
             Kind=Lease): .spec.holderIdentiy: field not declared in schema\n",
            1
        ),
        "{}",
        s.transcript
    );
    // A JSON patch's operations are searched too (`:403-412`): the misspelt key is warned of.
    let typo = r#"[{"op":"replace","path":"/spec/leaseDurationSeconds","vaule":20,"value":30}]"#;
    let (stdout, stderr, code) = s.run(&["patch", "lease", "widget", "--type=json", "-p", typo]);
    assert_eq!(
        (stdout.as_str(), stderr.as_str(), code),
        ("lease.coordination.k8s.io/widget patched\n", "Warning: json patch unknown field \"[0].vaule\"\n", 0),
        "{}",
        s.transcript
    );
    // An operation's field of the wrong type is the strict decoder's error, a 400 (`:403-408`;
    // sigs.k8s.io/json names the struct's field).
    let wrong = r#"[{"op":1,"path":"/spec/leaseDurationSeconds","value":40}]"#;
    let (stdout, stderr, code) = s.run(&["patch", "lease", "widget", "--type=json", "-p", wrong]);
    assert_eq!(
        (stdout.as_str(), stderr.as_str(), code),
        (
            "",
            "Error from server (BadRequest): error decoding patch: json: cannot unmarshal number into Go struct \
             field jsonPatchOp.op of type string\n",
            1
        ),
        "{}",
        s.transcript
    );
}
