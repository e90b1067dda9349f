//! The client-go safety envelope (derivation: `docs/safety-envelope.md`): when can two
//! processes both act as leader? Times are seconds on the leader's clock (= true time when the
//! leader's clock is exact); the candidate's clock runs `rate_ratio` times as fast.

/// The fastest candidate clock (relative to the leader's) that cannot produce a dual-leader
/// window with the leader cut off: `LD / (RD + RP + latency_max)`.
pub fn max_rate_ratio(lease_duration: f64, renew_deadline: f64, retry_period: f64, latency_max: f64) -> f64 {
    lease_duration / (renew_deadline + retry_period + latency_max)
}

#[derive(Clone, Debug, PartialEq)]
pub struct EnvelopeInput {
    pub lease_duration: f64,
    pub renew_deadline: f64,
    pub retry_period: f64,
    /// Upper bound on one-way latency between a node and the API server.
    pub latency_max: f64,
    /// Candidate clock rate ÷ leader clock rate.
    pub rate_ratio: f64,
    /// Longest stop-the-world pause of the leader process.
    pub pause: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    /// The earliest a candidate can act after the last renewal was written: LD / r.
    pub candidate_takeover: f64,
    /// The latest the leader acts after that renewal, leader cut off, no pause:
    /// latency_max + RP + RD.
    pub leader_gives_up: f64,
    pub max_rate_ratio: f64,
    /// The longest safe pause when the network is healthy (the resumed leader renews at once
    /// unless the lease was already taken): LD/r − RP − latency_max.
    pub max_pause_healthy: f64,
    /// The longest safe pause when renewals were already failing as the pause began (the
    /// pause outlasts the renew deadline): LD/r − (RP + RD) − latency_max.
    pub max_pause_failing: f64,
    pub inside_no_pause: bool,
    pub inside_healthy: bool,
    pub inside_failing: bool,
    /// client-go's own validation (LD > RD > JitterFactor·RP) fails with these values.
    pub client_go_refuses: Option<String>,
}

pub fn evaluate(i: &EnvelopeInput) -> Envelope {
    let takeover = i.lease_duration / i.rate_ratio;
    let gives_up = i.latency_max + i.retry_period + i.renew_deadline;
    let max_pause_healthy = takeover - i.retry_period - i.latency_max;
    let max_pause_failing = takeover - i.retry_period - i.renew_deadline - i.latency_max;
    let refuses = if i.lease_duration <= i.renew_deadline {
        Some("LeaseDuration must be greater than RenewDeadline".to_string())
    } else if i.renew_deadline <= sim_core::elector::config::JITTER_FACTOR * i.retry_period {
        Some("RenewDeadline must be greater than JitterFactor (1.2) × RetryPeriod".to_string())
    } else {
        None
    };
    Envelope {
        candidate_takeover: takeover,
        leader_gives_up: gives_up,
        max_rate_ratio: max_rate_ratio(i.lease_duration, i.renew_deadline, i.retry_period, i.latency_max),
        max_pause_healthy,
        max_pause_failing,
        inside_no_pause: takeover >= gives_up,
        inside_healthy: takeover >= gives_up && i.pause <= max_pause_healthy,
        inside_failing: takeover >= gives_up && i.pause <= max_pause_failing,
        client_go_refuses: refuses,
    }
}

/// The report `leasesim envelope` prints.
pub fn report(i: &EnvelopeInput, e: &Envelope) -> String {
    let verdict = |inside: bool| {
        if inside { "INSIDE: no dual-leader window possible" } else { "OUTSIDE: a dual-leader window is possible" }
    };
    let mut s = format!(
        "LD {}s  RD {}s  RP {}s  one-way latency ≤ {}s  candidate clock rate × {}  leader pause {}s\n\n",
        i.lease_duration, i.renew_deadline, i.retry_period, i.latency_max, i.rate_ratio, i.pause
    );
    s.push_str(&format!(
        "leader cut off:   candidate acts ≥ LD/r = {:.3}s after the last renewal; the leader acts ≤ latency + RP + RD = {:.3}s after it\n",
        e.candidate_takeover, e.leader_gives_up
    ));
    s.push_str(&format!(
        "                  rate tolerance r* = LD / (RD + RP + latency) = {:.4}  → {}\n",
        e.max_rate_ratio,
        verdict(e.inside_no_pause)
    ));
    s.push_str(&format!(
        "pause, healthy network:        longest safe pause LD/r − RP − latency = {:.3}s  → {}\n",
        e.max_pause_healthy,
        verdict(e.inside_healthy)
    ));
    s.push_str(&format!(
        "pause while renewals failing:  longest safe pause LD/r − (RP + RD) − latency = {:.3}s  → {}\n",
        e.max_pause_failing,
        verdict(e.inside_failing)
    ));
    if let Some(why) = &e.client_go_refuses {
        s.push_str(&format!("note: client-go refuses this configuration ({why})\n"));
    }
    s.push_str(&format!("\nverdict (worst case): {}\n", verdict(e.inside_failing)));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(rate_ratio: f64, pause: f64) -> EnvelopeInput {
        EnvelopeInput {
            lease_duration: 15.0,
            renew_deadline: 10.0,
            retry_period: 2.0,
            latency_max: 0.0,
            rate_ratio,
            pause,
        }
    }

    #[test]
    fn the_defaults_tolerate_a_quarter_fast_candidate_and_short_pauses() {
        let e = evaluate(&input(1.0, 0.0));
        assert_eq!(e.max_rate_ratio, 1.25);
        assert_eq!((e.max_pause_healthy, e.max_pause_failing), (13.0, 3.0));
        assert!(e.inside_failing);
        assert!(!evaluate(&input(1.5, 0.0)).inside_no_pause);
        assert!(evaluate(&input(1.0, 5.0)).inside_healthy);
        assert!(!evaluate(&input(1.0, 5.0)).inside_failing);
        assert!(!evaluate(&input(1.0, 14.0)).inside_healthy);
    }
}
