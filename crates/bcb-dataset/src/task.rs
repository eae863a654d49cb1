//! Task rows and the in-memory dataset built from a JSONL file.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::{DatasetError, Split, Subset};

/// One BigCodeBench task, as in the Hugging Face rows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Task {
    pub task_id: String,
    pub complete_prompt: String,
    pub instruct_prompt: String,
    pub canonical_solution: String,
    pub code_prompt: String,
    pub test: String,
    pub entry_point: String,
    #[serde(default)]
    pub doc_struct: String,
    /// A Python-literal list such as `['numpy', 'random']` (kept as the dataset stores it).
    #[serde(default)]
    pub libs: String,
    /// Fields only some rows carry (the hard subset adds q_idx, question, score, _id).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Task {
    /// The prompt of a split: `complete_prompt` or `instruct_prompt`.
    pub fn prompt(&self, split: Split) -> &str {
        match split {
            Split::Complete => &self.complete_prompt,
            Split::Instruct => &self.instruct_prompt,
        }
    }

    /// The libraries named by the `libs` field, parsed from its Python-literal list.
    pub fn lib_names(&self) -> Vec<String> {
        self.libs
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .map(|s| s.trim().trim_matches(|c| c == '\'' || c == '"').to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// The number in `BigCodeBench/N`, for ordering.
    pub fn number(&self) -> Option<u32> {
        task_number(&self.task_id)
    }
}

/// Task ids from a comma-separated list, bare numbers completed (`1,BigCodeBench/2` →
/// `BigCodeBench/1`, `BigCodeBench/2`), as `--ids` / `--selective_evaluate` take them.
pub fn parse_task_ids(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.chars().all(|c| c.is_ascii_digit()) {
                format!("BigCodeBench/{s}")
            } else {
                s.to_string()
            }
        })
        .collect()
}

/// The number in `BigCodeBench/N`.
pub fn task_number(task_id: &str) -> Option<u32> {
    task_id.strip_prefix("BigCodeBench/")?.parse().ok()
}

/// A loaded dataset: tasks in file order plus what identifies the content.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub subset: Subset,
    pub version: String,
    /// Where the rows were read from.
    pub path: PathBuf,
    /// sha256 of the uncompressed JSONL content.
    pub sha256: String,
    /// md5 of the uncompressed JSONL content: our ground-truth cache key. (The original hashes
    /// its own pandas `to_json` dump, so its keys differ and its caches are not shared.)
    pub md5: String,
    tasks: Vec<Task>,
    index: HashMap<String, usize>,
}

