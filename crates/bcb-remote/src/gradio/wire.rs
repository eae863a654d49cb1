//! The evaluator Space's wire format: the samples file it takes, the results it gives back
//! (matched to our jobs), its interface as `/info` describes it, and JSON bodies read with
//! the URL named on error.

use std::collections::HashMap;

use reqwest::blocking::Response;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{ENDPOINT_NAMES, PARAMETERS};

use crate::short;
use bcb_executor::{Details, ExecError, Job, JobId, Outcome, Status};

/// A chunk as the Space's samples file (`{task_id, solution}` per job, the program as it
/// runs) and its task ids as the Space wants them (`13,15`).
pub fn samples_file(jobs: &[Job]) -> (Vec<u8>, String) {
    let mut bytes = Vec::new();
    let mut ids: Vec<&str> = Vec::new();
    for job in jobs {
        let row = json!({"task_id": job.id.task_id, "solution": &*job.code});
        bytes.extend_from_slice(row.to_string().as_bytes());
        bytes.push(b'\n');
        let n = job
            .id
            .task_id
            .strip_prefix("BigCodeBench/")
            .unwrap_or(&job.id.task_id);
        if !ids.contains(&n) {
            ids.push(n);
        }
    }
    (bytes, ids.join(","))
}

/// `[results, pass_at_k]` → each job's verdict: the Space lists a task's results in the
/// order its samples were in the file; each must be the job's program.
pub fn match_results(jobs: &[Job], output: &Value) -> Result<Vec<(JobId, Outcome)>, ExecError> {
    let bad = |why: String| {
        ExecError::fatal(
            format!("the Space's result does not have the expected shape: {why}"),
            "the evaluator is not compatible with bcb; check --gradio-endpoint",
        )
    };
    let eval = output
        .as_array()
        .filter(|a| a.len() == 2)
        .and_then(|a| a[0].get("eval"))
        .and_then(Value::as_object)
        .ok_or_else(|| {
            bad(format!(
                "expected [{{\"eval\": …}}, pass_at_k], got {}",
                short(output)
            ))
        })?;
    let mut next: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let task = job.id.task_id.as_str();
        let i = next.entry(task).or_default();
        let entry = eval
            .get(task)
            .and_then(Value::as_array)
            .and_then(|list| list.get(*i))
            .ok_or_else(|| bad(format!("no result {} for {task}", *i + 1)))?;
        *i += 1;
        if let Some(solution) = entry.get("solution").and_then(Value::as_str) {
            if solution != &*job.code {
                return Err(bad(format!(
                    "result {i} of {task} is for another program (the Space changed the code it ran: is calibration forced on?)"
                )));
            }
        }
        let status: Status = serde_json::from_value(entry["status"].clone())
            .map_err(|e| bad(format!("{task}: status: {e}")))?;
        let details: Details = match entry.get("details") {
            None | Some(Value::Null) => Details::new(),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| bad(format!("{task}: details: {e}")))?,
        };
        out.push((job.id.clone(), Outcome::new(status, details)));
    }
    Ok(out)
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

pub(super) fn json_body(resp: Response, what: &str, url: &str) -> Result<Value, ExecError> {
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
