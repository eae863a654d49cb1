//! Reading result files: `*_eval_results.json` (plain or `.gz`) and the `*_pass_at_k.json`
//! beside it, written by `bcb evaluate` or by the original harness.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

/// The verdict and details types of the execution contract: one definition for the workspace.
pub use bcb_execute::{Details, Status};

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
        let value = read_json(path)?;
        let date = value
            .get("date")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let eval = value
            .get("eval")
            .and_then(Value::as_object)
            .with_context(|| {
                format!(
                    "{} is not an eval-results file (expected {{\"date\", \"eval\"}}); pass the \
                 *_eval_results.json that `bcb evaluate` wrote",
                    path.display()
                )
            })?;
        let mut tasks = Vec::with_capacity(eval.len());
        for (task_id, list) in eval {
            let list = list.as_array().map(Vec::as_slice).unwrap_or_default();
            let samples = list
                .iter()
                .map(|r| {
                    parse_sample(r).with_context(|| format!("{task_id} in {}", path.display()))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            tasks.push((task_id.clone(), samples));
        }
        let mut run = RunResults {
            model: model_from_file_name(path),
            path: path.to_path_buf(),
            date,
            tasks,
            split: None,
            subset: None,
            gt_failed: Vec::new(),
            pass_at_k_file: BTreeMap::new(),
        };
        if let Some(pk_path) = pass_at_k_path(path).filter(|p| p.exists()) {
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

fn parse_sample(r: &Value) -> anyhow::Result<Sample> {
    let status_value = r.get("status").cloned().unwrap_or(Value::Null);
    let status: Status = serde_json::from_value(status_value.clone()).with_context(|| {
        format!("unknown status {status_value} (expected \"pass\", \"fail\" or \"timeout\")")
    })?;
    let details: Details = match r.get("details") {
        Some(d) => serde_json::from_value(d.clone()).context("`details` is not an object")?,
        None => Details::new(),
    };
    Ok(Sample {
        status,
        details,
        solution: r
            .get("solution")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        flaky: r.get("flaky").and_then(Value::as_bool),
    })
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

/// Reads JSON from a plain or gzip-compressed file (by the `.gz` suffix).
pub fn read_json(path: &Path) -> anyhow::Result<Value> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut text = String::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .with_context(|| format!("{} is not a gzip-compressed text file", path.display()))?;
    } else {
        std::io::BufReader::new(file)
            .read_to_string(&mut text)
            .with_context(|| format!("cannot read {}", path.display()))?;
    }
    serde_json::from_str(&text).with_context(|| format!("{} is not valid JSON", path.display()))
}

/// `X_eval_results.json[.gz]` -> `X_pass_at_k.json` (also tried with `.gz`).
pub fn pass_at_k_path(results: &Path) -> Option<PathBuf> {
    let name = results.file_name()?.to_str()?;
    let stem = name.strip_suffix(".gz").unwrap_or(name);
    let base = stem.strip_suffix("eval_results.json")?;
    let plain = results.with_file_name(format!("{base}pass_at_k.json"));
    let gz = results.with_file_name(format!("{base}pass_at_k.json.gz"));
    Some(if !plain.exists() && gz.exists() {
        gz
    } else {
        plain
    })
}

/// Upstream's model name from a results file name: the part before `--bigcodebench-`, else
/// the name without `_eval_results.json`.
pub fn model_from_file_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    if let Some((model, _)) = name.split_once("--bigcodebench-") {
        return model.to_string();
    }
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let name = name.strip_suffix(".json").unwrap_or(name);
    name.strip_suffix("_eval_results")
        .or_else(|| name.strip_suffix("eval_results"))
        .unwrap_or(name)
        .trim_end_matches(['_', '-'])
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_from_file_names() {
        assert_eq!(
            model_from_file_name(Path::new(
                "a/org--M--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated_eval_results.json.gz"
            )),
            "org--M--main"
        );
        assert_eq!(
            model_from_file_name(Path::new("x/mine_eval_results.json")),
            "mine"
        );
        assert_eq!(model_from_file_name(Path::new("dir/eval_results.json")), "");
    }

    #[test]
    fn pass_at_k_beside_results() {
        assert_eq!(
            pass_at_k_path(Path::new("d/m_eval_results.json.gz")).unwrap(),
            Path::new("d/m_pass_at_k.json")
        );
        assert!(pass_at_k_path(Path::new("d/other.json")).is_none());
    }
}
