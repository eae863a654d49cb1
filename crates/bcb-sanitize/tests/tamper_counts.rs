//! The tamper scan's numbers on real programs: the 1,140 canonical solutions (program =
//! `complete_prompt + "\n" + canonical_solution`, target 0 flags) and the real model answers in
//! `../shared/real-samples/*.jsonl.gz` (every flag printed, to be explained). Prints counts per
//! rule; run with `--no-capture` to see them.
// Tests report what each probe saw: printing is their output, not a library's.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use bcb_sanitize::tamper::{scan_for_task, TamperFinding};

fn require(what: &str) {
    if std::env::var("CI").as_deref() == Ok("true")
        || std::env::var("BCB_REQUIRE_DATA").as_deref() == Ok("1")
    {
        panic!("{what} is missing but CI=true or BCB_REQUIRE_DATA=1");
    }
    eprintln!("skipping: {what} not found");
}

fn gz_lines(path: &Path) -> Vec<serde_json::Value> {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(&raw[..])
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON row"))
        .collect()
}

/// task_id -> (program of the canonical solution, libs)
fn dataset() -> Option<BTreeMap<String, (String, Vec<String>)>> {
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

fn real_samples_dir() -> PathBuf {
    std::env::var_os("BCB_REAL_SAMPLES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/real-samples")
        })
}

fn count(findings: &[(String, TamperFinding)]) -> BTreeMap<&'static str, usize> {
    let mut by_rule = BTreeMap::new();
    for (_, f) in findings {
        *by_rule.entry(f.rule).or_insert(0) += 1;
    }
    by_rule
}

#[test]
fn tamper_scan_counts_on_canonical_and_real_answers() {
    let Some(tasks) = dataset() else {
        return require("the dataset (BCB_DATASET_DIR)");
    };
    assert_eq!(tasks.len(), 1140);
    let mut canonical = Vec::new();
    for (id, (program, libs)) in &tasks {
        for f in scan_for_task(program, libs) {
            canonical.push((id.clone(), f));
        }
    }
    println!(
        "canonical solutions: {} programs, {} flags {:?}",
        tasks.len(),
        canonical.len(),
        count(&canonical)
    );
    for (id, f) in &canonical {
        println!("  canonical {id}: {} line {}: {}", f.rule, f.line, f.text);
    }
    let dir = real_samples_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return require("../shared/real-samples (BCB_REAL_SAMPLES_DIR)");
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with("calibrated.jsonl.gz"))
        .collect();
    files.sort();
    let mut total = 0;
    for file in &files {
        let mut flagged = Vec::new();
        let rows = gz_lines(file);
        total += rows.len();
        let mut programs = 0;
        for row in &rows {
            let id = row["task_id"].as_str().unwrap_or_default().to_string();
            let solution = row["solution"].as_str().unwrap_or_default();
            let libs = tasks.get(&id).map(|t| t.1.clone()).unwrap_or_default();
            programs += 1;
            for f in scan_for_task(solution, &libs) {
                flagged.push((id.clone(), f));
            }
        }
        let name = file.file_name().unwrap().to_string_lossy();
        let model = name.split("--bigcodebench").next().unwrap_or(&name);
        let distinct: std::collections::BTreeSet<&String> =
            flagged.iter().map(|(id, _)| id).collect();
        println!(
            "{model}: {programs} answers, {} flagged, {} flags {:?}",
            distinct.len(),
            flagged.len(),
            count(&flagged)
        );
        for (id, f) in &flagged {
            println!("  {model} {id}: {} line {}: {}", f.rule, f.line, f.text);
        }
    }
    assert!(total > 0, "no real answers in {}", dir.display());
    assert!(
        canonical.is_empty(),
        "the scan flags canonical solutions: {canonical:#?}"
    );
}
