//! `bcb evaluate`: maps the flags onto a plan, an executor and sinks; the session does the
//! rest (ground truth, then every sample against its task's tests, then pass@k).

use bcb_envvars::EnvVars;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use bcb_dataset::{Split, Subset};
use bcb_eval::plan::samples_journal_key;
use bcb_eval::session::Reuse;
use bcb_eval::{
    GtCache, GtMode, Request, RetryPolicy, SampleRun, Samples, Session, Settings, Shard, ShardPlan,
    VerdictCache,
};
use bcb_execute::local::env as pyenv;
use bcb_execute::{ExecConfig, ExecutorSpec, Limits, LocalKind};
use bcb_sinks::{ConsoleSummary, ProgressMode, StandardSinks, VerdictCacheSink};
use clap::builder::BoolishValueParser;

use crate::common::DatasetArgs;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Set by main: `--split` / `--subset` were typed, not defaulted.
    #[arg(skip)]
    pub split_typed: bool,
    #[arg(skip)]
    pub subset_typed: bool,
    /// Prompt split the samples answer: `complete` or `instruct` (taken from the samples
    /// file's name when it follows the original's naming; otherwise required, with --subset).
    #[arg(long, default_value = "complete")]
    pub split: Split,
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Samples: JSONL files of {task_id, solution|completion}, a directory {task}/{k}.py, or a
    /// directory of samples files. Several files run together: one ground truth, one pool,
    /// each file its own result files.
    #[arg(long, num_args = 1..)]
    pub samples: Vec<PathBuf>,
    /// Where to execute: `local` (this machine), `gradio` (an evaluator Space, see
    /// --gradio-endpoint) or `e2b` (a sandbox, see --e2b-endpoint). Never falls back to local.
    #[arg(long, default_value = "local")]
    pub execution: String,
    #[command(
        flatten,
        next_help_heading = "Remote execution (--execution gradio|e2b)"
    )]
    pub remote: super::remote::RemoteArgs,
    /// Local executor: `pool` (pre-warmed, sandboxed) or `process` (fresh process per sample).
    #[arg(long, default_value = "pool", env = EnvVars::BCB_EXECUTOR)]
    pub executor: LocalKind,
    /// Only these tasks: comma-separated ids (`BigCodeBench/1,BigCodeBench/2` or `1,2`).
    #[arg(
        long,
        visible_alias = "selective-evaluate",
        value_name = "IDS",
        default_value = ""
    )]
    pub ids: String,
    /// Which pass@k to report (only k <= the fewest samples of any task are written).
    #[arg(long, value_delimiter = ',', default_value = "1,5,10", value_parser = clap::value_parser!(u64).range(1..))]
    pub pass_k: Vec<u64>,
    /// Write `*_pass_at_k.json`.
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true", default_value = "true")]
    pub save_pass_rate: bool,
    #[arg(long, hide = true)]
    pub no_save_pass_rate: bool,
    /// Execute `code_prompt + "\n    pass\n" + solution` (upstream default).
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true", default_value = "true")]
    pub calibrated: bool,
    /// Same as `--calibrated false`.
    #[arg(long)]
    pub no_calibrated: bool,
    /// Samples run at once (default: number of cores; < 1 means the default).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub parallel: i64,
    /// Most samples in flight at once: beyond `--parallel`, more start only while CPUs idle
    /// (samples that sleep or wait) and MemAvailable covers one more; 0 = parallel + max(parallel, 8).
    #[arg(long, default_value_t = 0)]
    pub max_in_flight: usize,
    /// Lower bound of the per-sample limit in seconds (upstream `--min_time_limit`).
    #[arg(long, default_value_t = 1.0)]
    pub min_time_limit: f64,
    /// Base per-sample limit in seconds; the limit is max(this, min-time-limit, GT time) + 1.
    #[arg(long, env = EnvVars::BIGCODEBENCH_TIMEOUT_PER_TASK, default_value_t = bcb_eval::limits::DEFAULT_BASE_TIMEOUT)]
    pub timeout: f64,
    /// Address-space limit per sample in MB (RLIMIT_AS; 0 = none).
    #[arg(long, default_value_t = 30 * 1024)]
    pub max_as_limit: u64,
    /// Data-segment limit per sample in MB (RLIMIT_DATA; 0 = none).
    #[arg(long, default_value_t = 30 * 1024)]
    pub max_data_limit: u64,
    /// Stack limit per sample in MB (RLIMIT_STACK; 0 = none).
    #[arg(long, default_value_t = 10)]
    pub max_stack_limit: u64,
    /// Memory cap per sample in MB, enforced by a cgroup where available (0 = none).
    #[arg(long, default_value_t = Limits::default().memory_mb)]
    pub memory_limit: u64,
    /// Processes/threads per sample (0 = none).
    #[arg(long, default_value_t = Limits::default().max_processes)]
    pub max_processes: u64,
    /// Seconds after the time limit before a sample's processes are killed.
    #[arg(long, default_value_t = Limits::default().kill_grace.as_secs_f64())]
    pub kill_grace: f64,
    /// Bytes of each sample's stdout/stderr kept (the rest is drained and dropped).
    #[arg(long, default_value_t = Limits::default().output_cap_bytes)]
    pub output_cap: usize,
    /// Run only the canonical solutions, report the ground-truth pass rate, and exit.
    #[arg(long)]
    pub check_gt_only: bool,
    /// Skip the ground truth (every task gets the 20 s fallback; gt_pass_rate is 0.0).
    #[arg(long)]
    pub no_gt: bool,
    /// Run only shard I of N (`2/4`), or `auto` from the scheduler (Slurm array, Kubernetes
    /// Indexed Job). Each shard keeps its verdicts in `X_eval_results.json.shard-I-of-N.jsonl`;
    /// `bcb merge` joins them into the files one run would have written. Without --samples a
    /// shard checks its share of the ground truth (journal beside the ground-truth cache);
    /// `bcb merge --check-gt-only` joins those into the cache.
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,
    /// The number of shards for `--shard auto` under Kubernetes (the Job's completions).
    #[arg(long)]
    pub shard_count: Option<usize>,
    /// What a sample the tamper scan flags gets: `refuse` (not run; `fail` with the findings as
    /// its details), `warn` (run, findings logged) or `off` (no scan).
    #[arg(long, default_value = "refuse")]
    pub tamper_policy: bcb_sanitize::tamper::TamperPolicy,
    /// What a reward hack the harness's run-time watch detects gets: `fail` (the pass becomes
    /// `fail`, details `bcb: reward hack: ...`), `flag` (the tests' verdict, flagged) or `off`
    /// (no watch).
    #[arg(long, default_value = "fail")]
    pub hack_policy: bcb_execute::HackPolicy,
    /// Run every sample whose verdict is not `pass` (and every failing canonical solution) N
    /// more times; a verdict that changes is marked `"flaky": true` in the results file (the
    /// first verdict counts for pass@k). Attempts are journaled; a resumed run does not redo them.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub rerun_failures: usize,
    /// Also write the ground truth of the selected tasks to this JSON file (`gt_pass_rate`,
    /// `tasks`, `failed_tasks`, `failures: [{task_id, reason}]`), e.g. with --check-gt-only.
    #[arg(long, value_name = "PATH")]
    pub gt_summary: Option<PathBuf>,
    /// Evaluate again even if the results file exists (the old one is kept as .bak).
    #[arg(long)]
    pub force: bool,
    /// Execute every sample, even one whose task and program another sample has already
    /// (by default such duplicates run once and share the verdict).
    #[arg(long)]
    pub no_dedup: bool,
    /// Neither use nor fill the verdict cache of earlier runs (`bcb cache stats`).
    #[arg(long)]
    pub no_cache: bool,
    /// Size bound of the verdict cache in MB; the least recently used runs' verdicts go first.
    #[arg(long, default_value_t = bcb_eval::verdict_cache::DEFAULT_MAX_MB)]
    pub cache_max_mb: u64,
    /// Python interpreter of the evaluation environment.
    #[arg(long, env = EnvVars::BCB_PYTHON)]
    pub python: Option<PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Seconds between progress lines when stderr is not a terminal (logs, CI, nohup).
    #[arg(long, default_value_t = 30.0)]
    pub progress_interval: f64,
    /// Further attempts for jobs that got no verdict (harness crash, lost worker) before the
    /// run stops; delays double from 1 s.
    #[arg(long, default_value_t = 4)]
    pub exec_retries: usize,
    /// Check the inputs (and with --model generate and sanitize) but execute nothing.
    #[arg(long)]
    pub no_execute: bool,
    /// Without --samples: generate them first with these model flags (as the original does).
    #[command(
        flatten,
        next_help_heading = "Generation (when --model is given instead of --samples)"
    )]
    pub generation: super::generate::ModelArgs,
}

