//! The lab's runbook (step 8), written from what the simulator shows: every number in it comes
//! from a deterministic `World` run, so the text changes only when the simulator does.

use sim_core::clock::ClockStep;
use sim_core::elector::Algorithm;
use sim_core::elector::config::default_request_timeout_for;
use sim_core::model::{FaultKind, Target, TimedFault, WorldSpec};
use sim_core::net::{Cut, Latency};
use sim_core::time::{NANOS_PER_SEC, Nanos, millis, secs};
use sim_core::world::{RunResult, World};

/// The seed every runbook experiment uses (any fixed seed would do; this one is documented).
pub const RUNBOOK_SEED: u64 = 1;

const LEASE_DURATION_S: u64 = 15;
const RETRY_PERIOD_S: u64 = 2;
const SAFE_RENEW_DEADLINE_S: u64 = 10;
const UNSAFE_RENEW_DEADLINE_S: u64 = 20;
const PARTITION_AT_S: u64 = 30;
const PARTITION_FOR_S: u64 = 20;
const PARTITION_RUN_S: u64 = 120;
const SKEW_RUN_S: u64 = 300;
const SKEW_STEP_S: i64 = 150;
const LATENCY_RUN_S: u64 = 300;
const LATENCY_MAX_MS: u64 = 6_000;

/// What the runbook quotes, measured in true (simulated) time.
#[derive(Clone, Debug, PartialEq)]
pub struct RunbookNumbers {
    pub safe_dual_leader_seconds: f64,
    pub safe_failover_seconds: Option<f64>,
    pub safe_transitions: i64,
    pub unsafe_dual_leader_seconds: f64,
    pub unsafe_transitions: i64,
    /// Clocks stepping ±150 s: leaseTransitions for client-go and for the renewTime rule.
    pub skew_transitions_client_go: i64,
    pub skew_transitions_renew_time: i64,
    /// Slow API round trips (uniform up to 6 s each way): leaseTransitions with client-go.
    pub latency_transitions: i64,
}

fn run(spec: WorldSpec) -> Result<RunResult, String> {
    Ok(World::new(spec).map_err(|e| e.to_string())?.run())
}

/// Three client-go replicas on the lab's Lease; the leader is cut off from the API server at
/// 30 s for 20 s.
fn partition_run(renew_deadline_s: u64) -> Result<RunResult, String> {
    let mut spec = WorldSpec::basic(RUNBOOK_SEED, 3, Algorithm::ClientGo, secs(PARTITION_RUN_S));
    for node in &mut spec.nodes {
        node.elector_mut().renew_deadline = secs(renew_deadline_s);
        node.elector_mut().request_timeout = default_request_timeout_for(Algorithm::ClientGo, secs(renew_deadline_s));
    }
    // client-go refuses RD ≥ LD; the simulator runs it only in teaching mode.
    spec.unsafe_mode = renew_deadline_s >= LEASE_DURATION_S;
    spec.faults.push(TimedFault {
        at: secs(PARTITION_AT_S),
        target: Target::Holder,
        kind: FaultKind::Partition {
            duration: secs(PARTITION_FOR_S),
            cut: Cut::Both,
            mode: sim_core::net::PartitionMode::Drop,
        },
    });
    run(spec)
}

/// Two of three nodes whose wall clocks step ±150 s every 20 s, in opposite phase (NTP fighting
/// a bad time source).
fn skew_run(algorithm: Algorithm) -> Result<RunResult, String> {
    let mut spec = WorldSpec::basic(RUNBOOK_SEED, 3, algorithm, secs(SKEW_RUN_S));
    for (node, phase) in [(1usize, 0u64), (2, 10)] {
        let mut sign = 1i64;
        for k in 0..(SKEW_RUN_S / 20 - 1) {
            let at = secs(20 + phase + 20 * k);
            spec.nodes[node]
                .clock_mut()
                .steps
                .push(ClockStep { at, delta_ns: sign * SKEW_STEP_S * NANOS_PER_SEC as i64 });
            sign = -sign;
        }
    }
    run(spec)
}

fn latency_run() -> Result<RunResult, String> {
    let mut spec = WorldSpec::basic(RUNBOOK_SEED, 3, Algorithm::ClientGo, secs(LATENCY_RUN_S));
    for node in &mut spec.nodes {
        let slow = Latency::Uniform { min: millis(100), max: millis(LATENCY_MAX_MS) };
        let link = node.link_mut();
        link.up.latency = slow.clone();
        link.down.latency = slow;
    }
    run(spec)
}

pub fn runbook_numbers() -> Result<RunbookNumbers, String> {
    let safe = partition_run(SAFE_RENEW_DEADLINE_S)?;
    let unsafe_ = partition_run(UNSAFE_RENEW_DEADLINE_S)?;
    Ok(RunbookNumbers {
        safe_dual_leader_seconds: safe.metrics.dual_leader_seconds,
        safe_failover_seconds: safe.metrics.failover_seconds.first().copied(),
        safe_transitions: safe.metrics.lease_transitions,
        unsafe_dual_leader_seconds: unsafe_.metrics.dual_leader_seconds,
        unsafe_transitions: unsafe_.metrics.lease_transitions,
        skew_transitions_client_go: skew_run(Algorithm::ClientGo)?.metrics.lease_transitions,
        skew_transitions_renew_time: skew_run(Algorithm::RenewTime)?.metrics.lease_transitions,
        latency_transitions: latency_run()?.metrics.lease_transitions,
    })
}

