//! The bridge from async handlers to the engine's submissions: admission against the bounded
//! queue, one task per submission forwarding verdicts in completion order as the engine pushes
//! them, cancellation when the client goes away (the receiver is dropped) or the deadline
//! passes. Nothing polls: a request waiting for its verdicts costs no CPU, however many wait.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bcb_eval::Origin;
use bcb_execute::{ExecError, Status};
use serde::Serialize;
use tokio::sync::mpsc;

use crate::backend::{Deliver, SubmitError, SubmitOptions, SubmitSample, Verdict};
use crate::error::ApiError;
use crate::metrics::VerdictKind;
use crate::AppState;

/// One sample's answer in the native API.
#[derive(Debug, Clone, Serialize)]
pub struct SampleResult {
    /// Position of the sample in the request.
    pub index: usize,
    pub task_id: String,
    pub status: Status,
    /// Upstream's details: failing test -> traceback, or `ALL` -> module error.
    pub details: bcb_execute::Details,
    /// 1.0 for `pass`, else 0.0 (BigCodeBench scores a task by its whole suite).
    pub reward: f64,
    pub tests_passed: usize,
    pub tests_total: usize,
    /// `cached`, `duplicate` (dedup), `tamper_refused`, and the kind of the executor's remark
    /// (`killed_at_deadline`, `killed_by_memory_limit`, `early_exit`, ...) when any.
    pub flags: Vec<String>,
    pub test_secs: Option<f64>,
    pub cpu_secs: Option<f64>,
}

/// What a submission stream carries.
#[derive(Debug)]
pub enum Item {
    Verdict(SampleResult),
    /// The sample got no verdict: an executor fault (never a verdict).
    Fault {
        index: usize,
        task_id: String,
        error: ExecError,
    },
    /// The request's deadline passed; the rest is cancelled.
    Deadline {
        missing: usize,
    },
}

/// Releases admitted samples from the bounded queue as they are answered or dropped.
pub(crate) struct Admission {
    state: Arc<AppState>,
    held: usize,
}

impl Admission {
    /// Admits `n` samples, waiting up to `hold` for room when the queue is full (woken as
    /// admitted samples leave it: nothing polls); past that, the 429 `take` gives.
    pub(crate) async fn wait(
        state: &Arc<AppState>,
        n: usize,
        hold: Duration,
    ) -> Result<Admission, ApiError> {
        let until = tokio::time::Instant::now() + hold;
        loop {
            let room = state.room.notified();
            tokio::pin!(room);
            // Registered before the attempt, so a release between the two is not missed.
            room.as_mut().enable();
            if let Ok(a) = Admission::try_take(state, n)? {
                return Ok(a);
            }
            if tokio::time::timeout_at(until, room).await.is_err() {
                return Admission::take(state, n);
            }
        }
    }

    /// Admits `n` samples now, or answers 429 with `Retry-After` (413 past the queue's size).
    pub(crate) fn take(state: &Arc<AppState>, n: usize) -> Result<Admission, ApiError> {
        Admission::try_take(state, n)?.map_err(|cur| {
            state.metrics.busy();
            let limit = state.cfg.queue_limit;
            // A rough wait: the queue drains at about the workers' rate; say 1-30 s.
            let wait = (cur / 64).clamp(1, 30) as u64;
            let mut e = ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                format!("queue full: {cur} samples waiting (limit {limit})"),
            )
            .hint("retry after the Retry-After seconds, or send to another replica");
            e.retry_after = Some(wait);
            e
        })
    }

    /// `Ok(Err(waiting))` when the queue has no room for `n` now.
    fn try_take(state: &Arc<AppState>, n: usize) -> Result<Result<Admission, usize>, ApiError> {
        let limit = state.cfg.queue_limit;
        if n > limit {
            return Err(ApiError::new(
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                format!("{n} samples in one request; this server admits at most {limit} at once"),
            )
            .hint("split the request into smaller ones"));
        }
        let res = state
            .outstanding
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |cur| {
                (cur + n <= limit).then_some(cur + n)
            });
        Ok(res.map(|_| Admission {
            state: state.clone(),
            held: n,
        }))
    }

    fn release(&mut self, n: usize) {
        let n = n.min(self.held);
        self.held -= n;
        self.state.outstanding.fetch_sub(n, Ordering::SeqCst);
        if n > 0 {
            self.state.room.notify_waiters();
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let n = self.held;
        self.release(n);
    }
}

