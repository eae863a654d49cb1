//! Runs jobs to a verdict each on the [`Engine`]: jobs that got an [`ExecError`] are retried
//! with backoff; a fatal error, too many errors in a row (the breaker: the executor is
//! broken, not a job) or exhausted retries stop with the cause, and nothing false is
//! recorded.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use bcb_execute::{ExecError, Job, JobId, Outcome};

use crate::engine::Engine;
use crate::error::SessionError;
use crate::event::{Event, Phase};

/// How often jobs without a verdict are tried again before the run stops.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Further attempts after the first.
    pub retries: usize,
    pub first_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: 4,
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// Told each verdict as it arrives; an error stops the run.
pub(crate) type OnVerdict<'f> = dyn FnMut(&Job, &Outcome) -> anyhow::Result<()> + 'f;
/// Where the runner's own events (retries) go.
pub(crate) type Emit<'f> = dyn Fn(&Event) -> anyhow::Result<()> + 'f;

/// One group's jobs through the engine, with retries.
pub(crate) struct Runner<'r> {
    pub engine: &'r Engine,
    pub group: u64,
    pub retry: RetryPolicy,
}

impl Runner<'_> {
    /// Runs `jobs` to a verdict each; `verdict` is told each verdict as it arrives; returns
    /// the new outcomes. Stops (with what finished already handed on) on a fatal error, a
    /// sink error, a cancel, or when retries are exhausted.
    pub fn run_jobs(
        &self,
        phase: Phase,
        jobs: Vec<Job>,
        emit: &Emit,
        verdict: &mut OnVerdict,
    ) -> Result<Vec<(JobId, Outcome)>, SessionError> {
        let mut fresh = Vec::with_capacity(jobs.len());
        let mut pending = jobs;
        let mut delays = ExponentialBuilder::default()
            .with_min_delay(self.retry.first_delay)
            .with_max_delay(self.retry.max_delay)
            .with_max_times(self.retry.retries)
            .build();
        let mut attempt = 1;
        while !pending.is_empty() {
            let pass = self.run_pass(pending, verdict)?;
            fresh.extend(pass.outcomes);
            if self.engine.is_cancelled(self.group) {
                return Err(SessionError::Cancelled);
            }
            if pass.retry.is_empty() {
                break;
            }
            let stopped = self.engine.stopped();
            let error = pass
                .error
                .or_else(|| stopped.flatten())
                .unwrap_or_else(|| ExecError::transient("the executor stopped early"));
            // A closed engine (or an executor that returned) runs nothing more: no waiting.
            let delay = if error.is_transient() && self.engine.accepting() {
                delays.next()
            } else {
                None
            };
            let Some(delay) = delay else {
                return Err(SessionError::NoVerdict {
                    phase: phase.label(),
                    jobs: pass.retry.len(),
                    attempts: attempt,
                    error,
                });
            };
            tracing::warn!(
                "{}: {} job(s) without a verdict ({error}); retrying in {delay:?}",
                phase.label(),
                pass.retry.len()
            );
            emit(&Event::Retrying {
                phase,
                jobs: pass.retry.len(),
                attempt: attempt as u32,
                delay,
                error: &error,
            })?;
            std::thread::sleep(delay);
            attempt += 1;
            pending = pass.retry;
        }
        Ok(fresh)
    }

    /// One pass of `jobs` through the engine.
    fn run_pass(&self, jobs: Vec<Job>, verdict: &mut OnVerdict) -> Result<Pass, SessionError> {
        // Consecutive errors with no verdict in between: the executor is broken, not a job.
        let breaker = (2 * jobs.len().min(8)).max(4);
        let mut reported = vec![false; jobs.len()];
        let pass = self.engine.enqueue(self.group, jobs.clone(), breaker);
        let mut out = Pass::default();
        let mut sink_error = None;
        for d in pass.rx.iter() {
            reported[d.index] = true;
            match d.result {
                Ok(outcome) => {
                    if sink_error.is_none() {
                        if let Err(e) = verdict(&d.job, &outcome) {
                            sink_error = Some(e);
                            self.engine.cancel_queued(self.group);
                        }
                    }
                    out.outcomes.push((d.job.id, outcome));
                }
                Err(error) => {
                    // The engine's breaker already stopped the group if this was one too many.
                    tracing::debug!("{}: no verdict: {error}", d.job.id);
                    out.retry.push(d.job);
                    out.error = Some(error);
                }
            }
        }
        if let Some(e) = sink_error {
            return Err(SessionError::Sink(e));
        }
        // Jobs the executor never started (it stopped early) run again too.
        let mut rest: Vec<Job> = jobs
            .into_iter()
            .zip(reported)
            .filter(|(j, seen)| !seen && !out.retry.iter().any(|r| r.id == j.id))
            .map(|(j, _)| j)
            .collect();
        rest.sort_by(|a, b| a.id.cmp(&b.id));
        out.retry.extend(rest);
        crate::plan::longest_first(&mut out.retry);
        Ok(out)
    }
}

#[derive(Default)]
struct Pass {
    outcomes: Vec<(JobId, Outcome)>,
    retry: Vec<Job>,
    error: Option<ExecError>,
}
