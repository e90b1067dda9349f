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
