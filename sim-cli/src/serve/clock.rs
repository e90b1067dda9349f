//! Time for `leasesim serve`. Real clients read the kernel's clock and the server cannot speed
//! them up (Go binaries ignore `LD_PRELOAD`; kubectl-wire.md §4), so the world runs at wall rate
//! by default and every server timestamp comes from the same clock as the clients'.
//! `scaled:K` runs K times faster, for clients that share the scaled clock through
//! libfaketime (the Python client); a test clock is set by hand.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use sim_core::time::{Nanos, UnixNanos};

#[derive(Clone, Debug)]
pub enum ServeClock {
    /// True time is wall time since `start` (at rate `rate`: 1 for `wall`).
    Running { start: Instant, rate: f64 },
    /// Set by hand (tests): true time is what was last set.
    Manual(Nanos),
}

/// `--clock wall|scaled:K`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClockMode {
    Wall,
    Scaled(f64),
}

impl ClockMode {
    pub fn parse(text: &str) -> Result<ClockMode, String> {
        if text == "wall" {
            return Ok(ClockMode::Wall);
        }
        let Some(k) = text.strip_prefix("scaled:") else {
            return Err(format!("--clock {text:?}: expected wall or scaled:K (K a rate above 1, such as scaled:10)"));
        };
        match k.parse::<f64>() {
            Ok(k) if k.is_finite() && (1.0..=1000.0).contains(&k) => Ok(ClockMode::Scaled(k)),
            _ => Err(format!("--clock {text:?}: K must be a number from 1 to 1000")),
        }
    }

    pub fn rate(self) -> f64 {
        match self {
            ClockMode::Wall => 1.0,
            ClockMode::Scaled(k) => k,
        }
    }
}

impl ServeClock {
    pub fn running(mode: ClockMode) -> ServeClock {
        ServeClock::Running { start: Instant::now(), rate: mode.rate() }
    }

    /// True time since the server started.
    pub fn now(&self) -> Nanos {
        match self {
            ServeClock::Running { start, rate } => (start.elapsed().as_nanos() as f64 * rate) as Nanos,
            ServeClock::Manual(t) => *t,
        }
    }

    /// Real (wall) seconds until true time `t`, for a timer that waits for it.
    pub fn real_secs_until(&self, t: Nanos) -> f64 {
        match self {
            ServeClock::Running { rate, .. } => t.saturating_sub(self.now()) as f64 / 1e9 / rate,
            ServeClock::Manual(_) => 0.0,
        }
    }
}

/// The machine's wall clock now, in Unix nanoseconds: the epoch of a served world.
pub fn wall_now() -> UnixNanos {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}
