//! The seven settings a remote run used to drop, one test each: a Gradio Space cannot be given
//! them, so a changed one is refused before anything is sent (with a `hint:` naming it); E2B
//! runs bcb itself, so each is carried (checked in the command or jobs the E2B PROTOCOL FAKE
//! receives and runs with the real bcb).

mod e2b_fake;
mod evalkit;

use std::path::PathBuf;
use std::process::Output;

use e2b_fake::{start, Fail, Fake};
use evalkit::Env;

const NAME: &str = "m--bigcodebench-hard-complete.jsonl";

/// Task 19's canonical solution, and the same with a frame-introspection line the tamper scan
/// flags.
fn samples(env: &Env) -> PathBuf {
    let code = env.canonical("BigCodeBench/19");
    let flagged = format!("{code}\nimport sys\n_f = sys._getframe(0)\n");
    env.samples(
        NAME,
        &[
            serde_json::json!({"task_id": "BigCodeBench/19", "solution": code}),
            serde_json::json!({"task_id": "BigCodeBench/19", "solution": flagged}),
        ],
    )
}

/// `bcb evaluate --execution gradio` of task 19's samples against `url`, with `flags`.
fn gradio_run(env: &Env, url: &str, flags: &[&str]) -> Output {
    let samples = samples(env);
    let mut args = vec![
        "evaluate",
        "--execution",
        "gradio",
        "--gradio-endpoint",
        url,
    ];
    args.extend(flags);
    args.extend(["--ids", "19", "--samples", samples.to_str().unwrap()]);
    env.run(&args)
}

/// A Gradio run with `flag` → refused up front, nothing sent.
fn gradio_refuses(env: &Env, flag: &[&str]) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let out = gradio_run(env, &url, flag);
    let err = evalkit::stderr(&out);
    assert!(!out.status.success(), "{flag:?} must be refused");
    assert!(
        err.contains(&format!("hint: drop {}", flag[0])),
        "the hint names {}: {err}",
        flag[0]
    );
    assert!(listener.accept().is_err(), "nothing may reach the Space");
}

/// An E2B run with `flag` against a fresh fake; the fake is returned to be checked.
fn e2b_run(env: &Env, flag: &[&str]) -> (Fake, Output) {
    let fake = start(Fail::None);
    fake.set_env("BCB_PYTHON", &env.python);
    let samples = samples(env);
    let mut cmd = env.bcb();
    cmd.args(["evaluate", "--execution", "e2b", "--ids", "19", "--quiet"])
        .args(flag)
        .arg("--samples")
        .arg(&samples);
    let out = fake.client(&mut cmd).output().unwrap();
    evalkit::ok(&out);
    (fake, out)
}

/// What the sandbox was sent: its commands and every uploaded jobs file.
fn sent(fake: &Fake) -> String {
    let mut text = fake.commands().join("\n");
    for e in std::fs::read_dir(fake.home()).unwrap().flatten() {
        if e.file_name().to_string_lossy().ends_with(".jobs.jsonl") {
            text.push_str(&std::fs::read_to_string(e.path()).unwrap());
        }
    }
    text
}

/// A flag E2B carries as an `exec-jobs` flag of the same name.
fn carried_as_flag(flag: &str, value: &str) {
    let Some(env) = evalkit::env() else { return };
    gradio_refuses(&env, &[flag, value]);
    let (fake, _) = e2b_run(&env, &[flag, value]);
    let sent = sent(&fake);
    assert!(sent.contains(&format!("{flag} {value} ")), "{sent}");
}

#[test]
fn memory_limit_refused_by_gradio_carried_by_e2b() {
    carried_as_flag("--memory-limit", "4096");
}

#[test]
fn max_processes_refused_by_gradio_carried_by_e2b() {
    carried_as_flag("--max-processes", "128");
}

#[test]
fn output_cap_refused_by_gradio_carried_by_e2b() {
    carried_as_flag("--output-cap", "1000");
}

#[test]
fn executor_refused_by_gradio_carried_by_e2b() {
    carried_as_flag("--executor", "process");
}

#[test]
fn timeout_refused_by_gradio_carried_by_e2b_in_each_jobs_time_limit() {
    let Some(env) = evalkit::env() else { return };
    gradio_refuses(&env, &["--timeout", "30"]);
    let (fake, _) = e2b_run(&env, &["--timeout", "30"]);
    let sent = sent(&fake);
    assert!(sent.contains("\"time_limit_secs\":31.0"), "{sent}");
    assert!(!sent.contains("\"time_limit_secs\":241.0"), "{sent}");
}

#[test]
fn tamper_policy_refused_by_gradio_applied_before_e2b() {
    let Some(env) = evalkit::env() else { return };
    gradio_refuses(&env, &["--tamper-policy", "warn"]);
    // refuse (the default): the flagged sample is failed here and never sent.
    let (fake, _) = e2b_run(&env, &[]);
    assert!(!sent(&fake).contains("_getframe"));
    let results = evalkit::read_json(&env.path(&NAME.replace(".jsonl", "_eval_results.json")));
    let details = results["eval"]["BigCodeBench/19"][1]["details"].to_string();
    assert!(details.contains("refused by the tamper scan"), "{details}");
    // off: it is sent and runs.
    let (fake, _) = e2b_run(&env, &["--tamper-policy", "off", "--force"]);
    assert!(sent(&fake).contains("_getframe"));
}

#[test]
fn no_cache_accepted_by_both_as_remote_verdicts_never_touch_the_cache() {
    let Some(env) = evalkit::env() else { return };
    let (fake, _) = e2b_run(&env, &[]);
    let (again, _) = e2b_run(&env, &["--no-cache", "--force"]);
    assert!(
        !env.cache.path().join("verdicts").exists(),
        "no verdict cached"
    );
    assert_eq!(
        fake.commands().len(),
        again.commands().len(),
        "nothing reused"
    );
    // A Space takes it too (nothing to carry): only --no-execute, so nothing is sent.
    let flags = ["--no-cache", "--no-execute"];
    evalkit::ok(&gradio_run(&env, "http://127.0.0.1:9", &flags));
}
