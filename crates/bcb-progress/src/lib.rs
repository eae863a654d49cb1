//! The one progress display every bcb command uses (generate, evaluate, and remote runs
//! through the evaluation session): a bar when stderr is a terminal, plain lines at a fixed
//! interval everywhere else (CI logs, `nohup`, pipes) so a long run is never silent and its
//! log holds no escape codes. `TERM=dumb` counts as no terminal; `NO_COLOR` (set, non-empty)
//! drops the bar's colour.
//!
//! The ETA comes from expected seconds of work when the caller knows them (evaluation runs
//! the longest jobs first: a count rate at the start would promise hours), else from the
//! count rate so far.
//!
//! This crate is the one place that draws progress on stderr; library code hands it counts.

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bcb_envvars::EnvVars;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProgressMode {
    /// Nothing (`--quiet`, `--no-progress`).
    Off,
    /// A bar if stderr is a terminal that can draw one, else a line every `interval`.
    Auto { interval: Duration },
    /// A line every `interval`, whatever stderr is.
    Lines { interval: Duration },
}

impl ProgressMode {
    /// [`ProgressMode::Auto`] with a line every 30 s.
    pub fn auto() -> Self {
        ProgressMode::Auto {
            interval: Duration::from_secs(30),
        }
    }

    /// The display this mode gives on this process's stderr and environment.
    pub fn resolve(self) -> Display {
        let term = std::env::var(EnvVars::TERM).ok();
        self.resolve_for(std::io::stderr().is_terminal(), term.as_deref())
    }

    /// [`ProgressMode::resolve`] for a given terminal and `TERM`.
    pub fn resolve_for(self, stderr_is_terminal: bool, term: Option<&str>) -> Display {
        match self {
            ProgressMode::Off => Display::Off,
            ProgressMode::Lines { interval } => Display::Lines(interval),
            ProgressMode::Auto { interval } => {
                if stderr_is_terminal && term != Some("dumb") {
                    Display::Bar
                } else {
                    Display::Lines(interval)
                }
            }
        }
    }
}

/// What is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Display {
    Off,
    Bar,
    Lines(Duration),
}

/// Colour on stderr: it is a terminal, `TERM` is not `dumb`, `NO_COLOR` is unset or empty.
pub fn colour() -> bool {
    std::io::stderr().is_terminal()
        && std::env::var_os(EnvVars::TERM).is_none_or(|t| t != "dumb")
        && std::env::var_os(EnvVars::NO_COLOR).is_none_or(|v| v.is_empty())
}

/// Where plain lines go: stderr, or a buffer in tests.
pub type Out = Arc<Mutex<dyn Write + Send>>;

fn stderr_out() -> Out {
    Arc::new(Mutex::new(std::io::stderr()))
}

/// The counters of the current phase.
#[derive(Debug, Clone)]
pub struct Status {
    pub label: String,
    /// What is counted (`samples`, `jobs`).
    pub unit: &'static str,
    pub done: u64,
    pub total: u64,
    pub elapsed: Duration,
    /// Expected seconds of all the phase's work and of the part done, when known.
    pub expected_total: Option<f64>,
    pub expected_done: f64,
    /// The caller's own fields (pass rate, failures, tokens), `|`-separated in lines.
    pub detail: String,
}

impl Status {
    /// Time left: from expected seconds when known (work done per wall second so far), else
    /// from the count rate; `None` before anything is done.
    pub fn eta(&self) -> Option<Duration> {
        let elapsed = self.elapsed.as_secs_f64();
        if self.done >= self.total {
            return Some(Duration::ZERO);
        }
        if elapsed <= 0.0 {
            return None;
        }
        if let Some(total) = self.expected_total.filter(|t| *t > 0.0) {
            if self.expected_done > 0.0 {
                let per_wall_sec = self.expected_done / elapsed;
                let left = (total - self.expected_done).max(0.0);
                return Some(Duration::from_secs_f64(left / per_wall_sec));
            }
        }
        if self.done == 0 {
            return None;
        }
        let left = (self.total - self.done) as f64;
        Some(Duration::from_secs_f64(elapsed * left / self.done as f64))
    }

    /// Done per minute so far.
    pub fn per_minute(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs <= 0.0 {
            0.0
        } else {
            self.done as f64 * 60.0 / secs
        }
    }

