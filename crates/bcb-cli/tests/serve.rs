//! `bcb serve` end to end: the real binary, the real eval env and dataset, the real
//! `sandbox-fusion` client from PyPI. Verdicts served equal `bcb evaluate`'s and the official
//! results of the real samples; repeats across requests run once and survive a SIGKILL in
//! the verdict cache; faults (a client killed mid-stream, SIGTERM under load, a tokenless
//! non-loopback address) behave as documented.

mod evalkit;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Hard tasks whose tests take milliseconds (shipped ground-truth timings).
const TASKS: [&str; 6] = [
    "BigCodeBench/592",
    "BigCodeBench/720",
    "BigCodeBench/800",
    "BigCodeBench/854",
    "BigCodeBench/313",
    "BigCodeBench/765",
];
const WRONG: &str = "def task_func(*args, **kwargs):\n    return None\n";

struct Server {
    child: Child,
    url: String,
    log: mpsc::Receiver<String>,
}

/// No overlap slots beyond `--parallel`: a server warms every slot before it is ready, and
/// the eight extra interpreters of the default (about 10 s of CPU per start) test nothing that
/// the verdict test (`served_verdicts_equal_...`, which keeps the default) does not.
const NO_OVERLAP: [&str; 2] = ["--max-in-flight", "2"];

