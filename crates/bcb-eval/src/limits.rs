//! Per-sample time limits, as the original computes them.

/// Upstream's base limit (`BIGCODEBENCH_TIMEOUT_PER_TASK`, default 240 s).
pub const DEFAULT_BASE_TIMEOUT: f64 = 240.0;
/// Used when a task has no ground-truth time (upstream: `expected_time or 20`).
pub const FALLBACK_GT_SECS: f64 = 20.0;

/// The suite alarm for a sample: `max(base, max(min_time_limit, gt or 20)) + 1`.
///
/// With upstream's defaults this is 241 s for every task whose ground truth takes under
/// 240 s; the ground-truth time only matters above that.
pub fn sample_time_limit(gt_secs: Option<f64>, min_time_limit: f64, base_timeout: f64) -> f64 {
    let gt = gt_secs.filter(|&t| t > 0.0).unwrap_or(FALLBACK_GT_SECS);
    base_timeout.max(min_time_limit.max(gt)) + 1.0
}

/// The suite alarm for a canonical solution: `max(base, min_time_limit) + 1`.
pub fn ground_truth_time_limit(min_time_limit: f64, base_timeout: f64) -> f64 {
    base_timeout.max(min_time_limit) + 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_defaults_give_241s() {
        assert_eq!(sample_time_limit(Some(0.1), 1.0, 240.0), 241.0);
        assert_eq!(sample_time_limit(None, 1.0, 240.0), 241.0);
        assert_eq!(sample_time_limit(Some(300.0), 1.0, 240.0), 301.0);
        // A lowered base exposes the ground-truth time and the fallback.
        assert_eq!(sample_time_limit(Some(3.0), 1.0, 2.0), 4.0);
        assert_eq!(sample_time_limit(Some(0.0), 1.0, 2.0), 21.0);
        assert_eq!(ground_truth_time_limit(1.0, 240.0), 241.0);
    }
}
