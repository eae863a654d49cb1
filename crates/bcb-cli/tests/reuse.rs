//! `bcb evaluate` doing each program once, end to end in the real eval env: several samples
//! files (and a directory of them) in one run with dedup, a warm verdict cache on the second
//! run, equal files with `--no-dedup --no-cache`, `bcb cache stats|clean`, and mixed labels
//! refused.

mod evalkit;

use std::path::{Path, PathBuf};

use evalkit::{number_after, read_json, stderr, write_jsonl};
use serde_json::{json, Value};

// Quick tasks (BigCodeBench/0 needs ~18 s of CPU per canonical run, 8 of which ran here).
const TASKS: [&str; 3] = ["BigCodeBench/2", "BigCodeBench/4", "BigCodeBench/9"];
const WRONG: &str = "def task_func(*a, **k):\n    return None\n";

/// Four samples per task: the canonical solution twice and the wrong answer twice (`flip`
/// swaps the order, another "checkpoint" with the same programs).
fn samples(env: &evalkit::Env, dir: &Path, model: &str, flip: bool) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut rows = Vec::new();
    for id in TASKS {
        let t = env.task(id);
        let good = format!(
            "{}\n{}",
            t["complete_prompt"].as_str().unwrap(),
            t["canonical_solution"].as_str().unwrap()
        );
        let mut four = [good.as_str(), WRONG, good.as_str(), WRONG];
        if flip {
            four.reverse();
        }
        rows.extend(four.iter().map(|s| json!({"task_id": id, "solution": s})));
    }
    let path = dir.join(format!(
        "{model}--main--bigcodebench-complete--openai-0-4-sanitized_calibrated.jsonl"
    ));
    write_jsonl(&path, &rows);
    path
}

fn evaluate(env: &evalkit::Env, samples: &[&Path], extra: &[&str]) -> String {
    let mut args = vec!["evaluate", "--ids", "2,4,9", "--no-gt", "--samples"];
    args.extend(samples.iter().map(|p| p.to_str().unwrap()));
    args.extend_from_slice(extra);
    let out = env.run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn eval_of(samples: &Path) -> Value {
    read_json(&bcb_samples::eval_results_path(samples))["eval"].clone()
}

#[test]
fn two_files_one_run_dedup_and_a_warm_cache_give_the_plain_files() {
    let Some(env) = evalkit::env() else { return };
    let together = env.path("together");
    let a = samples(&env, &together, "a", false);
    let b = samples(&env, &together, "b", true);
    // One run, a directory of samples files: 24 jobs, 6 distinct programs.
    let out = evaluate(&env, &[&together], &[]);
    assert!(
        out.contains("executions: 6 run, 0 resumed, 6 saved by dedup, 0 by the verdict cache"),
        "{out}"
    );
    assert!(
        out.contains("executions: 0 run, 0 resumed, 12 saved by dedup"),
        "{out}"
    );
    // Again (forced): everything comes from the cache.
    let out = evaluate(&env, &[&a, &b], &["--force"]);
    assert!(
        out.contains("0 run, 0 resumed, 6 saved by dedup, 6 by the verdict cache"),
        "{out}"
    );
    // Separately, every sample executed: the same verdicts.
    for (name, flip, together) in [("a", false, &a), ("b", true, &b)] {
        let alone = samples(&env, &env.path(&format!("alone-{name}")), name, flip);
        let out = evaluate(&env, &[&alone], &["--no-dedup", "--no-cache"]);
        assert!(out.contains("executions: 12 run, 0 resumed\n"), "{out}");
        assert_eq!(eval_of(&alone), eval_of(together), "{name}");
        let pk = |s: &Path| {
            read_json(&bcb_samples::pass_at_k_path(
                &bcb_samples::eval_results_path(s),
            ))["pass@1"]
                .clone()
        };
        assert_eq!(pk(&alone), pk(together));
    }
    let stats = env.run(&["cache", "stats"]);
    let text = String::from_utf8_lossy(&stats.stdout).into_owned();
    assert!(text.contains("6 verdict(s) in 1 segment(s)"), "{text}");
    let clean = env.run(&["cache", "clean"]);
    assert!(String::from_utf8_lossy(&clean.stdout).contains("removed 6 verdict(s)"));
    let text = String::from_utf8_lossy(&env.run(&["cache", "stats"]).stdout).into_owned();
    assert!(text.contains(": 0 verdict(s)"), "{text}");
}

#[test]
fn files_of_different_subsets_or_splits_are_refused_together() {
    let Some(env) = evalkit::env() else { return };
    let a = samples(&env, &env.path("x"), "a", false);
    let b = env.path("b--main--bigcodebench-instruct--openai-0-4-sanitized_calibrated.jsonl");
    std::fs::copy(&a, &b).unwrap();
    let out = env.run(&[
        "evaluate",
        "--no-gt",
        "--samples",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is named for full-instruct but") && err.contains("hint:"),
        "{err}"
    );
}

#[test]
fn a_killed_run_resumes_with_dedup_and_ends_with_the_plain_files() {
    let Some(env) = evalkit::env() else { return };
    // Every program sleeps first, so the run can be killed while one runs.
    let with_sleep = |dir: &Path| {
        let path = samples(&env, dir, "k", false);
        let text = std::fs::read_to_string(&path).unwrap().replace(
            "def task_func(",
            // Inside the JSON strings: an escaped newline.
            "import time as _t\\n_t.sleep(1)\\ndef task_func(",
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let killed = with_sleep(&env.path("killed"));
    let plain = with_sleep(&env.path("plain"));
    evaluate(&env, &[&plain], &["--no-dedup", "--no-cache"]);
    let args = [
        "evaluate",
        "--ids",
        "2,4,9",
        "--no-gt",
        "--no-cache",
        "--parallel",
        "1",
        "--samples",
        killed.to_str().unwrap(),
    ];
    let mut child = env
        .bcb()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let journal = bcb_eval::journal::samples_journal_path(&bcb_samples::eval_results_path(&killed));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    // Header + one execution and its duplicate: then kill bcb itself, mid-run.
    while std::fs::read_to_string(&journal)
        .unwrap_or_default()
        .lines()
        .count()
        < 3
    {
        assert!(std::time::Instant::now() < deadline, "nothing journaled");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!bcb_samples::eval_results_path(&killed).exists());
    let out = env.run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let resumed: usize = number_after(&text, "run, ");
    assert!(
        resumed >= 2 && resumed.is_multiple_of(2),
        "whole groups resumed: {text}"
    );
    assert_eq!(eval_of(&killed), eval_of(&plain));
}
