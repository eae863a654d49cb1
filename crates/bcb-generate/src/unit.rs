//! One unit of a generation run: a task's request under the rate limits, retried, its
//! samples handed to the journal, and what a failure stops (a fatal error, too many lost
//! connections in a row); with what a unit is made of and reports to (its prompt, the run's
//! counters and their tracker, a task's failure), so the run (`runner.rs`) uses this module and
//! not the other way round.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bcb_dataset::Task;
use bcb_http::{retry_async, RetryPolicy};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use crate::error::{ApiError, ErrorClass};
use crate::http::Http;
use crate::options::{Backend, GenerateOptions};
use crate::progress::{Event, Reporter, Snapshot};
use crate::prompt::{chat_user_message, prefill_text, strip_think, task_prompt};
use crate::providers::{GenRequest, Prompt, Provider, Usage};

/// Requests-per-minute and tokens-per-minute budgets.
pub(crate) struct Limits {
    rpm: Option<DefaultDirectRateLimiter>,
    tpm: Option<(DefaultDirectRateLimiter, u32)>,
}

impl Limits {
    pub(crate) fn new(opts: &GenerateOptions) -> Self {
        let rpm = opts.requests_per_minute.and_then(NonZeroU32::new).map(|r| {
            // Evenly spaced: a burst of a whole minute's requests would trip the provider.
            RateLimiter::direct(Quota::per_minute(r).allow_burst(NonZeroU32::MIN))
        });
        let tpm = opts
            .tokens_per_minute
            .and_then(NonZeroU32::new)
            .map(|t| (RateLimiter::direct(Quota::per_minute(t)), t.get()));
        Limits { rpm, tpm }
    }

    /// Waits until a request of about `tokens` tokens fits both budgets.
    pub(crate) async fn wait(&self, tokens: u32) {
        if let Some(l) = &self.rpm {
            l.until_ready().await;
        }
        if let Some((l, cap)) = &self.tpm {
            // A single request larger than the whole budget still goes, alone.
            let n = NonZeroU32::new(tokens.clamp(1, *cap)).expect("nonzero");
            let _ = l.until_n_ready(n).await;
        }
    }
}

pub(crate) struct UnitCtx {
    pub(crate) opts: Arc<GenerateOptions>,
    pub(crate) tasks: Arc<Vec<Task>>,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) http: Http,
    pub(crate) limits: Arc<Limits>,
    pub(crate) stats: Arc<Stats>,
    pub(crate) tx: std::sync::mpsc::Sender<(usize, Vec<(String, String)>)>,
    pub(crate) tracker: Tracker,
    pub(crate) conn_failures: Arc<AtomicU32>,
    pub(crate) fatal: Arc<Mutex<Option<String>>>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) stop_notify: Arc<tokio::sync::Notify>,
}

impl UnitCtx {
    pub(crate) async fn run(self, unit: Unit) -> Result<(), Failure> {
        let task = &self.tasks[unit.task_index];
        let prompt = build_prompt(&self.opts, task);
        let prompt_chars = match &prompt {
            Prompt::Chat { user, prefill } => user.len() + prefill.as_ref().map_or(0, |p| p.len()),
            Prompt::Raw(p) => p.len(),
        };
        let mut left = unit.n;
        // A server may return fewer choices than asked; ask again for the rest (bounded).
        let mut short_answers = 0;
        while left > 0 {
            let req = GenRequest {
                prompt: prompt.clone(),
                n: left,
            };
            let est_tokens = (prompt_chars / 4) as u32 + self.opts.max_tokens.saturating_mul(left);
            let result = self.request_with_retries(&req, est_tokens).await;
            let resp = match result {
                Ok(r) => r,
                Err(e) => {
                    let msg = e.to_string();
                    if e.class() == ErrorClass::Fatal {
                        let hint = key_hint(self.opts.backend, e.status());
                        self.stop_run(format!("{msg}{hint}"));
                    } else if !self.stop.load(Ordering::SeqCst) {
                        self.tracker.report_failure(&task.task_id, &msg);
                    }
                    return Err(Failure {
                        task_id: task.task_id.clone(),
                        missing: left,
                        error: msg,
                    });
                }
            };
            if let Some(u) = resp.usage {
                self.stats
                    .input_tokens
                    .fetch_add(u.input_tokens, Ordering::Relaxed);
                self.stats
                    .output_tokens
                    .fetch_add(u.output_tokens, Ordering::Relaxed);
            }
            let outputs: Vec<String> = resp.outputs.into_iter().take(left as usize).collect();
            if outputs.is_empty() {
                short_answers += 1;
                if short_answers > 3 {
                    return Err(Failure {
                        task_id: task.task_id.clone(),
                        missing: left,
                        error: "the server returned no choices".into(),
                    });
                }
                continue;
            }
            left -= outputs.len() as u32;
            let rows = self.to_rows(task, &prompt, outputs).await;
            if self.tx.send((unit.task_index, rows)).is_err() {
                return Ok(()); // writer gone: the run is stopping
            }
        }
        Ok(())
    }

