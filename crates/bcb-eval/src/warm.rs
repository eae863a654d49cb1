//! A session that stays warm: ONE executor serving submissions over time, for one dataset
//! and one [`Settings`], with the ground truth loaded or run once at start (so every time
//! limit is known). Each [`WarmSession::submit`] goes through the same path as a batch run —
//! tamper scan, dedup, verdict cache, retries with the breaker, events to the sinks — and
//! yields `(index, verdict)` in completion order, each [`Verdict`] saying where it came from.
//! Dedup reaches across submissions (`shared_runs`): a program queued or running for one
//! submission is not run again for another, which waits for that run; one finished earlier
//! in the session is answered at once under the verdict cache's policy. Several submitters
//! share the executor's workers fairly (round-robin between submissions, longest first
//! within one); dropping a [`Submission`] cancels its jobs not yet started, except runs
//! another submission waits for (those run anyway). Batch `bcb evaluate` runs on the same
//! engine (see [`crate::session`]).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bcb_dataset::Dataset;
use bcb_execute::{ExecError, Executor, Job, JobId, Outcome, Program};
use bcb_samples::SampleBody;

use crate::dedup::Member;
use crate::engine::Engine;
use crate::error::SessionError;
use crate::event::{Event, Origin, Phase, Sink};
use crate::ground_truth::{GroundTruth, GtCache};
use crate::phases::GtMode;
use crate::phases::{member_origin, Emit, OriginCounts, Phases};
use crate::plan::{program_code, sample_jobs, SampleProgram};
use crate::runner::{RetryPolicy, Runner};
use crate::settings::Settings;
pub use crate::shared_runs::SubmissionItem;
pub use crate::shared_runs::Verdict;
use crate::shared_runs::{Answers, Claim, SharedRuns, Waiter, DEFAULT_REMEMBERED};
use crate::submission::{Submission, SubmissionHandle};
use crate::triage::{triage, Triage};
use crate::verdict_cache::VerdictCache;

/// One program to evaluate: a task of the session's dataset and its code.
#[derive(Debug, Clone)]
pub struct SubmitSample {
    pub task_id: String,
    /// A full solution, or a completion joined to the task's prompt (as upstream does).
    pub body: SampleBody,
}

/// Per-submission options that change a verdict. (Limits and time settings are the
/// session's: one warm executor runs under one set of limits.)
#[derive(Debug, Clone, Copy)]
pub struct SubmitOptions {
    /// Execute `code_prompt + "\n    pass\n" + solution` (upstream default: true).
    pub calibrated: bool,
}

impl Default for SubmitOptions {
    fn default() -> Self {
        SubmitOptions { calibrated: true }
    }
}

/// How a warm session starts.
pub struct WarmOptions {
    /// Ground truth: `Use` (cached entries, missing ones run now), `Recheck`, or `Skip`.
    pub gt: GtMode,
    pub retry: RetryPolicy,
    /// Jobs of the same task with the same program run once in the session: within a
    /// submission, across submissions in flight, and after (see `shared_runs`).
    pub dedup: bool,
    /// Finished programs whose verdicts dedup remembers (least recently used out first).
    pub remembered: usize,
    /// Verdicts of earlier runs (lookups only; recording is the sinks' business).
    pub cache: Option<Arc<VerdictCache>>,
    /// Jobs in flight that may be picked costliest first (see `engine`): a share of the
    /// workers, so a sample that needs a core for minutes starts when it comes; 0 = none.
    pub costly_lanes: usize,
}

impl Default for WarmOptions {
    fn default() -> Self {
        WarmOptions {
            gt: GtMode::Use,
            retry: RetryPolicy::default(),
            dedup: true,
            remembered: DEFAULT_REMEMBERED,
            cache: None,
            costly_lanes: 0,
        }
    }
}

/// Counts for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WarmStats {
    /// Jobs waiting for a worker (all submissions).
    pub queued: usize,
    /// Jobs running now.
    pub in_flight: usize,
    /// Submissions whose own runs are not finished yet (a submission waiting only for runs
    /// of others no longer counts).
    pub active_submissions: usize,
    /// Submissions accepted since start.
    pub submissions: u64,
    /// Verdicts since start, by where they came from.
    pub executed: u64,
    pub cached: u64,
    pub deduplicated: u64,
    pub refused: u64,
    /// Finished programs dedup remembers now (at most [`WarmOptions::remembered`]).
    pub remembered: usize,
}

/// Every sink of the session behind one lock, shared by the submissions' threads.
type SharedSinks = Arc<Mutex<Vec<Box<dyn Sink + Send>>>>;

