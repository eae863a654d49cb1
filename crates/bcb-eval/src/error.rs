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
    /// Another process holds the ground truth's lock and has not written to it for long.
    #[error(
        "the ground truth {} is locked by another process ({}), which has written nothing to it for {secs:.0} s\n\
         hint: a run stopped with Ctrl-Z holds it: let it go on (fg) or end it; or give this run a cache of its own with BCB_CACHE_DIR",
        path.display(),
        holder.as_deref().unwrap_or("which did not say who it is")
    )]
    GroundTruthStalled {
        path: std::path::PathBuf,
        holder: Option<String>,
        secs: f64,
    },
}

fn hint_line(e: &ExecError) -> String {
    let hint = e
        .hint()
        .unwrap_or("the run can be resumed: run the same command again; finished jobs are kept");
    format!("\nhint: {hint}")
}
