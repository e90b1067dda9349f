//! The real Python client (`kubernetes==37.0.2`, `LeaseLock`) elects against `leasesim serve`
//! under three faults on its leader: `benches/python-client/run.py`. Behind `--ignored` (about
//! three minutes of wall time, pip needs the network once):
//!
//!     cargo test -p sim-cli --test python_client_serve -- --ignored
//!
//! The facts checked are the coarse ones the simulated python-client agrees with
//! (benches/python-client/README.md): a killed leader is replaced about a lease duration after
//! its last renewal, with no overlap; a leader whose renewals get 500 stops before the takeover;
//! a leader whose GET hangs keeps leading beside the new one until the call returns.

use std::path::Path;
use std::process::Command;

fn python_ready() -> Result<(), String> {
    let ok = Command::new("python3").args(["-c", "import venv, ensurepip"]).status().is_ok_and(|s| s.success());
    if !ok {
        return Err("python3 with venv and ensurepip is needed (apt-get install python3-venv)".into());
    }
    Ok(())
}

#[test]
#[ignore = "real Python client processes for ~3 minutes: cargo test -p sim-cli --test python_client_serve -- --ignored"]
fn the_real_python_client_against_serve_agrees_with_the_simulated_one() {
    if let Err(why) = python_ready() {
        eprintln!("skipped: {why}");
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new("python3")
        .arg(repo.join("benches/python-client/run.py"))
        .args(["--repeats", "1", "--out"])
        .arg(tmp.path().join("out"))
        .arg("--leasesim")
        .arg(env!("CARGO_BIN_EXE_leasesim"))
        .arg("--venv")
        .arg(tmp.path().join("venv"))
        .output()
        .expect("python3 runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() && text.contains("pip") && !tmp.path().join("out/results.json").exists() {
        eprintln!("skipped: kubernetes==37.0.2 could not be installed (no package index?):\n{text}");
        return;
    }
    assert!(out.status.success(), "{text}");
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("out/results.json")).unwrap()).unwrap();
    let by =
        |name: &str| results["results"].as_array().unwrap().iter().find(|r| r["scenario"] == name).unwrap().clone();
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    for r in results["results"].as_array().unwrap() {
        assert_eq!(r["fault"]["a_held_lease"], true, "A led when the fault came: {r}");
    }
    // kill: replaced one lease duration (6 s, plus up to a retry period) after its last write.
    let kill = by("kill");
    let gap = f(&kill["takeover"]["client_log"]) - f(&kill["a_last_successful_write"]);
    assert!((5.5..=9.0).contains(&gap), "takeover {gap:.2} s after A's last write: {kill}");
    assert_eq!(f(&kill["dual_leader_clients"]["seconds"]), 0.0);
    assert!(f(&kill["dual_leader_server"]["dual_leader_seconds"]) < 0.5, "{kill}");
    // put500: A stops at RenewDeadline, before anyone takes over.
    let put = by("put500");
    assert!(f(&put["a_stopped"]) < f(&put["takeover"]["client_log"]), "{put}");
    assert_eq!(f(&put["dual_leader_clients"]["seconds"]), 0.0);
    // gethang: A leads on while its GET hangs (no request timeout): a long overlap.
    let hang = by("gethang");
    assert!(f(&hang["dual_leader_clients"]["seconds"]) > 10.0, "{hang}");
    assert!(f(&hang["dual_leader_server"]["dual_leader_seconds"]) > 10.0, "{hang}");
}
