//! OpenRLHF's remote reward model (`--remote_rm_url http://host:8765/openrlhf`):
//! `{"query": [...], "prompts": [...], "labels": [...]}` -> `{"rewards", "scores",
//! "extra_logs"}`. A label names the task (`BigCodeBench/13`, or a JSON object with
//! `task_id`); the answer is the query with its prompt removed, read as every endpoint reads
//! one (`Catalog::read_answer`: a whole answer, or a continuation of the task's prompt); the
//! reward is 1.0 for `pass`, else 0.0. `extra_logs` (lists of numbers, one per query, which
//! OpenRLHF logs) carry the partial credit (`tests_passed_frac`, `tests_passed`,
//! `tests_total`), `timeout`, and the hack flags (`hack`, `tamper_refused`, `early_exit`,
//! `integrity`: 1.0 when set).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::Response;
use bcb_execute::Status;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::reply;
use crate::backend::{SampleBody, SubmitOptions, SubmitSample};
use crate::catalog::Catalog;
use crate::error::ApiError;
use crate::request::{body, parse};
use crate::run;
use crate::shed::Clients;
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
    reply(Clients::OpenRlhf, reward_inner(&state, raw).await)
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
        samples.push(SubmitSample {
            task_id,
            body: SampleBody::Solution(answer.to_string()),
        });
    }
    let ids: Vec<&str> = samples.iter().map(|s| s.task_id.as_str()).collect();
    state.catalog.check(None, None, &ids)?;
    state.catalog.read_answers(&mut samples)?;
    let rx = run::start(
        state,
        samples,
        SubmitOptions {
            calibrated: state.cfg.calibrated,
        },
        state.cfg.request_timeout,
        Clients::OpenRlhf.hold(),
    )
    .await?;
    let results = run::collect(rx, n).await?;
    let rewards: Vec<f64> = results.iter().map(|r| r.reward).collect();
    let per =
        |f: &dyn Fn(&run::SampleResult) -> f64| -> Vec<f64> { results.iter().map(f).collect() };
    let flagged = |kinds: &'static [&'static str]| {
        per(&move |r| {
            f64::from(u8::from(
                r.flags.iter().any(|f| kinds.contains(&f.as_str())),
            ))
        })
    };
    Ok(json!({
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {
            "tests_passed_frac": per(&|r| match r.tests_total {
                0 => r.reward,
                t => r.tests_passed as f64 / t as f64,
            }),
            "tests_passed": per(&|r| r.tests_passed as f64),
            "tests_total": per(&|r| r.tests_total as f64),
            "timeout": per(&|r| f64::from(u8::from(r.status == Status::Timeout))),
            "hack": flagged(&HACK_FLAGS),
            "tamper_refused": flagged(&HACK_FLAGS[..1]),
            "early_exit": flagged(&HACK_FLAGS[1..2]),
            "integrity": flagged(&HACK_FLAGS[2..]),
        },
    }))
}

/// The result flags that mark a reward hack: the tamper scan refused the program, it ended
/// its own process before the tests reported, or its report failed the integrity check.
const HACK_FLAGS: [&str; 3] = ["tamper_refused", "early_exit", "integrity"];