struct Inner {
    dataset: Arc<Dataset>,
    settings: Settings,
    gt: GroundTruth,
    engine: Arc<Engine>,
    retry: RetryPolicy,
    dedup: bool,
    /// Runs and verdicts shared across submissions.
    shared: SharedRuns,
    cache: Option<Arc<VerdictCache>>,
    sinks: SharedSinks,
    stats: Mutex<WarmStats>,
    /// Verdicts since start, by where they came from.
    counts: Mutex<OriginCounts>,
}

impl Inner {
    fn emit(&self, event: &Event) -> anyhow::Result<()> {
        self.sinks.emit(event)
    }
}

/// A long-lived session over one warm executor. See the module docs.
pub struct WarmSession {
    inner: Arc<Inner>,
    server: Option<JoinHandle<()>>,
}

/// How long [`WarmSession::start`] waits for the executor's workers to warm up (a slot's
/// own import deadline is as long).
const WARM_WITHIN: Duration = Duration::from_secs(300);

impl WarmSession {
    /// Starts `executor` serving (its workers stay up until [`WarmSession::close`]), then
    /// loads the ground truth from `gt_cache` and runs what is missing (per `opts.gt`), with
    /// its events to `sinks`, and returns once the executor's workers are warm
    /// ([`Executor::wait_warm`]): the first submission pays no warm-up.
    pub fn start(
        dataset: Arc<Dataset>,
        executor: Arc<dyn Executor>,
        settings: Settings,
        gt_cache: &GtCache,
        sinks: Vec<Box<dyn Sink + Send>>,
        opts: WarmOptions,
    ) -> Result<WarmSession, SessionError> {
        let engine = Engine::with_costly_lanes(opts.costly_lanes);
        executor.warm_every_worker();
        let server = {
            let (engine, executor) = (engine.clone(), executor.clone());
            std::thread::Builder::new()
                .name("bcb-warm-executor".into())
                .spawn(move || {
                    if let Err(e) = engine.serve_at_once(&*executor) {
                        tracing::warn!("the warm executor stopped: {e}");
                    }
                })
                .map_err(|e| SessionError::Sink(e.into()))?
        };
        let sinks: SharedSinks = Arc::new(Mutex::new(sinks));
        let phases = Phases {
            dataset: &dataset,
            settings: &settings,
            retry: opts.retry,
            events: &*sinks,
        };
        let gt = phases.ground_truth(&engine, gt_cache, opts.gt, None);
        let gt = match gt {
            Ok(gt) => gt,
            Err(e) => {
                engine.abort();
                let _ = server.join();
                return Err(e);
            }
        };
        if !executor.wait_warm(WARM_WITHIN) {
            tracing::warn!(
                "the executor's workers were not all warm after {} s; starting anyway",
                WARM_WITHIN.as_secs()
            );
        }
        Ok(WarmSession {
            inner: Arc::new(Inner {
                dataset,
                settings,
                gt,
                engine,
                retry: opts.retry,
                dedup: opts.dedup,
                shared: SharedRuns::new(opts.dedup, opts.remembered),
                cache: opts.cache,
                sinks,
                stats: Mutex::new(WarmStats::default()),
                counts: Mutex::new(OriginCounts::default()),
            }),
            server: Some(server),
        })
    }

    pub fn dataset(&self) -> &Dataset {
        &self.inner.dataset
    }

    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The ground truth every submission's time limits come from.
    pub fn ground_truth(&self) -> &GroundTruth {
        &self.inner.gt
    }

    /// Queues `samples` (longest expected first within the submission) and returns at once;
    /// the [`Submission`] yields each sample's verdict as it arrives. Unknown task ids are an
    /// error naming them, before anything runs; a closed session refuses.
    pub fn submit(
        &self,
        samples: Vec<SubmitSample>,
        opts: SubmitOptions,
    ) -> Result<Submission, SessionError> {
        let (tx, rx) = channel();
        let handle = self.submit_with(samples, opts, move |item| {
            let _ = tx.send(item);
        })?;
        Ok(Submission { rx, handle })
    }

