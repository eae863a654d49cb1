//! The HTTP side of `bcb serve` against a FAKE engine (a scripted `Verdicts`): status codes,
//! shapes, the bounded queue, cancellation, drain, faults, auth (the RL clients' endpoints
//! are in `http_fake_engine_clients.rs`). The real warm session is
//! tested end to end in bcb-cli's `serve` tests; here the engine is scripted so every fault
//! can be produced on demand (the fake is in `common/`).

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bcb_serve::ServeConfig;
use common::{body, start, wait_until};

#[tokio::test]
async fn evaluate_answers_in_request_order_with_every_field() {
    let s = start(|_| {}, true).await;
    let res = s
        .evaluate(serde_json::json!([
            {"task_id": "BigCodeBench/1", "solution": "SLEEP 50 PASS"},
            {"task_id": "BigCodeBench/2", "completion": "wrong"},
            {"task_id": "2", "solution": "PASS"},
        ]))
        .await;
    assert_eq!(res.status(), 200);
    let v: serde_json::Value = res.json().await.unwrap();
    let r = &v["results"];
    assert_eq!(r[0]["task_id"], "BigCodeBench/1");
    assert_eq!(r[0]["status"], "pass");
    assert_eq!(r[0]["reward"], 1.0);
    assert_eq!(r[0]["tests_passed"], 2);
    assert_eq!(r[0]["tests_total"], 2);
    assert_eq!(r[1]["status"], "fail");
    assert_eq!(r[1]["reward"], 0.0);
    assert_eq!(r[1]["tests_passed"], 1);
    assert_eq!(r[1]["details"]["test_a"], "AssertionError");
    assert_eq!(r[2]["task_id"], "BigCodeBench/2");
    for k in ["flags", "test_secs", "cpu_secs", "index"] {
        assert!(r[0].get(k).is_some(), "{k} missing");
    }
    assert_eq!(v["summary"]["pass"], 2);
    s.shutdown().await;
}

#[tokio::test]
async fn ndjson_streams_in_completion_order() {
    let s = start(|_| {}, true).await;
    let res = s
        .post("/v1/evaluate")
        .header("accept", "application/x-ndjson")
        .json(&body(serde_json::json!([
            {"task_id": "BigCodeBench/1", "solution": "SLEEP 200 PASS"},
            {"task_id": "BigCodeBench/2", "solution": "SLEEP 1 PASS"},
        ])))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/x-ndjson");
    let text = res.text().await.unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["index"], 1, "the quick one first: {text}");
    assert_eq!(lines[1]["index"], 0);
    s.shutdown().await;
}

#[tokio::test]
async fn bad_input_is_400_naming_the_field_or_the_ids() {
    let s = start(|_| {}, true).await;
    let c = reqwest::Client::new();
    let post = |v: serde_json::Value| c.post(format!("{}/v1/evaluate", s.url)).json(&v).send();
    let cases = [
        (
            body(
                serde_json::json!([{"task_id": "BigCodeBench/999", "solution": "x"}, {"task_id": "BigCodeBench/77", "solution": "x"}]),
            ),
            "BigCodeBench/999, BigCodeBench/77",
        ),
        (
            body(serde_json::json!([{"task_id": "BigCodeBench/1"}])),
            "missing `solution` or `completion`",
        ),
        (
            serde_json::json!({"samples": [{"task_id": "BigCodeBench/1", "solution": "x"}], "version": "v0.1.0_hf"}),
            "field `version`",
        ),
        (
            serde_json::json!({"samples": [{"task_id": "BigCodeBench/1", "solution": "x"}], "split": "chat"}),
            "field `split`",
        ),
        (
            serde_json::json!({"samples": [{"task_id": "BigCodeBench/1", "solution": "x"}], "limits": {"memory_mb": 5}}),
            "memory_mb",
        ),
        (serde_json::json!({"sample": []}), "sample"),
    ];
    for (req, needle) in cases {
        let res = post(req.clone()).await.unwrap();
        assert_eq!(res.status(), 400, "{req}");
        let v: serde_json::Value = res.json().await.unwrap();
        let err = v["error"].as_str().unwrap();
        assert!(err.contains(needle), "{needle} not in {err}");
    }
    let res = post(body(
        serde_json::json!([{"task_id": "BigCodeBench/999", "solution": "x"}]),
    ))
    .await
    .unwrap();
    let v: serde_json::Value = res.json().await.unwrap();
    assert_eq!(v["task_ids"], serde_json::json!(["BigCodeBench/999"]));
    assert_eq!(s.engine.executed.load(Ordering::SeqCst), 0);
    s.shutdown().await;
}

