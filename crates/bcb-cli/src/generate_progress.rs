//! How `bcb generate` shows a run, through the shared display (`bcb-progress`): a bar on a
//! terminal; plain lines every few seconds when stderr is a file or pipe (nohup, CI) or
//! `TERM=dumb`, so a long run is never silent and its log has no escape codes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bcb_generate::{Event, Reporter, Snapshot};
use bcb_progress::{Display, Progress, ProgressMode};

/// `--no-progress` shows only the first and last lines; else a bar or lines every `interval`.
pub fn mode(no_progress: bool, interval: Duration) -> ProgressMode {
    if no_progress {
        ProgressMode::Off
    } else {
        ProgressMode::Auto { interval }
    }
}

pub struct CliReporter {
    progress: Mutex<Progress>,
}

impl CliReporter {
    pub fn new(mode: ProgressMode) -> Arc<Self> {
        Arc::new(CliReporter {
            progress: Mutex::new(Progress::new(mode)),
        })
    }
}

/// The generation fields of a progress line.
fn detail(s: &Snapshot) -> String {
    let failed = match s.failed_tasks {
        1 => "1 failed task".to_string(),
        n => format!("{n} failed tasks"),
    };
    let mut d = format!("{failed} | {} retries | {} tok", s.retries, s.output_tokens);
    if let Some(c) = s.cost_usd {
        d.push_str(&format!(" | ${c:.4}"));
    }
    d
}

impl Reporter for CliReporter {
    fn event(&self, event: &Event) {
        let mut p = self.progress.lock().unwrap();
        match event {
            Event::Plan {
                model,
                tasks,
                present,
                to_generate,
                path,
            } => {
                p.say(&format!(
                    "{model}: {tasks} tasks, {present} samples present, {to_generate} to generate -> {}",
                    path.display()
                ));
                p.start("generate", "samples", *to_generate);
            }
            Event::Progress(s) => {
                p.set_done(s.done);
                p.set_detail(detail(s));
            }
            Event::TaskFailed {
                task_id,
                error,
                snapshot,
            } => {
                p.set_done(snapshot.done);
                p.set_detail(detail(snapshot));
                if p.display() != Display::Off {
                    p.say(&format!("{task_id}: gave up for this run: {error}"));
                }
            }
            Event::Finished(s) => {
                p.set_done(s.done);
                p.set_detail(detail(s));
                let last = p.finish();
                if let Display::Lines(_) = p.display() {
                    p.say(&last.line());
                }
            }
        }
    }
}
