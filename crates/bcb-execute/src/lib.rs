//! Which executor a run uses, and the one door to all of them.
//!
//! The contract every backend keeps (jobs, verdicts, errors, the [`Executor`] trait) is
//! `bcb-executor`'s and is re-exported here. The backends are crates of their own:
//! `bcb-sandbox` (one sample's sandbox and the Python harness), `bcb-pool` (the local
//! executors and their scheduler) and `bcb-remote` (the [`gradio`] and [`e2b`] clients).
//! [`ExecutorSpec`] names the backend of a run and builds it; [`stop`] ends whatever runs.

mod spec;
pub mod stop;

pub use bcb_executor::*;
pub use bcb_pool::{default_max_in_flight, process_tree_cpu_secs, PoolExecutor, ProcessExecutor};
pub use bcb_remote::{e2b, gradio};
pub use bcb_sandbox::{
    host_isolation, landlock_abi, CgroupVersion, Isolation, Platform, Protection, ProtectionKind,
};
pub use spec::{ExecutorSpec, Runtime};

/// The chunking every remote backend shares.
pub mod remote {
    pub use bcb_remote::{Chunked, JobResults, RemoteBackend, DEFAULT_CHUNK};
}

/// The local backend's Python evaluation environment.
pub mod local {
    pub use bcb_sandbox::env;
}

/// Builds the local executor of `kind`.
pub fn executor_for(kind: LocalKind, cfg: ExecConfig) -> anyhow::Result<Box<dyn Executor>> {
    ExecutorSpec::Local(kind).build(cfg)
}

/// Like [`executor_for`] with an explicit isolation level.
pub fn executor_with(
    kind: LocalKind,
    cfg: ExecConfig,
    iso: Isolation,
) -> anyhow::Result<Box<dyn Executor>> {
    Ok(match kind {
        LocalKind::Process => Box::new(ProcessExecutor::with_isolation(cfg, iso)?),
        LocalKind::Pool => Box::new(PoolExecutor::with_isolation(cfg, iso)?),
    })
}

/// The verdict cache's sandbox key on this host with `cfg` ([`Isolation::cache_key`]).
pub fn sandbox_key(cfg: &ExecConfig) -> String {
    host_isolation().cache_key(cfg)
}