    /// One plain line (no escape codes, no carriage returns):
    /// `evaluate: 30/148 samples (20.3%) | 3.0/min | 2 fail | elapsed 0:10:00 | eta 0:39:20`.
    pub fn line(&self) -> String {
        let pct = if self.total == 0 {
            100.0
        } else {
            self.done as f64 * 100.0 / self.total as f64
        };
        let mut s = format!(
            "{}: {}/{} {} ({pct:.1}%) | {:.1}/min",
            self.label,
            self.done,
            self.total,
            self.unit,
            self.per_minute()
        );
        if !self.detail.is_empty() {
            s.push_str(" | ");
            s.push_str(&self.detail);
        }
        s.push_str(&format!(" | elapsed {}", clock(self.elapsed)));
        match self.eta() {
            Some(eta) => s.push_str(&format!(" | eta {}", clock(eta))),
            None => s.push_str(" | eta ?"),
        }
        s
    }
}

/// `h:mm:ss`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

struct State {
    status: Status,
    started: Instant,
}

impl State {
    fn snapshot(&self) -> Status {
        let mut s = self.status.clone();
        s.elapsed = self.started.elapsed();
        s
    }
}

/// The display of one run: phases one after another, each a bar or a series of lines.
pub struct Progress {
    display: Display,
    out: Out,
    state: Arc<Mutex<State>>,
    bar: Option<ProgressBar>,
    ticker: Option<(Sender<()>, JoinHandle<()>)>,
}

impl Progress {
    pub fn new(mode: ProgressMode) -> Self {
        Self::with_display(mode.resolve(), stderr_out())
    }

    /// A display drawn as `display` says; plain lines go to `out` (a bar always draws on
    /// stderr).
    pub fn with_display(display: Display, out: Out) -> Self {
        Progress {
            display,
            out,
            state: Arc::new(Mutex::new(State {
                status: Status {
                    label: String::new(),
                    unit: "",
                    done: 0,
                    total: 0,
                    elapsed: Duration::ZERO,
                    expected_total: None,
                    expected_done: 0.0,
                    detail: String::new(),
                },
                started: Instant::now(),
            })),
            bar: None,
            ticker: None,
        }
    }

    pub fn display(&self) -> Display {
        self.display
    }

