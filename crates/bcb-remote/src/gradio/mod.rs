//! `--execution gradio`: a BigCodeBench evaluator Space (upstream's, or bcb's own in `space/`)
//! as an executor, over Gradio's plain HTTP API, so any Gradio version that has it works (4.x
//! at the root, 5.x and 6.x under the prefix `/config` names):
//!
//! 1. `GET /config` → `api_prefix`, `version`;
//! 2. `GET {prefix}/info` → the endpoint (`/predict`, or Gradio 6's `/evaluate`) and its inputs,
//!    checked against the 13 the Space takes (both once, when the executor is built);
//! 3. per chunk of jobs: `POST {prefix}/upload` of a samples file holding each job's program as
//!    its `solution`; `POST {prefix}/call/{api}` with the 13 values → `event_id`;
//!    `GET {prefix}/call/{api}/{event_id}`: server-sent events to `complete` (`[results,
//!    pass_at_k]`) or `error`.
//!
//! Jobs carry the executed code (calibration already applied), so the Space is asked for
//! `calibrated = false` and runs each program as it is; `no_gt = true` (the session sends the
//! canonical solutions as jobs of their own) with the chunk's time limit as `min_time_limit`
//! when it exceeds the Space's own rule. Verdicts come back per task in file order and are
//! matched to jobs by that order, each checked against its program text.
//!
//! Connection errors, 429 and 5xx (Gradio's queue-full is 503) are retried with backoff; a
//! job lost mid-run (the stream breaks: Space restarted) is resubmitted once.

mod sse;
mod wire;

use wire::json_body;
pub use wire::{check_interface, match_results, samples_file};

use std::io::BufReader;
use std::time::{Duration, Instant};

use reqwest::blocking::{multipart, Client, RequestBuilder, Response};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::{all_failed, error_chain, short, text_field, HttpRetry, JobResults, RemoteBackend};
use bcb_executor::{ExecError, Job, JobId, Outcome};

/// The upstream Space (the original's default `--gradio_endpoint`).
pub const DEFAULT_ENDPOINT: &str = "https://bigcode-bigcodebench-evaluator.hf.space/";

/// The per-sample base time limit every Space applies (upstream's `TIMEOUT_LIMIT`): with
/// `no_gt` its limit is `max(240, min_time_limit, 20) + 1`.
pub const SPACE_BASE_TIMEOUT: f64 = 240.0;

/// The Space's inputs, in order, as its `evaluate` function names them.
pub const PARAMETERS: [&str; 13] = [
    "split",
    "subset",
    "samples",
    "pass_k",
    "parallel",
    "min_time_limit",
    "max_as_limit",
    "max_data_limit",
    "max_stack_limit",
    "calibrated",
    "check_gt_only",
    "no_gt",
    "selective_evaluate",
];

/// Endpoint names a Space's evaluate function is published under: Gradio ≤ 5 calls a
/// `gr.Interface` endpoint `/predict`, Gradio 6 names it after the function.
const ENDPOINT_NAMES: [&str; 2] = ["/predict", "/evaluate"];

#[derive(Debug, Clone, PartialEq)]
pub struct GradioOptions {
    /// The Space's URL (`https://…hf.space/` or `http://127.0.0.1:7860`).
    pub endpoint: String,
    /// Sent as `Authorization: Bearer …` (private or duplicated Spaces; `HF_TOKEN`).
    pub token: Option<String>,
    /// Further tries of one HTTP step on connection errors, 429 and 5xx.
    pub retries: usize,
    /// First delay between tries; it doubles up to `max_delay`.
    pub first_delay: Duration,
    pub max_delay: Duration,
    /// Times a job lost mid-run (stream broken, server restarted) is sent again.
    pub resubmits: usize,
    /// No byte for this long on any read means the connection is dead. Gradio sends a
    /// heartbeat every 15 s while a job waits or runs, so this is well above that.
    pub read_timeout: Duration,
    /// `complete` or `instruct`, `full` or `hard`: the Space looks tasks up by them.
    pub split: String,
    pub subset: String,
    /// Samples at once on the Space; < 1 lets it choose.
    pub parallel: i64,
    /// `--min-time-limit`, sent when the chunk's limit is the Space's own rule.
    pub min_time_limit: f64,
}

