//! A session that stays warm: ONE executor serving submissions over time, for one dataset
//! and one [`Settings`], with the ground truth loaded or run once at start (so every time
//! limit is known). Each [`WarmSession::submit`] goes through the same path as a batch run —
//! tamper scan, dedup, verdict cache, retries with the breaker, events to the sinks — and
//! yields `(index, verdict)` in completion order. Several submitters share the executor's
//! workers fairly (round-robin between submissions, longest first within one); dropping a
//! [`Submission`] cancels its jobs not yet started. Batch `bcb evaluate` runs on the same
//! engine (see [`crate::session`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bcb_dataset::Dataset;
use bcb_execute::{Details, ExecError, Executor, JobId, Outcome, Program, Status};
use bcb_samples::SampleBody;

use crate::dedup::{Groups, Member};
use crate::engine::Engine;
use crate::error::SessionError;
use crate::event::{Event, Origin, Phase, Sink};
use crate::ground_truth::{GroundTruth, GtCache};
use crate::plan::{program_code, sample_jobs, tamper_refusal, SampleProgram};
use crate::runner::{RetryPolicy, Runner};
use crate::session::{GtMode, Session};
use crate::settings::Settings;
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
    /// Jobs of the same task with the same program run once per submission.
    pub dedup: bool,
    /// Verdicts of earlier runs (lookups only; recording is the sinks' business).
    pub cache: Option<Arc<VerdictCache>>,
}

