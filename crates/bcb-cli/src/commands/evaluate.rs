//! `bcb evaluate`: ground truth, then every sample against its task's tests, then pass@k.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use bcb_dataset::Split;
use bcb_eval::{ground_truth, EvalOptions, GroundTruth, GtOptions, Progress};
use bcb_execute::{ExecConfig, Limits};
use clap::builder::BoolishValueParser;

use crate::common::DatasetArgs;
use bcb_execute::local::env as pyenv;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Prompt split the samples answer: `complete` or `instruct`.
    #[arg(long, default_value = "complete")]
    pub split: Split,
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Samples: a JSONL file of {task_id, solution|completion} or a directory {task}/{k}.py.
    #[arg(long)]
    pub samples: Option<PathBuf>,
    /// Where to execute: `local` (this machine). `gradio` and `e2b` are not available yet.
    #[arg(long, default_value = "local")]
    pub execution: String,
    /// Local executor: `pool` (pre-warmed, sandboxed) or `process` (fresh process per sample).
    #[arg(long, default_value = "pool", env = "BCB_EXECUTOR")]
    pub executor: String,
    /// Only these tasks: comma-separated ids (`BigCodeBench/1,BigCodeBench/2` or `1,2`).
    #[arg(
        long,
        visible_alias = "selective-evaluate",
        value_name = "IDS",
        default_value = ""
    )]
    pub ids: String,
    /// Which pass@k to report (only k <= the fewest samples of any task are written).
    #[arg(long, default_value = "1,5,10")]
    pub pass_k: String,
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
    /// Lower bound of the per-sample limit in seconds (upstream `--min_time_limit`).
    #[arg(long, default_value_t = 1.0)]
    pub min_time_limit: f64,
    /// Base per-sample limit in seconds; the limit is max(this, min-time-limit, GT time) + 1.
    #[arg(long, env = "BIGCODEBENCH_TIMEOUT_PER_TASK", default_value_t = bcb_eval::limits::DEFAULT_BASE_TIMEOUT)]
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
    /// Evaluate again even if the results file exists (the old one is kept as .bak).
    #[arg(long)]
    pub force: bool,
    /// Python interpreter of the evaluation environment.
    #[arg(long, env = "BCB_PYTHON")]
    pub python: Option<PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// With --model: generate (and sanitize) only, do not execute.
    #[arg(long)]
    pub no_execute: bool,
    /// Without --samples: generate them first with these model flags (as the original does).
    #[command(
        flatten,
        next_help_heading = "Generation (when --model is given instead of --samples)"
    )]
    pub generation: super::generate::ModelArgs,
}

fn parse_ids(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.chars().all(|c| c.is_ascii_digit()) {
                format!("BigCodeBench/{s}")
            } else {
                s.to_string()
            }
        })
        .collect()
}