/// Submits `samples` and returns a channel of their answers in completion order. Errors
/// (not ready, draining, queue full after waiting `hold` for room, refused submission) come
/// before anything runs.
pub async fn start(
    state: &Arc<AppState>,
    samples: Vec<SubmitSample>,
    opts: SubmitOptions,
    deadline: Duration,
    hold: Duration,
) -> Result<mpsc::Receiver<Item>, ApiError> {
    let engine = state.engine()?.clone();
    let n = samples.len();
    // A request never waits for room past its own deadline.
    let mut admission = Admission::wait(state, n, hold.min(deadline)).await?;
    let task_ids: Vec<String> = samples.iter().map(|s| s.task_id.clone()).collect();
    let (answers_tx, mut answers) = mpsc::unbounded_channel();
    let deliver: Deliver = Box::new(move |index, result| {
        let _ = answers_tx.send((index, result));
    });
    let started = Instant::now();
    // Submitting hashes every program and starts the submission's thread: off the runtime.
    let ids = task_ids.clone();
    let sub = tokio::task::spawn_blocking(move || engine.submit(samples, opts, deliver))
        .await
        .map_err(|_| ApiError::unavailable("the submission thread stopped", 1))?
        .map_err(|e| refusal(e, ids))?;
    let (tx, rx) = mpsc::channel(n.max(1));
    let state = state.clone();
    tokio::spawn(async move {
        let expiry = tokio::time::sleep_until((started + deadline).into());
        tokio::pin!(expiry);
        let mut left = n;
        while left > 0 {
            let (index, result) = tokio::select! {
                answer = answers.recv() => match answer {
                    Some(answer) => answer,
                    None => break, // every answer delivered or dropped (the session stopped)
                },
                () = tx.closed() => {
                    state.metrics.cancelled(left);
                    tracing::debug!(left, "client went away: cancelling its jobs");
                    break;
                }
                () = &mut expiry => {
                    state.metrics.cancelled(left);
                    let _ = tx.send(Item::Deadline { missing: left }).await;
                    break;
                }
            };
            left = left.saturating_sub(1);
            admission.release(1);
            let task_id = task_ids.get(index).cloned().unwrap_or_default();
            let secs = started.elapsed().as_secs_f64();
            let item = match result {
                Ok(v) => {
                    let r = answer(&state, index, task_id, v);
                    state.metrics.sample(secs, kind(r.status));
                    Item::Verdict(r)
                }
                Err(error) => {
                    state.metrics.sample(secs, VerdictKind::Error);
                    Item::Fault {
                        index,
                        task_id,
                        error,
                    }
                }
            };
            if tx.send(item).await.is_err() {
                state.metrics.cancelled(left);
                break;
            }
        }
        drop(sub); // cancels the jobs not started
        admission.release(left);
    });
    Ok(rx)
}

/// A submission the engine refused before anything ran, as the client hears it.
pub(crate) fn refusal(e: SubmitError, task_ids: Vec<String>) -> ApiError {
    match e {
        SubmitError::UnknownTasks(ids) => {
            ApiError::bad_request(format!("unknown task id(s): {}", ids.join(", ")))
                .with_task_ids(ids)
        }
        SubmitError::Closed => ApiError::unavailable("the server is shutting down", 1)
            .hint("send the request to another replica"),
        SubmitError::Other { message, hint } => {
            let e = ApiError::unavailable(message, 5).hint(hint);
            match task_ids.is_empty() {
                true => e,
                false => e.with_task_ids(task_ids),
            }
        }
    }
}

fn kind(s: Status) -> VerdictKind {
    match s {
        Status::Pass => VerdictKind::Pass,
        Status::Fail => VerdictKind::Fail,
        Status::Timeout => VerdictKind::Timeout,
    }
}

/// A verdict in the native API's shape. `tests_passed` is derived: the harness reports the
/// failing tests only, so it is `tests_total` minus the failures named in the details, and 0
/// when the module itself failed or the suite timed out.
fn answer(state: &AppState, index: usize, task_id: String, v: Verdict) -> SampleResult {
    let o = v.outcome;
    let total = state.catalog.tests_total(&task_id);
    let passed = match o.status {
        Status::Pass => total,
        Status::Timeout => 0,
        Status::Fail if o.details.module_error().is_some() => 0,
        Status::Fail => total.saturating_sub(o.details.tests().count()),
    };
    let mut flags = Vec::new();
    match v.origin {
        Origin::Cached => {
            state.metrics.cache_hit();
            flags.push("cached".to_string());
        }
        Origin::Duplicate => {
            state.metrics.dedup_hit();
            flags.push("duplicate".to_string());
        }
        Origin::Refused => flags.push("tamper_refused".to_string()),
        Origin::Executed => {}
    }
    // The executor's remark (killed at the deadline, memory limit, early exit...) by its kind.
    if let Some(r) = &o.remark {
        flags.push(r.kind().to_string());
    }
    SampleResult {
        index,
        task_id,
        status: o.status,
        reward: if o.status.is_pass() { 1.0 } else { 0.0 },
        details: o.details,
        tests_passed: passed,
        tests_total: total,
        flags,
        test_secs: o.test_secs,
        cpu_secs: o.cpu_secs,
    }
}

/// Every answer of a submission, in request order; an executor fault or the deadline ends it
/// with an error (the remaining jobs are cancelled when the receiver is dropped).
pub async fn collect(
    mut rx: mpsc::Receiver<Item>,
    n: usize,
) -> Result<Vec<SampleResult>, ApiError> {
    let mut out: Vec<Option<SampleResult>> = vec![None; n];
    while let Some(item) = rx.recv().await {
        match item {
            Item::Verdict(r) => {
                let i = r.index;
                if i < n {
                    out[i] = Some(r);
                }
            }
            Item::Fault { task_id, error, .. } => return Err(fault(task_id, &error)),
            Item::Deadline { missing } => return Err(deadline(missing)),
        }
    }
    let missing = out.iter().filter(|r| r.is_none()).count();
    if missing > 0 {
        return Err(ApiError::unavailable(
            format!("{missing} sample(s) got no verdict: the session stopped"),
            5,
        )
        .hint("retry; if it persists, see the server's log"));
    }
    Ok(out.into_iter().flatten().collect())
}

/// An executor fault: 503 with what to do, never a verdict.
pub fn fault(task_id: String, error: &ExecError) -> ApiError {
    let hint = error.hint().unwrap_or(
        "a transient executor fault (worker lost, harness crash): retry the request; if it persists, see the server's log",
    );
    ApiError::unavailable(format!("{task_id}: no verdict: {error}"), 5)
        .hint(hint)
        .with_task_ids(vec![task_id])
}

pub fn deadline(missing: usize) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::GATEWAY_TIMEOUT,
        format!("the request's deadline passed with {missing} sample(s) unanswered; they were cancelled"),
    )
    .hint("raise `limits.deadline_secs` (up to the server's --request-timeout) or send fewer samples per request")
}
