//! Evaluation orchestration: ground truth, per-sample limits, resumable runs, and the
//! upstream result files (`*_eval_results.json`, `*_pass_at_k.json`).

pub mod ground_truth;
mod journaled;
pub mod limits;
pub mod passk;
pub mod progress;
pub mod results;
pub mod run;

pub use ground_truth::{GroundTruth, GtEntry, GtOptions};
pub use progress::Progress;
pub use run::{evaluate_samples, EvalOptions, EvalReport, PreparedSamples};
