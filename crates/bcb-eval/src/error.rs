//! Why a run or a submission stopped before it was complete.

use bcb_execute::ExecError;

/// Why a run stopped before it was complete.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The executor could not give verdicts; what was finished is journaled.
    #[error("{phase}: {jobs} job(s) got no verdict after {attempts} attempt(s): {error}{}", hint_line(.error))]
    NoVerdict {
        phase: &'static str,
        jobs: usize,
        attempts: usize,
        error: ExecError,
    },
    /// A sink failed (e.g. the journal could not be written).
    #[error(transparent)]
    Sink(#[from] anyhow::Error),
    /// The submission was cancelled (dropped) before it finished.
    #[error("the submission was cancelled")]
    Cancelled,
    /// A submission named tasks the session's dataset does not have.
    #[error("unknown task id(s): {}\nhint: use task ids of the session's dataset (version and subset), e.g. BigCodeBench/0", .0.join(", "))]
    UnknownTasks(Vec<String>),
    /// The warm session is closed (or its executor stopped): it takes no more work.
    #[error("the session is closed\nhint: start a new session")]
    Closed,
}

fn hint_line(e: &ExecError) -> String {
    let hint = e
        .hint()
        .unwrap_or("the run can be resumed: run the same command again; finished jobs are kept");
    format!("\nhint: {hint}")
}