impl Dataset {
    /// Reads a JSONL or JSONL.gz file of task rows.
    pub fn from_file(path: &Path, subset: Subset, version: &str) -> Result<Self, DatasetError> {
        let io_err = |source| DatasetError::Io {
            path: path.to_path_buf(),
            source,
        };
        let raw = std::fs::read(path).map_err(io_err)?;
        let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::with_capacity(raw.len() * 4);
            flate2::read::MultiGzDecoder::new(&raw[..])
                .read_to_end(&mut out)
                .map_err(io_err)?;
            out
        } else {
            raw
        };
        Self::from_jsonl_bytes(&bytes, path, subset, version)
    }

    /// Parses uncompressed JSONL content; `path` is only used in messages.
    pub fn from_jsonl_bytes(
        bytes: &[u8],
        path: &Path,
        subset: Subset,
        version: &str,
    ) -> Result<Self, DatasetError> {
        let mut tasks = Vec::new();
        let mut index = HashMap::new();
        let mut first_line = HashMap::new();
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            let line_no = i + 1;
            let row_err = |message: String| DatasetError::Row {
                path: path.to_path_buf(),
                line: line_no,
                message,
            };
            let text =
                std::str::from_utf8(line).map_err(|e| row_err(format!("not valid UTF-8 ({e})")))?;
            if text.trim().is_empty() {
                continue;
            }
            let task: Task =
                serde_json::from_str(text).map_err(|e| row_err(format!("bad task row: {e}")))?;
            if let Some(&first) = first_line.get(&task.task_id) {
                return Err(DatasetError::Duplicate {
                    path: path.to_path_buf(),
                    task_id: task.task_id,
                    first,
                    second: line_no,
                });
            }
            first_line.insert(task.task_id.clone(), line_no);
            index.insert(task.task_id.clone(), tasks.len());
            tasks.push(task);
        }
        if tasks.is_empty() {
            return Err(DatasetError::Row {
                path: path.to_path_buf(),
                line: 1,
                message: "no task rows in file".into(),
            });
        }
        Ok(Dataset {
            subset,
            version: version.to_string(),
            path: path.to_path_buf(),
            sha256: hex::encode(sha2::Sha256::digest(bytes)),
            md5: hex::encode(md5::Md5::digest(bytes)),
            tasks,
            index,
        })
    }

    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// The task's place in the dataset's order, or `None` for a task it does not have.
    pub fn position(&self, task_id: &str) -> Option<usize> {
        self.index.get(task_id).copied()
    }

    pub fn get(&self, task_id: &str) -> Option<&Task> {
        self.index.get(task_id).map(|&i| &self.tasks[i])
    }

    pub fn contains(&self, task_id: &str) -> bool {
        self.index.contains_key(task_id)
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Keeps only the given task ids (in dataset order); unknown ids are an error.
    pub fn retain_ids(&mut self, ids: &[String]) -> Result<(), DatasetError> {
        let unknown: Vec<&str> = ids
            .iter()
            .filter(|id| !self.index.contains_key(id.as_str()))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(DatasetError::NotFound(format!(
                "task ids not in the {} {} dataset ({}): {}",
                self.subset,
                self.version,
                self.path.display(),
                unknown.join(", ")
            )));
        }
        let keep: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
        self.tasks.retain(|t| keep.contains(t.task_id.as_str()));
        self.index = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.task_id.clone(), i))
            .collect();
        Ok(())
    }

    /// How many tasks name each library in `libs`, most used first.
    pub fn library_counts(&self) -> Vec<(String, usize)> {
        let mut counts: HashMap<String, usize> = HashMap::new();
        for task in &self.tasks {
            for lib in task.lib_names() {
                *counts.entry(lib).or_default() += 1;
            }
        }
        let mut v: Vec<_> = counts.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str) -> String {
        serde_json::json!({
            "task_id": id, "complete_prompt": "p", "instruct_prompt": "i",
            "canonical_solution": "s", "code_prompt": "c", "test": "t",
            "entry_point": "task_func", "doc_struct": "{}", "libs": "['numpy', 'os']"
        })
        .to_string()
    }

    #[test]
    fn parses_rows_and_names_the_bad_line() {
        let good = format!("{}\n{}\n", row("BigCodeBench/0"), row("BigCodeBench/1"));
        let ds = Dataset::from_jsonl_bytes(
            good.as_bytes(),
            Path::new("x.jsonl"),
            Subset::Full,
            "v0.1.4",
        )
        .unwrap();
        assert_eq!(ds.len(), 2);
        assert_eq!(ds.tasks()[1].lib_names(), vec!["numpy", "os"]);
        let bad = format!("{}\n{{oops\n", row("BigCodeBench/0"));
        let err =
            Dataset::from_jsonl_bytes(bad.as_bytes(), Path::new("x.jsonl"), Subset::Full, "v0.1.4")
                .unwrap_err()
                .to_string();
        assert!(err.starts_with("x.jsonl:2:"), "{err}");
        let dup = format!("{}\n{}\n", row("BigCodeBench/0"), row("BigCodeBench/0"));
        let err =
            Dataset::from_jsonl_bytes(dup.as_bytes(), Path::new("x.jsonl"), Subset::Full, "v0.1.4")
                .unwrap_err()
                .to_string();
        assert!(err.contains("lines 1 and 2"), "{err}");
    }
}
