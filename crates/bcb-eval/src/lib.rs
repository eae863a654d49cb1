//! Evaluation: the plan (which programs run, with which limits), the session that runs
//! ground truth then samples through an executor and emits typed [`Event`]s, and the
//! upstream result types (`*_eval_results.json`, `*_pass_at_k.json`) with pass@k.
//!
//! Rooms (private modules; what others use is re-exported here):
//! - `settings`: what can change a verdict ([`Settings`]), and the keys derived from it;
//! - `plan`: programs → jobs with limits, longest first, the split into shards;
//! - `engine`: ONE executor serving a fair queue of submissions (round-robin between them);
//! - `runner`: a submission's jobs to a verdict each, with retries and the breaker;
//! - `session`: the phases of a batch run ([`Session`]: ground truth, samples, reruns);
//! - `warm`: a long-lived session taking submissions over time ([`WarmSession`]);
//! - `triage`: the steps before a sample runs (tamper scan, dedup groups, verdict cache),
//!   shared by `session` and `warm`;
//! - `shared_runs`: dedup across a warm session's submissions (runs in flight, verdicts kept);
//! - `script`: script jobs (a program with stdin, `/run_code`) on a warm session's engine;
//! - `assembly`: results in upstream's order and run reports (shared with `merge`);
//! - `error`: [`SessionError`].
//!
//! Public modules are file formats and tools around runs: [`journal`], [`verdict_cache`],
//! [`gt_lock`] (one process at a time runs a ground truth),
//! [`shard`] (merging shard journals), [`cost`] (`bcb plan`), [`passk`], and what the
//! scheduler's order is made of ([`sleepers`], [`priors`], [`limits`]; the `sleepers_rank`
//! example reads them).

mod assembly;
pub mod cost;
mod dedup;
mod engine;
mod error;
mod event;
mod flaky;
mod ground_truth;
pub mod gt_lock;
pub mod journal;
mod journal_locks;
pub mod limits;
pub mod passk;
mod phases;
mod plan;
pub mod priors;
mod results;
mod runner;
mod script;
mod session;
mod settings;
pub mod shard;
mod shared_runs;
pub mod sleepers;
mod submission;
mod triage;
pub mod verdict_cache;
mod warm;

pub use assembly::{assemble, build_report, SampleRun};
pub use bcb_execute::process_tree_cpu_secs;
pub use error::SessionError;
pub use event::{Event, Origin, Phase, RunAction, RunReport, Sink};
pub use ground_truth::{failure_summary, GroundTruth, GtCache};
pub use journal_locks::lock_samples_journals;
pub use limits::DEFAULT_BASE_TIMEOUT;
pub use phases::GtMode;
pub use plan::samples_journal_key;
pub use plan::{SampleProgram, Samples, Shard};
pub use results::{EvalResults, PassAtK, SampleResult};
pub use runner::RetryPolicy;
pub use script::{ScriptRequest, ScriptSubmission, SCRIPT_TASK_ID};
pub use session::{results_only_loaded, Request, Reuse, Session};
pub use settings::Settings;
pub use shard::{find_shards, merge, ShardPlan};
pub use submission::{Submission, SubmissionHandle};
pub use verdict_cache::VerdictCache;
pub use warm::{
    SubmissionItem, SubmitOptions, SubmitSample, Verdict, WarmOptions, WarmSession, WarmStats,
};

/// Test fixtures shared by the unit tests of several modules.
#[cfg(test)]
pub(crate) mod test_support {
    use bcb_execute::{Job, JobId, JobKind, Program};
    use std::time::Duration;

    /// A sample job of task `T/0` running `code` (one-second limit).
    pub fn job(code: &str) -> Job {
        Job {
            id: JobId::new("T/0", Program::Sample(0), code),
            code: code.into(),
            test: "t".into(),
            entry_point: "f".into(),
            time_limit: Duration::from_secs(1),
            expected_secs: None,
            expected_cpu_secs: None,
            kind: JobKind::Unittest,
        }
    }
}
