//! Scale bench of the orchestrator: plan → session → sinks with the scripted executor
//! (`bcb_testkit::FakeExecutor`, nothing runs), for N jobs over the full dataset's 1,140 tasks.
//! One run per process, so the peak RSS is this size's own. Prints one tab-separated line:
//!
//! `jobs  read_s  session_s  cpu_s  cpu_us_per_job  peak_rss_mb  base_rss_mb  samples_mb
//!  results_write_s  results_mb  journal_s  passk_s`
//!
//! - `read_s`: reading and checking the samples file (`Samples::read`);
//! - `session_s`: the whole session (ground truth from the fake, plan, dedup, sinks, files);
//! - `cpu_s`: user + system CPU of the process from reading the samples to the files written;
//! - `peak_rss_mb`: the process's high-water mark; `base_rss_mb` the same before the samples
//!   file was read (dataset loaded);
//! - `results_write_s`, `journal_s`, `passk_s`: time spent in those sinks.
//!
//! Usage: `cargo run --release -p bcb-eval --example scale -- JOBS DIR` with
//! `BCB_DATASET_DIR` naming the folder of `bigcodebench-v0.1.4.jsonl.gz` (bench/scale.sh).

#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench prints its table

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bcb_dataset::{Dataset, Split, Subset};
use bcb_envvars::EnvVars;
use bcb_eval::{
    samples_journal_key, Event, GtCache, GtMode, Request, Reuse, SampleRun, Samples, Session,
    Settings, Sink,
};
use bcb_execute::{Details, Limits, Outcome, Status};
use bcb_sinks::{ProgressMode, StandardSinks};
use bcb_testkit::FakeExecutor;

/// Seconds of CPU (user + system) this process has used.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 (1-based), i.e. 11 and 12 after the state field.
    let hz = 100.0; // USER_HZ on every Linux this runs on
    (ticks(11) + ticks(12)) / hz
}

/// Peak resident set (VmHWM) in MB.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn mb(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(0.0, |m| m.len() as f64 / 1e6)
}

/// Times one sink's handling of every event.
struct Timed {
    inner: Box<dyn Sink>,
    spent: Arc<Mutex<Duration>>,
}

impl Sink for Timed {
    fn handle(&mut self, event: &Event) -> anyhow::Result<()> {
        let t = Instant::now();
        let r = self.inner.handle(event);
        *self.spent.lock().unwrap() += t.elapsed();
        r
    }
}

/// A samples file of `jobs` rows over every task: each task's canonical solution (a real
/// program of real size) with a distinct comment, so that no two programs are equal.
fn write_samples(ds: &Dataset, jobs: usize, path: &Path) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let tasks = ds.tasks();
    for i in 0..jobs {
        let task = &tasks[i % tasks.len()];
        let solution = format!(
            "{}{}# sample {i}\n",
            task.complete_prompt, task.canonical_solution
        );
        let row = serde_json::json!({"task_id": task.task_id, "solution": solution});
        serde_json::to_writer(&mut out, &row).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
}

