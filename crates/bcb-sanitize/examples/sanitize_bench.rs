//! Helper for bench/sanitize.sh.
//!   sanitize_bench gen N OUT.jsonl     answers generated from the dataset ($BCB_DATASET_DIR):
//!                                      {"code", "entry"} per line, plus OUT.samples.jsonl
//!                                      ({"task_id", "solution"}) for `bcb sanitize`
//!   sanitize_bench time IN.jsonl       sanitize every answer on one thread; prints seconds
#![allow(clippy::print_stdout, clippy::print_stderr)] // test output: what ran, what was skipped

#[path = "../tests/common/answers.rs"]
mod answers;

use std::io::Write;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("gen") => {
            let n: usize = args[2].parse().expect("N");
            let out = &args[3];
            let f = answers::dataset_file().expect("dataset not found: set BCB_DATASET_DIR");
            let tasks = answers::load_tasks(&f);
            let mut w = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
            let mut s = std::io::BufWriter::new(
                std::fs::File::create(out.replace(".jsonl", ".samples.jsonl")).unwrap(),
            );
            for a in answers::answers(&tasks, n, 4242) {
                let rec = serde_json::json!({"code": a.text, "entry": a.entry_point});
                writeln!(w, "{rec}").unwrap();
                let smp = serde_json::json!({"task_id": a.task_id, "solution": a.text});
                writeln!(s, "{smp}").unwrap();
            }
        }
        Some("time") => {
            let text = std::fs::read_to_string(&args[2]).unwrap();
            let recs: Vec<(String, String)> = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    (
                        v["code"].as_str().unwrap().to_string(),
                        v["entry"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            let t0 = Instant::now();
            let mut bytes = 0;
            for (code, entry) in &recs {
                bytes += bcb_sanitize::sanitize(code, Some(entry)).len();
            }
            let secs = t0.elapsed().as_secs_f64();
            eprintln!("{} answers, {bytes} output bytes", recs.len());
            println!("{secs:.3}");
        }
        _ => {
            eprintln!("usage: sanitize_bench gen N OUT.jsonl | time IN.jsonl");
            std::process::exit(2);
        }
    }
}
