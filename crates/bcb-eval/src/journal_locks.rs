//! One run at a time writes a journal. Two `bcb evaluate`s of one samples file would run
//! every sample twice, and one with other settings would start the other's journal afresh
//! under it, losing what a killed run had done; a requeued shard beside a live copy (a node
//! that lost contact but not its job) would run the same jobs again into the same journal.
//! The locks are taken before anything starts and held to the end of the run.

use bcb_samples::{JournalLock, LockError};

use crate::journal::samples_journal_path;
use crate::session::results_only_loaded;
use crate::shard::ShardPlan;
use crate::Samples;

/// Locks the journal of each samples file a run will evaluate: not a file whose results are
/// only loaded (nothing is written), nor any of a shard's (it has its own journal,
/// [`ShardPlan::lock_journal`]).
pub fn lock_samples_journals(
    samples: &[Samples],
    force: bool,
    shard: bool,
) -> Result<Vec<JournalLock>, LockError> {
    let mut locks = Vec::new();
    for s in samples {
        if shard || results_only_loaded(&s.path, force) {
            continue;
        }
        let journal = samples_journal_path(&bcb_samples::eval_results_path(&s.path));
        locks.push(JournalLock::acquire(&journal, || {
            format!(
                "{} is being evaluated by another `bcb evaluate` (its journal {} is locked)\n\
                 hint: wait for that run to end, or stop it; running again then loads its \
                 results, or resumes from its journal",
                s.path.display(),
                journal.display()
            )
        })?);
    }
    Ok(locks)
}

impl ShardPlan {
    /// Locks this shard's journal: one process at a time runs a shard.
    pub fn lock_journal(&self) -> Result<JournalLock, LockError> {
        JournalLock::acquire(&self.journal, || {
            format!(
                "shard {}/{} is being run by another `bcb evaluate` (its journal {} is locked)\n\
                 hint: wait for that run to end, or stop it; running this shard again then \
                 resumes from its journal",
                self.shard.tag().index,
                self.shard.count,
                self.journal.display()
            )
        })
    }
}