impl GradioOptions {
    pub fn new(endpoint: &str) -> Self {
        GradioOptions {
            endpoint: endpoint.to_string(),
            token: None,
            retries: 8,
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(20),
            resubmits: 1,
            read_timeout: Duration::from_secs(120),
            split: "complete".into(),
            subset: "full".into(),
            parallel: -1,
            min_time_limit: 1.0,
        }
    }

    /// `min_time_limit` that gives a chunk the time limit `limit` (s) on the Space, if any.
    pub fn min_time_for(&self, limit: f64) -> Option<f64> {
        let own = SPACE_BASE_TIMEOUT.max(self.min_time_limit.max(20.0)) + 1.0;
        if (limit - own).abs() < 1e-6 {
            Some(self.min_time_limit)
        } else if limit > own {
            Some(limit - 1.0)
        } else {
            None
        }
    }
}

/// The Space as an executor's backend.
pub struct GradioBackend {
    opts: GradioOptions,
    /// What `--max-as-limit`, `--max-data-limit`, `--max-stack-limit` send (MB).
    limits: (u64, u64, u64),
    http: Client,
    root: String,
    api: std::sync::Mutex<Api>,
}

/// Where the evaluate endpoint lives, found at run time.
#[derive(Debug, Clone, PartialEq)]
pub struct Api {
    /// Root URL + API prefix (`http://h:p/gradio_api`), no trailing slash.
    pub base: String,
    /// Endpoint name without the slash (`predict`, `evaluate`).
    pub name: String,
    pub version: String,
}

/// Why one submission did not finish.
enum Attempt {
    /// The job is gone (stream broke or ended early): worth resubmitting.
    Lost(String),
    Failed(ExecError),
}

impl From<ExecError> for Attempt {
    fn from(e: ExecError) -> Self {
        Attempt::Failed(e)
    }
}

impl GradioBackend {
    /// Connects: finds the API and checks its interface (nothing is sent to evaluate yet).
    pub fn connect(opts: GradioOptions, limits: &bcb_executor::Limits) -> Result<Self, ExecError> {
        let http = crate::http_client(opts.read_timeout)?;
        let root = opts.endpoint.trim_end_matches('/').to_string();
        let mut backend = GradioBackend {
            limits: (limits.max_as_mb, limits.max_data_mb, limits.max_stack_mb),
            http,
            root,
            opts,
            api: std::sync::Mutex::new(Api {
                base: String::new(),
                name: String::new(),
                version: String::new(),
            }),
        };
        let api = backend.discover()?;
        tracing::info!(
            "Gradio {} at {}, endpoint /{}",
            api.version,
            backend.opts.endpoint,
            api.name
        );
        backend.api = std::sync::Mutex::new(api);
        Ok(backend)
    }

    fn authed(&self, rb: RequestBuilder) -> RequestBuilder {
        match &self.opts.token {
            Some(t) => rb.bearer_auth(t),
            None => rb,
        }
    }
    /// Sends a request built by `build`, retrying connection errors, 429 and 5xx with backoff.
    /// Other statuses come back to the caller.
    fn send(&self, what: &str, build: &dyn Fn() -> RequestBuilder) -> Result<Response, ExecError> {
        let retry = HttpRetry {
            retries: self.opts.retries,
            first_delay: self.opts.first_delay,
            max_delay: self.opts.max_delay,
        };
        retry.send(what, &|| self.authed(build())).map_err(|why| {
            ExecError::transient(format!(
                "{why}; the Space at {} is down, restarting or overloaded: rerun later, or pass --gradio-endpoint URL of another evaluator",
                self.opts.endpoint
            ))
        })
    }

    /// `GET url` → JSON, with retries; a non-success status is fatal with its body.
    fn get_json(&self, url: &str, what: &str) -> Result<Value, ExecError> {
        let resp = self.send(what, &|| self.http.get(url))?;
        json_body(resp, what, url)
    }

    /// Finds the API prefix, version and evaluate endpoint, and checks its inputs.
    pub fn discover(&self) -> Result<Api, ExecError> {
        let config_url = format!("{}/config", self.root);
        let config = self.get_json(&config_url, "GET /config")?;
        let prefix = config
            .get("api_prefix")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim_end_matches('/')
            .to_string();
        let version = config
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string();
        let base = format!("{}{prefix}", self.root);
        let info_url = format!("{base}/info");
        let info = self.get_json(&info_url, &format!("GET {prefix}/info"))?;
        let name = check_interface(&info, &version)?;
        Ok(Api {
            base,
            name,
            version,
        })
    }

