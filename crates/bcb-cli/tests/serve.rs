//! `bcb serve` end to end: the real binary, the real eval env and dataset, the real
//! `sandbox-fusion` client from PyPI. Verdicts served equal `bcb evaluate`'s and the official
//! results of the real samples; repeats across requests run once and survive a SIGKILL in
//! the verdict cache; faults (a client killed mid-stream, SIGTERM under load, a tokenless
//! non-loopback address) behave as documented. `serve_run_code.rs` covers `/run_code`,
//! `serve_shapes.rs` the answer shapes every endpoint reads.

mod evalkit;
mod servekit;

use std::io::{BufRead, BufReader};
use std::process::Command;
use std::time::Duration;

use bcb_testkit::wait_until;
use serde_json::{json, Value};
use servekit::{
    canonical_program, evaluate_hard, evaluate_statuses, post, samples, statuses,
    statuses_and_flags, Server, NO_OVERLAP, TASKS,
};

#[test]
fn served_verdicts_equal_bcb_evaluate_and_the_sandbox_fusion_client_agrees() {
    let Some(env) = evalkit::env() else { return };
    let server = Server::start(&env, &[]);
    let rows = samples(&env);
    let res = server.evaluate(&rows);
    assert_eq!(res.status(), 200);
    let v: Value = res.json().unwrap();
    let served = statuses(&v);
    let expected = evaluate_statuses(&env, &rows);
    assert_eq!(served, expected);
    assert!(served.iter().step_by(2).all(|s| s == "pass"), "{served:?}");
    let first = &v["results"][0];
    assert!(first["tests_total"].as_u64().unwrap() > 0);
    assert_eq!(first["tests_passed"], first["tests_total"]);
    assert!(first["test_secs"].is_number());

    // The real answers of two models for these tasks, against the official verdicts.
    for model in [evalkit::HERMES, evalkit::PHI] {
        let real = evalkit::real_answers(&env, model, &TASKS);
        let official = env
            .dataset_dir
            .join(format!("../real-samples/{model}_eval_results.json.gz"));
        let official: Value = serde_json::from_str(&evalkit::read_gz(&official)).unwrap();
        let v: Value = server.evaluate(&real).json().unwrap();
        for (row, r) in real.iter().zip(v["results"].as_array().unwrap()) {
            let id = row["task_id"].as_str().unwrap();
            assert_eq!(
                r["status"], official["eval"][id][0]["status"],
                "{model} {id}"
            );
        }
    }

    // The sandbox-fusion client from PyPI: submit (a completion continuing the prompt, and
    // a chat answer) and the dataset endpoints.
    let Some(client) = bcb_testkit::serve_client_python() else {
        return;
    };
    let script = r#"
import json, sys
from sandbox_fusion import set_endpoint, submit, get_prompts, SubmitRequest, GetPromptsRequest, TestConfig
set_endpoint(sys.argv[1])
tasks = json.loads(sys.argv[2])
out = {"prompts": len(get_prompts(GetPromptsRequest(dataset="bigcodebench", config=TestConfig())))}
res = []
for t in tasks:
    ok = submit(SubmitRequest(dataset="bigcodebench", id=t["task_id"], completion=t["canonical_solution"], config=TestConfig()))
    chat = "Sure:\n```python\n" + t["code_prompt"] + t["canonical_solution"] + "\n```\n"
    ok_chat = submit(SubmitRequest(dataset="bigcodebench", id=t["task_id"], completion=chat, config=TestConfig(extra={"is_freeform": True})))
    bad = submit(SubmitRequest(dataset="bigcodebench", id=t["task_id"], completion="    return None\n", config=TestConfig(provided_data={"task_id": t["task_id"], "test": t["test"]})))
    res.append([ok.accepted, ok_chat.accepted, bad.accepted, bad.tests[0].exec_info.run_result.status])
out["submits"] = res
print(json.dumps(out))
"#;
    let tasks: Vec<Value> = TASKS.iter().map(|id| env.task(id)).collect();
    let out = Command::new(client)
        .args([
            "-c",
            script,
            &server.url,
            &serde_json::to_string(&tasks).unwrap(),
        ])
        .output()
        .unwrap();
    evalkit::ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["prompts"], TASKS.len());
    for r in v["submits"].as_array().unwrap() {
        assert_eq!(r, &json!([true, true, false, "Finished"]));
    }

    // OpenRLHF's remote reward model shape.
    let answer = format!("```python\n{}\n```", canonical_program(&env.task(TASKS[0])));
    let (_, v) = server.post(
        "/openrlhf",
        &json!({"query": [format!("P{answer}"), "Pnothing"], "prompts": ["P", "P"], "labels": [TASKS[0], TASKS[0]]}),
    );
    assert_eq!(v["rewards"], json!([1.0, 0.0]), "{v}");
    assert!(v["scores"].is_array() && v["extra_logs"].is_object());
}

