//! Ground truth: run every canonical solution once, record its test time, and cache the
//! result per dataset content (md5, as the original keys it). The cache is a journal, so a
//! killed run resumes with the tasks it had not finished.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use bcb_dataset::{Dataset, Task};
use bcb_execute::{Executor, Job, Outcome, Status};
use bcb_samples::JsonlAppender;
use serde::{Deserialize, Serialize};

use crate::journaled::{longest_first, run_journaled};
use crate::limits::ground_truth_time_limit;
use crate::progress::Progress;

/// What one canonical solution did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GtEntry {
    pub task_id: String,
    /// Test time in seconds when every test passed; `None` otherwise (upstream's value).
    pub secs: Option<f64>,
    pub status: Status,
    pub details: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Default, Clone)]
pub struct GroundTruth {
    entries: HashMap<String, GtEntry>,
}

impl GroundTruth {
    /// No ground truth (`--no-gt`): every task gets the fallback time and counts as failed.
    pub fn none() -> Self {
        GroundTruth::default()
    }

    pub fn expected_secs(&self, task_id: &str) -> Option<f64> {
        self.entries.get(task_id).and_then(|e| e.secs)
    }

    pub fn entry(&self, task_id: &str) -> Option<&GtEntry> {
        self.entries.get(task_id)
    }

    /// Share of the given tasks whose canonical solution passed (upstream `gt_pass_rate`).
    pub fn pass_rate<'a>(&self, task_ids: impl IntoIterator<Item = &'a str>) -> f64 {
        let (mut n, mut ok) = (0usize, 0usize);
        for id in task_ids {
            n += 1;
            ok += usize::from(self.expected_secs(id).is_some());
        }
        if n == 0 {
            0.0
        } else {
            ok as f64 / n as f64
        }
    }

    /// Tasks whose canonical solution did not pass, in the given order (upstream `failed_tasks`).
    pub fn failed<'a>(&self, task_ids: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        task_ids
            .into_iter()
            .filter(|id| self.expected_secs(id).is_none())
            .map(str::to_string)
            .collect()
    }
}

/// Where the ground truth of a dataset is cached.
pub fn cache_path(cache_dir: &Path, dataset: &Dataset) -> PathBuf {
    cache_dir
        .join("ground-truth")
        .join(format!("{}.jsonl", dataset.md5))
}

/// The program a canonical solution runs: `complete_prompt + "\n" + canonical_solution`.
pub fn canonical_program(task: &Task) -> String {
    format!("{}\n{}", task.complete_prompt, task.canonical_solution)
}

pub struct GtOptions<'a> {
    pub cache_file: PathBuf,
    /// Discard the cache and run everything again (`--check-gt-only` does this).
    pub recompute: bool,
    pub min_time_limit: f64,
    pub base_timeout: f64,
    pub progress: &'a Progress,
}

/// Loads cached entries for the dataset's tasks and runs the canonical solutions of the rest.
pub fn ensure(
    dataset: &Dataset,
    executor: &dyn Executor,
    opts: &GtOptions,
) -> anyhow::Result<GroundTruth> {
    // A re-check keeps the previous run's timings, only to start the longest tasks first.
    let mut previous_secs: HashMap<String, f64> = HashMap::new();
    if opts.recompute && opts.cache_file.exists() {
        if let Ok(text) = std::fs::read_to_string(&opts.cache_file) {
            for entry in text
                .lines()
                .filter_map(|l| serde_json::from_str::<GtEntry>(l).ok())
            {
                if let Some(secs) = entry.secs {
                    previous_secs.insert(entry.task_id, secs);
                }
            }
        }
        std::fs::remove_file(&opts.cache_file)
            .with_context(|| format!("cannot remove {}", opts.cache_file.display()))?;
    }
    let (journal, records) = JsonlAppender::open(&opts.cache_file).with_context(|| {
        format!(
            "cannot open ground-truth cache {}",
            opts.cache_file.display()
        )
    })?;
    let mut entries = HashMap::new();
    for record in records {
        if let Ok(entry) = serde_json::from_value::<GtEntry>(record) {
            entries.insert(entry.task_id.clone(), entry);
        }
    }
    let todo: Vec<&Task> = dataset
        .tasks()
        .iter()
        .filter(|t| !entries.contains_key(&t.task_id))
        .collect();
    if todo.is_empty() {
        tracing::info!("ground truth loaded from {}", opts.cache_file.display());
        return Ok(GroundTruth { entries });
    }
    let time_limit = ground_truth_time_limit(opts.min_time_limit, opts.base_timeout);
    let mut jobs: Vec<Job> = todo
        .iter()
        .enumerate()
        .map(|(key, task)| Job {
            key,
            task_id: task.task_id.clone(),
            code: canonical_program(task),
            test: task.test.clone(),
            entry_point: task.entry_point.clone(),
            time_limit: std::time::Duration::from_secs_f64(time_limit),
            expected_secs: previous_secs.get(&task.task_id).copied(),
        })
        .collect();
    // Longest first (known from a previous run), so a 160 s task does not start last.
    longest_first(&mut jobs);
    let bar = opts.progress.bar(
        "ground truth",
        jobs.len() as u64,
        dataset.len() - todo.len(),
    );
    let fresh = run_journaled(
        executor,
        jobs,
        journal,
        &bar,
        |job: Job, outcome: Outcome| {
            let secs = match outcome.status {
                Status::Pass => Some(outcome.test_secs.unwrap_or(outcome.wall_secs)),
                _ => None,
            };
            GtEntry {
                task_id: job.task_id,
                secs,
                status: outcome.status,
                details: outcome.details,
            }
        },
    )?;
    for entry in fresh {
        entries.insert(entry.task_id.clone(), entry);
    }
    Ok(GroundTruth { entries })
}

/// A one-line reason for a failed canonical solution, from its details.
pub fn failure_summary(entry: &GtEntry) -> String {
    if entry.status == Status::Timeout {
        return "timeout".into();
    }
    let Some((name, trace)) = entry.details.iter().next() else {
        return entry.status.as_str().into();
    };
    let mut line = format!(
        "{name}: {}",
        trace_reason(trace.as_str().unwrap_or_default())
    );
    if line.len() > 160 {
        let cut = (0..=157)
            .rev()
            .find(|&i| line.is_char_boundary(i))
            .unwrap_or(0);
        line.truncate(cut);
        line.push_str("...");
    }
    line
}

/// The exception line of a traceback; NLTK's multi-line LookupError becomes the resource name.
fn trace_reason(trace: &str) -> String {
    if let Some(rest) = trace.split_once("Resource ").map(|(_, r)| r) {
        if let Some((resource, _)) = rest.split_once(" not found") {
            let plain: String = strip_ansi(resource);
            return format!("NLTK data `{}` not found", plain.trim());
        }
    }
    trace
        .lines()
        .rev()
        .map(str::trim_end)
        .find(|l| !l.is_empty() && !l.starts_with(' ') && !l.chars().all(|c| c == '*'))
        .unwrap_or("")
        .to_string()
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skip to the end of the escape sequence (a letter).
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_one_line() {
        let nltk = "Traceback...\nLookupError: \n**********\n  Resource \u{1b}[93mstopwords\u{1b}[0m not found.\n  Please use\n**********\n";
        assert_eq!(trace_reason(nltk), "NLTK data `stopwords` not found");
        let plain = "Traceback (most recent call last):\n  File \"x\", line 1\n    foo()\nValueError: bad\n";
        assert_eq!(trace_reason(plain), "ValueError: bad");
    }
}
