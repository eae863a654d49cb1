//! Runs canonical solutions through an executor and prints one JSON line per task plus a
//! summary: the driver of bench/execute.sh.
//!
//! usage: execute_gt <pool|process> <full|hard> [parallel] [task ids or numbers...]
//! env: BCB_PYTHON (eval interpreter), BCB_DATASET_DIR (dataset files)
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark tool: it prints

use bcb_envvars::EnvVars;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bcb_dataset::{DatasetSpec, Subset};
use bcb_execute::{executor_for, ExecConfig, Job, JobId, Limits, LocalKind, Program};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind: LocalKind = args.first().map_or(Ok(LocalKind::Pool), |k| k.parse())?;
    let subset: Subset = args
        .get(1)
        .map(|s| s.parse().map_err(anyhow::Error::msg))
        .transpose()?
        .unwrap_or(Subset::Hard);
    let parallel = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let only: Vec<String> = args.iter().skip(3).cloned().collect();
    let python = std::env::var_os(EnvVars::BCB_PYTHON)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            bcb_execute::local::env::env_python(&bcb_execute::local::env::default_env_dir())
        });
    let dataset = DatasetSpec::new(subset, None).load()?;
    let time_limit: f64 = std::env::var(EnvVars::BCB_TIME_LIMIT)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(241.0);
    let mut jobs: Vec<Job> = dataset
        .tasks()
        .iter()
        .filter(|t| {
            only.is_empty()
                || only
                    .iter()
                    .any(|o| t.task_id == *o || t.task_id == format!("BigCodeBench/{o}"))
        })
        .map(|t| {
            let code = format!("{}\n{}", t.complete_prompt, t.canonical_solution);
            Job {
                id: JobId::new(&t.task_id, Program::GroundTruth, &code),
                code: code.into(),
                test: t.test.as_str().into(),
                entry_point: t.entry_point.clone(),
                time_limit: Duration::from_secs_f64(time_limit),
                kind: bcb_execute::JobKind::Unittest,
                expected_secs: None,
                expected_cpu_secs: None,
            }
        })
        .collect();
    // Longest first when a timing file from an earlier run is given.
    if let Ok(path) = std::env::var(EnvVars::BCB_EXPECTED) {
        let text = std::fs::read_to_string(&path)?;
        let times: std::collections::HashMap<String, f64> = serde_json::from_str(&text)?;
        for j in &mut jobs {
            j.expected_secs = times.get(j.task_id()).copied();
        }
        jobs.sort_by(|a, b| b.expected_secs.partial_cmp(&a.expected_secs).unwrap());
    }
    let cfg = ExecConfig {
        python,
        parallel,
        max_in_flight: 0,
        limits: Limits::default(),
        hacks: Default::default(),
    };
    let start = Instant::now();
    let exec = executor_for(kind, cfg)?;
    for p in exec.describe() {
        eprintln!("protection: {p}");
    }
    let n = jobs.len();
    let results = Mutex::new(Vec::new());
    exec.run(jobs, &|job, out| {
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{}: no verdict: {e}", job.id);
                return std::ops::ControlFlow::Continue(());
            }
        };
        let line = serde_json::json!({
            "task_id": job.task_id(), "status": out.status.as_str(), "test_secs": out.test_secs,
            "wall_secs": out.wall_secs, "note": out.remark.as_ref().map(ToString::to_string),
            "details": out.details.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        });
        if std::env::var_os(EnvVars::BCB_SHOW_DETAILS).is_some() {
            eprintln!(
                "{}",
                serde_json::to_string_pretty(&out.details).unwrap_or_default()
            );
        }
        println!("{line}");
        results
            .lock()
            .unwrap()
            .push((out.status, out.test_secs, out.wall_secs));
        std::ops::ControlFlow::Continue(())
    })?;
    let wall = start.elapsed().as_secs_f64();
    let r = results.into_inner().unwrap();
    let pass = r
        .iter()
        .filter(|x| x.0 == bcb_execute::Status::Pass)
        .count();
    let tests: Vec<f64> = r.iter().filter_map(|x| x.1).collect();
    let sum_tests: f64 = tests.iter().sum();
    let longest = tests.iter().cloned().fold(0.0, f64::max);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let floor = longest.max(sum_tests / cores);
    let mut overhead: Vec<f64> = r.iter().filter_map(|x| x.1.map(|t| x.2 - t)).collect();
    overhead.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median_overhead = overhead
        .get(overhead.len() / 2)
        .copied()
        .unwrap_or(f64::NAN);
    let (self_cpu, child_cpu) = cpu_times();
    let summary = serde_json::json!({
        "executor": kind.to_string(), "tasks": n, "pass": pass, "wall_secs": wall,
        "cpu_secs_self": self_cpu, "cpu_secs_children": child_cpu,
        "samples_per_sec": n as f64 / wall, "sum_test_secs": sum_tests,
        "longest_test_secs": longest, "floor_secs": floor,
        "median_overhead_secs": median_overhead, "peak_rss_mb_self": peak_rss_mb(),
        "parallel": parallel,
    });
    eprintln!("SUMMARY {summary}");
    Ok(())
}

fn cpu_times() -> (f64, f64) {
    let get = |who| unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    };
    (get(libc::RUSAGE_SELF), get(libc::RUSAGE_CHILDREN))
}

/// VmHWM of this process only (children excluded).
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}
