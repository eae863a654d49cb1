//! `upstream` on `POST /v1/evaluate`: the original evaluator's inputs in, its two outputs out —
//! `{eval_results, pass_at_k}` as `X_eval_results.json` and `X_pass_at_k.json` hold them, built
//! by the code that writes those files for `bcb evaluate` (bcb-eval's `Samples::from_rows`,
//! `assemble`, `build_report`). The evaluator Space (`space/app.py`) is a thin front over it.
//!
//! The warm server runs every sample under one set of limits, so a request whose limits are
//! not the server's is refused (400 naming the field), never evaluated under other limits.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use bcb_dataset::{Dataset, Subset};
use bcb_eval::limits::{ground_truth_time_limit, sample_time_limit};
use bcb_eval::{assemble, build_report, SampleRun, Samples};
use bcb_execute::Outcome;
use bcb_samples::{Origin, Sample, SampleBody};
use serde_json::{json, Value};

use crate::backend::{EngineContext, SubmitOptions, SubmitSample};
use crate::error::ApiError;
use crate::request::{deadline_of, parse_split, parse_subset, EvaluateRequest, UpstreamOptions};
use crate::run;
use crate::shed::Clients;
use crate::AppState;

/// Answers an `upstream` request: `{"eval_results", "pass_at_k"}`, or for `check_gt_only`
/// `{"eval_results": {}, "pass_at_k": {"gt_pass_rate", "failed_tasks"}}`.
pub async fn evaluate(
    state: &Arc<AppState>,
    req: &EvaluateRequest,
    opts: &UpstreamOptions,
) -> Result<Value, ApiError> {
    let ctx = state.engine()?.context().ok_or_else(|| {
        ApiError::new(
            axum::http::StatusCode::NOT_IMPLEMENTED,
            "this server's engine cannot answer in upstream's result-file shape",
        )
        .hint("drop `upstream` for the native answer")
    })?;
    let split = parse_split(req.split.as_deref())?.unwrap_or(state.catalog.default_split);
    let calibrated = req.calibrated.unwrap_or(state.cfg.calibrated);
    let pass_k = parse_pass_k(&opts.pass_k)?;
    let dataset = selected_tasks(state, req, opts)?;
    check_memory_limits(&ctx, opts)?;
    let min_time = opts.min_time_limit.unwrap_or(ctx.settings.min_time_limit);
    if !(min_time.is_finite() && min_time >= 0.0) {
        return Err(ApiError::bad_request(format!(
            "field `upstream.min_time_limit`: {min_time} is not a number of seconds"
        )));
    }
    if opts.check_gt_only {
        check_gt_time_limit(&ctx, min_time)?;
        let ids = dataset.tasks().iter().map(|t| t.task_id.as_str());
        return Ok(json!({
            "eval_results": {},
            "pass_at_k": {
                "gt_pass_rate": ctx.gt.pass_rate(ids.clone()),
                "failed_tasks": ctx.gt.failed(ids),
            },
        }));
    }
    check_time_limits(&ctx, &dataset, min_time, opts.no_gt)?;
    let samples = samples_of(&dataset, req, opts, calibrated)?;
    // The programs hold the executed code (calibration applied), so they run as they are.
    let submit: Vec<SubmitSample> = samples
        .programs
        .iter()
        .map(|p| SubmitSample {
            task_id: p.id.task_id.clone(),
            body: SampleBody::Solution(p.solution.to_string()),
        })
        .collect();
    let n = submit.len();
    let deadline = deadline_of(state, req.limits.as_ref())?;
    let uncalibrated = SubmitOptions { calibrated: false };
    let rx = run::start(
        state,
        submit,
        uncalibrated,
        deadline,
        Clients::Native.hold(),
    )
    .await?;
    let results = run::collect(rx, n).await?;
    let done: HashMap<_, _> = samples
        .programs
        .iter()
        .zip(results)
        .map(|(p, r)| (p.id.clone(), Outcome::new(r.status, r.details)))
        .collect();
    let results = assemble(&dataset, &samples, &done);
    let run = SampleRun {
        pass_k,
        no_gt: opts.no_gt,
        force: false,
    };
    let report = build_report(
        &dataset, split, calibrated, &samples, &ctx.gt, results, &run,
    );
    Ok(json!({
        "eval_results": report.results,
        "pass_at_k": report.pass_at_k.to_json(),
    }))
}

fn parse_pass_k(text: &str) -> Result<Vec<u64>, ApiError> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s.parse::<u64>() {
            Ok(k) if k >= 1 => Ok(k),
            _ => Err(ApiError::bad_request(format!(
                "field `upstream.pass_k`: `{s}` is not a whole number >= 1"
            ))
            .hint("send comma-separated k values, e.g. \"1,5,10\"")),
        })
        .collect()
}

/// The tasks the run covers, as a dataset named by the request's subset: the subset's tasks,
/// narrowed to `ids` (pass@k and the ground-truth fields are over these).
fn selected_tasks(
    state: &AppState,
    req: &EvaluateRequest,
    opts: &UpstreamOptions,
) -> Result<Dataset, ApiError> {
    let catalog = &state.catalog;
    let asked = parse_subset(req.subset.as_deref())?;
    if asked == Some(Subset::Full) && catalog.subset() == Subset::Hard {
        return Err(ApiError::bad_request(
            "field `subset`: this server holds the hard subset only, not the full set",
        )
        .hint("send `subset: hard`, or use a server started with `bcb serve --subset full`"));
    }
    let subset = catalog.check(req.version.as_deref(), asked, &[])?;
    let ids = bcb_dataset::parse_task_ids(&opts.ids);
    let keep: Vec<String> = if ids.is_empty() {
        catalog.tasks(subset).map(|t| t.task_id.clone()).collect()
    } else {
        let named: Vec<&str> = ids.iter().map(String::as_str).collect();
        catalog
            .check(None, Some(subset), &named)
            .map_err(|e| ApiError {
                error: format!("field `upstream.ids`: {}", e.error),
                ..e
            })?;
        ids
    };
    let mut dataset = catalog.dataset().clone();
    dataset
        .retain_ids(&keep)
        .map_err(|e| ApiError::bad_request(format!("field `upstream.ids`: {e}")))?;
    dataset.subset = subset;
    Ok(dataset)
}

