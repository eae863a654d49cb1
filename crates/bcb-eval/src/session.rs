//! The conductor: ground truth first, then the samples (of one or several files, in one
//! phase), every job through the executor — each distinct program once with dedup, none that
//! the verdict cache knows — every outcome to the sinks as an [`Event`]. Jobs that get no verdict ([`ExecError`]) are
//! retried with backoff; a persistent or fatal error stops the run with the cause and what
//! to do, and nothing false is recorded.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use std::sync::Mutex;

use bcb_dataset::Dataset;
use bcb_execute::{Executor, JobId, Outcome, Status};
use bcb_samples::eval_results_path;

use crate::assembly::{assemble, build_report, SampleRun};
use crate::dedup::Member;
use crate::engine::Engine;
use crate::error::SessionError;
use crate::event::{Event, Origin, Phase, RunAction, RunReport, Sink};
use crate::ground_truth::{GroundTruth, GtCache};
use crate::journal::{read_journal, samples_journal_path};
use crate::phases::{member_origin, Emit, GtMode, OriginCounts, Phases};
use crate::plan::samples_journal_key;
use crate::plan::{sample_jobs, Samples};
use crate::results::EvalResults;
use crate::runner::RetryPolicy;
use crate::settings::Settings;
use crate::shard::ShardPlan;
use crate::triage::{triage, Triage};
use crate::verdict_cache::VerdictCache;

/// A whole run: the ground truth, then (if given) the samples.
pub struct Request {
    pub gt: GtMode,
    /// Samples files, evaluated together (one ground truth, one executor); each gets its own
    /// journal and result files. Empty: ground truth only.
    pub samples: Vec<Samples>,
    pub run: SampleRun,
    /// Workers, for the start-up line.
    pub parallel: usize,
    /// Run only this shard's tasks, everything kept in its own journal (one samples file).
    pub shard: Option<ShardPlan>,
}

/// How a run avoids executing what it already knows.
#[derive(Clone, Copy, Default)]
pub struct Reuse<'a> {
    /// Jobs of the same task with the same program run once (`--no-dedup` turns it off).
    pub dedup: bool,
    /// Verdicts of earlier runs (`--no-cache`: none).
    pub cache: Option<&'a VerdictCache>,
}

pub struct Session<'a> {
    dataset: &'a Dataset,
    executor: &'a dyn Executor,
    settings: &'a Settings,
    retry: RetryPolicy,
    /// `--rerun-failures N` (see `flaky`).
    reruns: usize,
    reuse: Reuse<'a>,
    sinks: Mutex<Vec<Box<dyn Sink + 'a>>>,
}

impl<'a> Session<'a> {
    pub fn new(
        dataset: &'a Dataset,
        executor: &'a dyn Executor,
        settings: &'a Settings,
        sinks: Vec<Box<dyn Sink + 'a>>,
    ) -> Self {
        Session {
            dataset,
            executor,
            settings,
            retry: RetryPolicy::default(),
            reruns: 0,
            reuse: Reuse::default(),
            sinks: Mutex::new(sinks),
        }
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Failing jobs run `n` more times to find flaky verdicts (not for shards).
    pub fn with_rerun_failures(mut self, n: usize) -> Self {
        self.reruns = n;
        self
    }

    /// Dedup within the run and the verdict cache across runs (both off by default).
    pub fn with_reuse(mut self, reuse: Reuse<'a>) -> Self {
        self.reuse = reuse;
        self
    }

    fn emit(&self, event: &Event) -> anyhow::Result<()> {
        self.sinks.emit(event)
    }

    /// The phases this session runs, with its sinks and retry policy.
    fn phases(&self) -> Phases<'_> {
        Phases {
            dataset: self.dataset,
            settings: self.settings,
            retry: self.retry,
            events: &self.sinks,
        }
    }

    /// Runs `request`: ground truth, then the samples if there are any (one report per file).
    pub fn run(&self, cache: &GtCache, request: &Request) -> Result<Vec<RunReport>, SessionError> {
        self.emit(&Event::RunStarted {
            action: if !request.samples.is_empty() {
                RunAction::Evaluating
            } else {
                RunAction::Checking
            },
            tasks: self.dataset.len(),
            subset: self.dataset.subset.as_str(),
            version: &self.dataset.version,
            executor: self.executor.name(),
            parallel: request.parallel,
            protections: &self.executor.describe(),
        })?;
        // A shard keeps its ground truth in its own journal, next to its samples' verdicts.
        let shard_cache = request.shard.as_ref().map(|s| GtCache {
            path: s.journal.clone(),
            key: s.header.key.clone(),
        });
        let cache = shard_cache.as_ref().unwrap_or(cache);
        let only = request.shard.as_ref().map(|s| &s.tasks);
        // A shard's journal starts empty, so `--check-gt-only --shard` checks afresh anyway;
        // using it as a cache lets a killed shard (a re-run pod or array task) resume.
        let mode = match (request.gt, &request.shard) {
            (GtMode::Recheck, Some(_)) => GtMode::Use,
            (mode, _) => mode,
        };
        // One executor for the whole run: its workers stay warm from the ground truth on.
        Engine::scoped(self.executor, |eng| {
            let gt = self.phases().ground_truth(eng, cache, mode, only)?;
            if request.samples.is_empty() {
                return Ok(Vec::new());
            }
            self.evaluate_all(
                eng,
                &request.samples,
                &gt,
                &request.run,
                request.shard.as_ref(),
            )
        })
    }

