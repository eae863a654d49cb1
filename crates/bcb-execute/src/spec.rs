//! Which backend a run uses, as one value the CLI builds and the session never inspects.

use std::fmt;
use std::path::{Path, PathBuf};

use bcb_executor::{ExecConfig, ExecError, Executor, LocalKind};
use bcb_pool::{PoolExecutor, ProcessExecutor};
use bcb_remote::e2b::{E2bBackend, E2bOptions};
use bcb_remote::gradio::{GradioBackend, GradioOptions};
use bcb_remote::Chunked;

/// The backend of a run: the only place that knows them all. A new backend is a folder
/// beside `local/`, `gradio/` and `e2b/`, an arm here, and its flags.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutorSpec {
    /// This machine, sandboxed.
    Local(LocalKind),
    /// A BigCodeBench evaluator Space, `chunk` jobs per request.
    Gradio { opts: GradioOptions, chunk: usize },
    /// An E2B sandbox running bcb's local executor, `chunk` jobs per request.
    E2b { opts: E2bOptions, chunk: usize },
}

/// The environment verdicts come from: the interpreter a local backend runs (none remotely)
/// and the key that names it in every cache and journal key.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub python: PathBuf,
    pub key: String,
}

impl ExecutorSpec {
    /// Builds the executor. A Gradio Space is contacted now (its API found and checked); an
    /// E2B sandbox is created at the first chunk.
    pub fn build(&self, cfg: ExecConfig) -> anyhow::Result<Box<dyn Executor>> {
        let hint = |e: ExecError| match e.hint() {
            Some(h) => anyhow::anyhow!("{e}\nhint: {h}"),
            None => anyhow::anyhow!("{e}"),
        };
        Ok(match self {
            ExecutorSpec::Local(LocalKind::Pool) => Box::new(PoolExecutor::new(cfg)?),
            ExecutorSpec::Local(LocalKind::Process) => Box::new(ProcessExecutor::new(cfg)?),
            ExecutorSpec::Gradio { opts, chunk } => Box::new(Chunked {
                backend: GradioBackend::connect(opts.clone(), &cfg.limits).map_err(hint)?,
                chunk: *chunk,
            }),
            ExecutorSpec::E2b { opts, chunk } => Box::new(Chunked {
                backend: E2bBackend::new(opts.clone(), &cfg).map_err(hint)?,
                chunk: *chunk,
            }),
        })
    }

    /// The environment behind the verdicts: the local eval env (`python`, else the managed
    /// one), or the remote backend and where it is (no local Python needed).
    pub fn runtime(&self, python: Option<&Path>) -> anyhow::Result<Runtime> {
        Ok(match self {
            ExecutorSpec::Local(_) => {
                let python = bcb_sandbox::env::resolve_python(python)?;
                Runtime {
                    key: bcb_sandbox::env::runtime_key(&python),
                    python,
                }
            }
            remote => Runtime {
                python: PathBuf::new(),
                key: remote.to_string(),
            },
        })
    }

    /// Whether this backend's verdicts may enter (and come from) the local verdict cache:
    /// only the local backend's; another environment produced a remote one.
    pub fn caches_verdicts(&self) -> bool {
        matches!(self, ExecutorSpec::Local(_))
    }
}

impl fmt::Display for ExecutorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecutorSpec::Local(kind) => write!(f, "local ({kind})"),
            ExecutorSpec::Gradio { opts, .. } => write!(f, "gradio ({})", opts.endpoint),
            ExecutorSpec::E2b { opts, .. } => {
                write!(
                    f,
                    "e2b ({} at {}, {})",
                    opts.template, opts.api_url, opts.executor
                )
            }
        }
    }
}
