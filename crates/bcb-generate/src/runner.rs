//! A generation run: check the inputs, work out what is missing, send requests concurrently
//! under the configured limits, journal every sample as it arrives, then write the final file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use bcb_dataset::{Dataset, Task};
use bcb_samples::{JournalLock, JsonlAppender};
use serde::Serialize;
use serde_json::Value;

use crate::http::Http;
use crate::options::GenerateOptions;
use crate::progress::{Event, Quiet, Reporter};
use crate::providers::{make_provider, Provider, Usage};
use crate::samples_file;
use crate::unit::{price, Failure, Limits, Stats, Tracker, Unit, UnitCtx};

#[derive(Serialize)]
struct Row<'a> {
    task_id: &'a str,
    solution: String,
    raw_solution: String,
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

/// What is on disk for a samples file (its final file and its journal), and what each task
/// still misses.
struct Survey {
    previous: Vec<Value>,
    journaled: Vec<Value>,
    /// Samples present per task id.
    have: HashMap<String, u32>,
    /// Samples present that count (at most `n_samples` a task).
    already: u64,
    wanted: u64,
    /// Samples missing, per task of `tasks`.
    missing: Vec<u32>,
}

impl Survey {
    fn read(
        path: &Path,
        journal: &Path,
        tasks: &[&Task],
        n_samples: u32,
    ) -> anyhow::Result<Survey> {
        let previous = samples_file::read_final(path)?;
        let journaled = samples_file::read_journal(journal)?;
        let mut have: HashMap<String, u32> = HashMap::new();
        for rec in previous.iter().chain(&journaled) {
            if let Some(id) = rec.get("task_id").and_then(|v| v.as_str()) {
                *have.entry(id.to_string()).or_default() += 1;
            }
        }
        let mut already = 0u64;
        let mut wanted = 0u64;
        let mut missing: Vec<u32> = Vec::with_capacity(tasks.len());
        for t in tasks {
            let h = have.get(&t.task_id).copied().unwrap_or(0);
            already += h.min(n_samples) as u64;
            let m = n_samples.saturating_sub(h);
            wanted += m as u64;
            missing.push(m);
        }
        Ok(Survey {
            previous,
            journaled,
            have,
            already,
            wanted,
            missing,
        })
    }
}

/// The lock on the journal of the samples file at `path`; refused with a hint while another
/// run holds it.
fn lock_journal(path: &Path, journal: &Path) -> anyhow::Result<JournalLock> {
    Ok(JournalLock::acquire(journal, || {
        format!(
            "{} is being written by another run (`bcb generate`, or `bcb evaluate --model` \
             generating it; its journal {} is locked)\n\
             hint: wait for that run to end, or stop it; running again then continues from the \
             samples it wrote",
            path.display(),
            journal.display()
        )
    })?)
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

    // A complete file with no journal needs nothing written, so no lock (its folder may be
    // read-only). Otherwise one run at a time writes a samples file: the lock is held to the
    // end of this function (by the kernel, only as long as this process lives), and what is
    // on disk is read again under it.
    let unlocked = if opts.resume && !journal_path.exists() {
        Some(Survey::read(&path, &journal_path, &tasks, opts.n_samples)?)
    } else {
        None
    };
    let (_lock, survey) = match unlocked {
        Some(survey) if survey.wanted == 0 => (None, survey),
        _ => {
            let lock = lock_journal(&path, &journal_path)?;
            if !opts.resume {
                match std::fs::remove_file(&path) {
                    Ok(()) => tracing::info!("removed {} (--no-resume)", path.display()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(e).with_context(|| format!("cannot remove {}", path.display()))
                    }
                }
                lock.clear()
                    .with_context(|| format!("cannot empty {}", journal_path.display()))?;
            }
            let survey = Survey::read(&path, &journal_path, &tasks, opts.n_samples)?;
            (Some(lock), survey)
        }
    };
    reporter.event(&Event::Plan {
        model: opts.model_label.clone(),
        tasks: tasks.len(),
        present: survey.already,
        to_generate: survey.wanted,
        path: path.clone(),
    });
    let stats = Arc::new(Stats::default());
    if survey.wanted == 0 {
        if !survey.journaled.is_empty() {
            // A killed run left every sample in the journal: write the final file from it.
            samples_file::finalize(dataset, &path, survey.previous)?;
        }
        return Ok(Outcome {
            path,
            tasks: tasks.len(),
            already_present: survey.already,
            wanted: survey.wanted,
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
    for (i, &m) in survey.missing.iter().enumerate() {
        let mut left = m;
        while left > 0 {
            let n = left.min(max_n);
            units.push(Unit { task_index: i, n });
            left -= n;
        }
    }

    let tracker = Tracker {
        stats: stats.clone(),
        total: survey.wanted,
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
            .map(|id| survey.have.get(id).copied().unwrap_or(0))
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
    samples_file::finalize(dataset, &path, survey.previous)?;
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
        already_present: survey.already,
        wanted: survey.wanted,
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
