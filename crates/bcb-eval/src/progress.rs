//! Progress display: a bar with the running pass rate on a terminal, and a line every
//! 30 s otherwise (CI logs), so long runs are never silent.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Show anything at all (off for `--quiet` and for tests).
    pub enabled: bool,
}

impl Progress {
    pub fn new(enabled: bool) -> Self {
        Progress { enabled }
    }

    /// A bar for `total` new items; `resumed` counts items done by an earlier run.
    pub fn bar(&self, label: &str, total: u64, resumed: usize) -> Bar {
        let tty = self.enabled && std::io::stderr().is_terminal();
        let pb = if tty {
            let pb = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            pb.set_style(
                ProgressStyle::with_template(
                    "{prefix:>12.bold} [{bar:30}] {pos}/{len} {msg} ({elapsed}, eta {eta})",
                )
                .unwrap()
                .progress_chars("=> "),
            );
            pb.set_prefix(label.to_string());
            pb.enable_steady_tick(Duration::from_millis(250));
            pb
        } else {
            ProgressBar::hidden()
        };
        if self.enabled {
            let resumed = if resumed > 0 {
                format!(" ({resumed} already done, resuming)")
            } else {
                String::new()
            };
            pb.suspend(|| eprintln!("{label}: {total} to run{resumed}"));
        }
        Bar {
            pb,
            label: label.to_string(),
            total,
            enabled: self.enabled,
            tty,
            done: AtomicU64::new(0),
            passed: AtomicU64::new(0),
            start: Instant::now(),
            last_line: Mutex::new(Instant::now()),
        }
    }
}

pub struct Bar {
    pb: ProgressBar,
    label: String,
    total: u64,
    enabled: bool,
    tty: bool,
    done: AtomicU64,
    passed: AtomicU64,
    start: Instant,
    last_line: Mutex<Instant>,
}

impl Bar {
    pub fn record(&self, passed: bool) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let ok = self.passed.fetch_add(u64::from(passed), Ordering::Relaxed) + u64::from(passed);
        let rate = 100.0 * ok as f64 / done as f64;
        if self.tty {
            self.pb.set_message(format!("pass {rate:.1}%"));
            self.pb.inc(1);
        } else if self.enabled {
            let mut last = self.last_line.lock().unwrap();
            if last.elapsed() >= Duration::from_secs(30) || done == self.total {
                *last = Instant::now();
                eprintln!(
                    "{}: {done}/{} done, pass {rate:.1}%, {:.0}s",
                    self.label,
                    self.total,
                    self.start.elapsed().as_secs_f64()
                );
            }
        }
    }

    pub fn finish(&self) {
        self.pb.finish_and_clear();
        if self.enabled {
            let done = self.done.load(Ordering::Relaxed);
            let ok = self.passed.load(Ordering::Relaxed);
            eprintln!(
                "{}: {ok}/{done} passed in {:.1}s",
                self.label,
                self.start.elapsed().as_secs_f64()
            );
        }
    }
}
