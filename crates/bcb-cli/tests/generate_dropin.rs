//! `bcb generate` used the way the original's documentation and scripts use it: its backends
//! and spellings, logs under nohup, and no traps (files created before the inputs are checked,
//! endless retries against a wrong URL, completion-ordered rows, a refusal on a cluster
//! filesystem without file locks). `sanitize_dropin.rs` does the same for `sanitize` and
//! `syncheck`.

#![allow(clippy::print_stderr)] // tests tell the person running them what they measured

mod evalkit;
mod genkit;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bcb_generate::testing::{llm_model_path, llm_python_path, llm_server, Fault, TestServer};
use evalkit::{ok, shared_dataset_dir as dataset_dir, stderr};
use genkit::{chat_stub, generate, generate_from, samples_file, samples_journal, ANSWER};
use serde_json::{json, Value};

#[test]
fn generate_final_file_is_in_dataset_order_and_byte_identical_to_python_json_dumps() {
    let stub = chat_stub(ANSWER);
    // The first request stalls, so the first task finishes last.
    stub.push_faults([Fault::Stall(Duration::from_millis(1500))]);
    let dir = tempfile::tempdir().unwrap();
    let mut run = generate_from(dir.path(), &stub.v1_url(), "0-8");
    ok(&run.args(["--concurrency", "4"]).output().unwrap());
    let file = samples_file(dir.path(), "openai", "stub-model");
    let bytes = std::fs::read(&file).unwrap();
    let rows: Vec<Value> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["task_id"].as_str().unwrap())
        .collect();
    let hard: Vec<String> = std::fs::read_to_string(dataset_dir().join("hard_task_ids.txt"))
        .unwrap()
        .lines()
        .take(8)
        .map(String::from)
        .collect();
    assert_eq!(ids, hard, "rows in dataset order");
    // The original's writer: `json.dumps(row) + "\n"`, keys task_id, solution, raw_solution.
    let mut expected = Vec::new();
    for r in &rows {
        expected.extend(bcb_pyjson::to_line(r).unwrap());
        expected.push(b'\n');
    }
    assert_eq!(bytes, expected);
    let first = std::str::from_utf8(&bytes).unwrap().lines().next().unwrap();
    assert!(
        first.starts_with("{\"task_id\": \"BigCodeBench/"),
        "{first}"
    );
    assert!(first.contains("caf\\u00e9 \\u2615"), "{first}");
    let keys: Vec<&String> = rows[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["task_id", "solution", "raw_solution"]);
    assert!(
        !samples_journal(&file).exists(),
        "the journal is removed once the final file is written"
    );
    // Against Python itself when the eval env is here.
    if let Some(py) = std::env::var_os("BCB_PYTHON").filter(|p| Path::new(p).exists()) {
        let out = Command::new(py)
            .args([
                "-c",
                "import json,sys\nsys.stdout.write(''.join(json.dumps(json.loads(l))+'\\n' for l in open(sys.argv[1], encoding='utf-8')))",
            ])
            .arg(&file)
            .output()
            .unwrap();
        ok(&out);
        assert_eq!(out.stdout, bytes, "python re-dump differs");
    }
}

