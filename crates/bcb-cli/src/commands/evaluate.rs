//! `bcb evaluate`: maps the flags onto a plan, an executor and sinks; the session does the
//! rest (ground truth, then every sample against its task's tests, then pass@k).

use bcb_envvars::EnvVars;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use bcb_dataset::{Split, Subset};
use bcb_eval::plan::samples_journal_key;
use bcb_eval::{
    GtCache, GtMode, Request, RetryPolicy, SampleRun, Samples, Session, Settings, Shard, ShardPlan,
};
use bcb_execute::local::env as pyenv;
use bcb_execute::{ExecConfig, ExecutorSpec, Limits, LocalKind};
use bcb_sinks::{ConsoleSummary, ProgressMode, StandardSinks};
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
    /// file's name when it follows the original's naming).
    #[arg(long, default_value = "complete")]
    pub split: Split,
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Samples: a JSONL file of {task_id, solution|completion} or a directory {task}/{k}.py.
    #[arg(long)]
    pub samples: Option<PathBuf>,
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
    /// `bcb merge` joins them into the files one run would have written.
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,
    /// The number of shards for `--shard auto` under Kubernetes (the Job's completions).
    #[arg(long)]
    pub shard_count: Option<usize>,
    /// What a sample the tamper scan flags gets: `refuse` (not run; `fail` with the findings as
    /// its details), `warn` (run, findings logged) or `off` (no scan).
    #[arg(long, default_value = "refuse")]
    pub tamper_policy: bcb_sanitize::tamper::TamperPolicy,
    /// Evaluate again even if the results file exists (the old one is kept as .bak).
    #[arg(long)]
    pub force: bool,
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
    let label = rest.split("--").next()?;
    let (subset, split) = match label.strip_prefix("hard-") {
        Some(split) => (Subset::Hard, split),
        None => (Subset::Full, label),
    };
    Some((subset, split.parse().ok()?))
}

impl Args {
    /// No silent mislabelling: split and subset come from the samples file's name when it
    /// follows the original's naming; a typed flag that contradicts the name is an error.
    fn reconcile_labels(&mut self) -> anyhow::Result<()> {
        let Some(path) = self.samples.clone() else {
            return Ok(());
        };
        let Some((subset, split)) = labels_from_name(&path) else {
            if !(self.split_typed && self.subset_typed) {
                tracing::warn!(
                    "{}: the name does not say its split and subset; assuming --split {} --subset {} (pass both to be explicit)",
                    path.display(), self.split.as_str(), self.dataset.subset
                );
            }
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

    /// The samples to evaluate: `--samples`, or generated first with `--model` (as the
    /// original does, for the selected tasks only); checked before anything runs.
    fn samples(
        &self,
        ds: &bcb_dataset::Dataset,
        calibrated: bool,
    ) -> anyhow::Result<Option<Samples>> {
        if self.check_gt_only {
            return Ok(None);
        }
        let path = match (&self.samples, &self.generation.model) {
            (Some(path), _) if path.is_file() && !path.to_string_lossy().ends_with(".jsonl") => {
                bail!("samples file {} must end in .jsonl (or be a directory)", path.display())
            }
            (Some(path), _) => path.clone(),
            (None, Some(_)) => {
                let opts = self.generation.options(self.split, ds.subset)?;
                let reporter = self.generation.reporter(self.progress_interval)?;
                let path = bcb_generate::generate_samples_with(&opts, ds, reporter)?;
                eprintln!("samples: {}", path.display());
                path
            }
            (None, None) => bail!("--samples is required (or --model to generate them first, or --check-gt-only to check the ground truth)"),
        };
        Ok(Some(Samples::read(ds, &path, calibrated)?))
    }
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.reconcile_labels()?;
    let spec = match args.execution.as_str() {
        "local" => ExecutorSpec::Local(args.executor),
        "gradio" => return super::remote::run(&args, super::remote::Backend::Gradio),
        "e2b" => return super::remote::run(&args, super::remote::Backend::E2b),
        other => bail!("--execution {other}: expected `local`, `gradio` or `e2b`\nhint: run without --execution to evaluate on this machine"),
    };
    let calibrated = args.calibrated && !args.no_calibrated;
    let save_pass_rate = args.save_pass_rate && !args.no_save_pass_rate;
    let mut ds = args.dataset.spec().load()?;
    let ids = bcb_dataset::parse_task_ids(&args.ids);
    if !ids.is_empty() {
        ds.retain_ids(&ids)?;
    }
    let samples = args.samples(&ds, calibrated)?;
    if args.no_execute {
        if let Some(s) = &samples {
            println!("{}", s.path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let python = pyenv::resolve_python(args.python.as_deref())?;
    let settings = Settings {
        split: args.split,
        calibrated,
        min_time_limit: args.min_time_limit,
        base_timeout: args.timeout,
        limits: args.limits(),
        runtime: pyenv::runtime_key(&python),
        tamper: args.tamper_policy,
    };
    let config = ExecConfig {
        python,
        parallel: args.parallel(),
        max_in_flight: args.max_in_flight,
        limits: settings.limits.clone(),
    };
    let executor = spec
        .build(config)
        .with_context(|| format!("cannot start the {spec} executor"))?;
    let gt_cache = GtCache::new(&bcb_dataset::cache_dir(), &ds, &settings);
    let shard = match (args.shard()?, &samples) {
        (Some(shard), Some(s)) => Some(ShardPlan::new(&ds, s, &settings, shard)),
        (Some(_), None) => bail!(
            "--shard needs --samples: a shard runs the ground truth and the samples of its tasks"
        ),
        (None, _) => None,
    };
    let sinks = bcb_sinks::standard(StandardSinks {
        gt_cache: (args.gt_mode() != GtMode::Skip).then_some(&gt_cache),
        samples: samples
            .as_ref()
            .map(|s| (s.path.as_path(), samples_journal_key(s, &settings))),
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
    let request = Request {
        gt: args.gt_mode(),
        samples,
        run: SampleRun {
            pass_k: args.pass_k.clone(),
            no_gt: args.no_gt,
            force: args.force,
        },
        parallel: args.parallel(),
        shard,
    };
    let retry = RetryPolicy {
        retries: args.exec_retries,
        ..Default::default()
    };
    Session::new(&ds, executor.as_ref(), &settings, sinks)
        .with_retry(retry)
        .run(&gt_cache, &request)?;
    Ok(ExitCode::SUCCESS)
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
    fn split_and_subset_come_from_an_upstream_file_name() {
        let name = "r/m--main--bigcodebench-hard-instruct--vllm-0-1-sanitized_calibrated.jsonl";
        let mut a = args(name, None, None);
        a.reconcile_labels().unwrap();
        assert_eq!((a.split, a.dataset.subset), (Split::Instruct, Subset::Hard));
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
        // Names without labels keep the flags (or their defaults).
        let mut a = args("x.jsonl", Some("instruct"), None);
        a.reconcile_labels().unwrap();
        assert_eq!((a.split, a.dataset.subset), (Split::Instruct, Subset::Full));
    }
}
