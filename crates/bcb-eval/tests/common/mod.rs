//! Shared by the scripted-executor session tests: a three-task dataset and default settings.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use bcb_dataset::{Dataset, Subset};
use bcb_eval::{RetryPolicy, Settings};

/// Three tasks, `BigCodeBench/0..2`, whose tests always pass.
pub fn dataset(dir: &Path) -> Dataset {
    dataset_with_tests(dir, |_| {
        "import unittest\nclass TestCases(unittest.TestCase):\n    def test_it(self):\n        pass\n"
            .to_string()
    })
}

/// Three tasks whose test code for task `i` is `test(i)`.
pub fn dataset_with_tests(dir: &Path, test: impl Fn(usize) -> String) -> Dataset {
    let mut text = String::new();
    for i in 0..3 {
        let row = serde_json::json!({
            "task_id": format!("BigCodeBench/{i}"),
            "complete_prompt": format!("def task_func():\n    \"\"\"Task {i}.\"\"\"\n"),
            "instruct_prompt": "Write task_func.",
            "canonical_solution": format!("    return {i}\n"),
            "code_prompt": "def task_func():\n",
            "test": test(i),
            "entry_point": "task_func",
        });
        text.push_str(&row.to_string());
        text.push('\n');
    }
    Dataset::from_jsonl_bytes(
        text.as_bytes(),
        &dir.join("ds.jsonl"),
        Subset::Full,
        "v0.1.4",
    )
    .unwrap()
}

/// A samples file `NAME--main--bigcodebench-complete--x-0-N-sanitized_calibrated.jsonl` in
/// `dir` with `n` samples per task: sample `k` of task `i` is `solution(i, k)`.
pub fn samples_file(
    dir: &Path,
    name: &str,
    n: usize,
    solution: impl Fn(usize, usize) -> String,
) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!(
        "{name}--main--bigcodebench-complete--x-0-{n}-sanitized_calibrated.jsonl"
    ));
    let mut text = String::new();
    for i in 0..3 {
        for k in 0..n {
            let row = serde_json::json!({"task_id": format!("BigCodeBench/{i}"), "solution": solution(i, k)});
            text.push_str(&row.to_string());
            text.push('\n');
        }
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// `task_func` with one statement, `body`.
pub fn returning(body: &str) -> String {
    format!("def task_func():\n    {body}\n")
}

/// One sample per task; task 1's forges its result through the caller's frame (the tamper
/// scan refuses it), task `i`'s other returns `i`.
pub fn tamper_samples(dir: &Path) -> PathBuf {
    let forged = "import sys\ndef task_func():\n    sys._getframe(1).f_locals['result'] = 'pass'\n    return 1\n";
    samples_file(dir, "t", 1, |i, _| match i {
        1 => forged.to_string(),
        _ => returning(&format!("return {i}")),
    })
}

/// A retry policy of `retries` retries, `first` then at most `max` milliseconds apart.
pub fn retry(retries: usize, first: u64, max: u64) -> RetryPolicy {
    RetryPolicy {
        retries,
        first_delay: Duration::from_millis(first),
        max_delay: Duration::from_millis(max),
    }
}

pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

pub fn settings() -> Settings {
    Settings {
        runtime: "test".into(),
        ..Settings::default()
    }
}
