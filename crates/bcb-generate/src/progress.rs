//! What a run reports while it works. The library never prints: it hands [`Event`]s to a
//! [`Reporter`] and the command line decides how to show them (a bar on a terminal, plain
//! periodic lines in a log).

use std::path::PathBuf;
use std::time::Duration;

/// The counters of a run at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Samples written in this run.
    pub done: u64,
    /// Samples this run set out to write.
    pub total: u64,
    /// Tasks given up on (after retries) so far.
    pub failed_tasks: u64,
    pub retries: u64,
    pub output_tokens: u64,
    pub elapsed: Duration,
    pub cost_usd: Option<f64>,
}

impl Snapshot {
    /// Samples per minute so far.
    pub fn per_minute(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs <= 0.0 {
            0.0
        } else {
            self.done as f64 * 60.0 / secs
        }
    }

    /// Time left at the rate so far; `None` before the first sample.
    pub fn eta(&self) -> Option<Duration> {
        if self.done == 0 {
            return None;
        }
        let left = self.total.saturating_sub(self.done) as f64;
        Some(Duration::from_secs_f64(
            self.elapsed.as_secs_f64() * left / self.done as f64,
        ))
    }

    /// One plain line for logs (no ANSI codes, no carriage returns):
    /// `12/148 samples (8.1%) | 3.2/min | 1 failed task | 0 retries | 1520 tok | elapsed 0:03:45 | eta 0:42:10`.
    pub fn plain_line(&self) -> String {
        let pct = if self.total == 0 {
            100.0
        } else {
            self.done as f64 * 100.0 / self.total as f64
        };
        let failed = match self.failed_tasks {
            1 => "1 failed task".to_string(),
            n => format!("{n} failed tasks"),
        };
        let mut s = format!(
            "{}/{} samples ({pct:.1}%) | {:.1}/min | {failed} | {} retries | {} tok | elapsed {}",
            self.done,
            self.total,
            self.per_minute(),
            self.retries,
            self.output_tokens,
            clock(self.elapsed)
        );
        if let Some(c) = self.cost_usd {
            s.push_str(&format!(" | ${c:.4}"));
        }
        match self.eta() {
            Some(eta) => s.push_str(&format!(" | eta {}", clock(eta))),
            None => s.push_str(" | eta ?"),
        }
        s
    }
}

/// `h:mm:ss`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// What happened, in the order it happened.
#[derive(Debug, Clone)]
pub enum Event {
    /// Work is planned (before any request).
    Plan {
        model: String,
        tasks: usize,
        present: u64,
        to_generate: u64,
        path: PathBuf,
    },
    /// Samples were written (the snapshot after them).
    Progress(Snapshot),
    /// A task was given up on for this run.
    TaskFailed {
        task_id: String,
        error: String,
        snapshot: Snapshot,
    },
    /// The final samples file was rewritten.
    Finished(Snapshot),
}

pub trait Reporter: Send + Sync {
    fn event(&self, event: &Event);
}

/// Reports nothing (library callers that want only the [`crate::Outcome`]).
pub struct Quiet;

impl Reporter for Quiet {
    fn event(&self, _: &Event) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_line_has_counts_rate_eta_and_no_escape_codes() {
        let s = Snapshot {
            done: 30,
            total: 148,
            failed_tasks: 2,
            retries: 1,
            output_tokens: 4000,
            elapsed: Duration::from_secs(600),
            cost_usd: None,
        };
        let line = s.plain_line();
        assert_eq!(
            line,
            "30/148 samples (20.3%) | 3.0/min | 2 failed tasks | 1 retries | 4000 tok | elapsed 0:10:00 | eta 0:39:20"
        );
        assert!(!line.contains('\x1b') && !line.contains('\r'));
        let start = Snapshot {
            total: 5,
            ..Default::default()
        };
        assert!(start.plain_line().ends_with("eta ?"));
    }
}
