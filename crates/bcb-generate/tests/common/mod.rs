#![allow(dead_code)]
//! Shared by the integration tests: the real dataset and canned provider answers.

use std::path::PathBuf;
use std::sync::Arc;

use bcb_dataset::{Dataset, DatasetSpec, Subset};
use bcb_generate::testing::Canned;
use serde_json::{json, Value};

/// The real dataset (CI sets BCB_DATASET_DIR; the shared copy is the fallback).
pub fn dataset(subset: Subset) -> Dataset {
    let mut spec = DatasetSpec::new(subset, None);
    if spec.dataset_dir.is_none() && spec.path.is_none() {
        spec.dataset_dir =
            Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bigcodebench"));
    }
    spec.offline = true;
    spec.load()
        .expect("the real dataset (set BCB_DATASET_DIR to the folder of bigcodebench-*.jsonl.gz)")
}

pub const ANSWER: &str =
    "Here it is:\n```python\nimport os\ndef task_func():\n    return os.sep\n```\n";

/// Answers in each provider's documented shape; `n` choices where the request asks for `n`.
pub fn canned() -> Canned {
    Arc::new(|path: &str, body: &Value| {
        let n = body
            .get("n")
            .or_else(|| body.pointer("/generationConfig/candidateCount"))
            .and_then(Value::as_u64)
            .unwrap_or(1);
        if path.ends_with("/chat/completions") {
            let choices: Vec<Value> = (0..n)
                .map(|i| json!({"index": i, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}))
                .collect();
            (200, "application/json", json!({"choices": choices, "usage": {"prompt_tokens": 100, "completion_tokens": 20}}).to_string())
        } else if path.ends_with("/completions") {
            let choices: Vec<Value> = (0..n)
                .map(
                    |i| json!({"index": i, "text": "    return os.sep\n", "finish_reason": "stop"}),
                )
                .collect();
            (200, "application/json", json!({"choices": choices, "usage": {"prompt_tokens": 100, "completion_tokens": 5}}).to_string())
        } else if path.ends_with("/v1/messages") {
            (
                200,
                "application/json",
                json!({
                    "id": "msg_1", "type": "message", "role": "assistant",
                    "content": [{"type": "text", "text": ANSWER}],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": 100, "output_tokens": 20}
                })
                .to_string(),
            )
        } else if path.contains(":generateContent") {
            let cands: Vec<Value> = (0..n)
                .map(|i| json!({"index": i, "content": {"role": "model", "parts": [{"text": ANSWER}]}, "finishReason": "STOP"}))
                .collect();
            (200, "application/json", json!({"candidates": cands, "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20}}).to_string())
        } else {
            (
                404,
                "application/json",
                json!({"error": {"message": format!("no route {path}")}}).to_string(),
            )
        }
    })
}

/// [`quick_opts`] for the instruct split of the hard subset.
pub fn hard_instruct(
    backend: bcb_generate::Backend,
    model: &str,
    base_url: String,
    root: &std::path::Path,
) -> bcb_generate::GenerateOptions {
    quick_opts(
        backend,
        model,
        bcb_dataset::Split::Instruct,
        Subset::Hard,
        base_url,
        root,
    )
}

/// Options pointing at a stub, quiet, without fsync.
pub fn quick_opts(
    backend: bcb_generate::Backend,
    model: &str,
    split: bcb_dataset::Split,
    subset: Subset,
    base_url: String,
    root: &std::path::Path,
) -> bcb_generate::GenerateOptions {
    let mut o = bcb_generate::GenerateOptions::new(model, backend, split, subset);
    o.base_url = Some(base_url);
    o.root = root.to_path_buf();
    o.durable = false;
    o
}