    /// Prints `text` on a line of its own (above the bar, if one is drawn). Printed even in
    /// [`Display::Off`]: callers leave out what `--quiet` must not show.
    pub fn say(&self, text: &str) {
        let write = || {
            let mut out = self.out.lock().unwrap();
            let _ = writeln!(out, "{text}");
        };
        match &self.bar {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    /// Begins a phase of `total` units (the previous one, if any, ends without a line).
    pub fn start(&mut self, label: &str, unit: &'static str, total: u64) {
        self.finish();
        {
            let mut st = self.state.lock().unwrap();
            st.started = Instant::now();
            st.status = Status {
                label: label.to_string(),
                unit,
                done: 0,
                total,
                elapsed: Duration::ZERO,
                expected_total: None,
                expected_done: 0.0,
                detail: String::new(),
            };
        }
        if total == 0 {
            return;
        }
        match self.display {
            Display::Off => {}
            Display::Bar => {
                let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
                let template = if colour() {
                    "{prefix:>12.bold} [{bar:30}] {pos}/{len} {msg} ({elapsed_precise}, eta {eta_precise})"
                } else {
                    "{prefix:>12} [{bar:30}] {pos}/{len} {msg} ({elapsed_precise}, eta {eta_precise})"
                };
                bar.set_style(
                    ProgressStyle::with_template(template)
                        .expect("valid template")
                        .with_key("eta_precise", {
                            let state = self.state.clone();
                            move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                                let eta = state.lock().unwrap().snapshot().eta();
                                let _ = match eta {
                                    Some(d) => write!(w, "{}", clock(d)),
                                    None => write!(w, "?"),
                                };
                            }
                        })
                        .progress_chars("=> "),
                );
                bar.set_prefix(label.to_string());
                bar.enable_steady_tick(Duration::from_millis(250));
                self.bar = Some(bar);
            }
            Display::Lines(interval) => {
                let (tx, rx) = channel::<()>();
                let state = self.state.clone();
                let out = self.out.clone();
                let handle = std::thread::spawn(move || {
                    while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(interval) {
                        let line = state.lock().unwrap().snapshot().line();
                        let _ = writeln!(out.lock().unwrap(), "{line}");
                    }
                });
                self.ticker = Some((tx, handle));
            }
        }
    }

    /// Expected seconds of the whole phase's work (for the ETA of longest-first runs).
    pub fn set_expected_total(&self, secs: Option<f64>) {
        self.state.lock().unwrap().status.expected_total = secs;
    }

    /// `n` more units done, worth `expected_secs` of expected work.
    pub fn advance(&self, n: u64, expected_secs: f64) {
        let done = {
            let mut st = self.state.lock().unwrap();
            st.status.done += n;
            st.status.expected_done += expected_secs;
            st.status.done
        };
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    /// `n` more units done without running (cached, refused): they leave the expected work.
    pub fn skip(&self, n: u64, expected_secs: f64) {
        let done = {
            let mut st = self.state.lock().unwrap();
            st.status.done += n;
            if let Some(total) = &mut st.status.expected_total {
                *total = (*total - expected_secs).max(0.0);
            }
            st.status.done
        };
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    /// The count done so far, as the caller keeps it.
    pub fn set_done(&self, done: u64) {
        self.state.lock().unwrap().status.done = done;
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    /// The caller's fields after the counts (in lines and beside the bar).
    pub fn set_detail(&self, detail: String) {
        if let Some(bar) = &self.bar {
            bar.set_message(detail.clone());
        }
        self.state.lock().unwrap().status.detail = detail;
    }

    /// The counters now.
    pub fn status(&self) -> Status {
        self.state.lock().unwrap().snapshot()
    }

    /// Ends the phase: the bar is cleared, the lines stop. Returns the last counters.
    pub fn finish(&mut self) -> Status {
        if let Some((tx, handle)) = self.ticker.take() {
            drop(tx);
            let _ = handle.join();
        }
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        self.status()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(done: u64, total: u64, secs: u64) -> Status {
        Status {
            label: "evaluate".into(),
            unit: "samples",
            done,
            total,
            elapsed: Duration::from_secs(secs),
            expected_total: None,
            expected_done: 0.0,
            detail: String::new(),
        }
    }

    #[test]
    fn term_dumb_and_no_terminal_give_lines() {
        let auto = ProgressMode::Auto {
            interval: Duration::from_secs(5),
        };
        let lines = Display::Lines(Duration::from_secs(5));
        assert_eq!(auto.resolve_for(true, Some("xterm-256color")), Display::Bar);
        assert_eq!(auto.resolve_for(true, None), Display::Bar);
        assert_eq!(auto.resolve_for(true, Some("dumb")), lines);
        assert_eq!(auto.resolve_for(false, Some("xterm")), lines);
        assert_eq!(ProgressMode::Off.resolve_for(true, None), Display::Off);
    }

    #[test]
    fn plain_line_has_counts_rate_eta_and_no_escape_codes() {
        let mut s = status(30, 148, 600);
        s.detail = "2 failed tasks".into();
        let line = s.line();
        assert_eq!(
            line,
            "evaluate: 30/148 samples (20.3%) | 3.0/min | 2 failed tasks | elapsed 0:10:00 | eta 0:39:20"
        );
        assert!(!line.contains('\x1b') && !line.contains('\r'));
        assert!(status(0, 5, 0).line().ends_with("eta ?"));
    }

    #[test]
    fn eta_of_a_longest_first_run_follows_expected_seconds() {
        // 100 jobs: the first 10 take 60 s each, the other 90 take 1 s: 690 s of work.
        // After 60 s of wall time on 10 workers the 10 long ones are done.
        let mut s = status(10, 100, 60);
        let by_count = s.eta().unwrap().as_secs();
        assert_eq!(by_count, 540, "the count rate promises 9 more minutes");
        s.expected_total = Some(690.0);
        s.expected_done = 600.0;
        let by_work = s.eta().unwrap().as_secs();
        assert_eq!(by_work, 9, "90 s of work left at 10 s of work per second");
    }

    #[test]
    fn lines_mode_writes_plain_lines_only() {
        let buf: Arc<Mutex<Vec<u8>>> = Arc::new(Mutex::new(Vec::new()));
        let out: Out = buf.clone();
        let mut p = Progress::with_display(Display::Lines(Duration::from_millis(20)), out);
        p.say("evaluate: 4 to run");
        p.start("evaluate", "samples", 4);
        p.set_expected_total(Some(4.0));
        p.advance(1, 1.0);
        p.set_detail("1 pass".into());
        std::thread::sleep(Duration::from_millis(70));
        p.advance(3, 3.0);
        let last = p.finish();
        p.say(&last.line());
        let text = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
        assert!(!text.contains('\x1b') && !text.contains('\r'), "{text:?}");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() >= 3, "{text}");
        assert_eq!(lines[0], "evaluate: 4 to run");
        assert!(
            lines[1].starts_with("evaluate: 1/4 samples (25.0%)"),
            "{text}"
        );
        assert!(lines
            .last()
            .unwrap()
            .starts_with("evaluate: 4/4 samples (100.0%)"));
        assert!(lines.last().unwrap().ends_with("eta 0:00:00"));
    }
}
