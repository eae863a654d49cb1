//! `examples/rl/`: the TRL reward functions (sync and async) and the verl `compute_score`,
//! called from Python with the arguments those frameworks pass (the frameworks themselves are
//! not installed), against a server with a FAKE engine (see `common/`). The first URL in the
//! list is dead, so every call also goes through the round-robin retry.

mod common;

use std::process::Command;

const SCRIPT: &str = r#"
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
import trl_reward, verl_reward

ok = "Here:\n```python\ndef task_func():\n    return 'PASS'\n```\n"
logged = {}
kwargs = dict(
    prompts=[[{"role": "user", "content": "p1"}], [{"role": "user", "content": "p2"}], "p3"],
    completions=[[{"role": "assistant", "content": ok}], [{"role": "assistant", "content": "def task_func(): return 0"}], "no task"],
    completion_ids=[[1, 2], [3], [4]],
    trainer_state=None,
    log_extra=lambda k, v: logged.setdefault(k, v),
    log_metric=lambda k, v: logged.__setitem__(k, v),
    task_id=["BigCodeBench/1", "BigCodeBench/2", None],
    reward_model=[{"style": "rule"}] * 3,
)
out = {
    "trl": trl_reward.bcb_reward(**kwargs),
    "trl_async": asyncio.run(trl_reward.bcb_reward_async(**kwargs)),
    "trl_partial": trl_reward.bcb_partial_reward(**kwargs),
    "verl": verl_reward.compute_score("bigcodebench", ok, "BigCodeBench/1", extra_info={"index": 0, "split": "train"}),
    "verl_extra": verl_reward.compute_score("bigcodebench", "nothing", None, extra_info={"task_id": "BigCodeBench/2"}),
    "logged": logged,
}
print(json.dumps(out))
"#;

#[tokio::test]
async fn trl_and_verl_reward_functions_with_their_frameworks_arguments() {
    let Some(python) = bcb_testkit::serve_client_python() else {
        return;
    };
    let s = common::start(|_| {}, true).await;
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rl");
    let urls = format!("http://127.0.0.1:9,{}", s.url);
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg("-c")
            .arg(SCRIPT)
            .arg(examples)
            .env("BCB_SERVE_URLS", urls)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["trl"], serde_json::json!([1.0, 0.0, null]), "{v}");
    assert_eq!(v["trl_async"], v["trl"]);
    assert_eq!(v["verl"]["score"], 1.0);
    assert_eq!(v["verl"]["tests_total"], 2);
    assert_eq!(v["verl_extra"]["score"], 0.0);
    assert_eq!(v["logged"]["bcb/pass_rate"], 0.5);
    // The fake fails one of two tests: partial credit 0.5 for the wrong answer.
    assert_eq!(v["trl_partial"], serde_json::json!([1.0, 0.5, null]), "{v}");
    assert_eq!(v["logged"]["bcb/tests_passed_frac"], 0.75);
    assert_eq!(v["logged"]["bcb/hack_rate"], 0.0);
    assert_eq!(v["verl"]["tests_passed_frac"], 1.0);
    assert_eq!(v["verl"]["hack"], 0.0);
    s.shutdown().await;
}
