//! `bcb evaluate --execution e2b` end to end against the E2B PROTOCOL FAKE on loopback (E2B
//! cannot run here; the fake follows its published specs and runs the command it is sent with
//! the real bcb, see e2b_fake/mod.rs): the files equal a local run's, a run killed halfway
//! resumes from its journal to the same files, progress goes to a log as lines, `--no-execute`
//! sends nothing, and a failure at each step, or a real SIGINT, ends with the sandbox killed.

mod e2b_fake;
mod evalkit;
mod remotekit;

use std::process::{Command, Stdio};
use std::time::Duration;

use e2b_fake::{start, Fail, Fake};
use evalkit::Env;
use remotekit::{IDS, SAMPLES_NAME};

/// `bcb evaluate --execution e2b` of the samples in `dir` against `fake`.
fn e2b(env: &Env, fake: &Fake, dir: &str, extra: &[&str]) -> Command {
    fake.set_env("BCB_PYTHON", &env.python);
    let samples = remotekit::write_samples(env, &env.path(dir));
    let mut cmd = env.bcb();
    cmd.args([
        "evaluate",
        "--execution",
        "e2b",
        "--subset",
        "hard",
        "--ids",
        IDS,
    ])
    .args(extra)
    .arg("--samples")
    .arg(&samples);
    fake.client(&mut cmd);
    cmd
}

#[test]
fn e2b_fake_run_killed_halfway_resumes_to_the_files_of_a_local_run() {
    let Some(env) = evalkit::env() else { return };
    let local = remotekit::local_run(&env);
    let cache_before = remotekit::verdict_cache(&env);
    let fake = start(Fail::None);
    let args = ["--remote-chunk", "2", "--progress-interval", "0.1"];
    let log = env.path("killed.log");
    remotekit::kill_at_half(e2b(&env, &fake, "remote", &args), &env.path("remote"), &log);
    let log = env.path("resumed.log");
    let out = remotekit::run_logged(e2b(&env, &fake, "remote", &args), &log);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("already done, resuming"), "{text}");
    assert_eq!(remotekit::outputs(&env.path("remote")), local);
    remotekit::assert_progress_lines(&log);
    assert!(
        fake.commands()
            .iter()
            .all(|c| c.starts_with("bcb exec-jobs --executor pool")),
        "{:?}",
        fake.commands()
    );
    assert_eq!(
        fake.calls().last().map(String::as_str),
        Some("DELETE /sandboxes/sbx1")
    );
    assert_eq!(
        remotekit::verdict_cache(&env),
        cache_before,
        "remote verdicts never enter the verdict cache"
    );
}

#[test]
fn e2b_fake_no_execute_sends_nothing() {
    let Some(env) = evalkit::env() else { return };
    let fake = start(Fail::None);
    let out = e2b(&env, &fake, "remote", &["--no-execute"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", evalkit::stderr(&out));
    assert_eq!(fake.calls(), Vec::<String>::new());
}

/// A failure injected at `fail` ends the run with `expect` and the sandbox killed.
fn fails_and_kills(fail: Fail, expect: &str, last_before_kill: Option<&str>) {
    let Some(env) = evalkit::env() else { return };
    let fake = start(fail);
    let out = e2b(
        &env,
        &fake,
        "remote",
        &["--exec-retries", "0", "--remote-retries", "0"],
    )
    .output()
    .unwrap();
    let err = evalkit::stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains(expect), "{fail:?}: {err}");
    assert!(err.contains("hint:"), "{err}");
    let calls = fake.calls();
    match last_before_kill {
        None => assert_eq!(calls, ["POST /sandboxes"], "nothing to kill"),
        Some(last) => {
            assert_eq!(
                calls.last().map(String::as_str),
                Some("DELETE /sandboxes/sbx1")
            );
            assert_eq!(calls[calls.len() - 2], last, "{calls:?}");
        }
    }
    let results = env
        .path("remote")
        .join(SAMPLES_NAME.replace(".jsonl", "_eval_results.json"));
    assert!(!results.exists(), "no verdict is invented");
}

#[test]
fn e2b_fake_create_failure_is_clear_and_nothing_to_kill() {
    fails_and_kills(Fail::Create, "no capacity", None);
}

#[test]
fn e2b_fake_upload_failure_kills_the_sandbox() {
    fails_and_kills(Fail::Upload, "disk is full", Some("POST /files"));
}

#[test]
fn e2b_fake_failed_run_kills_the_sandbox() {
    fails_and_kills(
        Fail::Run,
        "injected failure",
        Some("POST /process.Process/Start"),
    );
}

#[test]
fn e2b_fake_download_failure_kills_the_sandbox() {
    fails_and_kills(Fail::Download, "wrote no outcomes", Some("GET /files"));
}

#[test]
fn e2b_fake_ctrl_c_mid_run_kills_the_sandbox() {
    let Some(env) = evalkit::env() else { return };
    let fake = start(Fail::Hang);
    let child = e2b(&env, &fake, "remote", &[])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Mid-run: the sandbox's process stream is open (the fake sends its keepalives).
    bcb_testkit::wait_until(
        Duration::from_secs(30),
        "the run to start in the sandbox",
        || fake.keepalives() >= 1,
    );
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("interrupted (Ctrl-C)"), "{err}");
    assert_eq!(
        fake.calls().last().map(String::as_str),
        Some("DELETE /sandboxes/sbx1"),
        "{err}"
    );
}
