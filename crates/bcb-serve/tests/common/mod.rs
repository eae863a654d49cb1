//! A FAKE engine (a scripted `Verdicts`) and an in-process server around it, shared by the
//! HTTP tests. The fake runs a submission's samples one after another, shortest first, each
//! sleeping the milliseconds its code names (`SLEEP 200`); code containing `PASS` passes,
//! `FAULT` gets an executor error, anything else fails one test. Its scripts (`/run_code`) echo
//! their stdin to stdout: `PASS` exits 0, `TLE` hits the time limit, `LOST` leaves no run to
//! show, `FAULT` is an executor error, anything else exits 1.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bcb_dataset::{Dataset, Split, Subset};
use bcb_eval::Origin;
use bcb_execute::{Details, ExecError, Outcome, Remark, ScriptEnd, ScriptRun, Status};
use bcb_serve::{
    AppState, Catalog, Deliver, DeliverScript, SampleBody, ScriptJob, ScriptRequest, ServeConfig,
    Stats, Submission, SubmitError, SubmitOptions, SubmitSample, Verdicts,
};

#[derive(Default)]
pub struct Counters {
    /// Submissions the fake was handed.
    pub submitted: AtomicUsize,
    pub executed: AtomicUsize,
    pub cancelled: AtomicUsize,
}

#[derive(Default, Clone)]
pub struct FakeEngine(Arc<Counters>);

impl std::ops::Deref for FakeEngine {
    type Target = Counters;
    fn deref(&self) -> &Counters {
        &self.0
    }
}

/// Stops the fake's thread when dropped (the server cancels by dropping).
struct FakeSubmission {
    stop: Arc<AtomicBool>,
}

impl Submission for FakeSubmission {}

