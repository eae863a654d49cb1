//! Shared by the remote-backend tests: a small real samples file (canonical solutions and a
//! real model's answers to four quick hard tasks), the result files without their date, a
//! local run to compare with, and a run killed after half its samples.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::evalkit::{self, Env};
use serde_json::Value;

/// Hard-subset tasks that run offline in a few seconds.
pub const IDS: &str = "19,92,100,108";
pub const SAMPLES_NAME: &str = "m--bigcodebench-hard-complete.jsonl";
const REAL_SAMPLES: &str = "microsoft--Phi-4-multimodal-instruct--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated.jsonl.gz";

/// Canonical solutions of the hard tasks in `IDS` plus a real model's answers to them.
pub fn write_samples(env: &Env, dir: &Path) -> PathBuf {
    let ds = bcb_dataset::Dataset::from_file(
        &env.dataset_dir.join("bigcodebench-hard-v0.1.4.jsonl.gz"),
        bcb_dataset::Subset::Hard,
        "v0.1.4",
    )
    .unwrap();
    let ids = bcb_dataset::parse_task_ids(IDS);
    let mut rows: Vec<Value> = ids
        .iter()
        .map(|id| {
            let t = serde_json::to_value(ds.get(id).unwrap()).unwrap();
            let solution = format!(
                "{}{}",
                t["complete_prompt"].as_str().unwrap(),
                t["canonical_solution"].as_str().unwrap()
            );
            serde_json::json!({"task_id": id, "solution": solution})
        })
        .collect();
    let real = env.dataset_dir.join("../real-samples").join(REAL_SAMPLES);
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&real).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        if ids.iter().any(|id| r["task_id"] == id.as_str()) {
            rows.push(serde_json::json!({"task_id": r["task_id"], "solution": r["solution"]}));
        }
    }
    assert_eq!(rows.len(), 2 * ids.len(), "real samples cover the tasks");
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(SAMPLES_NAME);
    evalkit::write_jsonl(&path, &rows);
    path
}

/// `X_eval_results.json` without its date, and `X_pass_at_k.json`, of a run in `dir`.
pub fn outputs(dir: &Path) -> (Value, Value) {
    let stem = SAMPLES_NAME.trim_end_matches(".jsonl");
    let mut results = evalkit::read_json(&dir.join(format!("{stem}_eval_results.json")));
    results.as_object_mut().unwrap().remove("date");
    let pass_at_k = evalkit::read_json(&dir.join(format!("{stem}_pass_at_k.json")));
    (results, pass_at_k)
}

pub fn local_run(env: &Env) -> (Value, Value) {
    let samples = write_samples(env, &env.path("local"));
    let out = env.run(&[
        "evaluate",
        "--subset",
        "hard",
        "--ids",
        IDS,
        "--quiet",
        "--samples",
        samples.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    outputs(&env.path("local"))
}

/// The journaled sample verdicts of a run in `dir`.
fn journaled(dir: &Path) -> usize {
    let stem = SAMPLES_NAME.trim_end_matches(".jsonl");
    std::fs::read_to_string(dir.join(format!("{stem}_eval_results.json.partial.jsonl")))
        .map(|t| t.lines().filter(|l| l.contains("\"status\"")).count())
        .unwrap_or(0)
}

/// `cmd` (a remote `bcb evaluate` of the samples in `dir`, stderr to `log`) run to the end.
pub fn run_logged(mut cmd: Command, log: &Path) -> Output {
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
        .wait_with_output()
        .unwrap();
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        std::fs::read_to_string(log).unwrap()
    );
    out
}

/// Runs `cmd` until half of the 8 samples are journaled and its log (`--progress-interval`
/// well under a round trip) shows a progress line, then SIGKILLs it.
pub fn kill_at_half(mut cmd: Command, dir: &Path, log: &Path) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while journaled(dir) < 4 || !has_progress_line(&std::fs::read_to_string(log).unwrap()) {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the run ended ({status}) before it was killed:\n{}",
                std::fs::read_to_string(log).unwrap()
            );
        }
        assert!(start.elapsed() < Duration::from_secs(300), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let n = journaled(dir);
    assert!(
        (4..8).contains(&n),
        "killed with {n} of 8 samples journaled"
    );
}

/// Progress lines (not a bar: stderr is a file) in a run's log.
pub fn assert_progress_lines(log: &Path) {
    let text = std::fs::read_to_string(log).unwrap();
    assert!(!text.contains('\x1b'), "no escape codes in a log: {text}");
    assert!(
        has_progress_line(&text),
        "progress lines in the log: {text}"
    );
}

/// An `evaluate: done/total ...` line.
fn has_progress_line(text: &str) -> bool {
    text.lines().any(|l| {
        l.starts_with("evaluate: ") && l.split_whitespace().nth(1).is_some_and(|w| w.contains('/'))
    })
}

/// The verdict cache's files and sizes (the local run's segment, if any).
pub fn verdict_cache(env: &Env) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut dirs = vec![env.cache.path().join("verdicts")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let meta = e.metadata().unwrap();
            match meta.is_dir() {
                true => dirs.push(e.path()),
                false => out.push((e.path(), meta.len())),
            }
        }
    }
    out.sort();
    out
}

/// The original harness's own client: `bigcodebench.evaluate --execution gradio`.
pub fn original_client(py: &Path, env: &Env, url: &str) -> Output {
    let samples = write_samples(env, &env.path("original"));
    let out = Command::new(py)
        .args([
            "-m",
            "bigcodebench.evaluate",
            "--execution",
            "gradio",
            "--gradio_endpoint",
            url,
        ])
        .args([
            "--split",
            "complete",
            "--subset",
            "hard",
            "--selective_evaluate",
            IDS,
        ])
        .arg("--samples")
        .arg(&samples)
        .env("HF_HUB_OFFLINE", "1")
        .env("HOME", env.cache.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    eprintln!(
        "original client:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        evalkit::stderr(&out)
    );
    out
}
