//! Shared by the scripted-executor session tests: a three-task dataset and default settings.
#![allow(dead_code)]

use std::path::Path;

use bcb_dataset::{Dataset, Split, Subset};
use bcb_eval::Settings;
use bcb_execute::Limits;

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

pub fn settings() -> Settings {
    Settings {
        split: Split::Complete,
        calibrated: true,
        min_time_limit: 1.0,
        base_timeout: 240.0,
        limits: Limits::default(),
        runtime: "test".into(),
        tamper: Default::default(),
        hacks: Default::default(),
    }
}