#[test]
fn repeats_across_requests_run_once_and_a_server_killed_with_sigkill_answers_from_its_cache() {
    let Some(env) = evalkit::env() else { return };
    let rows = samples(&env);
    let mut server = Server::start(&env, &NO_OVERLAP);
    let first = statuses_and_flags(server.evaluate(&rows));
    let has = |flags: &[String], f: &str| flags.iter().any(|x| x == f);
    assert!(
        first
            .iter()
            .all(|(_, f)| !has(f, "duplicate") && !has(f, "cached")),
        "{first:?}"
    );
    // The same programs in a later request: answered from the first run, flagged.
    let again = statuses_and_flags(server.evaluate(&rows));
    for ((s1, _), (s2, f)) in first.iter().zip(&again) {
        assert_eq!(s1, s2);
        assert!(has(f, "duplicate"), "{again:?}");
    }
    assert_eq!(server.metric("bcb_dedup_hits_total"), rows.len() as f64);
    // SIGKILL: no drain, no close. What it executed is on disk already.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let server = Server::start(&env, &NO_OVERLAP);
    let after = statuses_and_flags(server.evaluate(&rows));
    for ((s1, _), (s2, f)) in first.iter().zip(&after) {
        assert_eq!(s1, s2);
        assert!(has(f, "cached"), "{after:?}");
    }
    assert_eq!(server.metric("bcb_cache_hits_total"), rows.len() as f64);
    // --no-cache --no-dedup: every sample runs, nothing is flagged.
    drop(server);
    let plain = Server::start(
        &env,
        &["--no-cache", "--no-dedup", NO_OVERLAP[0], NO_OVERLAP[1]],
    );
    for _ in 0..2 {
        let got = statuses_and_flags(plain.evaluate(&rows));
        assert!(
            got.iter()
                .all(|(_, f)| !has(f, "duplicate") && !has(f, "cached")),
            "{got:?}"
        );
    }
    assert_eq!(plain.metric("bcb_dedup_hits_total"), 0.0);
}

#[test]
fn faults_client_killed_mid_stream_and_sigterm_under_load() {
    let Some(env) = evalkit::env() else { return };
    let mut server = Server::start(
        &env,
        &["--no-cache", "--no-dedup", NO_OVERLAP[0], NO_OVERLAP[1]],
    );
    let rows = samples(&env);
    // A client that reads one streamed verdict and goes away: its other jobs are cancelled,
    // the server stays healthy and answers the next request in full. Each of its samples
    // sleeps a second first, so the request outlasts a client descheduled for a few seconds
    // (seen under load: a request of quick samples all answered before the client hung up).
    let many: Vec<Value> = (0..24)
        .map(|i| {
            let mut row = rows[i % rows.len()].clone();
            let program = row["solution"].as_str().unwrap();
            row["solution"] = json!(format!("import time\ntime.sleep(1)\n{program}"));
            row
        })
        .collect();
    {
        let mut res = reqwest::blocking::Client::new()
            .post(format!("{}/v1/evaluate", server.url))
            .header("accept", "application/x-ndjson")
            .json(&json!({ "samples": many }))
            .send()
            .unwrap();
        let mut first = String::new();
        BufReader::new(&mut res).read_line(&mut first).unwrap();
        assert!(first.contains("\"status\""), "{first}");
    }
    wait_until(
        Duration::from_secs(60),
        "the dropped client's samples to be cancelled or answered",
        || server.metric("bcb_outstanding_samples") == 0.0,
    );
    let cancelled = server.metric("bcb_cancelled_samples_total");
    assert!(
        cancelled > 0.0,
        "the dropped client's queued jobs were cancelled"
    );
    let res = server.evaluate(&rows);
    assert_eq!(res.status(), 200);

    // SIGTERM under load: the admitted request finishes in full, the process exits 0.
    let url = server.url.clone();
    let load = rows.clone();
    let answered = server.metric("bcb_requests_total");
    let inflight =
        std::thread::spawn(move || post(&url, "/v1/evaluate", &json!({ "samples": load })));
    // Admitted: its samples are outstanding (or, on a quick machine, already answered).
    wait_until(
        Duration::from_secs(60),
        "the request to be admitted",
        || {
            server.metric("bcb_outstanding_samples") > 0.0
                || server.metric("bcb_requests_total") > answered
        },
    );
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    // Draining: not ready any more (or, drained already, closed).
    let readyz = format!("{}/readyz", server.url);
    wait_until(Duration::from_secs(30), "the server to drain", || {
        reqwest::blocking::get(&readyz).map_or(true, |r| r.status() != 200)
    });
    // New requests during the drain: 503 (or refused once the server has closed).
    if let Ok(r) = reqwest::blocking::Client::new()
        .post(format!("{}/v1/evaluate", server.url))
        .json(&json!({ "samples": [rows[0]] }))
        .send()
    {
        assert_eq!(r.status(), 503);
    }
    let done = inflight.join().unwrap();
    assert_eq!(done.status(), 200, "nothing admitted is lost");
    let v: Value = done.json().unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), rows.len());
    let status = server.child.wait().unwrap();
    assert!(
        status.success(),
        "bcb serve exits 0 after draining: {status}"
    );
    while server.log.try_recv().is_ok() {}
}

