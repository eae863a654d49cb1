//! The closing summary on stdout, in the original's words (`Groundtruth pass rate`,
//! `pass@1:`...), plus where the files are and which verdicts were flaky. (What each phase
//! cost is a progress line: `--quiet` silences it.)

use std::io::Write;

use bcb_dataset::{Split, Subset};
use bcb_eval::failure_summary;
use bcb_eval::{Event, Sink};

pub struct ConsoleSummary {
    out: Box<dyn Write + Send>,
    /// `BigCodeBench-Complete (Full)`, printed before the scores.
    title: String,
    /// `--check-gt-only`: the ground-truth summary is the whole output.
    gt_only: bool,
    /// `--no-gt`: say so instead of a pass rate.
    no_gt: bool,
    /// `--save_pass_rate False`: do not name a pass@k file.
    save_pass_rate: bool,
    gt_lines: Vec<String>,
}

impl ConsoleSummary {
    /// `split` and `subset` name the run in the title (`BigCodeBench-Complete (Full)`).
    pub fn new(
        out: Box<dyn Write + Send>,
        split: Split,
        subset: Subset,
        gt_only: bool,
        no_gt: bool,
        save_pass_rate: bool,
    ) -> Self {
        ConsoleSummary {
            out,
            title: format!(
                "BigCodeBench-{} ({})",
                capitalize(split.as_str()),
                capitalize(subset.as_str())
            ),
            gt_only,
            no_gt,
            save_pass_rate,
            gt_lines: Vec::new(),
        }
    }
}

impl Sink for ConsoleSummary {
    fn handle(&mut self, event: &Event) -> anyhow::Result<()> {
        match event {
            Event::GroundTruthReady { gt, task_ids } => {
                let ids = task_ids.iter().map(String::as_str);
                let rate = gt.pass_rate(ids.clone());
                let mut lines = vec![format!("Groundtruth pass rate: {rate:.3}")];
                if rate <= 0.99 {
                    lines.push("Please be cautious!".into());
                }
                let failed = gt.failed(ids);
                if !failed.is_empty() && !gt.is_empty() {
                    lines.push(format!("Failed tasks ({}):", failed.len()));
                    for id in &failed {
                        let why = gt
                            .outcome(id)
                            .map(failure_summary)
                            .unwrap_or_else(|| "not run".into());
                        lines.push(format!("  {id}: {why}"));
                    }
                }
                if self.gt_only {
                    for l in &lines {
                        writeln!(self.out, "{l}")?;
                    }
                }
                self.gt_lines = lines;
            }
            Event::Finished(report) if report.shard.is_some() => {
                let tag = report.shard.expect("guarded");
                writeln!(
                    self.out,
                    "shard {}/{} done: {} run now, {} resumed{}",
                    tag.index,
                    tag.count,
                    report.executed,
                    report.resumed,
                    saved(report)
                )?;
                writeln!(
                    self.out,
                    "merge all shards with: bcb merge --samples {}",
                    report.samples_path.display()
                )?;
            }
            Event::Finished(report) => {
                writeln!(self.out, "{}", self.title)?;
                if self.no_gt {
                    writeln!(self.out, "Groundtruth is not checked")?;
                } else {
                    for l in &self.gt_lines {
                        writeln!(self.out, "{l}")?;
                    }
                }
                for (k, v) in &report.pass_at_k.values {
                    writeln!(self.out, "pass@{k}:\t{v:.3}")?;
                }
                let flaky = report.results.eval.values().flatten().filter(|r| r.flaky);
                let flaky = flaky.count();
                if flaky > 0 {
                    writeln!(
                        self.out,
                        "flaky: {flaky} sample(s) changed verdict on a rerun (marked \"flaky\"; the first verdict counts)"
                    )?;
                }
                if !report.flaky_ground_truth.is_empty() {
                    writeln!(
                        self.out,
                        "flaky ground truth: {} (failed, then passed on a rerun)",
                        report.flaky_ground_truth.join(", ")
                    )?;
                }
                if !report.loaded_existing {
                    writeln!(
                        self.out,
                        "executions: {} run, {} resumed{}",
                        report.executed,
                        report.resumed,
                        saved(report)
                    )?;
                }
                writeln!(self.out, "results: {}", report.results_path.display())?;
                if self.save_pass_rate {
                    writeln!(self.out, "pass@k:  {}", report.pass_at_k_path.display())?;
                }
            }
            _ => {}
        }
        self.out.flush()?;
        Ok(())
    }
}

/// `, 12 saved by dedup, 30 by the verdict cache` (empty when nothing was saved).
fn saved(report: &bcb_eval::RunReport) -> String {
    if report.deduplicated + report.cached == 0 {
        return String::new();
    }
    format!(
        ", {} saved by dedup, {} by the verdict cache",
        report.deduplicated, report.cached
    )
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}