#[test]
fn generate_under_nohup_writes_plain_progress_lines_without_escape_codes() {
    let stub = chat_stub(ANSWER);
    // Slow answers and one retried 500 (its warning goes to the log too).
    stub.push_faults([Fault::Status {
        status: 500,
        retry_after: None,
    }]);
    stub.push_faults((0..6).map(|_| Fault::Stall(Duration::from_millis(400))));
    let dir = tempfile::tempdir().unwrap();
    // stderr is a pipe here, as under nohup or CI.
    let out = generate_from(dir.path(), &stub.v1_url(), "0-6")
        .args(["--concurrency", "1", "--progress-interval", "0.5"])
        .env("BCB_RETRY_MIN_DELAY_MS", "50")
        .output()
        .unwrap();
    let err = ok(&out);
    let progress: Vec<&str> = err
        .lines()
        .filter(|l| l.contains(" samples (") && l.contains("/min"))
        .collect();
    assert!(progress.len() >= 3, "periodic lines expected:\n{err}");
    assert!(
        progress.iter().any(|l| l.contains("eta ")),
        "lines carry an ETA:\n{err}"
    );
    assert!(
        progress
            .last()
            .unwrap()
            .starts_with("generate: 6/6 samples"),
        "{err}"
    );
    assert!(
        err.contains("retrying"),
        "the retry warning is logged:\n{err}"
    );
    assert!(
        !err.contains('\x1b') && !err.contains('\r'),
        "no escape codes or carriage returns in a log:\n{err:?}"
    );
}

#[test]
fn generate_stops_after_consecutive_connection_failures_naming_the_url() {
    // A port nobody listens on: the mistyped --base-url case.
    let url = format!("http://127.0.0.1:{}/v1", evalkit::free_port());
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let out = generate_from(dir.path(), &url, "0-100").output().unwrap();
    let took = t0.elapsed();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("cannot connect to {url}/chat/completions")),
        "{err}"
    );
    assert!(err.contains("connection failures in a row"), "{err}");
    assert!(err.contains("--base-url"), "{err}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    eprintln!("circuit breaker: stopped after {took:?}");
}

#[test]
fn generate_creates_nothing_before_the_key_and_model_checks_pass() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("results");
    let mut vllm = generate("instruct", "org/m", Some("vllm"), &root);
    vllm.arg("--vllm-bin").arg(dir.path().join("no-vllm"));
    let refusals = [
        (
            generate("instruct", "gpt-4o", Some("openai"), &root),
            "OPENAI_API_KEY is not set",
            "the key check",
        ),
        (
            generate("complete", dir.path().join("missing.gguf"), None, &root),
            "does not exist",
            "the model check",
        ),
        (vllm, "pip install vllm", "the vllm check"),
    ];
    for (mut cmd, says, check) in refusals {
        evalkit::assert_fails_saying(&cmd.output().unwrap(), &[says]);
        assert!(!root.exists(), "nothing may be created before {check}");
    }
}

#[test]
fn generate_backend_hf_says_what_to_run_instead_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = generate("instruct", "m", Some("hf"), dir.path())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    for what in ["--backend vllm", "llama.cpp", "TGI"] {
        assert!(err.contains(what), "{err}");
    }
}

#[test]
fn generate_hf_inference_backend_against_a_fake_of_the_documented_api() {
    let stub = TestServer::stub(Arc::new(|path: &str, _body: &Value| {
        if path.starts_with("/models/") {
            (
                200,
                "application/json",
                json!([{"generated_text": ANSWER}]).to_string(),
            )
        } else {
            (404, "application/json", "{}".to_string())
        }
    }));
    let dir = tempfile::tempdir().unwrap();
    let model = "bigcode/starcoder2-15b-instruct-v0.1";
    let out = generate("instruct", model, Some("hf-inference"), dir.path())
        .env("HF_TOKEN", "hf_fake_token")
        .args([
            "--base-url",
            &stub.url(),
            "--id_range",
            "0-3",
            "--greedy=True",
        ])
        .output()
        .unwrap();
    ok(&out);
    let file = dir.path().join("bigcode--starcoder2-15b-instruct-v0.1--main--bigcodebench-hard-instruct--hf-inference-0-1-sanitized_calibrated.jsonl");
    let body = std::fs::read_to_string(&file).unwrap();
    assert_eq!(body.lines().count(), 3);
    let bodies = stub.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(bodies
        .iter()
        .all(|(p, _)| p == "/models/bigcode/starcoder2-15b-instruct-v0.1"));
    assert_eq!(bodies[0].1["parameters"]["do_sample"], json!(false));
    let headers = stub.state.headers.lock().unwrap().clone();
    assert!(headers[0]
        .1
        .iter()
        .any(|(k, v)| k == "authorization" && v == "Bearer hf_fake_token"));

    // No key and the real service: refused before anything is created.
    let root = dir.path().join("none");
    let out = generate("instruct", "m", Some("hf-inference"), &root)
        .output()
        .unwrap();
    evalkit::assert_fails_saying(&out, &["HF_INFERENCE_API_KEY"]);
    assert!(!root.exists());
}

