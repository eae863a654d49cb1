//! Samples: the model outputs that `evaluate` runs.
//!
//! Two input layouts, as in the original harness: a JSONL file of
//! `{task_id, solution}` / `{task_id, completion}` rows, or a directory
//! `{dir}/{task_id with / -> _}/{k}.py`. Every error names the file and line.

mod appender;
mod lock;
mod naming;
mod read;
mod write;

pub use appender::JsonlAppender;
pub use lock::{no_file_locks, JournalLock, LockError};
pub use naming::{
    eval_results_path, existing_pass_at_k, generated_name, is_samples_file_name, labels,
    model_name, model_of_results, pass_at_k_path, sanitized_name, GENERATED_TAIL, LABELS_MARK,
};
pub use read::{read_bytes, read_samples, Origin, Sample, SampleBody};
pub use write::write_samples;

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SamplesError {
    // The cause is the source (anyhow prints it once, after this).
    #[error("cannot read samples from {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
}
