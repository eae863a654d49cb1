//! The report model: one or many result files, classified and broken down by failure class,
//! domain, library and task. Renderers (`tables`, `html`) only format what is built here.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::classify::{classify, Failure, FailureClass};
use crate::domains::Domain;
use crate::results::RunResults;
use crate::stats::{self, Estimate};

/// What the report knows about a task besides the verdicts (from the dataset).
#[derive(Debug, Clone, Serialize)]
pub struct TaskInfo {
    pub task_id: String,
    pub libs: Vec<String>,
    pub domains: BTreeSet<Domain>,
    /// The prompt of the split the samples answered.
    pub prompt: String,
}

impl TaskInfo {
    pub fn new(task_id: &str, libs: Vec<String>, prompt: String) -> Self {
        let domains = libs.iter().filter_map(|l| Domain::of_library(l)).collect();
        TaskInfo {
            task_id: task_id.to_string(),
            libs,
            domains,
            prompt,
        }
    }
}

/// The task list of a dataset, with the prompt of `split`.
pub fn task_infos(ds: &bcb_dataset::Dataset, split: bcb_dataset::Split) -> Vec<TaskInfo> {
    ds.tasks()
        .iter()
        .map(|t| TaskInfo::new(&t.task_id, t.lib_names(), t.prompt(split).to_string()))
        .collect()
}