/// `(subset, split)` named by an upstream samples file name (`…--bigcodebench-hard-instruct--…`).
fn labels_from_name(path: &std::path::Path) -> Option<(Subset, Split)> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let rest = name.split_once("--bigcodebench-")?.1;
    // `…--bigcodebench-hard-instruct--vllm-….jsonl`, or the labels last: `m--bigcodebench-complete.jsonl`.
    let label = rest.split("--").next()?;
    let label = label.strip_suffix(".jsonl").unwrap_or(label);
    let (subset, split) = match label.strip_prefix("hard-") {
        Some(split) => (Subset::Hard, split),
        None => (Subset::Full, label),
    };
    Some((subset, split.parse().ok()?))
}

/// `--samples` as files: a directory that holds samples files (and no `{task}/{k}.py`
/// task directories) stands for those files, in name order; anything else is itself.
fn expand_samples(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let entries: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        let task_dirs = entries.iter().any(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("BigCodeBench_"))
        });
        let mut files: Vec<PathBuf> = entries
            .into_iter()
            .filter(|p| p.is_file() && is_samples_file_name(p))
            .collect();
        if task_dirs || files.is_empty() {
            out.push(path.clone());
            continue;
        }
        files.sort();
        out.extend(files);
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = out
        .iter()
        .find(|p| !seen.insert(p.canonicalize().unwrap_or((*p).clone())))
    {
        bail!(
            "--samples: {} is given twice\nhint: name each samples file once",
            dup.display()
        );
    }
    Ok(out)
}