    /// [`WarmSession::submit`] for a caller that reads answers its own way: `deliver` gets
    /// each one as it arrives, from the thread that has it, and is dropped once all were
    /// delivered (so a channel inside it closes). A server hands it a tokio channel and awaits
    /// answers, the client's departure and its deadline together, with no thread polling.
    pub fn submit_with(
        &self,
        samples: Vec<SubmitSample>,
        opts: SubmitOptions,
        deliver: impl Fn(SubmissionItem) + Send + Sync + 'static,
    ) -> Result<SubmissionHandle, SessionError> {
        let inner = &self.inner;
        if !inner.engine.accepting() {
            return Err(SessionError::Closed);
        }
        let unknown: Vec<String> = samples
            .iter()
            .filter(|s| inner.dataset.get(&s.task_id).is_none())
            .map(|s| s.task_id.clone())
            .collect();
        if !unknown.is_empty() {
            return Err(SessionError::UnknownTasks(unknown));
        }
        let programs: Vec<SampleProgram> = samples
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let task = inner.dataset.get(&s.task_id).expect("checked above");
                let solution = program_code(task, &s.body, opts.calibrated);
                SampleProgram {
                    id: JobId::new(&task.task_id, Program::Sample(i), &solution),
                    completion_id: i,
                    solution: solution.into(),
                }
            })
            .collect();
        let len = programs.len();
        let group = inner.engine.group();
        let finished = Arc::new(AtomicBool::new(false));
        let cancelled = Arc::new(AtomicBool::new(false));
        let tx = Answers::new(deliver);
        {
            let mut st = inner.stats.lock().unwrap();
            st.submissions += 1;
            st.active_submissions += 1;
        }
        let worker = {
            let (inner, finished) = (self.inner.clone(), finished.clone());
            let cancelled = cancelled.clone();
            std::thread::Builder::new()
                .name(format!("bcb-submission-{group}"))
                .spawn(move || {
                    let result = run_submission(&inner, group, programs, &tx, &cancelled);
                    if let Err(e) = result {
                        tracing::debug!("submission {group} ended: {e}");
                    }
                    inner.engine.forget(group);
                    finished.store(true, Ordering::Relaxed);
                    inner.stats.lock().unwrap().active_submissions -= 1;
                })
        };
        if let Err(e) = worker {
            inner.engine.forget(group);
            inner.stats.lock().unwrap().active_submissions -= 1;
            return Err(SessionError::Sink(e.into()));
        }
        Ok(SubmissionHandle {
            len,
            group,
            finished,
            cancelled,
            engine: self.inner.engine.clone(),
        })
    }

    pub fn stats(&self) -> WarmStats {
        let e = self.inner.engine.stats();
        let c = *self.inner.counts.lock().unwrap();
        WarmStats {
            queued: e.queued,
            in_flight: e.in_flight,
            remembered: self.inner.shared.remembered(),
            executed: c.executed as u64,
            cached: c.cached as u64,
            deduplicated: c.deduplicated as u64,
            refused: c.refused as u64,
            ..*self.inner.stats.lock().unwrap()
        }
    }

    /// Stops accepting, lets queued and running jobs finish (drain), then stops the
    /// executor. Submissions still being read get their remaining verdicts.
    pub fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.inner.engine.close();
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
        let _ = self.inner.emit(&Event::PhaseFinished {
            phase: Phase::Samples,
        });
    }
}

impl Drop for WarmSession {
    fn drop(&mut self) {
        if self.server.is_some() {
            self.shutdown();
        }
    }
}

/// What script jobs (`crate::script`) share with the session: its one engine, its retry
/// policy. (Kept apart from the sample path above: scripts skip dedup, the cache, the sinks.)
impl WarmSession {
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.inner.engine
    }

    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        self.inner.retry
    }
}

/// One submission through the same steps as a batch samples phase, with dedup across
/// submissions: each distinct program is cached, known, waited for, or run here.
fn run_submission(
    inner: &Inner,
    group: u64,
    programs: Vec<SampleProgram>,
    answers: &Answers,
    cancelled: &Arc<AtomicBool>,
) -> Result<(), SessionError> {
    let jobs = sample_jobs(&inner.dataset, &programs, &inner.settings, &inner.gt);
    let work = jobs
        .into_iter()
        .map(|job| Member { file: 0, job })
        .collect();
    let Triage {
        refused,
        groups,
        cached,
        unknown,
    } = triage(
        &inner.dataset,
        inner.settings.tamper,
        work,
        inner.dedup,
        inner.cache.as_deref(),
    );
    let members_of = |rep: &JobId| {
        let jobs = groups.members(rep).iter().map(|m| m.job.clone());
        waiter_of(jobs.collect(), answers, cancelled)
    };
    // A sink's error does not stop the claims below: a run claimed must run, since other
    // submissions may wait for it. It is reported when the submission ends.
    let mut sink_error = None;
    let mut note = |r: anyhow::Result<()>| {
        if let Err(e) = r {
            sink_error.get_or_insert(e);
        }
    };
    for (m, outcome) in refused {
        let waiter = waiter_of(vec![m.job], answers, cancelled);
        note(deliver(inner, &waiter, &outcome, Origin::Refused));
    }
    for (rep, outcome) in cached {
        note(deliver(
            inner,
            &members_of(&rep.id),
            &outcome,
            Origin::Cached,
        ));
    }
    // What no earlier run knows: another submission may be running it, or have run it.
    let mut to_run = Vec::new();
    for rep in unknown {
        match inner
            .shared
            .claim(&inner.shared.key(group, &rep), members_of(&rep.id))
        {
            Claim::Known(outcome, waiter) => {
                note(deliver(inner, &waiter, &outcome, Origin::Duplicate))
            }
            Claim::Waiting => {}
            Claim::Run => to_run.push(rep),
        }
    }
    crate::plan::longest_first(&mut to_run);
    let first = run_claimed(inner, group, group, to_run.clone());
    // What is left are runs this submission claimed and did not finish.
    to_run.retain(|j| !first.done.contains(&j.id));
    match first.error {
        None => sink_error.map_or(Ok(()), |e| Err(SessionError::Sink(e))),
        Some(SessionError::Cancelled) => {
            // Runs other submissions wait for are run for them now, in a group of their own
            // (nobody can cancel it: each waiter is answered, or told why not).
            let again: Vec<Job> = to_run
                .into_iter()
                .filter(|j| inner.shared.hand_over(&inner.shared.key(group, j)))
                .collect();
            if !again.is_empty() {
                let handed = inner.engine.group();
                let rerun = run_claimed(inner, group, handed, again.clone());
                inner.engine.forget(handed);
                if let Some(e) = rerun.error {
                    let left = again.into_iter().filter(|j| !rerun.done.contains(&j.id));
                    fail_waiters(inner, group, left, &e);
                }
            }
            Err(SessionError::Cancelled)
        }
        Some(e) => {
            fail_waiters(inner, group, to_run.into_iter(), &e);
            Err(e)
        }
    }
}

