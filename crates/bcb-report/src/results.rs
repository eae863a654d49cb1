//! Reading result files: `*_eval_results.json` (plain or `.gz`) and the `*_pass_at_k.json`
//! beside it, written by `bcb evaluate` or by the original harness.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

/// The verdict and details types of the execution contract: one definition for the workspace.
pub use bcb_executor::{Details, Status};

/// One evaluated sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub status: Status,
    /// Failing test name (or `ALL`) -> traceback or exception text, in file order.
    pub details: Details,
    /// The executed code (calibration prefix included, as upstream stores it).
    pub solution: String,
    /// `Some(true)` when a re-run changed the verdict (a `flaky` key on the sample; written by
    /// re-run tooling, absent in upstream files).
    pub flaky: Option<bool>,
}

impl Sample {
    pub fn passed(&self) -> bool {
        self.status.is_pass()
    }
}

/// One results file: a model's samples per task, plus what its pass@k file says.
#[derive(Debug, Clone)]
pub struct RunResults {
    /// Model name: the pass@k file's `model`, else the file name up to `--bigcodebench-`.
    pub model: String,
    pub path: PathBuf,
    /// `date` of the results file (`YYYY-MM-DD HH:MM`).
    pub date: String,
    /// Task id -> samples in completion-index order; tasks in file order.
    pub tasks: Vec<(String, Vec<Sample>)>,
    /// From the pass@k file when present.
    pub split: Option<String>,
    pub subset: Option<String>,
    /// Tasks whose ground truth failed in that run (`failed_tasks` of the pass@k file).
    pub gt_failed: Vec<String>,
    /// `pass@k` values of the pass@k file, as written.
    pub pass_at_k_file: BTreeMap<u64, f64>,
}

impl RunResults {
    /// Reads `path` (`*_eval_results.json` or `.json.gz`) and, if it exists, its pass@k file.
    pub fn load(path: &Path) -> anyhow::Result<RunResults> {
        let file = bcb_eval::EvalResults::load(path)?;
        let tasks = file
            .eval
            .into_iter()
            .map(|(task_id, list)| {
                let samples = list
                    .into_iter()
                    .map(|r| Sample {
                        status: r.status,
                        details: r.details,
                        solution: r.solution,
                        flaky: r.flaky.then_some(true),
                    })
                    .collect();
                (task_id, samples)
            })
            .collect();
        let mut run = RunResults {
            model: model_from_file_name(path),
            path: path.to_path_buf(),
            date: file.date,
            tasks,
            split: None,
            subset: None,
            gt_failed: Vec::new(),
            pass_at_k_file: BTreeMap::new(),
        };
        if let Some(pk_path) = pass_at_k_path(path) {
            let pk = read_json(&pk_path)?;
            run.apply_pass_at_k(&pk);
        }
        Ok(run)
    }

    fn apply_pass_at_k(&mut self, pk: &Value) {
        if let Some(m) = pk.get("model").and_then(Value::as_str) {
            self.model = m.to_string();
        }
        self.split = pk.get("split").and_then(Value::as_str).map(str::to_string);
        self.subset = pk.get("subset").and_then(Value::as_str).map(str::to_string);
        self.gt_failed = pk
            .get("failed_tasks")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(obj) = pk.as_object() {
            for (key, v) in obj {
                if let (Some(k), Some(x)) = (
                    key.strip_prefix("pass@").and_then(|k| k.parse().ok()),
                    v.as_f64(),
                ) {
                    self.pass_at_k_file.insert(k, x);
                }
            }
        }
    }

    /// `(n, c)` per task in file order.
    pub fn counts(&self) -> Vec<(u64, u64)> {
        self.tasks
            .iter()
            .map(|(_, s)| {
                (
                    s.len() as u64,
                    s.iter().filter(|x| x.passed()).count() as u64,
                )
            })
            .collect()
    }

    pub fn samples(&self, task_id: &str) -> Option<&[Sample]> {
        self.tasks
            .iter()
            .find(|(t, _)| t == task_id)
            .map(|(_, s)| s.as_slice())
    }

    /// Task id -> samples, for lookups across runs.
    pub fn by_task(&self) -> BTreeMap<&str, &[Sample]> {
        self.tasks
            .iter()
            .map(|(t, s)| (t.as_str(), s.as_slice()))
            .collect()
    }
}

/// Task ids from a file: a pass@k JSON (`failed_tasks`), a JSON list, or one id per line.
pub fn read_task_list(path: &Path) -> anyhow::Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let ids: Vec<String> = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(o)) => o
            .get("failed_tasks")
            .and_then(Value::as_array)
            .with_context(|| format!("{} has no `failed_tasks` list", path.display()))?
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Ok(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect(),
    };
    // Bare numbers mean `BigCodeBench/N`.
    Ok(ids
        .into_iter()
        .map(|id| {
            if id.chars().all(|c| c.is_ascii_digit()) {
                format!("BigCodeBench/{id}")
            } else {
                id
            }
        })
        .collect())
}

/// Reads JSON from a plain or gzip-compressed file.
pub fn read_json(path: &Path) -> anyhow::Result<Value> {
    let bytes =
        bcb_samples::read_bytes(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("{} is not valid JSON", path.display()))
}

/// The pass@k file beside a results file, if there is one (see [`bcb_samples::existing_pass_at_k`]).
pub use bcb_samples::existing_pass_at_k as pass_at_k_path;

/// The model name of a results file (see [`bcb_samples::model_of_results`]).
pub use bcb_samples::model_of_results as model_from_file_name;