    /// Uploads a chunk's samples file → its `FileData` value.
    fn upload(&self, api: &Api, bytes: Vec<u8>) -> Result<Value, ExecError> {
        // No labels in the name: the Space is told split and subset; `model` is unused.
        let orig_name = "bcb-chunk.jsonl".to_string();
        let url = format!("{}/upload", api.base);
        let size = bytes.len();
        let build = || {
            let part = multipart::Part::bytes(bytes.clone())
                .file_name(orig_name.clone())
                .mime_str("application/octet-stream")
                .expect("static mime type parses");
            self.http
                .post(&url)
                .multipart(multipart::Form::new().part("files", part))
        };
        let resp = self.send("upload of the samples", &build)?;
        if resp.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return Err(ExecError::fatal(
                format!(
                    "the Space refused a chunk of samples ({size} bytes) as too large: {}",
                    short(&resp.text().unwrap_or_default())
                ),
                "send fewer jobs per request (--remote-chunk), or host an evaluator with a higher limit (space/README.md)",
            ));
        }
        let paths = json_body(resp, "upload of the samples", &url)?;
        let path = paths
            .as_array()
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ExecError::fatal(
                    format!(
                        "{url} answered {} instead of a list of server paths",
                        short(&paths)
                    ),
                    "the endpoint is not a Gradio app with uploads; check --gradio-endpoint",
                )
            })?;
        tracing::debug!("uploaded {size} bytes to the Space");
        Ok(json!({"path": path, "orig_name": orig_name, "meta": {"_type": "gradio.FileData"}}))
    }

    /// The 13 values in the Space's order for a chunk.
    fn data(&self, file: Value, min_time_limit: f64, ids: &str) -> Value {
        let parallel = if self.opts.parallel < 1 {
            -1
        } else {
            self.opts.parallel
        };
        json!([
            self.opts.split,
            self.opts.subset,
            file,
            "1",
            parallel,
            min_time_limit,
            self.limits.0,
            self.limits.1,
            self.limits.2,
            false,
            false,
            true,
            ids,
        ])
    }

    /// One submission of a chunk: upload, call, follow the stream → `[results, pass_at_k]`.
    fn attempt(
        &self,
        api: &Api,
        bytes: Vec<u8>,
        min_time: f64,
        ids: &str,
    ) -> Result<Value, Attempt> {
        let file = self.upload(api, bytes)?;
        let call_url = format!("{}/call/{}", api.base, api.name);
        let body = json!({"data": self.data(file, min_time, ids)});
        let resp = self.send("submit", &|| self.http.post(&call_url).json(&body))?;
        let accepted = json_body(resp, "submit", &call_url)?;
        let event_id = text_field(
            &accepted,
            "event_id",
            &format!("{call_url} gave no event_id"),
            "check --gradio-endpoint is an evaluator Space",
        )?;
        let stream_url = format!("{call_url}/{event_id}");
        // The stream lost: the chunk is sent again (a Space that restarts loses its queue).
        let lost = |why: String| Err(Attempt::Lost(format!("the result stream {why}")));
        let resp = match self.authed(self.http.get(&stream_url)).send() {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => return lost(format!("answered HTTP {}", r.status())),
            Err(e) => return lost(format!("failed: {}", error_chain(&e))),
        };
        let started = Instant::now();
        let mut heartbeats = 0u64;
        let mut reader = sse::Reader::new(BufReader::new(resp));
        loop {
            let next = reader.next_message();
            let after = started.elapsed();
            let msg = match next {
                Ok(Some(m)) => m,
                Ok(None) => return lost(format!("ended after {after:.0?} without a result")),
                Err(e) => return lost(format!("broke after {after:.0?}: {e}")),
            };
            match msg.event.as_str() {
                "complete" => {
                    return serde_json::from_str(&msg.data).map_err(|e| {
                        Attempt::Failed(ExecError::fatal(
                            format!("the Space's result is not JSON ({e}): {}", short(&msg.data)),
                            "the evaluator is not compatible; check --gradio-endpoint",
                        ))
                    })
                }
                "error" => {
                    let detail = serde_json::from_str::<Value>(&msg.data)
                        .ok()
                        .and_then(|v| {
                            v.as_str()
                                .map(str::to_string)
                                .or_else(|| (!v.is_null()).then(|| v.to_string()))
                        })
                        .unwrap_or_else(|| {
                            "no message (the Space hides errors unless show_error is on)".into()
                        });
                    return Err(Attempt::Failed(ExecError::fatal(
                        format!("the Space failed the evaluation: {detail}"),
                        "check the samples and flags (a local run shows more: --execution local); the finished jobs are journaled",
                    )));
                }
                "heartbeat" => heartbeats += 1,
                _ => {}
            }
            tracing::debug!(
                "Space: {}, {:.0?} elapsed, {heartbeats} heartbeats",
                msg.event,
                started.elapsed()
            );
        }
    }

    /// A chunk to a verdict per job, resubmitting a lost job (with the API found again).
    fn evaluate(&self, jobs: &[Job]) -> Result<Vec<(JobId, Outcome)>, ExecError> {
        let limit = jobs[0].time_limit.as_secs_f64();
        let min_time = self.opts.min_time_for(limit).ok_or_else(|| {
            ExecError::fatal(
                format!("a job's time limit is {limit} s; a Space's is at least {} s", SPACE_BASE_TIMEOUT + 1.0),
                "drop --timeout (a Space applies upstream's 240 s base), or use --execution local|e2b",
            )
        })?;
        let (bytes, ids) = samples_file(jobs);
        let mut resubmits = 0;
        let output = loop {
            let api = self.api.lock().unwrap().clone();
            match self.attempt(&api, bytes.clone(), min_time, &ids) {
                Ok(v) => break v,
                Err(Attempt::Failed(e)) => return Err(e),
                Err(Attempt::Lost(why)) if resubmits < self.opts.resubmits => {
                    resubmits += 1;
                    tracing::warn!("the job was lost ({why}); resubmitting it once");
                    // The Space restarted: its prefix or endpoint may have changed.
                    *self.api.lock().unwrap() = self.discover()?;
                }
                Err(Attempt::Lost(why)) => {
                    return Err(ExecError::transient(format!(
                        "the job was lost again ({why}) after {resubmits} resubmission(s); the Space keeps restarting: rerun later"
                    )))
                }
            }
        };
        match_results(jobs, &output)
    }
}

