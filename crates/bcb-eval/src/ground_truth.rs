//! Ground truth: every canonical solution run once, its test time recorded, cached per
//! dataset content *and* what can change a verdict (limits, time settings, the Python
//! environment), so a quick `--timeout 5` run never poisons a default one. The cache is a
//! journal of [`JournalRecord`]s: a killed run resumes with the tasks it had not finished.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use bcb_dataset::{Dataset, Task};
use bcb_execute::{Outcome, Program, Status};
use sha2::Digest;

use crate::journal::{read_journal, JournalHeader, JournalRecord};
use crate::settings::Settings;

/// What the canonical solutions did, by task id.
#[derive(Debug, Default, Clone)]
pub struct GroundTruth {
    entries: HashMap<String, Outcome>,
}

impl GroundTruth {
    /// No ground truth (`--no-gt`): every task gets the fallback time and counts as failed.
    pub fn none() -> Self {
        GroundTruth::default()
    }

    pub fn from_records(records: impl IntoIterator<Item = JournalRecord>) -> Self {
        let mut gt = GroundTruth::default();
        for r in records {
            gt.insert(&r.id.task_id, r.outcome);
        }
        gt
    }

    pub fn insert(&mut self, task_id: &str, outcome: Outcome) {
        self.entries.insert(task_id.to_string(), outcome);
    }

    pub fn contains(&self, task_id: &str) -> bool {
        self.entries.contains_key(task_id)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Test time of a passing canonical solution (upstream's `expected_time`); `None` when it
    /// did not pass or did not run.
    pub fn expected_secs(&self, task_id: &str) -> Option<f64> {
        self.entries
            .get(task_id)
            .filter(|o| o.status == Status::Pass)
            .map(|o| o.test_secs.unwrap_or(o.wall_secs))
    }

    /// CPU time of a passing canonical solution, when it was measured.
    pub fn expected_cpu_secs(&self, task_id: &str) -> Option<f64> {
        self.entries
            .get(task_id)
            .filter(|o| o.status == Status::Pass)
            .and_then(|o| o.cpu_secs)
    }

    /// [`Self::expected_secs`], else the shipped prior: what orders a task's jobs.
    pub fn secs_or_prior(&self, task_id: &str) -> Option<f64> {
        self.expected_secs(task_id)
            .or_else(|| crate::priors::expected_secs(task_id))
    }

    /// [`Self::expected_cpu_secs`], else the shipped prior.
    pub fn cpu_secs_or_prior(&self, task_id: &str) -> Option<f64> {
        self.expected_cpu_secs(task_id)
            .or_else(|| crate::priors::expected_cpu_secs(task_id))
    }

    pub fn outcome(&self, task_id: &str) -> Option<&Outcome> {
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

/// The program a canonical solution runs: `complete_prompt + "\n" + canonical_solution`.
pub fn canonical_program(task: &Task) -> String {
    format!("{}\n{}", task.complete_prompt, task.canonical_solution)
}

/// Where a dataset's ground truth lives for given settings, and its journal key.
#[derive(Debug, Clone)]
pub struct GtCache {
    pub path: PathBuf,
    pub key: String,
}

impl GtCache {
    /// `{cache}/ground-truth/{key}.jsonl`, the key covering the dataset content, the limits,
    /// the time settings and the Python environment.
    pub fn new(cache_dir: &Path, dataset: &Dataset, settings: &Settings) -> GtCache {
        Self::for_plan(cache_dir, &dataset.md5, &settings.execution_key())
    }

    /// The cache of a dataset content digest (`Dataset::md5`) and a `Settings::execution_key`,
    /// as a shard journal's plan names them (how `bcb merge` finds where shards belong).
    pub fn for_plan(cache_dir: &Path, dataset_md5: &str, verdict_key: &str) -> GtCache {
        let mut h = sha2::Sha256::new();
        h.update(dataset_md5.as_bytes());
        h.update(verdict_key.as_bytes());
        let key = hex::encode(&h.finalize()[..16]);
        GtCache {
            path: cache_dir.join("ground-truth").join(format!("{key}.jsonl")),
            key,
        }
    }

    pub fn header(&self) -> JournalHeader {
        JournalHeader::new(&self.key)
    }

    /// Cached outcomes of canonical solutions (records of other programs are ignored).
    pub fn load(&self) -> GroundTruth {
        GroundTruth::from_records(
            read_journal(&self.path, &self.key)
                .into_iter()
                .filter(|r| r.id.program == Program::GroundTruth),
        )
    }

    /// Puts `records` into the cache, replacing the entries of their tasks and keeping the
    /// rest (a merge of shards over `--ids` leaves other tasks' entries alone).
    pub fn store(&self, records: &[JournalRecord]) -> anyhow::Result<()> {
        let ids: Vec<&str> = records.iter().map(|r| r.id.task_id.as_str()).collect();
        let kept: Vec<JournalRecord> = read_journal(&self.path, &self.key)
            .into_iter()
            .filter(|r| !ids.contains(&r.id.task_id.as_str()))
            .collect();
        self.write(kept.iter().chain(records))
    }

    fn write<'r>(
        &self,
        records: impl IntoIterator<Item = &'r JournalRecord>,
    ) -> anyhow::Result<()> {
        let mut text = serde_json::to_vec(&self.header())?;
        text.push(b'\n');
        for r in records {
            text.extend(serde_json::to_vec(r)?);
            text.push(b'\n');
        }
        bcb_pyjson::write_atomic(&self.path, &text)
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// Drops the cached entries of `task_ids` (a re-check of just those), keeping the rest.
    /// Returns the outcomes dropped, whose timings still order the re-run.
    pub fn forget(&self, task_ids: &[&str]) -> anyhow::Result<GroundTruth> {
        let records = read_journal(&self.path, &self.key);
        let (dropped, kept): (Vec<_>, Vec<_>) = records
            .into_iter()
            .partition(|r| task_ids.contains(&r.id.task_id.as_str()));
        if dropped.is_empty() {
            return Ok(GroundTruth::none());
        }
        self.write(&kept)?;
        Ok(GroundTruth::from_records(dropped))
    }
}

/// A one-line reason for a failed canonical solution, from its details.
pub fn failure_summary(outcome: &Outcome) -> String {
    if outcome.status == Status::Timeout {
        return "timeout".into();
    }
    let Some((name, trace)) = outcome.details.iter().next() else {
        return outcome.status.as_str().into();
    };
    let mut line = format!("{name}: {}", trace_reason(trace));
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