    async fn request_with_retries(
        &self,
        req: &GenRequest,
        est_tokens: u32,
    ) -> Result<crate::providers::GenResponse, ApiError> {
        let policy = RetryPolicy {
            max_delay: Duration::from_secs(60),
            ..RetryPolicy::new(self.opts.max_retries)
        };
        let op = || async {
            self.limits.wait(est_tokens).await;
            self.stats.requests.fetch_add(1, Ordering::Relaxed);
            let result = self.provider.generate(&self.http, req).await;
            self.count_connection(&result);
            result
        };
        retry_async(
            &policy,
            op,
            |_| !self.stop.load(Ordering::SeqCst),
            |_, _| {
                self.stats.retries.fetch_add(1, Ordering::Relaxed);
            },
        )
        .await
        .map_err(|failed| failed.error)
    }

    /// Stops the whole run: in-flight requests are cancelled, written samples stay.
    fn stop_run(&self, why: String) {
        let mut fatal = self.fatal.lock().unwrap();
        if fatal.is_none() {
            *fatal = Some(why);
        }
        self.stop.store(true, Ordering::SeqCst);
        self.stop_notify.notify_waiters();
    }

    /// The circuit breaker: a wrong `--base-url` or a dead server fails every request the
    /// same way, so stop after a few connection failures in a row instead of retrying each
    /// task for minutes. Any answer from the server resets the count.
    fn count_connection(&self, result: &Result<crate::providers::GenResponse, ApiError>) {
        let Err(e) = result else {
            self.conn_failures.store(0, Ordering::SeqCst);
            return;
        };
        let Some(url) = e.connection_failure_url() else {
            self.conn_failures.store(0, Ordering::SeqCst);
            return;
        };
        let n = self.conn_failures.fetch_add(1, Ordering::SeqCst) + 1;
        let limit = self.opts.max_connection_failures;
        if limit > 0 && n >= limit {
            self.stop_run(format!(
                "cannot connect to {url}: {n} connection failures in a row across tasks (last: {e}); \
                 check --base-url and that the server is running and reachable"
            ));
        }
    }

    async fn to_rows(
        &self,
        task: &Task,
        prompt: &Prompt,
        outputs: Vec<String>,
    ) -> Vec<(String, String)> {
        let entry = task.entry_point.clone();
        let prefix = match prompt {
            Prompt::Raw(p) => Some(p.clone()),
            Prompt::Chat { .. } => None,
        };
        let strip = self.opts.strip_think;
        let work = move || {
            outputs
                .into_iter()
                .map(|out| {
                    // Direct completion: the sample is prompt + continuation, as in the original.
                    let raw = match &prefix {
                        Some(p) => format!("{p}{out}"),
                        None => out,
                    };
                    let code = if strip {
                        strip_think(&raw)
                    } else {
                        raw.clone()
                    };
                    let solution = bcb_sanitize::sanitize(&code, Some(&entry));
                    (solution, raw)
                })
                .collect::<Vec<_>>()
        };
        // The sanitizer is CPU work: keep it off the request threads.
        tokio::task::spawn_blocking(work).await.unwrap_or_default()
    }
}

