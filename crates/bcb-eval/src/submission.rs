//! A submission to the warm session, as its caller holds it: the verdicts as they come
//! ([`Submission`], a blocking iterator) or a handle whose answers go to the caller's own
//! callback ([`SubmissionHandle`]); dropping either cancels the jobs not yet started.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use crate::engine::Engine;
use crate::shared_runs::SubmissionItem;

/// The verdicts of one submission: `(index in the submission, verdict or the error that
/// left it without one)`, in completion order. Blocking iterator; ends when every sample
/// was answered. Dropping it cancels the jobs not yet started.
pub struct Submission {
    pub(crate) rx: Receiver<SubmissionItem>,
    pub(crate) handle: SubmissionHandle,
}

impl Submission {
    /// Samples in the submission.
    pub fn len(&self) -> usize {
        self.handle.len
    }

    pub fn is_empty(&self) -> bool {
        self.handle.len == 0
    }

    /// The next verdict without blocking (`None`: none ready, or all delivered).
    pub fn try_next(&self) -> Option<SubmissionItem> {
        self.rx.try_recv().ok()
    }

    /// See [`SubmissionHandle::cancel`].
    pub fn cancel(&self) {
        self.handle.cancel();
    }
}

impl Iterator for Submission {
    type Item = SubmissionItem;
    fn next(&mut self) -> Option<Self::Item> {
        self.rx.recv().ok()
    }
}

/// A submission whose answers go to the caller's `deliver` ([`WarmSession::submit_with`]).
/// Dropping it cancels the jobs not yet started.
pub struct SubmissionHandle {
    pub(crate) len: usize,
    pub(crate) group: u64,
    /// Its thread is done (answers may still come from runs of other submissions).
    pub(crate) finished: Arc<AtomicBool>,
    /// Read by the runs it waits for: a cancelled waiter is not run for.
    pub(crate) cancelled: Arc<AtomicBool>,
    pub(crate) engine: Arc<Engine>,
}

impl SubmissionHandle {
    /// Cancels the jobs not yet started (running ones finish; their verdicts still come).
    /// A run another submission waits for is handed over to it, not dropped.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
        if !self.finished.load(Ordering::Relaxed) {
            self.engine.cancel(self.group);
        }
    }
}

impl Drop for SubmissionHandle {
    fn drop(&mut self) {
        self.cancel();
    }
}
