//! The endpoints RL clients call (`/openrlhf`, SandboxFusion's `/submit` and `/run_code`,
//! `upstream` answers) against a FAKE engine (a scripted `Verdicts`, in `common/`): their
//! shapes, their place in the bounded queue, and the retry-later status each client retries.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{body, start, wait_until};

#[tokio::test]
async fn openrlhf_and_sandbox_fusion_shapes() {
    let s = start(|_| {}, true).await;
    let c = reqwest::Client::new();
    let v: serde_json::Value = s
        .post_json(
            "/openrlhf",
            serde_json::json!({
                "query": ["Q1 ```python\ndef task_func():\n    return 'PASS'\n```", "Q2 no"],
                "prompts": ["Q1 ", "Q2 "],
                "labels": ["BigCodeBench/1", "{\"task_id\": \"BigCodeBench/2\"}"],
            }),
        )
        .await;
    assert_eq!(v["rewards"], serde_json::json!([1.0, 0.0]), "{v}");
    assert_eq!(v["scores"], v["rewards"]);
    assert!(v["extra_logs"].is_object());
    let ids: serde_json::Value = s
        .post_json(
            "/list_ids",
            serde_json::json!({"dataset": "bigcodebench", "config": {}}),
        )
        .await;
    assert_eq!(ids, serde_json::json!(["BigCodeBench/1", "BigCodeBench/2"]));
    let r: serde_json::Value = s
        .post_json("/submit", serde_json::json!({"dataset": "bigcodebench", "id": 1, "completion": "    return 'PASS'\n", "config": {}}))
        .await;
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
    let res = s
        .post("/v1/evaluate")
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
    wait_until(Duration::from_secs(30), "the first script admitted", || {
        s.state.outstanding() > 0
    })
    .await;
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
    wait_until(Duration::from_secs(30), "the slow script admitted", || {
        s.state.outstanding() > 0
    })
    .await;
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
    wait_until(Duration::from_secs(30), "the slow sample admitted", || {
        s.state.outstanding() > 0
    })
    .await;
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
