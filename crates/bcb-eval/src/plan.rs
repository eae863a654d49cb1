//! The plan: every program a run executes, built in one place — canonical solutions for the
//! ground truth, samples with calibration applied — with time limits and the expected times
//! that order them (longest first), and a deterministic split into shards.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use bcb_dataset::{task_number, Dataset, Split, Task, FULL_TASK_COUNT};
use bcb_execute::{Job, JobId, Limits, Program};
use bcb_samples::{read_samples, SampleBody};
use sha2::Digest;

use crate::ground_truth::{canonical_program, GroundTruth};
use crate::limits::{ground_truth_time_limit, sample_time_limit};
use crate::priors;

/// Everything besides the programs that can change a verdict or the result files.
#[derive(Debug, Clone)]
pub struct Settings {
    pub split: Split,
    /// Execute `code_prompt + "\n    pass\n" + solution` (upstream default).
    pub calibrated: bool,
    pub min_time_limit: f64,
    pub base_timeout: f64,
    pub limits: Limits,
    /// Identifies the Python environment the verdicts come from (the lock digest of a managed
    /// env, else the interpreter path).
    pub runtime: String,
}

impl Settings {
    /// A stable text of what can change a verdict; part of every cache and journal key.
    pub fn verdict_key(&self) -> String {
        format!(
            "min_time={} base={} {} runtime={}",
            self.min_time_limit,
            self.base_timeout,
            self.limits.key(),
            self.runtime
        )
    }
}

/// One sample of the samples file, as it will be executed.
#[derive(Debug, Clone)]
pub struct SampleProgram {
    pub id: JobId,
    /// Index among its task's samples (file order): upstream's completion id.
    pub completion_id: usize,
    /// The executed code (what the result file's `solution` holds).
    pub solution: String,
}

/// A samples file read, checked against the dataset, and turned into programs.
#[derive(Debug, Clone)]
pub struct Samples {
    pub path: PathBuf,
    pub programs: Vec<SampleProgram>,
}

impl Samples {
    /// Reads `path` and builds each executed program; errors name the file and line.
    pub fn read(dataset: &Dataset, path: &Path, calibrated: bool) -> anyhow::Result<Self> {
        let rows = read_samples(path)?;
        let mut per_task: HashMap<&str, usize> = HashMap::new();
        let mut programs = Vec::with_capacity(rows.len());
        for sample in &rows {
            let known =
                task_number(&sample.task_id).is_some_and(|n| (n as usize) < FULL_TASK_COUNT);
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
            programs.push(SampleProgram {
                id: JobId::new(&task.task_id, Program::Sample(*n), &solution),
                completion_id: *n,
                solution,
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
                "{}: no samples for {} of the {} tasks selected ({} {}: {}{})\nhint: evaluate only the tasks the file has with --ids, or check --subset",
                path.display(),
                missing.len(),
                dataset.len(),
                dataset.subset,
                dataset.version,
                shown.join(", "),
                if missing.len() > shown.len() { ", ..." } else { "" }
            );
        }
        Ok(Samples {
            path: path.to_path_buf(),
            programs,
        })
    }

    pub fn len(&self) -> usize {
        self.programs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.programs.is_empty()
    }

    /// Identifies the programs: part of the samples journal's key.
    pub fn digest(&self) -> String {
        let mut h = sha2::Sha256::new();
        for p in &self.programs {
            h.update(p.id.task_id.as_bytes());
            h.update(p.id.digest.as_bytes());
        }
        hex::encode(&h.finalize()[..16])
    }
}

/// The key of a samples journal: the programs and every setting that changes a verdict.
pub fn samples_journal_key(samples: &Samples, settings: &Settings) -> String {
    let mut h = sha2::Sha256::new();
    h.update(samples.digest().as_bytes());
    h.update(
        format!(
            "calibrated={} {}",
            settings.calibrated,
            settings.verdict_key()
        )
        .as_bytes(),
    );
    hex::encode(&h.finalize()[..16])
}

/// Jobs for the canonical solutions of `tasks`; `previous` (an earlier run's timings) or the
/// shipped priors order them.
pub fn ground_truth_jobs<'a>(
    tasks: impl IntoIterator<Item = &'a Task>,
    settings: &Settings,
    previous: &GroundTruth,
) -> Vec<Job> {
    let limit = ground_truth_time_limit(settings.min_time_limit, settings.base_timeout);
    let mut jobs: Vec<Job> = tasks
        .into_iter()
        .map(|task| {
            let code = canonical_program(task);
            Job {
                id: JobId::new(&task.task_id, Program::GroundTruth, &code),
                code,
                test: task.test.clone(),
                entry_point: task.entry_point.clone(),
                time_limit: Duration::from_secs_f64(limit),
                expected_secs: previous
                    .expected_secs(&task.task_id)
                    .or_else(|| priors::expected_secs(&task.task_id)),
            }
        })
        .collect();
    longest_first(&mut jobs);
    jobs
}

