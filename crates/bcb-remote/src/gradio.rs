//! Client of the BigCodeBench evaluator Space (upstream's `--execution gradio`), over Gradio's
//! plain HTTP API, so it works with any Gradio version that has it (4.x at the root, 5.x and
//! 6.x under the prefix `/config` names):
//!
//! 1. `GET /config` → `api_prefix`, `version`;
//! 2. `GET {prefix}/info` → the endpoint (`/predict`, or Gradio 6's `/evaluate`) and its inputs,
//!    checked against the 13 the Space takes;
//! 3. `POST {prefix}/upload` (multipart `files`) → the server path of the samples file;
//! 4. `POST {prefix}/call/{api}` with the 13 values → `event_id`;
//! 5. `GET {prefix}/call/{api}/{event_id}`: server-sent events through `heartbeat`s to
//!    `complete` (`[results, pass_at_k]`) or `error`.
//!
//! Connection errors, 429 and 5xx (Gradio's queue-full is 503) are retried with backoff; a
//! job lost mid-run (the stream breaks: Space restarted) is resubmitted from step 1 once.

use std::io::BufReader;
use std::time::{Duration, Instant};

use backon::BackoffBuilder;
use bcb_eval::EvalResults;
use bcb_execute::ExecError;
use reqwest::blocking::{multipart, Client, RequestBuilder, Response};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::{
    pass_at_k_from_json, short, sse, Progress, RemoteEvaluator, RemoteRequest, RemoteResult,
};

/// The upstream Space (the original's default `--gradio_endpoint`).
pub const DEFAULT_ENDPOINT: &str = "https://bigcode-bigcodebench-evaluator.hf.space/";

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

#[derive(Debug, Clone)]
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
        }
    }
}

pub struct GradioClient {
    opts: GradioOptions,
    http: Client,
    root: String,
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

impl GradioClient {
    pub fn new(opts: GradioOptions) -> Result<Self, ExecError> {
        let http = Client::builder()
            .connect_timeout(Duration::from_secs(20))
            .timeout(opts.read_timeout)
            .user_agent(concat!("bcb/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                ExecError::fatal(
                    format!("cannot build an HTTP client: {e}"),
                    "this is a bug in bcb; please report it",
                )
            })?;
        let root = opts.endpoint.trim_end_matches('/').to_string();
        if !(root.starts_with("http://") || root.starts_with("https://")) {
            return Err(ExecError::fatal(
                format!("--gradio-endpoint {}: not an http(s) URL", opts.endpoint),
                format!("pass the Space's URL, e.g. {DEFAULT_ENDPOINT}"),
            ));
        }
        Ok(GradioClient { opts, http, root })
    }

    fn authed(&self, rb: RequestBuilder) -> RequestBuilder {
        match &self.opts.token {
            Some(t) => rb.bearer_auth(t),
            None => rb,
        }
    }

