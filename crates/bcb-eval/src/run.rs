//! Evaluation of a samples file: build the executed programs, run what is not done yet,
//! and write upstream's two result files. Finished samples are journaled next to the
//! results, so a killed run resumes without redoing them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use bcb_dataset::{task_number, Dataset, Split, FULL_TASK_COUNT};
use bcb_execute::{Executor, Job, Outcome, Status};
use bcb_samples::{eval_results_path, pass_at_k_path, read_samples, JsonlAppender, SampleBody};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Digest;

use crate::ground_truth::GroundTruth;
use crate::journaled::{longest_first, run_journaled};
use crate::limits::sample_time_limit;
use crate::passk::mean_pass_at_k;
use crate::progress::Progress;
use crate::results::{model_name, pass_at_k_json, EvalResults, SampleResult};

pub struct EvalOptions<'a> {
    pub split: Split,
    /// Execute `code_prompt + "\n    pass\n" + solution` (upstream default).
    pub calibrated: bool,
    pub pass_k: Vec<u64>,
    pub min_time_limit: f64,
    pub base_timeout: f64,
    /// `--no-gt`: gt_pass_rate 0.0 and every task listed as failed, as upstream reports it.
    pub no_gt: bool,
    /// Re-evaluate even if the results file exists (the old file is kept as `.bak`).
    pub force: bool,
    pub progress: &'a Progress,
}

/// What an evaluation produced.
#[derive(Debug)]
pub struct EvalReport {
    pub results_path: PathBuf,
    pub pass_at_k_path: PathBuf,
    pub pass_at_k: Map<String, Value>,
    /// Samples run in this invocation (0 when results were loaded or fully resumed).
    pub executed: usize,
    pub resumed: usize,
    pub loaded_existing: bool,
}

/// Samples read, checked against the dataset, and turned into the programs to execute.
pub struct PreparedSamples {
    pub path: PathBuf,
    work: Vec<Work>,
}

impl PreparedSamples {
    /// Reads `path` and builds each executed program; errors name the file and line.
    pub fn read(dataset: &Dataset, path: &Path, calibrated: bool) -> anyhow::Result<Self> {
        Ok(PreparedSamples {
            path: path.to_path_buf(),
            work: prepare(dataset, path, calibrated)?,
        })
    }

    pub fn len(&self) -> usize {
        self.work.len()
    }

    pub fn is_empty(&self) -> bool {
        self.work.is_empty()
    }
}

/// One sample ready to run.
struct Work {
    task_id: String,
    /// Index of this sample among its task's samples (file order).
    completion_id: usize,
    /// The executed code.
    solution: String,
    digest: String,
}

#[derive(Serialize, Deserialize)]
struct JournalRecord {
    i: usize,
    task_id: String,
    sha: String,
    status: Status,
    details: Map<String, Value>,
    #[serde(default)]
    test_secs: Option<f64>,
}

#[derive(Serialize, Deserialize, PartialEq)]
struct JournalHeader {
    bcb_journal: u32,
    /// Identifies the inputs: samples, calibration, limits. A different key starts afresh.
    key: String,
}

/// Journal of finished samples: `X_eval_results.json` → `X_eval_results.json.partial.jsonl`.
pub fn journal_path(results_path: &Path) -> PathBuf {
    let mut s = results_path.as_os_str().to_owned();
    s.push(".partial.jsonl");
    PathBuf::from(s)
}

