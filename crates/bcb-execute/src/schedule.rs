//! Work queue shared by the executors: jobs in the caller's order, N workers.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::{Job, Outcome};

/// Runs `jobs` on `workers` threads. Each worker builds its own state with `make` (slot,
/// cgroups, work dir) and turns jobs into outcomes with `step`.
pub(crate) fn run_queue<W>(
    jobs: Vec<Job>,
    workers: usize,
    make: &(dyn Fn(usize) -> W + Sync),
    step: &(dyn Fn(&mut W, &Job) -> Outcome + Sync),
    done: &(dyn Fn(Job, Outcome) + Sync),
) {
    let queue = Mutex::new(VecDeque::from(jobs));
    let workers = workers.max(1).min(queue.lock().unwrap().len().max(1));
    std::thread::scope(|scope| {
        for w in 0..workers {
            let queue = &queue;
            scope.spawn(move || {
                let mut state = make(w);
                loop {
                    let next = queue.lock().unwrap().pop_front();
                    let Some(job) = next else { break };
                    let outcome = step(&mut state, &job);
                    done(job, outcome);
                }
            });
        }
    });
}