/// A stand-in for `vllm` (not vLLM): checks the `vllm serve` arguments bcb passes, records
/// them, and serves the model through the real llama.cpp test server on the given port.
fn standin_vllm(dir: &Path) -> (PathBuf, PathBuf) {
    let launcher = dir.join("llama_server.py");
    std::fs::write(&launcher, bcb_generate::local::LAUNCHER).unwrap();
    let argv_log = dir.join("vllm-argv.txt");
    let script = dir.join("vllm");
    std::fs::write(
        &script,
        format!(
            r#"#!/usr/bin/env bash
# Stand-in for vLLM's CLI (test only): validates argv, then serves through llama.cpp.
set -euo pipefail
printf '%s\n' "$*" > {argv}
[[ "$1" == serve ]] || {{ echo "stand-in vllm: expected 'serve', got $1" >&2; exit 64; }}
model="$2"; shift 2
port=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --port) port="$2"; shift 2 ;;
    --host) [[ "$2" == 127.0.0.1 ]] || {{ echo "stand-in vllm: host $2" >&2; exit 64; }}; shift 2 ;;
    --tensor-parallel-size|--max-model-len|--dtype|--revision|--max-num-seqs|--tokenizer|--seed|--lora-modules) shift 2 ;;
    --trust-remote-code|--enable-lora) shift ;;
    *) echo "stand-in vllm: unknown argument $1" >&2; exit 64 ;;
  esac
done
[[ -n "$port" ]] || {{ echo "stand-in vllm: no --port" >&2; exit 64; }}
# The launcher stops when its stdin closes: keep one open for the server's lifetime.
exec {python} {launcher} --model {gguf} --alias "$model" --host 127.0.0.1 --port "$port" \
  --n-ctx 2048 --n-parallel 2 --threads 1 --gemma-template < <(sleep 100000)
"#,
            argv = argv_log.display(),
            python = llm_python_path().display(),
            launcher = launcher.display(),
            gguf = llm_model_path().display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, argv_log)
}

#[test]
fn generate_backend_vllm_starts_a_standin_vllm_serve_with_the_original_flags() {
    // Only to know the test LLM is installed (and fail in CI when it is not).
    let Some(probe) = llm_server(1) else { return };
    drop(probe);
    let dir = tempfile::tempdir().unwrap();
    let (vllm, argv_log) = standin_vllm(dir.path());
    let root = dir.path().join("out");
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = generate("complete", "org/gemma-test", Some("vllm"), &root)
        .env("PATH", path)
        .env_remove("VLLM_N_GPUS")
        .args([
            // The original's spellings, Fire-style.
            "--tp",
            "2",
            "--max_model_len",
            "4096",
            "--trust_remote_code",
            "True",
            "--tokenizer_name",
            "org/tok",
            "--tokenizer_legacy=False",
            "--revision",
            "r1",
            "--id_range",
            "0-2",
            "--max_new_tokens",
            "16",
        ])
        .output()
        .unwrap();
    let err = ok(&out);
    let argv = std::fs::read_to_string(&argv_log).unwrap();
    assert!(
        argv.starts_with("serve org/gemma-test --host 127.0.0.1 --port "),
        "{argv}"
    );
    for want in [
        "--tensor-parallel-size 2",
        "--max-model-len 4096",
        "--dtype bfloat16",
        "--revision r1",
        "--trust-remote-code",
        "--tokenizer org/tok",
    ] {
        assert!(argv.contains(want), "{want} missing in: {argv}");
    }
    let file = root.join(
        "org--gemma-test--r1--bigcodebench-hard-complete--vllm-0-1-sanitized_calibrated.jsonl",
    );
    let rows = std::fs::read_to_string(&file).unwrap();
    assert_eq!(rows.lines().count(), 2, "{err}");
    // The server is stopped with the run.
    let port: u16 = argv.split_whitespace().nth(5).unwrap().parse().unwrap();
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the stand-in server still listens on {port}"
    );
    let _ = vllm;
}

