//! Log targets of the local executors, named in docs and bench scripts (`BCB_LOG=...`): kept
//! under their first crate's name so every command written with them still works.

/// The per-job stage breakdown (`BCB_LOG=bcb_execute::stages=debug`), and the CPU each sample
/// used after its verdict.
pub(crate) const STAGES: &str = "bcb_execute::stages";

/// The queue's start and end lines (`BCB_LOG=bcb_execute::queue=debug`): with the governor's
/// freeze and thaw lines, where a run's idle time comes from.
pub(crate) const QUEUE: &str = "bcb_execute::queue";
