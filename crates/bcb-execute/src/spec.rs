//! Which backend a run uses, as one value the CLI builds and the session never inspects.

use std::fmt;
use std::str::FromStr;

use crate::{ExecConfig, Executor, PoolExecutor, ProcessExecutor};

/// How the local backend runs each sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LocalKind {
    /// Pre-warmed interpreters that fork one sandboxed child per sample.
    #[default]
    Pool,
    /// A fresh interpreter per sample (same sandbox).
    Process,
}

impl FromStr for LocalKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s {
            "pool" => Ok(LocalKind::Pool),
            "process" => Ok(LocalKind::Process),
            other => anyhow::bail!("unknown executor `{other}`: expected `pool` or `process`"),
        }
    }
}

impl fmt::Display for LocalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LocalKind::Pool => "pool",
            LocalKind::Process => "process",
        })
    }
}

/// The backend of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecutorSpec {
    /// This machine, sandboxed.
    Local(LocalKind),
}

impl ExecutorSpec {
    pub fn build(&self, cfg: ExecConfig) -> anyhow::Result<Box<dyn Executor>> {
        Ok(match self {
            ExecutorSpec::Local(LocalKind::Pool) => Box::new(PoolExecutor::new(cfg)?),
            ExecutorSpec::Local(LocalKind::Process) => Box::new(ProcessExecutor::new(cfg)?),
        })
    }
}

impl fmt::Display for ExecutorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecutorSpec::Local(kind) => write!(f, "local ({kind})"),
        }
    }
}
