//! The flags of `bcb evaluate` (what clap parses); `evaluate.rs` maps them onto a plan, an
//! executor and sinks, `remote.rs` onto the backend.

use std::path::PathBuf;

use bcb_dataset::Split;
use bcb_envvars::EnvVars;
use bcb_execute::{gradio, remote::DEFAULT_CHUNK, LocalKind};
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
    #[arg(long, value_enum, default_value = "local")]
    pub execution: Execution,
    #[command(
        flatten,
        next_help_heading = "Remote execution (--execution gradio|e2b)"
    )]
    pub remote: RemoteArgs,
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
    #[command(flatten)]
    pub verdict: super::limit_flags::VerdictArgs,
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
    #[command(flatten)]
    pub reuse: super::reuse_flags::ReuseArgs,
    /// Python interpreter of the evaluation environment.
    #[arg(long, env = EnvVars::BCB_PYTHON)]
    pub python: Option<PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Seconds between progress lines when stderr is not a terminal (logs, CI, nohup).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = crate::common::parse_interval)]
    pub progress_interval: std::time::Duration,
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

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum Execution {
    Local,
    Gradio,
    E2b,
}

#[derive(clap::Args, Debug, Clone)]
pub struct RemoteArgs {
    /// The Gradio evaluator Space for `--execution gradio` (`HF_TOKEN` is sent as a bearer token).
    #[arg(long, visible_alias = "gradio_endpoint", default_value = gradio::DEFAULT_ENDPOINT, value_name = "URL")]
    pub gradio_endpoint: String,
    /// The E2B sandbox template for `--execution e2b` (needs E2B_API_KEY).
    #[arg(
        long,
        visible_alias = "e2b_endpoint",
        default_value = "bigcodebench_evaluator",
        value_name = "TEMPLATE"
    )]
    pub e2b_endpoint: String,
    /// Tries of each remote HTTP step on connection errors and busy servers (backoff from 1 s).
    #[arg(long, default_value_t = 8)]
    pub remote_retries: usize,
    /// Jobs per remote request: a killed run loses at most one chunk in flight.
    #[arg(long, default_value_t = DEFAULT_CHUNK, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub remote_chunk: usize,
}
