//! Measured ground-truth test and CPU times shipped in the binary, so that even the first run
//! of a machine (empty cache) starts the longest tasks first and knows the sleepers. Measured
//! with bcb on v0.1.4 (full); task ids are stable across versions and their tests change
//! little, so the same table orders every version. Only a scheduling hint: limits never come
//! from here.

use std::collections::HashMap;
use std::sync::OnceLock;

const TABLE: &str = include_str!("../priors/gt-secs.tsv");

/// Test seconds, and CPU seconds where measured, by task id.
fn table() -> &'static HashMap<&'static str, (f64, Option<f64>)> {
    static T: OnceLock<HashMap<&'static str, (f64, Option<f64>)>> = OnceLock::new();
    T.get_or_init(|| {
        TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| {
                let mut cols = l.split('\t');
                let id = cols.next()?;
                let secs = cols.next()?.trim().parse().ok()?;
                let cpu = cols.next().and_then(|c| c.trim().parse().ok());
                Some((id, (secs, cpu)))
            })
            .collect()
    })
}

/// The shipped test time of `task_id`'s canonical solution, in seconds.
pub fn expected_secs(task_id: &str) -> Option<f64> {
    table().get(task_id).map(|(secs, _)| *secs)
}

/// The shipped CPU time of `task_id`'s canonical solution (its process tree), in seconds.
pub fn expected_cpu_secs(task_id: &str) -> Option<f64> {
    table().get(task_id).and_then(|(_, cpu)| *cpu)
}

#[cfg(test)]
mod tests {
    #[test]
    fn table_covers_the_full_set() {
        assert_eq!(super::table().len(), bcb_dataset::FULL_TASK_COUNT);
        assert!(super::expected_secs("BigCodeBench/0").is_some());
        // 461's test waits on a monitored process for minutes and computes for about a second.
        let (wall, cpu) = (
            super::expected_secs("BigCodeBench/461").unwrap(),
            super::expected_cpu_secs("BigCodeBench/461").unwrap(),
        );
        assert!(
            wall > 100.0 && cpu < 5.0,
            "461: {wall} s of test, {cpu} s of CPU"
        );
    }
}
