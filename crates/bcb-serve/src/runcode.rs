//! SandboxFusion's `POST /run_code` for `language: "python"`: one program run as
//! `python <file>.py` with the request's stdin, in the same per-sample sandbox as the samples
//! (a script job on the server's one engine: no side door), answered in SandboxFusion's
//! `RunCodeResponse` shape. verl's sandbox_fusion reward posts one such request per test case;
//! the `sandbox-fusion` client's `run_code` works unchanged.
//!
//! Semantics as SandboxFusion's: `status` is `Success` when the program finished with return
//! code 0, `Failed` for another return code or the time limit, `SandboxError` when the run
//! could not be observed; `run_result.status` is `Finished` or `TimeLimitExceeded` (then
//! `return_code` is null and the output so far is kept). `run_timeout` (default 10 s) is the
//! program's wall limit; `memory_limit_MB` (-1: the server's cap) may only lower the memory
//! cap; `files` are written into the program's working directory, `fetch_files` read back.
//! Bad input is a 400 naming the field; an executor fault is a 503 with a hint, never a result.

use std::collections::BTreeMap;
use std::path::{Component, Path};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use bcb_execute::{Outcome, ScriptEnd, ScriptInput, Status};
use serde::{Deserialize, Serialize};

use crate::api::json_response;
use crate::backend::{DeliverScript, ScriptJob, ScriptRequest};
use crate::error::ApiError;
use crate::metrics::VerdictKind;
use crate::request::{body, parse};
use crate::run::{self, Admission};
use crate::shed::Clients;
use crate::AppState;

/// SandboxFusion's `RunCodeRequest`.
#[derive(Debug, Deserialize)]
pub struct RunCodeRequest {
    pub code: String,
    pub language: String,
    #[serde(default)]
    pub stdin: Option<String>,
    /// For compiled languages only: accepted and unused for python.
    #[serde(default)]
    pub compile_timeout: Option<f64>,
    #[serde(default)]
    pub run_timeout: Option<f64>,
    #[serde(default, rename = "memory_limit_MB")]
    pub memory_limit_mb: Option<i64>,
    #[serde(default)]
    pub files: BTreeMap<String, Option<String>>,
    #[serde(default)]
    pub fetch_files: Vec<String>,
}

/// SandboxFusion's default `run_timeout` and `compile_timeout`.
const DEFAULT_RUN_TIMEOUT: f64 = 10.0;
const DEFAULT_COMPILE_TIMEOUT: f64 = 10.0;

/// verl's read timeout is `compile_timeout + run_timeout + 10` s; bcb answers (a 504 that verl
/// retries, if the program has not finished) this much before it.
const CLIENT_TIMEOUT_MARGIN: f64 = 1.0;

/// When a request must be answered to beat verl's read timeout, and how long it may wait for
/// room in the queue so that its run still fits (`compile_timeout + 10 - margin`).
fn client_budget(state: &AppState, compile_timeout: f64, run_timeout: f64) -> (Duration, Duration) {
    let max = state.cfg.request_timeout;
    let hold = (compile_timeout + 10.0 - CLIENT_TIMEOUT_MARGIN).max(0.0);
    let deadline = Duration::from_secs_f64(hold + run_timeout).min(max);
    (deadline, Duration::from_secs_f64(hold).min(max))
}

/// SandboxFusion's `RunStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RunStatus {
    Success,
    Failed,
    SandboxError,
}

/// SandboxFusion's `CommandRunStatus` (`Error` is its own failure to run a command: bcb
/// answers those as `SandboxError` or a 503, so it never appears here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CommandRunStatus {
    Finished,
    TimeLimitExceeded,
}

/// SandboxFusion's `CommandRunResult`.
#[derive(Debug, Serialize)]
pub struct CommandRunResult {
    pub status: CommandRunStatus,
    pub execution_time: f64,
    pub return_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// SandboxFusion's `RunCodeResponse`.
#[derive(Debug, Serialize)]
pub struct RunCodeResponse {
    pub status: RunStatus,
    pub message: String,
    /// Always null: python compiles nothing.
    pub compile_result: Option<CommandRunResult>,
    pub run_result: Option<CommandRunResult>,
    pub executor_pod_name: Option<String>,
    pub files: BTreeMap<String, String>,
}

pub async fn run_code(
    State(state): State<Arc<AppState>>,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    let t0 = Instant::now();
    match run_code_inner(&state, raw).await {
        Ok(v) => {
            state.metrics.request(t0.elapsed().as_secs_f64());
            json_response(StatusCode::OK, &v)
        }
        Err(e) => Clients::RunCode.answer(e).into_response(),
    }
}

/// A path the program's working directory holds: relative, no `..`.
fn check_relative(field: &str, path: &str) -> Result<(), ApiError> {
    let inside = !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if inside {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "field `{field}`: `{path}` is not a relative path inside the program's working directory"
    ))
    .hint("name files relative to the working directory, without `..` or a leading `/`"))
}