/// RLIMIT_AS / DATA / STACK the client expects must be the server's.
fn check_memory_limits(ctx: &EngineContext, opts: &UpstreamOptions) -> Result<(), ApiError> {
    let limits = &ctx.settings.limits;
    let pairs = [
        ("max_as_limit", opts.max_as_limit, limits.max_as_mb),
        ("max_data_limit", opts.max_data_limit, limits.max_data_mb),
        ("max_stack_limit", opts.max_stack_limit, limits.max_stack_mb),
    ];
    for (field, asked, have) in pairs {
        if let Some(asked) = asked.filter(|&a| a != have) {
            return Err(other_limits(format!(
                "field `upstream.{field}`: this server runs every sample with {field} {have} MB, not {asked} MB"
            )));
        }
    }
    Ok(())
}

fn other_limits(error: String) -> ApiError {
    ApiError::bad_request(error).hint(
        "send the server's value (upstream's default), start the server with that limit (`bcb serve --max-as-limit MB --max-data-limit MB --max-stack-limit MB --min-time-limit S`), or evaluate with other limits locally: bcb evaluate --execution local",
    )
}

/// A canonical solution's limit depends on `min_time_limit` alone; the server checked them
/// at start under its own.
fn check_gt_time_limit(ctx: &EngineContext, min_time: f64) -> Result<(), ApiError> {
    let s = &ctx.settings;
    let asked = ground_truth_time_limit(min_time, s.base_timeout);
    let have = ground_truth_time_limit(s.min_time_limit, s.base_timeout);
    if (asked - have).abs() > 1e-9 {
        return Err(other_limits(format!(
            "field `upstream.min_time_limit`: {min_time} s gives the ground truth a {asked} s limit; this server checked it with {have} s"
        )));
    }
    Ok(())
}

/// Each task's sample limit from the client's `min_time_limit` (and `no_gt`: the 20 s
/// fallback) must be the one the server gives it (its ground truth, its min_time_limit).
fn check_time_limits(
    ctx: &EngineContext,
    dataset: &Dataset,
    min_time: f64,
    no_gt: bool,
) -> Result<(), ApiError> {
    let s = &ctx.settings;
    let differ: Vec<(String, f64, f64)> = dataset
        .tasks()
        .iter()
        .filter_map(|t| {
            let gt = ctx.gt.expected_secs(&t.task_id);
            let asked = sample_time_limit(gt.filter(|_| !no_gt), min_time, s.base_timeout);
            let have = sample_time_limit(gt, s.min_time_limit, s.base_timeout);
            ((asked - have).abs() > 1e-9).then(|| (t.task_id.clone(), asked, have))
        })
        .collect();
    let Some((id, asked, have)) = differ.first() else {
        return Ok(());
    };
    Err(other_limits(format!(
        "field `upstream.min_time_limit`: {min_time} s{} gives {} task(s) another time limit than this server's (first {id}: {asked} s, the server's {have} s)",
        if no_gt { " with no_gt" } else { "" },
        differ.len()
    ))
    .with_task_ids(differ.into_iter().map(|d| d.0).collect()))
}

/// The request's samples as a samples file's rows, through the checks `bcb evaluate` makes
/// (a row with both `solution` and `completion` runs its solution, as upstream does).
fn samples_of(
    dataset: &Dataset,
    req: &EvaluateRequest,
    opts: &UpstreamOptions,
    calibrated: bool,
) -> Result<Samples, ApiError> {
    let name = opts.file_name.trim();
    if name.is_empty() || name.contains('/') {
        return Err(ApiError::bad_request(format!(
            "field `upstream.file_name`: `{name}` is not a file name"
        ))
        .hint(
            "send the samples file's base name, e.g. `model--bigcodebench-hard-complete.jsonl`",
        ));
    }
    let path = Path::new(name);
    let rows = req
        .samples
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let body = match (&s.solution, &s.completion) {
                (Some(c), _) => SampleBody::Solution(c.clone()),
                (None, Some(c)) => SampleBody::Completion(c.clone()),
                (None, None) => {
                    return Err(ApiError::bad_request(format!(
                        "samples[{i}] ({}): missing `solution` or `completion`",
                        s.task_id
                    )))
                }
            };
            Ok(Sample {
                task_id: s.task_id.clone(),
                body,
                raw_solution: None,
                origin: Origin {
                    path: path.to_path_buf(),
                    line: Some(i + 1),
                },
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Samples::from_rows(dataset, path, &rows, calibrated).map_err(|e| {
        let text = format!("{e:#}");
        match text.split_once("\nhint: ") {
            Some((error, hint)) => ApiError::bad_request(error).hint(hint),
            None => ApiError::bad_request(text),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_k_is_parsed_as_the_cli_takes_it() {
        assert_eq!(parse_pass_k("1,5,10").unwrap(), [1, 5, 10]);
        assert_eq!(parse_pass_k(" 1 , 2").unwrap(), [1, 2]);
        let e = parse_pass_k("1,x").unwrap_err();
        assert!(e.error.contains("upstream.pass_k"), "{}", e.error);
        assert!(parse_pass_k("0").is_err());
    }
}
