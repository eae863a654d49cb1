//! The E2B client against a PROTOCOL FAKE on loopback (E2B itself cannot run here). The fake
//! serves only the routes bcb uses, shaped as E2B's published specs define them
//! (github.com/e2b-dev/E2B `spec/openapi.yml`, `spec/envd/envd.yaml`,
//! `spec/envd/process/process.proto`); it runs no code: its "process" writes canned result
//! files. Checked: the order create → upload → run → download → kill, and that a failure
//! injected at each step, or a Ctrl-C, ends with a clear error and the sandbox killed.

mod e2b_fake;

use std::sync::atomic::Ordering;
use std::time::Duration;

use bcb_remote::e2b::{E2bClient, E2bOptions};
use bcb_remote::{RemoteEvaluator, RemoteRequest};
use e2b_fake::{start, Fail, Fake};

fn client(fake: &Fake) -> E2bClient {
    let opts = E2bOptions {
        template: "bigcodebench_evaluator".into(),
        api_key: "test-key".into(),
        api_url: fake.url.clone(),
        envd_url: Some(fake.url.clone()),
        life: Duration::from_secs(300),
        cancel: Default::default(),
    };
    E2bClient::new(opts).unwrap()
}

fn request(dir: &std::path::Path) -> RemoteRequest {
    let samples = dir.join("m--bigcodebench-complete.jsonl");
    std::fs::write(
        &samples,
        "{\"task_id\": \"BigCodeBench/1\", \"solution\": \"x\"}\n",
    )
    .unwrap();
    RemoteRequest {
        samples: Some(samples),
        split: "complete".into(),
        subset: "full".into(),
        pass_k: vec![1],
        parallel: -1,
        min_time_limit: 1.0,
        max_as_limit: 30720,
        max_data_limit: 30720,
        max_stack_limit: 10,
        calibrated: true,
        check_gt_only: false,
        no_gt: false,
        task_ids: vec!["BigCodeBench/1".into()],
    }
}

const RUN_ORDER: [&str; 6] = [
    "POST /sandboxes",
    "POST /files",
    "POST /process.Process/Start",
    "GET /files",
    "GET /files",
    "DELETE /sandboxes/sbx1",
];

#[test]
fn e2b_protocol_fake_sees_create_upload_run_download_kill_in_order() {
    let fake = start(Fail::None);
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    let out = client(&fake)
        .evaluate(&request(dir.path()), &mut |p| lines.push(format!("{p:?}")))
        .unwrap();
    assert_eq!(fake.calls(), RUN_ORDER);
    assert!(
        lines.iter().any(|l| l.contains("evaluate: 1 run")),
        "output streamed: {lines:?}"
    );
    assert_eq!(out.pass_at_k.values, vec![(1, 1.0)]);
    assert_eq!(out.results.unwrap().eval.len(), 1);
}

fn fails_and_kills(fail: Fail, expect: &str, prefix: &[&str]) {
    let fake = start(fail);
    let dir = tempfile::tempdir().unwrap();
    let client = client(&fake);
    if fail == Fail::Hang {
        let cancel = client.cancel();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            cancel.store(true, Ordering::SeqCst);
        });
    }
    let err = client
        .evaluate(&request(dir.path()), &mut |_| {})
        .unwrap_err();
    let msg = format!("{err} {}", err.hint().unwrap_or(""));
    assert!(msg.contains(expect), "{fail:?}: {msg}");
    let mut want: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
    if fail != Fail::Create {
        want.push("DELETE /sandboxes/sbx1".into());
    }
    assert_eq!(fake.calls(), want, "{fail:?}");
}

#[test]
fn e2b_protocol_fake_create_failure_is_clear_and_nothing_to_kill() {
    fails_and_kills(Fail::Create, "no capacity", &["POST /sandboxes"]);
}

#[test]
fn e2b_protocol_fake_upload_failure_kills_the_sandbox() {
    fails_and_kills(Fail::Upload, "disk is full", &RUN_ORDER[..2]);
}

#[test]
fn e2b_protocol_fake_failed_run_kills_the_sandbox() {
    fails_and_kills(Fail::Run, "failed (exit 1)", &RUN_ORDER[..3]);
}

#[test]
fn e2b_protocol_fake_download_failure_kills_the_sandbox() {
    fails_and_kills(Fail::Download, "wrote no results", &RUN_ORDER[..4]);
}

#[test]
fn e2b_protocol_fake_ctrl_c_kills_the_sandbox() {
    fails_and_kills(Fail::Hang, "interrupted (Ctrl-C)", &RUN_ORDER[..3]);
}
