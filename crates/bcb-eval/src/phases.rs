//! What the batch session ([`crate::Session`]) and the warm session ([`crate::WarmSession`])
//! share: events to the sinks, the ground-truth phase by its mode, a phase of jobs run to a
//! verdict each (with retries), and how a group of duplicates shares one verdict.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

use bcb_dataset::Dataset;
use bcb_execute::{Job, JobId, Outcome};

use crate::engine::Engine;
use crate::error::SessionError;
use crate::event::{Event, Origin, Phase, Sink};
use crate::ground_truth::{GroundTruth, GtCache};
use crate::limits::ground_truth_time_limit;
use crate::plan::ground_truth_jobs;
use crate::runner::{OnVerdict, RetryPolicy, Runner};
use crate::settings::Settings;

/// What the ground-truth phase does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GtMode {
    /// `--no-gt`: not run; every task gets the fallback time.
    Skip,
    /// Cached entries are used, missing ones run.
    Use,
    /// `--check-gt-only`: the selected tasks run again.
    Recheck,
}

/// Where a session's events go: every sink, in order, behind one lock.
pub(crate) trait Emit {
    fn emit(&self, event: &Event) -> anyhow::Result<()>;
}

impl<S: Sink + ?Sized> Emit for Mutex<Vec<Box<S>>> {
    fn emit(&self, event: &Event) -> anyhow::Result<()> {
        for sink in self.lock().unwrap().iter_mut() {
            sink.handle(event)?;
        }
        Ok(())
    }
}

/// The origin of the `i`-th sample of a group of duplicates whose first sample's verdict
/// came from `first`: the others share it.
pub(crate) fn member_origin(first: Origin, i: usize) -> Origin {
    if i == 0 {
        first
    } else {
        Origin::Duplicate
    }
}

/// Verdicts counted by where they came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OriginCounts {
    pub executed: usize,
    pub cached: usize,
    pub deduplicated: usize,
    pub refused: usize,
}

impl OriginCounts {
    pub fn add(&mut self, origin: Origin) {
        match origin {
            Origin::Executed => self.executed += 1,
            Origin::Cached => self.cached += 1,
            Origin::Duplicate => self.deduplicated += 1,
            Origin::Refused => self.refused += 1,
        }
    }
}

/// The phases both sessions run on their engine.
pub(crate) struct Phases<'p> {
    pub dataset: &'p Dataset,
    pub settings: &'p Settings,
    pub retry: RetryPolicy,
    pub events: &'p dyn Emit,
}

impl Phases<'_> {
    /// The ground truth of the dataset's tasks (`only` these, for a shard) by `mode`: not run
    /// (`Skip`), cached entries plus the rest run now (`Use`), or the selected tasks run again
    /// (`Recheck`: their previous timings order the re-run; other tasks' entries are kept).
    pub fn ground_truth(
        &self,
        eng: &Engine,
        cache: &GtCache,
        mode: GtMode,
        only: Option<&HashSet<String>>,
    ) -> Result<GroundTruth, SessionError> {
        if mode == GtMode::Skip {
            return self.skipped();
        }
        let mine = |id: &str| only.is_none_or(|o| o.contains(id));
        let ids: Vec<String> = self.task_ids().into_iter().filter(|id| mine(id)).collect();
        // A shard's ground truth is in its own journal, locked with it; the shared cache is
        // run by one process at a time, and those that wait find it done.
        let _lock = match only {
            Some(_) => None,
            None => Some(crate::gt_lock::lock(
                &cache.path,
                crate::gt_lock::stall_bound(ground_truth_time_limit(
                    self.settings.min_time_limit,
                    self.settings.base_timeout,
                )),
                |holder| {
                    let cached = cache.load();
                    self.events.emit(&Event::WaitingForGroundTruth {
                        path: &cache.path,
                        holder,
                        done: ids.iter().filter(|id| cached.contains(id)).count(),
                        total: ids.len(),
                    })
                },
            )?),
        };
        let previous = if mode == GtMode::Recheck {
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            cache.forget(&refs)?
        } else {
            GroundTruth::none()
        };
        let mut gt = cache.load();
        let todo = self
            .dataset
            .tasks()
            .iter()
            .filter(|t| mine(&t.task_id) && !gt.contains(&t.task_id));
        let jobs = ground_truth_jobs(todo, self.settings, &previous);
        let done = ids.len() - jobs.len();
        if jobs.is_empty() {
            tracing::info!("ground truth loaded from {}", cache.path.display());
        }
        for (id, outcome) in self.run_phase(eng, Phase::GroundTruth, jobs, done, None)? {
            gt.insert(&id.task_id, outcome);
        }
        self.events.emit(&Event::GroundTruthReady {
            gt: &gt,
            task_ids: &ids,
        })?;
        Ok(gt)
    }

    /// A ground truth that was not run (`--no-gt`), announced for every task.
    pub fn skipped(&self) -> Result<GroundTruth, SessionError> {
        let gt = GroundTruth::none();
        self.events.emit(&Event::GroundTruthReady {
            gt: &gt,
            task_ids: &self.task_ids(),
        })?;
        Ok(gt)
    }

    fn task_ids(&self) -> Vec<String> {
        self.dataset
            .tasks()
            .iter()
            .map(|t| t.task_id.clone())
            .collect()
    }

    /// A phase of `jobs` executed as they are: announced, run to a verdict each, finished;
    /// returns the new outcomes.
    pub fn run_phase(
        &self,
        eng: &Engine,
        phase: Phase,
        jobs: Vec<Job>,
        done_before: usize,
        samples: Option<&Path>,
    ) -> Result<Vec<(JobId, Outcome)>, SessionError> {
        self.events.emit(&Event::PhaseStarted {
            phase,
            todo: jobs.len(),
            done: done_before,
        })?;
        let fresh = self.run_jobs(eng, phase, jobs, &mut |job, outcome| {
            self.events.emit(&Event::JobDone {
                phase,
                job,
                outcome,
                origin: Origin::Executed,
                samples,
            })
        })?;
        self.events.emit(&Event::PhaseFinished { phase })?;
        Ok(fresh)
    }

    /// Runs `jobs` on the engine (a group of its own), retrying those without a verdict.
    pub fn run_jobs(
        &self,
        eng: &Engine,
        phase: Phase,
        jobs: Vec<Job>,
        verdict: &mut OnVerdict,
    ) -> Result<Vec<(JobId, Outcome)>, SessionError> {
        let runner = Runner {
            engine: eng,
            group: eng.group(),
            retry: self.retry,
        };
        let result = runner.run_jobs(phase, jobs, &|e| self.events.emit(e), verdict);
        eng.forget(runner.group);
        result
    }
}