impl Server {
    fn start(env: &evalkit::Env, extra: &[&str]) -> Server {
        let ids = TASKS.join(",");
        let mut child = env
            .bcb()
            .args(["serve", "--listen", "127.0.0.1:0", "--subset", "hard"])
            .args(["--ids", &ids, "--parallel", "2"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, log) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[serve] {line}");
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut url = None;
        let until = Instant::now() + Duration::from_secs(60);
        while url.is_none() && Instant::now() < until {
            let line = log
                .recv_timeout(Duration::from_secs(60))
                .expect("bcb serve says where it listens");
            url = line
                .split("listening on ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .map(str::to_string);
        }
        let s = Server {
            child,
            url: url.unwrap(),
            log,
        };
        s.wait_ready();
        s
    }

    fn wait_ready(&self) {
        let until = Instant::now() + Duration::from_secs(600);
        loop {
            if let Ok(r) = reqwest::blocking::get(format!("{}/readyz", self.url)) {
                if r.status() == 200 {
                    return;
                }
            }
            assert!(Instant::now() < until, "not ready after 600 s");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn evaluate(&self, samples: &[Value]) -> reqwest::blocking::Response {
        reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .unwrap()
            .post(format!("{}/v1/evaluate", self.url))
            .json(&json!({ "samples": samples }))
            .send()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Canonical solution and a wrong answer of every task, as samples rows.
fn samples(env: &evalkit::Env) -> Vec<Value> {
    TASKS
        .iter()
        .flat_map(|id| {
            let t = env.task(id);
            let canonical = format!(
                "{}{}",
                t["code_prompt"].as_str().unwrap(),
                t["canonical_solution"].as_str().unwrap()
            );
            [
                json!({"task_id": id, "solution": canonical}),
                json!({"task_id": id, "solution": WRONG}),
            ]
        })
        .collect()
}

/// Statuses `bcb evaluate` gives the same rows.
fn evaluate_statuses(env: &evalkit::Env, rows: &[Value]) -> Vec<String> {
    let path = env.path("s--bigcodebench-hard-complete--x.jsonl");
    evalkit::write_jsonl(&path, rows);
    let ids = TASKS.join(",");
    let out = env.run(&[
        "evaluate",
        "--samples",
        path.to_str().unwrap(),
        "--ids",
        &ids,
        "--parallel",
        "2",
        "--no-cache",
        "--no-dedup",
        "-q",
    ]);
    assert!(out.status.success(), "{}", evalkit::stderr(&out));
    let results =
        evalkit::read_json(&env.path("s--bigcodebench-hard-complete--x_eval_results.json"));
    // Rows of each task in file order (completion_id), as the samples file lists them.
    rows.iter()
        .scan(
            std::collections::HashMap::<String, usize>::new(),
            |seen, r| {
                let id = r["task_id"].as_str().unwrap().to_string();
                let n = seen.entry(id.clone()).or_default();
                let status = results["eval"][&id][*n]["status"]
                    .as_str()
                    .unwrap()
                    .to_string();
                *n += 1;
                Some(status)
            },
        )
        .collect()
}

#[test]
fn served_verdicts_equal_bcb_evaluate_and_the_sandbox_fusion_client_agrees() {
    let Some(env) = evalkit::env() else { return };
    let server = Server::start(&env, &[]);
    let rows = samples(&env);
    let res = server.evaluate(&rows);
    assert_eq!(res.status(), 200);
    let v: Value = res.json().unwrap();
    let served: Vec<String> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect();
    let expected = evaluate_statuses(&env, &rows);
    assert_eq!(served, expected);
    assert!(served.iter().step_by(2).all(|s| s == "pass"), "{served:?}");
    let first = &v["results"][0];
    assert!(first["tests_total"].as_u64().unwrap() > 0);
    assert_eq!(first["tests_passed"], first["tests_total"]);
    assert!(first["test_secs"].is_number());

    // The real answers of two models for these tasks, against the official verdicts.
    for model in [
        "NousResearch--Hermes-2-Theta-Llama-3-8B",
        "microsoft--Phi-4-multimodal-instruct",
    ] {
        let stem = format!("{model}--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated");
        let dir = env.dataset_dir.join("../real-samples");
        let read_gz = |name: String| {
            use std::io::Read;
            let mut text = String::new();
            flate2::read::GzDecoder::new(std::fs::File::open(dir.join(name)).unwrap())
                .read_to_string(&mut text)
                .unwrap();
            text
        };
        let real: Vec<Value> = read_gz(format!("{stem}.jsonl.gz"))
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| TASKS.contains(&r["task_id"].as_str().unwrap()))
            .map(|r| json!({"task_id": r["task_id"], "solution": r["solution"]}))
            .collect();
        let official: Value =
            serde_json::from_str(&read_gz(format!("{stem}_eval_results.json.gz"))).unwrap();
        let v: Value = server.evaluate(&real).json().unwrap();
        for (row, r) in real.iter().zip(v["results"].as_array().unwrap()) {
            let id = row["task_id"].as_str().unwrap();
            assert_eq!(
                r["status"], official["eval"][id][0]["status"],
                "{model} {id}"
            );
        }
    }

    // The sandbox-fusion client from PyPI: submit (a completion continuing the prompt, and
    // a chat answer) and the dataset endpoints.
    let Some(client) = bcb_testkit::serve_client_python() else {
        return;
    };
    let script = r#"
import json, sys
from sandbox_fusion import set_endpoint, submit, get_prompts, SubmitRequest, GetPromptsRequest, TestConfig
set_endpoint(sys.argv[1])
tasks = json.loads(sys.argv[2])
out = {"prompts": len(get_prompts(GetPromptsRequest(dataset="bigcodebench", config=TestConfig())))}
res = []
for t in tasks:
    ok = submit(SubmitRequest(dataset="bigcodebench", id=t["task_id"], completion=t["canonical_solution"], config=TestConfig()))
    chat = "Sure:\n```python\n" + t["code_prompt"] + t["canonical_solution"] + "\n```\n"
    ok_chat = submit(SubmitRequest(dataset="bigcodebench", id=t["task_id"], completion=chat, config=TestConfig(extra={"is_freeform": True})))
    bad = submit(SubmitRequest(dataset="bigcodebench", id=t["task_id"], completion="    return None\n", config=TestConfig(provided_data={"task_id": t["task_id"], "test": t["test"]})))
    res.append([ok.accepted, ok_chat.accepted, bad.accepted, bad.tests[0].exec_info.run_result.status])
out["submits"] = res
print(json.dumps(out))
"#;
    let tasks: Vec<Value> = TASKS.iter().map(|id| env.task(id)).collect();
    let out = Command::new(client)
        .args([
            "-c",
            script,
            &server.url,
            &serde_json::to_string(&tasks).unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", evalkit::stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["prompts"], TASKS.len());
    for r in v["submits"].as_array().unwrap() {
        assert_eq!(r, &json!([true, true, false, "Finished"]));
    }

    // OpenRLHF's remote reward model shape.
    let t = env.task(TASKS[0]);
    let answer = format!(
        "```python\n{}{}\n```",
        t["code_prompt"].as_str().unwrap(),
        t["canonical_solution"].as_str().unwrap()
    );
    let v: Value = reqwest::blocking::Client::new()
        .post(format!("{}/openrlhf", server.url))
        .json(&json!({"query": [format!("P{answer}"), "Pnothing"], "prompts": ["P", "P"], "labels": [TASKS[0], TASKS[0]]}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(v["rewards"], json!([1.0, 0.0]), "{v}");
    assert!(v["scores"].is_array() && v["extra_logs"].is_object());
}

/// A counter of the server's `/metrics`.
fn metric(server: &Server, name: &str) -> u64 {
    let m = reqwest::blocking::get(format!("{}/metrics", server.url))
        .unwrap()
        .text()
        .unwrap();
    m.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} missing from /metrics"))
        .parse()
        .unwrap()
}

/// `(status, flags)` of every result of a native-API answer, in request order.
fn statuses_and_flags(res: reqwest::blocking::Response) -> Vec<(String, Vec<String>)> {
    assert_eq!(res.status(), 200);
    let v: Value = res.json().unwrap();
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let flags = r["flags"].as_array().unwrap();
            let flags = flags.iter().map(|f| f.as_str().unwrap().to_string());
            (r["status"].as_str().unwrap().to_string(), flags.collect())
        })
        .collect()
}

#[test]
fn repeats_across_requests_run_once_and_a_server_killed_with_sigkill_answers_from_its_cache() {
    let Some(env) = evalkit::env() else { return };
    let rows = samples(&env);
    let mut server = Server::start(&env, &NO_OVERLAP);
    let first = statuses_and_flags(server.evaluate(&rows));
    let has = |flags: &[String], f: &str| flags.iter().any(|x| x == f);
    assert!(
        first
            .iter()
            .all(|(_, f)| !has(f, "duplicate") && !has(f, "cached")),
        "{first:?}"
    );
    // The same programs in a later request: answered from the first run, flagged.
    let again = statuses_and_flags(server.evaluate(&rows));
    for ((s1, _), (s2, f)) in first.iter().zip(&again) {
        assert_eq!(s1, s2);
        assert!(has(f, "duplicate"), "{again:?}");
    }
    assert_eq!(metric(&server, "bcb_dedup_hits_total"), rows.len() as u64);
    // SIGKILL: no drain, no close. What it executed is on disk already.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let server = Server::start(&env, &NO_OVERLAP);
    let after = statuses_and_flags(server.evaluate(&rows));
    for ((s1, _), (s2, f)) in first.iter().zip(&after) {
        assert_eq!(s1, s2);
        assert!(has(f, "cached"), "{after:?}");
    }
    assert_eq!(metric(&server, "bcb_cache_hits_total"), rows.len() as u64);
    // --no-cache --no-dedup: every sample runs, nothing is flagged.
    drop(server);
    let plain = Server::start(
        &env,
        &["--no-cache", "--no-dedup", NO_OVERLAP[0], NO_OVERLAP[1]],
    );
    for _ in 0..2 {
        let got = statuses_and_flags(plain.evaluate(&rows));
        assert!(
            got.iter()
                .all(|(_, f)| !has(f, "duplicate") && !has(f, "cached")),
            "{got:?}"
        );
    }
    assert_eq!(metric(&plain, "bcb_dedup_hits_total"), 0);
}

#[test]
fn faults_client_killed_mid_stream_and_sigterm_under_load() {
    let Some(env) = evalkit::env() else { return };
    let mut server = Server::start(
        &env,
        &["--no-cache", "--no-dedup", NO_OVERLAP[0], NO_OVERLAP[1]],
    );
    let rows = samples(&env);
    // A client that reads one streamed verdict and goes away: its other jobs are cancelled,
    // the server stays healthy and answers the next request in full.
    let many: Vec<Value> = (0..8).flat_map(|_| rows.clone()).collect();
    {
        let mut res = reqwest::blocking::Client::new()
            .post(format!("{}/v1/evaluate", server.url))
            .header("accept", "application/x-ndjson")
            .json(&json!({ "samples": many }))
            .send()
            .unwrap();
        let mut first = String::new();
        BufReader::new(&mut res).read_line(&mut first).unwrap();
        assert!(first.contains("\"status\""), "{first}");
    }
    let until = Instant::now() + Duration::from_secs(60);
    let cancelled = loop {
        let m = reqwest::blocking::get(format!("{}/metrics", server.url))
            .unwrap()
            .text()
            .unwrap();
        let n: u64 = m
            .lines()
            .find_map(|l| l.strip_prefix("bcb_cancelled_samples_total "))
            .unwrap()
            .parse()
            .unwrap();
        let outstanding: f64 = m
            .lines()
            .find_map(|l| l.strip_prefix("bcb_outstanding_samples "))
            .unwrap()
            .parse()
            .unwrap();
        if outstanding == 0.0 || Instant::now() > until {
            break n;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        cancelled > 0,
        "the dropped client's queued jobs were cancelled"
    );
    let res = server.evaluate(&rows);
    assert_eq!(res.status(), 200);

    // SIGTERM under load: the admitted request finishes in full, the process exits 0.
    let url = server.url.clone();
    let load = rows.clone();
    let inflight = std::thread::spawn(move || {
        reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .unwrap()
            .post(format!("{url}/v1/evaluate"))
            .json(&json!({ "samples": load }))
            .send()
            .unwrap()
    });
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(100));
    // New requests during the drain: 503 (or refused once the server has closed).
    if let Ok(r) = reqwest::blocking::Client::new()
        .post(format!("{}/v1/evaluate", server.url))
        .json(&json!({ "samples": [rows[0]] }))
        .send()
    {
        assert_eq!(r.status(), 503);
    }
    let done = inflight.join().unwrap();
    assert_eq!(done.status(), 200, "nothing admitted is lost");
    let v: Value = done.json().unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), rows.len());
    let status = server.child.wait().unwrap();
    assert!(
        status.success(),
        "bcb serve exits 0 after draining: {status}"
    );
    while server.log.try_recv().is_ok() {}
}

#[test]
fn a_tokenless_non_loopback_listen_address_refuses_to_start() {
    let Some(env) = evalkit::env() else { return };
    let out = env
        .bcb()
        .env_remove("BCB_SERVE_TOKEN")
        .args(["serve", "--listen", "0.0.0.0:0", "--subset", "hard"])
        .output()
        .unwrap();
    let err = evalkit::stderr(&out);
    assert!(!out.status.success() && err.contains("--token"), "{err}");
}

/// `upstream` on `/v1/evaluate` (what the evaluator Space sends): the answer is the result
/// files `bcb evaluate` writes for the same samples file; limits other than the server's are
/// refused naming the field; `check_gt_only` answers from the ground truth checked at start.
#[test]
fn upstream_answer_is_the_result_files_of_bcb_evaluate_and_other_limits_are_refused() {
    let Some(env) = evalkit::env() else { return };
    let server = Server::start(&env, &NO_OVERLAP);
    let rows = samples(&env);
    let name = "m--bigcodebench-hard-complete.jsonl";
    let path = env.path(name);
    evalkit::write_jsonl(&path, &rows);
    let ids = TASKS.join(",");
    let out = env.run(&[
        "evaluate",
        "--samples",
        path.to_str().unwrap(),
        "--subset",
        "hard",
        "--ids",
        &ids,
        "--no-cache",
        "-q",
    ]);
    assert!(out.status.success(), "{}", evalkit::stderr(&out));
    let local_results =
        evalkit::without_date(&env.path("m--bigcodebench-hard-complete_eval_results.json"));
    let local_pass_at_k =
        evalkit::read_json(&env.path("m--bigcodebench-hard-complete_pass_at_k.json"));

    let post = |upstream: Value| {
        let body =
            json!({"samples": rows, "subset": "hard", "calibrated": true, "upstream": upstream});
        let res = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .unwrap()
            .post(format!("{}/v1/evaluate", server.url))
            .json(&body)
            .send()
            .unwrap();
        (res.status().as_u16(), res.json::<Value>().unwrap())
    };
    let defaults = json!({"file_name": name, "pass_k": "1,5,10", "ids": ids,
        "min_time_limit": 1.0, "max_as_limit": 30720, "max_data_limit": 30720, "max_stack_limit": 10});
    let (status, mut v) = post(defaults.clone());
    assert_eq!(status, 200, "{v}");
    let date = std::mem::take(&mut v["eval_results"]["date"]);
    assert_eq!(date.as_str().unwrap().len(), "2025-01-01 10:00".len());
    assert_eq!(v["eval_results"], local_results);
    assert_eq!(v["pass_at_k"], local_pass_at_k);

    for (field, value) in [
        ("max_as_limit", json!(1024)),
        ("max_stack_limit", json!(64)),
        ("min_time_limit", json!(500.0)),
    ] {
        let mut opts = defaults.clone();
        opts[field] = value;
        let (status, v) = post(opts);
        assert_eq!(status, 400, "{field}: {v}");
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains(&format!("upstream.{field}")),
            "{v}"
        );
        assert!(v["hint"].is_string(), "{v}");
    }
    // no_gt with upstream's defaults gives every task the server's limit (241 s).
    let mut opts = defaults.clone();
    opts["no_gt"] = json!(true);
    let (status, v) = post(opts);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["pass_at_k"]["gt_pass_rate"], 0.0);

    let mut opts = defaults.clone();
    opts["check_gt_only"] = json!(true);
    let (status, v) = post(opts);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["eval_results"], json!({}));
    assert_eq!(
        v["pass_at_k"],
        json!({"gt_pass_rate": 1.0, "failed_tasks": []})
    );

    let mut opts = defaults.clone();
    opts["ids"] = json!("13");
    let (status, v) = post(opts);
    assert_eq!(status, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("upstream.ids"), "{v}");
}

/// A program that tries the network, the host's files and the server's secrets, printing
/// `contained` when every probe failed, else what got through.
const HOSTILE: &str = r#"
import os, socket, sys
port, secret_file, victim = PORT, SECRET, VICTIM
hits = []
for host, p in (("127.0.0.1", port), ("1.1.1.1", 53)):
    try:
        socket.create_connection((host, p), timeout=2).close()
        hits.append("connected to %s:%d" % (host, p))
    except OSError:
        pass
try:
    open(secret_file).read()
    hits.append("read the host's file")
except OSError:
    pass
for pid in os.listdir("/proc"):
    try:
        if b"s3cr3t" in open("/proc/%s/environ" % pid, "rb").read():
            hits.append("a secret in /proc/%s/environ" % pid)
    except (OSError, ValueError):
        pass
if any("s3cr3t" in v for v in os.environ.values()):
    hits.append("a secret in the environment")
for path in (victim, "/etc/bcb-probe", "/usr/bcb-probe"):
    try:
        open(path, "w").write("x")
        hits.append("wrote " + path)
    except OSError:
        pass
print("contained" if not hits else hits)
"#;

#[test]
fn run_code_with_the_sandbox_fusion_client_and_verls_request_shape() {
    let Some(env) = evalkit::env() else { return };
    let Some(client) = bcb_testkit::serve_client_python() else {
        return;
    };
    // A secret the server process holds (the children of a test process inherit its env).
    std::env::set_var("RUNCODE_TEST_SECRET", "s3cr3t");
    let server = Server::start(&env, &NO_OVERLAP);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let secret_file = env.path("secret.txt");
    std::fs::write(&secret_file, "s3cr3t").unwrap();
    let victim = env.path("written-by-a-script");
    let hostile = HOSTILE
        .replace("PORT", &listener.local_addr().unwrap().port().to_string())
        .replace("SECRET", &format!("{:?}", secret_file.to_str().unwrap()))
        .replace("VICTIM", &format!("{:?}", victim.to_str().unwrap()));
    let script = r#"
import base64, json, sys
import requests
from sandbox_fusion import set_endpoint, run_code, RunCodeRequest
set_endpoint(sys.argv[1])
def run(**kw):
    r = run_code(RunCodeRequest(language="python", **kw))
    rr = r.run_result
    return {"status": r.status, "run": rr.status, "rc": rr.return_code, "out": rr.stdout,
            "err": rr.stderr, "time": rr.execution_time, "files": r.files}
out = {
    "echo": run(code="import sys\nprint(sum(map(int, sys.stdin.read().split())))\n", stdin="1 2 3\n"),
    "tle": run(code="import time\nprint('begun', flush=True)\ntime.sleep(30)\n", run_timeout=1),
    "exit": run(code="import sys\nsys.stderr.write('bad input')\nsys.exit(2)\n"),
    "raise": run(code="raise KeyError('k')\n"),
    "files": run(code="print(open('in/a.txt').read())\nopen('out.txt', 'w').write('made')\n",
                 files={"in/a.txt": base64.b64encode(b"given").decode()}, fetch_files=["out.txt", "nope.txt"]),
    "hostile": run(code=sys.argv[2], run_timeout=30),
}
verl = {"compile_timeout": 10, "run_timeout": 10, "code": "print(input()[::-1])", "stdin": "abc\n",
        "memory_limit_MB": 1024, "language": "python", "files": {}, "fetch_files": []}
r = requests.post(sys.argv[1] + "/run_code", json=verl, timeout=30)
out["verl"] = {"http": r.status_code, "body": r.json()}
# The client's RunCodeRequest has no memory_limit_MB (0.3.7); verl sends it.
hog = "b = bytearray(700 * 1024 * 1024)\nprint('allocated')\n"
r = requests.post(sys.argv[1] + "/run_code", json=dict(verl, code=hog, memory_limit_MB=256), timeout=30)
rr = r.json()["run_result"]
out["mem"] = {"status": r.json()["status"], "run": rr["status"], "rc": rr["return_code"], "err": rr["stderr"]}
r = requests.post(sys.argv[1] + "/run_code", json=dict(verl, code=hog, memory_limit_MB=-1), timeout=30)
out["mem_server_cap"] = r.json()["run_result"]["stdout"]
r = requests.post(sys.argv[1] + "/run_code", json=dict(verl, language="cpp"), timeout=30)
out["cpp"] = {"http": r.status_code, "body": r.json()}
print(json.dumps(out))
"#;
    let out = Command::new(client)
        .args(["-c", script, &server.url, &hostile])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", evalkit::stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let brief = |k: &str| {
        let r = &v[k];
        (
            r["status"].as_str().unwrap().to_string(),
            r["run"].as_str().unwrap().to_string(),
            r["rc"].as_i64(),
        )
    };
    assert_eq!(
        brief("echo"),
        ("Success".into(), "Finished".into(), Some(0)),
        "{v}"
    );
    assert_eq!(v["echo"]["out"], "6\n");
    assert_eq!(
        brief("tle"),
        ("Failed".into(), "TimeLimitExceeded".into(), None),
        "{v}"
    );
    assert_eq!(v["tle"]["out"], "begun\n");
    let tle_secs = v["tle"]["time"].as_f64().unwrap();
    assert!((1.0..5.0).contains(&tle_secs), "{tle_secs}");
    assert_eq!(
        brief("exit"),
        ("Failed".into(), "Finished".into(), Some(2)),
        "{v}"
    );
    assert_eq!(v["exit"]["err"], "bad input");
    assert_eq!(brief("raise").2, Some(1));
    assert!(
        v["raise"]["err"]
            .as_str()
            .unwrap()
            .contains("KeyError: 'k'"),
        "{v}"
    );
    assert_eq!(brief("mem").0, "Failed", "{v}");
    assert!(
        v["mem"]["err"].as_str().unwrap().contains("MemoryError"),
        "{v}"
    );
    assert_eq!(v["files"]["out"], "given\n");
    assert_eq!(v["files"]["files"], json!({"out.txt": "bWFkZQ=="}));
    assert_eq!(v["hostile"]["out"], "contained\n", "{v}");
    assert!(!victim.exists());

