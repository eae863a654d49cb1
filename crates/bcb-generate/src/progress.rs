//! What a run reports while it works. The library never prints: it hands [`Event`]s to a
//! [`Reporter`] and the command line shows them with the shared display (`bcb-progress`).

use std::path::PathBuf;
use std::time::Duration;

/// The counters of a run at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Samples written in this run.
    pub done: u64,
    /// Samples this run set out to write.
    pub total: u64,
    /// Tasks given up on (after retries) so far.
    pub failed_tasks: u64,
    pub retries: u64,
    pub output_tokens: u64,
    pub elapsed: Duration,
    pub cost_usd: Option<f64>,
}

/// What happened, in the order it happened.
#[derive(Debug, Clone)]
pub enum Event {
    /// Work is planned (before any request).
    Plan {
        model: String,
        tasks: usize,
        present: u64,
        to_generate: u64,
        path: PathBuf,
    },
    /// Samples were written (the snapshot after them).
    Progress(Snapshot),
    /// A task was given up on for this run.
    TaskFailed {
        task_id: String,
        error: String,
        snapshot: Snapshot,
    },
    /// The final samples file was rewritten.
    Finished(Snapshot),
}

pub trait Reporter: Send + Sync {
    fn event(&self, event: &Event);
}

/// Reports nothing (library callers that want only the [`crate::Outcome`]).
pub struct Quiet;

impl Reporter for Quiet {
    fn event(&self, _: &Event) {}
}
