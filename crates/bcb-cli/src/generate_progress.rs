//! How `bcb generate` shows a run: a bar on a terminal; plain lines every few seconds when
//! stderr is a file or pipe (nohup, CI), so a long run is never silent and its log has no
//! escape codes.

use bcb_envvars::EnvVars;
use std::io::{IsTerminal, Write};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bcb_generate::{Event, Reporter, Snapshot};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// A progress bar (stderr is a terminal).
    Bar,
    /// A plain line every `interval`.
    Lines(Duration),
    /// Only the first and last lines.
    Quiet,
}

impl Mode {
    /// Bar on a terminal, lines elsewhere; `--no-progress` turns both off.
    pub fn detect(no_progress: bool, interval: Duration) -> Mode {
        if no_progress {
            Mode::Quiet
        } else if std::io::stderr().is_terminal()
            && std::env::var_os(EnvVars::TERM).is_none_or(|t| t != "dumb")
        {
            Mode::Bar
        } else {
            Mode::Lines(interval)
        }
    }
}

struct State {
    last: Snapshot,
    started: Instant,
}

pub struct CliReporter {
    mode: Mode,
    state: Arc<Mutex<State>>,
    bar: ProgressBar,
    ticker: Mutex<Option<(Sender<()>, JoinHandle<()>)>>,
}

impl CliReporter {
    pub fn new(mode: Mode) -> Arc<Self> {
        let bar = if mode == Mode::Bar {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "[{elapsed_precise}] {wide_bar} {pos}/{len} samples {msg} (eta {eta})",
                )
                .expect("valid template"),
            );
            b
        } else {
            ProgressBar::hidden()
        };
        Arc::new(CliReporter {
            mode,
            state: Arc::new(Mutex::new(State {
                last: Snapshot::default(),
                started: Instant::now(),
            })),
            bar,
            ticker: Mutex::new(None),
        })
    }

    fn line(&self, text: &str) {
        if self.mode == Mode::Bar {
            self.bar.println(text);
        } else {
            let _ = writeln!(std::io::stderr(), "{text}");
        }
    }

    fn start_ticker(&self, interval: Duration) {
        let (tx, rx) = channel::<()>();
        let state = self.state.clone();
        let handle = std::thread::spawn(move || loop {
            match rx.recv_timeout(interval) {
                Err(RecvTimeoutError::Timeout) => {
                    let st = state.lock().unwrap();
                    let mut snap = st.last.clone();
                    snap.elapsed = st.started.elapsed();
                    let _ = writeln!(std::io::stderr(), "{}", snap.plain_line());
                }
                _ => return,
            }
        });
        *self.ticker.lock().unwrap() = Some((tx, handle));
    }

    fn stop_ticker(&self) {
        if let Some((tx, handle)) = self.ticker.lock().unwrap().take() {
            drop(tx);
            let _ = handle.join();
        }
    }
}

impl Reporter for CliReporter {
    fn event(&self, event: &Event) {
        match event {
            Event::Plan {
                model,
                tasks,
                present,
                to_generate,
                path,
            } => {
                self.line(&format!(
                    "{model}: {tasks} tasks, {present} samples present, {to_generate} to generate -> {}",
                    path.display()
                ));
                {
                    let mut st = self.state.lock().unwrap();
                    st.started = Instant::now();
                    st.last.total = *to_generate;
                }
                self.bar.set_length(*to_generate);
                if let Mode::Lines(interval) = self.mode {
                    if *to_generate > 0 {
                        self.start_ticker(interval);
                    }
                }
            }
            Event::Progress(s) => {
                self.state.lock().unwrap().last = s.clone();
                self.bar.set_position(s.done);
                let mut msg = format!("{:.1}/min", s.per_minute());
                if s.failed_tasks > 0 {
                    msg.push_str(&format!(" {} failed", s.failed_tasks));
                }
                if let Some(c) = s.cost_usd {
                    msg.push_str(&format!(" ${c:.4}"));
                }
                self.bar.set_message(msg);
            }
            Event::TaskFailed {
                task_id,
                error,
                snapshot,
            } => {
                self.state.lock().unwrap().last = snapshot.clone();
                if self.mode != Mode::Quiet {
                    self.line(&format!("{task_id}: gave up for this run: {error}"));
                }
            }
            Event::Finished(s) => {
                self.stop_ticker();
                self.bar.finish_and_clear();
                if let Mode::Lines(_) = self.mode {
                    self.line(&s.plain_line());
                }
            }
        }
    }
}

impl Drop for CliReporter {
    fn drop(&mut self) {
        self.stop_ticker();
    }
}