/// Checks a request and turns it into a script job.
fn script_of(state: &AppState, req: RunCodeRequest) -> Result<ScriptRequest, ApiError> {
    if req.language != "python" {
        return Err(ApiError::bad_request(format!(
            "field `language`: `{}` is not run here: bcb serve runs `python` only",
            req.language
        ))
        .hint("send Python programs, or use a SandboxFusion server for other languages"));
    }
    let max = state.cfg.request_timeout.as_secs_f64();
    let run_timeout = req.run_timeout.unwrap_or(DEFAULT_RUN_TIMEOUT);
    if !(run_timeout.is_finite() && run_timeout > 0.0 && run_timeout < max) {
        return Err(ApiError::bad_request(format!(
            "field `run_timeout`: {run_timeout} is not a number of seconds above 0 and below the server's --request-timeout ({max})"
        )));
    }
    if let Some(t) = req.compile_timeout.filter(|t| !t.is_finite() || *t < 0.0) {
        return Err(ApiError::bad_request(format!(
            "field `compile_timeout`: {t} is not a number of seconds"
        )));
    }
    // SandboxFusion: a limit applies only when above 0 (-1, its default, is none).
    let memory_mb = req.memory_limit_mb.filter(|mb| *mb > 0).map(|mb| mb as u64);
    let mut files = Vec::with_capacity(req.files.len());
    for (path, content) in req.files {
        // As SandboxFusion: a null content, or a name carrying its marker, is skipped.
        let Some(content) = content else { continue };
        if path.contains("IGNORE_THIS_FILE") {
            continue;
        }
        check_relative("files", &path)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(content.trim())
            .map_err(|e| ApiError::bad_request(format!("field `files.{path}`: not base64: {e}")))?;
        files.push((path, bytes));
    }
    for path in &req.fetch_files {
        check_relative("fetch_files", path)?;
    }
    Ok(ScriptRequest {
        code: req.code,
        input: ScriptInput {
            stdin: req.stdin.unwrap_or_default(),
            files,
            fetch_files: req.fetch_files,
            memory_mb,
        },
        run_timeout: Duration::from_secs_f64(run_timeout),
    })
}

/// A script whose result the request still waits for: holds its job and its place in the
/// queue. Dropped before the result is in (the client went away: axum drops the handler), it
/// counts the script cancelled, and dropping the job cancels it if it has not started.
struct Waiting<'a> {
    state: &'a AppState,
    _job: Box<dyn ScriptJob>,
    _admission: Admission,
    answered: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.state.metrics.cancelled(1);
        }
    }
}

async fn run_code_inner(
    state: &Arc<AppState>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<RunCodeResponse, ApiError> {
    let started = Instant::now();
    let req: RunCodeRequest = parse(&body(state, raw)?)?;
    let compile_timeout = req.compile_timeout.unwrap_or(DEFAULT_COMPILE_TIMEOUT);
    let script = script_of(state, req)?;
    let (deadline, hold) = client_budget(state, compile_timeout, script.run_timeout.as_secs_f64());
    let engine = state.engine()?.clone();
    let admission = Admission::wait(state, 1, hold).await?;
    let (result_tx, result_rx) = tokio::sync::oneshot::channel();
    let deliver: DeliverScript = Box::new(move |result| {
        let _ = result_tx.send(result);
    });
    let job = tokio::task::spawn_blocking(move || engine.run_script(script, deliver))
        .await
        .map_err(|_| ApiError::unavailable("the submission thread stopped", 1))?
        .map_err(|e| run::refusal(e, Vec::new()))?;
    let mut waiting = Waiting {
        state,
        _job: job,
        _admission: admission,
        answered: false,
    };
    let deadline = tokio::time::sleep_until((started + deadline).into());
    let result = tokio::select! {
        result = result_rx => result,
        () = deadline => return Err(run::deadline(1)), // `waiting` counts it cancelled
    };
    waiting.answered = true;
    let Ok(result) = result else {
        // The job was dropped without a result: cancelled, or the session stopped.
        return Err(
            ApiError::unavailable("the script got no result: the session stopped", 5)
                .hint("retry; if it persists, see the server's log"),
        );
    };
    let kind = match &result {
        Ok(o) => match o.status {
            Status::Pass => VerdictKind::Pass,
            Status::Fail => VerdictKind::Fail,
            Status::Timeout => VerdictKind::Timeout,
        },
        Err(_) => VerdictKind::Error,
    };
    state.metrics.sample(started.elapsed().as_secs_f64(), kind);
    match result {
        Ok(outcome) => Ok(response(outcome)),
        Err(error) => Err(run::fault(bcb_eval::SCRIPT_TASK_ID.into(), &error)),
    }
}

/// An outcome of a script job in SandboxFusion's shape.
fn response(outcome: Outcome) -> RunCodeResponse {
    let Some(run) = outcome.script else {
        // The run could not be observed (its runner died): SandboxFusion's SandboxError.
        let why = outcome
            .remark
            .map(|r| r.to_string())
            .or_else(|| outcome.details.module_error().map(str::to_string))
            .unwrap_or_else(|| "no result".into());
        return RunCodeResponse {
            status: RunStatus::SandboxError,
            message: format!("bcb: the program's run could not be observed: {why}"),
            compile_result: None,
            run_result: None,
            executor_pod_name: None,
            files: BTreeMap::new(),
        };
    };
    let status = match (run.end, run.return_code) {
        (ScriptEnd::Finished, Some(0)) => RunStatus::Success,
        _ => RunStatus::Failed,
    };
    RunCodeResponse {
        status,
        message: String::new(),
        compile_result: None,
        run_result: Some(CommandRunResult {
            status: match run.end {
                ScriptEnd::Finished => CommandRunStatus::Finished,
                ScriptEnd::TimeLimitExceeded => CommandRunStatus::TimeLimitExceeded,
            },
            execution_time: run.execution_time,
            return_code: run.return_code,
            stdout: run.stdout,
            stderr: run.stderr,
        }),
        executor_pod_name: None,
        files: run.files,
    }
}

#[cfg(test)]
mod tests {
    use super::check_relative;

    #[test]
    fn only_paths_inside_the_working_directory_pass() {
        for ok in ["a.txt", "data/in.txt", "./x"] {
            assert!(check_relative("files", ok).is_ok(), "{ok}");
        }
        for bad in ["", "/etc/passwd", "../x", "a/../../b"] {
            let e = check_relative("files", bad).unwrap_err();
            assert!(e.error.starts_with("field `files`"), "{bad}: {}", e.error);
        }
    }
}