fn seconds(value: f64) -> String {
    format!("{value:.1} s")
}

fn whole(ns: Nanos) -> u64 {
    ns / NANOS_PER_SEC
}

/// The runbook, in English like the rest of leasesim's output.
pub fn runbook_text(numbers: &RunbookNumbers) -> String {
    let failover = numbers.safe_failover_seconds.map(seconds).unwrap_or_else(|| "none".to_string());
    format!(
        "RUNBOOK: leader election for widget-operator (Lease op-leader/widget-operator)

1. The three settings (kube-controller-manager / kube-scheduler flags; controller-runtime
   calls them LeaseDuration, RenewDeadline, RetryPeriod):
   --leader-elect-lease-duration={ld}s  how long a candidate waits, from the last change of the
       Lease it observed, before it takes the Lease over (written as leaseDurationSeconds).
   --leader-elect-renew-deadline={rd}s  how long the leader keeps retrying a failed renewal
       before it stops leading (and, in kube-controller-manager, exits).
   --leader-elect-retry-period={rp}s    how often candidates poll and the leader renews
       (jittered up to 1.2x).

2. Rule: renew-deadline < lease-duration, and retry-period well below renew-deadline.
   Why: the leader gives up once its renewals have failed for renew-deadline; a candidate takes
   over lease-duration after it last saw the Lease change. With renew-deadline >= lease-duration
   there is a window in which the old leader still believes it leads while a candidate has
   already taken the Lease: two reconcile loops act at once. client-go refuses to start with
   \"leaseDuration must be greater than renewDeadline\"; the retry period must leave room for
   several attempts (\"renewDeadline must be greater than retryPeriod*JitterFactor\").
   Measured by leasesim (3 client-go replicas, lease-duration {ld}s, retry-period {rp}s, the
   leader cut off from the API server at {pa}s for {pf}s, seed {seed}):
     renew-deadline {rd}s: dual-leader time {safe_dual}, failover {failover}, leaseTransitions {safe_tr}
     renew-deadline {urd}s (client-go would refuse it): dual-leader time {unsafe_dual}, leaseTransitions {unsafe_tr}
   The window is not zero in every valid configuration either (a paused process, a clock that
   runs fast): leader election lowers the odds of two leaders, it does not exclude them. Keep
   reconcile loops idempotent and use server-side apply with one field manager per instance, so
   that a second leader surfaces as a conflict naming the other manager (split-brain.txt:
   apply-b-rc=1, conflict with \"widget-operator-0\": .data.phase, final-phase=A).

3. Watch leaseTransitions. It rises only when the holder changes: on rollouts and crashes, not
   otherwise. If it keeps rising (lease-audit.sh; `leasesim audit --flag` marks more than
   6 per hour of the Lease's age once it is at least 3), do not stop at the Lease - it has no
   \"expired\" field, every instance computes expiry on its own clock. Suspect:
   - clock skew between nodes: leasesim, two of three nodes whose clocks step +-{skew}s every
     20 s for {skew_run}s: an elector that compares renewTime with its own clock (as the lab's
     expiry.sh does) made leaseTransitions {skew_naive}; client-go, which compares only its own
     observations, {skew_go}. Check node clocks (timedatectl, chronyc tracking).
   - API server latency: renewals that do not finish within renew-deadline make the leader
     give up. leasesim, round trips of 0.1-{lat_max}s each way for {lat_run}s:
     leaseTransitions {latency_tr}. Check the API server's request latency for leases
     (apiserver_request_duration_seconds{{resource=\"leases\"}}) and its load.

4. Checks after any change:
   - every Lease has a holder, a duration equal to --leader-elect-lease-duration, and a
     renewTime not in the future (a future renewTime means the writer's clock is ahead);
   - the service account can get, create and update leases and nothing more
     (rbac-check.txt: get=yes create=yes update=yes delete=no);
   - renewTime and acquireTime are MicroTime: six fractional digits. A value in whole seconds
     is refused (microtime-error.txt, patch-rc=1) and the Lease is not renewed.
",
        ld = LEASE_DURATION_S,
        rd = SAFE_RENEW_DEADLINE_S,
        urd = UNSAFE_RENEW_DEADLINE_S,
        rp = RETRY_PERIOD_S,
        pa = PARTITION_AT_S,
        pf = PARTITION_FOR_S,
        seed = RUNBOOK_SEED,
        safe_dual = seconds(numbers.safe_dual_leader_seconds),
        safe_tr = numbers.safe_transitions,
        unsafe_dual = seconds(numbers.unsafe_dual_leader_seconds),
        unsafe_tr = numbers.unsafe_transitions,
        skew = SKEW_STEP_S,
        skew_run = SKEW_RUN_S,
        skew_naive = numbers.skew_transitions_renew_time,
        skew_go = numbers.skew_transitions_client_go,
        lat_max = whole(millis(LATENCY_MAX_MS)),
        lat_run = LATENCY_RUN_S,
        latency_tr = numbers.latency_transitions,
    )
}
