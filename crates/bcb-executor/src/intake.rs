//! Job intake: where an executor gets its work. [`Executor::run`](crate::Executor::run) takes
//! one `Vec<Job>`; [`Executor::serve`](crate::Executor::serve) asks a [`JobSource`] for the
//! next job whenever a slot frees, until the source closes, so a warm executor takes work
//! over time and the source (the session) decides which job goes next (fairness between
//! submissions, cancellation).

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::{ExecError, Job, JobId, OnDone, Outcome};

/// Names one job handed out by a [`JobSource`]; given back with its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub u64);

/// What a source would hand out next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peek {
    /// This job is next.
    Ready(JobId),
    /// Nothing now; more may come (wait, then ask again).
    Idle,
    /// Nothing now and nothing ever again: the executor returns once running jobs finish.
    Closed,
}

/// A queue an executor pulls from. Every method is called under the executor's own lock,
/// so implementations only need to be thread-safe, not fast.
pub trait JobSource: Sync {
    /// What [`JobSource::pull`] would return.
    fn peek(&self) -> Peek;

    /// Takes the next job; `None` when there is none right now.
    fn pull(&self) -> Option<(Ticket, Job)>;

    /// A sample of `task` timed out: its queued jobs should go first (they probably wait
    /// too, so they overlap instead of starting together at the end). Returns how many moved.
    fn promote(&self, task: &str) -> usize;

    /// Blocks until work may be available or the source closed, at most `timeout`.
    fn wait(&self, timeout: Duration);
}

/// Told each job's result with its ticket, from any thread, as it finishes.
pub type OnServed<'a> = dyn Fn(Ticket, Job, Result<Outcome, ExecError>) + Sync + 'a;

/// A fixed list of jobs in the given order, closed once empty (or stopped): the source behind
/// [`Executor::run`](crate::Executor::run).
pub struct VecSource {
    queue: Mutex<VecDeque<(Ticket, Job)>>,
}

impl VecSource {
    pub fn new(jobs: Vec<Job>) -> VecSource {
        VecSource {
            queue: Mutex::new(
                jobs.into_iter()
                    .enumerate()
                    .map(|(i, j)| (Ticket(i as u64), j))
                    .collect(),
            ),
        }
    }

    /// Drops every queued job: the source is closed.
    pub fn stop(&self) {
        self.queue.lock().unwrap().clear();
    }

