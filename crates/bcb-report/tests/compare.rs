//! `compare` on a constructed pair of result files whose answer was computed by hand.
//!
//! 20 tasks, one sample each. A passes tasks 0-11 (12), B passes 0-6 and 12-13 (9):
//! - both solved: 0-6 (7); A only: 7-11 (5); B only: 12-13 (2); neither: 14-19 (6).
//! - pass@1 A = 12/20 = 0.60, B = 9/20 = 0.45, B - A = -0.15.
//! - exact McNemar, b = 5, c = 2: p = 2 * (C(7,0) + C(7,1) + C(7,2)) / 2^7 = 2 * 29/128
//!   = 0.453125: noise.
//! - paired differences d = B - A: -1 on 5 tasks, +1 on 2, 0 on 13; mean -0.15, population
//!   variance 7/20 - 0.15^2 = 0.3275, standard error sqrt(0.3275/20) = 0.12797; the normal
//!   95% interval is -0.15 +- 0.2508 = [-0.4008, 0.1008]. The bootstrap mean lives on the
//!   grid k/20, so its percentile interval is [-0.40, 0.10] up to one grid step.

use std::path::Path;

use bcb_report::compare::compare;
use bcb_report::results::RunResults;
use bcb_report::summary::{Report, ReportOptions};
use serde_json::json;

fn write_results(path: &Path, passes: impl Fn(usize) -> bool) {
    let mut eval = serde_json::Map::new();
    for i in 0..20 {
        let id = format!("BigCodeBench/{i}");
        let (status, details) = if passes(i) {
            ("pass", json!({}))
        } else {
            (
                "fail",
                json!({"test_case_1": "Traceback (most recent call last):\n  File \"__test__.py\", line 9, in test_case_1\nAssertionError: 1 != 2\n"}),
            )
        };
        eval.insert(
            id.clone(),
            json!([{"task_id": id, "solution": "def task_func(): pass", "status": status, "details": details}]),
        );
    }
    let v = json!({"date": "2026-12-01 08:00", "eval": eval});
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

fn pair(dir: &Path) -> Vec<RunResults> {
    let a =
        dir.join("a--main--bigcodebench-complete--x-0-1-sanitized_calibrated_eval_results.json");
    let b =
        dir.join("b--main--bigcodebench-complete--x-0-1-sanitized_calibrated_eval_results.json");
    write_results(&a, |i| i < 12);
    write_results(&b, |i| i < 7 || i == 12 || i == 13);
    vec![RunResults::load(&a).unwrap(), RunResults::load(&b).unwrap()]
}

#[test]
fn hand_computed_pair() {
    let dir = tempfile::tempdir().unwrap();
    let runs = pair(dir.path());
    let report = Report::build(&runs, &[], &ReportOptions::default());
    let c = compare(&report, 7, 10_000);
    assert_eq!(c.paired_tasks, 20);
    let ids =
        |f: &[bcb_report::compare::Flip]| f.iter().map(|x| x.task_id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&c.a_only),
        (7..12)
            .map(|i| format!("BigCodeBench/{i}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(ids(&c.b_only), ["BigCodeBench/12", "BigCodeBench/13"]);
    assert_eq!((c.both_solved, c.neither_solved), (7, 6));
    assert!((c.pass_at_1_a - 0.60).abs() < 1e-12);
    assert!((c.pass_at_1_b - 0.45).abs() < 1e-12);
    assert!((c.difference.value + 0.15).abs() < 1e-12);
    assert!((c.mcnemar_p - 0.453125).abs() < 1e-12, "{}", c.mcnemar_p);
    assert!(c.noise);
    // Percentile bootstrap vs the hand-computed normal interval [-0.4008, 0.1008].
    assert!(
        (c.difference.low + 0.40).abs() <= 0.05 + 1e-9,
        "low {}",
        c.difference.low
    );
    assert!(
        (c.difference.high - 0.10).abs() <= 0.05 + 1e-9,
        "high {}",
        c.difference.high
    );
    // Seeded: the same seed gives the same interval, another seed may move it a grid step.
    let again = compare(&report, 7, 10_000);
    assert_eq!(
        (again.difference.low, again.difference.high),
        (c.difference.low, c.difference.high)
    );
    // The flip's class is the other run's failure.
    assert_eq!(
        c.a_only[0].failed_as,
        Some(bcb_report::FailureClass::AssertionFailure)
    );
}

#[test]
fn a_clear_gain_is_not_noise() {
    // B solves 10 more tasks and loses none: p = 2 / 2^10, interval [0.25, 0.75] excludes 0.
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a_eval_results.json");
    let b = dir.path().join("b_eval_results.json");
    write_results(&a, |i| i < 5);
    write_results(&b, |i| i < 15);
    let runs = vec![RunResults::load(&a).unwrap(), RunResults::load(&b).unwrap()];
    let c = compare(
        &Report::build(&runs, &[], &ReportOptions::default()),
        1,
        5_000,
    );
    assert!((c.mcnemar_p - 2.0 / 1024.0).abs() < 1e-15);
    assert!((c.difference.value - 0.5).abs() < 1e-12);
    assert!(c.difference.low > 0.0);
    assert!(!c.noise);
    assert!(c.render_text().contains("B is better than A beyond noise"));
}
