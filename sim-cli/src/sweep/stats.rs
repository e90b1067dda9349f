//! Per-grid-point statistics. Quantiles are exact: a point keeps its own values only (one per
//! seed), so memory is bounded by the seeds per point, never by the size of the sweep.

use std::collections::BTreeMap;

/// One grid point of `aggregate.csv`.
#[derive(Clone, Debug)]
pub struct PointSummary {
    pub point: usize,
    pub axis_values: Vec<String>,
    /// Some run of the point ran a configuration client-go refuses.
    pub unsafe_point: bool,
    pub n: usize,
    pub dual_runs: usize,
    pub dual_fraction: f64,
    pub dual_wilson: (f64, f64),
    pub metrics: BTreeMap<String, Summary>,
}

/// Two-sided 95% quantile of Student's t with `df` degrees of freedom (table for df ≤ 30, a
/// close approximation above: within 0.002 of the exact value).
pub fn t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        _ => 1.959964 + 2.4 / df as f64,
    }
}

/// Quantile `q` of sorted values by linear interpolation between order statistics (Hyndman and
/// Fan type 7, the default of R and NumPy).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Wilson score interval for `k` successes in `n` trials at 95%: unlike the normal
/// approximation it stays inside [0, 1] and is meaningful at k = 0 and k = n, which is where
/// a safety sweep's interesting points are.
pub fn wilson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let z = 1.959963984540054_f64;
    let (n, p) = (n as f64, k as f64 / n as f64);
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    // At k = 0 and k = n the bounds are exactly 0 and 1; rounding would leave 1e-16 off.
    let lo = if k == 0 { 0.0 } else { (centre - half).max(0.0) };
    let hi = if k as f64 == n { 1.0 } else { (centre + half).min(1.0) };
    (lo, hi)
}

/// Summary of one metric at one grid point.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for a single run.
    pub std: f64,
    pub ci95: (f64, f64),
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

pub fn summarise(values: &[f64]) -> Summary {
    let n = values.len();
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    // Summed in run order, so the result does not depend on how runs were scheduled.
    let mean = values.iter().sum::<f64>() / n.max(1) as f64;
    let std =
        if n > 1 { (values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { 0.0 };
    let half = if n > 1 { t95(n - 1) * std / (n as f64).sqrt() } else { 0.0 };
    Summary {
        n,
        mean,
        std,
        ci95: (mean - half, mean + half),
        p50: quantile(&sorted, 0.50),
        p95: quantile(&sorted, 0.95),
        p99: quantile(&sorted, 0.99),
        max: sorted.last().copied().unwrap_or(f64::NAN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_is_sensible_at_the_edges() {
        let (lo, hi) = wilson(0, 10);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.2775).abs() < 1e-3, "{hi}");
        let (lo, hi) = wilson(10, 10);
        assert!((lo - 0.7225).abs() < 1e-3 && hi == 1.0);
    }

    #[test]
    fn quantiles_interpolate() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&s, 0.5), 2.5);
        assert_eq!(quantile(&s, 1.0), 4.0);
        let m = summarise(&[1.0, 2.0, 3.0]);
        assert_eq!((m.mean, m.std, m.p50, m.max), (2.0, 1.0, 2.0, 3.0));
    }
}