impl RemoteBackend for GradioBackend {
    fn name(&self) -> &'static str {
        "gradio"
    }

    fn run_chunk(&self, jobs: &[Job]) -> JobResults {
        if jobs.is_empty() {
            return Vec::new();
        }
        match self.evaluate(jobs) {
            Ok(v) => v.into_iter().map(|(id, o)| (id, Ok(o))).collect(),
            Err(e) => all_failed(jobs, &e),
        }
    }

    fn describe(&self) -> Vec<String> {
        let api = self.api.lock().unwrap();
        vec![format!(
            "Gradio {} at {}, endpoint /{}",
            api.version, self.opts.endpoint, api.name
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, params: &[&str]) -> Value {
        let ps: Vec<Value> = params
            .iter()
            .map(|p| json!({"parameter_name": p}))
            .collect();
        json!({"named_endpoints": {name: {"parameters": ps, "returns": [{}, {}]}}})
    }

    #[test]
    fn accepts_predict_and_gradio6_evaluate() {
        assert_eq!(
            check_interface(&info("/predict", &PARAMETERS), "5.50.0").unwrap(),
            "predict"
        );
        assert_eq!(
            check_interface(&info("/evaluate", &PARAMETERS), "6.31.0").unwrap(),
            "evaluate"
        );
    }

    #[test]
    fn a_mismatched_interface_says_what_differs() {
        let mut ps = PARAMETERS.to_vec();
        ps[2] = "file";
        ps.pop();
        let err = check_interface(&info("/predict", &ps), "6.0.0")
            .unwrap_err()
            .to_string();
        assert!(err.contains("takes 12 inputs"), "{err}");
        assert!(
            err.contains("input 3 is `file`, expected `samples`"),
            "{err}"
        );
        assert!(err.contains("missing input `selective_evaluate`"), "{err}");
        let err = check_interface(&info("/run", &PARAMETERS), "6.0.0")
            .unwrap_err()
            .to_string();
        assert!(err.contains("found [\"/run\"]"), "{err}");
    }
}