#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The k of pass@k to report (only those every task has enough samples for).
    pub ks: Vec<u64>,
    pub seed: u64,
    /// Tasks whose ground truth fails here, for every run (besides each run's `failed_tasks`).
    pub gt_failed: BTreeSet<String>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            ks: vec![1, 5, 10],
            seed: stats::DEFAULT_SEED,
            gt_failed: BTreeSet::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub models: Vec<ModelSummary>,
    /// Failure classes in display order, with per-model sample counts and an example each.
    pub classes: Vec<ClassRow>,
    pub domains: Vec<BreakdownRow>,
    pub libraries: Vec<BreakdownRow>,
    /// Every task of any run, in dataset order.
    pub tasks: Vec<TaskRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelSummary {
    pub name: String,
    pub path: String,
    pub date: String,
    pub split: Option<String>,
    pub subset: Option<String>,
    pub tasks: usize,
    pub samples: usize,
    /// `(k, estimate)` for each reportable k.
    pub pass_at_k: Vec<(u64, Estimate)>,
    /// pass@1 over the tasks where no sample failed for the environment.
    pub pass_at_1_without_env: Option<Estimate>,
    pub env_failures: usize,
    pub flaky: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClassRow {
    pub class: FailureClass,
    pub key: &'static str,
    pub label: &'static str,
    pub environment: bool,
    /// Samples of this class, per model (report model order).
    pub counts: Vec<usize>,
    /// `(task_id, excerpt)` of the first such sample per model.
    pub examples: Vec<Option<(String, String)>>,
    /// Exception types seen (for `other_exception`), with counts over all models.
    pub exception_types: Vec<(String, usize)>,
}

/// pass@1 of a group of tasks (a domain or a library), per model.
#[derive(Debug, Clone, Serialize)]
pub struct BreakdownRow {
    pub name: String,
    pub tasks: usize,
    pub pass_at_1: Vec<Option<Estimate>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskRow {
    pub task_id: String,
    pub libs: Vec<String>,
    pub domains: Vec<Domain>,
    /// Per model, `None` where that run has no samples for the task.
    pub verdicts: Vec<Option<TaskVerdict>>,
    /// Mean over models of the share of passing samples.
    pub solve_rate: f64,
    /// Some model solved it and some did not.
    pub disagreement: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskVerdict {
    pub n: u64,
    pub passed: u64,
    /// One entry per sample: `None` = pass.
    pub failures: Vec<Option<Failure>>,
    pub flaky: bool,
}

impl TaskVerdict {
    /// The class shown for the task: the first failing sample's, `None` when all passed.
    pub fn class(&self) -> Option<FailureClass> {
        self.failures.iter().flatten().next().map(|f| f.class)
    }

    /// For flips and disagreement: a task counts as solved when most samples pass.
    pub fn solved(&self) -> bool {
        self.passed * 2 > self.n
    }
}

impl Report {
    /// Builds the report. `tasks` is the dataset's task list (order and libraries); tasks of a
    /// run missing from it are still reported, without libraries.
    pub fn build(runs: &[RunResults], tasks: &[TaskInfo], opts: &ReportOptions) -> Report {
        let by_task: Vec<BTreeMap<&str, &[crate::results::Sample]>> =
            runs.iter().map(RunResults::by_task).collect();
        let mut infos: Vec<TaskInfo> = tasks
            .iter()
            .filter(|t| by_task.iter().any(|m| m.contains_key(t.task_id.as_str())))
            .cloned()
            .collect();
        let known: BTreeSet<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
        let mut extra: BTreeSet<&str> = BTreeSet::new();
        for run in runs {
            for (t, _) in &run.tasks {
                if !known.contains(t.as_str()) {
                    extra.insert(t);
                }
            }
        }
        // Tasks outside the dataset (or no dataset given): by task number.
        let mut extra: Vec<&str> = extra.into_iter().collect();
        extra.sort_by_key(|t| (bcb_dataset::task_number(t), t.to_string()));
        infos.extend(
            extra
                .into_iter()
                .map(|t| TaskInfo::new(t, vec![], String::new())),
        );

        let gt_sets: Vec<BTreeSet<&str>> = runs
            .iter()
            .map(|r| {
                r.gt_failed
                    .iter()
                    .map(String::as_str)
                    .chain(opts.gt_failed.iter().map(String::as_str))
                    .collect()
            })
            .collect();

        let rows: Vec<TaskRow> = infos
            .iter()
            .map(|info| {
                let verdicts: Vec<Option<TaskVerdict>> = by_task
                    .iter()
                    .zip(&gt_sets)
                    .map(|(m, gt)| {
                        m.get(info.task_id.as_str()).map(|samples| {
                            let gt_failing = gt.contains(info.task_id.as_str());
                            TaskVerdict {
                                n: samples.len() as u64,
                                passed: samples.iter().filter(|s| s.passed()).count() as u64,
                                failures: samples.iter().map(|s| classify(s, gt_failing)).collect(),
                                flaky: samples.iter().any(|s| s.flaky == Some(true)),
                            }
                        })
                    })
                    .collect();
                let rates: Vec<f64> = verdicts
                    .iter()
                    .flatten()
                    .map(|v| v.passed as f64 / v.n.max(1) as f64)
                    .collect();
                let solved: BTreeSet<bool> =
                    verdicts.iter().flatten().map(|v| v.solved()).collect();
                TaskRow {
                    task_id: info.task_id.clone(),
                    libs: info.libs.clone(),
                    domains: info.domains.iter().copied().collect(),
                    solve_rate: rates.iter().sum::<f64>() / rates.len().max(1) as f64,
                    disagreement: solved.len() == 2,
                    verdicts,
                }
            })
            .collect();

        let models = runs
            .iter()
            .enumerate()
            .map(|(i, run)| model_summary(i, run, &rows, opts))
            .collect();
        let classes = class_rows(runs.len(), &rows);
        let domains = Domain::ALL
            .iter()
            .map(|d| {
                breakdown(d.as_str(), runs.len(), &rows, opts.seed, |r| {
                    r.domains.contains(d)
                })
            })
            .collect();
        let mut lib_names: BTreeSet<&str> = BTreeSet::new();
        for r in &rows {
            lib_names.extend(r.libs.iter().map(String::as_str));
        }
        let libraries = lib_names
            .into_iter()
            .map(|l| {
                breakdown(l, runs.len(), &rows, opts.seed, |r| {
                    r.libs.iter().any(|x| x == l)
                })
            })
            .collect();
        Report {
            models,
            classes,
            domains,
            libraries,
            tasks: rows,
        }
    }

    /// Tasks where the models disagree (solved by some, not by others).
    pub fn disagreements(&self) -> impl Iterator<Item = &TaskRow> {
        self.tasks.iter().filter(|t| t.disagreement)
    }

    /// The reportable k values (those present for every model).
    pub fn ks(&self) -> Vec<u64> {
        let mut ks: BTreeSet<u64> = BTreeSet::new();
        for m in &self.models {
            ks.extend(m.pass_at_k.iter().map(|(k, _)| *k));
        }
        ks.into_iter().collect()
    }
}

fn model_summary(
    i: usize,
    run: &RunResults,
    rows: &[TaskRow],
    opts: &ReportOptions,
) -> ModelSummary {
    let verdicts: Vec<&TaskVerdict> = rows.iter().filter_map(|r| r.verdicts[i].as_ref()).collect();
    let counts: Vec<(u64, u64)> = verdicts.iter().map(|v| (v.n, v.passed)).collect();
    let pass_at_k = opts
        .ks
        .iter()
        .filter_map(|&k| stats::pass_at_k(&counts, k, opts.seed).map(|e| (k, e)))
        .collect();
    let env_free: Vec<(u64, u64)> = verdicts
        .iter()
        .filter(|v| {
            !v.failures
                .iter()
                .flatten()
                .any(|f| f.class.is_environment())
        })
        .map(|v| (v.n, v.passed))
        .collect();
    ModelSummary {
        name: run.model.clone(),
        path: run.path.display().to_string(),
        date: run.date.clone(),
        split: run.split.clone(),
        subset: run.subset.clone(),
        tasks: verdicts.len(),
        samples: verdicts.iter().map(|v| v.n as usize).sum(),
        pass_at_k,
        pass_at_1_without_env: stats::pass_at_k(&env_free, 1, opts.seed),
        env_failures: verdicts
            .iter()
            .flat_map(|v| v.failures.iter().flatten())
            .filter(|f| f.class.is_environment())
            .count(),
        flaky: verdicts.iter().filter(|v| v.flaky).count(),
    }
}

fn class_rows(n_models: usize, rows: &[TaskRow]) -> Vec<ClassRow> {
    FailureClass::ALL
        .iter()
        .map(|&class| {
            let mut counts = vec![0; n_models];
            let mut examples = vec![None; n_models];
            let mut types: BTreeMap<String, usize> = BTreeMap::new();
            for r in rows {
                for (m, v) in r.verdicts.iter().enumerate() {
                    let Some(v) = v else { continue };
                    for f in v.failures.iter().flatten().filter(|f| f.class == class) {
                        counts[m] += 1;
                        if examples[m].is_none() {
                            examples[m] = Some((r.task_id.clone(), f.excerpt.clone()));
                        }
                        if class == FailureClass::OtherException {
                            let t = f.exception.clone().unwrap_or_else(|| "(unknown)".into());
                            *types.entry(t).or_default() += 1;
                        }
                    }
                }
            }
            let mut exception_types: Vec<(String, usize)> = types.into_iter().collect();
            exception_types.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            ClassRow {
                class,
                key: class.key(),
                label: class.label(),
                environment: class.is_environment(),
                counts,
                examples,
                exception_types,
            }
        })
        .collect()
}

fn breakdown(
    name: &str,
    n_models: usize,
    rows: &[TaskRow],
    seed: u64,
    member: impl Fn(&TaskRow) -> bool,
) -> BreakdownRow {
    let members: Vec<&TaskRow> = rows.iter().filter(|r| member(r)).collect();
    let pass_at_1 = (0..n_models)
        .map(|m| {
            let counts: Vec<(u64, u64)> = members
                .iter()
                .filter_map(|r| r.verdicts[m].as_ref().map(|v| (v.n, v.passed)))
                .collect();
            stats::pass_at_k(&counts, 1, seed)
        })
        .collect();
    BreakdownRow {
        name: name.to_string(),
        tasks: members.len(),
        pass_at_1,
    }
}
