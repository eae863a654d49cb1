//! Whole-run remote evaluators: the samples file goes to another machine, which runs the
//! whole evaluation and sends back the two upstream result files' contents.
//!
//! Unlike the per-job [`bcb_execute::Executor`], a remote evaluator sees one request per run
//! (that is how the BigCodeBench Gradio Space and an E2B sandbox work). Failures are
//! [`ExecError`]s: never a verdict, and a remote run never falls back to local execution
//! (that would change the environment behind the verdicts).

pub mod e2b;
pub mod gradio;
mod sse;

use std::path::PathBuf;
use std::time::Duration;

use bcb_eval::{EvalResults, PassAtK};
use bcb_execute::ExecError;
use serde_json::{Map, Value};

/// What the remote side is asked to evaluate: the original's `evaluate()` arguments.
#[derive(Debug, Clone)]
pub struct RemoteRequest {
    /// The samples JSONL file (its name decides the `model` in pass@k remotely too); none
    /// for a ground-truth check.
    pub samples: Option<PathBuf>,
    /// `complete` or `instruct`.
    pub split: String,
    /// `full` or `hard`.
    pub subset: String,
    pub pass_k: Vec<u64>,
    /// Samples at once remotely; < 1 lets the remote side choose.
    pub parallel: i64,
    pub min_time_limit: f64,
    pub max_as_limit: u64,
    pub max_data_limit: u64,
    pub max_stack_limit: u64,
    pub calibrated: bool,
    pub check_gt_only: bool,
    pub no_gt: bool,
    /// Full task ids (`BigCodeBench/N`); empty = all tasks of the subset.
    pub task_ids: Vec<String>,
}

impl RemoteRequest {
    /// Ids as the upstream Space expects them: numbers only (it prepends `BigCodeBench/`).
    pub fn selective_ids(&self) -> String {
        self.task_ids
            .iter()
            .map(|id| id.strip_prefix("BigCodeBench/").unwrap_or(id))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn pass_k_text(&self) -> String {
        self.pass_k
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// What came back: the `*_eval_results.json` content (none for a ground-truth check) and
/// the `*_pass_at_k.json` content.
#[derive(Debug, Clone)]
pub struct RemoteResult {
    pub results: Option<EvalResults>,
    pub pass_at_k: PassAtK,
}

/// Something worth telling the user while a remote run is under way.
#[derive(Debug, Clone)]
pub enum Progress {
    /// Discovered the remote side (e.g. `Gradio 5.50.0, endpoint /predict`).
    Connected {
        description: String,
    },
    Uploaded {
        bytes: u64,
    },
    /// The job is queued or running; `heartbeats` counts the keep-alives so far.
    Waiting {
        elapsed: Duration,
        heartbeats: u64,
        status: String,
    },
    /// A connection failed or the server was busy; trying again after `delay`.
    Retrying {
        why: String,
        delay: Duration,
    },
    /// The job was lost (server restarted mid-run) and is sent once more.
    Resubmitted {
        why: String,
    },
    /// A line of the remote run's output (E2B streams it).
    Output {
        line: String,
    },
}

/// A whole-run remote evaluator.
pub trait RemoteEvaluator {
    /// Runs the request remotely; `progress` sees what happens while it waits.
    fn evaluate(
        &self,
        req: &RemoteRequest,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<RemoteResult, ExecError>;
}

/// Reads a `*_pass_at_k.json` object (as the original and the Space write it).
pub fn pass_at_k_from_json(v: &Value) -> Result<PassAtK, String> {
    let m: &Map<String, Value> = v
        .as_object()
        .ok_or_else(|| format!("pass@k is not a JSON object: {}", short(v)))?;
    let text = |key: &str| -> Result<String, String> {
        m.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("pass@k has no string `{key}`"))
    };
    let mut values = Vec::new();
    for (key, value) in m {
        if let Some(k) = key.strip_prefix("pass@") {
            let k: u64 = k.parse().map_err(|_| format!("bad pass@k key `{key}`"))?;
            let x = value
                .as_f64()
                .ok_or_else(|| format!("`{key}` is not a number"))?;
            values.push((k, x));
        }
    }
    let failed_tasks = match m.get("failed_tasks") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|t| t.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("`failed_tasks` holds a non-string")?,
        None | Some(Value::Null) => Vec::new(),
        Some(other) => return Err(format!("`failed_tasks` is not a list: {}", short(other))),
    };
    Ok(PassAtK {
        values,
        model: text("model").unwrap_or_default(),
        split: text("split").unwrap_or_default().parse()?,
        subset: text("subset").unwrap_or_default().parse()?,
        calibrated: m.get("calibrated").and_then(Value::as_bool).unwrap_or(true),
        gt_pass_rate: m
            .get("gt_pass_rate")
            .and_then(Value::as_f64)
            .ok_or("pass@k has no number `gt_pass_rate`")?,
        failed_tasks,
    })
}

/// A value cut to a readable length for error messages.
pub(crate) fn short(v: &impl std::fmt::Display) -> String {
    let s = v.to_string();
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selective_ids_are_numbers_like_the_space_wants() {
        let req = RemoteRequest {
            samples: Some("s.jsonl".into()),
            split: "complete".into(),
            subset: "hard".into(),
            pass_k: vec![1, 5, 10],
            parallel: -1,
            min_time_limit: 1.0,
            max_as_limit: 30720,
            max_data_limit: 30720,
            max_stack_limit: 10,
            calibrated: true,
            check_gt_only: false,
            no_gt: false,
            task_ids: vec!["BigCodeBench/13".into(), "BigCodeBench/15".into()],
        };
        assert_eq!(req.selective_ids(), "13,15");
        assert_eq!(req.pass_k_text(), "1,5,10");
    }

    #[test]
    fn pass_at_k_keeps_key_order_and_values() {
        let v: Value = serde_json::from_str(
            r#"{"pass@1": 0.5, "model": "m", "split": "complete", "subset": "hard",
                "calibrated": true, "gt_pass_rate": 1.0, "failed_tasks": []}"#,
        )
        .unwrap();
        let p = pass_at_k_from_json(&v).unwrap();
        assert_eq!(p.values, vec![(1, 0.5)]);
        assert_eq!(serde_json::Value::Object(p.to_json()), v);
    }
}
