//! Progress of a run: a bar on a terminal; on anything else (CI logs, `nohup`) a plain line
//! at a fixed interval — done/total, rate, ETA, pass rate — even while nothing finishes, so
//! long runs are never silent. No colour when `NO_COLOR` is set or not on a terminal.

use bcb_envvars::EnvVars;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bcb_eval::{Event, Phase, Sink};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProgressMode {
    /// Nothing (`--quiet`).
    Off,
    /// A bar if stderr is a terminal, else lines every `interval`.
    Auto { interval: Duration },
    /// Lines every `interval` on stderr, whatever it is.
    Lines { interval: Duration },
}

impl ProgressMode {
    pub fn auto() -> Self {
        ProgressMode::Auto {
            interval: Duration::from_secs(30),
        }
    }
}

#[derive(Default)]
struct Counts {
    label: &'static str,
    todo: u64,
    done: u64,
    passed: u64,
    failed: u64,
    timeouts: u64,
    started: Option<Instant>,
}

impl Counts {
    fn line(&self) -> String {
        let elapsed = self.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
        let rate = if elapsed > 0.0 {
            self.done as f64 / elapsed
        } else {
            0.0
        };
        let eta = if rate > 0.0 && self.todo > self.done {
            format!(", eta {}", clock((self.todo - self.done) as f64 / rate))
        } else {
            String::new()
        };
        format!(
            "{}: {}/{} done ({:.1}/s{eta}), {} pass, {} fail, {} timeout, {} elapsed",
            self.label,
            self.done,
            self.todo,
            rate,
            self.passed,
            self.failed,
            self.timeouts,
            clock(elapsed)
        )
    }
}

fn clock(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

pub struct ProgressSink {
    mode: ProgressMode,
    counts: Arc<Mutex<Counts>>,
    bar: Option<ProgressBar>,
    /// Stops the line ticker of the current phase when dropped.
    ticker: Option<std::sync::mpsc::Sender<()>>,
}

impl ProgressSink {
    pub fn new(mode: ProgressMode) -> Self {
        ProgressSink {
            mode,
            counts: Arc::new(Mutex::new(Counts::default())),
            bar: None,
            ticker: None,
        }
    }

    fn say(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| {
                let _ = writeln!(std::io::stderr(), "{text}");
            }),
            None => {
                let _ = writeln!(std::io::stderr(), "{text}");
            }
        }
    }

    fn start(&mut self, phase: Phase, todo: usize, done: usize) {
        self.finish();
        {
            let mut c = self.counts.lock().unwrap();
            *c = Counts {
                label: phase.label(),
                todo: todo as u64,
                started: Some(Instant::now()),
                ..Counts::default()
            };
        }
        let resumed = if done > 0 {
            format!(" ({done} already done, resuming)")
        } else {
            String::new()
        };
        self.say(&format!("{}: {todo} to run{resumed}", phase.label()));
        if todo == 0 {
            return;
        }
        let interval = match self.mode {
            ProgressMode::Off => return,
            ProgressMode::Auto { interval } if !std::io::stderr().is_terminal() => interval,
            ProgressMode::Lines { interval } => interval,
            ProgressMode::Auto { .. } => {
                let bar =
                    ProgressBar::with_draw_target(Some(todo as u64), ProgressDrawTarget::stderr());
                let colour = std::env::var_os(EnvVars::NO_COLOR).is_none_or(|v| v.is_empty());
                let template = if colour {
                    "{prefix:>12.bold} [{bar:30}] {pos}/{len} {msg} ({elapsed}, eta {eta})"
                } else {
                    "{prefix:>12} [{bar:30}] {pos}/{len} {msg} ({elapsed}, eta {eta})"
                };
                bar.set_style(
                    ProgressStyle::with_template(template)
                        .expect("valid template")
                        .progress_chars("=> "),
                );
                bar.set_prefix(phase.label());
                bar.enable_steady_tick(Duration::from_millis(250));
                self.bar = Some(bar);
                return;
            }
        };
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let counts = self.counts.clone();
        std::thread::spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(interval) {
                let line = counts.lock().unwrap().line();
                let _ = writeln!(std::io::stderr(), "{line}");
            }
        });
        self.ticker = Some(tx);
    }

    fn finish(&mut self) {
        self.ticker = None;
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
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
            } => self.say(&format!(
                "{action} {tasks} tasks ({subset} {version}), executor {executor} x{parallel}: {}",
                protections.join(", ")
            )),
            Event::PhaseStarted { phase, todo, done } => self.start(*phase, *todo, *done),
            Event::JobDone { outcome, .. } => {
                let mut c = self.counts.lock().unwrap();
                c.done += 1;
                match outcome.status {
                    bcb_execute::Status::Pass => c.passed += 1,
                    bcb_execute::Status::Fail => c.failed += 1,
                    bcb_execute::Status::Timeout => c.timeouts += 1,
                }
                if let Some(bar) = &self.bar {
                    bar.set_message(format!(
                        "pass {:.1}%",
                        100.0 * c.passed as f64 / c.done as f64
                    ));
                    bar.inc(1);
                }
            }
            Event::Retrying {
                jobs,
                attempt,
                delay,
                error,
                ..
            } => self.say(&format!(
                "{jobs} job(s) got no verdict ({error}); retry {attempt} in {}",
                clock(delay.as_secs_f64())
            )),
            Event::PhaseFinished { .. } => {
                self.finish();
                let line = self.counts.lock().unwrap().line();
                self.say(&line);
            }
            Event::ResultsLoaded { path } => self.say(&format!(
                "Loading previous results from {} (pass --force to evaluate again)",
                path.display()
            )),
            _ => {}
        }
        Ok(())
    }
}

impl Drop for ProgressSink {
    fn drop(&mut self) {
        self.finish();
    }
}
