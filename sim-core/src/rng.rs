//! Randomness: one independent ChaCha8 stream per component.
//!
//! Every random draw in a run comes from a [`ComponentRng`] derived from the run seed and a
//! stable component key (`"node/widget-operator-0/jitter"`, `"link/widget-operator-1/up"`, ...).
//! The key selects a ChaCha stream, so adding a node adds new streams without shifting the draws
//! of any existing component. The samplers are written here on top of `next_u64` rather than
//! taken from `rand`'s distributions, whose exact outputs are not promised across versions: a
//! golden trace must survive a dependency upgrade.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// A seeded random stream owned by one component of the simulation.
#[derive(Clone, Debug)]
pub struct ComponentRng {
    inner: ChaCha8Rng,
}

/// FNV-1a, 64 bit: a fixed, documented hash so a key maps to the same stream on every platform
/// and every release (std's hashers promise neither).
pub fn stable_hash(key: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.bytes() {
        hash ^= byte as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// SplitMix64 finaliser: derives well-spread seeds from structured inputs (base seed, index).
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl ComponentRng {
    /// The stream for `key` under run seed `seed`. `set_stream` is called right after
    /// construction, before any draw (rand_chacha keeps the word position across `set_stream`).
    pub fn new(seed: u64, key: &str) -> Self {
        let mut inner = ChaCha8Rng::seed_from_u64(seed);
        inner.set_stream(stable_hash(key));
        ComponentRng { inner }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [lo, hi] (inclusive). Lemire's multiply-shift; the bias is below
    /// 2^-64 relative for the ranges used here (nanosecond spans well under 2^63).
    pub fn uniform_u64(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        lo + ((self.next_u64() as u128 * (span as u128 + 1)) >> 64) as u64
    }

    /// True with probability `p` (p <= 0 never, p >= 1 always; one draw either way, so the
    /// stream stays aligned whatever `p` is).
    pub fn bernoulli(&mut self, p: f64) -> bool {
        let u = self.unit_f64();
        u < p
    }

    /// Exponentially distributed with the given mean, as a float (callers round).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // 1 - u is in (0, 1], so the logarithm is finite.
        -mean * (1.0 - self.unit_f64()).ln()
    }

    /// Standard normal by Box-Muller (two uniform draws, one value).
    pub fn normal(&mut self, mean: f64, std_dev: f64) -> f64 {
        let u1 = 1.0 - self.unit_f64();
        let u2 = self.unit_f64();
        mean + std_dev * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_key_give_the_same_stream() {
        let mut a = ComponentRng::new(42, "node/a");
        let mut b = ComponentRng::new(42, "node/a");
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn different_keys_and_seeds_give_different_streams() {
        let first = |seed, key| ComponentRng::new(seed, key).next_u64();
        assert_ne!(first(42, "node/a"), first(42, "node/b"));
        assert_ne!(first(42, "node/a"), first(43, "node/a"));
    }

    const GOLDEN_DRAWS: [u64; 3] = [13219497134826386224, 15712607297167470177, 7852087740441253258];
    const GOLDEN_HASH: u64 = 0x2b72_c88e_fe37_d9c4;

    #[test]
    fn raw_stream_is_pinned_to_golden_values() {
        // A change here means every recorded trace changes: it must be deliberate.
        let mut rng = ComponentRng::new(42, "golden");
        let got: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(got, GOLDEN_DRAWS);
        assert_eq!(stable_hash("golden"), GOLDEN_HASH);
    }

    #[test]
    fn samplers_stay_in_range() {
        let mut rng = ComponentRng::new(7, "samplers");
        for _ in 0..10_000 {
            let u = rng.unit_f64();
            assert!((0.0..1.0).contains(&u));
            let v = rng.uniform_u64(10, 20);
            assert!((10..=20).contains(&v));
            assert!(rng.exponential(5.0) >= 0.0);
        }
        assert_eq!(rng.uniform_u64(3, 3), 3);
    }
}
