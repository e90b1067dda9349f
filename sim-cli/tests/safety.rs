//! Never lose a user's files, never hang or abort on input that validates: each problem found by
//! trying leasesim as a new user would, reproduced here through the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn leasesim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim")).current_dir(dir).args(args).output().expect("leasesim runs")
}

fn leasesim(args: &[&str]) -> Output {
    leasesim_in(&repo(), args)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const HEAD: &str = "name = \"t\"\ndescription = \"d\"\nduration = \"1m\"\n";

/// The folder as it was: every file and its contents.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn reports_never_replace_a_site_that_merely_has_an_index() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    write(&site.join("index.html"), "<h1>my site</h1>");
    write(&site.join("blog.md"), "my post");
    write(&site.join("css/site.css"), "body {}");
    let before = snapshot(&site);
    let o = leasesim(&["reports", "--out", site.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("blog.md") && stderr(&o).contains("did not write"), "{}", stderr(&o));
    assert_eq!(snapshot(&site), before, "the site was touched");
}

#[test]
fn run_and_lab_replace_only_their_own_untouched_output() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    assert!(leasesim(&["run", "renew", "--out", run_dir.to_str().unwrap()]).status.success());
    assert!(run_dir.join(sim_cli::output::MARKER).exists());
    // Its own output is replaced; with a note of the user's in it, it is not.
    assert!(leasesim(&["run", "renew", "--out", run_dir.to_str().unwrap()]).status.success());
    write(&run_dir.join("notes.md"), "mine");
    let o = leasesim(&["run", "renew", "--out", run_dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("notes.md"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(run_dir.join("notes.md")).unwrap(), "mine");
    // A folder with one of the run's file names is not a run's output.
    let other = tmp.path().join("other");
    write(&other.join("summary.json"), "{\"mine\": true}");
    write(&other.join("data.csv"), "1,2");
    assert_eq!(leasesim(&["run", "renew", "--out", other.to_str().unwrap()]).status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(other.join("summary.json")).unwrap(), "{\"mine\": true}");
    // The same for the lab, and across commands.
    let lab = tmp.path().join("lab");
    write(&lab.join("lease-widget.yaml"), "mine");
    write(&lab.join("plan.txt"), "mine");
    let o = leasesim(&["lab", "--out", lab.to_str().unwrap(), "--epoch", "2026-01-01T00:00:00Z"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(lab.join("plan.txt")).unwrap(), "mine");
    let o = leasesim(&["lab", "--out", run_dir.to_str().unwrap(), "--epoch", "2026-01-01T00:00:00Z"]);
    assert_eq!(o.status.code(), Some(2));
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(".leasesim"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn staging_left_by_a_killed_process_is_swept_on_the_next_write() {
    let tmp = tempfile::tempdir().unwrap();
    // A staging folder of a process that no longer exists (PIDs stay below 2^22 on Linux).
    let stale = tmp.path().join(".leasesim-staging-4194303-x1y2z3");
    write(&stale.join("trace.jsonl"), "{\"half\":");
    let o = leasesim(&["run", "renew", "--out", tmp.path().join("out").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stale.exists(), "the stale staging folder is still there");
}

#[cfg(unix)]
#[test]
fn an_interrupted_run_leaves_no_half_written_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // Long enough that writing its trace takes a while: the interrupt lands while it writes.
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .current_dir(repo())
        .args(["run", "renew", "--set", "duration=60h", "--trace", "on", "--max-events", "100000000"])
        .args(["--out", out.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let staging = || {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().starts_with(".leasesim-staging-"))
    };
    let started = std::time::Instant::now();
    while !staging() && started.elapsed() < std::time::Duration::from_secs(60) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(child.try_wait().unwrap().is_none(), "the run ended before it started writing: make it longer");
    // SAFETY: signalling a child process we started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(!out.exists(), "a half-written output was moved into place");
    assert!(!staging(), "a staging folder was left behind");
}

#[cfg(unix)]
#[test]
fn an_interrupted_sweep_says_what_it_kept_and_how_to_go_on() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let args = ["sweep", "--scenario", "renew", "--seeds", "1..100000", "--jobs", "1", "--out", out.to_str().unwrap()];
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .current_dir(repo())
        .args(args)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first synced rows (the file holds the header and at least one row). Only
    // whole lines count (--resume drops a row without its newline and runs it again).
    let rows = || {
        std::fs::read_to_string(out.join("runs.csv"))
            .map(|t| t.bytes().filter(|&b| b == b'\n').count().saturating_sub(1))
            .unwrap_or(0)
    };
    let started = std::time::Instant::now();
    while rows() == 0 && started.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(child.try_wait().unwrap().is_none(), "the sweep ended before it was interrupted");
    // SAFETY: signalling a child process we started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    let err = String::from_utf8_lossy(&o.stderr);
    let kept: usize = err
        .split(" of 99999 runs are kept in ")
        .next()
        .and_then(|head| head.rsplit(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of kept runs in: {err}"));
    let before = rows();
    // Ctrl-C waits for a write in progress: no row is cut, and the count said is the file's.
    assert!(std::fs::read(out.join("runs.csv")).unwrap().ends_with(b"\n"), "the interrupt cut a row short");
    assert!(kept >= 1 && kept == before, "said {kept} kept, the file holds {before}");
    let command = err.lines().last().unwrap().trim();
    assert!(command.starts_with("leasesim sweep --scenario renew") && command.ends_with("--resume"), "{err}");
    // The printed command goes on where it stopped (two more runs, then stopped again).
    let mut words: Vec<&str> = command.split(' ').skip(1).collect();
    words.extend(["--max-runs", "2", "-q"]);
    let o = Command::new(env!("CARGO_BIN_EXE_leasesim")).current_dir(repo()).args(&words).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(rows(), before + 2, "the resumed sweep did not go on from the kept rows");
}

#[test]
fn a_refused_sweep_leaves_no_lock_and_a_failed_start_leaves_no_runs_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let mine = tmp.path().join("mine");
    write(&mine.join("results.csv"), "mine");
    let o = leasesim(&["sweep", "--scenario", "renew", "--seeds", "1..3", "--out", mine.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(snapshot(&mine).len(), 1, "something was added to a refused --out");
    // Every run is over its budget: the sweep stops at its first run and leaves nothing.
    let fresh = tmp.path().join("fresh");
    let o = leasesim(&[
        "sweep",
        "--scenario",
        "renew",
        "--seeds",
        "1..3",
        "--out",
        fresh.to_str().unwrap(),
        "-q",
        "--max-events",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--max-events"), "{}", stderr(&o));
    assert!(!fresh.exists(), "a failed sweep left {:?}", fresh.exists().then(|| snapshot(&fresh)));
}

/// Validates, then runs; both with a located message and exit 2 for `needle`.
fn refused_by_validate_and_run(body: &str, needle: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.toml");
    write(&file, body);
    let v = leasesim(&["validate", file.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(2), "validate accepted:\n{body}\n{}", String::from_utf8_lossy(&v.stdout));
    assert!(stderr(&v).contains(needle), "expected {needle:?} from validate:\n{}", stderr(&v));
    let out = tmp.path().join("out");
    let r = leasesim(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(2), "run:\n{}", stderr(&r));
    assert!(!out.exists());
}

#[test]
fn input_that_would_not_run_within_bounds_is_refused_first() {
    let node = "[[nodes]]\nidentity = \"a\"\n";
    // A random process firing every nanosecond (it aborted on an 8 GB allocation).
    refused_by_validate_and_run(
        &format!(
            "{HEAD}{node}[[random_faults]]\nname = \"p\"\nkind = \"pause\"\ntarget = \"holder\"\nmean_interval = \"1ns\"\nduration = \"1s\"\n"
        ),
        "random_faults[0].mean_interval",
    );
    // Clocks that run away (it grew 300 MB/s) or run backwards.
    refused_by_validate_and_run(&format!("{HEAD}{node}clock = {{ drift_ppm = 1e12 }}\n"), "between 0.1× and 10×");
    refused_by_validate_and_run(&format!("{HEAD}{node}clock = {{ drift_ppm = 1e18 }}\n"), "drift_ppm");
    // A century of simulated time (it ran silently for as long as it took).
    refused_by_validate_and_run(
        &format!("{}{node}", HEAD.replace("1m", "876000h")),
        "longer than the simulator supports",
    );
    // Within bounds but over the event budget: refused with the estimate and the flag.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("big.toml");
    write(&file, &format!("{}{node}", HEAD.replace("1m", "8000h")));
    let v = leasesim(&["validate", file.to_str().unwrap(), "--max-events", "1000000"]);
    assert_eq!(v.status.code(), Some(2));
    assert!(stderr(&v).contains("--max-events") && stderr(&v).contains("expected to handle about"), "{}", stderr(&v));
}

#[test]
fn what_run_refuses_validate_refuses_first() {
    let node = "[[nodes]]\nidentity = \"a\"\n";
    // An empty Lease name (it "succeeded" with zero leaders), a namespace that is no DNS label.
    refused_by_validate_and_run(&format!("{HEAD}[lease]\nname = \"\"\n{node}"), "lease.name");
    refused_by_validate_and_run(&format!("{HEAD}[lease]\nnamespace = \"Op_Leader\"\n{node}"), "lease.namespace");
    // An identity that cannot be the ServiceAccount the automatic RBAC creates for it.
    refused_by_validate_and_run(&format!("{HEAD}[[nodes]]\nidentity = \"Node_A\"\n"), "nodes[0].identity");
    // The same RBAC object twice.
    let role = "[[objects]]\napiVersion = \"rbac.authorization.k8s.io/v1\"\nkind = \"Role\"\nmetadata = { name = \"r\", namespace = \"default\" }\nrules = []\n";
    refused_by_validate_and_run(&format!("{HEAD}{node}{role}{role}"), "objects[1]");
    // A from_cluster file that is not there.
    refused_by_validate_and_run(&format!("from_cluster = \"no-such-dump.yaml\"\n{HEAD}{node}"), "no-such-dump.yaml");
}

#[test]
fn sweeps_too_large_to_finish_are_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("s.toml");
    // A step of 0.001 over a wide range (it aborted at 24 GB).
    write(
        &sweep,
        &format!(
            "scenario = \"{}\"\nseeds = \"1..=2\"\n[grid]\n\"defaults.jitter_factor\" = {{ from = 0.0, to = 1000000.0, step = 0.001 }}\n",
            repo().join("scenarios/renew.toml").display()
        ),
    );
    let started = std::time::Instant::now();
    let o = leasesim(&["sweep", sweep.to_str().unwrap(), "--out", tmp.path().join("o").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("more than a grid axis may have"), "{}", stderr(&o));
    // 10^12 runs (it sat silent).
    let o = leasesim(&[
        "sweep",
        "--scenario",
        "renew",
        "--seeds",
        "0..1000000000000",
        "--grid",
        "defaults.jitter_factor=1.0,1.2",
        "--out",
        tmp.path().join("p").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("runs"), "{}", stderr(&o));
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn control_characters_in_a_dump_cannot_forge_a_healthy_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("leases.json");
    let evil = "x\r\u{1b}[2Kkube-controller-manager holder=ok transitions=0 duration=15s";
    let lease = serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "lock", "namespace": "default"},
        "spec": {"holderIdentity": evil, "leaseDurationSeconds": 15,
                 "renewTime": "2026-01-01T00:00:00.000000Z", "leaseTransitions": 1}
    });
    write(&dump, &lease.to_string());
    for args in [
        vec!["audit", dump.to_str().unwrap(), "--now", "2026-01-01T00:00:05Z"],
        vec!["expiry", dump.to_str().unwrap(), "--now", "2026-01-01T00:00:05Z"],
    ] {
        let o = leasesim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!out.contains('\u{1b}') && !out.contains('\r'), "raw control characters printed: {out:?}");
        if args[0] == "audit" {
            assert!(out.contains("\\u{1b}") && out.contains("\\r"), "{out}");
        }
    }
}

/// The image docs/distributed.md runs is built from the repository's Dockerfile (CI cannot
/// build it without a network): everything it copies exists, it builds the binary the docs
/// call, with the committed lock file, on a Rust new enough for the workspace.
#[test]
fn the_dockerfile_copies_what_exists_and_builds_leasesim() {
    let root = repo();
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).expect("a Dockerfile at the root");
    for line in dockerfile.lines().filter(|l| l.starts_with("COPY ") && !l.contains("--from=")) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        for source in &parts[1..parts.len() - 1] {
            assert!(root.join(source).exists(), "{line}: {source} does not exist");
        }
    }
    assert!(dockerfile.contains("cargo build --release --locked -p sim-cli --bin leasesim"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let needed = manifest.split("rust-version = \"").nth(1).unwrap().split('"').next().unwrap();
    let from = dockerfile.split("FROM rust:").nth(1).unwrap().split('-').next().unwrap();
    let version = |v: &str| v.split('.').map(|p| p.parse::<u32>().unwrap()).collect::<Vec<_>>();
    assert!(version(from) >= version(needed), "rust:{from} is older than rust-version {needed}");
    let docs = std::fs::read_to_string(root.join("docs/distributed.md")).unwrap();
    assert!(docs.contains("docker build -t registry.example.com/leasesim:0.1.0 ."));
}

#[test]
fn out_that_cannot_be_a_folder_is_refused_by_every_command_in_the_same_words() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("afile");
    write(&file, "mine");
    let shard = |i: &str| {
        let dir = tmp.path().join(format!("shard{i}"));
        let args = ["sweep", "--scenario", "renew", "--seeds", "1..3", "--shard", &format!("{i}/2"), "-q"];
        let o = leasesim(&[&args[..], &["--out", dir.to_str().unwrap()]].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        dir.to_str().unwrap().to_string()
    };
    let (s0, s1) = (shard("0"), shard("1"));
    let hunt = repo().join("scenarios/hunts/clock-rate.toml");
    let commands: [Vec<&str>; 4] = [
        vec!["run", "renew"],
        vec!["sweep", "--scenario", "renew", "--seeds", "1..3", "-q"],
        vec!["merge", &s0, &s1],
        vec!["hunt", hunt.to_str().unwrap()],
    ];
    for command in &commands {
        for (out, said) in [(file.clone(), "--out"), (file.join("sub"), "afile is a file")] {
            let o = leasesim(&[&command[..], &["--out", out.to_str().unwrap()]].concat());
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{command:?}: {err}");
            assert!(err.contains(said) && err.contains("writes its output as a folder"), "{command:?}: {err}");
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

/// `--out` on a mount point is refused before the run, and leaves nothing beside it (issue 33:
/// a `.leasesim-replaced-*` folder was left at every try). Needs root to mount a tmpfs; skips
/// with a message otherwise.
#[cfg(target_os = "linux")]
#[test]
fn a_mount_point_as_out_is_refused_up_front_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mp = tmp.path().join("mp");
    std::fs::create_dir(&mp).unwrap();
    let mounted = Command::new("mount").args(["-t", "tmpfs", "none"]).arg(&mp).output();
    if !mounted.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: mounting a tmpfs needs root (run `cargo test --test safety mount` as root to check it)");
        return;
    }
    let o = leasesim(&["run", "renew", "--out", mp.to_str().unwrap()]);
    let _ = Command::new("umount").arg(&mp).status();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is a mount point") && err.contains("mp/out"), "{err}");
    let names: Vec<String> =
        std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["mp"], "left beside the mount point: {names:?}");
    // A bind mount of the same file system looks like any folder until it cannot be moved:
    // the finished output is then kept beside it, and the error says where.
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let bound = Command::new("mount").arg("--bind").arg(&src).arg(&mp).status();
    if !bound.is_ok_and(|s| s.success()) {
        eprintln!("skipped the bind mount: `mount --bind` failed");
        return;
    }
    let o = leasesim(&["run", "renew", "--out", mp.to_str().unwrap()]);
    let _ = Command::new("umount").arg(&mp).status();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let kept = err.split("the new output is kept in ").nth(1).unwrap_or_else(|| panic!("{err}")).trim();
    assert!(Path::new(kept).join("summary.json").is_file(), "{err}");
    let mut names: Vec<String> =
        std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names.iter().all(|n| !n.starts_with(".leasesim-")), "{names:?}");
}