pub fn evaluate_samples(
    dataset: &Dataset,
    samples: &PreparedSamples,
    executor: &dyn Executor,
    gt: &GroundTruth,
    opts: &EvalOptions,
) -> anyhow::Result<EvalReport> {
    let samples_path = samples.path.as_path();
    let results_path = eval_results_path(samples_path);
    let pass_path = pass_at_k_path(&results_path);
    let task_ids: Vec<&str> = dataset.tasks().iter().map(|t| t.task_id.as_str()).collect();

    let mut executed = 0;
    let mut resumed = 0;
    let loaded_existing = results_path.is_file() && !opts.force;
    let results = if loaded_existing {
        if opts.progress.enabled {
            eprintln!(
                "Loading previous results from {} (pass --force to evaluate again)",
                results_path.display()
            );
        }
        EvalResults::load(&results_path)?
    } else {
        let work = &samples.work;
        let key = journal_key(work, opts);
        let (records, journal) = open_journal(&journal_path(&results_path), &key)?;
        let mut done: HashMap<usize, JournalRecord> = HashMap::new();
        for r in records {
            if work
                .get(r.i)
                .is_some_and(|w| w.digest == r.sha && w.task_id == r.task_id)
            {
                done.insert(r.i, r);
            }
        }
        resumed = done.len();
        let todo: Vec<usize> = (0..work.len()).filter(|i| !done.contains_key(i)).collect();
        executed = todo.len();
        let fresh = run_work(dataset, work, &todo, executor, gt, opts, journal, resumed)?;
        for r in fresh {
            done.insert(r.i, r);
        }
        if opts.force && results_path.exists() {
            backup(&results_path)?;
        }
        let results = assemble(dataset, work, &done);
        write_json(&results_path, &results)?;
        // The journal is redundant once the results file is complete.
        let _ = std::fs::remove_file(journal_path(&results_path));
        results
    };

    let counts = results.counts(task_ids.iter().copied());
    let pass_at_k: Vec<(u64, f64)> = opts
        .pass_k
        .iter()
        .filter_map(|&k| mean_pass_at_k(&counts, k).map(|v| (k, v)))
        .collect();
    let (gt_rate, failed) = if opts.no_gt {
        (0.0, task_ids.iter().map(|s| s.to_string()).collect())
    } else {
        (
            gt.pass_rate(task_ids.iter().copied()),
            gt.failed(task_ids.iter().copied()),
        )
    };
    let model = model_name(samples_path);
    let pass_json = pass_at_k_json(
        &pass_at_k,
        &model,
        opts.split.as_str(),
        dataset.subset.as_str(),
        opts.calibrated,
        gt_rate,
        &failed,
    );
    if pass_path.is_file() {
        let old: Option<Map<String, Value>> = std::fs::read(&pass_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        if old.as_ref() != Some(&pass_json) {
            let bak = backup(&pass_path)?;
            tracing::warn!(
                "{} differed; previous kept as {}",
                pass_path.display(),
                bak.display()
            );
        }
    }
    write_json(&pass_path, &pass_json)?;
    Ok(EvalReport {
        results_path,
        pass_at_k_path: pass_path,
        pass_at_k: pass_json,
        executed,
        resumed,
        loaded_existing,
    })
}

/// Reads the samples and builds what will be executed, checking ids against the dataset.
fn prepare(dataset: &Dataset, samples_path: &Path, calibrated: bool) -> anyhow::Result<Vec<Work>> {
    let samples = read_samples(samples_path)?;
    let mut per_task: HashMap<&str, usize> = HashMap::new();
    let mut work = Vec::with_capacity(samples.len());
    for sample in &samples {
        let known = task_number(&sample.task_id).is_some_and(|n| (n as usize) < FULL_TASK_COUNT);
        if !known {
            bail!(
                "{}: unknown task id `{}` (expected BigCodeBench/0 .. BigCodeBench/{})",
                sample.origin,
                sample.task_id,
                FULL_TASK_COUNT - 1
            );
        }
        // Samples of tasks outside the chosen subset/ids are skipped, as upstream does.
        let Some(task) = dataset.get(&sample.task_id) else {
            continue;
        };
        let mut solution = match &sample.body {
            SampleBody::Solution(s) => s.clone(),
            SampleBody::Completion(c) => format!("{}{}", task.complete_prompt, c),
        };
        if calibrated {
            solution = format!("{}\n    pass\n{}", task.code_prompt, solution);
        }
        let n = per_task.entry(task.task_id.as_str()).or_default();
        let digest = hex::encode(&sha2::Sha256::digest(solution.as_bytes())[..12]);
        work.push(Work {
            task_id: task.task_id.clone(),
            completion_id: *n,
            solution,
            digest,
        });
        *n += 1;
    }
    let missing: Vec<&str> = dataset
        .tasks()
        .iter()
        .map(|t| t.task_id.as_str())
        .filter(|id| !per_task.contains_key(id))
        .collect();
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(10).copied().collect();
        bail!(
            "{}: no samples for {} of the {} tasks in the {} subset ({}{}); evaluate only some tasks with --ids",
            samples_path.display(),
            missing.len(),
            dataset.len(),
            dataset.subset,
            shown.join(", "),
            if missing.len() > shown.len() { ", ..." } else { "" }
        );
    }
    Ok(work)
}

fn journal_key(work: &[Work], opts: &EvalOptions) -> String {
    let mut h = sha2::Sha256::new();
    for w in work {
        h.update(w.task_id.as_bytes());
        h.update(w.digest.as_bytes());
    }
    h.update(
        format!(
            "{}|{}|{}",
            opts.calibrated, opts.min_time_limit, opts.base_timeout
        )
        .as_bytes(),
    );
    hex::encode(&h.finalize()[..16])
}