/// A samples file's name, not one of bcb's own files beside it (journals, result files).
fn is_samples_file_name(path: &std::path::Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.ends_with(".jsonl")
        && !name.ends_with(".partial.jsonl")
        && !name.contains("_eval_results.json")
        && !name.contains(".shard-")
}

impl Args {
    /// No silent mislabelling: split and subset come from the samples files' names when they
    /// follow the original's naming; a typed flag that contradicts a name is an error, and so
    /// are files named for different splits or subsets (one run has one dataset and split).
    fn reconcile_labels(&mut self) -> anyhow::Result<()> {
        if self.samples.is_empty() {
            return Ok(());
        }
        let mut named: Option<(&std::path::Path, Subset, Split)> = None;
        for path in &self.samples {
            let Some((subset, split)) = labels_from_name(path) else {
                // The original requires both; guessing would write a wrong `split` silently.
                let missing: Vec<&str> = [
                    ("--split", self.split_typed),
                    ("--subset", self.subset_typed),
                ]
                .into_iter()
                .filter_map(|(flag, typed)| (!typed).then_some(flag))
                .collect();
                if !missing.is_empty() {
                    bail!(
                        "{}: the name does not say which split and subset the samples answer, and {} {} not given\nhint: add --split complete|instruct --subset full|hard, or name the file as the original does (`…--bigcodebench-[hard-]{{complete|instruct}}--…`)",
                        path.display(),
                        missing.join(" and "),
                        if missing.len() == 1 { "was" } else { "were" }
                    );
                }
                continue;
            };
            if let Some((first, s0, p0)) = named {
                if (s0, p0) != (subset, split) {
                    bail!(
                        "{} is named for {subset}-{} but {} for {s0}-{}: one run evaluates one subset and split\nhint: evaluate them in separate runs",
                        path.display(),
                        split.as_str(),
                        first.display(),
                        p0.as_str()
                    );
                }
            } else {
                named = Some((path, subset, split));
            }
        }
        let Some((path, subset, split)) = named else {
            return Ok(());
        };
        if self.split_typed && self.split != split {
            bail!("{} is named for split `{}` but --split {} was given\nhint: drop --split (the name decides) or rename the file", path.display(), split.as_str(), self.split.as_str());
        }
        if self.subset_typed && self.dataset.subset != subset {
            bail!("{} is named for subset `{subset}` but --subset {} was given\nhint: drop --subset (the name decides) or rename the file", path.display(), self.dataset.subset);
        }
        self.split = split;
        self.dataset.subset = subset;
        Ok(())
    }

