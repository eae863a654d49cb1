//! The tamper scan's numbers on real programs: the 1,140 canonical solutions (program =
//! `complete_prompt + "\n" + canonical_solution`, target 0 flags) and the real model answers in
//! `../shared/real-samples/*.jsonl.gz` (every flag printed, to be explained). Prints counts per
//! rule; run with `--no-capture` to see them.
// Tests report what each probe saw: printing is their output, not a library's.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;

use bcb_sanitize::tamper::{scan_for_task, TamperFinding};
use common::real::{dataset, gz_lines, real_samples_dir, real_samples_files, require};

mod common;

fn count(findings: &[(String, TamperFinding)]) -> BTreeMap<&'static str, usize> {
    let mut by_rule = BTreeMap::new();
    for (_, f) in findings {
        *by_rule.entry(f.rule).or_insert(0) += 1;
    }
    by_rule
}

/// Every finding of `who` (a model, or the canonical solutions), one line each.
fn print_findings(who: &str, findings: &[(String, TamperFinding)]) {
    for (id, f) in findings {
        println!("  {who} {id}: {} line {}: {}", f.rule, f.line, f.text);
    }
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
    print_findings("canonical", &canonical);
    let Some(files) = real_samples_files() else {
        return;
    };
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
        print_findings(model, &flagged);
    }
    assert!(
        total > 0,
        "no real answers in {}",
        real_samples_dir().display()
    );
    assert!(
        canonical.is_empty(),
        "the scan flags canonical solutions: {canonical:#?}"
    );
}
