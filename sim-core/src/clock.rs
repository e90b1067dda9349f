//! Node clocks: what each node believes the time is.
//!
//! A node has two readings, as a Linux process does:
//! - the **monotonic** clock, which timers, tickers, deadlines and Go's `time.Since` follow. It
//!   runs at the oscillator's rate: true time scaled by the drift, plus the periodic wander.
//!   Steps do not move it.
//! - the **wall** clock (`CLOCK_REALTIME`), which is what gets written into a Lease. It is the
//!   monotonic reading plus the epoch, a constant offset and every step taken so far.
//!
//! All arithmetic is integer nanoseconds except the wander's sine, which is computed by our own
//! series (basic IEEE operations only) so it is the same on every platform.

use crate::time::{Nanos, UnixNanos};

/// An instantaneous jump of the wall clock (an NTP step, a manual `date -s`).
#[derive(Clone, Debug, PartialEq)]
pub struct ClockStep {
    /// True time at which the step happens.
    pub at: Nanos,
    /// How far the wall clock jumps (negative: backwards).
    pub delta_ns: i64,
}

/// A sinusoidal error on the oscillator: `amplitude * sin(2π t / period + phase)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Wander {
    pub amplitude_ns: i64,
    pub period_ns: Nanos,
    pub phase_rad: f64,
}

/// The shape of one node's clock.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClockSpec {
    /// Constant wall-clock offset from true time (positive: this node's wall clock is ahead).
    pub offset_ns: i64,
    /// Rate error in parts per billion: the clock advances `1 + drift_ppb / 1e9` seconds per true
    /// second. (Scenario files say ppm; 1 ppm = 1000 ppb.)
    pub drift_ppb: i64,
    /// Wall-clock steps, sorted by time.
    pub steps: Vec<ClockStep>,
    pub wander: Option<Wander>,
}

/// One node's clock, ready to answer conversions.
#[derive(Clone, Debug)]
pub struct NodeClock {
    spec: ClockSpec,
    epoch: UnixNanos,
    /// No wander: the monotonic reading is a linear function of true time (then inverted in
    /// closed form).
    linear_only: bool,
    /// The clock's rate, exactly: local nanoseconds per 1e9 true ones (1e9 + drift).
    rate: u64,
    /// floor((2^64 - 1) / rate): dividing by the rate is then a multiplication and at most one
    /// correction (see [`NodeClock::div_rate`]), not a divide instruction per timer.
    rate_reciprocal: u64,
    /// The true times up to which `t + floor(t·drift / 1e9)` cannot overflow an i64 (see
    /// [`NodeClock::monotonic`]): `i64::MAX / (1 + ⌈|drift| / 1e9⌉) - 1`, about 146 years
    /// for any drift below one second a second.
    exact_until: u64,
}

/// A monotonic reading (`mono`) at true time `t`. For a linear clock (no wander) within the
/// exact range it also keeps `frac`, the remainder of `t·R / 1e9` (R = 1e9 + drift, so
/// `t·R = 1e9·mono + frac`), from which the readings after it and a timer armed at it follow
/// with one multiplication or one division by the rate ([`NodeClock::reading_after`],
/// [`NodeClock::timer_reading`]); otherwise those are computed as any reading is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    pub t: Nanos,
    pub mono: i64,
    frac: u64,
}

impl Reading {
    /// `frac` of a reading with no closed form (a clock with wander, or past the exact range).
    const SEARCHED: u64 = u64::MAX;
}

/// `x.div_euclid(1e9)` for `x = r·d` with `0 <= r < 1e9` and a drift `new` accepts
/// (`-1e9 < d <= MAX_DRIFT_PPB`), so `-1e18 < x <= 9e18`: shifted by 1e18 it is positive and
/// below 2^64, and an unsigned division by the constant is a multiplication and a shift, where
/// the signed floor division also needs the remainder and a correction (the plan's hottest
/// line in `perf`, docs/performance.md, 2026-12-06).
#[inline(always)]
fn floor_ppb(x: i64) -> i64 {
    const SHIFT: u64 = PPB_U64 * PPB_U64;
    debug_assert!(x > -(SHIFT as i64));
    ((x as u64).wrapping_add(SHIFT) / PPB_U64) as i64 - PPB as i64
}

