//! `bcb generate` as a process, against the real llama.cpp test server (installed by
//! .ci/setup-llm.sh; skipped with a message when absent unless BCB_REQUIRE_LLM=1).

mod evalkit;
mod genkit;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use bcb_generate::local::LocalServer;
use bcb_generate::testing::{llm_model_path, llm_python_path, llm_server, Fault, TestServer};
use genkit::{generate, rows};
use serde_json::Value;

fn per_task(rows: &[Value]) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for r in rows {
        *m.entry(r["task_id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    m
}

/// The test LLM behind a proxy that counts (and can hold) its requests, and a folder for the
/// runs' files; `None` (the test returns) when the test LLM is not installed.
struct LlmRuns {
    _server: LocalServer,
    proxy: TestServer,
    dir: tempfile::TempDir,
}

fn llm_runs() -> Option<LlmRuns> {
    let server = llm_server(3)?;
    let proxy = TestServer::proxy(&server.base_url());
    Some(LlmRuns {
        _server: server,
        proxy,
        dir: tempfile::tempdir().unwrap(),
    })
}

impl LlmRuns {
    /// `bcb generate` of tasks 0-10 of the hard instruct split, 3 samples each, through the
    /// proxy, writing [`Self::file`].
    fn run(&self) -> Command {
        let mut c = generate("instruct", "gemma-test", Some("openai"), self.dir.path());
        c.args(["--base-url", &self.proxy.v1_url(), "--id-range", "0-10"])
            .args([
                "--n-samples",
                "3",
                "--temperature",
                "0.8",
                "--max-tokens",
                "16",
            ])
            .args(["--concurrency", "2", "--no-progress"]);
        c
    }

    fn journal(&self) -> PathBuf {
        genkit::samples_journal(&self.file())
    }

    fn file(&self) -> PathBuf {
        self.dir.path().join(
            "gemma-test--main--bigcodebench-hard-instruct--openai-0.8-3-sanitized_calibrated.jsonl",
        )
    }
}

#[test]
fn generate_kill9_halfway_then_rerun_gives_exactly_30_samples_without_regenerating() {
    let Some(runs) = llm_runs() else { return };
    // Samples land in the journal as they arrive; the final file is written at the end.
    let (proxy, file, journal) = (&runs.proxy, runs.file(), runs.journal());

    // First run: SIGKILL once about half the samples are on disk.
    let mut child = evalkit::start_until(&mut runs.run(), || rows(&journal).len() >= 15);
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
    evalkit::ok(&runs.run().output().unwrap());
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
fn a_second_generate_on_the_same_file_refuses_while_the_first_runs_and_nothing_is_lost() {
    let Some(runs) = llm_runs() else { return };
    // Each of the first run's 10 requests waits 2 s: it is still running when the second starts.
    let stall = Fault::Stall(Duration::from_secs(2));
    runs.proxy.push_faults(std::iter::repeat_n(stall, 10));
    let (proxy, file, journal) = (&runs.proxy, runs.file(), runs.journal());
    // The first run is under way: samples are landing in its journal.
    let mut first = evalkit::start_until(&mut runs.run(), || !rows(&journal).is_empty());
    let second = runs.run().output().unwrap();
    let wants = [
        file.to_str().unwrap(),
        "another run (`bcb generate`",
        "hint:",
    ];
    evalkit::assert_refused_beside(&mut first, &second, &wants);
    // Exactly the first run's 30 samples, 3 a task, and no journal left.
    let final_rows = rows(&file);
    assert_eq!(final_rows.len(), 30);
    assert!(per_task(&final_rows).values().all(|&c| c == 3));
    assert!(!journal.exists());
    // With the first run over, the file is free: a run finds every sample there and asks for none.
    let asked = proxy.received();
    evalkit::ok(&runs.run().output().unwrap());
    assert_eq!(proxy.received(), asked);
    assert_eq!(rows(&file).len(), 30);
}

#[test]
fn generate_local_gguf_model_serves_it_for_the_run_and_stops_it() {
    // Only to know the test LLM is there (and fail when required); the CLI starts its own.
    let Some(probe) = llm_server(1) else { return };
    drop(probe);
    let dir = tempfile::tempdir().unwrap();
    let model = llm_model_path();
    let out = generate("complete", &model, None, dir.path())
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
        ])
        .output()
        .unwrap();
    let stderr = evalkit::ok(&out);
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
    // genkit's bcb has no OPENAI_API_KEY from the caller's environment.
    let out = generate("instruct", "gpt-4o", Some("openai"), dir.path())
        .output()
        .unwrap();
    evalkit::assert_fails_saying(&out, &["OPENAI_API_KEY is not set"]);
}
