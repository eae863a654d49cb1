//! `bcb sanitize` and `syncheck` used the way the original's documentation and scripts use
//! them: positional samples files, partial files, `--ids`, and the rule `generate` applies.

mod evalkit;
mod genkit;

use evalkit::{ok, stderr};
use genkit::{bcb, chat_stub, generate_from, samples_file};
use serde_json::{json, Value};

/// A reasoning model's answer: a draft inside `<think>`, the final code after it.
const THINK_ANSWER: &str = "<think>\n```python\ndef task_func():\n    return 'draft'\n```\n</think>\n```python\ndef task_func():\n    return 'final'\n```\n";

#[test]
fn sanitize_and_generate_apply_one_think_rule() {
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("s.jsonl");
    let row = json!({"task_id": "BigCodeBench/15", "solution": THINK_ANSWER});
    evalkit::write_jsonl(&samples, &[row]);
    // Positional samples, as `bigcodebench.sanitize x.jsonl`.
    ok(&bcb().args(["sanitize"]).arg(&samples).output().unwrap());
    let out: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("s-sanitized.jsonl")).unwrap(),
    )
    .unwrap();
    let sol = out["solution"].as_str().unwrap();
    assert!(sol.contains("'final'") && !sol.contains("'draft'"), "{sol}");

    // generate applies the same rule to the same answer.
    let stub = chat_stub(THINK_ANSWER);
    let root = dir.path().join("gen");
    ok(&generate_from(&root, &stub.v1_url(), "1-2")
        .output()
        .unwrap());
    let row: Value = serde_json::from_str(
        std::fs::read_to_string(samples_file(&root, "openai", "stub-model"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(row["task_id"], "BigCodeBench/15");
    assert_eq!(row["solution"].as_str().unwrap(), sol);
}

#[test]
fn syncheck_of_a_partial_file_summarises_missing_tasks_and_takes_ids() {
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("p.jsonl");
    evalkit::write_jsonl(
        &samples,
        &[
            json!({"task_id": "BigCodeBench/0", "solution": "def task_func():\n    pass\n"}),
            json!({"task_id": "BigCodeBench/1", "solution": "def task_func(:\n"}),
        ],
    );
    let out = bcb().args(["syncheck"]).arg(&samples).output().unwrap();
    ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let missing = stdout
        .lines()
        .filter(|l| l.ends_with("is missing!"))
        .count();
    assert_eq!(missing, 20, "{stdout}");
    assert!(
        stdout.contains("and 1118 more missing (1138/1140 tasks"),
        "{stdout}"
    );
    let out = bcb()
        .args(["syncheck", "--samples"])
        .arg(&samples)
        .args(["--ids", "0,1"])
        .output()
        .unwrap();
    ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("missing"), "{stdout}");
    assert!(stdout.contains("1/2 code are not compilable"), "{stdout}");
}

#[test]
fn a_missing_samples_file_is_reported_once_before_any_dataset_work() {
    let out = bcb()
        .env("BCB_DATASET_DIR", "/nonexistent-dataset-dir")
        .args(["syncheck", "--samples", "/nonexistent/samples.jsonl"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success());
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
    assert!(err.contains("/nonexistent/samples.jsonl"), "{err}");
}
