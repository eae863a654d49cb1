//! Fault injection with the real local backend and the real eval env: infrastructure
//! failures are retried, never recorded as a sample's verdict, and a run that cannot get
//! verdicts stops with a clear error and resumes after the fix.
//!
//! Faults are made with a wrapper around the eval interpreter (the harness "fails to start"
//! while a flag file exists) and by SIGKILLing a pool slot from outside mid-run.

mod evalkit;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use evalkit::{read_json, stderr};
use serde_json::json;

/// Tasks of light (1, 4) and heavy (9: pandas/seaborn) imports, each suite under a second.
const TASKS: [&str; 3] = ["BigCodeBench/1", "BigCodeBench/4", "BigCodeBench/9"];

/// Held open by task 4's sleepy sample while it runs.
fn sleeping_marker() -> String {
    evalkit::marker("sleeping")
}

/// Two samples per task: the canonical solution and a wrong one; `sleepy` makes task 4's
/// canonical sample hold [`sleeping_marker`] open and sleep first (so a slot can be killed
/// while it runs).
fn samples(env: &evalkit::Env, name: &str, sleepy: bool) -> PathBuf {
    let mut rows = Vec::new();
    for id in TASKS {
        let mut good = env.canonical(id);
        if sleepy && id == "BigCodeBench/4" {
            good.push('\n');
            good.push_str(&evalkit::hold_open(&sleeping_marker()));
            good.push_str("import time as _t\n_t.sleep(4)\n");
        }
        rows.push(json!({"task_id": id, "solution": good}));
        rows.push(json!({"task_id": id, "solution": "def task_func(*a, **k):\n    return None\n"}));
    }
    env.samples(name, &rows)
}

/// A flag file and an interpreter wrapper: while the flag exists, starting the harness fails
/// (as a broken or missing interpreter would); `once` removes the flag at the first failure.
fn broken_python(env: &evalkit::Env, once: bool) -> (PathBuf, PathBuf) {
    let flag = env.path("broken");
    std::fs::write(&flag, "").unwrap();
    let wrapper = env.path("python-wrapper");
    let clear = if once {
        format!("rm -f '{}'; ", flag.display())
    } else {
        String::new()
    };
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ncase \"$*\" in *bcb_harness.py*) if [ -e '{flag}' ]; then {clear}echo 'injected: harness cannot start' >&2; exit 1; fi;; esac\nexec '{py}' \"$@\"\n",
            flag = flag.display(),
            py = env.python.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    (flag, wrapper)
}

fn eval_args<'a>(samples: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    evalkit::evaluate_args("1,4,9", samples, &[&["--no-gt"], extra].concat())
}

fn same_verdicts(a: &Path, b: &Path) {
    let results_of = |s: &Path| evalkit::without_date(&bcb_samples::eval_results_path(s));
    let (ra, rb) = (results_of(a), results_of(b));
    assert_eq!(ra["eval"], rb["eval"]);
    let pa = read_json(&bcb_samples::pass_at_k_path(
        &bcb_samples::eval_results_path(a),
    ));
    let pb = read_json(&bcb_samples::pass_at_k_path(
        &bcb_samples::eval_results_path(b),
    ));
    assert_eq!(pa["pass@1"], pb["pass@1"]);
}

#[test]
fn a_harness_that_fails_to_start_once_is_retried() {
    let Some(env) = evalkit::env() else { return };
    let clean = samples(&env, "clean.jsonl", false);
    env.run_ok(&eval_args(&clean, &["--executor", "process"]));

    let (flag, py) = broken_python(&env, true);
    let faulty = samples(&env, "faulty.jsonl", false);
    let py = py.to_str().unwrap();
    let err = env.run_ok(&eval_args(
        &faulty,
        &["--executor", "process", "--python", py],
    ));
    assert!(
        err.contains("got no verdict") && err.contains("retry 1"),
        "the retry is reported: {err}"
    );
    assert!(!flag.exists(), "the injected failure happened");
    same_verdicts(&faulty, &clean);
}

#[test]
fn a_harness_that_never_starts_stops_the_run_then_resumes_after_the_fix() {
    let Some(env) = evalkit::env() else { return };
    let (flag, py) = broken_python(&env, false);
    let path = samples(&env, "never.jsonl", false);
    let args = eval_args(
        &path,
        &["--exec-retries", "1", "--python", py.to_str().unwrap()],
    );
    let out = env.run(&args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("got no verdict after 2 attempt(s)"), "{err}");
    assert!(
        err.contains("injected: harness cannot start"),
        "names the cause: {err}"
    );
    assert!(err.contains("hint:"), "{err}");
    let results = bcb_samples::eval_results_path(&path);
    assert!(!results.exists());
    let journal = bcb_eval::journal::samples_journal_path(&results);
    let lines = std::fs::read_to_string(&journal).unwrap_or_default();
    assert!(
        lines.lines().count() <= 1,
        "nothing but the header journaled: {lines}"
    );

    // The fix: the same interpreter path works again; the run completes.
    std::fs::remove_file(&flag).unwrap();
    env.run_ok(&args);
    let clean = samples(&env, "clean.jsonl", false);
    assert!(env.run(&eval_args(&clean, &[])).status.success());
    same_verdicts(&path, &clean);
}

/// Pids of harness processes whose parent is `parent`.
fn harness_children(parent: u32) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let ppid: u32 = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == parent && String::from_utf8_lossy(&cmd).contains("bcb_harness.py") {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn a_slot_killed_from_outside_mid_run_is_retried() {
    let Some(env) = evalkit::env() else { return };
    let clean = samples(&env, "clean.jsonl", true);
    assert!(env
        .run(&eval_args(&clean, &["--parallel", "1"]))
        .status
        .success());

    let path = samples(&env, "killed.jsonl", true);
    let child = env
        .bcb()
        .args(eval_args(
            &path,
            // No cache: the clean run's verdicts would spare the samples we kill.
            &["--parallel", "1", "--progress-interval", "1", "--no-cache"],
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the slots while task 4's sleeping sample runs (it holds its marker open).
    let marker = sleeping_marker();
    bcb_testkit::wait_until(
        Duration::from_secs(300),
        "the sleeping sample to run",
        || !evalkit::holding_open(&marker).is_empty(),
    );
    let slots = harness_children(child.id());
    for pid in &slots {
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    let killed = slots.len();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(killed > 0);
    assert!(
        err.contains("got no verdict"),
        "the lost sample was retried: {err}"
    );
    same_verdicts(&path, &clean);
    eprintln!("{err}");
}
