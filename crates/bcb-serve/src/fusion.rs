//! SandboxFusion's dataset API as far as BigCodeBench needs it (`/submit` with dataset
//! `bigcodebench`, `/get_prompts`, `/list_ids`, `/list_datasets`), so its `sandbox-fusion`
//! client and the RL loops built on it work unchanged (its `/run_code` is `runcode`). Verdicts are bcb's: the whole unittest
//! suite under upstream's rules, calibrated by default; one `EvalTestCase` for the suite, as
//! SandboxFusion reports BigCodeBench.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use bcb_dataset::{Split, Subset};
use bcb_execute::Status;
use bcb_sanitize::{AnswerText, ReadAs};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::{json_response, reply};
use crate::backend::{SampleBody, SubmitOptions, SubmitSample};
use crate::catalog::Catalog;
use crate::error::ApiError;
use crate::request::{body, parse, parse_split, parse_subset};
use crate::run;
use crate::shed::Clients;
use crate::AppState;

/// Dataset names accepted (SandboxFusion registers BigCodeBench as `bigcodebench`).
const DATASETS: [&str; 2] = ["bigcodebench", "bigcodebench_hard"];

#[derive(Debug, Deserialize, Default)]
pub struct TestConfig {
    #[serde(default)]
    pub provided_data: Option<Value>,
    #[serde(default)]
    pub extra: Option<serde_json::Map<String, Value>>,
}

impl TestConfig {
    fn extra_str(&self, key: &str) -> Option<&str> {
        self.extra.as_ref()?.get(key)?.as_str()
    }

    fn extra_bool(&self, key: &str) -> Option<bool> {
        self.extra.as_ref()?.get(key)?.as_bool()
    }
}

#[derive(Debug, Deserialize)]
pub struct DatasetRequest {
    pub dataset: String,
    #[serde(default)]
    pub config: TestConfig,
    #[serde(default)]
    pub offset: Option<usize>,
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize)]
pub struct SubmitRequest {
    pub dataset: String,
    pub id: Value,
    pub completion: String,
    #[serde(default)]
    pub config: TestConfig,
}

/// The subset a dataset name and config select (`bigcodebench_hard` or `extra.subset`).
fn subset_of(dataset: &str, config: &TestConfig) -> Result<Option<Subset>, ApiError> {
    if !DATASETS.contains(&dataset) {
        return Err(ApiError::bad_request(format!(
            "field `dataset`: `{dataset}` is not served here (only {})",
            DATASETS.join(", ")
        )));
    }
    if dataset == "bigcodebench_hard" {
        return Ok(Some(Subset::Hard));
    }
    parse_subset(config.extra_str("subset"))
}

fn split_of(state: &AppState, config: &TestConfig) -> Result<Split, ApiError> {
    Ok(parse_split(config.extra_str("split"))?.unwrap_or(state.catalog.default_split))
}

fn id_text(id: &Value) -> Result<String, ApiError> {
    match id {
        Value::String(s) => Ok(Catalog::normalize_id(s)),
        Value::Number(n) => Ok(Catalog::normalize_id(&n.to_string())),
        other => Err(ApiError::bad_request(format!(
            "field `id`: expected a task id such as \"BigCodeBench/13\" or 13, got {other}"
        ))),
    }
}

pub async fn list_datasets() -> Response {
    json_response(StatusCode::OK, &json!(DATASETS))
}

/// A dataset request of `/list_ids` or `/get_prompts`, and the subset it names.
fn dataset_request(
    state: &AppState,
    raw: Result<Bytes, BytesRejection>,
) -> Result<(DatasetRequest, Subset), ApiError> {
    let req: DatasetRequest = parse(&body(state, raw)?)?;
    let subset = subset_of(&req.dataset, &req.config)?;
    let subset = state.catalog.check(None, subset, &[])?;
    Ok((req, subset))
}

pub async fn list_ids(
    State(state): State<Arc<AppState>>,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    let run = || -> Result<Value, ApiError> {
        let (_, subset) = dataset_request(&state, raw)?;
        Ok(json!(state
            .catalog
            .tasks(subset)
            .map(|t| t.task_id.as_str())
            .collect::<Vec<_>>()))
    };
    reply(Clients::Fusion, run())
}

pub async fn get_prompts(
    State(state): State<Arc<AppState>>,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    let run = || -> Result<Value, ApiError> {
        let (req, subset) = dataset_request(&state, raw)?;
        let split = split_of(&state, &req.config)?;
        let prompts: Vec<Value> = state
            .catalog
            .tasks(subset)
            .skip(req.offset.unwrap_or(0))
            .take(req.limit.unwrap_or(usize::MAX))
            .map(|t| {
                json!({
                    "id": t.task_id,
                    "prompt": t.prompt(split),
                    "labels": {
                        "task_id": t.task_id,
                        "entry_point": t.entry_point,
                        "code_prompt": t.code_prompt,
                        "split": split.as_str(),
                    },
                })
            })
            .collect();
        Ok(Value::Array(prompts))
    };
    reply(Clients::Fusion, run())
}

