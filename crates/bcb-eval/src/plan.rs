//! The plan: every program a run executes, built in one place — canonical solutions for the
//! ground truth, samples with calibration applied — with time limits and the expected times
//! that order them (longest first), and a deterministic split into shards.

use bcb_envvars::EnvVars;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use bcb_dataset::{task_number, Dataset, Task, FULL_TASK_COUNT};
use bcb_execute::{Job, JobId, Program};
use bcb_samples::{read_samples, Sample, SampleBody};
use bcb_sanitize::tamper::TamperPolicy;
use sha2::Digest;

use crate::ground_truth::{canonical_program, GroundTruth};
use crate::journal::ShardTag;
use crate::limits::{ground_truth_time_limit, sample_time_limit};
use crate::priors;
pub use crate::settings::Settings;

/// The key of a samples journal: the programs and every setting that changes a verdict.
pub fn samples_journal_key(samples: &Samples, settings: &Settings) -> String {
    let mut h = sha2::Sha256::new();
    h.update(samples.digest().as_bytes());
    h.update(settings.verdict_key().as_bytes());
    hex::encode(&h.finalize()[..16])
}

/// The code a sample executes: its solution (a completion joined to the task's prompt, as
/// upstream does), calibrated (`code_prompt + "\n    pass\n" + solution`) if asked.
pub fn program_code(task: &Task, body: &SampleBody, calibrated: bool) -> String {
    let solution = match body {
        SampleBody::Solution(s) => s.clone(),
        SampleBody::Completion(c) => format!("{}{}", task.complete_prompt, c),
    };
    if calibrated {
        format!("{}\n    pass\n{}", task.code_prompt, solution)
    } else {
        solution
    }
}

