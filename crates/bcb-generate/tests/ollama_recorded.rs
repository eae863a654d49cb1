//! Ollama's native API. No Ollama server can be installed here, so these tests replay
//! exchanges written from Ollama's API documentation (docs/api.md: /api/chat and
//! /api/generate, streaming NDJSON) on a loopback stub: recorded, not live.

mod common;

use std::sync::Arc;

use bcb_dataset::{Split, Subset};
use bcb_generate::testing::TestServer;
use bcb_generate::Backend;
use serde_json::{json, Value};

/// Stream shapes as documented: partial objects with `done: false`, a final one with counts.
fn ollama_recorded() -> bcb_generate::testing::Canned {
    Arc::new(|path: &str, body: &Value| {
        let model = body["model"].as_str().unwrap_or("").to_string();
        let mut out = String::new();
        if path == "/api/chat" {
            for piece in [
                "```python\nimport os\n",
                "def task_func():\n",
                "    return os.sep\n```",
            ] {
                out.push_str(
                    &json!({"model": model, "created_at": "2023-08-04T08:52:19.385406455-07:00",
                    "message": {"role": "assistant", "content": piece}, "done": false})
                    .to_string(),
                );
                out.push('\n');
            }
            out.push_str(&json!({"model": model, "created_at": "2023-08-04T19:22:45.499127Z",
                "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop",
                "total_duration": 4883583458u64, "load_duration": 1334875, "prompt_eval_count": 26,
                "prompt_eval_duration": 342546000, "eval_count": 282, "eval_duration": 4535599000u64}).to_string());
            out.push('\n');
            (200, "application/x-ndjson", out)
        } else if path == "/api/generate" {
            for piece in ["    return", " os.sep\n"] {
                out.push_str(
                    &json!({"model": model, "created_at": "2023-08-04T08:52:19.385406455-07:00",
                    "response": piece, "done": false})
                    .to_string(),
                );
                out.push('\n');
            }
            out.push_str(&json!({"model": model, "created_at": "2023-08-04T19:22:45.499127Z", "response": "",
                "done": true, "context": [1, 2, 3], "prompt_eval_count": 26, "eval_count": 290}).to_string());
            (200, "application/x-ndjson", out)
        } else {
            (
                404,
                "application/json",
                json!({"error": format!("model '{model}' not found")}).to_string(),
            )
        }
    })
}

#[test]
fn ollama_chat_recorded_exchange_streams_and_counts_tokens() {
    let ds = common::dataset(Subset::Hard);
    let stub = TestServer::stub(ollama_recorded());
    let dir = tempfile::tempdir().unwrap();
    let mut o = common::hard_instruct(Backend::Ollama, "qwen2.5-coder:7b", stub.url(), dir.path());
    o.id_range = Some((0, 2));
    o.n_samples = 2;
    o.temperature = bcb_generate::Temperature::parse("0.8").unwrap();
    o.seed = Some(7);
    let out = bcb_generate::run_codegen(&o, &ds).unwrap();
    assert!(out.is_complete(), "{}", out.summary());
    assert_eq!(out.requests, 4, "Ollama takes one sample per request");
    assert_eq!(out.usage.input_tokens, 4 * 26);
    assert_eq!(out.usage.output_tokens, 4 * 282);
    let bodies = stub.bodies();
    let task = &ds.tasks()[0];
    let want_user = format!(
        "Please provide a self-contained Python script that solves the following problem in a markdown code block:\n{}\n",
        task.instruct_prompt.trim()
    );
    assert_eq!(bodies[0].0, "/api/chat");
    assert_eq!(
        bodies[0].1,
        json!({"model": "qwen2.5-coder:7b", "messages": [{"role": "user", "content": want_user}],
               "stream": true, "options": {"temperature": 0.8, "num_predict": 1280, "seed": 7}})
    );
    let text = std::fs::read_to_string(&out.path).unwrap();
    let row: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        row["raw_solution"],
        "```python\nimport os\ndef task_func():\n    return os.sep\n```"
    );
    assert!(out
        .path
        .to_string_lossy()
        .ends_with("--ollama-0.8-2-sanitized_calibrated.jsonl"));
}

#[test]
fn ollama_generate_recorded_exchange_for_direct_completion() {
    let ds = common::dataset(Subset::Full);
    let stub = TestServer::stub(ollama_recorded());
    let dir = tempfile::tempdir().unwrap();
    let mut o = common::quick_opts(
        Backend::Ollama,
        "starcoder2:3b",
        Split::Complete,
        Subset::Full,
        stub.url(),
        dir.path(),
    );
    o.id_range = Some((0, 1));
    o.direct_completion = true;
    let out = bcb_generate::run_codegen(&o, &ds).unwrap();
    assert!(out.is_complete(), "{}", out.summary());
    let (path, body) = &stub.bodies()[0];
    assert_eq!(path, "/api/generate");
    assert_eq!(body["raw"], true);
    assert_eq!(body["prompt"], ds.tasks()[0].complete_prompt.as_str());
    assert_eq!(body["options"]["stop"].as_array().unwrap().len(), 11);
    let row: Value = serde_json::from_str(
        std::fs::read_to_string(&out.path)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    // Direct completion: the sample is the prompt plus the continuation.
    assert_eq!(
        row["raw_solution"],
        format!("{}    return os.sep\n", ds.tasks()[0].complete_prompt)
    );
}

#[test]
fn ollama_unknown_model_recorded_404_stops_the_run() {
    let ds = common::dataset(Subset::Hard);
    let stub = TestServer::stub(Arc::new(|_: &str, _: &Value| {
        (
            404,
            "application/json",
            json!({"error": "model 'nope' not found, try pulling it first"}).to_string(),
        )
    }));
    let dir = tempfile::tempdir().unwrap();
    let mut o = common::hard_instruct(Backend::Ollama, "nope", stub.url(), dir.path());
    o.id_range = Some((0, 5));
    let err = bcb_generate::run_codegen(&o, &ds).unwrap_err().to_string();
    assert!(
        err.contains("HTTP 404") && err.contains("model 'nope' not found"),
        "{err}"
    );
    assert_eq!(stub.received(), 1);
}

#[test]
fn ollama_stream_cut_before_done_is_retried() {
    std::env::set_var("BCB_RETRY_MIN_DELAY_MS", "10");
    let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let c = calls.clone();
    let full = ollama_recorded();
    let stub = TestServer::stub(Arc::new(move |path: &str, body: &Value| {
        let (s, ct, text) = full(path, body);
        if c.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            // First answer: only the first streamed line, no `done: true`.
            let first = text.lines().next().unwrap().to_string() + "\n";
            return (s, ct, first);
        }
        (s, ct, text)
    }));
    let ds = common::dataset(Subset::Hard);
    let dir = tempfile::tempdir().unwrap();
    let mut o = common::hard_instruct(Backend::Ollama, "m", stub.url(), dir.path());
    o.id_range = Some((0, 1));
    let out = bcb_generate::run_codegen(&o, &ds).unwrap();
    assert!(out.is_complete());
    assert_eq!(out.retries, 1);
    assert_eq!(out.written, 1);
}
