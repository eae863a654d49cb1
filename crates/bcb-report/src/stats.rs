//! Statistics for reports: pass@k with bootstrap intervals, the exact McNemar test and a paired
//! bootstrap of a pass@1 difference. Every random draw comes from a seeded [`SplitMix64`], so a
//! report is the same on every machine and every run.

use bcb_eval::passk::estimate;
use serde::Serialize;

/// Resamples per bootstrap interval (percentile method).
pub const BOOTSTRAP_RESAMPLES: usize = 2000;
/// The seed reports use unless told otherwise.
pub const DEFAULT_SEED: u64 = 20240601;

/// A tiny, fully specified PRNG (Steele et al., SplitMix64). Hand-written on purpose: its
/// output must never change with a dependency's version, or published intervals would move.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the tiny bias is irrelevant for n < 2^20).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
}

/// A point estimate with a two-sided 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// Mean pass@k over tasks with a percentile-bootstrap 95% interval (tasks resampled with
/// replacement). `None` when some task has fewer than `k` samples or there are no tasks.
pub fn pass_at_k(counts: &[(u64, u64)], k: u64, seed: u64) -> Option<Estimate> {
    if counts.is_empty() || counts.iter().any(|&(n, _)| n < k) {
        return None;
    }
    let per_task: Vec<f64> = counts.iter().map(|&(n, c)| estimate(n, c, k)).collect();
    Some(bootstrap_mean(&per_task, seed, BOOTSTRAP_RESAMPLES))
}

/// Mean of `values` with a percentile-bootstrap 95% interval.
pub fn bootstrap_mean(values: &[f64], seed: u64, resamples: usize) -> Estimate {
    let n = values.len();
    let value = values.iter().sum::<f64>() / n.max(1) as f64;
    if n == 0 {
        return Estimate {
            value,
            low: value,
            high: value,
        };
    }
    let mut rng = SplitMix64::new(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| (0..n).map(|_| values[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    Estimate {
        value,
        low: quantile(&means, 0.025),
        high: quantile(&means, 0.975),
    }
}

/// The `q` quantile of sorted values (linear interpolation, numpy's default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Exact two-sided McNemar test: `b` and `c` are the discordant pairs (A passed B failed, and
/// the reverse). p = min(1, 2 * P[X <= min(b, c)]) for X ~ Binomial(b + c, 1/2).
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let m = b.min(c);
    // Sum C(n, i) / 2^n in log space: 2^-1140 underflows f64.
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let mut ln_binom = 0.0f64; // ln C(n, 0)
    let mut terms = Vec::with_capacity(m as usize + 1);
    for i in 0..=m {
        if i > 0 {
            ln_binom += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        terms.push(ln_binom - ln2n);
    }
    let top = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let tail = top.exp() * terms.iter().map(|t| (t - top).exp()).sum::<f64>();
    (2.0 * tail).min(1.0)
}

/// Paired bootstrap of `mean(a) - mean(b)` over tasks (the same tasks drawn for both).
pub fn paired_difference(a: &[f64], b: &[f64], seed: u64, resamples: usize) -> Estimate {
    assert_eq!(a.len(), b.len(), "paired samples must have equal length");
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    bootstrap_mean(&diffs, seed, resamples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcnemar_small_cases_by_hand() {
        // b=5, c=2: 2 * (C(7,0)+C(7,1)+C(7,2)) / 2^7 = 2 * 29 / 128.
        assert!((mcnemar_exact(5, 2) - 58.0 / 128.0).abs() < 1e-12);
        // b=10, c=0: 2 / 2^10.
        assert!((mcnemar_exact(10, 0) - 2.0 / 1024.0).abs() < 1e-15);
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        // Large n does not underflow.
        let p = mcnemar_exact(600, 540);
        assert!(p > 0.0 && p < 0.1, "{p}");
    }

    #[test]
    fn rng_is_stable() {
        // Reference values of SplitMix64 seeded with 0 (from the published algorithm).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn degenerate_bootstrap_is_a_point() {
        let e = bootstrap_mean(&[1.0; 30], 1, 500);
        assert_eq!((e.value, e.low, e.high), (1.0, 1.0, 1.0));
    }
}
