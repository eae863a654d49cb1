//! Progress of a run, drawn by the shared display (`bcb-progress`): a bar on a terminal; on
//! anything else (CI logs, `nohup`, `TERM=dumb`) a plain line at a fixed interval — done/total,
//! rate, pass/fail counts, ETA — even while nothing finishes, so long runs are never silent.
//!
//! The ETA follows expected seconds: jobs run longest first, so the count rate of the first
//! minutes would promise far too long. A samples phase expects the mean ground-truth time of
//! the selected tasks per job; the ground-truth phase counts.

use std::time::Duration;

use bcb_eval::{Event, Origin, Phase, Sink};
pub use bcb_progress::ProgressMode;
use bcb_progress::{clock, Progress};

#[derive(Default)]
struct Counts {
    label: &'static str,
    passed: u64,
    failed: u64,
    timeouts: u64,
    /// Verdicts reused instead of executed (dedup within the run, the verdict cache).
    deduplicated: u64,
    cached: u64,
    /// What the jobs cost: sums of test, job-wall and CPU time, and the longest job.
    executed: u64,
    test_secs: f64,
    wall_secs: f64,
    cpu_secs: f64,
    longest: f64,
    /// bcb's whole process tree's CPU seconds when the phase started (`process_tree_cpu_secs`).
    tree_cpu_at_start: Option<f64>,
}

impl Counts {
    fn detail(&self) -> String {
        let saved = if self.deduplicated + self.cached > 0 {
            format!(
                " | {} saved by dedup, {} cached",
                self.deduplicated, self.cached
            )
        } else {
            String::new()
        };
        format!(
            "{} pass, {} fail, {} timeout{saved}",
            self.passed, self.failed, self.timeouts
        )
    }

    /// The phase's cost line, once it ran something; `tree_cpu_now`: bcb's whole process
    /// tree's CPU seconds at the phase's end.
    fn cost_line(&self, wall: Duration, tree_cpu_now: Option<f64>) -> Option<String> {
        (self.executed > 0).then(|| {
            format!(
                "{}: {} run, wall {:.1}s; sum of test time {:.1}s, of job wall {:.1}s, of CPU {:.1}s; longest {:.1}s{}",
                self.label,
                self.executed,
                wall.as_secs_f64(),
                self.test_secs,
                self.wall_secs,
                self.cpu_secs,
                self.longest,
                self.tree_cost(tree_cpu_now)
            )
        })
    }

    /// What bcb's whole process tree used over the phase beside the samples' own CPU: the
    /// slots' warm-ups and forks, the supervisors, bcb itself. Nothing where the tree used
    /// less than the samples reported (they ran elsewhere: a remote executor).
    fn tree_cost(&self, tree_cpu_now: Option<f64>) -> String {
        let Some(tree) = tree_cpu_now
            .zip(self.tree_cpu_at_start)
            .map(|(now, start)| now - start)
        else {
            return String::new();
        };
        if tree < self.cpu_secs {
            return String::new();
        }
        let outside = tree - self.cpu_secs;
        format!(
            "; bcb's process tree {tree:.1}s of CPU, {outside:.1}s of it outside the samples ({:.0} ms a job)",
            1000.0 * outside / self.executed as f64
        )
    }
}

/// The label of the progress of a wait for another process's ground truth.
const WAITING: &str = "waiting for ground truth";

pub struct ProgressSink {
    mode: ProgressMode,
    progress: Progress,
    counts: Counts,
    /// Mean expected seconds of a job of the selected tasks (from the ground truth).
    mean_expected: Option<f64>,
    /// Waiting for another process's ground truth (its progress is on display).
    waiting: bool,
}

impl ProgressSink {
    pub fn new(mode: ProgressMode) -> Self {
        ProgressSink {
            mode,
            progress: Progress::new(mode),
            counts: Counts::default(),
            mean_expected: None,
            waiting: false,
        }
    }

    fn start(&mut self, phase: Phase, todo: usize, done: usize) {
        self.progress.finish();
        self.waiting = false;
        self.counts = Counts {
            label: phase.label(),
            tree_cpu_at_start: bcb_eval::process_tree_cpu_secs(),
            ..Counts::default()
        };
        let resumed = if done > 0 {
            format!(" ({done} already done, resuming)")
        } else {
            String::new()
        };
        self.progress
            .say(&format!("{}: {todo} to run{resumed}", phase.label()));
        self.progress.start(phase.label(), "jobs", todo as u64);
        if phase != Phase::GroundTruth {
            self.progress
                .set_expected_total(self.mean_expected.map(|m| m * todo as f64));
        }
    }
}