/// `provided_data`: a dataset row sent by the client. It may name the task (`task_id`); a
/// `test`, `complete_prompt` or `entry_point` it carries must be the served task's (bcb runs
/// the dataset's own tests, never a client's), else 400 naming the field.
fn check_provided(
    state: &AppState,
    task_id: &str,
    provided: Option<&Value>,
) -> Result<String, ApiError> {
    let Some(row) = provided else {
        return Ok(task_id.to_string());
    };
    let row = match row {
        Value::Array(rows) => rows
            .iter()
            .find(|r| r.get("task_id").and_then(Value::as_str) == Some(task_id))
            .or_else(|| rows.first())
            .ok_or_else(|| ApiError::bad_request("field `config.provided_data`: empty list"))?,
        other => other,
    };
    let id = row
        .get("task_id")
        .and_then(Value::as_str)
        .map(Catalog::normalize_id)
        .unwrap_or_else(|| task_id.to_string());
    if let Some(task) = state.catalog.get(&id) {
        for (field, ours) in [
            ("test", &task.test),
            ("complete_prompt", &task.complete_prompt),
            ("entry_point", &task.entry_point),
        ] {
            if let Some(theirs) = row.get(field).and_then(Value::as_str) {
                if theirs != ours {
                    return Err(ApiError::bad_request(format!(
                        "field `config.provided_data.{field}` differs from {id}'s in {} {}",
                        state.catalog.subset(),
                        state.catalog.version()
                    ))
                    .hint("bcb runs the dataset's own tests: drop provided_data, or send the row of the served version"));
                }
            }
        }
    }
    Ok(id)
}

pub async fn submit(
    State(state): State<Arc<AppState>>,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    reply(Clients::Fusion, submit_inner(&state, raw).await)
}

async fn submit_inner(
    state: &Arc<AppState>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Value, ApiError> {
    let req: SubmitRequest = parse(&body(state, raw)?)?;
    let subset = subset_of(&req.dataset, &req.config)?;
    let id = id_text(&req.id)?;
    let task_id = check_provided(state, &id, req.config.provided_data.as_ref())?;
    state.catalog.check(None, subset, &[task_id.as_str()])?;
    let task = state
        .catalog
        .get(&task_id)
        .ok_or_else(|| ApiError::bad_request(format!("unknown task id: {task_id}")))?;
    // A chat answer (`extra.is_freeform`) or a continuation of the prompt (SandboxFusion's
    // default): either is read by the one rule (`Catalog::read_answer`), which tells a whole
    // answer from a continuation by whether its own code defines the entry point.
    let freeform = req.config.extra_bool("is_freeform").unwrap_or(false);
    let read = state
        .catalog
        .read_answer(&task_id, AnswerText::Raw(&req.completion))?;
    let extracted_type = match read.read_as {
        ReadAs::Solution if req.completion.contains("```") => "fenced",
        ReadAs::Solution => "heuristic",
        ReadAs::Completion if freeform => "heuristic",
        ReadAs::Completion => "empty",
    };
    let (extracted, full_code) = match read.read_as {
        ReadAs::Solution => (read.code.clone(), read.code.clone()),
        ReadAs::Completion => (req.completion.clone(), read.code.clone()),
    };
    let code = SampleBody::Solution(read.code);
    let test_code = task.test.clone();
    let calibrated = req
        .config
        .extra_bool("calibrated")
        .unwrap_or(state.cfg.calibrated);
    let rx = run::start(
        state,
        vec![SubmitSample {
            task_id: task_id.clone(),
            body: code,
        }],
        SubmitOptions { calibrated },
        state.cfg.request_timeout,
        Clients::Fusion.hold(),
    )
    .await?;
    let r = run::collect(rx, 1)
        .await?
        .pop()
        .ok_or_else(|| ApiError::unavailable("no verdict", 1))?;
    let details_text: String = r
        .details
        .iter()
        .map(|(k, v)| format!("{k}:\n{v}\n"))
        .collect();
    let passed = r.status == Status::Pass;
    let exec_info = json!({
        "status": if passed { "Success" } else { "Failed" },
        "message": "",
        "compile_result": null,
        "run_result": {
            "status": if r.status == Status::Timeout { "TimeLimitExceeded" } else { "Finished" },
            "execution_time": r.test_secs,
            "return_code": if passed { 0 } else { 1 },
            "stdout": "",
            "stderr": details_text,
        },
        "executor_pod_name": null,
        "files": {},
    });
    Ok(json!({
        "id": req.id,
        "accepted": passed,
        "extracted_code": extracted,
        "full_code": full_code,
        "test_code": test_code,
        "tests": [{
            "passed": passed,
            "exec_info": exec_info,
            "test_info": {
                "status": r.status,
                "details": r.details,
                "tests_passed": r.tests_passed,
                "tests_total": r.tests_total,
            },
        }],
        "extracted_type": extracted_type,
        "extra": {
            "task_id": task_id,
            "status": r.status,
            "reward": r.reward,
            "flags": r.flags,
            "cpu_secs": r.cpu_secs,
        },
    }))
}
