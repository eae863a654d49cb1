//! The two files of a run: the append-only journal (`X.jsonl.partial.jsonl`, one line per
//! sample as it arrives, so a killed run loses nothing) and the final samples file `X.jsonl`,
//! rewritten atomically at the end in dataset order with Python's `json.dumps` formatting,
//! which is what the original writes.

use std::path::{Path, PathBuf};

use anyhow::Context;
use bcb_dataset::Dataset;
use serde_json::Value;

/// The journal next to the final file `X.jsonl`: `X.jsonl.partial.jsonl`.
pub fn journal_path(final_path: &Path) -> PathBuf {
    let mut name = final_path.as_os_str().to_os_string();
    name.push(".partial.jsonl");
    PathBuf::from(name)
}

/// The rows of a finished samples file (the original's or ours); none when it does not exist.
pub fn read_final(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: not a JSON row; fix or move the file (--no-resume starts over)",
                path.display(),
                i + 1
            )
        })?;
        rows.push(v);
    }
    Ok(rows)
}

/// `rows` in dataset order (samples of one task keep their order; unknown tasks go last).
fn in_dataset_order(dataset: &Dataset, mut rows: Vec<Value>) -> Vec<Value> {
    // A stable sort keeps each task's samples in the order they were written.
    rows.sort_by_key(|r| {
        r.get("task_id")
            .and_then(Value::as_str)
            .and_then(|id| dataset.position(id))
            .unwrap_or(usize::MAX)
    });
    rows
}

/// Writes the final file from its previous rows and the journal, then removes the journal.
pub fn finalize(dataset: &Dataset, final_path: &Path, previous: Vec<Value>) -> anyhow::Result<()> {
    let journal = journal_path(final_path);
    let mut rows = previous;
    rows.extend(read_journal(&journal)?);
    bcb_samples::write_samples(final_path, &in_dataset_order(dataset, rows))
        .with_context(|| format!("cannot write {}", final_path.display()))?;
    match std::fs::remove_file(&journal) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", journal.display())),
    }
}

/// The complete lines of a journal (a torn last line from a killed run is ignored).
pub fn read_journal(path: &Path) -> anyhow::Result<Vec<Value>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    Ok(bytes
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| l.ends_with(b"\n"))
        .map_while(|l| serde_json::from_slice(l).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_sits_next_to_the_final_file() {
        assert_eq!(
            journal_path(Path::new("r/a.jsonl")),
            Path::new("r/a.jsonl.partial.jsonl")
        );
    }

    #[test]
    fn a_torn_journal_line_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        std::fs::write(&p, "{\"task_id\": \"a\"}\n{\"task_id\": \"b\"}\n{\"task_").unwrap();
        assert_eq!(read_journal(&p).unwrap().len(), 2);
    }
}