fn parse_pass_k(s: &str) -> anyhow::Result<Vec<u64>> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|k| match k.parse::<u64>() {
            Ok(v) if v > 0 => Ok(v),
            _ => bail!("--pass-k: `{k}` is not a positive integer (expected e.g. 1,5,10)"),
        })
        .collect()
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.execution != "local" {
        bail!(
            "--execution {}: only `local` is available in this version; run without it to evaluate on this machine",
            args.execution
        );
    }
    let calibrated = args.calibrated && !args.no_calibrated;
    let save_pass_rate = args.save_pass_rate && !args.no_save_pass_rate;
    let pass_k = parse_pass_k(&args.pass_k)?;
    let generate = args.samples.is_none() && !args.check_gt_only && args.generation.model.is_some();
    if args.samples.is_none() && !args.check_gt_only && !generate {
        bail!("--samples is required (or --model to generate them first, or --check-gt-only to check the ground truth)");
    }
    if let Some(s) = &args.samples {
        if !s.exists() {
            bail!("samples {} do not exist", s.display());
        }
        if s.is_file() && !s.to_string_lossy().ends_with(".jsonl") {
            bail!(
                "samples file {} must end in .jsonl (or be a directory)",
                s.display()
            );
        }
    }
    let progress = Progress::new(!args.quiet);
    let mut ds = args.dataset.spec().load()?;
    let ids = parse_ids(&args.ids);
    if !ids.is_empty() {
        ds.retain_ids(&ids)?;
    }
    // As the original: without --samples, generate them first (only for the selected tasks).
    let samples = if generate {
        let opts = args.generation.options(args.split, ds.subset)?;
        let path = bcb_generate::generate_samples(&opts, &ds)?;
        eprintln!("samples: {}", path.display());
        if args.no_execute {
            println!("{}", path.display());
            return Ok(ExitCode::SUCCESS);
        }
        Some(path)
    } else {
        args.samples.clone()
    };
    // Read and check the samples before starting anything expensive.
    let prepared = match &samples {
        Some(path) => Some(bcb_eval::PreparedSamples::read(&ds, path, calibrated)?),
        None => None,
    };
    let python = pyenv::resolve_python(args.python.as_deref())?;
    let parallel = if args.parallel < 1 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        args.parallel as usize
    };
    let config = ExecConfig {
        python,
        parallel,
        limits: Limits {
            max_as_mb: args.max_as_limit,
            max_data_mb: args.max_data_limit,
            max_stack_mb: args.max_stack_limit,
            memory_mb: args.memory_limit,
            max_processes: args.max_processes,
            output_cap_bytes: args.output_cap,
            kill_grace: std::time::Duration::from_secs_f64(args.kill_grace.max(0.0)),
        },
    };
    let executor = bcb_execute::executor_for(&args.executor, config)
        .with_context(|| format!("cannot start the `{}` executor", args.executor))?;
    if !args.quiet {
        eprintln!(
            "{} {} tasks ({} {}), executor {} x{parallel}: {}",
            if args.check_gt_only {
                "checking"
            } else {
                "evaluating"
            },
            ds.len(),
            ds.subset,
            ds.version,
            executor.name(),
            executor.protections().join(", ")
        );
    }

    let task_ids: Vec<&str> = ds.tasks().iter().map(|t| t.task_id.as_str()).collect();
    let gt = if args.no_gt && !args.check_gt_only {
        GroundTruth::none()
    } else {
        let cache_file = ground_truth::cache_path(&bcb_dataset::cache_dir(), &ds);
        ground_truth::ensure(
            &ds,
            executor.as_ref(),
            &GtOptions {
                cache_file,
                recompute: args.check_gt_only,
                min_time_limit: args.min_time_limit,
                base_timeout: args.timeout,
                progress: &progress,
            },
        )?
    };
    let title = format!(
        "BigCodeBench-{} ({})",
        capitalize(args.split.as_str()),
        capitalize(ds.subset.as_str())
    );
    if args.check_gt_only {
        print_gt(&gt, &task_ids);
        return Ok(ExitCode::SUCCESS);
    }
    let prepared = prepared.expect("samples are required unless --check-gt-only");
    let report = bcb_eval::evaluate_samples(
        &ds,
        &prepared,
        executor.as_ref(),
        &gt,
        &EvalOptions {
            split: args.split,
            calibrated,
            pass_k,
            min_time_limit: args.min_time_limit,
            base_timeout: args.timeout,
            no_gt: args.no_gt,
            force: args.force,
            progress: &progress,
        },
    )?;
    println!("{title}");
    if args.no_gt {
        println!("Groundtruth is not checked");
    } else {
        print_gt(&gt, &task_ids);
    }
    for (k, v) in &report.pass_at_k {
        if k.starts_with("pass@") {
            println!("{k}:\t{:.3}", v.as_f64().unwrap_or(0.0));
        }
    }
    println!("results: {}", report.results_path.display());
    if save_pass_rate {
        println!("pass@k:  {}", report.pass_at_k_path.display());
    } else {
        std::fs::remove_file(&report.pass_at_k_path).ok();
    }
    Ok(ExitCode::SUCCESS)
}

fn print_gt(gt: &GroundTruth, task_ids: &[&str]) {
    let rate = gt.pass_rate(task_ids.iter().copied());
    println!("Groundtruth pass rate: {rate:.3}");
    if rate <= 0.99 {
        println!("Please be cautious!");
    }
    let failed = gt.failed(task_ids.iter().copied());
    if !failed.is_empty() {
        println!("Failed tasks ({}):", failed.len());
        for id in &failed {
            let why = gt
                .entry(id)
                .map(ground_truth::failure_summary)
                .unwrap_or_else(|| "not run".into());
            println!("  {id}: {why}");
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}