    let verl = &v["verl"];
    assert_eq!(verl["http"], 200);
    let body = verl["body"].as_object().unwrap();
    let mut keys: Vec<&str> = body.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "compile_result",
            "executor_pod_name",
            "files",
            "message",
            "run_result",
            "status"
        ]
    );
    assert_eq!(body["status"], "Success");
    assert_eq!(body["run_result"]["stdout"], "cba\n");
    let mut run_keys: Vec<&str> = body["run_result"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    run_keys.sort();
    assert_eq!(
        run_keys,
        [
            "execution_time",
            "return_code",
            "status",
            "stderr",
            "stdout"
        ]
    );
    assert_eq!(v["cpp"]["http"], 400);
    assert!(
        v["cpp"]["body"]["error"]
            .as_str()
            .unwrap()
            .contains("field `language`"),
        "{v}"
    );
    drop(listener);
}

/// The shapes a client sends one answer in, from its code (`program`, a whole program) and
/// its continuation of the prompt (`continuation`, else the program's text after the prompt's
/// function head when it holds that head verbatim). Each is `(shape, samples-file row field, text)`: what `bcb sanitize` reads it as
/// in a samples file.
fn answer_shapes(
    task: &Value,
    program: &str,
    continuation: Option<&str>,
) -> Vec<(&'static str, &'static str, String)> {
    let fenced = format!("```python\n{program}\n```");
    let chat = format!("Here is the solution:\n{fenced}\nIt defines `task_func`.\n");
    let think = format!(
        "<think>A first try:\n```python\ndef task_func(*args, **kwargs):\n    return None\n```\nNo.</think>\n{chat}"
    );
    // The instruct split's answer: the code block, then usage in another block.
    let instruct = format!("{fenced}\n\nUsage:\n```python\nprint(task_func())\n```\n");
    let mut shapes = vec![
        ("program", "solution", program.to_string()),
        ("chat", "solution", chat),
        ("think", "solution", think),
        ("instruct", "solution", instruct),
    ];
    let prompt = task["complete_prompt"].as_str().unwrap();
    let head = &prompt[prompt.find("def task_func").unwrap()..];
    let continuation = continuation
        .or_else(|| program.find(head).map(|at| &program[at + head.len()..]))
        .map(str::to_string);
    if let Some(continuation) = continuation {
        shapes.push((
            "prompt+continuation",
            "solution",
            format!("{prompt}{continuation}"),
        ));
        shapes.push(("continuation", "completion", continuation));
    }
    shapes
}

