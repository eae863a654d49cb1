//! `bcb evaluate --execution e2b` end to end against the E2B PROTOCOL FAKE on loopback (E2B
//! cannot run here; the fake follows its published specs, see e2b_fake/mod.rs): the two files
//! are written like a local run's, and a real SIGINT (Ctrl-C) mid-run kills the sandbox.

#[path = "../../bcb-remote/tests/e2b_fake/mod.rs"]
mod e2b_fake;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use e2b_fake::{start, Fail, Fake};

fn bcb(fake: &Fake, dir: &std::path::Path) -> Command {
    let samples = dir.join("m--bigcodebench-complete.jsonl");
    std::fs::write(
        &samples,
        "{\"task_id\": \"BigCodeBench/1\", \"solution\": \"x\"}\n",
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bcb"));
    cmd.args(["evaluate", "--execution", "e2b", "--ids", "1", "--samples"])
        .arg(&samples)
        .env("E2B_API_KEY", "test-key")
        .env("E2B_API_URL", &fake.url)
        .env("E2B_ENVD_URL", &fake.url);
    cmd
}

#[test]
fn e2b_protocol_fake_cli_writes_the_files_a_local_run_writes() {
    let fake = start(Fail::None);
    let dir = tempfile::tempdir().unwrap();
    let out = bcb(&fake, dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("evaluate: 1 run"),
        "the sandbox's output is streamed: {err}"
    );
    let pass_at_k =
        std::fs::read_to_string(dir.path().join("m--bigcodebench-complete_pass_at_k.json"))
            .unwrap();
    assert_eq!(
        pass_at_k,
        "{\n  \"pass@1\": 1.0,\n  \"model\": \"m\",\n  \"split\": \"complete\",\n  \"subset\": \"full\",\n  \"calibrated\": true,\n  \"gt_pass_rate\": 1.0,\n  \"failed_tasks\": []\n}"
    );
    assert!(dir
        .path()
        .join("m--bigcodebench-complete_eval_results.json")
        .is_file());
    assert_eq!(
        fake.calls().last().map(String::as_str),
        Some("DELETE /sandboxes/sbx1")
    );
}

#[test]
fn e2b_protocol_fake_cli_ctrl_c_mid_run_kills_the_sandbox() {
    let fake = start(Fail::Hang);
    let dir = tempfile::tempdir().unwrap();
    let child = bcb(&fake, dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !fake
        .calls()
        .iter()
        .any(|c| c == "POST /process.Process/Start")
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the run never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
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
    assert!(!dir
        .path()
        .join("m--bigcodebench-complete_eval_results.json")
        .exists());
}
