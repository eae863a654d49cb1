//! The executor contract: what every backend keeps, all the test kit needs, and what reports
//! read of a verdict.
//!
//! The session (`bcb-eval`) builds [`Job`]s, each with a stable [`JobId`], and hands them to
//! an [`Executor`]. For each job the executor returns either an [`Outcome`] — a verdict in
//! upstream's terms ([`Status`] + [`Details`]) with timings — or an [`ExecError`] when it
//! could not get one (infrastructure, retryable or not). An `ExecError` is never a verdict.
//!
//! The backends live in crates of their own: `bcb-sandbox` (one sample's sandbox and the
//! harness), `bcb-pool` (the local executors and their scheduler), `bcb-remote` (the Gradio
//! and E2B clients); `bcb-execute` picks one for a run.

use std::ops::ControlFlow;
use std::path::PathBuf;

mod error;
pub mod hack;
pub mod intake;
mod job;
mod local_kind;
mod marker;
pub mod stop;
mod verdict;

pub use error::ExecError;
pub use hack::{HackClass, HackFlag, HackPolicy};
pub use intake::{JobSource, OnServed, Peek, Ticket};
pub use job::{
    program_digest, Job, JobId, JobKind, Limits, Program, ScriptInput, SLEEPER_CPU_SHARE,
};
pub use local_kind::LocalKind;
pub use marker::Marker;
pub use verdict::{Details, Outcome, Remark, ScriptEnd, ScriptRun, Status, ALL};

/// Interpreter and limits every local backend needs.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// Python interpreter of the evaluation environment.
    pub python: PathBuf,
    /// Samples running at once (CPU-bound); backends may overlap more when idle.
    pub parallel: usize,
    /// Most samples in flight at once, overlap included (the local backend admits more than
    /// `parallel` only while CPUs idle and memory allows); 0 = the local backend's default
    /// (`bcb_pool::default_max_in_flight`).
    pub max_in_flight: usize,
    pub limits: Limits,
    /// What a detected reward hack gets; `Off` runs no watch.
    pub hacks: HackPolicy,
}

/// What the caller hears for each job, from any thread, as it finishes. Returning
/// `ControlFlow::Break` asks the executor to start no further jobs (running ones finish and
/// are still reported); jobs never started are simply not reported.
pub type OnDone<'a> = dyn Fn(Job, Result<Outcome, ExecError>) -> ControlFlow<()> + Sync + 'a;

/// A way to run jobs.
pub trait Executor: Send + Sync {
    /// Short name for messages (`process`, `pool`).
    fn name(&self) -> &'static str;

    /// Runs the jobs, in the order given as far as parallelism allows (the session puts the
    /// longest expected first), calling `done` once per job started.
    fn run(&self, jobs: Vec<Job>, done: &OnDone) -> Result<(), ExecError>;

    /// Runs what `source` hands out until it closes, calling `done` once per job started;
    /// a warm backend keeps its workers between jobs (and between submissions of whoever
    /// feeds the source). The default runs whatever is queued as one [`Executor::run`] batch
    /// at a time (correct for any backend, not warm).
    fn serve(&self, source: &dyn JobSource, done: &OnServed) -> Result<(), ExecError> {
        intake::serve_in_batches(source, done, usize::MAX, |jobs, d| self.run(jobs, d))
    }

    /// Asks a warm backend to warm every worker, the overlap ones beyond `parallel` included,
    /// as soon as it serves, instead of each on its first job: for a service, whose first
    /// burst of requests would otherwise wait on imports (a batch, which may never need its
    /// overlap workers, does not ask). Call before [`Executor::serve`]. Default: nothing warms.
    fn warm_every_worker(&self) {}

    /// After [`Executor::warm_every_worker`], blocks until every worker is warm or `within`
    /// passed; returns whether they are. Default: nothing to wait for.
    fn wait_warm(&self, within: std::time::Duration) -> bool {
        let _ = within;
        true
    }

    /// What runs the samples, a line each, for the run's header and logs: the sandbox's
    /// protections in force, or where a remote backend sends the jobs.
    fn describe(&self) -> Vec<String> {
        Vec::new()
    }
}