    pub fn len(&self) -> usize {
        self.queue.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl JobSource for VecSource {
    fn peek(&self) -> Peek {
        match self.queue.lock().unwrap().front() {
            Some((_, j)) => Peek::Ready(j.id.clone()),
            None => Peek::Closed,
        }
    }

    fn pull(&self) -> Option<(Ticket, Job)> {
        self.queue.lock().unwrap().pop_front()
    }

    fn promote(&self, task: &str) -> usize {
        promote_task(&mut self.queue.lock().unwrap(), task, |(_, j)| j.task_id())
    }

    fn wait(&self, _timeout: Duration) {}
}

/// Moves the queued entries of `task` to the front, keeping their order and everyone
/// else's. Returns how many moved.
pub fn promote_task<T>(queue: &mut VecDeque<T>, task: &str, task_of: impl Fn(&T) -> &str) -> usize {
    let (mut front, rest): (VecDeque<T>, VecDeque<T>) =
        queue.drain(..).partition(|j| task_of(j) == task);
    let moved = front.len();
    front.extend(rest);
    *queue = front;
    moved
}

/// Runs `jobs` through `serve` with a [`VecSource`]: the body of every `Executor::run`.
/// `done`'s `Break` stops the source (running jobs finish and are reported).
pub fn run_via_serve(
    jobs: Vec<Job>,
    done: &OnDone,
    serve: impl FnOnce(&dyn JobSource, &OnServed) -> Result<(), ExecError>,
) -> Result<(), ExecError> {
    let source = VecSource::new(jobs);
    let on = |_t: Ticket, job: Job, result: Result<Outcome, ExecError>| {
        if done(job, result).is_break() {
            source.stop();
        }
    };
    serve(&source, &on)
}

/// Serves `source` with an executor that only knows batches: whatever is queued when it
/// asks (at most `chunk` jobs) runs as one `run` call; then it asks again. Not warm and not
/// fair within a chunk, but correct for any backend.
pub fn serve_in_batches(
    source: &dyn JobSource,
    done: &OnServed,
    chunk: usize,
    run: impl Fn(Vec<Job>, &OnDone) -> Result<(), ExecError>,
) -> Result<(), ExecError> {
    loop {
        let mut batch = Vec::new();
        while batch.len() < chunk.max(1) {
            match source.pull() {
                Some(entry) => batch.push(entry),
                None => break,
            }
        }
        if batch.is_empty() {
            match source.peek() {
                Peek::Closed => return Ok(()),
                _ => {
                    source.wait(Duration::from_millis(100));
                    continue;
                }
            }
        }
        // Results come back by job; jobs with the same id get their tickets in order.
        let tickets: Mutex<Vec<(Ticket, JobId)>> = Mutex::new(
            batch
                .iter()
                .map(|(t, j)| (*t, j.id.clone()))
                .collect::<Vec<_>>(),
        );
        let mut unreported: Vec<Option<Job>> = batch.iter().map(|(_, j)| Some(j.clone())).collect();
        let jobs: Vec<Job> = batch.into_iter().map(|(_, j)| j).collect();
        let result = run(jobs, &|job: Job, result| {
            let ticket = {
                let mut t = tickets.lock().unwrap();
                let at = t.iter().position(|(_, id)| *id == job.id);
                at.map(|i| {
                    let (ticket, _) = t.remove(i);
                    ticket
                })
            };
            if let Some(ticket) = ticket {
                done(ticket, job, result);
            }
            ControlFlow::Continue(())
        });
        // A batch the backend gave up on: its unreported jobs get the error (the source's
        // owner decides whether to retry them); the executor keeps serving.
        if let Err(e) = result {
            let left = tickets.into_inner().unwrap();
            for (ticket, id) in left {
                if let Some(job) = unreported
                    .iter_mut()
                    .find(|j| j.as_ref().is_some_and(|j| j.id == id))
                    .and_then(Option::take)
                {
                    done(ticket, job, Err(e.clone()));
                }
            }
        }
    }
}

/// A wake-up signal for sources that receive work over time.
#[derive(Default)]
pub struct Bell {
    rung: Mutex<u64>,
    cv: Condvar,
}

impl Bell {
    pub fn ring(&self) {
        *self.rung.lock().unwrap() += 1;
        self.cv.notify_all();
    }

    /// Waits for the next ring, at most `timeout`.
    pub fn wait(&self, timeout: Duration) {
        let g = self.rung.lock().unwrap();
        let seen = *g;
        let _ = self.cv.wait_timeout_while(g, timeout, |n| *n == seen);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Program, Status};

    fn job(i: usize) -> Job {
        // Distinct programs, so none is deduplicated.
        Job::for_test("t", Program::Sample(i), &format!("# {i}"), "")
    }

    #[test]
    fn a_batch_backend_that_gives_up_reports_its_unreported_jobs_with_the_error() {
        let source = VecSource::new((0..3).map(job).collect());
        let seen = Mutex::new(Vec::new());
        let done = |t: Ticket, _j: Job, r: Result<Outcome, ExecError>| {
            seen.lock().unwrap().push((t, r.is_ok()));
        };
        serve_in_batches(&source, &done, 2, |jobs, d| {
            let first = jobs.into_iter().next().unwrap();
            let _ = d(first, Ok(Outcome::new(Status::Pass, Default::default())));
            Err(ExecError::transient("connection lost"))
        })
        .unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(
            seen,
            [(Ticket(0), true), (Ticket(1), false), (Ticket(2), true)],
            "batches of 2: job 1 got the error, job 2 ran in the next batch"
        );
    }

    #[test]
    fn run_via_serve_stops_on_break() {
        let ran = Mutex::new(0);
        run_via_serve(
            (0..5).map(job).collect(),
            &|_, _| {
                *ran.lock().unwrap() += 1;
                ControlFlow::Break(())
            },
            |source, done| {
                while let Some((t, j)) = source.pull() {
                    done(t, j, Err(ExecError::transient("x")));
                }
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(*ran.lock().unwrap(), 1);
    }
}