/// What [`run_claimed`] got done: the jobs that got a verdict, and the error that stopped
/// the rest (if any).
struct Claimed {
    done: HashSet<JobId>,
    error: Option<SessionError>,
}

/// Runs jobs submission `owner` claimed, in engine group `group`, answering every waiter of
/// each as its verdict arrives.
fn run_claimed(inner: &Inner, owner: u64, group: u64, jobs: Vec<Job>) -> Claimed {
    let mut done = HashSet::new();
    let runner = Runner {
        engine: &inner.engine,
        group,
        retry: inner.retry,
    };
    let result = runner.run_jobs(
        Phase::Samples,
        jobs,
        &|e| inner.emit(e),
        &mut |job, outcome| {
            done.insert(job.id.clone());
            let mut first_error = None;
            for (waiter, first) in inner.shared.finish(&inner.shared.key(owner, job), outcome) {
                if let Err(e) = deliver(inner, &waiter, outcome, first) {
                    first_error.get_or_insert(e);
                }
            }
            first_error.map_or(Ok(()), Err)
        },
    );
    Claimed {
        done,
        error: result.err(),
    }
}

/// Every waiter of `jobs` (runs that will get no verdict) is told why.
fn fail_waiters(inner: &Inner, group: u64, jobs: impl Iterator<Item = Job>, why: &SessionError) {
    let error = match why {
        SessionError::NoVerdict { error, .. } => error.clone(),
        other => ExecError::transient(other.to_string()),
    };
    for job in jobs {
        for waiter in inner.shared.fail(&inner.shared.key(group, &job)) {
            for j in &waiter.jobs {
                waiter.answers.send((index_of(&j.id), Err(error.clone())));
            }
        }
    }
}

fn waiter_of(jobs: Vec<Job>, answers: &Answers, cancelled: &Arc<AtomicBool>) -> Waiter {
    Waiter {
        jobs,
        answers: answers.clone(),
        cancelled: cancelled.clone(),
    }
}

fn index_of(id: &JobId) -> usize {
    match id.program {
        Program::Sample(i) => i,
        Program::GroundTruth => unreachable!("submissions hold samples"),
    }
}

/// Answers `waiter`'s samples with `outcome` (the first as `first`, the rest as duplicates),
/// then tells the sinks. Every sample is answered even if a sink fails (the verdict is sound).
fn deliver(inner: &Inner, waiter: &Waiter, outcome: &Outcome, first: Origin) -> anyhow::Result<()> {
    let mut sink_error = None;
    for (i, job) in waiter.jobs.iter().enumerate() {
        let origin = member_origin(first, i);
        let verdict = Verdict {
            outcome: outcome.clone(),
            origin,
        };
        waiter.answers.send((index_of(&job.id), Ok(verdict)));
        inner.counts.lock().unwrap().add(origin);
        if sink_error.is_none() {
            if let Err(e) = inner.emit(&Event::JobDone {
                phase: Phase::Samples,
                job,
                outcome,
                origin,
                samples: None,
            }) {
                sink_error = Some(e);
            }
        }
    }
    sink_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submission_is_send_and_the_session_is_sync() {
        fn send<T: Send>() {}
        fn sync<T: Send + Sync>() {}
        send::<Submission>();
        sync::<WarmSession>();
    }
}
