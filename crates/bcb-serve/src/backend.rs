//! What the HTTP side needs from the evaluation engine: submit samples, be handed verdicts in
//! completion order (pushed to the caller's [`Deliver`], so no thread waits or polls per
//! request), cancel by dropping, read queue statistics. The one implementation used by
//! `bcb serve` wraps bcb-eval's long-lived warm session (`warm.rs`); the server never calls an
//! executor itself, for samples or for the scripts of `/run_code`.

use std::sync::Arc;

use bcb_eval::{GroundTruth, Settings};
pub use bcb_eval::{ScriptRequest, SubmitOptions, SubmitSample, Verdict};
use bcb_execute::{ExecError, Outcome};
pub use bcb_samples::SampleBody;

/// Where a submission's answers go, `(index in the submission, verdict or why none)`, called
/// from whichever thread has one; dropped once every answer was delivered or dropped.
pub type Deliver = Box<dyn Fn(usize, Result<Verdict, ExecError>) + Send + Sync>;

/// A submission in flight, held while its answers are wanted: dropping it cancels the jobs
/// not started (running ones finish and are still delivered).
pub trait Submission: Send {}

/// Why a submission was refused before anything ran.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error("unknown task id(s): {}", .0.join(", "))]
    UnknownTasks(Vec<String>),
    #[error("the session is closed (shutting down)")]
    Closed,
    #[error("{message}")]
    Other { message: String, hint: String },
}

/// Queue statistics for `/metrics`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// Jobs waiting for a worker.
    pub queued: usize,
    /// Jobs running.
    pub in_flight: usize,
    /// Verdicts served from the verdict cache since start.
    pub cache_hits: u64,
    /// Verdicts shared by dedup since start.
    pub dedup_hits: u64,
}

/// What an engine's verdicts are made under (fixed for its life).
#[derive(Clone)]
pub struct EngineContext {
    /// Time limits and upstream's `gt_pass_rate` / `failed_tasks` come from it.
    pub gt: Arc<GroundTruth>,
    /// The limits every sample runs under.
    pub settings: Arc<Settings>,
}

/// Where a script's result goes (or the error that left it without one); dropped uncalled
/// if the job never ran (cancelled, or the session closed).
pub type DeliverScript = Box<dyn FnOnce(Result<Outcome, ExecError>) + Send>;

/// One script in flight (`/run_code`), held while its result is wanted: dropping it cancels
/// the job if it has not started.
pub trait ScriptJob: Send {}

/// The engine behind the server.
pub trait Verdicts: Send + Sync {
    fn submit(
        &self,
        samples: Vec<SubmitSample>,
        opts: SubmitOptions,
        deliver: Deliver,
    ) -> Result<Box<dyn Submission>, SubmitError>;

    /// Runs one program with stdin (a script job) on the same engine and sandbox as the
    /// samples. An engine that runs none says so.
    fn run_script(
        &self,
        req: ScriptRequest,
        deliver: DeliverScript,
    ) -> Result<Box<dyn ScriptJob>, SubmitError> {
        let _ = (req, deliver);
        Err(SubmitError::Other {
            message: "this engine runs no scripts".into(),
            hint: "serve /run_code from `bcb serve` with the local executor".into(),
        })
    }

    fn stats(&self) -> Stats;

    /// The ground truth and settings the verdicts are made under, for answers in upstream's
    /// result-file shape (`upstream` on `/v1/evaluate`); `None`: this engine cannot give them.
    fn context(&self) -> Option<EngineContext> {
        None
    }

    /// Stops accepting submissions; running jobs finish.
    fn close(&self);
}