/// Jobs for `programs`, each with upstream's limit from its task's ground-truth time.
pub fn sample_jobs<'a>(
    dataset: &Dataset,
    programs: impl IntoIterator<Item = &'a SampleProgram>,
    settings: &Settings,
    gt: &GroundTruth,
) -> Vec<Job> {
    let mut jobs: Vec<Job> = programs
        .into_iter()
        .map(|p| {
            let task = dataset
                .get(&p.id.task_id)
                .expect("samples are checked against the dataset");
            let gt_secs = gt.expected_secs(&task.task_id);
            Job {
                id: p.id.clone(),
                code: p.solution.clone(),
                test: task.test.clone(),
                entry_point: task.entry_point.clone(),
                time_limit: Duration::from_secs_f64(sample_time_limit(
                    gt_secs,
                    settings.min_time_limit,
                    settings.base_timeout,
                )),
                expected_secs: gt_secs.or_else(|| priors::expected_secs(&task.task_id)),
            }
        })
        .collect();
    longest_first(&mut jobs);
    jobs
}

/// Orders jobs by expected test time, longest first (unknown last), ties by id, so the
/// slowest tasks do not start at the end and stretch the wall time.
pub fn longest_first(jobs: &mut [Job]) {
    jobs.sort_by(|a, b| {
        b.expected_secs
            .unwrap_or(0.0)
            .total_cmp(&a.expected_secs.unwrap_or(0.0))
            .then_with(|| a.id.cmp(&b.id))
    });
}

/// Shard `index` of `count` (0-based), written `I/N` with I counted from 1 on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}`: expected I/N, e.g. 1/4"))?;
        let (i, n): (usize, usize) = (
            i.trim()
                .parse()
                .map_err(|_| format!("`{s}`: I is not a number"))?,
            n.trim()
                .parse()
                .map_err(|_| format!("`{s}`: N is not a number"))?,
        );
        if n == 0 || i == 0 || i > n {
            return Err(format!("`{s}`: need 1 <= I <= N"));
        }
        Ok(Shard {
            index: i - 1,
            count: n,
        })
    }
}

/// The jobs of `shard`: a deterministic split balanced by expected time (longest first, each
/// to the least loaded shard, ties to the lower index). Every shard computes the same split
/// from the same plan, so together they run each job exactly once.
pub fn partition(jobs: Vec<Job>, shard: Shard) -> Vec<Job> {
    let mut sorted = jobs;
    longest_first(&mut sorted);
    let mut load = vec![0.0f64; shard.count];
    sorted
        .into_iter()
        .filter(|job| {
            // Unknown jobs weigh like the fallback ground-truth time would make them cost.
            let weight = job.expected_secs.unwrap_or(1.0).max(0.01);
            let target = (0..shard.count)
                .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))
                .expect("count > 0");
            load[target] += weight;
            target == shard.index
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(task: usize, secs: f64) -> Job {
        let code = format!("x = {task}");
        Job {
            id: JobId::new(&format!("BigCodeBench/{task}"), Program::Sample(0), &code),
            code,
            test: String::new(),
            entry_point: "task_func".into(),
            time_limit: Duration::from_secs(1),
            expected_secs: Some(secs),
        }
    }

    #[test]
    fn shards_cover_every_job_once_and_balance() {
        let jobs: Vec<Job> = (0..200).map(|i| job(i, 0.1 + (i % 17) as f64)).collect();
        let total: f64 = jobs.iter().filter_map(|j| j.expected_secs).sum();
        for n in 1..=4 {
            let mut seen = Vec::new();
            let mut largest = 0.0f64;
            for i in 0..n {
                let part = partition(jobs.clone(), Shard { index: i, count: n });
                largest = largest.max(part.iter().filter_map(|j| j.expected_secs).sum());
                seen.extend(part.into_iter().map(|j| j.id));
            }
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), jobs.len(), "n={n}");
            assert!(
                largest <= total / n as f64 * 1.15,
                "n={n}: {largest} vs {total}"
            );
        }
    }

    #[test]
    fn shard_spelling() {
        assert_eq!(
            "2/4".parse::<Shard>().unwrap(),
            Shard { index: 1, count: 4 }
        );
        assert!("0/4".parse::<Shard>().is_err());
        assert!("5/4".parse::<Shard>().is_err());
    }
}
