//! Inputs that validate must run to an end: finished, or stopped with a message (exit 2),
//! never a panic, a hang or memory filled. Each case here was found by fuzzing the command
//! line with mutated shipped scenarios (2026-12-01) and reduced to its smallest form.

use sim_cli::run;
use sim_cli::scenario_file;

fn load(body: &str) -> scenario_file::LoadedScenario {
    let source = format!("name = \"m\"\ndescription = \"m\"\n{body}");
    scenario_file::load("m.toml", &source, &[]).unwrap_or_else(|e| panic!("{}", e.message))
}

/// A Retry-After resend held back by a pause of its process past the request's deadline: the
/// deadline's timeout used to be scheduled at the (past) deadline, and the queue refused it
/// ("event scheduled in the past"). The context ended first, so the timeout fires when the
/// process resumes and the request is not sent again.
#[test]
fn a_resend_held_by_a_pause_past_its_deadline_times_out_when_the_process_resumes() {
    let loaded = load(
        r#"duration = "2m"
[[nodes]]
[[faults]]
at = "30s"
target = "holder"
kind = "pause"
duration = "25s"
[[faults]]
at = "30s"
target = "server"
kind = "server-outage"
duration = "30s"
[[server.errors]]
from = "0s"
duration = "30s"
code = 503
probability = 0.5
"#,
    );
    for seed in 0..=8 {
        run::run(&loaded, Some(seed), true).unwrap_or_else(|e| panic!("seed {seed}: {}", e.message));
    }
}

fn stuck(body: &str) -> String {
    match run::run(&load(body), Some(1), true) {
        Ok(_) => panic!("the run ended"),
        Err(e) => e.message,
    }
}

/// The C# client's acquire loop races each attempt against a delay of RP · JitterFactor ·
/// (1 + U): with a jitter factor of 0 the delay wins at once, every time, and time never moves
/// on (the real client would spin the same way).
#[test]
fn a_loop_that_never_waits_is_stopped_as_stuck_not_run_until_memory_fills() {
    let message = stuck("duration = \"10s\"\n[[nodes]]\nalgorithm = \"csharp-client\"\njitter_factor = 0.0\n");
    assert!(message.contains("the run is stuck at 0s of 10s simulated"), "{message}");
    assert!(message.contains("1,000,000 events in a row"), "{message}");
    // A zero request timeout that a client retries at once, in its loop or by restarting.
    for body in [
        "duration = \"1s\"\n[[nodes]]\nalgorithm = \"kube-lease-manager\"\nrequest_timeout = \"0s\"\nafter_lost = \"rejoin\"\n",
        "duration = \"90s\"\n[[nodes]]\nalgorithm = \"python-client\"\nrestart_delay = \"0s\"\nrequest_timeout = \"0s\"\n",
    ] {
        let message = stuck(body);
        assert!(message.contains("the run is stuck at"), "{message}");
    }
}

/// Wall times outside what i64 nanoseconds since 1970 hold (1677-09-21 … 2262-04-11) used to
/// wrap silently; they are refused where they enter, with the range in the message (issue 33).
#[test]
fn wall_times_beyond_the_representable_range_are_refused_where_they_enter() {
    let refused = |body: &str| {
        let loaded = load(body);
        let e = loaded.scenario.to_world_spec(false).expect_err(body);
        assert!(e.message.contains("1677-09-21 to 2262-04-11"), "{body}: {}", e.message);
        e.path.join(".")
    };
    assert_eq!(refused("epoch = \"2263-01-01T00:00:00Z\"\nduration = \"1m\"\n[[nodes]]\n"), "epoch");
    assert_eq!(refused("epoch = \"2262-04-11T23:40:00Z\"\nduration = \"1h\"\n[[nodes]]\n"), "epoch");
    assert_eq!(
        refused("epoch = \"1677-09-21T01:00:00Z\"\nduration = \"1m\"\n[[nodes]]\nclock.offset = \"-2h\"\n"),
        "nodes.0.clock"
    );
    assert_eq!(
        refused("epoch = \"2262-04-11T20:00:00Z\"\nduration = \"1m\"\n[[nodes]]\nclock.offset = \"5h\"\n"),
        "nodes.0.clock"
    );
    // Just inside: accepted and run.
    let ok = load("epoch = \"2262-04-11T23:00:00Z\"\nduration = \"1m\"\n[[nodes]]\n");
    run::run(&ok, None, false).unwrap_or_else(|e| panic!("{}", e.message));
    // The lab's own clock runs past its epoch: refused near the end, with the range.
    let tmp = tempfile::tempdir().unwrap();
    let lab = std::process::Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .args(["lab", "--out", tmp.path().join("lab").to_str().unwrap(), "--epoch", "2262-04-11T23:40:00Z"])
        .output()
        .unwrap();
    assert_eq!(lab.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&lab.stderr).contains("2262-04-11"));
}
