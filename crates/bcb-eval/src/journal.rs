//! The journal format: a header naming what the records are valid for, then one finished
//! job per line, keyed by [`JobId`]. Journals of shards or of an interrupted run merge by
//! concatenation; a record whose id is not in the current plan is ignored. The writer is a
//! sink (`bcb-sinks`); reading it back is how a run resumes.

use std::path::{Path, PathBuf};

use bcb_execute::{JobId, Outcome};
use serde::{Deserialize, Serialize};

/// Bumped when the record layout changes; older journals are then started afresh.
pub const JOURNAL_VERSION: u32 = 2;

/// First line of every journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalHeader {
    pub bcb_journal: u32,
    /// What the records are valid for (inputs, settings); a different key starts afresh.
    pub key: String,
}

impl JournalHeader {
    pub fn new(key: &str) -> Self {
        JournalHeader {
            bcb_journal: JOURNAL_VERSION,
            key: key.to_string(),
        }
    }
}

/// One finished job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalRecord {
    pub id: JobId,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// `X_eval_results.json` → `X_eval_results.json.partial.jsonl`.
pub fn samples_journal_path(results_path: &Path) -> PathBuf {
    let mut s = results_path.as_os_str().to_owned();
    s.push(".partial.jsonl");
    PathBuf::from(s)
}

/// The records of `path` if its header carries `key`; none if the file is missing, was made
/// for other inputs, or is unreadable (a torn last line is skipped).
pub fn read_journal(path: &Path, key: &str) -> Vec<JournalRecord> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let mut lines = text.split_inclusive('\n');
    let header_ok = lines
        .next()
        .and_then(|l| serde_json::from_str::<JournalHeader>(l).ok())
        .is_some_and(|h| h == JournalHeader::new(key));
    if !header_ok {
        return Vec::new();
    }
    lines
        .filter(|l| l.ends_with('\n'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