    /// Sends a request built by `build`, retrying connection errors, 429 and 5xx with backoff.
    /// Other statuses come back to the caller.
    fn send(
        &self,
        what: &str,
        build: &dyn Fn() -> RequestBuilder,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Response, ExecError> {
        let mut delays = backon::ExponentialBuilder::default()
            .with_min_delay(self.opts.first_delay)
            .with_max_delay(self.opts.max_delay)
            .with_max_times(self.opts.retries)
            .with_jitter()
            .build();
        loop {
            let why = match self.authed(build()).send() {
                Ok(r)
                    if r.status().is_server_error()
                        || r.status() == StatusCode::TOO_MANY_REQUESTS =>
                {
                    let status = r.status();
                    format!(
                        "{what}: HTTP {status} {}",
                        short(&r.text().unwrap_or_default())
                    )
                }
                Ok(r) => return Ok(r),
                Err(e) => format!("{what}: {}", error_chain(&e)),
            };
            match delays.next() {
                Some(delay) => {
                    tracing::warn!("{why}; retrying in {delay:.1?}");
                    progress(Progress::Retrying { why, delay });
                    std::thread::sleep(delay);
                }
                None => {
                    return Err(ExecError::transient(format!(
                        "{why} (gave up after {} tries); the Space at {} is down, restarting or overloaded: rerun later, or pass --gradio-endpoint URL of another evaluator",
                        self.opts.retries + 1,
                        self.opts.endpoint
                    )))
                }
            }
        }
    }

    /// `GET url` → JSON, with retries; a non-success status is fatal with its body.
    fn get_json(
        &self,
        url: &str,
        what: &str,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Value, ExecError> {
        let resp = self.send(what, &|| self.http.get(url), progress)?;
        json_body(resp, what, url)
    }

    /// Finds the API prefix, version and evaluate endpoint, and checks its inputs.
    pub fn discover(&self, progress: &mut dyn FnMut(Progress)) -> Result<Api, ExecError> {
        let config_url = format!("{}/config", self.root);
        let config = self.get_json(&config_url, "GET /config", progress)?;
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
        let info = self.get_json(&info_url, &format!("GET {prefix}/info"), progress)?;
        let name = check_interface(&info, &version)?;
        Ok(Api {
            base,
            name,
            version,
        })
    }

    /// Uploads the samples file → its `FileData` value (`null` when there is none).
    fn upload(
        &self,
        api: &Api,
        req: &RemoteRequest,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Value, ExecError> {
        let Some(samples) = &req.samples else {
            return Ok(Value::Null);
        };
        let bytes = std::fs::read(samples).map_err(|e| {
            ExecError::fatal(
                format!("cannot read {}: {e}", samples.display()),
                "check the --samples path",
            )
        })?;
        let orig_name = samples
            .file_name()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "samples.jsonl".into());
        let url = format!("{}/upload", api.base);
        let size = bytes.len() as u64;
        let build = || {
            let part = multipart::Part::bytes(bytes.clone())
                .file_name(orig_name.clone())
                .mime_str("application/octet-stream")
                .expect("static mime type parses");
            self.http
                .post(&url)
                .multipart(multipart::Form::new().part("files", part))
        };
        let resp = self.send("upload of the samples", &build, progress)?;
        if resp.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return Err(ExecError::fatal(
                format!(
                    "the Space refused the samples file ({size} bytes) as too large: {}",
                    short(&resp.text().unwrap_or_default())
                ),
                "evaluate fewer tasks per run (--ids), or host an evaluator with a higher limit (space/README.md)",
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
        progress(Progress::Uploaded { bytes: size });
        Ok(json!({"path": path, "orig_name": orig_name, "meta": {"_type": "gradio.FileData"}}))
    }

    /// The 13 values in the Space's order.
    fn data(req: &RemoteRequest, file: Value) -> Value {
        json!([
            req.split,
            req.subset,
            file,
            req.pass_k_text(),
            req.parallel,
            req.min_time_limit,
            req.max_as_limit,
            req.max_data_limit,
            req.max_stack_limit,
            req.calibrated,
            req.check_gt_only,
            req.no_gt,
            req.selective_ids(),
        ])
    }

    /// One submission: discover, upload, call, follow the stream.
    fn attempt(
        &self,
        req: &RemoteRequest,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Value, Attempt> {
        let api = self.discover(progress)?;
        progress(Progress::Connected {
            description: format!(
                "Gradio {} at {}, endpoint /{}",
                api.version, self.opts.endpoint, api.name
            ),
        });
        let file = self.upload(&api, req, progress)?;
        let call_url = format!("{}/call/{}", api.base, api.name);
        let body = json!({"data": Self::data(req, file)});
        let resp = self.send(
            "submit",
            &|| self.http.post(&call_url).json(&body),
            progress,
        )?;
        let accepted = json_body(resp, "submit", &call_url)?;
        let event_id = accepted
            .get("event_id")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ExecError::fatal(
                    format!("{call_url} gave no event_id: {}", short(&accepted)),
                    "check --gradio-endpoint is an evaluator Space",
                )
            })?;
        let stream_url = format!("{call_url}/{event_id}");
        let resp = match self.authed(self.http.get(&stream_url)).send() {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => {
                return Err(Attempt::Lost(format!(
                    "the result stream answered HTTP {}",
                    r.status()
                )))
            }
            Err(e) => {
                return Err(Attempt::Lost(format!(
                    "the result stream failed: {}",
                    error_chain(&e)
                )))
            }
        };
        let started = Instant::now();
        let mut heartbeats = 0u64;
        let mut reader = sse::Reader::new(BufReader::new(resp));
        loop {
            let msg = match reader.next_message() {
                Ok(Some(m)) => m,
                Ok(None) => {
                    return Err(Attempt::Lost(format!(
                        "the result stream ended after {:.0?} without a result",
                        started.elapsed()
                    )))
                }
                Err(e) => {
                    return Err(Attempt::Lost(format!(
                        "the result stream broke after {:.0?}: {e}",
                        started.elapsed()
                    )))
                }
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
                        "check the samples file and flags (a local run shows more: --execution local); nothing was written",
                    )));
                }
                "heartbeat" => heartbeats += 1,
                _ => {}
            }
            progress(Progress::Waiting {
                elapsed: started.elapsed(),
                heartbeats,
                status: msg.event,
            });
        }
    }
}

