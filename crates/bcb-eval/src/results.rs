//! The two upstream output files: `*_eval_results.json` and `*_pass_at_k.json`.

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One evaluated sample, as upstream writes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SampleResult {
    pub task_id: String,
    /// The executed code (calibration prefix included).
    pub solution: String,
    pub status: String,
    pub details: Map<String, Value>,
}

/// `{"date": "YYYY-MM-DD HH:MM", "eval": {task_id: [SampleResult, ...]}}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EvalResults {
    pub date: String,
    /// Task id -> results in completion-index order (tasks in dataset order).
    pub eval: Map<String, Value>,
}

impl EvalResults {
    pub fn new(date: String) -> Self {
        EvalResults {
            date,
            eval: Map::new(),
        }
    }

    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let mut value: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON", path.display()))?;
        compat_rename_files_key(&mut value);
        serde_json::from_value(value).with_context(|| {
            format!(
                "{} is not an eval-results file (expected {{\"date\", \"eval\"}})",
                path.display()
            )
        })
    }

    /// `(n, c)` per task: samples and passing samples, for the given task ids.
    pub fn counts<'a>(&self, task_ids: impl IntoIterator<Item = &'a str>) -> Vec<(u64, u64)> {
        task_ids
            .into_iter()
            .filter_map(|id| self.eval.get(id))
            .map(|v| {
                let list = v.as_array().map(Vec::as_slice).unwrap_or_default();
                let passed = list
                    .iter()
                    .filter(|r| r.get("status").and_then(Value::as_str) == Some("pass"))
                    .count();
                (list.len() as u64, passed as u64)
            })
            .collect()
    }
}

/// The original renames a legacy `files` list to `nfiles` (its length) when it reads old results.
fn compat_rename_files_key(value: &mut Value) {
    let Some(eval) = value.get_mut("eval").and_then(Value::as_object_mut) else {
        return;
    };
    for task_results in eval.values_mut() {
        if let Some(obj) = task_results.as_object_mut() {
            if !obj.contains_key("nfiles") {
                if let Some(files) = obj.remove("files") {
                    let n = files.as_array().map_or(0, Vec::len);
                    obj.insert("nfiles".into(), n.into());
                }
            }
        }
    }
}

/// Builds the pass@k object with upstream's key order.
#[allow(clippy::too_many_arguments)]
pub fn pass_at_k_json(
    pass_at_k: &[(u64, f64)],
    model: &str,
    split: &str,
    subset: &str,
    calibrated: bool,
    gt_pass_rate: f64,
    failed_tasks: &[String],
) -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in pass_at_k {
        m.insert(format!("pass@{k}"), Value::from(*v));
    }
    m.insert("model".into(), model.into());
    m.insert("split".into(), split.into());
    m.insert("subset".into(), subset.into());
    m.insert("calibrated".into(), calibrated.into());
    m.insert("gt_pass_rate".into(), Value::from(gt_pass_rate));
    m.insert("failed_tasks".into(), failed_tasks.into());
    m
}

/// Upstream's model name: the samples file's base name up to `--bigcodebench-`.
pub fn model_name(samples: &Path) -> String {
    let base = samples
        .file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    base.split("--bigcodebench-")
        .next()
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_name_like_upstream() {
        assert_eq!(
            model_name(Path::new("r/meta-llama--Llama-3--main--bigcodebench-hard-instruct--vllm-0-1-sanitized_calibrated.jsonl")),
            "meta-llama--Llama-3--main"
        );
        assert_eq!(model_name(Path::new("samples.jsonl")), "samples.jsonl");
    }

    #[test]
    fn legacy_files_key_is_renamed() {
        let mut v = serde_json::json!({"date": "d", "eval": {"t": {"files": [1, 2, 3]}}});
        compat_rename_files_key(&mut v);
        assert_eq!(v["eval"]["t"]["nfiles"], 3);
    }
}
