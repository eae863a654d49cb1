//! Execution of samples against their unittest suites.
//!
//! The orchestrator (`bcb-eval`) builds [`Job`]s and hands them to an [`Executor`];
//! backends decide how to isolate and how many run at once.
//!
//! Both backends drive the same Python harness (`src/local/harness.py`, embedded): a supervisor
//! that forks one child per sample; the child isolates itself (PID/mount/net/IPC/UTS
//! namespaces, read-only filesystem with private tmpfs, cgroups, no capabilities, or
//! Landlock + seccomp + rlimits where namespaces are not permitted) and then runs the sample
//! with bigcodebench 0.2.5's verdict rules. [`ProcessExecutor`] starts a fresh interpreter
//! per sample; [`PoolExecutor`] keeps one pre-warmed interpreter per worker and forks it.
//! `BCB_SANDBOX=basic` forces the degraded level, `BCB_SANDBOX=none` turns the kernel
//! protections off (rlimits, process-group kill and the environment allow-list stay).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod local;

pub use local::{
    host_isolation, landlock_abi, Isolation, PoolExecutor, ProcessExecutor, Protection,
};

/// One program to run: `code + "\n" + test`, executed as module `__test__`,
/// then `TestCases` loaded and run with unittest.
#[derive(Debug, Clone)]
pub struct Job {
    /// Caller's handle (index into its own table); returned untouched.
    pub key: usize,
    pub task_id: String,
    /// The code under test (calibration already applied by the caller).
    pub code: String,
    /// The task's unittest source (defines `TestCases`).
    pub test: String,
    pub entry_point: String,
    /// The in-sample alarm for the suite (upstream: max(240, min_time_limit, gt) + 1).
    pub time_limit: Duration,
    /// Ground-truth test time, when known: used for scheduling (longest first).
    pub expected_secs: Option<f64>,
}

/// Resource limits applied to every sample.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Limits {
    /// Address-space limit in MB (upstream `--max_as_limit`, default 30 GiB); 0 = none.
    pub max_as_mb: u64,
    /// Data-segment limit in MB (upstream `--max_data_limit`); 0 = none.
    pub max_data_mb: u64,
    /// Stack limit in MB (upstream `--max_stack_limit`, default 10); 0 = none.
    pub max_stack_mb: u64,
    /// Memory cap in MB for the whole sample (cgroup where available); 0 = none.
    pub memory_mb: u64,
    /// Max processes/threads per sample; 0 = none.
    pub max_processes: u64,
    /// Bytes of stdout/stderr kept per sample; the rest is drained and dropped.
    pub output_cap_bytes: usize,
    /// Extra time after `time_limit` before the sample's processes are killed.
    pub kill_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_as_mb: 30 * 1024,
            max_data_mb: 30 * 1024,
            max_stack_mb: 10,
            memory_mb: 8 * 1024,
            max_processes: 256,
            output_cap_bytes: 64 * 1024,
            kill_grace: Duration::from_secs(1),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Timeout,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Timeout => "timeout",
        }
    }
}

/// What happened to one job, in upstream's terms plus timings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub status: Status,
    /// Failing/erroring test method name -> traceback (failures first, then errors, as
    /// unittest lists them); `"ALL"` -> exception text when the module itself raised.
    pub details: serde_json::Map<String, serde_json::Value>,
    /// Wall time of `suite.run` when the suite ran to the end.
    pub test_secs: Option<f64>,
    /// Wall time of the whole job as seen by the executor.
    pub wall_secs: f64,
    /// Executor-side remark (killed by signal, out of memory, integrity check...), not in upstream files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Interpreter and limits every backend needs.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// Python interpreter of the evaluation environment.
    pub python: PathBuf,
    /// Samples running at once (CPU-bound); backends may overlap more when idle.
    pub parallel: usize,
    pub limits: Limits,
}

/// A way to run jobs. Implementations: fresh process per sample, pre-warmed pool.
pub trait Executor: Send + Sync {
    /// Short name for messages (`process`, `pool`).
    fn name(&self) -> &'static str;

    /// Runs every job; `done` is called (from any thread) as each finishes.
    /// Jobs come in the caller's preferred order (longest expected first).
    fn run(&self, jobs: Vec<Job>, done: &(dyn Fn(Job, Outcome) + Sync)) -> anyhow::Result<()>;

    /// The protections in force (namespaces, cgroups, rlimits...), for `env check` and logs.
    fn protections(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Builds the executor named `kind`: `process` (fresh interpreter per sample) or `pool`
/// (pre-warmed interpreters that fork one sandboxed child per sample).
pub fn executor_for(kind: &str, cfg: ExecConfig) -> anyhow::Result<Box<dyn Executor>> {
    match kind {
        "process" => Ok(Box::new(ProcessExecutor::new(cfg)?)),
        "pool" => Ok(Box::new(PoolExecutor::new(cfg)?)),
        other => anyhow::bail!("unknown executor `{other}`: expected `pool` or `process`"),
    }
}

/// Like [`executor_for`] with an explicit isolation level.
pub fn executor_with(
    kind: &str,
    cfg: ExecConfig,
    iso: Isolation,
) -> anyhow::Result<Box<dyn Executor>> {
    match kind {
        "process" => Ok(Box::new(ProcessExecutor::with_isolation(cfg, iso)?)),
        "pool" => Ok(Box::new(PoolExecutor::with_isolation(cfg, iso)?)),
        other => anyhow::bail!("unknown executor `{other}`: expected `pool` or `process`"),
    }
}

/// The protections samples would get on this host with `cfg`, one line each.
pub fn probe_protections(cfg: &ExecConfig) -> Vec<String> {
    host_isolation().describe(cfg)
}
