//! `bcb report A_eval_results.json [B ...]`: one self-contained HTML page (or md/csv/json
//! tables) with pass@k and intervals, failures by class, domains, libraries, every task.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use bcb_dataset::Split;
use bcb_report::results::{read_task_list, RunResults};
use bcb_report::summary::{task_infos, Report, ReportOptions};
use bcb_report::{html, tables};

use crate::common::DatasetArgs;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Html,
    Md,
    Csv,
    Json,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `*_eval_results.json` files (plain or .gz) of `bcb evaluate` or the original harness;
    /// a `*_pass_at_k.json` beside each is read too (model name, split, ground-truth failures).
    #[arg(required = true, value_name = "EVAL_RESULTS")]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "html")]
    pub format: Format,
    /// Where to write; default `bcb-report.html` for html, standard output otherwise.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Split the samples answered (the prompt shown per task); default: from the pass@k files,
    /// else `complete`.
    #[arg(long)]
    pub split: Option<Split>,
    /// Tasks whose ground truth fails here (a `*_pass_at_k.json`, a JSON list or one id per
    /// line); their failures count as environment, for every file. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub gt_failed: Vec<PathBuf>,
    /// pass@k values to report (only k <= the fewest samples of any task are shown).
    #[arg(long, default_value = "1,5,10", value_delimiter = ',')]
    pub pass_k: Vec<u64>,
    /// Seed of the bootstrap intervals (same seed, same numbers).
    #[arg(long, default_value_t = bcb_report::stats::DEFAULT_SEED)]
    pub seed: u64,
    /// Page title.
    #[arg(long, default_value = "BigCodeBench report")]
    pub title: String,
    #[command(flatten)]
    pub dataset: DatasetArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runs = args
        .files
        .iter()
        .map(|p| RunResults::load(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let split = match args.split {
        Some(s) => s,
        None => runs
            .iter()
            .find_map(|r| r.split.as_deref())
            .map(|s| s.parse::<Split>())
            .transpose()
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .unwrap_or(Split::Complete),
    };
    let ds = args
        .dataset
        .spec()
        .load()
        .context("the report needs the dataset for libraries and prompts (set --dataset-dir or BCB_DATASET_DIR)")?;
    let tasks = task_infos(&ds, split);
    let mut gt_failed = BTreeSet::new();
    for path in &args.gt_failed {
        gt_failed.extend(read_task_list(path)?);
    }
    let opts = ReportOptions {
        ks: args.pass_k.clone(),
        seed: args.seed,
        gt_failed,
    };
    let report = Report::build(&runs, &tasks, &opts);
    let text = match args.format {
        Format::Html => html::render(&report, &runs, &tasks, &args.title),
        Format::Md => tables::render_markdown(&report),
        Format::Csv => tables::render_csv(&report),
        Format::Json => tables::render_json(&report),
    };
    let output = match (&args.output, args.format) {
        (Some(p), _) => Some(p.clone()),
        (None, Format::Html) => Some(PathBuf::from("bcb-report.html")),
        (None, _) => None,
    };
    let summary = tables::render_class_summary(&report);
    match output {
        Some(path) => {
            std::fs::write(&path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            print!("{summary}");
            println!(
                "report: {} ({:.2} MB)",
                path.display(),
                text.len() as f64 / 1e6
            );
        }
        None => {
            eprint!("{summary}");
            std::io::stdout().write_all(text.as_bytes())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