    /// Flags that do not go together, refused before anything is loaded.
    fn check_combinations(&self) -> anyhow::Result<()> {
        if self.rerun_failures > 0 && (self.execution != "local" || self.shard.is_some()) {
            bail!("--rerun-failures works with a whole local run only\nhint: drop --rerun-failures, or run without --shard and with --execution local");
        }
        if self.rerun_failures > 0 && self.check_gt_only {
            bail!("--rerun-failures reruns failing samples (and the failing ground truth of their tasks); --check-gt-only has no samples\nhint: to check failing canonical solutions again, run --check-gt-only --ids with the failed tasks");
        }
        if self.gt_summary.is_some() && self.execution != "local" {
            bail!("--gt-summary is written by a local run\nhint: drop --gt-summary, or use --execution local");
        }
        Ok(())
    }

    fn settings(&self, calibrated: bool, python: &std::path::Path) -> Settings {
        Settings {
            split: self.split,
            calibrated,
            min_time_limit: self.min_time_limit,
            base_timeout: self.timeout,
            limits: self.limits(),
            runtime: pyenv::runtime_key(python),
            tamper: self.tamper_policy,
            hacks: self.hack_policy,
        }
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

    /// The dataset, narrowed to `--ids` when given.
    fn load_dataset(&self) -> anyhow::Result<bcb_dataset::Dataset> {
        let mut ds = self.dataset.spec().load()?;
        let ids = bcb_dataset::parse_task_ids(&self.ids);
        if !ids.is_empty() {
            ds.retain_ids(&ids)?;
        }
        Ok(ds)
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

    fn limits(&self) -> Limits {
        Limits {
            max_as_mb: self.max_as_limit,
            max_data_mb: self.max_data_limit,
            max_stack_mb: self.max_stack_limit,
            memory_mb: self.memory_limit,
            max_processes: self.max_processes,
            output_cap_bytes: self.output_cap,
            kill_grace: Duration::from_secs_f64(self.kill_grace.max(0.0)),
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
                interval: Duration::from_secs_f64(self.progress_interval.max(1.0)),
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

    /// The samples to evaluate: `--samples` (each file), or generated first with `--model`
    /// (as the original does, for the selected tasks only); checked before anything runs.
    fn samples(&self, ds: &bcb_dataset::Dataset, calibrated: bool) -> anyhow::Result<Vec<Samples>> {
        if self.check_gt_only {
            return Ok(Vec::new());
        }
        let paths = match (self.samples.is_empty(), &self.generation.model) {
            (false, _) => self.samples.clone(),
            (true, Some(_)) => {
                let opts = self.generation.options(self.split, ds.subset)?;
                let reporter = self.generation.reporter(self.progress_interval)?;
                let path = bcb_generate::generate_samples_with(&opts, ds, reporter)?;
                eprintln!("samples: {}", path.display());
                vec![path]
            }
            // A shard without samples checks its share of the ground truth (a cluster job).
            (true, None) if self.shard.is_some() => return Ok(Vec::new()),
            (true, None) => bail!("--samples is required (or --model to generate them first, or --check-gt-only to check the ground truth)"),
        };
        paths
            .iter()
            .map(|path| {
                if path.is_file() && !path.to_string_lossy().ends_with(".jsonl") {
                    bail!(
                        "samples file {} must end in .jsonl (or be a directory)",
                        path.display()
                    )
                }
                Samples::read(ds, path, calibrated)
            })
            .collect()
    }
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.samples = expand_samples(&args.samples)?;
    args.reconcile_labels()?;
    args.check_combinations()?;
    let spec = match args.execution.as_str() {
        "local" => ExecutorSpec::Local(args.executor),
        "gradio" => return super::remote::run(&args, super::remote::Backend::Gradio),
        "e2b" => return super::remote::run(&args, super::remote::Backend::E2b),
        other => bail!("--execution {other}: expected `local`, `gradio` or `e2b`\nhint: run without --execution to evaluate on this machine"),
    };
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
    let python = pyenv::resolve_python(args.python.as_deref())?;
    let settings = args.settings(calibrated, &python);
    let executor = spec
        .build(args.exec_config(python, &settings))
        .with_context(|| format!("cannot start the {spec} executor"))?;
    let gt_cache = GtCache::new(&bcb_dataset::cache_dir(), &ds, &settings);
    let shard = args.shard_plan(&ds, &samples, &settings, &gt_cache)?;
    // Protections in force are part of the cache key: a sandbox that allows more may give
    // another verdict.
    let verdict_cache = (!args.no_cache && !samples.is_empty()).then(|| {
        VerdictCache::open(
            &bcb_dataset::cache_dir(),
            &settings,
            &executor.protections().join(","),
            args.cache_max_mb.saturating_mul(1024 * 1024),
        )
    });
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
            args.split.as_str(),
            ds.subset.as_str(),
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
            dedup: !args.no_dedup,
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn args(samples: &str, split: Option<&str>, subset: Option<&str>) -> Args {
        let mut argv = vec!["bcb", "--samples", samples];
        argv.extend(split.iter().flat_map(|s| ["--split", s]));
        argv.extend(subset.iter().flat_map(|s| ["--subset", s]));
        let mut a = Cli::parse_from(argv).args;
        a.split_typed = split.is_some();
        a.subset_typed = subset.is_some();
        a
    }

    #[test]
    fn a_directory_of_samples_files_is_those_files_and_the_upstream_layout_is_itself() {
        let dir = tempfile::tempdir().unwrap();
        let sweeps = dir.path().join("sweeps");
        std::fs::create_dir(&sweeps).unwrap();
        for name in [
            "b.jsonl",
            "a.jsonl",
            "a.jsonl.gz",
            "a_eval_results.json",
            "b_eval_results.json.partial.jsonl",
            "b_eval_results.json.shard-1-of-2.jsonl",
            "c.jsonl.partial.jsonl",
            "notes.txt",
        ] {
            std::fs::write(sweeps.join(name), "").unwrap();
        }
        assert_eq!(
            expand_samples(std::slice::from_ref(&sweeps)).unwrap(),
            [sweeps.join("a.jsonl"), sweeps.join("b.jsonl")]
        );
        let upstream = dir.path().join("upstream");
        std::fs::create_dir_all(upstream.join("BigCodeBench_0")).unwrap();
        std::fs::write(upstream.join("stray.jsonl"), "").unwrap();
        let given = [upstream];
        assert_eq!(expand_samples(&given).unwrap(), given);
        let twice = [sweeps.join("b.jsonl"), sweeps.clone()];
        let err = expand_samples(&twice).unwrap_err().to_string();
        assert!(err.contains("is given twice"), "{err}");
    }

    #[test]
    fn split_and_subset_come_from_an_upstream_file_name() {
        let name = "r/m--main--bigcodebench-hard-instruct--vllm-0-1-sanitized_calibrated.jsonl";
        let mut a = args(name, None, None);
        a.reconcile_labels().unwrap();
        assert_eq!((a.split, a.dataset.subset), (Split::Instruct, Subset::Hard));
        let mut a = args("m--bigcodebench-hard-complete.jsonl", None, None);
        a.reconcile_labels().unwrap();
        assert_eq!((a.split, a.dataset.subset), (Split::Complete, Subset::Hard));
        let mut a = args(name, Some("instruct"), Some("hard"));
        a.reconcile_labels().unwrap();
        let err = args(name, Some("complete"), None)
            .reconcile_labels()
            .unwrap_err();
        assert!(
            err.to_string().contains("named for split `instruct`"),
            "{err}"
        );
        let err = args(name, None, Some("full"))
            .reconcile_labels()
            .unwrap_err();
        assert!(err.to_string().contains("named for subset `hard`"), "{err}");
        // Names without labels need both flags, as the original does.
        let mut a = args("x.jsonl", Some("instruct"), Some("hard"));
        a.reconcile_labels().unwrap();
        assert_eq!((a.split, a.dataset.subset), (Split::Instruct, Subset::Hard));
        let err = args("x.jsonl", Some("instruct"), None)
            .reconcile_labels()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--subset was not given") && err.contains("hint:"),
            "{err}"
        );
        let err = args("x.jsonl", None, None).reconcile_labels().unwrap_err();
        assert!(
            err.to_string()
                .contains("--split and --subset were not given"),
            "{err}"
        );
    }
}
