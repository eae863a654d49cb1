//! `bcb evaluate`: maps the flags onto a plan, an executor and sinks; the session does the
//! rest (ground truth, then every sample against its task's tests, then pass@k), whatever the
//! backend (`--execution`, see `remote.rs`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use bcb_eval::samples_journal_key;
use bcb_eval::Reuse;
use bcb_eval::{
    GtCache, GtMode, Request, RetryPolicy, SampleRun, Samples, Session, Settings, Shard, ShardPlan,
};
use bcb_execute::ExecConfig;
use bcb_sinks::{ConsoleSummary, ProgressMode, StandardSinks, VerdictCacheSink};

pub use super::evaluate_flags::Args;
use super::samples_files::expand_samples;

impl Args {
    /// Flags that do not go together, refused before anything is loaded.
    fn check_combinations(&self) -> anyhow::Result<()> {
        if self.rerun_failures > 0 && self.shard.is_some() {
            bail!("--rerun-failures works with a whole run only\nhint: drop --rerun-failures, or run without --shard");
        }
        if self.rerun_failures > 0 && self.check_gt_only {
            bail!("--rerun-failures reruns failing samples (and the failing ground truth of their tasks); --check-gt-only has no samples\nhint: to check failing canonical solutions again, run --check-gt-only --ids with the failed tasks");
        }
        Ok(())
    }

    fn settings(&self, calibrated: bool, runtime: &str) -> Settings {
        self.verdict
            .settings(self.split, calibrated, runtime.to_string())
    }

    /// `--shard`: a slice of one samples file, or of the ground truth alone.
    fn shard_plan(
        &self,
        ds: &bcb_dataset::Dataset,
        samples: &[Samples],
        settings: &Settings,
        gt_cache: &GtCache,
    ) -> anyhow::Result<Option<ShardPlan>> {
        let plan = match (self.shard()?, samples) {
            (Some(shard), [s]) => ShardPlan::new(ds, s, settings, shard),
            (Some(shard), []) => ShardPlan::ground_truth(ds, settings, shard, gt_cache),
            (Some(_), more) => bail!(
                "--shard takes one samples file, {} were given\nhint: run the shards of each file separately (`bcb merge` joins one file's shards)",
                more.len()
            ),
            (None, _) => return Ok(None),
        };
        if self.no_gt && plan.is_ground_truth_only() {
            bail!("--shard without --samples checks ground truth, which --no-gt skips\nhint: drop --no-gt, or pass --samples");
        }
        Ok(Some(plan))
    }

    fn exec_config(&self, python: PathBuf, settings: &Settings) -> ExecConfig {
        ExecConfig {
            python,
            parallel: self.parallel(),
            max_in_flight: self.max_in_flight,
            limits: settings.limits.clone(),
            hacks: settings.hacks,
        }
    }

    fn request(&self, samples: Vec<Samples>, shard: Option<ShardPlan>) -> Request {
        Request {
            gt: self.gt_mode(),
            samples,
            run: SampleRun {
                pass_k: self.pass_k.clone(),
                no_gt: self.no_gt,
                force: self.force,
            },
            parallel: self.parallel(),
            shard,
        }
    }

    fn parallel(&self) -> usize {
        match usize::try_from(self.parallel) {
            Ok(n) if n > 0 => n,
            _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    fn progress(&self) -> ProgressMode {
        match self.quiet {
            true => ProgressMode::Off,
            false => ProgressMode::Auto {
                interval: self.progress_interval,
            },
        }
    }

    fn shard(&self) -> anyhow::Result<Option<Shard>> {
        let shard = match self.shard.as_deref() {
            None => return Ok(None),
            Some("auto") => Shard::from_scheduler(self.shard_count),
            Some(s) => s.parse(),
        };
        shard.map(Some).map_err(|e| anyhow::anyhow!("--shard: {e}"))
    }

    fn gt_mode(&self) -> GtMode {
        match (self.check_gt_only, self.no_gt) {
            (true, _) => GtMode::Recheck,
            (false, true) => GtMode::Skip,
            (false, false) => GtMode::Use,
        }
    }
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.samples = expand_samples(&args.samples)?;
    args.reconcile_labels()?;
    args.check_combinations()?;
    let spec = super::remote::spec(&args)?;
    let calibrated = args.calibrated && !args.no_calibrated;
    let save_pass_rate = args.save_pass_rate && !args.no_save_pass_rate;
    let ds = args.load_dataset()?;
    let samples = args.samples(&ds, calibrated)?;
    if args.no_execute {
        for s in &samples {
            println!("{}", s.path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let _locks = bcb_eval::lock_samples_journals(&samples, args.force, args.shard.is_some())?;
    let runtime = spec.runtime(args.python.as_deref())?;
    let settings = args.settings(calibrated, &runtime.key);
    let exec_config = args.exec_config(runtime.python, &settings);
    let sandbox_key = bcb_execute::sandbox_key(&exec_config);
    let gt_cache = GtCache::new(&bcb_dataset::cache_dir(), &ds, &settings);
    let shard = args.shard_plan(&ds, &samples, &settings, &gt_cache)?;
    let _shard_lock = shard.as_ref().map(ShardPlan::lock_journal).transpose()?;
    let executor = spec
        .build(exec_config)
        .with_context(|| format!("cannot start the {spec} executor"))?;
    // Protections in force are part of the cache key: a sandbox that allows more may give
    // another verdict. A remote backend's verdicts never enter it.
    let verdict_cache = (spec.caches_verdicts() && !samples.is_empty())
        .then(|| args.reuse.verdict_cache(&settings, &sandbox_key))
        .flatten();
    let mut sinks: Vec<Box<dyn bcb_eval::Sink>> = bcb_sinks::standard(StandardSinks {
        gt_cache: (args.gt_mode() != GtMode::Skip).then_some(&gt_cache),
        samples: samples
            .iter()
            .map(|s| (s.path.as_path(), samples_journal_key(s, &settings)))
            .collect(),
        progress: args.progress(),
        save_pass_rate,
        force: args.force,
        shard: shard.as_ref(),
        console: Some(ConsoleSummary::new(
            Box::new(std::io::stdout()),
            args.split,
            ds.subset,
            args.check_gt_only,
            args.no_gt,
            save_pass_rate,
        )),
    });
    if let Some(path) = &args.gt_summary {
        sinks.push(Box::new(bcb_sinks::GtSummaryFile::new(path)));
    }
    if let Some(cache) = &verdict_cache {
        sinks.push(Box::new(VerdictCacheSink::new(cache)));
    }
    let request = args.request(samples, shard);
    Session::new(&ds, executor.as_ref(), &settings, sinks)
        .with_retry(RetryPolicy {
            retries: args.exec_retries,
            ..Default::default()
        })
        .with_rerun_failures(args.rerun_failures)
        .with_reuse(Reuse {
            dedup: !args.reuse.no_dedup,
            cache: verdict_cache.as_ref(),
        })
        .run(&gt_cache, &request)?;
    if let Some(plan) = request.shard.as_ref().filter(|s| s.is_ground_truth_only()) {
        say_ground_truth_shard_done(plan);
    }
    Ok(ExitCode::SUCCESS)
}

/// What a ground-truth-only shard leaves, and how to join the shards.
fn say_ground_truth_shard_done(plan: &ShardPlan) {
    let tag = plan.shard.tag();
    println!(
        "ground-truth shard {}/{} done: {} task(s) in {}",
        tag.index,
        tag.count,
        plan.tasks.len(),
        plan.journal.display()
    );
    println!(
        "merge all shards with: bcb merge --check-gt-only (same BCB_CACHE_DIR and dataset flags)"
    );
}
