//! Report assembly: results in upstream's order and the report of a complete set of results
//! (pass@k, ground-truth fields), shared by a run and by `bcb merge`.

use std::collections::HashMap;

use bcb_dataset::{Dataset, Split};
use bcb_execute::{JobId, Outcome};
use bcb_samples::{eval_results_path, pass_at_k_path};

use crate::event::RunReport;
use crate::ground_truth::GroundTruth;
use crate::passk::mean_pass_at_k;
use crate::plan::{SampleProgram, Samples};
use crate::results::{model_name, EvalResults, PassAtK, SampleResult};

/// Options of the samples phase.
#[derive(Debug, Clone)]
pub struct SampleRun {
    pub pass_k: Vec<u64>,
    /// `--no-gt`: gt_pass_rate 0.0 and every task listed as failed, as upstream reports it.
    pub no_gt: bool,
    /// Evaluate again even if the results file exists.
    pub force: bool,
}

/// Results in upstream's order: tasks as in the dataset, samples by completion id. Samples
/// without an outcome (another shard's) are left out.
pub fn assemble(
    dataset: &Dataset,
    samples: &Samples,
    done: &HashMap<JobId, Outcome>,
) -> EvalResults {
    let mut by_task: HashMap<&str, Vec<&SampleProgram>> = HashMap::new();
    for p in &samples.programs {
        by_task.entry(p.id.task_id.as_str()).or_default().push(p);
    }
    let mut results = EvalResults::now();
    for task in dataset.tasks() {
        let Some(list) = by_task.get_mut(task.task_id.as_str()) else {
            continue;
        };
        list.sort_by_key(|p| p.completion_id);
        let entries: Vec<SampleResult> = list
            .iter()
            .filter_map(|p| {
                let o = done.get(&p.id)?;
                Some(SampleResult {
                    task_id: task.task_id.clone(),
                    solution: p.solution.to_string(),
                    status: o.status,
                    details: o.details.clone(),
                    flaky: false,
                })
            })
            .collect();
        if !entries.is_empty() {
            results.eval.insert(task.task_id.clone(), entries);
        }
    }
    results
}

/// The report of a complete set of results: pass@k over the dataset's tasks and upstream's
/// ground-truth fields. Shared by a run and by `bcb merge`.
pub fn build_report(
    dataset: &Dataset,
    split: Split,
    calibrated: bool,
    samples: &Samples,
    gt: &GroundTruth,
    results: EvalResults,
    opts: &SampleRun,
) -> RunReport {
    let ids: Vec<&str> = dataset.tasks().iter().map(|t| t.task_id.as_str()).collect();
    let counts = results.counts(ids.iter().copied());
    let values = opts
        .pass_k
        .iter()
        .filter_map(|&k| mean_pass_at_k(&counts, k).map(|v| (k, v)))
        .collect();
    let (gt_pass_rate, failed_tasks) = if opts.no_gt {
        (0.0, ids.iter().map(|s| s.to_string()).collect())
    } else {
        (
            gt.pass_rate(ids.iter().copied()),
            gt.failed(ids.iter().copied()),
        )
    };
    let results_path = eval_results_path(&samples.path);
    RunReport {
        pass_at_k_path: pass_at_k_path(&results_path),
        pass_at_k: PassAtK {
            values,
            model: model_name(&samples.path),
            split,
            subset: dataset.subset,
            calibrated,
            gt_pass_rate,
            failed_tasks,
        },
        samples_path: samples.path.clone(),
        results_path,
        results,
        executed: 0,
        resumed: 0,
        deduplicated: 0,
        cached: 0,
        loaded_existing: false,
        shard: None,
        flaky_ground_truth: Vec::new(),
    }
}
