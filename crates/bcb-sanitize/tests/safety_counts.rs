//! The safety report's numbers on real programs (`bcb syncheck --safety`): findings per rule
//! on the 1,140 canonical solutions (`complete_prompt + "\n" + canonical_solution`) and on
//! the real model answers in `../shared/real-samples/*.jsonl.gz`. The counts are pinned so a
//! rule change shows up here; run with `--no-capture` to see every finding.
// Tests report what each probe saw: printing is their output, not a library's.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;

use bcb_sanitize::safety::scan_for_task;
use common::real::{dataset, gz_lines, real_samples_dir, real_samples_files, require};

mod common;

/// Findings per rule, and how many programs have at least one.
fn counts<'a>(
    programs: impl Iterator<Item = (&'a str, &'a str, Vec<String>)>,
    label: &str,
) -> (BTreeMap<&'static str, usize>, usize) {
    let mut by_rule = BTreeMap::new();
    let mut flagged = 0;
    for (id, code, libs) in programs {
        let findings = scan_for_task(code, &libs);
        flagged += usize::from(!findings.is_empty());
        for f in findings {
            println!("  {label} {id}: {} line {}: {}", f.rule, f.line, f.text);
            *by_rule.entry(f.rule).or_insert(0) += 1;
        }
    }
    (by_rule, flagged)
}

#[test]
fn safety_counts_on_canonical_and_real_answers() {
    let Some(tasks) = dataset() else {
        return require("the dataset (BCB_DATASET_DIR)");
    };
    assert_eq!(tasks.len(), 1140);
    let (canonical, flagged) = counts(
        tasks
            .iter()
            .map(|(id, (p, libs))| (id.as_str(), p.as_str(), libs.clone())),
        "canonical",
    );
    println!("canonical solutions: {flagged} of 1140 with findings; per rule {canonical:?}");
    let Some(files) = real_samples_files() else {
        return;
    };
    let mut real = Vec::new();
    for file in &files {
        let rows = gz_lines(file);
        let programs: Vec<(String, String, Vec<String>)> = rows
            .iter()
            .map(|r| {
                let id = r["task_id"].as_str().unwrap_or_default().to_string();
                let libs = tasks.get(&id).map(|t| t.1.clone()).unwrap_or_default();
                (
                    id,
                    r["solution"].as_str().unwrap_or_default().to_string(),
                    libs,
                )
            })
            .collect();
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let model = name
            .split("--bigcodebench")
            .next()
            .unwrap_or(&name)
            .to_string();
        let (by_rule, flagged) = counts(
            programs
                .iter()
                .map(|(i, c, l)| (i.as_str(), c.as_str(), l.clone())),
            &model,
        );
        println!(
            "{model}: {flagged} of {} answers with findings; per rule {by_rule:?}",
            rows.len()
        );
        real.push((model, rows.len(), flagged, by_rule));
    }
    assert!(
        !real.is_empty(),
        "no real answers in {}",
        real_samples_dir().display()
    );
    // Measured 2026-12-01. Tasks about processes, downloads and mail need these operations, so
    // canonical solutions have them too; nothing writes to a path literal outside the cwd, and
    // the tamper rules flag nothing (see tamper_counts.rs).
    let rules = |v: [usize; 6]| -> BTreeMap<&'static str, usize> {
        [
            "credentials",
            "delete",
            "environment",
            "network",
            "shell",
            "subprocess",
        ]
        .into_iter()
        .zip(v)
        .collect()
    };
    assert_eq!((flagged, canonical), (108, rules([8, 22, 10, 67, 10, 23])));
    let want = [
        (
            "NousResearch--Hermes-2-Theta-Llama-3-8B--main",
            105,
            rules([7, 17, 10, 65, 5, 29]),
        ),
        (
            "microsoft--Phi-4-multimodal-instruct--main",
            102,
            rules([8, 14, 7, 66, 7, 27]),
        ),
    ];
    for (model, n, flagged, by_rule) in &real {
        assert_eq!(*n, 1140, "{model}");
        let Some((_, f, r)) = want.iter().find(|w| w.0 == model) else {
            continue; // another model's answers: printed above, not pinned
        };
        assert_eq!((flagged, by_rule), (f, r), "{model}");
    }
}