/// [`NodeClock::exact_until`] for `drift_ppb`.
fn exact_until(drift_ppb: i64) -> u64 {
    i64::MAX as u64 / (1 + drift_ppb.unsigned_abs().div_ceil(PPB_U64)) - 1
}

const PPB: i128 = 1_000_000_000;
const PPB_U64: u64 = 1_000_000_000;
/// Largest drift (parts per billion, either way) the integer arithmetic of [`NodeClock`] covers
/// exactly: a rate of 1 ± 9 (so r·d stays within an i64). Scenario validation keeps drifts far
/// inside it.
pub const MAX_DRIFT_PPB: i64 = 9_000_000_000;

impl NodeClock {
    pub fn new(mut spec: ClockSpec, epoch: UnixNanos) -> Result<Self, String> {
        if spec.drift_ppb <= -1_000_000_000 {
            return Err(format!(
                "clock drift of {} ppm would stop or reverse the clock: expected more than -1000000 ppm",
                spec.drift_ppb / 1000
            ));
        }
        if spec.drift_ppb > MAX_DRIFT_PPB {
            return Err(format!(
                "clock drift of {} ppm is beyond what the simulator's clocks represent: expected at most {} ppm",
                spec.drift_ppb / 1000,
                MAX_DRIFT_PPB / 1000
            ));
        }
        if let Some(w) = &spec.wander {
            if w.period_ns == 0 {
                return Err("clock wander period must be greater than zero".into());
            }
            // The monotonic clock must never run backwards: the wander's steepest slope
            // (2π A / P) must stay below the clock's own rate.
            let slope = 2.0 * std::f64::consts::PI * w.amplitude_ns.unsigned_abs() as f64 / w.period_ns as f64;
            let rate = 1.0 + spec.drift_ppb as f64 / 1e9;
            if slope >= rate * 0.999 {
                return Err(format!(
                    "clock wander of amplitude {}ns over a period of {}ns would make the clock run backwards: \
                     expected 2π·amplitude/period below the clock rate {rate}",
                    w.amplitude_ns, w.period_ns
                ));
            }
        }
        spec.steps.sort_by_key(|s| s.at);
        let linear_only = spec.wander.is_none();
        let rate = (PPB as i64 + spec.drift_ppb) as u64;
        let exact_until = exact_until(spec.drift_ppb);
        Ok(NodeClock { spec, epoch, linear_only, rate, rate_reciprocal: u64::MAX / rate, exact_until })
    }

    /// Adds a wall-clock step at true time `step.at`, which must not precede earlier steps
    /// (faults fire in time order, so a step added during a run is always the latest).
    pub fn add_step(&mut self, step: ClockStep) {
        debug_assert!(self.spec.steps.last().is_none_or(|s| s.at <= step.at));
        self.spec.steps.push(step);
    }

    /// A perfect clock: monotonic = true time, wall = epoch + true time.
    pub fn perfect(epoch: UnixNanos) -> Self {
        NodeClock {
            spec: ClockSpec::default(),
            epoch,
            linear_only: true,
            rate: PPB_U64,
            rate_reciprocal: u64::MAX / PPB_U64,
            exact_until: exact_until(0),
        }
    }

    pub fn spec(&self) -> &ClockSpec {
        &self.spec
    }

    #[inline(always)]
    fn wander_at(&self, t: Nanos) -> i64 {
        match &self.spec.wander {
            None => 0,
            Some(w) => wander_value(w, t),
        }
    }

    /// Monotonic reading at true time `t` (nanoseconds since this process's clock origin, which
    /// is the start of the run). Non-decreasing in `t`.
    #[inline(always)]
    pub fn monotonic(&self, t: Nanos) -> i64 {
        let d = self.spec.drift_ppb;
        if d == 0 && self.linear_only {
            return t.min(i64::MAX as u64) as i64; // a perfect oscillator: the identity (saturated)
        }
        if t <= self.exact_until {
            // t + floor(t·d / 1e9) without 128-bit division: with t = q·1e9 + r, the q·1e9·d
            // part divides exactly, |r·d| < 1e9 · |d| fits an i64 for the drifts `new` accepts,
            // and |q·d + floor(r·d / 1e9)| <= t·⌈|d|/1e9⌉ + 1: the sum fits an i64.
            let (q, r) = ((t / PPB_U64) as i64, (t % PPB_U64) as i64);
            let linear = t as i64 + q * d + floor_ppb(r * d);
            return if self.linear_only { linear } else { linear.saturating_add(self.wander_at(t)) };
        }
        // Far beyond any run (a search probing centuries ahead): exact in 128 bits, saturated.
        let wide = t as i128 + (t as i128 * d as i128).div_euclid(PPB);
        (wide.clamp(i64::MIN as i128, i64::MAX as i128) as i64).saturating_add(self.wander_at(t))
    }