    /// The ground truth of the dataset's tasks: cached entries, plus the canonical solutions
    /// of the rest run now. `recheck` runs the selected tasks again (their previous timings
    /// order the re-run); other tasks' cache entries are kept.
    pub fn ground_truth(
        &self,
        cache: &GtCache,
        recheck: bool,
    ) -> Result<GroundTruth, SessionError> {
        let mode = if recheck {
            GtMode::Recheck
        } else {
            GtMode::Use
        };
        Engine::scoped(self.executor, |eng| {
            self.phases().ground_truth(eng, cache, mode, None)
        })
    }

    /// Announces a ground truth that was not run (`--no-gt`).
    pub fn skip_ground_truth(&self) -> Result<GroundTruth, SessionError> {
        self.phases().skipped()
    }

    /// Every sample against its task's tests (resuming from the journal), then pass@k.
    /// An existing results file is used as it is unless `force`, as upstream does.
    pub fn evaluate(
        &self,
        samples: &Samples,
        gt: &GroundTruth,
        opts: &SampleRun,
    ) -> Result<RunReport, SessionError> {
        let mut reports = Engine::scoped(self.executor, |eng| {
            self.evaluate_all(eng, std::slice::from_ref(samples), gt, opts, None)
        })?;
        Ok(reports.pop().expect("one report per file"))
    }

