//! `bcb evaluate --model ...`: generate against the real llama.cpp test server, sanitize,
//! then evaluate, in one command, as the original's `evaluate` does without `--samples`.

mod evalkit;

use bcb_generate::testing::llm_server;
use evalkit::{read_json, stderr};

#[test]
fn evaluate_with_a_model_generates_then_evaluates_with_upstream_file_names() {
    let Some(env) = evalkit::env() else { return };
    let Some(server) = llm_server(2) else { return };
    let root = env.path("bcb_results");
    let base_url = format!("{}/v1", server.base_url());
    // The first three hard tasks.
    let ids = "BigCodeBench/13,BigCodeBench/15,BigCodeBench/17";
    let out = env
        .bcb()
        .env("OPENAI_API_KEY", "sk-test-not-a-secret")
        .args([
            "evaluate",
            "--split",
            "instruct",
            "--subset",
            "hard",
            "--ids",
            ids,
            "--model",
            "gemma-test",
            "--backend",
            "openai",
            "--base-url",
            &base_url,
            "--n-samples",
            "2",
            "--temperature",
            "0.8",
            "--max-tokens",
            "32",
            "--no-progress",
            "--no-gt",
            "--timeout",
            "2",
            "--pass-k",
            "1,2",
            "--root",
            root.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(out.status.success(), "{}", stderr(&out));
    let stem = "gemma-test--main--bigcodebench-hard-instruct--openai-0.8-2-sanitized_calibrated";
    for suffix in [".jsonl", "_eval_results.json", "_pass_at_k.json"] {
        assert!(
            root.join(format!("{stem}{suffix}")).is_file(),
            "{stem}{suffix}"
        );
    }
    let results = read_json(&root.join(format!("{stem}_eval_results.json")));
    let eval = results["eval"].as_object().unwrap();
    assert_eq!(eval.len(), 3);
    for (id, list) in eval {
        assert_eq!(list.as_array().unwrap().len(), 2, "{id}");
        for r in list.as_array().unwrap() {
            assert!(["pass", "fail", "timeout"].contains(&r["status"].as_str().unwrap()));
        }
    }
    let pk = read_json(&root.join(format!("{stem}_pass_at_k.json")));
    assert_eq!(pk["model"], "gemma-test--main");
    assert_eq!(pk["split"], "instruct");
    assert_eq!(pk["subset"], "hard");
    assert!(pk["pass@1"].is_f64() && pk["pass@2"].is_f64(), "{pk}");
    assert!(pk.get("pass@5").is_none());
}
