//! The local backend: samples run on this machine under the Python harness (`harness.py`,
//! embedded), in a sandbox per sample. [`ProcessExecutor`] starts a fresh interpreter per
//! sample; [`PoolExecutor`] keeps pre-warmed interpreters and forks one child per sample.
//! [`env`] manages the Python evaluation environment those interpreters come from.

pub mod env;
mod freeze;
mod launch;
mod pool;
mod process;
mod procfs;
mod sandbox;
mod schedule;
mod slot;
mod verdict;
mod wire;
mod zygote;

pub use pool::PoolExecutor;
pub use process::ProcessExecutor;
pub(crate) use sandbox::teardown;
pub use sandbox::{host_isolation, landlock_abi, Isolation, Protection, ProtectionKind};
pub use schedule::default_max_in_flight;
pub use verdict::{INTEGRITY_FAILED, MEMORY_LIMIT};
