//! Runs canonical solutions through an executor and prints one JSON line per task plus a
//! summary: the driver of bench/execute.sh.
//!
//! usage: execute_gt <pool|process> <full|hard> [parallel] [task ids or numbers...]
//! env: BCB_PYTHON (eval interpreter), BCB_DATASET_DIR (dataset files)

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bcb_dataset::{DatasetSpec, Subset};
use bcb_execute::{executor_for, ExecConfig, Job, Limits};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = args.first().map(String::as_str).unwrap_or("pool");
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
    let python = std::env::var("BCB_PYTHON")
        .unwrap_or_else(|_| "/root/.cache/bcb/eval-env-py311/bin/python".into());
    let dataset = DatasetSpec::new(subset, None).load()?;
    let time_limit: f64 = std::env::var("BCB_TIME_LIMIT")
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
        .enumerate()
        .map(|(key, t)| Job {
            key,
            task_id: t.task_id.clone(),
            code: format!("{}\n{}", t.complete_prompt, t.canonical_solution),
            test: t.test.clone(),
            entry_point: t.entry_point.clone(),
            time_limit: Duration::from_secs_f64(time_limit),
            expected_secs: None,
        })
        .collect();
    // Longest first when a timing file from an earlier run is given.
    if let Ok(path) = std::env::var("BCB_EXPECTED") {
        let text = std::fs::read_to_string(&path)?;
        let times: std::collections::HashMap<String, f64> = serde_json::from_str(&text)?;
        for j in &mut jobs {
            j.expected_secs = times.get(&j.task_id).copied();
        }
        jobs.sort_by(|a, b| b.expected_secs.partial_cmp(&a.expected_secs).unwrap());
    }
    let cfg = ExecConfig {
        python: python.into(),
        parallel,
        limits: Limits::default(),
    };
    let start = Instant::now();
    let exec = executor_for(kind, cfg)?;
    for p in exec.protections() {
        eprintln!("protection: {p}");
    }
    let n = jobs.len();
    let results = Mutex::new(Vec::new());
    exec.run(jobs, &|job, out| {
        let line = serde_json::json!({
            "task_id": job.task_id, "status": out.status.as_str(), "test_secs": out.test_secs,
            "wall_secs": out.wall_secs, "note": out.note,
            "details": out.details.keys().collect::<Vec<_>>(),
        });
        println!("{line}");
        results
            .lock()
            .unwrap()
            .push((out.status, out.test_secs, out.wall_secs));
    })?;
    let wall = start.elapsed().as_secs_f64();
    let r = results.into_inner().unwrap();
    let pass = r
        .iter()
        .filter(|x| x.0 == bcb_execute::Status::Pass)
        .count();
    eprintln!("{kind}: {pass}/{n} pass, wall {wall:.1}s");
    Ok(())
}