    /// Sum of the steps taken at or before true time `t`.
    fn steps_until(&self, t: Nanos) -> i64 {
        self.spec.steps.iter().take_while(|s| s.at <= t).map(|s| s.delta_ns).sum()
    }

    /// Wall-clock reading at true time `t`, as a Unix instant.
    pub fn wall(&self, t: Nanos) -> UnixNanos {
        self.wall_from_monotonic(t, self.monotonic(t))
    }

    /// The wall reading at `t` given the monotonic one there (both readings of one instant
    /// without computing the monotonic one twice).
    #[inline]
    pub fn wall_from_monotonic(&self, t: Nanos, monotonic: i64) -> UnixNanos {
        let steps = if self.spec.steps.is_empty() { 0 } else { self.steps_until(t) };
        self.epoch + self.spec.offset_ns + monotonic + steps
    }

    /// The wall clock's offset from true wall time at `t` (what an NTP monitor would report).
    pub fn wall_offset(&self, t: Nanos) -> i64 {
        self.wall(t) - (self.epoch + t as i64)
    }

    /// The earliest true time `t >= from` at which the monotonic clock reads at least `target`.
    /// This is when a local timer fires: a timer of `d` armed at true time `t0` fires at
    /// `true_time_when_monotonic_reaches(t0, monotonic(t0) + d)`.
    pub fn true_time_when_monotonic_reaches(&self, from: Nanos, target: i64) -> Nanos {
        let reading = self.monotonic(from);
        self.reaches(from, reading, target)
    }

    /// [`Self::true_time_when_monotonic_reaches`] given the reading at `from`.
    #[inline]
    fn reaches(&self, from: Nanos, reading: i64, target: i64) -> Nanos {
        match self.reaches_known(from, reading, target) {
            Ok((t, _)) | Err(t) => t,
        }
    }

    /// [`Self::reaches`], and the monotonic reading at the answer where it comes for free
    /// (`Ok`); `Err` with the answer alone where it does not (a search).
    #[inline(always)]
    fn reaches_known(&self, from: Nanos, reading: i64, target: i64) -> Result<(Nanos, i64), Nanos> {
        if reading >= target {
            return Ok((from, reading));
        }
        if self.linear_only {
            if self.spec.drift_ppb == 0 {
                return Ok((target as Nanos, target)); // monotonic(from) < target, so target > from
            }
            // t + floor(t·d/1e9) = floor(t·R/1e9) with R = 1e9 + d, so the answer is the
            // earliest t with t·R >= target·1e9: ceil(target·1e9 / R). With target = a·R + b,
            // that is a·1e9 + ceil(b·1e9 / R), and b·1e9 < R·1e9 fits 64 bits for every drift
            // `new` accepts. (`reading >= 0` here, so `target > 0`.)
            let target = target as u64;
            let (a, b) = self.div_rate(target);
            let (c, e) = self.div_rate(b * PPB_U64);
            let exact = a.checked_mul(PPB_U64).and_then(|t| t.checked_add(c + u64::from(e > 0)));
            if let Some(t) = exact.filter(|&t| t <= i64::MAX as u64) {
                // The reading at `from` is below the target, so the answer lies after `from`.
                debug_assert!(t > from && self.monotonic(t) >= target as i64 && self.monotonic(t - 1) < target as i64);
                // With b·1e9 = c·R + e: t·R = target·1e9 + (R - e if e > 0), so the reading
                // there is the target plus floor((R - e) / 1e9).
                let over = if e > 0 { (self.rate - e) / PPB_U64 } else { 0 };
                // (Saturated as the reading is: a target near i64::MAX, a timer of centuries.)
                let at = (target as i64).saturating_add(over as i64);
                debug_assert_eq!(at, self.monotonic(t));
                return Ok((t, at));
            }
            // Beyond any run (a search probing centuries ahead): search, as with wander.
            return Err(self.earliest_reaching(from, target as i64));
        }
        // With wander: search from `from` itself.
        Err(self.earliest_reaching(from, target))
    }

