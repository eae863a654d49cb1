//! A generation run: check the inputs, work out what is missing, send requests concurrently
//! under the configured limits, journal every sample as it arrives, then write the final file.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use bcb_dataset::{Dataset, Task};
use bcb_http::{retry_async, RetryPolicy};
use bcb_samples::JsonlAppender;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde::Serialize;

use crate::error::{ApiError, ErrorClass};
use crate::http::Http;
use crate::options::{Backend, GenerateOptions};
use crate::progress::{Event, Quiet, Reporter, Snapshot};
use crate::prompt::{chat_user_message, prefill_text, strip_think, task_prompt};
use crate::providers::{make_provider, GenRequest, Prompt, Provider, Usage};
use crate::samples_file;

/// One request's worth of work: `n` samples of one task.
#[derive(Debug, Clone)]
struct Unit {
    task_index: usize,
    n: u32,
}

#[derive(Serialize)]
struct Row<'a> {
    task_id: &'a str,
    solution: String,
    raw_solution: String,
}

#[derive(Debug, Clone)]
pub struct Failure {
    pub task_id: String,
    pub missing: u32,
    pub error: String,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub path: PathBuf,
    pub tasks: usize,
    /// Samples already in the file for the selected tasks when the run started.
    pub already_present: u64,
    /// Samples this run set out to generate.
    pub wanted: u64,
    pub written: u64,
    pub requests: u64,
    pub retries: u64,
    pub usage: Usage,
    pub elapsed: Duration,
    pub cost_usd: Option<f64>,
    pub failures: Vec<Failure>,
}

impl Outcome {
    pub fn is_complete(&self) -> bool {
        self.failures.is_empty() && self.written >= self.wanted
    }

    /// A short human summary (several lines).
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} tasks: {} samples were present, {} generated of {} wanted, {} requests ({} retries), {} input + {} output tokens in {:.1}s",
            self.tasks,
            self.already_present,
            self.written,
            self.wanted,
            self.requests,
            self.retries,
            self.usage.input_tokens,
            self.usage.output_tokens,
            self.elapsed.as_secs_f64()
        );
        if let Some(c) = self.cost_usd {
            s.push_str(&format!(", ${c:.4}"));
        }
        if !self.failures.is_empty() {
            s.push_str(&format!(
                "\n{} tasks still miss samples (re-run the same command to retry only those):",
                self.failures.len()
            ));
            for f in self.failures.iter().take(20) {
                s.push_str(&format!("\n  {} (-{}): {}", f.task_id, f.missing, f.error));
            }
            if self.failures.len() > 20 {
                s.push_str(&format!("\n  ... and {} more", self.failures.len() - 20));
            }
        }
        s
    }
}

#[derive(Default)]
struct Stats {
    requests: AtomicU64,
    retries: AtomicU64,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
    written: AtomicU64,
    failed_tasks: AtomicU64,
}

/// Turns the counters into snapshots for the reporter.
#[derive(Clone)]
struct Tracker {
    stats: Arc<Stats>,
    total: u64,
    started: Instant,
    reporter: Arc<dyn Reporter>,
    prices: (Option<f64>, Option<f64>),
}

