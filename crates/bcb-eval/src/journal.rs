//! The journal format: a header naming what the records are valid for, then one finished
//! job per line, keyed by [`JobId`]. Journals of shards or of an interrupted run merge by
//! concatenation; a record whose id is not in the current plan is ignored. The writer is a
//! sink (`bcb-sinks`); reading it back is how a run resumes.

use std::path::{Path, PathBuf};

use bcb_dataset::{Split, Subset};

pub use crate::flaky::rerun_journal_path;
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
    /// A shard's journal says which plan it belongs to, readable by `bcb merge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardTag>,
}

impl JournalHeader {
    pub fn new(key: &str) -> Self {
        JournalHeader {
            bcb_journal: JOURNAL_VERSION,
            key: key.to_string(),
            plan: None,
            shard: None,
        }
    }
}

/// What a sharded run is made of: shards merge only when all of this is equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanInfo {
    pub version: String,
    pub subset: Subset,
    /// md5 of the dataset file content.
    pub dataset: String,
    /// Digest of every (task, program) of the samples file.
    pub samples: String,
    pub split: Split,
    pub calibrated: bool,
    /// Limits, time settings and runtime (see `Settings::execution_key`; it also names the
    /// ground-truth cache `bcb merge` fills).
    pub settings: String,
    /// The tamper policy (a refusal is a verdict, so shards under different policies never
    /// merge). Empty in journals written before it was recorded.
    #[serde(default)]
    pub tamper: String,
}

/// Shard `index` (1-based, as written on the command line) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardTag {
    pub index: usize,
    pub count: usize,
}

/// `X_eval_results.json` → `X_eval_results.json.shard-I-of-N.jsonl`.
pub fn shard_journal_path(results_path: &Path, shard: ShardTag) -> PathBuf {
    let mut s = results_path.as_os_str().to_owned();
    s.push(format!(".shard-{}-of-{}.jsonl", shard.index, shard.count));
    PathBuf::from(s)
}

/// The header line of a journal, if it has one.
pub fn read_header(path: &Path) -> Option<JournalHeader> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file).read_line(&mut first).ok()?;
    serde_json::from_str(&first).ok()
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
    read_records(path, key)
}

/// [`read_journal`] for journals of another record type (e.g. the verdict cache's).
/// Streamed line by line: a journal of a million verdicts is never in memory as text.
pub fn read_records<T: serde::de::DeserializeOwned>(path: &Path, key: &str) -> Vec<T> {
    use std::io::BufRead;
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut line = Vec::new();
    let mut next_line = |line: &mut Vec<u8>| {
        line.clear();
        // Only complete lines: a torn last one (no newline) ends the journal.
        matches!(reader.read_until(b'\n', line), Ok(n) if n > 0 && line.ends_with(b"\n"))
    };
    let header_ok = next_line(&mut line)
        && serde_json::from_slice::<JournalHeader>(&line)
            .is_ok_and(|h| h.bcb_journal == JOURNAL_VERSION && h.key == key);
    if !header_ok {
        return Vec::new();
    }
    let mut records = Vec::new();
    while next_line(&mut line) {
        if let Ok(r) = serde_json::from_slice(&line) {
            records.push(r);
        }
    }
    records
}
