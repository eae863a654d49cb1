//! The HTTP side of `bcb serve` against a FAKE engine (a scripted `Verdicts`): status codes,
//! shapes, the bounded queue, cancellation, drain, faults, auth. The real warm session is
//! tested end to end in bcb-cli's `serve` tests; here the engine is scripted so every fault
//! can be produced on demand (the fake is in `common/`).

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bcb_serve::ServeConfig;
use common::start;

fn body(samples: serde_json::Value) -> serde_json::Value {
    serde_json::json!({ "samples": samples })
}

#[tokio::test]
async fn evaluate_answers_in_request_order_with_every_field() {
    let s = start(|_| {}, true).await;
    let res = reqwest::Client::new()
        .post(format!("{}/v1/evaluate", s.url))
        .json(&body(serde_json::json!([
            {"task_id": "BigCodeBench/1", "solution": "SLEEP 50 PASS"},
            {"task_id": "BigCodeBench/2", "completion": "wrong"},
            {"task_id": "2", "solution": "PASS"},
        ])))
        .send()
        .await
        .unwrap();
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
    let res = reqwest::Client::new()
        .post(format!("{}/v1/evaluate", s.url))
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
    let res = reqwest::Client::new()
        .post(format!("{}/v1/evaluate", s.url))
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
    while s.state.outstanding() < 4 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
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
    let mut res = reqwest::Client::new()
        .post(format!("{}/v1/evaluate", s.url))
        .header("accept", "application/x-ndjson")
        .json(&body(serde_json::json!(samples)))
        .send()
        .await
        .unwrap();
    let first = res.chunk().await.unwrap().unwrap();
    assert!(std::str::from_utf8(&first).unwrap().contains("\"pass\""));
    drop(res);
    // The request's task hears the client leave at once; the fake stops before its next job.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let executed = s.engine.executed.load(Ordering::SeqCst);
    let cancelled = s.engine.cancelled.load(Ordering::SeqCst);
    assert!(executed < 20, "executed {executed}");
    assert_eq!(
        executed + cancelled,
        20,
        "every job either ran or was cancelled"
    );
    assert_eq!(s.state.outstanding(), 0);
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
    tokio::time::sleep(Duration::from_millis(100)).await;
    let state = s.state.clone();
    let drain = tokio::spawn(async move { bcb_serve::drain(&state).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
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
    assert_eq!(
        reqwest::get(format!("{}/healthz", s.url))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        reqwest::get(format!("{}/readyz", s.url))
            .await
            .unwrap()
            .status(),
        503
    );
    let res = reqwest::Client::new()
        .post(format!("{}/v1/evaluate", s.url))
        .json(&body(
            serde_json::json!([{"task_id": "BigCodeBench/1", "solution": "PASS"}]),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    s.state.set_ready(Arc::new(s.engine.clone()));
    assert_eq!(
        reqwest::get(format!("{}/readyz", s.url))
            .await
            .unwrap()
            .status(),
        200
    );
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

#[tokio::test]
async fn openrlhf_and_sandbox_fusion_shapes() {
    let s = start(|_| {}, true).await;
    let c = reqwest::Client::new();
    let v: serde_json::Value = c
        .post(format!("{}/openrlhf", s.url))
        .json(&serde_json::json!({
            "query": ["Q1 ```python\ndef task_func():\n    return 'PASS'\n```", "Q2 no"],
            "prompts": ["Q1 ", "Q2 "],
            "labels": ["BigCodeBench/1", "{\"task_id\": \"BigCodeBench/2\"}"],
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["rewards"], serde_json::json!([1.0, 0.0]), "{v}");
    assert_eq!(v["scores"], v["rewards"]);
    assert!(v["extra_logs"].is_object());
    let ids: serde_json::Value = c
        .post(format!("{}/list_ids", s.url))
        .json(&serde_json::json!({"dataset": "bigcodebench", "config": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ids, serde_json::json!(["BigCodeBench/1", "BigCodeBench/2"]));
    let r: serde_json::Value = c
        .post(format!("{}/submit", s.url))
        .json(&serde_json::json!({"dataset": "bigcodebench", "id": 1, "completion": "    return 'PASS'\n", "config": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["accepted"], true, "{r}");
    assert_eq!(r["tests"][0]["exec_info"]["status"], "Success");
    let res = c
        .post(format!("{}/submit", s.url))
        .json(&serde_json::json!({"dataset": "bigcodebench", "id": "BigCodeBench/1", "completion": "x", "config": {"provided_data": {"task_id": "BigCodeBench/1", "test": "other tests"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    assert!(res.text().await.unwrap().contains("provided_data.test"));
    s.shutdown().await;
}

#[tokio::test]
async fn upstream_answers_need_an_engine_that_gives_its_ground_truth_and_limits() {
    let s = start(|_| {}, true).await;
    let res = reqwest::Client::new()
        .post(format!("{}/v1/evaluate", s.url))
        .json(&serde_json::json!({
            "samples": [{"task_id": "BigCodeBench/1", "solution": "x"}],
            "upstream": {"file_name": "m--bigcodebench-full-complete.jsonl"},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 501);
    let v: serde_json::Value = res.json().await.unwrap();
    assert!(v["error"].as_str().unwrap().contains("upstream"), "{v}");
    assert!(v["hint"].is_string(), "{v}");
}

#[tokio::test]
async fn run_code_answers_in_sandbox_fusions_shape_and_refuses_bad_fields() {
    let s = start(|_| {}, true).await;
    let c = reqwest::Client::new();
    let post = |v: serde_json::Value| c.post(format!("{}/run_code", s.url)).json(&v).send();
    // verl's request shape.
    let verl = |code: &str| {
        serde_json::json!({"compile_timeout": 10, "run_timeout": 5, "code": code, "stdin": "1 2\n",
            "memory_limit_MB": 1024, "language": "python", "files": {}, "fetch_files": []})
    };
    let v: serde_json::Value = post(verl("PASS")).await.unwrap().json().await.unwrap();
    assert_eq!(
        v,
        serde_json::json!({"status": "Success", "message": "", "compile_result": null,
            "run_result": {"status": "Finished", "execution_time": 0.5, "return_code": 0,
                "stdout": "1 2\n", "stderr": "files: 0"},
            "executor_pod_name": null, "files": {}})
    );
    let v: serde_json::Value = post(verl("exit 1")).await.unwrap().json().await.unwrap();
    assert_eq!(
        (
            v["status"].as_str(),
            v["run_result"]["return_code"].as_i64()
        ),
        (Some("Failed"), Some(1))
    );
    let v: serde_json::Value = post(verl("TLE")).await.unwrap().json().await.unwrap();
    assert_eq!(v["status"], "Failed");
    assert_eq!(v["run_result"]["status"], "TimeLimitExceeded");
    assert!(v["run_result"]["return_code"].is_null());
    let v: serde_json::Value = post(verl("LOST")).await.unwrap().json().await.unwrap();
    assert_eq!(v["status"], "SandboxError");
    assert!(v["message"].as_str().unwrap().contains("early exit"), "{v}");
    assert!(v["run_result"].is_null());
    // The minimal request (SandboxFusion's defaults) with files in and out.
    let v: serde_json::Value = post(serde_json::json!({"code": "PASS", "language": "python",
            "files": {"a/b.txt": "aGk=", "skip.txt": null}, "fetch_files": ["out.bin"]}))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(v["run_result"]["stderr"], "files: 1");
    assert_eq!(v["files"], serde_json::json!({"out.bin": "AAH/"}));

    // An executor fault is "retry later": on /run_code a 504, the one status verl retries.
    let res = post(verl("FAULT")).await.unwrap();
    assert_eq!(res.status(), 504);
    assert!(res.headers().get("retry-after").is_some());
    let e: serde_json::Value = res.json().await.unwrap();
    assert!(e["hint"].is_string(), "{e}");

    let executed = s.engine.executed.load(Ordering::SeqCst);
    let bad = [
        (
            serde_json::json!({"code": "x", "language": "cpp"}),
            "field `language`",
        ),
        (serde_json::json!({"code": "x"}), "language"),
        (
            serde_json::json!({"code": "x", "language": "python", "run_timeout": -1}),
            "field `run_timeout`",
        ),
        (
            serde_json::json!({"code": "x", "language": "python", "run_timeout": 1e9}),
            "field `run_timeout`",
        ),
        (
            serde_json::json!({"code": "x", "language": "python", "files": {"../x": "aGk="}}),
            "field `files`",
        ),
        (
            serde_json::json!({"code": "x", "language": "python", "files": {"/etc/x": "aGk="}}),
            "field `files`",
        ),
        (
            serde_json::json!({"code": "x", "language": "python", "files": {"x": "%%%"}}),
            "field `files.x`",
        ),
        (
            serde_json::json!({"code": "x", "language": "python", "fetch_files": ["/etc/shadow"]}),
            "field `fetch_files`",
        ),
    ];
    for (req, needle) in bad {
        let res = post(req.clone()).await.unwrap();
        assert_eq!(res.status(), 400, "{req}");
        let v: serde_json::Value = res.json().await.unwrap();
        let err = v["error"].as_str().unwrap();
        assert!(err.contains(needle), "{needle} not in {err}");
    }
    assert_eq!(
        s.engine.executed.load(Ordering::SeqCst),
        executed,
        "nothing ran for a bad request"
    );
    s.shutdown().await;
}

/// A full queue holds a `/run_code` request for room as long as verl's read timeout lets its
/// run still fit (here the server's 2-s request timeout caps it), and past that answers 504,
/// the one status verl retries; `/v1/evaluate` answers 429 at once (bcb's client retries it).
#[tokio::test]
async fn run_code_takes_its_place_in_the_bounded_queue_and_needs_the_token() {
    let s = start(
        |c| {
            c.queue_limit = 1;
            c.token = Some("t0k".into());
            c.request_timeout = Duration::from_secs(2);
        },
        true,
    )
    .await;
    let c = reqwest::Client::new();
    let run = |code: &str| {
        c.post(format!("{}/run_code", s.url))
            .bearer_auth("t0k")
            .json(&serde_json::json!({"code": code, "language": "python", "run_timeout": 1}))
            .send()
    };
    let req = serde_json::json!({"code": "SLEEP 400 PASS", "language": "python"});
    let res = c
        .post(format!("{}/run_code", s.url))
        .json(&req)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    // Held while the first runs, then run: both answered.
    let slow = tokio::spawn(run("SLEEP 400 PASS"));
    tokio::time::sleep(Duration::from_millis(150)).await;
    let held = std::time::Instant::now();
    let res = run("PASS").await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        held.elapsed() >= Duration::from_millis(150),
        "held for room"
    );
    assert_eq!(slow.await.unwrap().unwrap().status(), 200);
    // Still no room when the hold ends: 504 with Retry-After.
    let slow = tokio::spawn(run("SLEEP 3000 PASS"));
    tokio::time::sleep(Duration::from_millis(150)).await;
    let res = run("PASS").await.unwrap();
    assert_eq!(res.status(), 504);
    assert!(res.headers().get("retry-after").is_some());
    let native = c
        .post(format!("{}/v1/evaluate", s.url))
        .bearer_auth("t0k")
        .json(&body(
            serde_json::json!([{"task_id": "BigCodeBench/1", "solution": "PASS"}]),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(native.status(), 429);
    assert!(native.headers().get("retry-after").is_some());
    slow.await.unwrap().unwrap();
    s.shutdown().await;
}

/// A request waiting for its verdicts holds no thread of the server's runtime: more such
/// requests than the runtime has blocking threads (8 here; tokio's default is 512) all reach
/// the engine's queue at once. With a forwarding thread per request, the ones past the cap
/// waited outside the queue, uncounted, until a thread freed.
#[test]
fn waiting_requests_hold_no_runtime_thread_so_all_reach_the_engine() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(8)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let s = start(|_| {}, true).await;
        let c = reqwest::Client::new();
        let requests: Vec<_> = (0..20)
            .map(|i| {
                let sample = serde_json::json!([{"task_id": "BigCodeBench/1", "solution": format!("SLEEP 2000 PASS {i}")}]);
                tokio::spawn(c.post(format!("{}/v1/evaluate", s.url)).json(&body(sample)).send())
            })
            .collect();
        let started = std::time::Instant::now();
        while s.engine.submitted.load(Ordering::SeqCst) < 20
            && started.elapsed() < Duration::from_millis(1500)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(s.engine.submitted.load(Ordering::SeqCst), 20, "submissions in the engine while all wait");
        for r in requests {
            assert_eq!(r.await.unwrap().unwrap().status(), 200);
        }
        s.shutdown().await;
    });
}

/// Each endpoint answers "retry later" in the status its known clients retry (see
/// `docs/rl-rewards.md`): verl retries `/run_code` on 504 only, OpenRLHF and the
/// `sandbox-fusion` client retry any error, bcb's client 429 and 503. A full queue answers
/// `/v1/evaluate` at once and holds `/openrlhf` and `/submit` for room.
#[tokio::test]
async fn each_endpoint_answers_retry_later_in_the_status_its_clients_retry() {
    let requests = [
        (
            "/v1/evaluate",
            body(serde_json::json!([{"task_id": "BigCodeBench/1", "solution": "PASS"}])),
        ),
        (
            "/openrlhf",
            serde_json::json!({"query": ["PASS"], "labels": ["BigCodeBench/1"]}),
        ),
        (
            "/submit",
            serde_json::json!({"dataset": "bigcodebench", "id": 1, "completion": "PASS", "config": {}}),
        ),
        (
            "/run_code",
            serde_json::json!({"code": "PASS", "language": "python"}),
        ),
    ];
    let c = reqwest::Client::new();
    let post = |url: &str, (path, req): &(&str, serde_json::Value)| {
        c.post(format!("{url}{path}")).json(req).send()
    };
    // Starting (not ready yet).
    let s = start(|_| {}, false).await;
    for ((path, req), want) in requests.iter().zip([503, 503, 503, 504]) {
        let res = post(&s.url, &(path, req.clone())).await.unwrap();
        assert_eq!(res.status(), want, "{path} while starting");
        assert!(res.headers().get("retry-after").is_some(), "{path}");
    }
    s.shutdown().await;

    // A full queue: one slow sample holds the only place.
    let s = start(
        |c| {
            c.queue_limit = 1;
            c.request_timeout = Duration::from_secs(5);
        },
        true,
    )
    .await;
    let slow =
        body(serde_json::json!([{"task_id": "BigCodeBench/2", "solution": "SLEEP 500 PASS"}]));
    let slow = tokio::spawn(c.post(format!("{}/v1/evaluate", s.url)).json(&slow).send());
    tokio::time::sleep(Duration::from_millis(150)).await;
    let res = post(&s.url, &requests[0]).await.unwrap();
    assert_eq!(res.status(), 429, "{}: answered at once", requests[0].0);
    let held: Vec<_> = requests[1..3]
        .iter()
        .map(|r| tokio::spawn(post(&s.url, r)))
        .collect();
    for (h, (path, _)) in held.into_iter().zip(&requests[1..3]) {
        assert_eq!(
            h.await.unwrap().unwrap().status(),
            200,
            "{path}: held for room"
        );
    }
    assert_eq!(slow.await.unwrap().unwrap().status(), 200);
    s.shutdown().await;
}