    /// `(x / rate, x % rate)`, exactly. With m = floor((2^64 - 1)/R), `x·m / 2^64` lies in
    /// (x/R - 1, x/R): the reciprocal's quotient is the true one or one below it, never above.
    #[inline(always)]
    fn div_rate(&self, x: u64) -> (u64, u64) {
        let mut q = ((x as u128 * self.rate_reciprocal as u128) >> 64) as u64;
        let mut r = x - q * self.rate;
        while r >= self.rate {
            q += 1;
            r -= self.rate;
        }
        (q, r)
    }

    /// The earliest `t >= from` with `monotonic(t) >= target`, given `monotonic(from) < target`:
    /// gallop from `from` until the answer is bracketed, then bisect. The reading is
    /// non-decreasing, so the bracket `monotonic(lo) < target <= monotonic(hi)` pins it. A target
    /// the clock does not reach within `u64` nanoseconds (only a clock far slower than scenarios
    /// allow) gives `Nanos::MAX`, a timer that never fires, instead of galloping forever.
    fn earliest_reaching(&self, from: Nanos, target: i64) -> Nanos {
        let mut lo = from;
        let mut hi;
        let mut step: u64 = 1;
        loop {
            hi = lo.saturating_add(step);
            if self.monotonic(hi) >= target {
                break;
            }
            if hi == Nanos::MAX {
                return Nanos::MAX;
            }
            lo = hi;
            step = step.saturating_mul(2);
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.monotonic(mid) >= target {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    /// When a local timer of `duration` armed at true time `now` fires, in true time. Inline:
    /// every timer and request timeout calls it, and the call's register saves cost a fifth of it.
    #[inline]
    pub fn timer_fires_at(&self, now: Nanos, duration: Nanos) -> Nanos {
        self.timer_fires_at_reading(now, self.monotonic(now), duration)
    }

    /// [`Self::timer_fires_at`] given `reading`, the monotonic reading at `now` (which the
    /// caller has just taken: a process reads its clock for every input, and the timers that
    /// input arms are armed at the same instant).
    #[inline]
    pub fn timer_fires_at_reading(&self, now: Nanos, reading: i64, duration: Nanos) -> Nanos {
        debug_assert_eq!(reading, self.monotonic(now));
        self.reaches(now, reading, reading.saturating_add(duration as i64))
    }

    /// [`Self::timer_fires_at_reading`], and the monotonic reading when it fires (most often
    /// known from the same arithmetic: a quiet stretch's plan reads the clock there next).
    #[inline]
    pub fn timer_fires_with_reading(&self, now: Nanos, reading: i64, duration: Nanos) -> (Nanos, i64) {
        debug_assert_eq!(reading, self.monotonic(now));
        match self.reaches_known(now, reading, reading.saturating_add(duration as i64)) {
            Ok(known) => known,
            Err(t) => (t, self.monotonic(t)),
        }
    }

    /// The monotonic reading at `t`, kept with what the next ones follow from in closed form
    /// ([`Reading`]).
    #[inline(always)]
    pub fn reading(&self, t: Nanos) -> Reading {
        self.reading_known(t, self.monotonic(t))
    }

    /// [`Self::reading`] given the monotonic reading at `t`.
    #[inline(always)]
    fn reading_known(&self, t: Nanos, mono: i64) -> Reading {
        debug_assert_eq!(mono, self.monotonic(t));
        // t·R = 1e9·mono + frac with frac < 1e9 < 2^64: the low 64 bits of both products give
        // it exactly.
        let frac = if self.linear_only && t <= self.exact_until {
            t.wrapping_mul(self.rate).wrapping_sub((mono as u64).wrapping_mul(PPB_U64))
        } else {
            Reading::SEARCHED
        };
        Reading { t, mono, frac }
    }

    /// The reading `delta` after `from`: `⌊(t·R + delta·R) / 1e9⌋ = mono + ⌊(frac + delta·R) /
    /// 1e9⌋`, one multiplication where [`Self::monotonic`] takes a division of `t` and one of
    /// `r·d` (a quiet stretch's plan reads its clock at each answer, `delta` after the start).
    #[inline(always)]
    pub fn reading_after(&self, from: Reading, delta: Nanos) -> Reading {
        let t = from.t.saturating_add(delta);
        if from.frac != Reading::SEARCHED
            && t <= self.exact_until
            && let Some(x) = delta.checked_mul(self.rate).and_then(|x| x.checked_add(from.frac))
        {
            let reading = Reading { t, mono: from.mono + (x / PPB_U64) as i64, frac: x % PPB_U64 };
            debug_assert_eq!(reading, self.reading(t));
            return reading;
        }
        self.reading(t)
    }

    /// When a timer of `duration` armed at `from` fires, and the reading there: the earliest
    /// `t = from.t + k` with `t·R >= 1e9·(mono + duration)`, so `k = ⌈(1e9·duration − frac) /
    /// R⌉` — one division by the rate where [`Self::timer_fires_with_reading`] takes two.
    #[inline(always)]
    pub fn timer_reading(&self, from: Reading, duration: Nanos) -> Reading {
        if from.frac != Reading::SEARCHED
            && duration > 0
            && let Some(n) = duration.checked_mul(PPB_U64)
        {
            // n ≥ 1e9 > frac: the timer fires after `from`.
            let (q, r) = self.div_rate(n - from.frac);
            // k·R = n − frac + (R − r if r > 0): the reading there is the target plus
            // ⌊that excess / 1e9⌋.
            let (k, excess) = if r > 0 { (q + 1, self.rate - r) } else { (q, 0) };
            let t = from.t.saturating_add(k);
            if t <= self.exact_until {
                let mono = from.mono + duration as i64 + (excess / PPB_U64) as i64;
                let reading = Reading { t, mono, frac: excess % PPB_U64 };
                debug_assert_eq!((reading.t, reading.mono), self.timer_fires_with_reading(from.t, from.mono, duration));
                return reading;
            }
        }
        let (t, mono) = self.timer_fires_with_reading(from.t, from.mono, duration);
        self.reading_known(t, mono)
    }

    /// The earliest true time at which the wall clock reads at least `target` (ignoring steps
    /// that happen later than that moment; with backward steps, the first crossing).
    pub fn true_time_when_wall_reaches(&self, from: Nanos, target: UnixNanos) -> Nanos {
        // Between steps the wall clock is the monotonic clock plus a constant.
        let mut start = from;
        loop {
            let base = self.wall(start) - self.monotonic(start);
            let next_step = self.spec.steps.iter().find(|s| s.at > start).map(|s| s.at);
            let t = self.true_time_when_monotonic_reaches(start, target - base);
            match next_step {
                Some(step_at) if t >= step_at => start = step_at,
                _ => return t,
            }
            if self.wall(start) >= target {
                return start;
            }
        }
    }
}

/// The wander's contribution at `t` (zero at t = 0 so that the monotonic clock starts at 0).
fn wander_value(w: &Wander, t: Nanos) -> i64 {
    let x = 2.0 * std::f64::consts::PI * (t % w.period_ns) as f64 / w.period_ns as f64;
    let v = w.amplitude_ns as f64 * (portable_sin(x + w.phase_rad) - portable_sin(w.phase_rad));
    v.round() as i64
}

/// sin(x) from basic IEEE-754 operations only, so every platform gets the same bits (libm's
/// `sin` is not guaranteed to). Range-reduced to [-π/2, π/2], then a Taylor series to x^17,
/// accurate to ~1e-15 there: far below a nanosecond for any sensible amplitude.
pub fn portable_sin(x: f64) -> f64 {
    use std::f64::consts::PI;
    let two_pi = 2.0 * PI;
    let mut r = x - two_pi * (x / two_pi).floor(); // [0, 2π)
    if r > PI {
        r -= two_pi; // (-π, π]
    }
    if r > PI / 2.0 {
        r = PI - r;
    } else if r < -PI / 2.0 {
        r = -PI - r;
    }
    let r2 = r * r;
    let mut term = r;
    let mut sum = r;
    let mut n = 1.0;
    for _ in 0..8 {
        term *= -r2 / ((n + 1.0) * (n + 2.0));
        sum += term;
        n += 2.0;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{DEFAULT_EPOCH_UNIX_NANOS as EPOCH, secs};

    fn clock(offset_ns: i64, drift_ppb: i64) -> NodeClock {
        NodeClock::new(ClockSpec { offset_ns, drift_ppb, ..Default::default() }, EPOCH).unwrap()
    }

    /// A clock at every drift `new` accepts (the rate up to 10e9: R - e up to nine whole
    /// seconds), and one with wander (a search).
    fn every_kind_of_clock() -> Vec<NodeClock> {
        let drifts = [-999_999_999, -300_000_000, -7, -1, 0, 1, 7, 1_000, 300_000_000, 999_999_999, 1_000_000_000];
        let drifts = drifts.into_iter().chain([1_000_000_001, 4_321_987_654, MAX_DRIFT_PPB - 1, MAX_DRIFT_PPB]);
        let mut clocks: Vec<NodeClock> = drifts.map(|d| clock(0, d)).collect();
        let wander = Wander { amplitude_ns: 50_000_000, period_ns: secs(60), phase_rad: 0.3 };
        clocks.push(NodeClock::new(ClockSpec { wander: Some(wander), ..Default::default() }, EPOCH).unwrap());
        clocks
    }

    /// The reading `timer_fires_with_reading` gives with the firing time is the clock's own
    /// there, at every drift `new` accepts (the rate up to 10e9: R - e up to nine whole
    /// seconds), with wander (a search) and with none.
    #[test]
    fn a_timer_s_firing_reading_is_the_clock_s_reading_there() {
        for c in &every_kind_of_clock() {
            for now in [0, 1, 999_999_999, 1_000_000_001, secs(3_599) + 123_456_789] {
                for duration in [0, 1, 2, 999_999_999, 1_000_000_000, secs(2) + 17, secs(15)] {
                    let reading = c.monotonic(now);
                    let (t, at) = c.timer_fires_with_reading(now, reading, duration);
                    assert_eq!(t, c.timer_fires_at_reading(now, reading, duration));
                    assert_eq!(at, c.monotonic(t), "drift {} ppb, {now} + {duration}", c.spec.drift_ppb);
                }
            }
        }
    }

    /// The closed forms a quiet stretch's plan reads its clock with (`Reading`) give what the
    /// general conversions give, at every drift the arithmetic covers, near the ends of its
    /// exact range, and with wander (where they fall back to the general ones).
    #[test]
    fn readings_advanced_in_closed_form_are_the_clock_s_readings() {
        for c in &every_kind_of_clock() {
            let far = [c.exact_until - secs(20), c.exact_until - 1, c.exact_until, c.exact_until + 1];
            for start in [0, 1, 999_999_999, 1_000_000_001, secs(3_599) + 123_456_789].into_iter().chain(far) {
                let from = c.reading(start);
                assert_eq!(from.mono, c.monotonic(start));
                for delta in [0, 1, 999_999_999, 1_000_000_000, secs(2) + 17, secs(15), u64::MAX / 2] {
                    let after = c.reading_after(from, delta);
                    let t = start.saturating_add(delta);
                    assert_eq!(
                        (after.t, after.mono),
                        (t, c.monotonic(t)),
                        "drift {} ppb, {start} + {delta}",
                        c.spec.drift_ppb
                    );
                    assert_eq!(after, c.reading(t));
                    for duration in
                        [0, 1, 2, 999_999_999, 1_000_000_000, secs(2) + 17, secs(15), secs(20), u64::MAX / 2]
                    {
                        let fired = c.timer_reading(after, duration);
                        let expected = c.timer_fires_with_reading(after.t, after.mono, duration);
                        assert_eq!(
                            (fired.t, fired.mono),
                            expected,
                            "drift {} ppb, {t} + timer {duration}",
                            c.spec.drift_ppb
                        );
                        assert_eq!(fired, c.reading(fired.t));
                    }
                }
            }
            // A plan's own shape: readings a latency apart, timers of a few seconds, many
            // remainders (a fixed generator: the test is the same at every run).
            let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
            let mut next = |m: u64| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                (x >> 11) % m
            };
            let mut from = c.reading(next(secs(7_200)));
            for _ in 0..2_000 {
                let after = c.reading_after(from, next(50_000_000));
                assert_eq!(after, c.reading(after.t), "drift {} ppb", c.spec.drift_ppb);
                let duration = 1 + next(secs(3));
                from = c.timer_reading(after, duration);
                assert_eq!((from.t, from.mono), c.timer_fires_with_reading(after.t, after.mono, duration));
                assert_eq!(from, c.reading(from.t));
            }
        }
    }

    #[test]
    fn offset_moves_the_wall_clock_but_not_the_monotonic_one() {
        let c = clock(120 * 1_000_000_000, 0);
        assert_eq!(c.monotonic(secs(5)), secs(5) as i64);
        assert_eq!(c.wall(secs(5)), EPOCH + secs(125) as i64);
        assert_eq!(c.timer_fires_at(secs(5), secs(2)), secs(7));
    }

    #[test]
    fn a_fast_clock_fires_timers_early_in_true_time_exactly_to_the_nanosecond() {
        // 50% fast: a local 15 s timer takes 10 s of true time.
        let c = clock(0, 500_000_000);
        assert_eq!(c.timer_fires_at(0, secs(15)), secs(10));
        // 1 ppm fast: a 1 s timer armed at 0 fires 1 ns... exactly when monotonic reaches 1e9.
        let c = clock(0, 1_000);
        let t = c.timer_fires_at(0, secs(1));
        assert!(c.monotonic(t) >= secs(1) as i64);
        assert!(c.monotonic(t - 1) < secs(1) as i64);
    }

    #[test]
    fn timer_inversion_is_exact_for_many_drifts_and_starts() {
        for drift in [-999_999_999, -300_000_000, -7, 0, 3, 1_000, 333_333_333, 2_000_000_000] {
            let c = clock(0, drift);
            for start in [0, 1, 999, secs(3) + 17, secs(1000) + 123_456_789] {
                for d in [1, 999, secs(2), secs(15) + 1] {
                    let t = c.timer_fires_at(start, d);
                    let target = c.monotonic(start) + d as i64;
                    assert!(c.monotonic(t) >= target, "drift {drift} start {start} d {d}");
                    assert!(t == start || c.monotonic(t - 1) < target, "not the earliest: drift {drift}");
                }
            }
        }
    }

    #[test]
    fn the_closed_form_inversion_agrees_with_the_search_and_with_128_bit_arithmetic() {
        // A fixed pseudo-random walk over drifts, starts and durations (splitmix64).
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        for i in 0..20_000 {
            // Scenarios accept drifts from -900,000 to +9,000,000 ppm (a rate of 0.1 to 10).
            let drift = match i % 4 {
                0 => (next() % 2_000_001) as i64 - 1_000_000, // ±1000 ppm
                1 => (next() % 600_000_001) as i64 - 300_000_000,
                2 => (next() % (MAX_DRIFT_PPB as u64 + 900_000_001)) as i64 - 900_000_000,
                _ => [-900_000_000, -1, 1, MAX_DRIFT_PPB][(next() % 4) as usize],
            };
            let c = clock(0, drift);
            let start = next() % secs(400_000);
            let d = 1 + next() % secs(100);
            let t = c.timer_fires_at(start, d);
            let target = c.monotonic(start) + d as i64;
            // The search the closed form replaced, from the same start.
            assert_eq!(t, c.earliest_reaching(start, target), "drift {drift} start {start} d {d}");
            let r = PPB + drift as i128;
            let exact = ((target as i128 * PPB + r - 1) / r).max(start as i128);
            assert_eq!(t as i128, exact, "drift {drift} start {start} d {d}");
        }
    }

    #[test]
    fn a_timer_the_clock_never_reaches_in_u64_time_never_fires_instead_of_hanging() {
        // A rate of 1e-9 (the slowest `new` accepts, far below what scenarios allow): a local
        // 100 s takes 1e20 ns of true time, past u64.
        let c = clock(0, -999_999_999);
        assert_eq!(c.timer_fires_at(secs(10), secs(100)), Nanos::MAX);
        // Within u64 the same clock still answers exactly.
        let t = c.timer_fires_at(0, 7);
        assert!(c.monotonic(t) >= 7 && c.monotonic(t - 1) < 7);
    }

    #[test]
    fn monotonic_readings_without_128_bit_division_are_the_exact_floor() {
        let exact = |t: u64, d: i64| t as i128 + (t as i128 * d as i128).div_euclid(PPB);
        let drifts = [-999_999_999, -300_000_000, -1_000, -1, 0, 1, 7, 999_999_999, 2_000_000_000, MAX_DRIFT_PPB];
        let times = [
            0,
            1,
            999_999_999,
            1_000_000_000,
            1_000_000_001,
            1_999_999_999,
            3_600_000_000_123,
            3_600_999_999_999,
            86_400_000_000_000_007,
            i64::MAX as u64 / 3,
        ];
        for d in drifts {
            let c = clock(0, d);
            // And either side of where the unchecked arithmetic stops.
            let edges = [c.exact_until - 1, c.exact_until, c.exact_until + 1, i64::MAX as u64, u64::MAX];
            for t in times.into_iter().chain(edges) {
                let want = exact(t, d).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
                assert_eq!(c.monotonic(t), want, "t {t} drift {d}");
            }
        }
    }

    #[test]
    fn the_shifted_floor_division_is_euclid_s_at_every_product_a_clock_can_form() {
        let (r_max, d_min) = (PPB as i64 - 1, -(PPB as i64) + 1);
        for x in [r_max * d_min, r_max * d_min + 1, -1_000_000_001, -1_000_000_000, -999_999_999, -1, 0, 1]
            .into_iter()
            .chain([999_999_999, 1_000_000_000, r_max * MAX_DRIFT_PPB])
        {
            assert_eq!(super::floor_ppb(x), x.div_euclid(PPB as i64), "{x}");
        }
    }

    #[test]
    fn steps_move_only_the_wall_clock() {
        let c = NodeClock::new(
            ClockSpec { steps: vec![ClockStep { at: secs(10), delta_ns: -(secs(30) as i64) }], ..Default::default() },
            EPOCH,
        )
        .unwrap();
        assert_eq!(c.wall(secs(9)), EPOCH + secs(9) as i64);
        assert_eq!(c.wall(secs(10)), EPOCH + secs(10) as i64 - secs(30) as i64);
        assert_eq!(c.monotonic(secs(10)), secs(10) as i64);
        assert_eq!(c.timer_fires_at(secs(9), secs(2)), secs(11));
        // The wall clock reaches EPOCH+5s the first time at true 5 s.
        assert_eq!(c.true_time_when_wall_reaches(0, EPOCH + secs(5) as i64), secs(5));
        // After the backward step it reads EPOCH-20s at true 10 s and EPOCH+15s at true 45 s.
        assert_eq!(c.true_time_when_wall_reaches(secs(10), EPOCH + secs(15) as i64), secs(45));
    }

    #[test]
    fn wander_keeps_the_monotonic_clock_monotonic_and_inverts_exactly() {
        let c = NodeClock::new(
            ClockSpec {
                wander: Some(Wander { amplitude_ns: 50_000_000, period_ns: secs(60), phase_rad: 0.3 }),
                drift_ppb: 20_000,
                ..Default::default()
            },
            EPOCH,
        )
        .unwrap();
        let mut last = i64::MIN;
        for i in 0..2000 {
            let t = i * 61_000_000;
            let m = c.monotonic(t);
            assert!(m >= last);
            last = m;
        }
        assert_eq!(c.monotonic(0), 0);
        for start in [0, secs(7), secs(33) + 5] {
            let t = c.timer_fires_at(start, secs(2));
            let target = c.monotonic(start) + secs(2) as i64;
            assert!(c.monotonic(t) >= target && c.monotonic(t - 1) < target);
        }
    }

    #[test]
    fn impossible_clocks_are_refused_with_a_reason() {
        assert!(NodeClock::new(ClockSpec { drift_ppb: -1_000_000_000, ..Default::default() }, 0).is_err());
        let err = NodeClock::new(
            ClockSpec {
                wander: Some(Wander { amplitude_ns: secs(10) as i64, period_ns: secs(1), phase_rad: 0.0 }),
                ..Default::default()
            },
            0,
        )
        .unwrap_err();
        assert!(err.contains("backwards"));
    }

    #[test]
    fn portable_sin_matches_std_closely() {
        for i in -100..100 {
            let x = i as f64 * 0.173;
            assert!((portable_sin(x) - x.sin()).abs() < 1e-12, "x={x}");
        }
    }
}
