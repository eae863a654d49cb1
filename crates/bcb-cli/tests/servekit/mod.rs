//! Shared by the `bcb serve` end-to-end tests: a server on loopback over six quick hard
//! tasks, their samples, and what `bcb evaluate` makes of the same rows.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::evalkit::{self, Env};

/// Hard tasks whose tests take milliseconds (shipped ground-truth timings).
pub const TASKS: [&str; 6] = [
    "BigCodeBench/592",
    "BigCodeBench/720",
    "BigCodeBench/800",
    "BigCodeBench/854",
    "BigCodeBench/313",
    "BigCodeBench/765",
];
pub const WRONG: &str = "def task_func(*args, **kwargs):\n    return None\n";

/// No overlap slots beyond `--parallel`: a server warms every slot before it is ready, and
/// the eight extra interpreters of the default (about 10 s of CPU per start) test nothing that
/// the verdict test (`served_verdicts_equal_...`, which keeps the default) does not.
pub const NO_OVERLAP: [&str; 2] = ["--max-in-flight", "2"];

/// `bcb serve` of [`TASKS`] on a free loopback port; killed on drop.
pub struct Server {
    pub child: Child,
    pub url: String,
    pub log: mpsc::Receiver<String>,
}

impl Server {
    /// Starts a server with `extra` flags and waits until it is ready.
    pub fn start(env: &Env, extra: &[&str]) -> Server {
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

    /// `POST {path}` with `body`, waiting up to 600 s for the answer.
    pub fn send(&self, path: &str, body: &Value) -> reqwest::blocking::Response {
        post(&self.url, path, body)
    }

    /// `POST {path}` with `body`: the status and the JSON answer.
    pub fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let res = self.send(path, body);
        (res.status().as_u16(), res.json().unwrap())
    }

    /// `POST /v1/evaluate` of `samples`.
    pub fn evaluate(&self, samples: &[Value]) -> reqwest::blocking::Response {
        self.send("/v1/evaluate", &json!({ "samples": samples }))
    }

    /// A counter or gauge of the server's `/metrics`.
    pub fn metric(&self, name: &str) -> f64 {
        let m = reqwest::blocking::get(format!("{}/metrics", self.url))
            .unwrap()
            .text()
            .unwrap();
        m.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing from /metrics"))
            .parse()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `POST {url}{path}` with `body`, waiting up to 600 s for the answer.
pub fn post(url: &str, path: &str, body: &Value) -> reqwest::blocking::Response {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap()
        .post(format!("{url}{path}"))
        .json(body)
        .send()
        .unwrap()
}

/// The task's code prompt followed by its canonical solution: a whole program that passes.
pub fn canonical_program(task: &Value) -> String {
    format!(
        "{}{}",
        task["code_prompt"].as_str().unwrap(),
        task["canonical_solution"].as_str().unwrap()
    )
}

/// Canonical solution and a wrong answer of every task, as samples rows.
pub fn samples(env: &Env) -> Vec<Value> {
    TASKS
        .iter()
        .flat_map(|id| {
            [
                json!({"task_id": id, "solution": canonical_program(&env.task(id))}),
                json!({"task_id": id, "solution": WRONG}),
            ]
        })
        .collect()
}

/// `bcb evaluate` of the samples file at `path` (named `…--bigcodebench-hard-complete…`) on
/// [`TASKS`], with `extra` flags.
pub fn evaluate_hard(env: &Env, path: &Path, extra: &[&str]) {
    let ids = TASKS.join(",");
    let args = ["evaluate", "--samples", path.to_str().unwrap()];
    env.run_ok(&[&args[..], &["--subset", "hard", "--ids", &ids], extra].concat());
}

/// Statuses `bcb evaluate` gives the same rows.
pub fn evaluate_statuses(env: &Env, rows: &[Value]) -> Vec<String> {
    let path = env.samples("s--bigcodebench-hard-complete--x.jsonl", rows);
    evaluate_hard(
        env,
        &path,
        &["--parallel", "2", "--no-cache", "--no-dedup", "-q"],
    );
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

/// The status of every result of a native-API answer, in request order.
pub fn statuses(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

/// `(status, flags)` of every result of a native-API answer, in request order.
pub fn statuses_and_flags(res: reqwest::blocking::Response) -> Vec<(String, Vec<String>)> {
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
