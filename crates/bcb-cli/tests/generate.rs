//! `bcb generate` as a process, against the real llama.cpp test server (installed by
//! .ci/setup-llm.sh; skipped with a message when absent unless BCB_REQUIRE_LLM=1).

mod evalkit;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bcb_generate::testing::{llm_model_path, llm_python_path, llm_server, TestServer};
use serde_json::Value;

fn bcb() -> Command {
    evalkit::bcb_over(&evalkit::shared_dataset_dir())
}

fn rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn per_task(rows: &[Value]) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for r in rows {
        *m.entry(r["task_id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    m
}

#[test]
fn generate_kill9_halfway_then_rerun_gives_exactly_30_samples_without_regenerating() {
    let Some(server) = llm_server(3) else { return };
    let proxy = TestServer::proxy(&server.base_url());
    let dir = tempfile::tempdir().unwrap();
    let args = |root: &Path| -> Vec<String> {
        [
            "generate",
            "--subset",
            "hard",
            "--split",
            "instruct",
            "--model",
            "gemma-test",
            "--backend",
            "openai",
            "--base-url",
            &format!("{}/v1", proxy.url()),
            "--id-range",
            "0-10",
            "--n-samples",
            "3",
            "--temperature",
            "0.8",
            "--max-tokens",
            "16",
            "--concurrency",
            "2",
            "--no-progress",
            "--root",
            root.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let file: PathBuf = dir.path().join(
        "gemma-test--main--bigcodebench-hard-instruct--openai-0.8-3-sanitized_calibrated.jsonl",
    );

    // Samples land in the journal as they arrive; the final file is written at the end.
    let journal = PathBuf::from(format!("{}.partial.jsonl", file.display()));

    // First run: SIGKILL once about half the samples are on disk.
    let mut child = bcb()
        .args(args(dir.path()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        if rows(&journal).len() >= 15 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be killed"
        );
        assert!(Instant::now() < deadline, "no progress in 600 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let after_kill = rows(&journal);
    let counts = per_task(&after_kill);
    assert!(
        after_kill.len() >= 15 && after_kill.len() < 30,
        "{}",
        after_kill.len()
    );
    assert!(counts.values().all(|&c| c <= 3));
    let first_run_requests = proxy.received();

    // Second run: only the missing samples are asked for.
    let out = bcb().args(args(dir.path())).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second: Vec<(String, Value)> = proxy.bodies()[first_run_requests as usize..].to_vec();
    let final_rows = rows(&file);
    assert_eq!(final_rows.len(), 30);
    let final_counts = per_task(&final_rows);
    assert_eq!(final_counts.len(), 10);
    assert!(final_counts.values().all(|&c| c == 3), "{final_counts:?}");
    let missing: HashMap<&String, usize> = final_counts
        .keys()
        .map(|id| (id, 3 - counts.get(id).copied().unwrap_or(0)))
        .filter(|(_, m)| *m > 0)
        .collect();
    // What was on disk after the kill is all in the final file; the journal is gone.
    let key = |r: &Value| (r["task_id"].to_string(), r["raw_solution"].to_string());
    let final_keys: Vec<_> = final_rows.iter().map(key).collect();
    assert!(after_kill.iter().all(|r| final_keys.contains(&key(r))));
    assert!(!journal.exists());
    // One request per task that still missed samples, asking for exactly the missing count.
    assert_eq!(
        second.len(),
        missing.len(),
        "requests in the re-run: {}",
        second.len()
    );
    let asked: usize = second
        .iter()
        .map(|(_, b)| b["n"].as_u64().unwrap() as usize)
        .sum();
    assert_eq!(asked, missing.values().sum::<usize>());
    eprintln!(
        "kill -9 after {} samples; first run sent {first_run_requests} requests, re-run {} requests for {} samples",
        after_kill.len(),
        second.len(),
        asked
    );
}

#[test]
fn generate_local_gguf_model_serves_it_for_the_run_and_stops_it() {
    // Only to know the test LLM is there (and fail when required); the CLI starts its own.
    let Some(probe) = llm_server(1) else { return };
    drop(probe);
    let dir = tempfile::tempdir().unwrap();
    let model = llm_model_path();
    let out = bcb()
        .args([
            "generate", "--subset", "hard", "--split", "complete", "--model",
        ])
        .arg(&model)
        .arg("--llm-python")
        .arg(llm_python_path())
        .args([
            "--chat-template",
            "gemma",
            "--id-range",
            "0-2",
            "--max-tokens",
            "16",
            "--no-progress",
            "--root",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stem = model.file_stem().unwrap().to_str().unwrap();
    let file = dir.path().join(format!(
        "{stem}--main--bigcodebench-hard-complete--llamacpp-0-1-sanitized_calibrated.jsonl"
    ));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        file.to_str().unwrap()
    );
    assert_eq!(per_task(&rows(&file)).values().sum::<usize>(), 2);
    assert!(stderr.contains("2 generated of 2 wanted"), "{stderr}");
}

#[test]
fn generate_reports_a_missing_api_key_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let out = bcb()
        .env_remove("OPENAI_API_KEY")
        .args([
            "generate",
            "--subset",
            "hard",
            "--split",
            "instruct",
            "--model",
            "gpt-4o",
            "--backend",
            "openai",
            "--root",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OPENAI_API_KEY is not set"), "{stderr}");
}
