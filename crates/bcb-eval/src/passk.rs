//! The unbiased pass@k estimator (Chen et al. 2021), as the original computes it.

/// `1 - C(n-c, k) / C(n, k)` for one task with `n` samples of which `c` pass.
///
/// Computed as `1 - prod_{i=n-c+1}^{n} (1 - k/i)`: no binomials, so no overflow for
/// large `n`, and the same product the original evaluates.
pub fn estimate(n: u64, c: u64, k: u64) -> f64 {
    assert!(c <= n, "more correct samples ({c}) than samples ({n})");
    if n - c < k {
        return 1.0;
    }
    let mut prod = 1.0f64;
    for i in (n - c + 1)..=n {
        prod *= 1.0 - k as f64 / i as f64;
    }
    1.0 - prod
}

/// Mean pass@k over tasks given `(n, c)` per task; `None` when some task has fewer than `k` samples
/// (the original reports only k <= the fewest samples of any task).
pub fn mean_pass_at_k(counts: &[(u64, u64)], k: u64) -> Option<f64> {
    if counts.is_empty() || counts.iter().any(|&(n, _)| n < k) {
        return None;
    }
    let sum: f64 = counts.iter().map(|&(n, c)| estimate(n, c, k)).sum();
    Some(sum / counts.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact binomial ratio with integer arithmetic, for comparison.
    fn exact(n: u64, c: u64, k: u64) -> f64 {
        fn binom(n: u64, k: u64) -> u128 {
            if k > n {
                return 0;
            }
            let mut r: u128 = 1;
            for i in 0..k {
                r = r * (n - i) as u128 / (i + 1) as u128;
            }
            r
        }
        if k > n {
            return f64::NAN;
        }
        1.0 - binom(n - c, k) as f64 / binom(n, k) as f64
    }

    #[test]
    fn matches_hand_computed_values_for_n5() {
        // n=5: pass@1 = c/5; pass@5 = 1 if c>0; k>n is never reported.
        for c in 0..=5u64 {
            assert!((estimate(5, c, 1) - c as f64 / 5.0).abs() < 1e-12);
            assert_eq!(estimate(5, c, 5), if c > 0 { 1.0 } else { 0.0 });
            for k in 1..=5u64 {
                let e = exact(5, c, k);
                assert!((estimate(5, c, k) - e).abs() < 1e-12, "n=5 c={c} k={k}");
            }
        }
        // Hand-computed: n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10.
        assert!((estimate(5, 2, 2) - 0.7).abs() < 1e-12);
        // c=1, k=3: 1 - C(4,3)/C(5,3) = 1 - 4/10.
        assert!((estimate(5, 1, 3) - 0.6).abs() < 1e-12);
        for k in 6..=10 {
            assert_eq!(
                mean_pass_at_k(&[(5, 3)], k),
                None,
                "k={k} > n must not be reported"
            );
        }
    }

    #[test]
    fn stable_for_large_n() {
        let v = estimate(1000, 1, 10);
        assert!((v - 0.01).abs() < 1e-12, "{v}");
        assert_eq!(estimate(200, 0, 100), 0.0);
    }

    #[test]
    fn mean_over_tasks() {
        let m = mean_pass_at_k(&[(2, 1), (2, 2), (2, 0)], 1).unwrap();
        assert!((m - 0.5).abs() < 1e-12);
    }
}
