//! `--gt-summary PATH`: the ground truth of the selected tasks as a JSON file, for programs
//! that would otherwise parse the console (the evaluator Space): `gt_pass_rate`, `tasks`,
//! `failed_tasks` (upstream's names and order) and a one-line reason per failed task
//! (`failures: [{task_id, reason}]`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use bcb_eval::failure_summary;
use bcb_eval::{Event, Sink};
use serde::Serialize;

#[derive(Serialize)]
struct GtSummary<'a> {
    gt_pass_rate: f64,
    tasks: usize,
    failed_tasks: &'a [String],
    /// Why each failed (`not run` when it was skipped), in `failed_tasks` order.
    failures: Vec<Failure<'a>>,
}

#[derive(Serialize)]
struct Failure<'a> {
    task_id: &'a str,
    reason: String,
}

pub struct GtSummaryFile {
    path: PathBuf,
}

impl GtSummaryFile {
    pub fn new(path: &Path) -> Self {
        GtSummaryFile {
            path: path.to_path_buf(),
        }
    }
}

impl Sink for GtSummaryFile {
    fn handle(&mut self, event: &Event) -> anyhow::Result<()> {
        let Event::GroundTruthReady { gt, task_ids } = event else {
            return Ok(());
        };
        let ids = task_ids.iter().map(String::as_str);
        let failed = gt.failed(ids.clone());
        let failures = failed
            .iter()
            .map(|id| {
                let why = gt.outcome(id).map(failure_summary);
                Failure {
                    task_id: id,
                    reason: why.unwrap_or_else(|| "not run".into()),
                }
            })
            .collect();
        let summary = GtSummary {
            gt_pass_rate: gt.pass_rate(ids),
            tasks: task_ids.len(),
            failed_tasks: &failed,
            failures,
        };
        let bytes = bcb_pyjson::to_pretty(&summary)?;
        bcb_pyjson::write_atomic(&self.path, &bytes).with_context(|| {
            format!(
                "cannot write the ground-truth summary {}",
                self.path.display()
            )
        })
    }
}