#[test]
fn a_tokenless_non_loopback_listen_address_refuses_to_start() {
    let Some(env) = evalkit::env() else { return };
    let out = env
        .bcb()
        .env_remove("BCB_SERVE_TOKEN")
        .args(["serve", "--listen", "0.0.0.0:0", "--subset", "hard"])
        .output()
        .unwrap();
    let err = evalkit::stderr(&out);
    assert!(!out.status.success() && err.contains("--token"), "{err}");
}

/// `upstream` on `/v1/evaluate` (what the evaluator Space sends): the answer is the result
/// files `bcb evaluate` writes for the same samples file; limits other than the server's are
/// refused naming the field; `check_gt_only` answers from the ground truth checked at start.
#[test]
fn upstream_answer_is_the_result_files_of_bcb_evaluate_and_other_limits_are_refused() {
    let Some(env) = evalkit::env() else { return };
    let server = Server::start(&env, &NO_OVERLAP);
    let rows = samples(&env);
    let name = "m--bigcodebench-hard-complete.jsonl";
    let path = env.samples(name, &rows);
    evaluate_hard(&env, &path, &["--no-cache", "-q"]);
    let ids = TASKS.join(",");
    let local_results =
        evalkit::without_date(&env.path("m--bigcodebench-hard-complete_eval_results.json"));
    let local_pass_at_k =
        evalkit::read_json(&env.path("m--bigcodebench-hard-complete_pass_at_k.json"));

    let post = |upstream: Value| {
        let body =
            json!({"samples": rows, "subset": "hard", "calibrated": true, "upstream": upstream});
        server.post("/v1/evaluate", &body)
    };
    let defaults = json!({"file_name": name, "pass_k": "1,5,10", "ids": ids,
        "min_time_limit": 1.0, "max_as_limit": 30720, "max_data_limit": 30720, "max_stack_limit": 10});
    let (status, mut v) = post(defaults.clone());
    assert_eq!(status, 200, "{v}");
    let date = std::mem::take(&mut v["eval_results"]["date"]);
    assert_eq!(date.as_str().unwrap().len(), "2025-01-01 10:00".len());
    assert_eq!(v["eval_results"], local_results);
    assert_eq!(v["pass_at_k"], local_pass_at_k);

    for (field, value) in [
        ("max_as_limit", json!(1024)),
        ("max_stack_limit", json!(64)),
        ("min_time_limit", json!(500.0)),
    ] {
        let mut opts = defaults.clone();
        opts[field] = value;
        let (status, v) = post(opts);
        assert_eq!(status, 400, "{field}: {v}");
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains(&format!("upstream.{field}")),
            "{v}"
        );
        assert!(v["hint"].is_string(), "{v}");
    }
    // no_gt with upstream's defaults gives every task the server's limit (241 s).
    let mut opts = defaults.clone();
    opts["no_gt"] = json!(true);
    let (status, v) = post(opts);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["pass_at_k"]["gt_pass_rate"], 0.0);

    let mut opts = defaults.clone();
    opts["check_gt_only"] = json!(true);
    let (status, v) = post(opts);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["eval_results"], json!({}));
    assert_eq!(
        v["pass_at_k"],
        json!({"gt_pass_rate": 1.0, "failed_tasks": []})
    );

    let mut opts = defaults.clone();
    opts["ids"] = json!("13");
    let (status, v) = post(opts);
    assert_eq!(status, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("upstream.ids"), "{v}");
}
