//! Running jobs so that every outcome is journaled the moment it arrives: the one loop behind
//! both the ground truth and sample evaluation, and the reason a killed run loses nothing.

use std::sync::Mutex;

use anyhow::Context;
use bcb_execute::{Executor, Job, Outcome, Status};
use bcb_samples::JsonlAppender;
use serde::Serialize;

use crate::progress::Bar;

/// Runs `jobs`, turns each outcome into a record with `to_record`, appends it to `journal`
/// (durably) and counts it on `bar`. Returns the new records in completion order.
pub fn run_journaled<R: Serialize + Send>(
    executor: &dyn Executor,
    jobs: Vec<Job>,
    journal: JsonlAppender,
    bar: &Bar,
    to_record: impl Fn(Job, Outcome) -> R + Sync,
) -> anyhow::Result<Vec<R>> {
    let path = journal.path().to_path_buf();
    let journal = Mutex::new(journal);
    let fresh = Mutex::new(Vec::with_capacity(jobs.len()));
    let write_error = Mutex::new(None);
    executor.run(jobs, &|job: Job, outcome: Outcome| {
        let passed = outcome.status == Status::Pass;
        let record = to_record(job, outcome);
        if let Err(e) = journal.lock().unwrap().append(&record) {
            write_error.lock().unwrap().get_or_insert(e);
        }
        bar.record(passed);
        fresh.lock().unwrap().push(record);
    })?;
    bar.finish();
    if let Some(e) = write_error.into_inner().unwrap() {
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(fresh.into_inner().unwrap())
}

/// Orders jobs by expected test time, longest first (unknown last, then in the caller's order),
/// so the slowest tasks do not start at the end and stretch the wall time.
pub fn longest_first(jobs: &mut [Job]) {
    jobs.sort_by(|a, b| {
        b.expected_secs
            .unwrap_or(0.0)
            .total_cmp(&a.expected_secs.unwrap_or(0.0))
            .then(a.key.cmp(&b.key))
    });
}