/// Makes `flock` fail with ENOSYS in the command's process, as on Lustre mounted without
/// `flock`: a seccomp filter installed between its fork and its exec.
fn without_file_locks(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    // Load the syscall number (offset 0 of seccomp_data); flock answers ENOSYS, the rest runs.
    let filter = [
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        libc::sock_filter {
            jf: 1,
            ..stmt(
                libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
                libc::SYS_flock as u32,
            )
        },
        stmt(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        ),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ];
    // SAFETY: between fork and exec the closure only makes two prctl calls, on a filter that
    // lives as long as the Command (moved into the closure).
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn generate_on_a_filesystem_without_file_locks_warns_and_writes_its_samples() {
    let stub = chat_stub(ANSWER);
    let dir = tempfile::tempdir().unwrap();
    let mut run = generate_from(dir.path(), &stub.v1_url(), "0-3");
    without_file_locks(&mut run);
    let err = ok(&run.output().unwrap());
    assert!(err.contains("has no file locks"), "{err}");
    let file = samples_file(dir.path(), "openai", "stub-model");
    assert_eq!(genkit::rows(&file).len(), 3);
    assert!(!samples_journal(&file).exists());
}

#[test]
fn generate_no_resume_starts_over_from_a_finished_file_and_a_killed_runs_journal() {
    let stub = chat_stub(ANSWER);
    let dir = tempfile::tempdir().unwrap();
    let file = samples_file(dir.path(), "openai", "stub-model");
    let journal = samples_journal(&file);
    ok(&generate_from(dir.path(), &stub.v1_url(), "0-3")
        .output()
        .unwrap());
    // A killed run's journal beside the finished file: one more sample of a task.
    let first = genkit::rows(&file);
    std::fs::write(&journal, format!("{}\n", first[0])).unwrap();
    let asked = stub.received();
    let mut again = generate_from(dir.path(), &stub.v1_url(), "0-3");
    ok(&again.arg("--no-resume").output().unwrap());
    assert_eq!(stub.received() - asked, 3, "every sample asked for again");
    assert_eq!(
        genkit::rows(&file).len(),
        3,
        "neither the old file nor the journal kept"
    );
    assert!(!journal.exists());
}

/// `cmd` run where `dir` is read-only even to root: in a mount namespace of its own, `dir`
/// bound over itself read-only.
fn with_read_only(dir: &Path, cmd: &Command) -> Command {
    let mut wrapped = Command::new("unshare");
    wrapped
        .args(["-m", "sh", "-c"])
        .arg(r#"mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@""#)
        .arg("sh")
        .arg(dir)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => wrapped.env(key, v),
            None => wrapped.env_remove(key),
        };
    }
    wrapped
}

#[test]
fn generate_on_a_complete_file_in_a_read_only_folder_has_nothing_to_write() {
    let stub = chat_stub(ANSWER);
    let dir = tempfile::tempdir().unwrap();
    ok(&generate_from(dir.path(), &stub.v1_url(), "0-3")
        .output()
        .unwrap());
    let asked = stub.received();
    let run = generate_from(dir.path(), &stub.v1_url(), "0-3");
    ok(&with_read_only(dir.path(), &run).output().unwrap());
    assert_eq!(stub.received(), asked);
    assert_eq!(
        genkit::rows(&samples_file(dir.path(), "openai", "stub-model")).len(),
        3
    );
}