#[tokio::test]
async fn a_50_mb_body_is_413() {
    let s = start(|_| {}, true).await;
    let big = "x".repeat(50 * 1024 * 1024);
    let res = s
        .post("/v1/evaluate")
        .header("content-type", "application/json")
        .body(format!(
            r#"{{"samples":[{{"task_id":"BigCodeBench/1","solution":"{big}"}}]}}"#
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 413);
    let v: serde_json::Value = res.json().await.unwrap();
    assert!(v["hint"].as_str().unwrap().contains("--max-body-mb"));
    assert_eq!(s.engine.executed.load(Ordering::SeqCst), 0);
    s.shutdown().await;
}

#[tokio::test]
async fn a_flood_past_the_queue_gets_429_with_retry_after_and_loses_nothing_admitted() {
    let s = start(|c| c.queue_limit = 4, true).await;
    let c = reqwest::Client::new();
    let two = || {
        c.post(format!("{}/v1/evaluate", s.url))
            .json(&body(serde_json::json!([
                {"task_id": "BigCodeBench/1", "solution": "SLEEP 300 PASS"},
                {"task_id": "BigCodeBench/2", "solution": "SLEEP 300 PASS"},
            ])))
            .send()
    };
    let admitted = [tokio::spawn(two()), tokio::spawn(two())];
    wait_until(Duration::from_secs(30), "four samples admitted", || {
        s.state.outstanding() >= 4
    })
    .await;
    let mut refused = 0;
    for _ in 0..8 {
        let res = two().await.unwrap();
        assert_eq!(res.status(), 429);
        assert!(res.headers().contains_key("retry-after"));
        refused += 1;
    }
    let mut ok = 0;
    for h in admitted {
        let res = h.await.unwrap().unwrap();
        assert_eq!(res.status(), 200);
        let v: serde_json::Value = res.json().await.unwrap();
        assert_eq!(v["summary"]["pass"], 2);
        ok += 1;
    }
    assert_eq!(ok, 2, "two requests of two samples fill a queue of 4");
    assert_eq!(refused, 8);
    assert_eq!(s.engine.executed.load(Ordering::SeqCst), 4);
    assert_eq!(s.state.outstanding(), 0);
    // More samples than the queue admits at all: 413 with a hint, not an endless 429.
    let res = c
        .post(format!("{}/v1/evaluate", s.url))
        .json(&body(serde_json::json!(vec![
            serde_json::json!({"task_id": "BigCodeBench/1", "solution": "PASS"});
            5
        ])))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 413);
    s.shutdown().await;
}

