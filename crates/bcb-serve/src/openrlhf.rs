//! OpenRLHF's remote reward model (`--remote_rm_url http://host:8765/openrlhf`):
//! `{"query": [...], "prompts": [...], "labels": [...]}` -> `{"rewards", "scores",
//! "extra_logs"}`. A label names the task (`BigCodeBench/13`, or a JSON object with
//! `task_id`); the answer is the query with its prompt removed, its code extracted as
//! `bcb sanitize` does (think blocks dropped); the reward is 1.0 for `pass`, else 0.0.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bcb_execute::Status;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::{body, json_response, parse};
use crate::backend::{Code, SubmitOptions, SubmitSample};
use crate::catalog::Catalog;
use crate::error::ApiError;
use crate::run;
use crate::AppState;

#[derive(Debug, Deserialize)]
pub struct RewardRequest {
    pub query: Vec<String>,
    #[serde(default)]
    pub prompts: Vec<String>,
    #[serde(default)]
    pub labels: Vec<Value>,
}

fn label_task(label: &Value) -> Option<String> {
    match label {
        Value::String(s) => {
            if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(s) {
                return o.get("task_id")?.as_str().map(Catalog::normalize_id);
            }
            Some(Catalog::normalize_id(s))
        }
        Value::Number(n) => Some(Catalog::normalize_id(&n.to_string())),
        Value::Object(o) => o.get("task_id")?.as_str().map(Catalog::normalize_id),
        _ => None,
    }
}

pub async fn reward(
    State(state): State<Arc<AppState>>,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    match reward_inner(&state, raw).await {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => e.into_response(),
    }
}

async fn reward_inner(
    state: &Arc<AppState>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Value, ApiError> {
    let req: RewardRequest = parse(&body(state, raw)?)?;
    let n = req.query.len();
    if n == 0 {
        return Err(ApiError::bad_request("field `query`: empty"));
    }
    if req.labels.len() != n {
        return Err(ApiError::bad_request(format!(
            "field `labels`: {} label(s) for {n} quer(y/ies); each label names the task (e.g. \"BigCodeBench/13\")",
            req.labels.len()
        )));
    }
    if !req.prompts.is_empty() && req.prompts.len() != n {
        return Err(ApiError::bad_request(format!(
            "field `prompts`: {} prompt(s) for {n} quer(y/ies)",
            req.prompts.len()
        )));
    }
    let mut samples = Vec::with_capacity(n);
    for (i, q) in req.query.iter().enumerate() {
        let task_id = label_task(&req.labels[i]).ok_or_else(|| {
            ApiError::bad_request(format!(
                "labels[{i}]: expected a task id such as \"BigCodeBench/13\""
            ))
        })?;
        let answer = match req.prompts.get(i) {
            Some(p) => q.strip_prefix(p.as_str()).unwrap_or(q),
            None => q,
        };
        let entry = state.catalog.get(&task_id).map(|t| t.entry_point.clone());
        let code = bcb_sanitize::sanitize(&bcb_sanitize::strip_think(answer), entry.as_deref());
        samples.push(SubmitSample {
            task_id,
            code: Code::Solution(code),
        });
    }
    let ids: Vec<&str> = samples.iter().map(|s| s.task_id.as_str()).collect();
    state.catalog.check(None, None, &ids)?;
    let rx = run::start(
        state,
        samples,
        SubmitOptions {
            calibrated: state.cfg.calibrated,
        },
        state.cfg.request_timeout,
    )
    .await?;
    let results = run::collect(rx, n).await?;
    let rewards: Vec<f64> = results.iter().map(|r| r.reward).collect();
    let frac: Vec<f64> = results
        .iter()
        .map(|r| match r.tests_total {
            0 => r.reward,
            t => r.tests_passed as f64 / t as f64,
        })
        .collect();
    let timeout: Vec<f64> = results
        .iter()
        .map(|r| f64::from(u8::from(r.status == Status::Timeout)))
        .collect();
    Ok(json!({
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {
            "tests_passed_frac": frac,
            "timeout": timeout,
        },
    }))
}