impl RemoteEvaluator for GradioClient {
    fn evaluate(
        &self,
        req: &RemoteRequest,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<RemoteResult, ExecError> {
        let mut resubmits = 0;
        let output = loop {
            match self.attempt(req, progress) {
                Ok(v) => break v,
                Err(Attempt::Failed(e)) => return Err(e),
                Err(Attempt::Lost(why)) if resubmits < self.opts.resubmits => {
                    resubmits += 1;
                    tracing::warn!("job lost: {why}; resubmitting");
                    progress(Progress::Resubmitted { why });
                }
                Err(Attempt::Lost(why)) => {
                    return Err(ExecError::transient(format!(
                        "the job was lost again ({why}) after {resubmits} resubmission(s); the Space keeps restarting: rerun later"
                    )))
                }
            }
        };
        parse_output(&output, req.check_gt_only)
    }
}

/// Picks the evaluate endpoint in `/info` and checks it takes the Space's 13 inputs.
pub fn check_interface(info: &Value, version: &str) -> Result<String, ExecError> {
    let named = info
        .get("named_endpoints")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            ExecError::fatal(
                format!("the Space's /info has no named_endpoints: {}", short(info)),
                "check --gradio-endpoint is a Gradio app",
            )
        })?;
    let found: Vec<&String> = named.keys().collect();
    let (name, endpoint) = ENDPOINT_NAMES
        .iter()
        .find_map(|n| named.get(*n).map(|e| (*n, e)))
        .ok_or_else(|| {
            ExecError::fatal(
                format!("the Space (Gradio {version}) has no evaluate endpoint: expected one of {ENDPOINT_NAMES:?}, found {found:?}"),
                "check --gradio-endpoint points at a BigCodeBench evaluator",
            )
        })?;
    let params: Vec<String> = endpoint
        .get("parameters")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    p.get("parameter_name")
                        .or_else(|| p.get("label"))
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default();
    let mut diffs = Vec::new();
    if params.len() != PARAMETERS.len() {
        diffs.push(format!(
            "it takes {} inputs, bcb sends {}",
            params.len(),
            PARAMETERS.len()
        ));
    }
    for (i, (want, got)) in PARAMETERS.iter().zip(params.iter()).enumerate() {
        if want != got {
            diffs.push(format!("input {} is `{got}`, expected `{want}`", i + 1));
        }
    }
    for extra in params.iter().skip(PARAMETERS.len()) {
        diffs.push(format!("extra input `{extra}`"));
    }
    for missing in PARAMETERS.iter().skip(params.len()) {
        diffs.push(format!("missing input `{missing}`"));
    }
    if !diffs.is_empty() {
        return Err(ExecError::fatal(
            format!("the Space's endpoint {name} (Gradio {version}) does not match the evaluator interface: {}", diffs.join("; ")),
            "the Space's interface changed; use an evaluator with the 13 upstream inputs (e.g. bcb's own, space/)",
        ));
    }
    Ok(name.trim_start_matches('/').to_string())
}

/// `[results, pass_at_k]` from the `complete` event → typed results.
pub fn parse_output(output: &Value, check_gt_only: bool) -> Result<RemoteResult, ExecError> {
    let bad = |why: String| {
        ExecError::fatal(
            format!("the Space's result does not have the expected shape: {why}"),
            "the evaluator is not compatible with bcb; check --gradio-endpoint",
        )
    };
    let pair = output.as_array().filter(|a| a.len() == 2).ok_or_else(|| {
        bad(format!(
            "expected [results, pass_at_k], got {}",
            short(output)
        ))
    })?;
    let pass_at_k = pass_at_k_from_json(&pair[1]).map_err(bad)?;
    let results = match (&pair[0], check_gt_only) {
        (_, true) => None,
        (v, false) => Some(
            serde_json::from_value::<EvalResults>(v.clone())
                .map_err(|e| bad(format!("results: {e}")))?,
        ),
    };
    Ok(RemoteResult { results, pass_at_k })
}

fn json_body(resp: Response, what: &str, url: &str) -> Result<Value, ExecError> {
    let status = resp.status();
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        return Err(ExecError::fatal(
            format!("{what}: HTTP {status} from {url}"),
            "the Space is private: set HF_TOKEN to a token with access",
        ));
    }
    if !status.is_success() {
        let body = resp.text().unwrap_or_default();
        return Err(ExecError::fatal(
            format!("{what}: HTTP {status} from {url}: {}", short(&body)),
            "check --gradio-endpoint is a Gradio evaluator Space (open it in a browser)",
        ));
    }
    resp.json().map_err(|e| {
        ExecError::fatal(
            format!("{what}: {url} did not answer JSON: {e}"),
            "check --gradio-endpoint is a Gradio app",
        )
    })
}

/// An error with its causes (reqwest's own message hides the connection error).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
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

    #[test]
    fn output_must_be_results_and_pass_at_k() {
        let ok = json!([{"date": "2026-01-01 00:00", "eval": {}},
            {"pass@1": 1.0, "model": "m", "split": "complete", "subset": "hard", "calibrated": true, "gt_pass_rate": 1.0, "failed_tasks": []}]);
        let r = parse_output(&ok, false).unwrap();
        assert!(r.results.unwrap().eval.is_empty());
        assert!(parse_output(&json!([1]), false)
            .unwrap_err()
            .to_string()
            .contains("expected [results, pass_at_k]"));
    }
}
