//! `bcb exec-jobs` (hidden): the sandbox side of `--execution e2b`. Runs a file of jobs with
//! the local executor and writes one result per job; every setting comes as a flag.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bcb_envvars::EnvVars;
use bcb_execute::{e2b::wire, ExecConfig, ExecutorSpec, Limits, LocalKind};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The jobs (JSONL, as `--execution e2b` uploads them).
    #[arg(long)]
    pub jobs: PathBuf,
    /// Where to write one result per job (JSONL).
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, default_value = "pool", env = EnvVars::BCB_EXECUTOR)]
    pub executor: LocalKind,
    /// 0 = the number of cores.
    #[arg(long, default_value_t = 0)]
    pub parallel: usize,
    #[arg(long, default_value_t = 0)]
    pub max_in_flight: usize,
    #[arg(long)]
    pub max_as_limit: u64,
    #[arg(long)]
    pub max_data_limit: u64,
    #[arg(long)]
    pub max_stack_limit: u64,
    #[arg(long)]
    pub memory_limit: u64,
    #[arg(long)]
    pub max_processes: u64,
    #[arg(long)]
    pub output_cap: usize,
    #[arg(long)]
    pub kill_grace: f64,
    /// What a reward hack the harness's watch detects gets (`fail`, `flag`, `off`).
    #[arg(long, default_value = "fail")]
    pub hack_policy: bcb_execute::HackPolicy,
    #[arg(long, env = EnvVars::BCB_PYTHON)]
    pub python: Option<PathBuf>,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let spec = ExecutorSpec::Local(a.executor);
    let runtime = spec.runtime(a.python.as_deref())?;
    let parallel = match a.parallel {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let executor = spec.build(ExecConfig {
        python: runtime.python,
        parallel,
        max_in_flight: a.max_in_flight,
        limits: Limits {
            max_as_mb: a.max_as_limit,
            max_data_mb: a.max_data_limit,
            max_stack_mb: a.max_stack_limit,
            memory_mb: a.memory_limit,
            max_processes: a.max_processes,
            output_cap_bytes: a.output_cap,
            kill_grace: Duration::from_secs_f64(a.kill_grace.max(0.0)),
        },
        hacks: a.hack_policy,
    })?;
    let n = wire::run_jobs_file(executor.as_ref(), &a.jobs, &a.out)?;
    eprintln!("exec-jobs: {n} result(s) in {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}