#[tokio::test]
async fn a_client_killed_mid_stream_cancels_its_queued_jobs() {
    let s = start(|_| {}, true).await;
    let samples: Vec<serde_json::Value> = (0..20)
        .map(|i| serde_json::json!({"task_id": "BigCodeBench/1", "solution": format!("SLEEP {} PASS", 50 + i)}))
        .collect();
    let mut res = s
        .post("/v1/evaluate")
        .header("accept", "application/x-ndjson")
        .json(&body(serde_json::json!(samples)))
        .send()
        .await
        .unwrap();
    let first = res.chunk().await.unwrap().unwrap();
    assert!(std::str::from_utf8(&first).unwrap().contains("\"pass\""));
    drop(res);
    // The request's task hears the client leave at once; the fake stops before its next job.
    let settled = || {
        let done =
            s.engine.executed.load(Ordering::SeqCst) + s.engine.cancelled.load(Ordering::SeqCst);
        done == 20 && s.state.outstanding() == 0
    };
    wait_until(
        Duration::from_secs(30),
        "every job to have run or been cancelled, and nothing outstanding",
        settled,
    )
    .await;
    let executed = s.engine.executed.load(Ordering::SeqCst);
    assert!(executed < 20, "executed {executed}");
    let metrics = reqwest::get(format!("{}/metrics", s.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !metrics.contains("bcb_cancelled_samples_total 0"),
        "{metrics}"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn sigterm_drain_finishes_admitted_samples_and_refuses_new_ones_with_503() {
    let s = start(|_| {}, true).await;
    let c = reqwest::Client::new();
    let running = tokio::spawn(
        c.post(format!("{}/v1/evaluate", s.url))
            .json(&body(serde_json::json!([
                {"task_id": "BigCodeBench/1", "solution": "SLEEP 400 PASS"},
                {"task_id": "BigCodeBench/2", "solution": "SLEEP 400 PASS"},
            ])))
            .send(),
    );
    wait_until(Duration::from_secs(30), "the request admitted", || {
        s.state.outstanding() > 0 || running.is_finished()
    })
    .await;
    let state = s.state.clone();
    let drain = tokio::spawn(async move { bcb_serve::drain(&state).await });
    wait_until(Duration::from_secs(30), "the drain to start", || {
        !s.state.is_ready()
    })
    .await;
    let refused = c
        .post(format!("{}/v1/evaluate", s.url))
        .json(&body(
            serde_json::json!([{"task_id": "BigCodeBench/1", "solution": "PASS"}]),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let ready = reqwest::get(format!("{}/readyz", s.url)).await.unwrap();
    assert_eq!(ready.status(), 503);
    let done = running.await.unwrap().unwrap();
    assert_eq!(done.status(), 200);
    let v: serde_json::Value = done.json().await.unwrap();
    assert_eq!(v["summary"]["pass"], 2, "nothing admitted is lost");
    drain.await.unwrap();
    s.shutdown().await;
}

#[tokio::test]
async fn an_executor_fault_is_a_503_with_a_hint_never_a_verdict() {
    let s = start(|_| {}, true).await;
    let c = reqwest::Client::new();
    let res = c
        .post(format!("{}/v1/evaluate", s.url))
        .json(&body(serde_json::json!([
            {"task_id": "BigCodeBench/1", "solution": "FAULT"},
        ])))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    let v: serde_json::Value = res.json().await.unwrap();
    assert!(v.get("status").is_none());
    assert_eq!(v["hint"], "run `bcb env check`");
    assert_eq!(v["task_ids"], serde_json::json!(["BigCodeBench/1"]));
    // Streamed: an error line, not a status.
    let text = c
        .post(format!("{}/v1/evaluate", s.url))
        .header("accept", "application/x-ndjson")
        .json(&body(
            serde_json::json!([{"task_id": "BigCodeBench/1", "solution": "FAULT"}]),
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert!(line.get("status").is_none() && line["error"].is_string() && line["hint"].is_string());
    s.shutdown().await;
}

#[tokio::test]
async fn readiness_waits_for_the_engine_and_health_does_not() {
    let s = start(|_| {}, false).await;
    assert_eq!(s.get_status("/healthz").await, 200);
    assert_eq!(s.get_status("/readyz").await, 503);
    let res = s
        .evaluate(serde_json::json!([{"task_id": "BigCodeBench/1", "solution": "PASS"}]))
        .await;
    assert_eq!(res.status(), 503);
    s.state.set_ready(Arc::new(s.engine.clone()));
    assert_eq!(s.get_status("/readyz").await, 200);
    s.shutdown().await;
}

#[tokio::test]
async fn a_token_guards_everything_but_health_and_cors_is_off() {
    let s = start(|c| c.token = Some("s3cret".into()), true).await;
    let c = reqwest::Client::new();
    let res = c.get(format!("{}/v1/tasks", s.url)).send().await.unwrap();
    assert_eq!(res.status(), 401);
    let res = c
        .get(format!("{}/v1/tasks", s.url))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let res = c
        .get(format!("{}/v1/tasks?split=instruct", s.url))
        .bearer_auth("s3cret")
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(!res.headers().contains_key("access-control-allow-origin"));
    let v: serde_json::Value = res.json().await.unwrap();
    assert_eq!(v["tasks"][0]["prompt"], "Write task_func.");
    assert_eq!(
        c.get(format!("{}/healthz", s.url))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    s.shutdown().await;
}

#[test]
fn a_non_loopback_address_without_a_token_refuses_to_start() {
    let mut cfg = ServeConfig::new("0.0.0.0:8765".parse().unwrap());
    let err = cfg.check().unwrap_err().to_string();
    assert!(err.contains("--token"), "{err}");
    cfg.token = Some(String::new());
    assert!(cfg.check().is_err(), "an empty token is no token");
    cfg.token = Some("t".into());
    cfg.check().unwrap();
    ServeConfig::new("127.0.0.1:8765".parse().unwrap())
        .check()
        .unwrap();
    ServeConfig::new("[::1]:8765".parse().unwrap())
        .check()
        .unwrap();
}
