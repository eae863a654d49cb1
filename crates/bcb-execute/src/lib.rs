//! Execution of programs against their unittest suites: the contract every backend keeps.
//!
//! The session (`bcb-eval`) builds [`Job`]s, each with a stable [`JobId`], and hands them to
//! an [`Executor`]. For each job the executor returns either an [`Outcome`] — a verdict in
//! upstream's terms ([`Status`] + [`Details`]) with timings — or an [`ExecError`] when it
//! could not get one (infrastructure, retryable or not). An `ExecError` is never a verdict.
//!
//! Backends, one folder each: [`local`] (this machine: a sandboxed fresh process or
//! pre-warmed pool per sample, see its docs), [`gradio`] (a BigCodeBench evaluator Space) and
//! [`e2b`] (an E2B sandbox running the local backend). Remote ones send jobs in chunks through
//! [`remote::Chunked`] and keep the same contract; [`ExecutorSpec`] names which one a run uses.

use std::ops::ControlFlow;
use std::path::PathBuf;

pub mod e2b;
mod error;
pub mod gradio;
pub mod hack;
pub mod intake;
mod job;
pub mod local;
pub mod remote;
mod spec;
pub mod stop;
mod verdict;

pub use error::ExecError;
pub use hack::{HackClass, HackFlag, HackPolicy, REWARD_HACK};
pub use intake::{JobSource, OnServed, Peek, Ticket};
pub use job::{program_digest, Job, JobId, JobKind, Limits, Program, ScriptInput};
pub use local::{
    default_max_in_flight, host_isolation, landlock_abi, Isolation, PoolExecutor, ProcessExecutor,
    Protection, ProtectionKind,
};
pub use spec::{ExecutorSpec, LocalKind, Runtime};
pub use verdict::{Details, Outcome, Remark, ScriptEnd, ScriptRun, Status, ALL};

/// Interpreter and limits every local backend needs.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// Python interpreter of the evaluation environment.
    pub python: PathBuf,
    /// Samples running at once (CPU-bound); backends may overlap more when idle.
    pub parallel: usize,
    /// Most samples in flight at once, overlap included (the local backend admits more than
    /// `parallel` only while CPUs idle and memory allows); 0 = [`default_max_in_flight`].
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

    /// The protections in force (namespaces, cgroups, rlimits...), for `env check` and logs.
    fn protections(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Builds the local executor named `kind` (`pool` or `process`).
pub fn executor_for(kind: &str, cfg: ExecConfig) -> anyhow::Result<Box<dyn Executor>> {
    let kind: LocalKind = kind.parse()?;
    ExecutorSpec::Local(kind).build(cfg)
}

/// Like [`executor_for`] with an explicit isolation level.
pub fn executor_with(
    kind: &str,
    cfg: ExecConfig,
    iso: Isolation,
) -> anyhow::Result<Box<dyn Executor>> {
    Ok(match kind.parse::<LocalKind>()? {
        LocalKind::Process => Box::new(ProcessExecutor::with_isolation(cfg, iso)?),
        LocalKind::Pool => Box::new(PoolExecutor::with_isolation(cfg, iso)?),
    })
}

/// The verdict cache's sandbox key on this host with `cfg` ([`Isolation::cache_key`]).
pub fn sandbox_key(cfg: &ExecConfig) -> String {
    host_isolation().cache_key(cfg)
}

/// The protections samples would get on this host with `cfg`, one line each.
pub fn probe_protections(cfg: &ExecConfig) -> Vec<String> {
    host_isolation().describe(cfg)
}