/// Every endpoint that takes model text reads every shape of the real answers of two models
/// (and the canonical solutions) as `bcb sanitize` + `bcb evaluate` score them in a samples
/// file: `/v1/evaluate` with `sanitize` (the row as the file holds it, and every shape sent as
/// a `solution`), `/openrlhf` (a continuation after the task's prompt, other shapes after a
/// chat prompt) and the real `sandbox-fusion` client's `/submit`, freeform and not, whose
/// `full_code` is the very program `bcb sanitize` writes.
#[test]
fn every_endpoint_reads_every_answer_shape_as_bcb_sanitize_and_evaluate_score_it() {
    let Some(env) = evalkit::env() else { return };
    let Some(client) = bcb_testkit::serve_client_python() else {
        return;
    };
    let server = Server::start(&env, &NO_OVERLAP);
    // (source, task, shape, field, text)
    let mut cases: Vec<(String, String, &str, &str, String)> = Vec::new();
    let mut add = |source: &str, id: &str, program: &str, continuation: Option<&str>| {
        for (shape, field, text) in answer_shapes(&env.task(id), program, continuation) {
            cases.push((source.into(), id.into(), shape, field, text));
        }
    };
    for id in TASKS {
        let t = env.task(id);
        let body = t["canonical_solution"].as_str().unwrap();
        let canonical = format!("{}{body}", t["code_prompt"].as_str().unwrap());
        add("canonical", id, &canonical, Some(body));
    }
    for model in [
        "NousResearch--Hermes-2-Theta-Llama-3-8B",
        "microsoft--Phi-4-multimodal-instruct",
    ] {
        use std::io::Read;
        let gz = env.dataset_dir.join(format!(
            "../real-samples/{model}--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated.jsonl.gz"
        ));
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(gz).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        for row in text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
        {
            let id = row["task_id"].as_str().unwrap();
            if TASKS.contains(&id) {
                add(model, id, row["solution"].as_str().unwrap(), None);
            }
        }
    }
    let shapes: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.2).collect();
    assert_eq!(shapes.len(), 6, "every shape built: {shapes:?}");

    // What `bcb sanitize` + `bcb evaluate` make of the rows of a samples file.
    let rows: Vec<Value> = cases
        .iter()
        .map(|(_, id, _, field, text)| json!({"task_id": id, field.to_string(): text}))
        .collect();
    let raw = env.path("shapes--bigcodebench-hard-complete--raw.jsonl");
    evalkit::write_jsonl(&raw, &rows);
    let out = env.run(&["sanitize", "--samples", raw.to_str().unwrap()]);
    assert!(out.status.success(), "{}", evalkit::stderr(&out));
    let sanitized: Vec<Value> = std::fs::read_to_string(
        env.path("shapes--bigcodebench-hard-complete--raw-sanitized.jsonl"),
    )
    .unwrap()
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect();
    assert_eq!(sanitized.len(), rows.len());
    let expected = evaluate_statuses(&env, &sanitized);
    let passes = expected.iter().filter(|s| *s == "pass").count();
    assert!(passes > 0 && passes < expected.len(), "{expected:?}");

    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap();
    let post = |path: &str, body: Value| -> Value {
        let res = http
            .post(format!("{}{path}", server.url))
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        res.json().unwrap()
    };
    let statuses = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["status"].as_str().unwrap().to_string())
            .collect()
    };
    let as_file = post("/v1/evaluate", json!({"samples": rows, "sanitize": true}));
    let as_solutions: Vec<Value> = cases
        .iter()
        .map(|(_, id, _, _, text)| json!({"task_id": id, "solution": text}))
        .collect();
    let all_raw = post(
        "/v1/evaluate",
        json!({"samples": as_solutions, "sanitize": true}),
    );
    const CHAT_PROMPT: &str =
        "<|im_start|>user\nWrite task_func.<|im_end|>\n<|im_start|>assistant\n";
    let (queries, prompts): (Vec<String>, Vec<String>) = cases
        .iter()
        .map(|(_, id, shape, _, text)| {
            let prompt = match *shape {
                "continuation" => env.task(id)["complete_prompt"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                _ => CHAT_PROMPT.to_string(),
            };
            (format!("{prompt}{text}"), prompt)
        })
        .unzip();
    let labels: Vec<&str> = cases.iter().map(|c| c.1.as_str()).collect();
    let rlhf = post(
        "/openrlhf",
        json!({"query": queries, "prompts": prompts, "labels": labels}),
    );

    let script = r#"
import json, sys
from sandbox_fusion import set_endpoint, submit, SubmitRequest, TestConfig, run_concurrent
set_endpoint(sys.argv[1])
cases = json.loads(sys.stdin.read())
def one(task_id, text, freeform):
    r = submit(SubmitRequest(dataset="bigcodebench", id=task_id, completion=text,
                             config=TestConfig(extra={"is_freeform": freeform})))
    return [r.accepted, r.full_code]
args = [[c[0], c[1], ff] for c in cases for ff in (True, False)]
print(json.dumps(run_concurrent(one, args=args, concurrency=8)))
"#;
    let mut child = Command::new(client)
        .args(["-c", script, &server.url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pairs: Vec<(&str, &str)> = cases.iter().map(|c| (c.1.as_str(), c.4.as_str())).collect();
    std::io::Write::write_all(
        child.stdin.as_mut().unwrap(),
        serde_json::to_string(&pairs).unwrap().as_bytes(),
    )
    .unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", evalkit::stderr(&out));
    let fusion: Vec<(bool, String)> = serde_json::from_slice(&out.stdout).unwrap();

    let (as_file, all_raw) = (statuses(&as_file), statuses(&all_raw));
    let mut table: std::collections::BTreeMap<&str, [usize; 2]> = Default::default();
    for (i, (source, id, shape, _, _)) in cases.iter().enumerate() {
        let want = &expected[i];
        let pass = want == "pass";
        let at = format!("{source} {id} {shape}: bcb evaluate says {want}");
        assert_eq!(&as_file[i], want, "/v1/evaluate sanitize (file row) {at}");
        assert_eq!(
            &all_raw[i], want,
            "/v1/evaluate sanitize (as solution) {at}"
        );
        assert_eq!(
            rlhf["rewards"][i],
            f64::from(u8::from(pass)),
            "/openrlhf {at}"
        );
        let program = sanitized[i]["solution"].as_str().unwrap();
        for (k, name) in [(0, "freeform"), (1, "not freeform")] {
            let (accepted, full_code) = &fusion[2 * i + k];
            assert_eq!(*accepted, pass, "/submit {name} {at}");
            assert_eq!(full_code, program, "/submit {name} {at}: the program");
        }
        let e = table.entry(shape).or_default();
        e[0] += 1;
        e[1] += usize::from(pass);
    }
    // The table of shapes (answers, passes) in the test's log.
    eprintln!("shape: answers, pass (every endpoint agreeing with bcb evaluate)\n{table:#?}");
    // Partial credit in extra_logs: the native result's fraction.
    let v: Value = post("/v1/evaluate", json!({"samples": rows, "sanitize": true}));
    for (i, r) in v["results"].as_array().unwrap().iter().enumerate() {
        let total = r["tests_total"].as_f64().unwrap();
        let frac = r["tests_passed"].as_f64().unwrap() / total;
        assert_eq!(rlhf["extra_logs"]["tests_passed_frac"][i], frac, "{i}");
        assert_eq!(rlhf["extra_logs"]["tests_total"][i], total, "{i}");
    }
    assert!(rlhf["extra_logs"]["hack"].is_array());
}
