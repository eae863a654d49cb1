//! `bcb merge`: joins the journals of `bcb evaluate --shard I/N` runs into the two files one
//! unsharded run would have written, or (`--check-gt-only`) ground-truth-only shards into the
//! ground-truth cache and summary one unsharded `--check-gt-only` run would have produced.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use bcb_eval::{assemble, build_report, gt_lock, Event, GtCache, SampleRun, Samples, Sink};
use bcb_sinks::{ConsoleSummary, EvalResultsFile, PassAtKFile};

use crate::common::DatasetArgs;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Set by main: `--subset` / `--version` were typed; otherwise the shards' plan decides.
    #[arg(skip)]
    pub subset_typed: bool,
    #[arg(skip)]
    pub version_typed: bool,
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// The samples file the shards evaluated.
    #[arg(long, required_unless_present = "check_gt_only")]
    pub samples: Option<PathBuf>,
    /// Merge ground-truth-only shards (`bcb evaluate --check-gt-only --shard I/N`) into the
    /// ground-truth cache (`$BCB_CACHE_DIR/ground-truth/`) and print its summary.
    #[arg(long, conflicts_with = "samples")]
    pub check_gt_only: bool,
    /// The shard journals; by default every `X_eval_results.json.shard-*-of-*.jsonl` beside
    /// the samples file's results (with --check-gt-only: the dataset's ground-truth shards in
    /// the cache).
    pub shards: Vec<PathBuf>,
    /// The tasks the shards were run on (`--ids` of `bcb evaluate`), if not all.
    #[arg(long, visible_alias = "selective-evaluate", default_value = "")]
    pub ids: String,
    /// Which pass@k to report.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10", value_parser = clap::value_parser!(u64).range(1..))]
    pub pass_k: Vec<u64>,
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    // The shards first: unless flags say otherwise, the dataset is the one they were made on.
    let chosen = args.subset_typed || args.version_typed || args.dataset.dataset.is_some();
    let mut shards = match (&args.samples, args.shards.is_empty()) {
        (_, false) => args.shards.clone(),
        (Some(samples), true) => bcb_eval::find_shards(samples),
        (None, true) if !chosen => {
            bcb_eval::shard::find_ground_truth_shards(&bcb_dataset::cache_dir(), None)?
        }
        (None, true) => Vec::new(),
    };
    let plan = shards
        .first()
        .and_then(|p| bcb_eval::journal::read_header(p))
        .and_then(|h| h.plan);
    if let Some(plan) = &plan {
        if !args.subset_typed {
            args.dataset.subset = plan.subset;
        }
        if !args.version_typed {
            args.dataset.version = plan.version.clone();
        }
    }
    let mut ds = args.dataset.spec().load()?;
    let ids = bcb_dataset::parse_task_ids(&args.ids);
    if !ids.is_empty() {
        ds.retain_ids(&ids)?;
    }
    let Some(samples_path) = args.samples.clone() else {
        if shards.is_empty() {
            shards = bcb_eval::shard::find_ground_truth_shards(
                &bcb_dataset::cache_dir(),
                Some(&ds.md5),
            )?;
        }
        return merge_ground_truth(&ds, &shards);
    };
    // Calibration changes the programs, so read it from the shards before the samples.
    let calibrated = plan.as_ref().is_none_or(|p| p.calibrated);
    let samples = Samples::read(&ds, &samples_path, calibrated)?;
    let merged = bcb_eval::merge(&ds, &samples, &shards)?;
    let results = assemble(&ds, &samples, &merged.outcomes);
    let opts = SampleRun {
        pass_k: args.pass_k,
        no_gt: merged.ground_truth.is_empty(),
        force: true,
    };
    let split = merged.plan.split;
    let report = build_report(
        &ds,
        split,
        merged.plan.calibrated,
        &samples,
        &merged.ground_truth,
        results,
        &opts,
    );
    let task_ids: Vec<String> = ds.tasks().iter().map(|t| t.task_id.clone()).collect();
    let console = ConsoleSummary::new(
        Box::new(std::io::stdout()),
        split,
        ds.subset,
        false,
        opts.no_gt,
        true,
    );
    let mut sinks: Vec<Box<dyn Sink>> = vec![
        Box::new(EvalResultsFile::new(true)),
        Box::new(PassAtKFile),
        Box::new(console),
    ];
    let events = [
        Event::GroundTruthReady {
            gt: &merged.ground_truth,
            task_ids: &task_ids,
        },
        Event::Finished(&report),
    ];
    for event in &events {
        for sink in sinks.iter_mut() {
            sink.handle(event)
                .context("cannot write the merged results")?;
        }
    }
    eprintln!("merged {}", listed(&merged.shards));
    Ok(ExitCode::SUCCESS)
}

fn listed(shards: &[PathBuf]) -> String {
    let names: Vec<String> = shards.iter().map(|p| p.display().to_string()).collect();
    format!("{} shard(s): {}", shards.len(), names.join(", "))
}

/// Ground-truth-only shards into the cache an unsharded `--check-gt-only` fills, then the
/// same summary on stdout.
fn merge_ground_truth(ds: &bcb_dataset::Dataset, shards: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let cache_dir = bcb_dataset::cache_dir();
    let merged = bcb_eval::shard::merge_ground_truth(ds, shards)?;
    let cache = GtCache::for_plan(&cache_dir, &merged.plan.dataset, &merged.plan.settings);
    // Not under a run that is writing the same cache: its appends would be lost to the rewrite.
    let stall = gt_lock::stall_bound(bcb_eval::limits::ground_truth_time_limit(
        0.0,
        bcb_eval::DEFAULT_BASE_TIMEOUT,
    ));
    let mut said = false;
    let lock = gt_lock::lock(&cache.path, stall, |holder| {
        if !std::mem::replace(&mut said, true) {
            eprintln!(
                "{} is being written by another process ({}); waiting for it",
                cache.path.display(),
                holder.unwrap_or("which did not say who it is")
            );
        }
        Ok(())
    })?;
    cache.store(&merged.records)?;
    drop(lock);
    let gt = merged.ground_truth();
    let task_ids: Vec<String> = ds.tasks().iter().map(|t| t.task_id.clone()).collect();
    let mut console = ConsoleSummary::new(
        Box::new(std::io::stdout()),
        merged.plan.split,
        ds.subset,
        true,
        false,
        false,
    );
    console.handle(&Event::GroundTruthReady {
        gt: &gt,
        task_ids: &task_ids,
    })?;
    eprintln!(
        "merged {} into {}",
        listed(&merged.shards),
        cache.path.display()
    );
    Ok(ExitCode::SUCCESS)
}