/// One sample of the samples file, as it will be executed.
#[derive(Debug, Clone)]
pub struct SampleProgram {
    pub id: JobId,
    /// Index among its task's samples (file order): upstream's completion id.
    pub completion_id: usize,
    /// The executed code (what the result file's `solution` holds); its job shares it.
    pub solution: Arc<str>,
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
        Self::from_rows(dataset, path, &rows, calibrated)
    }

    /// Samples already read (`path` names them: messages, `model` of the result files), with
    /// the same checks as a file: unknown ids are an error, rows of tasks outside `dataset`
    /// are skipped, a task of `dataset` without a row is an error.
    pub fn from_rows(
        dataset: &Dataset,
        path: &Path,
        rows: &[Sample],
        calibrated: bool,
    ) -> anyhow::Result<Self> {
        let mut per_task: HashMap<&str, usize> = HashMap::new();
        let mut programs = Vec::with_capacity(rows.len());
        for sample in rows {
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
            let solution = program_code(task, &sample.body, calibrated);
            let n = per_task.entry(task.task_id.as_str()).or_default();
            programs.push(SampleProgram {
                id: JobId::new(&task.task_id, Program::Sample(*n), &solution),
                completion_id: *n,
                solution: solution.into(),
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
                code: code.into(),
                test: task.test.as_str().into(),
                entry_point: task.entry_point.clone(),
                time_limit: Duration::from_secs_f64(limit),
                kind: bcb_execute::JobKind::Unittest,
                expected_secs: previous.secs_or_prior(&task.task_id),
                expected_cpu_secs: previous.cpu_secs_or_prior(&task.task_id),
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
    // One copy of each task's test code, shared by all of its jobs.
    let mut tests: HashMap<&str, Arc<str>> = HashMap::new();
    let mut jobs: Vec<Job> = programs
        .into_iter()
        .map(|p| {
            let task = dataset
                .get(&p.id.task_id)
                .expect("samples are checked against the dataset");
            let gt_secs = gt.expected_secs(&task.task_id);
            let test = tests
                .entry(task.task_id.as_str())
                .or_insert_with(|| task.test.as_str().into())
                .clone();
            let limit = sample_time_limit(gt_secs, settings.min_time_limit, settings.base_timeout);
            let base = gt.secs_or_prior(&task.task_id);
            Job {
                id: p.id.clone(),
                code: p.solution.clone(),
                test,
                entry_point: task.entry_point.clone(),
                time_limit: Duration::from_secs_f64(limit),
                // Likely sleepers count as most of their limit: they start first.
                kind: bcb_execute::JobKind::Unittest,
                expected_secs: crate::sleepers::expected_secs(&p.solution, base, limit),
                expected_cpu_secs: gt.cpu_secs_or_prior(&task.task_id),
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

impl Shard {
    /// As written in journals: 1-based.
    pub fn tag(self) -> ShardTag {
        ShardTag {
            index: self.index + 1,
            count: self.count,
        }
    }

    /// `--shard auto`: the scheduler's array index, from the process environment (see
    /// [`Shard::from_vars`]).
    pub fn from_scheduler(count: Option<usize>) -> Result<Shard, String> {
        Shard::from_vars(count, |name| std::env::var(name).ok())
    }

    /// `--shard auto` from the variables `var` looks up. Slurm: `SLURM_ARRAY_TASK_ID`,
    /// relative to `SLURM_ARRAY_TASK_MIN` and divided by `SLURM_ARRAY_TASK_STEP` (so
    /// `--array=1-4` and `--array=0-6:2` work), of `SLURM_ARRAY_TASK_COUNT` (or `count`, which
    /// must then agree); Kubernetes Indexed Jobs: `JOB_COMPLETION_INDEX` (0-based) of `count`
    /// (`--shard-count`, the Job's completions). A variable that is set but not a number is an
    /// error naming it, never taken as unset.
    pub fn from_vars(
        count: Option<usize>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Shard, String> {
        let number = |name: &str| -> Result<Option<usize>, String> {
            match var(name) {
                None => Ok(None),
                Some(v) if v.trim().is_empty() => Ok(None),
                Some(v) => v
                    .trim()
                    .parse::<usize>()
                    .map(Some)
                    .map_err(|_| format!("{name}=`{v}` is not a non-negative number")),
            }
        };
        if let Some(id) = number(EnvVars::SLURM_ARRAY_TASK_ID)? {
            let min = number(EnvVars::SLURM_ARRAY_TASK_MIN)?.unwrap_or(0);
            let step = number(EnvVars::SLURM_ARRAY_TASK_STEP)?.unwrap_or(1).max(1);
            let slurm_count = number(EnvVars::SLURM_ARRAY_TASK_COUNT)?;
            let n = match (count, slurm_count) {
                (Some(n), Some(s)) if n != s => {
                    return Err(format!(
                        "--shard-count {n} but SLURM_ARRAY_TASK_COUNT={s}\nhint: drop --shard-count under Slurm (the array's size decides)"
                    ))
                }
                (Some(n), _) | (None, Some(n)) => n,
                (None, None) => {
                    return Err("SLURM_ARRAY_TASK_ID is set but not SLURM_ARRAY_TASK_COUNT\nhint: pass --shard-count N".into())
                }
            };
            let offset = id.checked_sub(min).ok_or_else(|| {
                format!("SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}")
            })?;
            if offset % step != 0 {
                return Err(format!("SLURM_ARRAY_TASK_ID={id} is not on the array's step {step} from {min}\nhint: submit a regular array, e.g. --array=0-{}", n.saturating_sub(1)));
            }
            return Shard::checked(offset / step, n).map_err(|e| {
                format!("{e} (SLURM_ARRAY_TASK_ID={id}, MIN={min}, STEP={step})\nhint: submit a contiguous array, e.g. --array=0-{}", n.saturating_sub(1))
            });
        }
        if let Some(index) = number(EnvVars::JOB_COMPLETION_INDEX)? {
            let n = count.ok_or(
                "JOB_COMPLETION_INDEX is set but --shard-count is not\nhint: pass --shard-count N, N = the Job's completions",
            )?;
            return Shard::checked(index, n).map_err(|e| {
                format!("{e} (JOB_COMPLETION_INDEX={index})\nhint: --shard-count must equal the Job's completions")
            });
        }
        Err("--shard auto needs SLURM_ARRAY_TASK_ID (a Slurm array job) or JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)\nhint: outside a scheduler pass --shard I/N".into())
    }

    fn checked(index: usize, count: usize) -> Result<Shard, String> {
        if count == 0 || index >= count {
            return Err(format!(
                "shard index {index} is not below the shard count {count}"
            ));
        }
        Ok(Shard { index, count })
    }
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

/// The tasks of `shard`: a deterministic split of the dataset, balanced by expected cost
/// (the shipped ground-truth timings, times one plus the task's sample count) — longest first,
/// each to the least loaded shard, ties to the lower index. It depends only on the dataset and
/// the samples, never on a machine's cache, so every shard computes the same split; a task's
/// ground truth and all its samples land in the same shard, so its time limits are exact.
pub fn shard_tasks(dataset: &Dataset, samples: Option<&Samples>, shard: Shard) -> HashSet<String> {
    let weighted = task_weights(dataset, samples);
    let mut load = vec![0.0f64; shard.count];
    let mut mine = HashSet::new();
    for (weight, task) in weighted {
        let target = (0..shard.count)
            .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))
            .expect("count > 0");
        load[target] += weight;
        if target == shard.index {
            mine.insert(task.to_string());
        }
    }
    mine
}

/// Each task's weight in the split, heaviest first (ties by id): its shipped ground-truth
/// time times one plus its sample count.
pub fn task_weights<'a>(dataset: &'a Dataset, samples: Option<&Samples>) -> Vec<(f64, &'a str)> {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for p in samples.map(|s| s.programs.as_slice()).unwrap_or_default() {
        *count.entry(p.id.task_id.as_str()).or_default() += 1;
    }
    let mut weighted: Vec<(f64, &str)> = dataset
        .tasks()
        .iter()
        .map(|t| {
            let prior = priors::expected_secs(&t.task_id).unwrap_or(1.0).max(0.01);
            let n = count.get(t.task_id.as_str()).copied().unwrap_or(0);
            (prior * (1 + n) as f64, t.task_id.as_str())
        })
        .collect();
    weighted.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    weighted
}

/// The expected cost of each shard (same weights as [`shard_tasks`]), for balance checks.
pub fn shard_loads(dataset: &Dataset, samples: Option<&Samples>, count: usize) -> Vec<f64> {
    let weights: HashMap<&str, f64> = task_weights(dataset, samples)
        .into_iter()
        .map(|(w, id)| (id, w))
        .collect();
    (0..count)
        .map(|index| {
            shard_tasks(dataset, samples, Shard { index, count })
                .iter()
                .map(|id| weights[id.as_str()])
                .sum()
        })
        .collect()
}

/// The tamper scan's verdict on a sample's program: `Some(text)` when `policy` refuses it
/// (the `details["ALL"]` it gets), `None` when it runs. `warn` logs the findings and runs it.
pub fn tamper_refusal(dataset: &Dataset, job: &Job, policy: TamperPolicy) -> Option<String> {
    if policy == TamperPolicy::Off {
        return None;
    }
    let libs = dataset
        .get(job.task_id())
        .map(Task::lib_names)
        .unwrap_or_default();
    let findings = bcb_sanitize::tamper::scan_for_task(&job.code, &libs);
    if findings.is_empty() {
        return None;
    }
    let text =
        bcb_execute::Marker::TamperRefused.text(&bcb_sanitize::tamper::findings_list(&findings));
    match policy {
        TamperPolicy::Refuse => Some(text),
        _ => {
            tracing::warn!("{}: {text} (run anyway: --tamper-policy warn)", job.id);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_spelling() {
        assert_eq!(
            "2/4".parse::<Shard>().unwrap(),
            Shard { index: 1, count: 4 }
        );
        assert!("0/4".parse::<Shard>().is_err());
        assert!("5/4".parse::<Shard>().is_err());
    }

    fn auto(count: Option<usize>, vars: &[(&str, &str)]) -> Result<Shard, String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Shard::from_vars(count, |name| vars.get(name).cloned())
    }

    #[test]
    fn shard_auto_from_slurm_arrays() {
        let s = |index, count| Ok(Shard { index, count });
        let slurm = |id: &str, min: &str, n: &str| {
            auto(
                None,
                &[
                    (EnvVars::SLURM_ARRAY_TASK_ID, id),
                    (EnvVars::SLURM_ARRAY_TASK_MIN, min),
                    (EnvVars::SLURM_ARRAY_TASK_COUNT, n),
                ],
            )
        };
        assert_eq!(slurm("0", "0", "4"), s(0, 4));
        assert_eq!(slurm("3", "0", "4"), s(3, 4));
        // --array=1-4: ids relative to the minimum.
        assert_eq!(slurm("1", "1", "4"), s(0, 4));
        assert_eq!(slurm("4", "1", "4"), s(3, 4));
        // --array=10-16:2 (4 tasks, step 2).
        let stepped = auto(
            None,
            &[
                (EnvVars::SLURM_ARRAY_TASK_ID, "14"),
                (EnvVars::SLURM_ARRAY_TASK_MIN, "10"),
                (EnvVars::SLURM_ARRAY_TASK_STEP, "2"),
                (EnvVars::SLURM_ARRAY_TASK_COUNT, "4"),
            ],
        );
        assert_eq!(stepped, s(2, 4));
        // A matching --shard-count is fine; a contradicting one is refused.
        let with_count = |n| {
            auto(
                Some(n),
                &[
                    (EnvVars::SLURM_ARRAY_TASK_ID, "2"),
                    (EnvVars::SLURM_ARRAY_TASK_COUNT, "4"),
                ],
            )
        };
        assert_eq!(with_count(4), s(2, 4));
        let err = with_count(3).unwrap_err();
        assert!(err.contains("SLURM_ARRAY_TASK_COUNT=4"), "{err}");
        // --shard-count stands in for a missing SLURM_ARRAY_TASK_COUNT.
        assert_eq!(
            auto(Some(2), &[(EnvVars::SLURM_ARRAY_TASK_ID, "1")]),
            s(1, 2)
        );
    }

    #[test]
    fn shard_auto_from_kubernetes_indexed_jobs() {
        let k8s = |count, index: &str| auto(count, &[(EnvVars::JOB_COMPLETION_INDEX, index)]);
        assert_eq!(k8s(Some(3), "0"), Ok(Shard { index: 0, count: 3 }));
        assert_eq!(k8s(Some(3), "2"), Ok(Shard { index: 2, count: 3 }));
        let err = k8s(None, "0").unwrap_err();
        assert!(err.contains("--shard-count"), "{err}");
        let err = k8s(Some(3), "3").unwrap_err();
        assert!(err.contains("JOB_COMPLETION_INDEX=3"), "{err}");
    }

    #[test]
    fn shard_auto_refuses_missing_and_invalid_values() {
        let err = auto(Some(4), &[]).unwrap_err();
        assert!(
            err.contains(EnvVars::SLURM_ARRAY_TASK_ID)
                && err.contains(EnvVars::JOB_COMPLETION_INDEX)
        );
        const ID: &str = EnvVars::SLURM_ARRAY_TASK_ID;
        const COUNT: &str = EnvVars::SLURM_ARRAY_TASK_COUNT;
        // Each environment, and what its refusal must name. The last: a sparse array
        // (--array=0,5) leaves an id past the count.
        type Env<'a> = &'a [(&'a str, &'a str)];
        let refused: [(Env, &[&str]); 5] = [
            (&[(ID, "2")], &[COUNT]),
            (&[(ID, "x"), (COUNT, "4")], &["SLURM_ARRAY_TASK_ID=`x`"]),
            (
                &[(ID, "1"), (COUNT, "-4")],
                &["SLURM_ARRAY_TASK_COUNT=`-4`"],
            ),
            (
                &[
                    (ID, "0"),
                    (EnvVars::SLURM_ARRAY_TASK_MIN, "1"),
                    (COUNT, "4"),
                ],
                &["below SLURM_ARRAY_TASK_MIN=1"],
            ),
            (
                &[(ID, "5"), (COUNT, "2")],
                &["not below the shard count 2", "contiguous"],
            ),
        ];
        for (env, names) in refused {
            let err = auto(None, env).unwrap_err();
            assert!(names.iter().all(|n| err.contains(n)), "{env:?}: {err}");
        }
        let err = auto(Some(2), &[(EnvVars::JOB_COMPLETION_INDEX, "one")]).unwrap_err();
        assert!(err.contains("JOB_COMPLETION_INDEX=`one`"), "{err}");
        // Slurm wins when both are set (a Slurm job inside a pod is still a Slurm job).
        let both = auto(
            None,
            &[
                (EnvVars::SLURM_ARRAY_TASK_ID, "1"),
                (EnvVars::SLURM_ARRAY_TASK_COUNT, "2"),
                (EnvVars::JOB_COMPLETION_INDEX, "0"),
            ],
        );
        assert_eq!(both, Ok(Shard { index: 1, count: 2 }));
    }
}