pub(crate) fn key_hint(backend: Backend, status: Option<u16>) -> &'static str {
    match (status, backend) {
        (Some(401 | 403), Backend::OpenAi) => " (check OPENAI_API_KEY)",
        (Some(401 | 403), Backend::Anthropic) => " (check ANTHROPIC_API_KEY)",
        (Some(401 | 403), Backend::Google) => " (check GOOGLE_API_KEY)",
        (Some(401 | 403), Backend::Mistral) => " (check MISTRAL_API_KEY)",
        (Some(401 | 403), Backend::HfInference) => " (check HF_INFERENCE_API_KEY or HF_TOKEN)",
        (Some(404), _) => " (check --model and --base-url)",
        _ => "",
    }
}

/// One request's worth of work: `n` samples of one task.
#[derive(Debug, Clone)]
pub(crate) struct Unit {
    pub(crate) task_index: usize,
    pub(crate) n: u32,
}

#[derive(Debug, Clone)]
pub struct Failure {
    pub task_id: String,
    pub missing: u32,
    pub error: String,
}

#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) requests: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) input_tokens: AtomicU64,
    pub(crate) output_tokens: AtomicU64,
    pub(crate) written: AtomicU64,
    pub(crate) failed_tasks: AtomicU64,
}

/// Turns the counters into snapshots for the reporter.
#[derive(Clone)]
pub(crate) struct Tracker {
    pub(crate) stats: Arc<Stats>,
    pub(crate) total: u64,
    pub(crate) started: Instant,
    pub(crate) reporter: Arc<dyn Reporter>,
    pub(crate) prices: (Option<f64>, Option<f64>),
}

impl Tracker {
    pub(crate) fn snapshot(&self) -> Snapshot {
        let usage = Usage {
            input_tokens: self.stats.input_tokens.load(Ordering::Relaxed),
            output_tokens: self.stats.output_tokens.load(Ordering::Relaxed),
        };
        Snapshot {
            done: self.stats.written.load(Ordering::Relaxed),
            total: self.total,
            failed_tasks: self.stats.failed_tasks.load(Ordering::Relaxed),
            retries: self.stats.retries.load(Ordering::Relaxed),
            output_tokens: usage.output_tokens,
            elapsed: self.started.elapsed(),
            cost_usd: price(self.prices, usage),
        }
    }

    pub(crate) fn report_progress(&self) {
        self.reporter.event(&Event::Progress(self.snapshot()));
    }

    pub(crate) fn report_failure(&self, task_id: &str, error: &str) {
        self.stats.failed_tasks.fetch_add(1, Ordering::Relaxed);
        self.reporter.event(&Event::TaskFailed {
            task_id: task_id.to_string(),
            error: error.to_string(),
            snapshot: self.snapshot(),
        });
    }
}

/// The prompt sent for `task`, by the original's rules.
pub fn build_prompt(opts: &GenerateOptions, task: &Task) -> Prompt {
    let p = task_prompt(task.prompt(opts.split), opts.strip_newlines);
    if opts.direct_completion {
        Prompt::Raw(p.to_string())
    } else {
        Prompt::Chat {
            user: chat_user_message(p, opts.split, &opts.instruction_prefix),
            prefill: opts.prefill.then(|| prefill_text(&opts.response_prefix)),
        }
    }
}

pub(crate) fn price((input, output): (Option<f64>, Option<f64>), u: Usage) -> Option<f64> {
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(
        u.input_tokens as f64 * input.unwrap_or(0.0) / 1e6
            + u.output_tokens as f64 * output.unwrap_or(0.0) / 1e6,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bcb_dataset::{Split, Subset};
    use std::time::Instant;

    #[tokio::test]
    async fn token_budget_makes_requests_wait_for_refill() {
        let mut o = GenerateOptions::new("m", Backend::OpenAi, Split::Instruct, Subset::Hard);
        o.tokens_per_minute = Some(600); // refills 10 tokens per second
        let limits = Limits::new(&o);
        let t0 = Instant::now();
        limits.wait(600).await; // the whole first minute at once
        assert!(t0.elapsed() < Duration::from_millis(200));
        limits.wait(10).await; // must wait for ~1 s of refill
        let waited = t0.elapsed();
        assert!(waited >= Duration::from_millis(900), "{waited:?}");
    }
}
