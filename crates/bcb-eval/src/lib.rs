//! Evaluation: the plan (which programs run, with which limits), the session that runs
//! ground truth then samples through an executor and emits typed [`Event`]s, and the
//! upstream result types (`*_eval_results.json`, `*_pass_at_k.json`) with pass@k.

pub mod cost;
pub mod dedup;
pub mod event;
pub mod flaky;
pub mod ground_truth;
pub mod journal;
pub mod limits;
pub mod passk;
pub mod plan;
pub mod priors;
pub mod results;
pub mod session;
pub mod shard;
pub mod sleepers;
pub mod verdict_cache;

pub use event::{Event, Origin, Phase, RunReport, Sink};
pub use ground_truth::{GroundTruth, GtCache};
pub use plan::{Samples, Settings, Shard};
pub use results::{EvalResults, PassAtK, SampleResult};
pub use session::{build_report, GtMode, Request, RetryPolicy, SampleRun, Session, SessionError};
pub use shard::{find_shards, merge, ShardPlan};
pub use verdict_cache::VerdictCache;