impl Drop for FakeSubmission {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn sleep_ms(code: &str) -> u64 {
    code.split("SLEEP ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

impl Verdicts for FakeEngine {
    fn submit(
        &self,
        samples: Vec<SubmitSample>,
        _opts: SubmitOptions,
        deliver: Deliver,
    ) -> Result<Box<dyn Submission>, SubmitError> {
        self.submitted.fetch_add(1, Ordering::SeqCst);
        let stop = Arc::new(AtomicBool::new(false));
        let (engine, stop2) = (self.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut order: Vec<(usize, String)> = samples
                .into_iter()
                .enumerate()
                .map(|(i, s)| match s.body {
                    SampleBody::Solution(c) | SampleBody::Completion(c) => (i, c),
                })
                .collect();
            order.sort_by_key(|(_, c)| sleep_ms(c));
            let n = order.len();
            for (done, (i, code)) in order.into_iter().enumerate() {
                if stop2.load(Ordering::SeqCst) {
                    engine.cancelled.fetch_add(n - done, Ordering::SeqCst);
                    return;
                }
                std::thread::sleep(Duration::from_millis(sleep_ms(&code)));
                engine.executed.fetch_add(1, Ordering::SeqCst);
                let r = if code.contains("FAULT") {
                    Err(ExecError::fatal(
                        "the pool's workers died",
                        "run `bcb env check`",
                    ))
                } else if code.contains("PASS") {
                    Ok(verdict(Status::Pass, Details::new()))
                } else {
                    let mut d = Details::new();
                    d.insert("test_a", "AssertionError");
                    Ok(verdict(Status::Fail, d))
                };
                deliver(i, r);
            }
        });
        Ok(Box::new(FakeSubmission { stop }))
    }

    fn run_script(
        &self,
        req: ScriptRequest,
        deliver: DeliverScript,
    ) -> Result<Box<dyn ScriptJob>, SubmitError> {
        self.executed.fetch_add(1, Ordering::SeqCst);
        let code = req.code.as_str();
        let result = if code.contains("FAULT") {
            Err(ExecError::fatal(
                "the pool's workers died",
                "run `bcb env check`",
            ))
        } else if code.contains("LOST") {
            let mut o = Outcome::new(Status::Fail, Details::all("runner gone"));
            o.remark = Some(Remark::EarlyExit { code: 9 });
            Ok(o)
        } else {
            let (end, rc, status) = match () {
                _ if code.contains("TLE") => (ScriptEnd::TimeLimitExceeded, None, Status::Timeout),
                _ if code.contains("PASS") => (ScriptEnd::Finished, Some(0), Status::Pass),
                _ => (ScriptEnd::Finished, Some(1), Status::Fail),
            };
            let mut o = Outcome::new(status, Details::new());
            o.script = Some(Box::new(ScriptRun {
                end,
                execution_time: 0.5,
                return_code: rc,
                stdout: req.input.stdin.clone(),
                stderr: format!("files: {}", req.input.files.len()),
                files: req
                    .input
                    .fetch_files
                    .iter()
                    .map(|f| (f.clone(), "AAH/".to_string()))
                    .collect(),
            }));
            Ok(o)
        };
        std::thread::sleep(Duration::from_millis(sleep_ms(code)));
        deliver(result);
        Ok(Box::new(FakeScript))
    }

    fn stats(&self) -> Stats {
        Stats::default()
    }

    fn close(&self) {}
}

struct FakeScript;

impl ScriptJob for FakeScript {}

fn verdict(status: Status, details: Details) -> bcb_serve::backend::Verdict {
    let mut outcome = Outcome::new(status, details);
    outcome.test_secs = Some(0.001);
    outcome.cpu_secs = Some(0.002);
    bcb_serve::backend::Verdict {
        outcome,
        origin: Origin::Executed,
    }
}

pub fn dataset() -> Dataset {
    let row = |n: u32| {
        serde_json::json!({
            "task_id": format!("BigCodeBench/{n}"),
            "complete_prompt": "def task_func():\n",
            "instruct_prompt": "Write task_func.",
            "canonical_solution": "    return 1\n",
            "code_prompt": "def task_func():\n",
            "test": "import unittest\nclass TestCases(unittest.TestCase):\n    def test_a(self):\n        pass\n    def test_b(self):\n        pass\n",
            "entry_point": "task_func",
            "libs": "[]",
        })
        .to_string()
    };
    let text = format!("{}\n{}\n", row(1), row(2));
    Dataset::from_jsonl_bytes(
        text.as_bytes(),
        std::path::Path::new("fake.jsonl"),
        Subset::Full,
        "v0.1.4",
    )
    .unwrap()
}

pub struct Server {
    pub url: String,
    pub state: Arc<AppState>,
    pub engine: FakeEngine,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    handle: tokio::task::JoinHandle<anyhow::Result<()>>,
}

pub async fn start(tune: impl FnOnce(&mut ServeConfig), ready: bool) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut cfg = ServeConfig::new(listener.local_addr().unwrap());
    tune(&mut cfg);
    let catalog = Arc::new(Catalog::new(dataset(), None, Split::Complete));
    let state = AppState::new(cfg, catalog);
    let engine = FakeEngine::default();
    if ready {
        state.set_ready(Arc::new(engine.clone()));
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let st = state.clone();
    let handle = tokio::spawn(bcb_serve::serve(listener, state.clone(), async move {
        let _ = stopped.await;
        bcb_serve::drain(&st).await;
    }));
    Server {
        url: format!("http://{}", state.cfg.listen),
        state,
        engine,
        stop: Some(stop),
        handle,
    }
}

/// Returns once `ready()` holds, asking again every few milliseconds without holding the
/// runtime's thread; panics saying `what` did not happen if it still does not after `within`.
/// (`bcb_testkit::wait_until` blocks its thread: on a test's single-threaded runtime the
/// server it waits for would not run.)
pub async fn wait_until(within: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !ready() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A request body of `samples`.
pub fn body(samples: serde_json::Value) -> serde_json::Value {
    serde_json::json!({ "samples": samples })
}

impl Server {
    /// A `POST {path}` to this server; the caller adds the rest and sends it.
    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        reqwest::Client::new().post(format!("{}{path}", self.url))
    }

    /// `POST /v1/evaluate` of `samples`, sent.
    pub async fn evaluate(&self, samples: serde_json::Value) -> reqwest::Response {
        self.post("/v1/evaluate")
            .json(&body(samples))
            .send()
            .await
            .unwrap()
    }

    /// `POST {path}` of `body`: the JSON answer.
    pub async fn post_json(&self, path: &str, body: serde_json::Value) -> serde_json::Value {
        let res = self.post(path).json(&body).send().await.unwrap();
        res.json().await.unwrap()
    }

    /// The status of `GET {path}`.
    pub async fn get_status(&self, path: &str) -> u16 {
        let res = reqwest::get(format!("{}{path}", self.url)).await.unwrap();
        res.status().as_u16()
    }

    pub async fn shutdown(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.handle.await.unwrap().unwrap();
    }
}
