//! The upstream result files, written atomically in Python's JSON layout.

use std::path::{Path, PathBuf};

use anyhow::Context;
use bcb_eval::{Event, Sink};

/// Writes `value` as `json.dumps(value, indent=2)` would, atomically, streamed to the file.
fn write_json<T: serde::Serialize + ?Sized>(path: &Path, value: &T) -> anyhow::Result<()> {
    bcb_pyjson::write_pretty_atomic(path, value)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Moves `path` to the first free `path.bak`, `path.bak.bak`, ... as upstream names backups.
pub fn backup(path: &Path) -> anyhow::Result<PathBuf> {
    let mut bak = path.as_os_str().to_owned();
    loop {
        bak.push(".bak");
        if !Path::new(&bak).exists() {
            break;
        }
    }
    let bak = PathBuf::from(bak);
    std::fs::rename(path, &bak)
        .with_context(|| format!("cannot move {} to {}", path.display(), bak.display()))?;
    Ok(bak)
}

/// `X_eval_results.json`, unless the run used an existing one.
pub struct EvalResultsFile {
    force: bool,
}

impl EvalResultsFile {
    pub fn new(force: bool) -> Self {
        EvalResultsFile { force }
    }
}

impl Sink for EvalResultsFile {
    fn handle(&mut self, event: &Event) -> anyhow::Result<()> {
        if let Event::Finished(report) = event {
            if report.loaded_existing {
                return Ok(());
            }
            if self.force && report.results_path.exists() {
                backup(&report.results_path)?;
            }
            write_json(&report.results_path, &report.results)?;
        }
        Ok(())
    }
}

/// `X_pass_at_k.json`; a previous file with other content is kept as `.bak`.
pub struct PassAtKFile;

impl Sink for PassAtKFile {
    fn handle(&mut self, event: &Event) -> anyhow::Result<()> {
        if let Event::Finished(report) = event {
            let path = &report.pass_at_k_path;
            let json = report.pass_at_k.to_json();
            if path.is_file() {
                let old: Option<serde_json::Map<String, serde_json::Value>> = std::fs::read(path)
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok());
                if old.as_ref() == Some(&json) {
                    return Ok(());
                }
                let bak = backup(path)?;
                tracing::warn!(
                    "{} differed; previous kept as {}",
                    path.display(),
                    bak.display()
                );
            }
            write_json(path, &json)?;
        }
        Ok(())
    }
}
