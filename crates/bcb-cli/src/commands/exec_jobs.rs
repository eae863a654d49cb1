//! `bcb exec-jobs` (hidden): the sandbox side of `--execution e2b`. Runs a file of jobs with
//! the local executor and writes one result per job; every setting comes as a flag.

use std::path::PathBuf;
use std::process::ExitCode;

use bcb_envvars::EnvVars;
use bcb_execute::{e2b::wire, ExecConfig, ExecutorSpec, LocalKind};

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
    #[command(flatten)]
    pub limits: super::limit_flags::LimitArgs,
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
        limits: a.limits.limits(),
        hacks: a.hack_policy,
    })?;
    let n = wire::run_jobs_file(executor.as_ref(), &a.jobs, &a.out)?;
    eprintln!("exec-jobs: {n} result(s) in {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}
