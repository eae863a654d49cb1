//! Real programs for the scans' count tests (tamper, safety): the dataset's canonical
//! solutions and the real model answers in `../shared/real-samples`.
#![allow(dead_code, clippy::print_stderr)] // a skipped test says why on stderr

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn require(what: &str) {
    if std::env::var("CI").as_deref() == Ok("true")
        || std::env::var("BCB_REQUIRE_DATA").as_deref() == Ok("1")
    {
        panic!("{what} is missing but CI=true or BCB_REQUIRE_DATA=1");
    }
    eprintln!("skipping: {what} not found");
}

pub fn gz_lines(path: &Path) -> Vec<serde_json::Value> {
    super::answers::read_gz(path)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON row"))
        .collect()
}

/// task_id -> (program of the canonical solution, libs)
pub fn dataset() -> Option<BTreeMap<String, (String, Vec<String>)>> {
    let dir = std::env::var_os("BCB_DATASET_DIR").map(PathBuf::from)?;
    let f = dir.join("bigcodebench-v0.1.4.jsonl.gz");
    if !f.exists() {
        return None;
    }
    let mut out = BTreeMap::new();
    for v in gz_lines(&f) {
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        // `libs` is a Python list literal in the dataset.
        let libs: Vec<String> = s("libs")
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .map(|l| l.trim().trim_matches(|c| c == '\'' || c == '"').to_string())
            .filter(|l| !l.is_empty())
            .collect();
        let program = format!("{}\n{}", s("complete_prompt"), s("canonical_solution"));
        out.insert(s("task_id"), (program, libs));
    }
    Some(out)
}

/// The real models' samples files (`*calibrated.jsonl.gz`) in [`real_samples_dir`], sorted;
/// `None` (after [`require`]) when the folder is missing.
pub fn real_samples_files() -> Option<Vec<PathBuf>> {
    let Ok(entries) = std::fs::read_dir(real_samples_dir()) else {
        require("../shared/real-samples (BCB_REAL_SAMPLES_DIR)");
        return None;
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with("calibrated.jsonl.gz"))
        .collect();
    files.sort();
    Some(files)
}

pub fn real_samples_dir() -> PathBuf {
    std::env::var_os("BCB_REAL_SAMPLES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/real-samples")
        })
}
