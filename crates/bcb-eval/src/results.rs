//! The two upstream output files, typed: `*_eval_results.json` and `*_pass_at_k.json`.

use std::path::Path;

use anyhow::Context;
use bcb_dataset::{Split, Subset};
use bcb_execute::{Details, Status};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One evaluated sample, as upstream writes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SampleResult {
    pub task_id: String,
    /// The executed code (calibration prefix included).
    pub solution: String,
    pub status: Status,
    /// Absent in some hand-made files: no details.
    #[serde(default)]
    pub details: Details,
    /// A rerun (`--rerun-failures`) changed the verdict; `status` is the first one. Absent
    /// from the file unless true, so files stay byte-compatible with upstream's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flaky: bool,
}

/// `{"date": "YYYY-MM-DD HH:MM", "eval": {task_id: [SampleResult, ...]}}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EvalResults {
    pub date: String,
    /// Task id -> results in completion-index order (tasks in dataset order).
    pub eval: IndexMap<String, Vec<SampleResult>>,
}

impl EvalResults {
    pub fn new(date: String) -> Self {
        EvalResults {
            date,
            eval: IndexMap::new(),
        }
    }

    /// Today's date as upstream stamps it.
    pub fn now() -> Self {
        EvalResults::new(chrono::Local::now().format("%Y-%m-%d %H:%M").to_string())
    }

    /// Reads a results file, plain or gzip-compressed: the one reader of `*_eval_results.json`
    /// (evaluate's reuse, `inspect`, `report`, `leaderboard` and `merge` all come here).
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let bytes = bcb_samples::read_bytes(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "{} is not an eval-results file (expected {{\"date\", \"eval\": {{task_id: [{{task_id, solution, status, details}}]}}}})",
                path.display()
            )
        })
    }

    /// `(n, c)` per task: samples and passing samples, for the given task ids.
    pub fn counts<'a>(&self, task_ids: impl IntoIterator<Item = &'a str>) -> Vec<(u64, u64)> {
        task_ids
            .into_iter()
            .filter_map(|id| self.eval.get(id))
            .map(|list| {
                let passed = list.iter().filter(|r| r.status.is_pass()).count();
                (list.len() as u64, passed as u64)
            })
            .collect()
    }
}

/// The `*_pass_at_k.json` content.
#[derive(Debug, Clone, PartialEq)]
pub struct PassAtK {
    /// `(k, mean pass@k)` for each k that every task has enough samples for.
    pub values: Vec<(u64, f64)>,
    pub model: String,
    pub split: Split,
    pub subset: Subset,
    pub calibrated: bool,
    pub gt_pass_rate: f64,
    pub failed_tasks: Vec<String>,
}

impl PassAtK {
    /// The JSON object with upstream's key order: `pass@k`..., then the run's description.
    pub fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        for (k, v) in &self.values {
            m.insert(format!("pass@{k}"), Value::from(*v));
        }
        m.insert("model".into(), self.model.clone().into());
        m.insert("split".into(), self.split.as_str().into());
        m.insert("subset".into(), self.subset.as_str().into());
        m.insert("calibrated".into(), self.calibrated.into());
        m.insert("gt_pass_rate".into(), Value::from(self.gt_pass_rate));
        m.insert("failed_tasks".into(), self.failed_tasks.clone().into());
        m
    }
}

/// Upstream's model name of a samples file (the grammar lives in `bcb-samples`).
pub use bcb_samples::model_name;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_files_round_trip() {
        let text = r#"{"date": "2025-01-01 10:00", "eval": {"BigCodeBench/1": [{"task_id": "BigCodeBench/1", "solution": "x", "status": "fail", "details": {"test_a": "tb", "ALL": "e"}}]}}"#;
        let r: EvalResults = serde_json::from_str(text).unwrap();
        assert_eq!(r.counts(["BigCodeBench/1"]), [(1, 0)]);
        let back = bcb_pyjson::to_line(&r).unwrap();
        assert_eq!(String::from_utf8(back).unwrap(), text);
    }
}