impl Tracker {
    fn snapshot(&self) -> Snapshot {
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

    fn report_progress(&self) {
        self.reporter.event(&Event::Progress(self.snapshot()));
    }

    fn report_failure(&self, task_id: &str, error: &str) {
        self.stats.failed_tasks.fetch_add(1, Ordering::Relaxed);
        self.reporter.event(&Event::TaskFailed {
            task_id: task_id.to_string(),
            error: error.to_string(),
            snapshot: self.snapshot(),
        });
    }
}

/// Runs generation for `dataset` (blocking; starts its own async runtime), reporting nothing.
pub fn run_codegen(opts: &GenerateOptions, dataset: &Dataset) -> anyhow::Result<Outcome> {
    run_codegen_with(opts, dataset, Arc::new(Quiet))
}

/// Runs generation for `dataset`, telling `reporter` what happens.
pub fn run_codegen_with(
    opts: &GenerateOptions,
    dataset: &Dataset,
    reporter: Arc<dyn Reporter>,
) -> anyhow::Result<Outcome> {
    let mut opts = opts.clone();
    opts.normalize()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(run_async(opts, dataset, reporter))
}

/// The tasks selected by `--id-range` and the id list, in dataset order.
fn selected_tasks<'a>(
    opts: &GenerateOptions,
    dataset: &'a Dataset,
) -> anyhow::Result<Vec<&'a Task>> {
    let mut tasks: Vec<&Task> = dataset.tasks().iter().collect();
    if let Some((lo, hi)) = opts.id_range {
        if lo >= hi {
            anyhow::bail!("--id-range {lo}-{hi}: the low end must be below the high end");
        }
        tasks = tasks.into_iter().skip(lo).take(hi - lo).collect();
    }
    if let Some(ids) = &opts.task_ids {
        let unknown: Vec<&String> = ids.iter().filter(|id| !dataset.contains(id)).collect();
        if !unknown.is_empty() {
            anyhow::bail!(
                "task ids not in the dataset: {}",
                unknown
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let keep: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
        tasks.retain(|t| keep.contains(t.task_id.as_str()));
    }
    Ok(tasks)
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

async fn run_async(
    mut opts: GenerateOptions,
    dataset: &Dataset,
    reporter: Arc<dyn Reporter>,
) -> anyhow::Result<Outcome> {
    let started = Instant::now();
    let tasks = selected_tasks(&opts, dataset)?;
    let path = opts.target_path();
    let journal_path = samples_file::journal_path(&path);

    // Inputs first (API key, model file, server binary): nothing is created, removed or
    // started until they pass.
    let concurrency = opts
        .concurrency
        .unwrap_or_else(|| opts.backend.default_concurrency())
        .max(1);
    opts.concurrency = Some(concurrency);
    let served = crate::serve::check(&opts)?;
    let api_provider = match served {
        Some(_) => None,
        None => Some(make_provider(&opts, opts.base_url.as_deref())?),
    };

    if !opts.resume {
        for p in [&path, &journal_path] {
            match std::fs::remove_file(p) {
                Ok(()) => tracing::info!("removed {} (--no-resume)", p.display()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).with_context(|| format!("cannot remove {}", p.display())),
            }
        }
    }
    let previous = samples_file::read_final(&path)?;
    let journaled = samples_file::read_journal(&journal_path)?;
    let mut have: HashMap<String, u32> = HashMap::new();
    for rec in previous.iter().chain(&journaled) {
        if let Some(id) = rec.get("task_id").and_then(|v| v.as_str()) {
            *have.entry(id.to_string()).or_default() += 1;
        }
    }

    let mut already = 0u64;
    let mut wanted = 0u64;
    let mut missing: Vec<u32> = Vec::with_capacity(tasks.len());
    for t in &tasks {
        let h = have.get(&t.task_id).copied().unwrap_or(0);
        already += h.min(opts.n_samples) as u64;
        let m = opts.n_samples.saturating_sub(h);
        wanted += m as u64;
        missing.push(m);
    }
    reporter.event(&Event::Plan {
        model: opts.model_label.clone(),
        tasks: tasks.len(),
        present: already,
        to_generate: wanted,
        path: path.clone(),
    });
    let stats = Arc::new(Stats::default());
    if wanted == 0 {
        if !journaled.is_empty() {
            // A killed run left every sample in the journal: write the final file from it.
            samples_file::finalize(dataset, &path, previous)?;
        }
        return Ok(Outcome {
            path,
            tasks: tasks.len(),
            already_present: already,
            wanted,
            written: 0,
            requests: 0,
            retries: 0,
            usage: Usage::default(),
            elapsed: started.elapsed(),
            cost_usd: None,
            failures: vec![],
        });
    }

    // A local GGUF or `vllm serve`: started for the run; it stops when `_server` drops.
    let mut _server = None;
    let provider: Arc<dyn Provider> = match (served, api_provider) {
        (Some(kind), _) => {
            let o = opts.clone();
            let server =
                tokio::task::spawn_blocking(move || crate::serve::start(kind, &o, concurrency))
                    .await??;
            let base_url = format!("{}/v1", server.base_url());
            opts.model = server.model_name().to_string();
            _server = Some(server);
            Arc::from(make_provider(&opts, Some(&base_url))?)
        }
        (None, Some(p)) => Arc::from(p),
        (None, None) => unreachable!("a provider or a server"),
    };

    let (journal, _) = JsonlAppender::open(&journal_path)
        .with_context(|| format!("cannot open the journal {}", journal_path.display()))?;
    // Each line is written (so it survives a killed process) as it arrives; fsync (for power
    // loss) is done once per batch of queued samples through a second handle to the same file.
    let journal = journal.without_sync();
    let syncer = if opts.durable {
        Some(
            std::fs::File::open(&journal_path)
                .with_context(|| format!("cannot open {}", journal_path.display()))?,
        )
    } else {
        None
    };

    let http = Http::new(opts.request_timeout, concurrency)?;
    let max_n = provider.max_n().max(1);
    let mut units = Vec::new();
    for (i, &m) in missing.iter().enumerate() {
        let mut left = m;
        while left > 0 {
            let n = left.min(max_n);
            units.push(Unit { task_index: i, n });
            left -= n;
        }
    }

    let tracker = Tracker {
        stats: stats.clone(),
        total: wanted,
        started,
        reporter: reporter.clone(),
        prices: (opts.price_input, opts.price_output),
    };

    // The journal writer: one thread, so appends never interleave and per-task counts are
    // exact even when several requests for one task finish together.
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Vec<(String, String)>)>();
    let write_error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let stop = Arc::new(AtomicBool::new(false));
    let stop_notify = Arc::new(tokio::sync::Notify::new());
    let writer = {
        let task_ids: Vec<String> = tasks.iter().map(|t| t.task_id.clone()).collect();
        let n_samples = opts.n_samples;
        let mut counts: Vec<u32> = task_ids
            .iter()
            .map(|id| have.get(id).copied().unwrap_or(0))
            .collect();
        let stats = stats.clone();
        let tracker = tracker.clone();
        let write_error = write_error.clone();
        let stop = stop.clone();
        let stop_notify = stop_notify.clone();
        let mut journal = journal;
        std::thread::spawn(move || {
            let fail = |e: String| {
                *write_error.lock().unwrap() = Some(e);
                stop.store(true, Ordering::SeqCst);
                stop_notify.notify_waiters();
            };
            while let Ok(first) = rx.recv() {
                let mut batch = vec![first];
                batch.extend(rx.try_iter());
                for (ti, rows) in batch {
                    for (solution, raw) in rows {
                        if counts[ti] >= n_samples {
                            tracing::debug!("dropping an extra sample for {}", task_ids[ti]);
                            continue;
                        }
                        let row = Row {
                            task_id: &task_ids[ti],
                            solution,
                            raw_solution: raw,
                        };
                        if let Err(e) = journal.append(&row) {
                            return fail(format!(
                                "cannot append to {}: {e}",
                                journal.path().display()
                            ));
                        }
                        counts[ti] += 1;
                        stats.written.fetch_add(1, Ordering::Relaxed);
                    }
                }
                tracker.report_progress();
                if let Some(f) = &syncer {
                    if let Err(e) = f.sync_data() {
                        return fail(format!("cannot sync {}: {e}", journal.path().display()));
                    }
                }
            }
        })
    };

    let limits = Arc::new(Limits::new(&opts));
    // Connection failures in a row, across tasks: the circuit breaker's count.
    let conn_failures = Arc::new(AtomicU32::new(0));
    let fatal: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let semaphore = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut joins = tokio::task::JoinSet::new();
    let opts = Arc::new(opts);
    let tasks_owned: Arc<Vec<Task>> = Arc::new(tasks.iter().map(|t| (*t).clone()).collect());
    let mut failures: Vec<Failure> = Vec::new();

    for unit in units {
        let permit = tokio::select! {
            p = semaphore.clone().acquire_owned() => p.expect("semaphore open"),
            _ = stop_notify.notified() => break,
        };
        if stop.load(Ordering::SeqCst) {
            break;
        }
        // Collect finished units as we go so failures surface early.
        while let Some(res) = joins.try_join_next() {
            if let Ok(Err(f)) = res {
                failures.push(f);
            }
        }
        let ctx = UnitCtx {
            opts: opts.clone(),
            tasks: tasks_owned.clone(),
            provider: provider.clone(),
            http: http.clone(),
            limits: limits.clone(),
            stats: stats.clone(),
            tx: tx.clone(),
            tracker: tracker.clone(),
            conn_failures: conn_failures.clone(),
            fatal: fatal.clone(),
            stop: stop.clone(),
            stop_notify: stop_notify.clone(),
        };
        joins.spawn(async move {
            let _permit = permit;
            ctx.run(unit).await
        });
    }
    drop(tx);
    if stop.load(Ordering::SeqCst) {
        // Stopped while units were being started: the notification may have passed unseen.
        joins.abort_all();
    }
    loop {
        tokio::select! {
            res = joins.join_next() => match res {
                None => break,
                Some(Ok(Err(f))) => failures.push(f),
                Some(_) => {}
            },
            _ = stop_notify.notified() => {
                // 401/404 or a write error: cancel what is in flight; written samples stay.
                joins.abort_all();
                while joins.join_next().await.is_some() {}
                break;
            }
        }
    }
    let _ = tokio::task::spawn_blocking(move || writer.join()).await;
    drop(_server);

    let usage = Usage {
        input_tokens: stats.input_tokens.load(Ordering::Relaxed),
        output_tokens: stats.output_tokens.load(Ordering::Relaxed),
    };
    let written = stats.written.load(Ordering::Relaxed);
    if let Some(e) = write_error.lock().unwrap().take() {
        anyhow::bail!(
            "{e}; the {written} samples written before are kept in {}",
            path.display()
        );
    }
    // Every run ends with the final file in dataset order, whatever stopped it.
    samples_file::finalize(dataset, &path, previous)?;
    reporter.event(&Event::Finished(tracker.snapshot()));
    if let Some(e) = fatal.lock().unwrap().take() {
        anyhow::bail!(
            "stopped: {e}\n{written} samples generated in this run are kept in {}; re-running continues from there",
            path.display()
        );
    }
    // Merge failures per task.
    let mut per_task: HashMap<String, Failure> = HashMap::new();
    for f in failures {
        per_task
            .entry(f.task_id.clone())
            .and_modify(|e| e.missing += f.missing)
            .or_insert(f);
    }
    let mut failures: Vec<Failure> = per_task.into_values().collect();
    failures.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    Ok(Outcome {
        path,
        tasks: tasks.len(),
        already_present: already,
        wanted,
        written,
        requests: stats.requests.load(Ordering::Relaxed),
        retries: stats.retries.load(Ordering::Relaxed),
        usage,
        elapsed: started.elapsed(),
        cost_usd: cost(&opts, usage),
        failures,
    })
}

fn cost(opts: &GenerateOptions, u: Usage) -> Option<f64> {
    price((opts.price_input, opts.price_output), u)
}

fn price((input, output): (Option<f64>, Option<f64>), u: Usage) -> Option<f64> {
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(
        u.input_tokens as f64 * input.unwrap_or(0.0) / 1e6
            + u.output_tokens as f64 * output.unwrap_or(0.0) / 1e6,
    )
}

/// Requests-per-minute and tokens-per-minute budgets.
struct Limits {
    rpm: Option<DefaultDirectRateLimiter>,
    tpm: Option<(DefaultDirectRateLimiter, u32)>,
}

impl Limits {
    fn new(opts: &GenerateOptions) -> Self {
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
    async fn wait(&self, tokens: u32) {
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

struct UnitCtx {
    opts: Arc<GenerateOptions>,
    tasks: Arc<Vec<Task>>,
    provider: Arc<dyn Provider>,
    http: Http,
    limits: Arc<Limits>,
    stats: Arc<Stats>,
    tx: std::sync::mpsc::Sender<(usize, Vec<(String, String)>)>,
    tracker: Tracker,
    conn_failures: Arc<AtomicU32>,
    fatal: Arc<Mutex<Option<String>>>,
    stop: Arc<AtomicBool>,
    stop_notify: Arc<tokio::sync::Notify>,
}

impl UnitCtx {
    async fn run(self, unit: Unit) -> Result<(), Failure> {
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

fn key_hint(backend: Backend, status: Option<u16>) -> &'static str {
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

#[cfg(test)]
mod tests {
    use super::*;
    use bcb_dataset::{Split, Subset};

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
