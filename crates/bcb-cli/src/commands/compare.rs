//! `bcb compare A B`: tasks that flipped, exact McNemar, paired bootstrap interval of the
//! pass@1 difference — so a 1-point gain is called noise when it is.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use bcb_report::compare::compare;
use bcb_report::results::{read_task_list, RunResults};
use bcb_report::summary::{Report, ReportOptions};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The baseline `*_eval_results.json` (plain or .gz).
    pub a: PathBuf,
    /// The candidate `*_eval_results.json`; differences are reported as B - A.
    pub b: PathBuf,
    /// Seed of the bootstrap (same seed, same interval).
    #[arg(long, default_value_t = bcb_report::stats::DEFAULT_SEED)]
    pub seed: u64,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = 10_000)]
    pub resamples: usize,
    /// Tasks whose ground truth fails here (see `bcb report --gt-failed`); only changes the
    /// failure class shown for a flip.
    #[arg(long, value_name = "FILE")]
    pub gt_failed: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runs = vec![RunResults::load(&args.a)?, RunResults::load(&args.b)?];
    let mut gt_failed = BTreeSet::new();
    for path in &args.gt_failed {
        gt_failed.extend(read_task_list(path)?);
    }
    let opts = ReportOptions {
        ks: vec![1],
        seed: args.seed,
        gt_failed,
    };
    // No dataset needed: tasks are ordered by number.
    let report = Report::build(&runs, &[], &opts);
    let cmp = compare(&report, args.seed, args.resamples);
    if cmp.paired_tasks == 0 {
        anyhow::bail!(
            "{} and {} have no task in common; compare results of the same subset",
            args.a.display(),
            args.b.display()
        );
    }
    match args.format {
        Format::Text => print!("{}", cmp.render_text()),
        Format::Json => println!("{}", serde_json::to_string_pretty(&cmp)?),
    }
    Ok(ExitCode::SUCCESS)
}
