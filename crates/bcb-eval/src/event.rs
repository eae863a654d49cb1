//! What a session tells the world: typed events, handed to [`Sink`]s in the order attached.
//! The session never prints or writes files itself; journals, progress, result files and
//! summaries are sinks (`bcb-sinks`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use bcb_execute::{ExecError, Job, Outcome};

use crate::ground_truth::GroundTruth;
use crate::results::{EvalResults, PassAtK};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    GroundTruth,
    Samples,
    /// `--rerun-failures`: failing jobs run again to find flaky verdicts.
    Rerun,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Phase::GroundTruth => "ground truth",
            Phase::Samples => "evaluate",
            Phase::Rerun => "rerun failures",
        }
    }
}

/// Where a job's verdict came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Executed in this run.
    Executed,
    /// The same program of the same task was executed in this run (dedup): its verdict.
    Duplicate,
    /// The verdict cache of earlier runs had it.
    Cached,
    /// Not run: the tamper scan refused it.
    Refused,
}

impl Origin {
    /// An execution this run did not have to do.
    pub fn saved(self) -> bool {
        matches!(self, Origin::Duplicate | Origin::Cached)
    }
}

/// What a run checks, as its first line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAction {
    /// Samples (after their ground truth).
    Evaluating,
    /// The ground truth alone (`--check-gt-only`).
    Checking,
}

impl std::fmt::Display for RunAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RunAction::Evaluating => "evaluating",
            RunAction::Checking => "checking",
        })
    }
}

#[derive(Debug)]
pub enum Event<'a> {
    /// A run begins.
    RunStarted {
        /// What is checked: samples, or the ground truth alone.
        action: RunAction,
        tasks: usize,
        subset: &'a str,
        version: &'a str,
        executor: &'a str,
        parallel: usize,
        protections: &'a [String],
    },
    /// A phase begins: `todo` jobs to run now, `done` already known (cache, journal).
    PhaseStarted {
        phase: Phase,
        todo: usize,
        done: usize,
    },
    /// A job has its verdict (run now or reused: see `origin`).
    JobDone {
        phase: Phase,
        job: &'a Job,
        outcome: &'a Outcome,
        origin: Origin,
        /// The samples file the job belongs to (`None` for ground truth): with several files
        /// in one run, each file's journal takes only its own jobs.
        samples: Option<&'a Path>,
    },
    /// `jobs` got no verdict (infrastructure); they run again after `delay`.
    Retrying {
        phase: Phase,
        jobs: usize,
        attempt: u32,
        delay: Duration,
        error: &'a ExecError,
    },
    PhaseFinished {
        phase: Phase,
    },
    /// Another process is running the ground truth this run needs (its lock is held): this
    /// run waits for it, then takes what it wrote. `holder` as it named itself; `done` of the
    /// `total` tasks this run needs are in the cache. Sent when the wait starts and again as
    /// the cache grows.
    WaitingForGroundTruth {
        path: &'a Path,
        holder: Option<&'a str>,
        done: usize,
        total: usize,
    },
    /// The ground truth of the selected tasks is known (cached, run, or skipped).
    GroundTruthReady {
        gt: &'a GroundTruth,
        task_ids: &'a [String],
    },
    /// An existing results file is used instead of executing (upstream's behaviour).
    ResultsLoaded {
        path: &'a Path,
    },
    /// The samples run is complete.
    Finished(&'a RunReport),
}

/// What an evaluation produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub samples_path: PathBuf,
    pub results_path: PathBuf,
    pub pass_at_k_path: PathBuf,
    pub results: EvalResults,
    pub pass_at_k: PassAtK,
    /// Jobs run in this invocation (0 when results were loaded or fully resumed).
    pub executed: usize,
    /// Jobs taken from the journal of an earlier, interrupted run.
    pub resumed: usize,
    /// Jobs not executed because the same program of the same task ran in this run.
    pub deduplicated: usize,
    /// Jobs not executed because the verdict cache had them.
    pub cached: usize,
    /// The results file existed and was used as it is.
    pub loaded_existing: bool,
    /// A shard's partial run: its verdicts are in its journal, for `bcb merge`.
    pub shard: Option<crate::journal::ShardTag>,
    /// `--rerun-failures`: tasks whose canonical solution changed verdict on a rerun.
    pub flaky_ground_truth: Vec<String>,
}

/// A consumer of events. Called from one thread at a time, in the order events happen.
pub trait Sink: Send {
    /// An error stops the run (nothing more is executed) and is reported to the user.
    fn handle(&mut self, event: &Event) -> anyhow::Result<()>;
}