impl Sink for ProgressSink {
    fn handle(&mut self, event: &Event) -> anyhow::Result<()> {
        if self.mode == ProgressMode::Off {
            return Ok(());
        }
        match event {
            Event::RunStarted {
                action,
                tasks,
                subset,
                version,
                executor,
                parallel,
                protections,
            } => self.progress.say(&format!(
                "{action} {tasks} tasks ({subset} {version}), executor {executor} x{parallel}: {}",
                protections.join(", ")
            )),
            Event::GroundTruthReady { gt, task_ids } => {
                let known: Vec<f64> = task_ids
                    .iter()
                    .filter_map(|id| gt.expected_secs(id))
                    .collect();
                self.mean_expected =
                    (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64);
            }
            Event::PhaseStarted { phase, todo, done } => self.start(*phase, *todo, *done),
            Event::JobDone {
                job,
                outcome,
                origin,
                ..
            } => {
                let c = &mut self.counts;
                match origin {
                    Origin::Duplicate => c.deduplicated += 1,
                    Origin::Cached => c.cached += 1,
                    _ => {}
                }
                match outcome.status {
                    bcb_executor::Status::Pass => c.passed += 1,
                    bcb_executor::Status::Fail => c.failed += 1,
                    bcb_executor::Status::Timeout => c.timeouts += 1,
                }
                // The cost line counts real executions only.
                if *origin == Origin::Executed {
                    c.executed += 1;
                    c.test_secs += outcome.test_secs.unwrap_or(0.0);
                    c.wall_secs += outcome.wall_secs;
                    c.cpu_secs += outcome.cpu_secs.unwrap_or(0.0);
                    c.longest = c.longest.max(outcome.wall_secs);
                }
                // A phase counts executions: copies of one (dedup) are not more work.
                let expected = job.expected_secs.or(self.mean_expected).unwrap_or(0.0);
                match origin {
                    Origin::Executed => self.progress.advance(1, expected),
                    Origin::Cached | Origin::Refused => self.progress.skip(1, expected),
                    Origin::Duplicate => {}
                }
                self.progress.set_detail(c.detail());
            }
            Event::Retrying {
                jobs,
                attempt,
                delay,
                error,
                ..
            } => self.progress.say(&format!(
                "{jobs} job(s) got no verdict ({error}); retry {attempt} in {}",
                clock(*delay)
            )),
            Event::PhaseFinished { .. } => {
                let last = self.progress.finish();
                self.progress.say(&last.line());
                let tree_cpu = bcb_eval::process_tree_cpu_secs();
                if let Some(cost) = self.counts.cost_line(last.elapsed, tree_cpu) {
                    self.progress.say(&cost);
                }
            }
            Event::WaitingForGroundTruth {
                path,
                holder,
                done,
                total,
            } => {
                // The first word of a wait: a line, then its own progress until the phase starts.
                if !self.waiting {
                    self.progress.say(&format!(
                        "ground truth: {} is being run by another process ({}); waiting for it",
                        path.display(),
                        holder.unwrap_or("which did not say who it is")
                    ));
                    self.progress.start(WAITING, "tasks", *total as u64);
                }
                self.waiting = true;
                self.progress.set_done(*done as u64);
            }
            Event::ResultsLoaded { path } => self.progress.say(&format!(
                "Loading previous results from {} (pass --force to evaluate again)",
                path.display()
            )),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(cpu_secs: f64, tree_cpu_at_start: Option<f64>) -> Counts {
        Counts {
            label: "evaluate",
            executed: 100,
            cpu_secs,
            tree_cpu_at_start,
            ..Counts::default()
        }
    }

    #[test]
    fn the_cost_line_says_what_the_tree_used_beside_the_samples() {
        let line = counts(10.0, Some(5.0))
            .cost_line(Duration::from_secs(9), Some(20.0))
            .unwrap();
        assert!(
            line.ends_with("of CPU 10.0s; longest 0.0s; bcb's process tree 15.0s of CPU, 5.0s of it outside the samples (50 ms a job)"),
            "{line}"
        );
        // The samples ran elsewhere (a remote executor), or /proc could not tell.
        for (start, now) in [
            (Some(5.0), Some(6.0)),
            (None, Some(20.0)),
            (Some(5.0), None),
        ] {
            let line = counts(10.0, start)
                .cost_line(Duration::from_secs(9), now)
                .unwrap();
            assert!(line.ends_with("longest 0.0s"), "{line}");
        }
    }
}
