//! Sinks: everything that consumes a session's [`Event`](bcb_eval::Event)s. A new output is a
//! new sink, never a branch in the session or the CLI.
//!
//! Order matters where one sink relies on another's work: [`standard`] attaches them so that
//! the result files are written before the journal that backs them is dropped.

mod cache_writer;
mod console;
mod files;
mod gt_summary;
mod journal_writer;
mod progress;

use std::path::Path;

pub use cache_writer::VerdictCacheSink;
pub use console::ConsoleSummary;
pub use files::{backup, EvalResultsFile, PassAtKFile};
pub use gt_summary::GtSummaryFile;
pub use journal_writer::JournalSink;
pub use progress::{ProgressMode, ProgressSink};

use bcb_eval::journal::rerun_journal_path;
use bcb_eval::journal::{samples_journal_path, JournalHeader};
use bcb_eval::{GtCache, Phase, Sink};

/// What the standard set of sinks of `bcb evaluate` should do.
pub struct StandardSinks<'a> {
    pub gt_cache: Option<&'a GtCache>,
    /// The samples files (none for `--check-gt-only`), each with its journal key.
    pub samples: Vec<(&'a Path, String)>,
    pub progress: ProgressMode,
    /// Write `*_pass_at_k.json` (upstream `--save_pass_rate`).
    pub save_pass_rate: bool,
    /// `--force`: an existing results file is moved to `.bak` before the new one is written.
    pub force: bool,
    pub console: Option<ConsoleSummary>,
    /// A shard: one journal for both phases, kept for `bcb merge`; no result files.
    pub shard: Option<&'a bcb_eval::ShardPlan>,
}

/// The sinks of an evaluation, in the order they must run.
pub fn standard(s: StandardSinks) -> Vec<Box<dyn Sink>> {
    let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
    if let Some(shard) = s.shard {
        sinks.push(Box::new(JournalSink::new(
            &shard.journal,
            shard.header.clone(),
            &[Phase::GroundTruth, Phase::Samples],
            false,
        )));
        sinks.push(Box::new(ProgressSink::new(s.progress)));
        sinks.extend(s.console.map(|c| Box::new(c) as Box<dyn Sink>));
        return sinks;
    }
    if let Some(cache) = s.gt_cache {
        sinks.push(Box::new(JournalSink::new(
            &cache.path,
            cache.header(),
            &[Phase::GroundTruth],
            false,
        )));
    }
    sinks.push(Box::new(ProgressSink::new(s.progress)));
    if !s.samples.is_empty() {
        // Each writes the files of every finished report (one per samples file).
        sinks.push(Box::new(EvalResultsFile::new(s.force)));
        if s.save_pass_rate {
            sinks.push(Box::new(PassAtKFile));
        }
    }
    for (samples, key) in &s.samples {
        let results = bcb_samples::eval_results_path(samples);
        // After the file writers: they drop the journals once the result files above exist.
        // The reruns journal is only created when `--rerun-failures` runs something.
        for (journal, phase) in [
            (samples_journal_path(&results), Phase::Samples),
            (rerun_journal_path(&results), Phase::Rerun),
        ] {
            sinks.push(Box::new(
                JournalSink::new(&journal, JournalHeader::new(key), &[phase], true)
                    .for_samples(samples),
            ));
        }
    }
    if let Some(console) = s.console {
        sinks.push(Box::new(console));
    }
    sinks
}
