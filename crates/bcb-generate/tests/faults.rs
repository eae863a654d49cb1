//! Fault injection on loopback: the test server answers 429 with Retry-After, 500, cuts the
//! connection and stalls past the client timeout; the run must retry each and finish, and a
//! 401 must stop the run at once without losing samples already written.

mod common;

use std::time::{Duration, Instant};

use bcb_dataset::Subset;
use bcb_generate::testing::{Fault, TestServer};
use bcb_generate::Backend;

fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The first three tasks of the hard instruct split from `model` at `url`, `concurrency` at once.
fn three_tasks(
    backend: Backend,
    model: &str,
    url: String,
    root: &std::path::Path,
    concurrency: usize,
) -> bcb_generate::GenerateOptions {
    let mut o = common::hard_instruct(backend, model, url, root);
    o.id_range = Some((0, 3));
    o.concurrency = Some(concurrency);
    o
}

#[test]
fn retryable_faults_are_retried_and_the_run_completes() {
    std::env::set_var("BCB_RETRY_MIN_DELAY_MS", "20");
    let ds = common::dataset(Subset::Hard);
    let stub = TestServer::stub(common::canned());
    stub.push_faults([
        Fault::Status {
            status: 429,
            retry_after: Some(1),
        },
        Fault::Status {
            status: 500,
            retry_after: None,
        },
        Fault::DropConnection,
        Fault::Stall(Duration::from_secs(5)),
        Fault::Status {
            status: 503,
            retry_after: None,
        },
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut o = common::hard_instruct(Backend::OpenAi, "gpt-4o", stub.v1_url(), dir.path());
    o.id_range = Some((0, 4));
    o.n_samples = 3;
    o.temperature = bcb_generate::Temperature::parse("0.8").unwrap();
    o.concurrency = Some(1); // faults hit one request after another
    o.request_timeout = Duration::from_millis(800);
    let t0 = Instant::now();
    let out = bcb_generate::run_codegen(&o, &ds).unwrap();
    assert!(out.is_complete(), "{}", out.summary());
    assert_eq!(out.written, 12);
    assert_eq!(out.retries, 5, "{}", out.summary());
    assert_eq!(out.requests, 4 + 5);
    assert_eq!(stub.received(), 9);
    assert_eq!(stub.served(), 4);
    // Retry-After: 1 was honoured (the backoff alone would wait ~20 ms).
    assert!(t0.elapsed() >= Duration::from_secs(1), "{:?}", t0.elapsed());
    let rows = lines(&out.path);
    assert_eq!(rows.len(), 12);
    for t in &ds.tasks()[..4] {
        assert_eq!(
            rows.iter()
                .filter(|r| r["task_id"] == t.task_id.as_str())
                .count(),
            3
        );
    }
}

#[test]
fn unauthorized_stops_the_run_at_once_and_keeps_written_samples() {
    std::env::set_var("BCB_RETRY_MIN_DELAY_MS", "20");
    let ds = common::dataset(Subset::Hard);
    let stub = TestServer::stub(common::canned());
    let dir = tempfile::tempdir().unwrap();
    let mut o = three_tasks(Backend::Anthropic, "claude-x", stub.url(), dir.path(), 1);
    // First run: 3 tasks written.
    let first = bcb_generate::run_codegen(&o, &ds).unwrap();
    assert_eq!(first.written, 3);
    // Second run over 10 tasks: the first request gets 401.
    o.id_range = Some((0, 10));
    stub.push_faults([Fault::Status {
        status: 401,
        retry_after: None,
    }]);
    let before = stub.received();
    let t0 = Instant::now();
    let err = bcb_generate::run_codegen(&o, &ds).unwrap_err().to_string();
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(err.contains("HTTP 401"), "{err}");
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");
    assert!(err.contains("re-running continues"), "{err}");
    // Not retried, and nothing else was sent after it.
    assert_eq!(stub.received() - before, 1);
    assert_eq!(lines(&first.path).len(), 3);
    // A 400 fails only its request, without retries; the others go on.
    stub.push_faults([Fault::Status {
        status: 400,
        retry_after: None,
    }]);
    let out = bcb_generate::run_codegen(&o, &ds).unwrap();
    assert_eq!(out.retries, 0);
    assert_eq!(out.failures.len(), 1, "{}", out.summary());
    assert_eq!(out.written, 6);
    assert!(out.summary().contains("HTTP 400"), "{}", out.summary());
    // And the next run fills the gap with exactly one request.
    let before = stub.received();
    let out = bcb_generate::run_codegen(&o, &ds).unwrap();
    assert!(out.is_complete());
    assert_eq!(out.written, 1);
    assert_eq!(stub.received() - before, 1);
    assert_eq!(lines(&out.path).len(), 10);
}

#[test]
fn request_rate_limit_spaces_requests() {
    let ds = common::dataset(Subset::Hard);
    let stub = TestServer::stub(common::canned());
    let dir = tempfile::tempdir().unwrap();
    let mut o = three_tasks(Backend::OpenAi, "gpt-4o", stub.v1_url(), dir.path(), 8);
    o.requests_per_minute = Some(120); // one every 0.5 s after the first
    let t0 = Instant::now();
    let out = bcb_generate::run_codegen(&o, &ds).unwrap();
    assert!(out.is_complete());
    assert!(
        t0.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );
}
