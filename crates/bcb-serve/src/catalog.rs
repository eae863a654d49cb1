//! The tasks a server answers for: the session's dataset (one version and subset), loaded once,
//! plus the hard subset's ids when the session covers the full set, so requests naming
//! `subset: hard` are checked against it.

use std::collections::{HashMap, HashSet};

use bcb_dataset::{Dataset, Split, Subset, Task};
use bcb_sanitize::{AnswerText, Reading};

use crate::backend::{SampleBody, SubmitSample};
use crate::error::ApiError;

pub struct Catalog {
    dataset: Dataset,
    hard_ids: Option<HashSet<String>>,
    pub default_split: Split,
    tests_total: HashMap<String, usize>,
}

impl Catalog {
    /// `hard` lists the hard subset's ids when `dataset` is the full set (None: unknown).
    pub fn new(dataset: Dataset, hard: Option<&Dataset>, default_split: Split) -> Catalog {
        let tests_total = dataset
            .tasks()
            .iter()
            .map(|t| (t.task_id.clone(), count_test_methods(&t.test)))
            .collect();
        let hard_ids = match dataset.subset {
            Subset::Hard => Some(dataset.tasks().iter().map(|t| t.task_id.clone()).collect()),
            Subset::Full => hard.map(|h| h.tasks().iter().map(|t| t.task_id.clone()).collect()),
        };
        Catalog {
            dataset,
            hard_ids,
            default_split,
            tests_total,
        }
    }

    pub fn version(&self) -> &str {
        &self.dataset.version
    }

    pub fn subset(&self) -> Subset {
        self.dataset.subset
    }

    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    pub fn get(&self, task_id: &str) -> Option<&Task> {
        self.dataset.get(task_id)
    }

    /// Task ids of `subset` this server answers for, in dataset order.
    pub fn tasks(&self, subset: Subset) -> impl Iterator<Item = &Task> {
        self.dataset
            .tasks()
            .iter()
            .filter(move |t| self.in_subset(&t.task_id, subset))
    }

    fn in_subset(&self, task_id: &str, subset: Subset) -> bool {
        match subset {
            Subset::Full => self.dataset.contains(task_id),
            Subset::Hard => self
                .hard_ids
                .as_ref()
                .is_some_and(|ids| ids.contains(task_id)),
        }
    }

    /// Test methods `TestCases` defines (from the test source: the harness reports failures
    /// only, so `tests_passed` is this minus the failures named in the details).
    pub fn tests_total(&self, task_id: &str) -> usize {
        self.tests_total.get(task_id).copied().unwrap_or(0)
    }

    /// A model's answer for `task_id`, read as every endpoint that takes model text reads one
    /// and as `bcb sanitize` reads a samples file's row (`bcb_sanitize::read_answer`,
    /// `<think>` blocks dropped as `bcb sanitize` does by default): the program scored. The
    /// rule is in `docs/rl-rewards.md`. An unknown task is a 400 naming it.
    pub fn read_answer(&self, task_id: &str, text: AnswerText<'_>) -> Result<Reading, ApiError> {
        let task = self.get(task_id).ok_or_else(|| {
            ApiError::bad_request(format!("unknown task id(s): {task_id}"))
                .hint("task ids look like `BigCodeBench/13`; GET /v1/tasks lists them")
                .with_task_ids(vec![task_id.to_string()])
        })?;
        let opts = bcb_sanitize::Options {
            strip_think: true,
            ..Default::default()
        };
        Ok(bcb_sanitize::read_answer(
            text,
            &task.complete_prompt,
            &task.entry_point,
            &opts,
        ))
    }

    /// Replaces each sample's code by the program its answer reads to: a `Solution` is a
    /// model's raw answer ([`AnswerText::Raw`]), a `Completion` continues the prompt.
    pub fn read_answers(&self, samples: &mut [SubmitSample]) -> Result<(), ApiError> {
        for s in samples {
            let text = match &s.body {
                SampleBody::Solution(t) => AnswerText::Raw(t),
                SampleBody::Completion(t) => AnswerText::Completion(t),
            };
            s.body = SampleBody::Solution(self.read_answer(&s.task_id, text)?.code);
        }
        Ok(())
    }

    /// Checks a request's dataset fields and task ids; the error names what is wrong.
    pub fn check(
        &self,
        version: Option<&str>,
        subset: Option<Subset>,
        ids: &[&str],
    ) -> Result<Subset, ApiError> {
        if let Some(v) = version {
            let v = bcb_dataset::parse_version(v)
                .map_err(|e| ApiError::bad_request(format!("field `version`: {e}")))?;
            if v != self.dataset.version {
                return Err(ApiError::bad_request(format!(
                    "field `version`: this server evaluates {} only, not {v}",
                    self.dataset.version
                ))
                .hint("drop `version`, or send the request to a server started with `bcb serve --version` of that version"));
            }
        }
        let subset = subset.unwrap_or(self.dataset.subset);
        if subset == Subset::Full && self.dataset.subset == Subset::Hard {
            // A hard server answers for hard task ids whatever the request calls the subset.
        } else if subset == Subset::Hard && self.hard_ids.is_none() {
            return Err(ApiError::bad_request(
                "field `subset`: the hard subset's task list is not loaded on this server",
            ));
        }
        let unknown: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| !self.in_subset(id, subset))
            .collect();
        if !unknown.is_empty() {
            let mut seen = HashSet::new();
            let unknown: Vec<&str> = unknown.into_iter().filter(|i| seen.insert(*i)).collect();
            return Err(ApiError::bad_request(format!(
                "unknown task id(s) for {} {}: {}",
                subset,
                self.dataset.version,
                unknown.join(", ")
            ))
            .hint("task ids look like `BigCodeBench/13`; GET /v1/tasks lists them")
            .with_task_ids(unknown.iter().map(|s| s.to_string()).collect()));
        }
        Ok(subset)
    }

    /// A task id from what clients send: `BigCodeBench/13`, `BigCodeBench_13`, `13`.
    pub fn normalize_id(raw: &str) -> String {
        let raw = raw.trim();
        if raw.bytes().all(|b| b.is_ascii_digit()) && !raw.is_empty() {
            return format!("BigCodeBench/{raw}");
        }
        if let Some(n) = raw.strip_prefix("BigCodeBench_") {
            return format!("BigCodeBench/{n}");
        }
        raw.to_string()
    }
}

/// `def test…(` methods of the `TestCases` class (and of classes after it, which unittest would
/// not load: BigCodeBench tests define helpers before `TestCases`, rarely after).
fn count_test_methods(test: &str) -> usize {
    let mut in_cases = false;
    let mut n = 0;
    for line in test.lines() {
        if line.starts_with("class ") {
            in_cases = line.starts_with("class TestCases");
            continue;
        }
        let trimmed = line.trim_start();
        if in_cases && line.len() > trimmed.len() && trimmed.starts_with("def test") {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_test_methods_of_testcases_only() {
        let src = "import unittest\nclass Helper:\n    def test_not(self): pass\nclass TestCases(unittest.TestCase):\n    def setUp(self): pass\n    def test_a(self):\n        pass\n    def test_b(self): pass\n    def helper(self): pass\n";
        assert_eq!(count_test_methods(src), 2);
    }

    #[test]
    fn ids_are_normalized() {
        assert_eq!(Catalog::normalize_id("13"), "BigCodeBench/13");
        assert_eq!(Catalog::normalize_id("BigCodeBench_7"), "BigCodeBench/7");
        assert_eq!(Catalog::normalize_id("BigCodeBench/2"), "BigCodeBench/2");
    }
}
