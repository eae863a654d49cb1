//! `--rerun-failures N`: after the samples phase, every sample whose verdict is not `pass`
//! (and every failing canonical solution) runs up to N more times through the same executor
//! with the same limits; one whose verdict changes is flaky. The first verdict stays the
//! verdict (pass@k is computed from it, as a single run would have); the result file marks
//! flaky samples with `"flaky": true`. Each attempt is journaled as it arrives
//! (`X_eval_results.json.reruns.jsonl`, one record per attempt), so a resumed run only runs
//! the attempts that are missing.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use bcb_dataset::Dataset;
use bcb_execute::{Job, JobId, Outcome, Status};
use bcb_sanitize::tamper::TamperPolicy;

use crate::error::SessionError;
use crate::ground_truth::GroundTruth;
use crate::journal::read_journal;
use crate::plan::{ground_truth_jobs, sample_jobs, tamper_refusal, Samples, Settings};
use crate::results::EvalResults;

/// `X_eval_results.json` → `X_eval_results.json.reruns.jsonl`.
pub fn rerun_journal_path(results_path: &Path) -> PathBuf {
    let mut s = results_path.as_os_str().to_owned();
    s.push(".reruns.jsonl");
    PathBuf::from(s)
}

/// Runs jobs as one phase (`done_before` = attempts already journaled) and returns their
/// outcomes: the session's retrying `run_phase`.
pub type RunPhase<'s> = dyn Fn(Vec<Job>, usize) -> Result<Vec<(JobId, Outcome)>, SessionError> + 's;

/// What the reruns found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flaky {
    /// Samples whose verdict changed on a rerun.
    pub samples: HashSet<JobId>,
    /// Tasks whose canonical solution failed first and passed (or failed otherwise) on a rerun.
    pub ground_truth: Vec<String>,
}

/// The inputs of the rerun phase.
pub struct Reruns<'a> {
    pub dataset: &'a Dataset,
    pub settings: &'a Settings,
    pub samples: &'a Samples,
    pub gt: &'a GroundTruth,
    /// First verdicts of every sample of the run.
    pub first: &'a HashMap<JobId, Outcome>,
    /// Further attempts per failing job.
    pub attempts: usize,
    /// The rerun journal and the key its header must carry (the samples journal's).
    pub journal: &'a Path,
    pub key: &'a str,
}

impl Reruns<'_> {
    /// Runs the missing attempts round by round (each round every still-undecided job once,
    /// through `run`), and says which verdicts changed. A job stops being rerun once it is
    /// known to be flaky: further attempts cannot change that.
    pub fn run(&self, run: &RunPhase) -> Result<Flaky, SessionError> {
        if self.attempts == 0 {
            return Ok(Flaky::default());
        }
        let candidates = self.candidates();
        let firsts: HashMap<&JobId, Status> = candidates.iter().map(|(j, s)| (&j.id, *s)).collect();
        let mut seen: HashMap<JobId, Vec<Status>> = HashMap::new();
        for r in read_journal(self.journal, self.key) {
            if firsts.contains_key(&r.id) {
                seen.entry(r.id).or_default().push(r.outcome.status);
            }
        }
        let resumed: usize = seen.values().map(Vec::len).sum();
        let mut rounds = 0;
        loop {
            let todo: Vec<Job> = candidates
                .iter()
                .filter(|(job, first)| {
                    let got = seen.get(&job.id).map_or(&[][..], Vec::as_slice);
                    got.len() < self.attempts && got.iter().all(|s| s == first)
                })
                .map(|(job, _)| job.clone())
                .collect();
            if todo.is_empty() {
                break;
            }
            let done_before = if rounds == 0 { resumed } else { 0 };
            for (id, outcome) in run(todo, done_before)? {
                seen.entry(id).or_default().push(outcome.status);
            }
            rounds += 1;
        }
        let changed = |id: &JobId| {
            let first = firsts[id];
            seen.get(id).is_some_and(|s| s.iter().any(|&v| v != first))
        };
        let mut flaky = Flaky::default();
        for (job, _) in &candidates {
            if !changed(&job.id) {
                continue;
            }
            match job.id.program {
                bcb_execute::Program::GroundTruth => {
                    flaky.ground_truth.push(job.id.task_id.clone())
                }
                bcb_execute::Program::Sample(_) => {
                    flaky.samples.insert(job.id.clone());
                }
            }
        }
        flaky.ground_truth.sort();
        if !flaky.samples.is_empty() || !flaky.ground_truth.is_empty() {
            tracing::warn!(
                "{} sample(s) and {} ground truth(s) changed verdict on a rerun",
                flaky.samples.len(),
                flaky.ground_truth.len()
            );
        }
        Ok(flaky)
    }

    /// Every job that gets reruns, with its first verdict: failing samples the executor ran
    /// (a sample the tamper scan refused was never run and would be refused again), and the
    /// failing canonical solutions of the tasks these samples belong to.
    fn candidates(&self) -> Vec<(Job, Status)> {
        let failing: Vec<_> = self
            .samples
            .programs
            .iter()
            .filter(|p| self.first.get(&p.id).is_some_and(|o| !o.status.is_pass()))
            .collect();
        let mut jobs: Vec<(Job, Status)> =
            sample_jobs(self.dataset, failing, self.settings, self.gt)
                .into_iter()
                .filter(|job| {
                    self.settings.tamper != TamperPolicy::Refuse
                        || tamper_refusal(self.dataset, job, self.settings.tamper).is_none()
                })
                .map(|job| {
                    let status = self.first[&job.id].status;
                    (job, status)
                })
                .collect();
        let tasks: HashSet<&str> = self
            .samples
            .programs
            .iter()
            .map(|p| p.id.task_id.as_str())
            .collect();
        let gt_failing = self.dataset.tasks().iter().filter(|t| {
            tasks.contains(t.task_id.as_str())
                && self
                    .gt
                    .outcome(&t.task_id)
                    .is_some_and(|o| !o.status.is_pass())
        });
        for job in ground_truth_jobs(gt_failing, self.settings, self.gt) {
            let status = self.gt.outcome(job.task_id()).expect("filtered").status;
            jobs.push((job, status));
        }
        jobs
    }
}

/// Sets `flaky` on the results of the samples in `flaky` (results are in completion order
/// per task, as `session::assemble` builds them from `samples`).
pub fn mark(results: &mut EvalResults, samples: &Samples, flaky: &HashSet<JobId>) {
    if flaky.is_empty() {
        return;
    }
    let mut by_task: HashMap<&str, Vec<(usize, &JobId)>> = HashMap::new();
    for p in &samples.programs {
        by_task
            .entry(p.id.task_id.as_str())
            .or_default()
            .push((p.completion_id, &p.id));
    }
    for (task, list) in by_task.iter_mut() {
        list.sort();
        let Some(entries) = results.eval.get_mut(*task) else {
            continue;
        };
        // Every sample has a result when reruns happen (no shard): index = completion rank.
        if entries.len() != list.len() {
            continue;
        }
        for ((_, id), entry) in list.iter().zip(entries.iter_mut()) {
            entry.flaky = flaky.contains(*id);
        }
    }
}