    /// Every file's samples in one samples phase: resumed from each file's journal, refused
    /// by the tamper scan, taken from the verdict cache, or executed — each distinct (task,
    /// program) once when deduplicating — then one report per file, in the given order.
    fn evaluate_all(
        &self,
        eng: &Engine,
        files: &[Samples],
        gt: &GroundTruth,
        opts: &SampleRun,
        shard: Option<&ShardPlan>,
    ) -> Result<Vec<RunReport>, SessionError> {
        let mut state: Vec<FileRun> = Vec::with_capacity(files.len());
        let mut work = Vec::new();
        for (file, samples) in files.iter().enumerate() {
            let results_path = eval_results_path(&samples.path);
            let mut run = FileRun::default();
            if shard.is_none() && results_only_loaded(&samples.path, opts.force) {
                self.emit(&Event::ResultsLoaded {
                    path: &results_path,
                })?;
                run.loaded = Some(EvalResults::load(&results_path)?);
                state.push(run);
                continue;
            }
            let (journal, key) = match shard {
                Some(s) => (s.journal.clone(), s.header.key.clone()),
                None => (
                    samples_journal_path(&results_path),
                    samples_journal_key(samples, self.settings),
                ),
            };
            run.key = key.clone();
            let mine = |id: &JobId| shard.is_none_or(|s| s.tasks.contains(&id.task_id));
            let planned: HashSet<&JobId> = samples
                .programs
                .iter()
                .map(|p| &p.id)
                .filter(|id| mine(id))
                .collect();
            run.done = read_journal(&journal, &key)
                .into_iter()
                .filter(|r| planned.contains(&r.id))
                .map(|r| (r.id, r.outcome))
                .collect();
            run.resumed = run.done.len();
            let todo = samples
                .programs
                .iter()
                .filter(|p| mine(&p.id) && !run.done.contains_key(&p.id));
            let jobs = sample_jobs(self.dataset, todo, self.settings, gt);
            work.extend(jobs.into_iter().map(|job| Member { file, job }));
            state.push(run);
        }
        if state.iter().any(|r| r.loaded.is_none()) {
            let path = |file: usize| Some(files[file].path.as_path());
            let Triage {
                refused,
                groups,
                cached,
                unknown: mut to_run,
            } = triage(
                self.dataset,
                self.settings.tamper,
                work,
                self.reuse.dedup,
                self.reuse.cache,
            );
            let resumed: usize = state.iter().map(|r| r.resumed).sum();
            self.emit(&Event::PhaseStarted {
                phase: Phase::Samples,
                todo: refused.len() + groups.len(),
                done: resumed,
            })?;
            for (m, outcome) in refused {
                self.emit(&Event::JobDone {
                    phase: Phase::Samples,
                    job: &m.job,
                    outcome: &outcome,
                    origin: Origin::Refused,
                    samples: path(m.file),
                })?;
                state[m.file].done.insert(m.job.id, outcome);
            }
            // Members of an execution get its verdict, each under its own id.
            let hand_out = |rep: &JobId, outcome: &Outcome, first: Origin| -> anyhow::Result<()> {
                for (i, m) in groups.members(rep).iter().enumerate() {
                    let origin = member_origin(first, i);
                    self.emit(&Event::JobDone {
                        phase: Phase::Samples,
                        job: &m.job,
                        outcome,
                        origin,
                        samples: path(m.file),
                    })?;
                }
                Ok(())
            };
            let mut known = Vec::with_capacity(cached.len());
            for (job, outcome) in cached {
                hand_out(&job.id, &outcome, Origin::Cached)?;
                known.push((job.id, outcome, Origin::Cached));
            }
            history(&state).apply(&mut to_run);
            crate::plan::longest_first(&mut to_run);
            let fresh =
                self.phases()
                    .run_jobs(eng, Phase::Samples, to_run, &mut |job, outcome| {
                        hand_out(&job.id, outcome, Origin::Executed)
                    })?;
            known.extend(fresh.into_iter().map(|(id, o)| (id, o, Origin::Executed)));
            for (rep, outcome, first) in known {
                for (i, m) in groups.members(&rep).iter().enumerate() {
                    let run = &mut state[m.file];
                    run.counts.add(member_origin(first, i));
                    run.done.insert(m.job.id.clone(), outcome.clone());
                }
            }
            self.emit(&Event::PhaseFinished {
                phase: Phase::Samples,
            })?;
        }
        // Reruns of every file first, so each verdict is final when the first report is out
        // (the verdict cache writes then, leaving out programs whose status changed).
        let mut flaky = Vec::with_capacity(files.len());
        for (samples, run) in files.iter().zip(&state) {
            if run.loaded.is_some() || shard.is_some() {
                flaky.push(crate::flaky::Flaky::default());
                continue;
            }
            let path = Some(samples.path.as_path());
            flaky.push(
                crate::flaky::Reruns {
                    dataset: self.dataset,
                    settings: self.settings,
                    samples,
                    gt,
                    first: &run.done,
                    attempts: self.reruns,
                    journal: &crate::flaky::rerun_journal_path(&eval_results_path(&samples.path)),
                    key: &run.key,
                }
                .run(&|jobs, before| {
                    self.phases()
                        .run_phase(eng, Phase::Rerun, jobs, before, path)
                })?,
            );
        }
        let mut reports = Vec::with_capacity(files.len());
        for ((samples, run), flaky) in files.iter().zip(state).zip(flaky) {
            let loaded_existing = run.loaded.is_some();
            let results = match run.loaded {
                Some(r) => r,
                None => {
                    let mut results = assemble(self.dataset, samples, &run.done);
                    crate::flaky::mark(&mut results, samples, &flaky.samples);
                    results
                }
            };
            let mut report = build_report(
                self.dataset,
                self.settings.split,
                self.settings.calibrated,
                samples,
                gt,
                results,
                opts,
            );
            report.executed = run.counts.executed;
            report.resumed = run.resumed;
            report.deduplicated = run.counts.deduplicated;
            report.cached = run.counts.cached;
            report.loaded_existing = loaded_existing;
            report.shard = shard.map(|s| s.shard.tag());
            report.flaky_ground_truth = flaky.ground_truth;
            self.emit(&Event::Finished(&report))?;
            reports.push(report);
        }
        Ok(reports)
    }
}

/// Timeouts this run already knows of: resumed journal records and loaded result files.
fn history(state: &[FileRun]) -> crate::sleepers::History {
    let mut h = crate::sleepers::History::default();
    for run in state {
        for (id, o) in &run.done {
            if o.status == Status::Timeout {
                h.timed_out(&id.task_id, &id.digest);
            }
        }
        for (task, rows) in run.loaded.iter().flat_map(|l| &l.eval) {
            for r in rows.iter().filter(|r| r.status == Status::Timeout) {
                h.timed_out_code(task, &r.solution);
            }
        }
    }
    h
}

/// One samples file's part of a run.
#[derive(Default)]
struct FileRun {
    /// The results file existed and is used as it is.
    loaded: Option<EvalResults>,
    done: HashMap<JobId, Outcome>,
    /// The key its journals carry.
    key: String,
    resumed: usize,
    /// Verdicts of this run by origin (refusals are not counted here).
    counts: OriginCounts,
}

/// Whether a run (not a shard) of the samples file at `samples` only loads its existing
/// `X_eval_results.json` and recomputes pass@k, as upstream does without `--force`: it
/// executes and writes nothing for that file.
pub fn results_only_loaded(samples: &Path, force: bool) -> bool {
    !force && eval_results_path(samples).is_file()
}
