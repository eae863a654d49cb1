//! How well the sleeper ranking puts real timeouts early: for each pair of a samples file
//! (JSONL, optionally .gz) and its official `_eval_results.json` (optionally .gz), orders the
//! samples as `bcb evaluate` would (expected time, longest first; default limits) with and
//! without the sleeper score, and prints how many of the timeouts fall in the first tenth.
//!
//! `cargo run -p bcb-eval --example sleepers_rank -- SAMPLES RESULTS [SAMPLES RESULTS ...]`
#![allow(clippy::print_stdout)]

use std::collections::HashMap;
use std::io::Read;

use bcb_eval::{limits::sample_time_limit, priors, sleepers};

fn read(path: &str) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    if path.ends_with(".gz") {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .expect("gzip");
        s
    } else {
        String::from_utf8(bytes).expect("utf-8")
    }
}

struct Sample {
    key: (usize, usize, usize), // file, task number, index
    code: String,
    timeout: bool,
}

fn report(name: &str, samples: &[Sample], with_score: bool) {
    let mut order: Vec<(f64, &Sample)> = samples
        .iter()
        .map(|s| {
            let task = format!("BigCodeBench/{}", s.key.1);
            let base = priors::expected_secs(&task);
            let limit = sample_time_limit(base, 1.0, 240.0);
            let e = if with_score {
                sleepers::expected_secs(&s.code, base, limit)
            } else {
                base
            };
            (e.unwrap_or(0.0), s)
        })
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.key.cmp(&b.1.key)));
    let tenth = order.len().div_ceil(10);
    let timeouts = samples.iter().filter(|s| s.timeout).count();
    let early = order[..tenth].iter().filter(|(_, s)| s.timeout).count();
    let flagged = order
        .iter()
        .filter(|(_, s)| with_score && sleepers::score(&s.code) > 0)
        .count();
    let positions: Vec<usize> = order
        .iter()
        .enumerate()
        .filter(|(_, (_, s))| s.timeout)
        .map(|(i, _)| i + 1)
        .collect();
    println!(
        "{name} [{}]: {} samples, {timeouts} timeouts; first tenth ({tenth}): {early} timeouts -> recall {:.2}, precision {:.3}; flagged by the score: {flagged}; timeout positions {positions:?}",
        if with_score { "sleepers first" } else { "priors only" },
        order.len(),
        early as f64 / timeouts.max(1) as f64,
        early as f64 / tenth as f64,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    assert!(
        !args.is_empty() && args.len().is_multiple_of(2),
        "usage: sleepers_rank SAMPLES RESULTS [SAMPLES RESULTS ...]"
    );
    let mut all = Vec::new();
    for (f, pair) in args.chunks(2).enumerate() {
        let results: serde_json::Value = serde_json::from_str(&read(&pair[1])).expect("results");
        let mut status: HashMap<String, Vec<String>> = HashMap::new();
        for (task, rows) in results["eval"].as_object().expect("eval") {
            for r in rows.as_array().expect("rows") {
                status
                    .entry(task.clone())
                    .or_default()
                    .push(r["status"].as_str().unwrap_or("").to_string());
            }
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut samples = Vec::new();
        for line in read(&pair[0]).lines().filter(|l| !l.trim().is_empty()) {
            let row: serde_json::Value = serde_json::from_str(line).expect("jsonl");
            let task = row["task_id"].as_str().expect("task_id").to_string();
            let i = seen.entry(task.clone()).or_default();
            let timeout = status
                .get(&task)
                .and_then(|v| v.get(*i))
                .is_some_and(|s| s == "timeout");
            let num: usize = task.rsplit('/').next().unwrap().parse().unwrap();
            samples.push(Sample {
                key: (f, num, *i),
                code: row["solution"].as_str().unwrap_or("").to_string(),
                timeout,
            });
            *i += 1;
        }
        let name = pair[0].rsplit('/').next().unwrap_or(&pair[0]);
        let name = name.split("--").take(2).collect::<Vec<_>>().join("--");
        report(&name, &samples, false);
        report(&name, &samples, true);
        all.extend(samples);
    }
    if args.len() > 2 {
        report("all files together", &all, false);
        report("all files together", &all, true);
    }
}