/// Mixed verdicts, as a real run has them: ~half pass, ~40% fail with a traceback, the rest
/// time out.
fn script(job: &bcb_execute::Job, _attempt: usize) -> Result<Outcome, bcb_execute::ExecError> {
    let h = job
        .id
        .digest
        .as_bytes()
        .iter()
        .map(|&b| b as usize)
        .sum::<usize>()
        % 10;
    let mut outcome = match h {
        0..=4 => Outcome::new(Status::Pass, Details::new()),
        5..=8 => {
            let mut d = Details::new();
            d.insert(
                "test_case_1",
                "Traceback (most recent call last):\n  File \"__test__.py\", line 42, in test_case_1\n    self.assertEqual(result, expected)\nAssertionError: 3 != 4\n",
            );
            Outcome::new(Status::Fail, d)
        }
        _ => Outcome::new(Status::Timeout, Details::all("Timed out!")),
    };
    outcome.test_secs = Some(0.5);
    outcome.wall_secs = 0.7;
    Ok(outcome)
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let jobs: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .expect("usage: scale JOBS DIR");
    let dir = PathBuf::from(args.next().expect("usage: scale JOBS DIR"));
    std::fs::create_dir_all(&dir)?;
    let data = std::env::var_os(EnvVars::BCB_DATASET_DIR)
        .map(PathBuf::from)
        .expect("set BCB_DATASET_DIR to the folder of bigcodebench-v0.1.4.jsonl.gz");
    let ds = Dataset::from_file(
        &data.join("bigcodebench-v0.1.4.jsonl.gz"),
        Subset::Full,
        "v0.1.4",
    )?;
    let samples_path = dir.join(format!(
        "scale-{jobs}--main--bigcodebench-complete--fake-0-1-sanitized_calibrated.jsonl"
    ));
    let results_path = bcb_samples::eval_results_path(&samples_path);
    for p in [
        results_path.clone(),
        bcb_samples::pass_at_k_path(&results_path),
        bcb_eval::journal::samples_journal_path(&results_path),
    ] {
        std::fs::remove_file(p).ok();
    }
    if !samples_path.is_file() {
        write_samples(&ds, jobs, &samples_path);
    }
    let settings = Settings {
        split: Split::Complete,
        calibrated: true,
        min_time_limit: 1.0,
        base_timeout: 240.0,
        limits: Limits::default(),
        runtime: "fake".into(),
        tamper: Default::default(),
        hacks: Default::default(),
    };
    let base_rss = peak_rss_mb();
    let cpu0 = cpu_secs();
    let t0 = Instant::now();
    let samples = Samples::read(&ds, &samples_path, settings.calibrated)?;
    let read_s = t0.elapsed().as_secs_f64();
    let gt_cache = GtCache::new(&dir.join("gt-cache.jsonl"), &ds, &settings);
    let key = samples_journal_key(&samples, &settings);
    let sinks = bcb_sinks::standard(StandardSinks {
        gt_cache: Some(&gt_cache),
        samples: vec![(samples.path.as_path(), key)],
        progress: ProgressMode::Off,
        save_pass_rate: true,
        force: false,
        console: None,
        shard: None,
    });
    // The standard order: gt journal, progress, results file, pass@k file, samples journal,
    // reruns journal. Each is timed under its role.
    let names = ["gt", "progress", "results", "passk", "journal", "rerun"];
    let mut spent: Vec<(&str, Arc<Mutex<Duration>>)> = Vec::new();
    let timed: Vec<Box<dyn Sink>> = sinks
        .into_iter()
        .zip(names)
        .map(|(inner, name)| {
            let s = Arc::new(Mutex::new(Duration::ZERO));
            spent.push((name, s.clone()));
            Box::new(Timed { inner, spent: s }) as Box<dyn Sink>
        })
        .collect();
    let exec = FakeExecutor::new(script);
    let t1 = Instant::now();
    let session = Session::new(&ds, &exec, &settings, timed).with_reuse(Reuse {
        dedup: true,
        cache: None,
    });
    let request = Request {
        gt: GtMode::Use,
        samples: vec![samples],
        run: SampleRun {
            pass_k: vec![1, 5, 10],
            no_gt: false,
            force: false,
        },
        parallel: 2,
        shard: None,
    };
    let reports = session.run(&gt_cache, &request)?;
    drop(reports);
    drop(session);
    drop(request);
    let session_s = t1.elapsed().as_secs_f64();
    let cpu = cpu_secs() - cpu0;
    let of = |name: &str| {
        spent
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0.0, |(_, s)| s.lock().unwrap().as_secs_f64())
    };
    let breakdown: Vec<String> = spent
        .iter()
        .map(|(n, s)| format!("{n}={:.3}", s.lock().unwrap().as_secs_f64()))
        .collect();
    eprintln!("time in sinks (s): {}", breakdown.join(" "));
    println!(
        "{jobs}\t{read_s:.3}\t{session_s:.3}\t{cpu:.2}\t{:.1}\t{:.1}\t{base_rss:.1}\t{:.1}\t{:.3}\t{:.1}\t{:.3}\t{:.3}",
        cpu * 1e6 / jobs as f64,
        peak_rss_mb(),
        mb(&samples_path),
        of("results"),
        mb(&results_path),
        of("journal"),
        of("passk"),
    );
    Ok(())
}
