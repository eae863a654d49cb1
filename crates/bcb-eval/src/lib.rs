//! Evaluation: the plan (which programs run, with which limits), the session that runs
//! ground truth then samples through an executor and emits typed [`Event`]s, and the
//! upstream result types (`*_eval_results.json`, `*_pass_at_k.json`) with pass@k.
//!
//! Rooms: [`settings`] (what changes a verdict, and the keys derived from it), [`plan`]
//! (programs → jobs, longest first, shards), `engine` (one executor serving a fair queue of
//! submissions), `runner` (retry + breaker), [`session`] (the phases of a batch run),
//! [`warm`] (a long-lived session taking submissions over time), `assembly` (results and
//! reports, shared with `merge`), [`error`].

mod assembly;
pub mod cost;
mod dedup;
mod engine;
pub mod error;
pub mod event;
pub mod flaky;
pub mod ground_truth;
pub mod journal;
pub mod limits;
pub mod passk;
pub mod plan;
mod priors;
pub mod results;
mod runner;
pub mod session;
pub mod settings;
pub mod shard;
pub mod verdict_cache;
pub mod warm;

pub use assembly::{assemble, build_report};
pub use engine::EngineStats;
pub use error::SessionError;
pub use event::{Event, Origin, Phase, RunReport, Sink};
pub use ground_truth::{GroundTruth, GtCache};
pub use plan::{Samples, Shard};
pub use results::{EvalResults, PassAtK, SampleResult};
pub use runner::RetryPolicy;
pub use session::{GtMode, Request, Reuse, SampleRun, Session};
pub use settings::{samples_journal_key, Settings};
pub use shard::{find_shards, merge, ShardPlan};
pub use verdict_cache::VerdictCache;
pub use warm::{Submission, SubmitOptions, SubmitSample, WarmSession, WarmStats};
