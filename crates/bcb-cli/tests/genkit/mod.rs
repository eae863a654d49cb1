//! Shared by the `bcb generate` tests: `bcb` with no API key from the caller's environment,
//! the command line of a generate run, an OpenAI-compatible stub and the files a run writes.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use bcb_generate::testing::TestServer;
use serde_json::{json, Value};

use crate::evalkit;

/// `bcb` over the shared dataset, without the caller's API keys or `NO_COLOR`.
pub fn bcb() -> Command {
    let mut c = evalkit::bcb_over(&evalkit::shared_dataset_dir());
    c.env_remove("NO_COLOR")
        .env_remove("OPENAI_API_KEY")
        .env_remove("HF_TOKEN")
        .env_remove("HF_INFERENCE_API_KEY");
    c
}

/// `bcb generate` of the hard subset's `split` with `model` (and `backend`, if given),
/// writing under `root`; the caller adds the rest.
pub fn generate(
    split: &str,
    model: impl AsRef<OsStr>,
    backend: Option<&str>,
    root: &Path,
) -> Command {
    let mut c = bcb();
    c.args(["generate", "--subset", "hard", "--split", split, "--model"])
        .arg(model)
        .arg("--root")
        .arg(root);
    if let Some(backend) = backend {
        c.args(["--backend", backend]);
    }
    c
}

/// An answer with non-ASCII text, so the writer's escaping is exercised.
pub const ANSWER: &str =
    "Voilà — the code:\n```python\nimport os\ndef task_func():\n    return \"café ☕\"\n```\n";

/// An OpenAI-compatible stub answering every chat request with `answer`.
pub fn chat_stub(answer: &'static str) -> TestServer {
    TestServer::stub(Arc::new(move |_path: &str, body: &Value| {
        let n = body["n"].as_u64().unwrap_or(1);
        let choices: Vec<Value> = (0..n)
            .map(|i| json!({"index": i, "message": {"role": "assistant", "content": answer}}))
            .collect();
        (
            200,
            "application/json",
            json!({"choices": choices, "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
                .to_string(),
        )
    }))
}

/// `bcb generate` of tasks `range` of the hard instruct split from `stub-model` at an
/// OpenAI-compatible `base_url`, writing under `root`.
pub fn generate_from(root: &Path, base_url: &str, range: &str) -> Command {
    let mut c = generate("instruct", "stub-model", Some("openai"), root);
    c.args(["--base-url", base_url, "--id-range", range]);
    c
}

/// The final samples file of a hard instruct run of `model` with `backend` under `root`.
pub fn samples_file(root: &Path, backend: &str, model: &str) -> PathBuf {
    root.join(format!(
        "{model}--main--bigcodebench-hard-instruct--{backend}-0-1-sanitized_calibrated.jsonl"
    ))
}

/// The JSON rows of a samples file (or its journal); none when it does not exist.
pub fn rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The journal beside a samples file.
pub fn samples_journal(file: &Path) -> PathBuf {
    let mut s = file.as_os_str().to_os_string();
    s.push(".partial.jsonl");
    PathBuf::from(s)
}