fn open_journal(path: &Path, key: &str) -> anyhow::Result<(Vec<JournalRecord>, JsonlAppender)> {
    let header = JournalHeader {
        bcb_journal: 1,
        key: key.to_string(),
    };
    let open = || {
        JsonlAppender::open(path).with_context(|| format!("cannot open journal {}", path.display()))
    };
    let (mut journal, values) = open()?;
    let mut values = values.into_iter();
    let matches = values
        .next()
        .and_then(|v| serde_json::from_value::<JournalHeader>(v).ok())
        .is_some_and(|h| h == header);
    if matches {
        let records = values
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect();
        return Ok((records, journal));
    }
    // Different inputs (or no journal): start a new one.
    drop(journal);
    std::fs::remove_file(path).ok();
    let (j, _) = open()?;
    journal = j;
    journal.append(&header)?;
    Ok((Vec::new(), journal))
}

#[allow(clippy::too_many_arguments)]
fn run_work(
    dataset: &Dataset,
    work: &[Work],
    todo: &[usize],
    executor: &dyn Executor,
    gt: &GroundTruth,
    opts: &EvalOptions,
    journal: JsonlAppender,
    resumed: usize,
) -> anyhow::Result<Vec<JournalRecord>> {
    if todo.is_empty() {
        return Ok(Vec::new());
    }
    let mut jobs: Vec<Job> = todo
        .iter()
        .map(|&i| {
            let w = &work[i];
            let task = dataset
                .get(&w.task_id)
                .expect("work is built from dataset tasks");
            let expected = gt.expected_secs(&w.task_id);
            Job {
                key: i,
                task_id: w.task_id.clone(),
                code: w.solution.clone(),
                test: task.test.clone(),
                entry_point: task.entry_point.clone(),
                time_limit: std::time::Duration::from_secs_f64(sample_time_limit(
                    expected,
                    opts.min_time_limit,
                    opts.base_timeout,
                )),
                expected_secs: expected,
            }
        })
        .collect();
    // Longest first, so the slowest tasks do not start last and stretch the wall time.
    longest_first(&mut jobs);
    let bar = opts.progress.bar("evaluate", jobs.len() as u64, resumed);
    run_journaled(
        executor,
        jobs,
        journal,
        &bar,
        |job: Job, outcome: Outcome| JournalRecord {
            i: job.key,
            task_id: job.task_id,
            sha: work[job.key].digest.clone(),
            status: outcome.status,
            details: outcome.details,
            test_secs: outcome.test_secs,
        },
    )
}

fn assemble(dataset: &Dataset, work: &[Work], done: &HashMap<usize, JournalRecord>) -> EvalResults {
    let date = chrono::Local::now().format("%Y-%m-%d %H:%M").to_string();
    let mut results = EvalResults::new(date);
    let mut by_task: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    for (i, w) in work.iter().enumerate() {
        by_task
            .entry(w.task_id.as_str())
            .or_default()
            .push((w.completion_id, i));
    }
    for task in dataset.tasks() {
        let Some(list) = by_task.get_mut(task.task_id.as_str()) else {
            continue;
        };
        list.sort();
        let entries: Vec<Value> = list
            .iter()
            .filter_map(|&(_, i)| {
                let r = done.get(&i)?;
                let sr = SampleResult {
                    task_id: task.task_id.clone(),
                    solution: work[i].solution.clone(),
                    status: r.status.as_str().to_string(),
                    details: r.details.clone(),
                };
                Some(serde_json::to_value(sr).expect("plain data serializes"))
            })
            .collect();
        results
            .eval
            .insert(task.task_id.clone(), Value::Array(entries));
    }
    results
}

/// Moves `path` to the first free `path.bak`, `path.bak.bak`, ... as upstream names backups.
fn backup(path: &Path) -> anyhow::Result<PathBuf> {
    let mut bak = path.as_os_str().to_owned();
    loop {
        bak.push(".bak");
        if !Path::new(&bak).exists() {
            break;
        }
    }
    let bak = PathBuf::from(bak);
    std::fs::rename(path, &bak)
        .with_context(|| format!("cannot move {} to {}", path.display(), bak.display()))?;
    Ok(bak)
}

/// Writes `value` as `json.dumps(value, indent=2)` would, atomically.
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let bytes = bcb_pyjson::to_pretty(value)?;
    bcb_pyjson::write_atomic(path, &bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}
