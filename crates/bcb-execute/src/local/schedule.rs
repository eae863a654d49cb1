//! Work queue shared by the executors: jobs in the caller's order (longest expected first),
//! `workers` always busy, plus up to `extra` more in flight while the CPUs sit idle
//! (sleep- or I/O-bound samples), so the wall time approaches the floor.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::{ExecError, Job, OnDone, Outcome};

/// Busy and total jiffies over all CPUs, from /proc/stat.
fn cpu_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// Runs `jobs`; each worker builds its state with `make(index, primary)` and turns jobs
/// into outcomes with `step`.
pub(crate) fn run_queue<W>(
    jobs: Vec<Job>,
    workers: usize,
    extra: usize,
    make: &(dyn Fn(usize, bool) -> W + Sync),
    step: &(dyn Fn(&mut W, &Job) -> Result<Outcome, ExecError> + Sync),
    done: &OnDone,
) {
    let n = jobs.len();
    let queue = Mutex::new(VecDeque::from(jobs));
    let workers = workers.max(1).min(n.max(1));
    let extra = extra.min(n.saturating_sub(workers));
    // Idle share of all CPUs over the last interval, in percent.
    let idle_pct = AtomicU32::new(0);
    let finished = AtomicBool::new(false);
    // Set when the caller asks to stop: no worker takes another job.
    let stopped = AtomicBool::new(false);
    std::thread::scope(|scope| {
        if extra > 0 {
            scope.spawn(|| {
                let mut last = cpu_jiffies();
                while !finished.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(250));
                    let now = cpu_jiffies();
                    if let (Some((b0, t0)), Some((b1, t1))) = (last, now) {
                        if t1 > t0 {
                            let busy = (b1 - b0) as f64 / (t1 - t0) as f64;
                            idle_pct.store(((1.0 - busy) * 100.0) as u32, Ordering::Relaxed);
                        }
                    }
                    last = now;
                }
            });
        }
        let mut handles = Vec::new();
        for w in 0..workers + extra {
            let primary = w < workers;
            let (queue, idle_pct, finished, stopped) = (&queue, &idle_pct, &finished, &stopped);
            handles.push(scope.spawn(move || {
                let mut state = make(w, primary);
                loop {
                    if !primary {
                        // Extra slots only take work while at least half a core is idle, and
                        // re-check after each sample.
                        let threshold = 100 / (2 * workers as u32).max(1);
                        loop {
                            if finished.load(Ordering::Relaxed) || queue.lock().unwrap().is_empty()
                            {
                                return;
                            }
                            if idle_pct.load(Ordering::Relaxed) >= threshold.max(25) {
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(250));
                        }
                    }
                    if stopped.load(Ordering::Relaxed) {
                        break;
                    }
                    let next = queue.lock().unwrap().pop_front();
                    let Some(job) = next else { break };
                    let outcome = step(&mut state, &job);
                    if !primary {
                        // Let the idle measure catch up with what this sample just did.
                        idle_pct.store(0, Ordering::Relaxed);
                    }
                    if done(job, outcome).is_break() {
                        stopped.store(true, Ordering::Relaxed);
                    }
                }
            }));
        }
        for h in handles {
            let _ = h.join();
        }
        finished.store(true, Ordering::Relaxed);
    });
}