impl Default for WarmOptions {
    fn default() -> Self {
        WarmOptions {
            gt: GtMode::Use,
            retry: RetryPolicy::default(),
            dedup: true,
            cache: None,
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
    /// Submissions not finished yet.
    pub active_submissions: usize,
    /// Submissions accepted since start.
    pub submissions: u64,
    /// Verdicts since start, by where they came from.
    pub executed: u64,
    pub cached: u64,
    pub deduplicated: u64,
    pub refused: u64,
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
    cache: Option<Arc<VerdictCache>>,
    sinks: SharedSinks,
    stats: Mutex<WarmStats>,
}

impl Inner {
    fn emit(&self, event: &Event) -> anyhow::Result<()> {
        for sink in self.sinks.lock().unwrap().iter_mut() {
            sink.handle(event)?;
        }
        Ok(())
    }
}

/// A long-lived session over one warm executor. See the module docs.
pub struct WarmSession {
    inner: Arc<Inner>,
    server: Option<JoinHandle<()>>,
}

/// Forwards a [`Session`]'s events to the shared sinks (the ground-truth phase at start).
struct Forward(SharedSinks);

impl Sink for Forward {
    fn handle(&mut self, event: &Event) -> anyhow::Result<()> {
        for sink in self.0.lock().unwrap().iter_mut() {
            sink.handle(event)?;
        }
        Ok(())
    }
}

impl WarmSession {
    /// Starts `executor` serving (its workers stay up until [`WarmSession::close`]), then
    /// loads the ground truth from `gt_cache` and runs what is missing (per `opts.gt`), with
    /// its events to `sinks`.
    pub fn start(
        dataset: Arc<Dataset>,
        executor: Arc<dyn Executor>,
        settings: Settings,
        gt_cache: &GtCache,
        sinks: Vec<Box<dyn Sink + Send>>,
        opts: WarmOptions,
    ) -> Result<WarmSession, SessionError> {
        let engine = Engine::new();
        let server = {
            let (engine, executor) = (engine.clone(), executor.clone());
            std::thread::Builder::new()
                .name("bcb-warm-executor".into())
                .spawn(move || {
                    if let Err(e) = engine.serve(&*executor) {
                        tracing::warn!("the warm executor stopped: {e}");
                    }
                })
                .map_err(|e| SessionError::Sink(e.into()))?
        };
        let sinks: SharedSinks = Arc::new(Mutex::new(sinks));
        let gt = {
            let forward: Vec<Box<dyn Sink>> = vec![Box::new(Forward(sinks.clone()))];
            let session =
                Session::new(&dataset, &*executor, &settings, forward).with_retry(opts.retry);
            match opts.gt {
                GtMode::Skip => session.skip_ground_truth(),
                GtMode::Use => session.ground_truth_of(&engine, gt_cache, false, None),
                GtMode::Recheck => session.ground_truth_of(&engine, gt_cache, true, None),
            }
        };
        let gt = match gt {
            Ok(gt) => gt,
            Err(e) => {
                engine.abort();
                let _ = server.join();
                return Err(e);
            }
        };
        Ok(WarmSession {
            inner: Arc::new(Inner {
                dataset,
                settings,
                gt,
                engine,
                retry: opts.retry,
                dedup: opts.dedup,
                cache: opts.cache,
                sinks,
                stats: Mutex::new(WarmStats::default()),
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
        let (tx, rx) = channel();
        {
            let mut st = inner.stats.lock().unwrap();
            st.submissions += 1;
            st.active_submissions += 1;
        }
        let worker = {
            let (inner, finished) = (self.inner.clone(), finished.clone());
            std::thread::Builder::new()
                .name(format!("bcb-submission-{group}"))
                .spawn(move || {
                    let result = run_submission(&inner, group, programs, &tx);
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
        Ok(Submission {
            rx,
            len,
            group,
            finished,
            engine: self.inner.engine.clone(),
        })
    }

    pub fn stats(&self) -> WarmStats {
        let e = self.inner.engine.stats();
        WarmStats {
            queued: e.queued,
            in_flight: e.in_flight,
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

/// The verdicts of one submission: `(index in the submission, verdict or the error that
/// left it without one)`, in completion order. Blocking iterator; ends when every sample
/// was answered. Dropping it cancels the jobs not yet started.
pub struct Submission {
    rx: Receiver<(usize, Result<Outcome, ExecError>)>,
    len: usize,
    group: u64,
    finished: Arc<AtomicBool>,
    engine: Arc<Engine>,
}

/// What a [`Submission`] yields: the sample's index in the submission and its verdict (or
/// the error that left it without one).
pub type SubmissionItem = (usize, Result<Outcome, ExecError>);

/// Every verdict of a submission has been delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllDelivered;

impl Submission {
    /// Samples in the submission.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The next verdict without blocking (`None`: none ready, or all delivered).
    pub fn try_next(&self) -> Option<(usize, Result<Outcome, ExecError>)> {
        self.rx.try_recv().ok()
    }

    /// The next verdict, waiting at most `wait`: `Ok(None)` when none came in time,
    /// `Err(AllDelivered)` once every verdict was delivered (a server's forwarding thread uses it to
    /// notice a client that went away without blocking in `next()`).
    pub fn next_timeout(
        &mut self,
        wait: std::time::Duration,
    ) -> Result<Option<SubmissionItem>, AllDelivered> {
        match self.rx.recv_timeout(wait) {
            Ok(item) => Ok(Some(item)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(AllDelivered),
        }
    }

    /// Cancels the jobs not yet started (running ones finish; their verdicts still come).
    pub fn cancel(&self) {
        if !self.finished.load(Ordering::Relaxed) {
            self.engine.cancel(self.group);
        }
    }
}

impl Iterator for Submission {
    type Item = (usize, Result<Outcome, ExecError>);
    fn next(&mut self) -> Option<Self::Item> {
        self.rx.recv().ok()
    }
}

impl Drop for Submission {
    fn drop(&mut self) {
        self.cancel();
    }
}

type Verdicts = Sender<(usize, Result<Outcome, ExecError>)>;

/// One submission through the same steps as a batch samples phase.
fn run_submission(
    inner: &Inner,
    group: u64,
    programs: Vec<SampleProgram>,
    tx: &Verdicts,
) -> Result<(), SessionError> {
    let index_of = |id: &JobId| match id.program {
        Program::Sample(i) => i,
        Program::GroundTruth => unreachable!("submissions hold samples"),
    };
    let mut answered = vec![false; programs.len()];
    let mut answer = |id: &JobId, verdict: Result<Outcome, ExecError>| {
        let i = index_of(id);
        answered[i] = true;
        let _ = tx.send((i, verdict));
    };
    let count = |f: &dyn Fn(&mut WarmStats)| f(&mut inner.stats.lock().unwrap());
    let jobs = sample_jobs(&inner.dataset, &programs, &inner.settings, &inner.gt);
    let mut work = Vec::with_capacity(jobs.len());
    for job in jobs {
        match tamper_refusal(&inner.dataset, &job, inner.settings.tamper) {
            Some(text) => {
                let outcome = Outcome::new(Status::Fail, Details::all(text));
                inner.emit(&Event::JobDone {
                    phase: Phase::Samples,
                    job: &job,
                    outcome: &outcome,
                    origin: Origin::Refused,
                    samples: None,
                })?;
                count(&|s| s.refused += 1);
                answer(&job.id, Ok(outcome));
            }
            None => work.push(Member { file: 0, job }),
        }
    }
    let groups = Groups::new(work, inner.dedup);
    let mut hand_out = |rep: &JobId, outcome: &Outcome, first: Origin| -> anyhow::Result<()> {
        for (i, m) in groups.members(rep).iter().enumerate() {
            let origin = if i == 0 { first } else { Origin::Duplicate };
            inner.emit(&Event::JobDone {
                phase: Phase::Samples,
                job: &m.job,
                outcome,
                origin,
                samples: None,
            })?;
            count(&|s| match origin {
                Origin::Executed => s.executed += 1,
                Origin::Cached => s.cached += 1,
                _ => s.deduplicated += 1,
            });
            answer(&m.job.id, Ok(outcome.clone()));
        }
        Ok(())
    };
    let mut to_run = Vec::new();
    for job in &groups.runs {
        match inner.cache.as_ref().and_then(|c| c.get(job)) {
            Some(outcome) => hand_out(&job.id, outcome, Origin::Cached)?,
            None => to_run.push(job.clone()),
        }
    }
    crate::plan::longest_first(&mut to_run);
    let runner = Runner {
        engine: &inner.engine,
        group,
        retry: inner.retry,
    };
    let result = runner.run_jobs(
        Phase::Samples,
        to_run,
        &|e| inner.emit(e),
        &mut |job, outcome| hand_out(&job.id, outcome, Origin::Executed),
    );
    if let Err(SessionError::NoVerdict { error, .. }) = &result {
        // Every sample still without a verdict gets the error that left it so.
        let left: Vec<usize> = (0..answered.len()).filter(|i| !answered[*i]).collect();
        for i in left {
            let _ = tx.send((i, Err(error.clone())));
        }
    }
    result.map(|_| ())
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
