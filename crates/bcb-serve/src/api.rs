//! The native API: `/v1/evaluate` (JSON or NDJSON), `/v1/tasks`, health, metrics, OpenAPI.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::backend::{SampleBody, SubmitOptions, SubmitSample};
use crate::catalog::Catalog;
use crate::error::ApiError;
use crate::request::{body, deadline_of, parse, parse_split, parse_subset, EvaluateRequest};
use crate::run::{self, Item};
use crate::shed::Clients;
use crate::AppState;

const OPENAPI: &str = include_str!("openapi.json");

/// Checks a native request and turns it into a submission.
fn samples_of(state: &AppState, req: &EvaluateRequest) -> Result<Vec<SubmitSample>, ApiError> {
    if req.samples.is_empty() {
        return Err(ApiError::bad_request("field `samples`: empty"));
    }
    parse_split(req.split.as_deref())?;
    let subset = parse_subset(req.subset.as_deref())?;
    let mut out = Vec::with_capacity(req.samples.len());
    for (i, s) in req.samples.iter().enumerate() {
        let task_id = Catalog::normalize_id(&s.task_id);
        let code = match (&s.solution, &s.completion) {
            (Some(c), None) => SampleBody::Solution(c.clone()),
            (None, Some(c)) => SampleBody::Completion(c.clone()),
            (Some(_), Some(_)) => {
                return Err(ApiError::bad_request(format!(
                    "samples[{i}] ({}): both `solution` and `completion`; send one",
                    s.task_id
                )))
            }
            (None, None) => {
                return Err(ApiError::bad_request(format!(
                    "samples[{i}] ({}): missing `solution` or `completion`",
                    s.task_id
                )))
            }
        };
        out.push(SubmitSample {
            task_id,
            body: code,
        });
    }
    let ids: Vec<&str> = out.iter().map(|s| s.task_id.as_str()).collect();
    state.catalog.check(req.version.as_deref(), subset, &ids)?;
    if req.sanitize {
        state.catalog.read_answers(&mut out)?;
    }
    Ok(out)
}

fn wants_ndjson(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/x-ndjson"))
}

pub async fn evaluate(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    let t0 = Instant::now();
    let res = evaluate_inner(&state, &headers, raw).await;
    match res {
        Ok(Answer::Json(v)) => {
            state.metrics.request(t0.elapsed().as_secs_f64());
            json_response(StatusCode::OK, &v)
        }
        Ok(Answer::Stream(r)) => r,
        Err(e) => e.into_response(),
    }
}

enum Answer {
    Json(serde_json::Value),
    Stream(Response),
}

async fn evaluate_inner(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Answer, ApiError> {
    let bytes = body(state, raw)?;
    let req: EvaluateRequest = parse(&bytes)?;
    drop(bytes);
    if let Some(opts) = &req.upstream {
        return crate::upstream::evaluate(state, &req, opts)
            .await
            .map(Answer::Json);
    }
    let samples = samples_of(state, &req)?;
    let n = samples.len();
    let opts = SubmitOptions {
        calibrated: req.calibrated.unwrap_or(state.cfg.calibrated),
    };
    let deadline = deadline_of(state, req.limits.as_ref())?;
    let rx = run::start(state, samples, opts, deadline, Clients::Native.hold()).await?;
    if wants_ndjson(headers) {
        return Ok(Answer::Stream(ndjson(state.clone(), rx)));
    }
    let results = run::collect(rx, n).await?;
    let count = |s: bcb_execute::Status| results.iter().filter(|r| r.status == s).count();
    let summary = json!({
        "samples": n,
        "pass": count(bcb_execute::Status::Pass),
        "fail": count(bcb_execute::Status::Fail),
        "timeout": count(bcb_execute::Status::Timeout),
        "mean_reward": results.iter().map(|r| r.reward).sum::<f64>() / n as f64,
    });
    Ok(Answer::Json(
        json!({ "results": results, "summary": summary }),
    ))
}

/// NDJSON in completion order: one result object a line; an executor fault is a line
/// `{"index", "task_id", "error", "hint"}` (never a status); a passed deadline a last line
/// `{"error", "hint"}`. Dropping the body (the client went away) cancels the rest.
fn ndjson(state: Arc<AppState>, rx: tokio::sync::mpsc::Receiver<Item>) -> Response {
    let t0 = Instant::now();
    let stream = futures::stream::unfold((rx, state, t0), |(mut rx, state, t0)| async move {
        let item = match rx.recv().await {
            Some(item) => item,
            None => {
                state.metrics.request(t0.elapsed().as_secs_f64());
                return None;
            }
        };
        let mut line = match item {
            Item::Verdict(r) => serde_json::to_vec(&r).unwrap_or_default(),
            Item::Fault {
                index,
                task_id,
                error,
            } => {
                let e = run::fault(task_id.clone(), &error);
                serde_json::to_vec(
                    &json!({"index": index, "task_id": task_id, "error": e.error, "hint": e.hint}),
                )
                .unwrap_or_default()
            }
            Item::Deadline { missing } => {
                let e = run::deadline(missing);
                serde_json::to_vec(&json!({"error": e.error, "hint": e.hint})).unwrap_or_default()
            }
        };
        line.push(b'\n');
        Some((Ok::<_, std::io::Error>(Bytes::from(line)), (rx, state, t0)))
    });
    let mut res = Response::new(Body::from_stream(stream));
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    res
}

/// A handler's answer: 200 with `res`'s JSON, or its error as `clients` expect it.
pub fn reply(clients: Clients, res: Result<impl serde::Serialize, ApiError>) -> Response {
    match res {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => clients.answer(e).into_response(),
    }
}

pub fn json_response(status: StatusCode, v: &impl serde::Serialize) -> Response {
    let mut res = (status, serde_json::to_vec(v).unwrap_or_default()).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

pub async fn tasks(
    State(state): State<Arc<AppState>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let run = || -> Result<serde_json::Value, ApiError> {
        let split =
            parse_split(q.get("split").map(String::as_str))?.unwrap_or(state.catalog.default_split);
        let subset = parse_subset(q.get("subset").map(String::as_str))?;
        let subset = state.catalog.check(None, subset, &[])?;
        let tasks: Vec<_> = state
            .catalog
            .tasks(subset)
            .map(|t| {
                json!({
                    "task_id": t.task_id,
                    "prompt": t.prompt(split),
                    "entry_point": t.entry_point,
                    "code_prompt": t.code_prompt,
                    "libs": t.lib_names(),
                    "tests_total": state.catalog.tests_total(&t.task_id),
                })
            })
            .collect();
        Ok(json!({
            "version": state.catalog.version(),
            "subset": subset.as_str(),
            "split": split.as_str(),
            "tasks": tasks,
        }))
    };
    reply(Clients::Native, run())
}

pub async fn healthz() -> Response {
    json_response(StatusCode::OK, &json!({"status": "ok"}))
}

pub async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    if state.is_ready() {
        return json_response(
            StatusCode::OK,
            &json!({"status": "ready", "version": state.catalog.version(), "subset": state.catalog.subset().as_str()}),
        );
    }
    match state.engine() {
        Err(e) => e.into_response(),
        Ok(_) => ApiError::unavailable("not ready", 1).into_response(),
    }
}

pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let stats = state.backend().map(|b| b.stats());
    let text = state
        .metrics
        .render(stats, state.outstanding(), state.is_ready());
    let mut res = text.into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    res
}

pub async fn openapi() -> Response {
    let mut res = OPENAPI.into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}
