//! What a request carries and how its parts are read: the native request's shapes, the body
//! within the server's limit, JSON with the failing field named, split, subset and deadline.
//! Every endpoint's handler reads its request through these.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use bcb_dataset::{Split, Subset};
use serde::Deserialize;

use crate::error::ApiError;
use crate::AppState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluateRequest {
    pub samples: Vec<SampleIn>,
    #[serde(default)]
    pub split: Option<String>,
    #[serde(default)]
    pub subset: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub calibrated: Option<bool>,
    #[serde(default)]
    pub limits: Option<RequestLimits>,
    /// Samples are raw model answers: read each as `bcb sanitize` reads a samples file's row
    /// (`Catalog::read_answer`: a `solution` is a whole answer or a continuation of the
    /// prompt, whichever defines the entry point; a `completion` continues the prompt).
    #[serde(default)]
    pub sanitize: bool,
    /// Answer in the original's result-file shape (`{eval_results, pass_at_k}`), with the
    /// original evaluator's inputs (see `upstream.rs`).
    #[serde(default)]
    pub upstream: Option<UpstreamOptions>,
}

/// A sample as samples files carry it; other keys (`raw_solution`, ...) are ignored.
#[derive(Debug, Deserialize)]
pub struct SampleIn {
    pub task_id: String,
    #[serde(default)]
    pub solution: Option<String>,
    #[serde(default)]
    pub completion: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestLimits {
    /// Seconds until unanswered samples are cancelled (at most the server's --request-timeout).
    #[serde(default)]
    pub deadline_secs: Option<f64>,
}

/// The original evaluator's inputs besides `samples`, `split`, `subset` and `calibrated`
/// (the request's own fields). `parallel` is not among them: the server's workers are shared.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamOptions {
    /// The samples file's name: `model` in pass_at_k is taken from it, as upstream does.
    pub file_name: String,
    /// `"1,5,10"`, as `--pass_k` takes it.
    #[serde(default = "default_pass_k")]
    pub pass_k: String,
    /// `selective_evaluate`: `"13,15"` or full ids; empty: every task of the subset.
    #[serde(default)]
    pub ids: String,
    /// Time limits from the 20 s fallback instead of the ground truth; gt_pass_rate 0.0.
    #[serde(default)]
    pub no_gt: bool,
    /// Only the ground truth of the selected tasks (the server's, checked at its start).
    #[serde(default)]
    pub check_gt_only: bool,
    /// The limits the client expects (seconds, MB); each must give the server's limits.
    #[serde(default)]
    pub min_time_limit: Option<f64>,
    #[serde(default)]
    pub max_as_limit: Option<u64>,
    #[serde(default)]
    pub max_data_limit: Option<u64>,
    #[serde(default)]
    pub max_stack_limit: Option<u64>,
}

fn default_pass_k() -> String {
    "1,5,10".into()
}

/// A request body within the server's limit (413 as JSON past it).
pub fn body(state: &AppState, body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    let limit = state.cfg.max_body_bytes;
    match body {
        Ok(b) if b.len() > limit => Err(too_large(limit)),
        Ok(b) => Ok(b),
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(too_large(limit)),
        Err(e) => Err(ApiError::new(
            e.status(),
            format!("cannot read the request body: {e}"),
        )),
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request body larger than {limit} bytes"),
    )
    .hint("send fewer samples per request, or start the server with a larger --max-body-mb")
}

/// Parses a JSON body; the error names the field serde stopped at.
pub fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("invalid request body: {e}")))
}

pub fn parse_subset(s: Option<&str>) -> Result<Option<Subset>, ApiError> {
    s.map(|s| {
        s.parse::<Subset>()
            .map_err(|e| ApiError::bad_request(format!("field `subset`: {e}")))
    })
    .transpose()
}

pub fn parse_split(s: Option<&str>) -> Result<Option<Split>, ApiError> {
    s.map(|s| {
        s.parse::<Split>()
            .map_err(|e| ApiError::bad_request(format!("field `split`: {e}")))
    })
    .transpose()
}

pub fn deadline_of(state: &AppState, limits: Option<&RequestLimits>) -> Result<Duration, ApiError> {
    let max = state.cfg.request_timeout;
    match limits.and_then(|l| l.deadline_secs) {
        None => Ok(max),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s).min(max)),
        Some(s) => Err(ApiError::bad_request(format!(
            "field `limits.deadline_secs`: {s} is not a positive number of seconds"
        ))),
    }
}
