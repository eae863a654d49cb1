//! The local backend: samples run on this machine under the Python harness (`harness/`,
//! embedded), in a sandbox per sample. [`ProcessExecutor`] starts a fresh interpreter per
//! sample; [`PoolExecutor`] keeps pre-warmed interpreters and forks one child per sample.
//! [`env`] manages the Python evaluation environment those interpreters come from.

mod cgroups;
pub mod env;
mod freeze;
mod launch;
mod move_lock;
mod pool;
mod process;
mod procfs;
mod protection;
mod route;
mod sandbox;
mod schedule;
mod slot;
mod verdict;
mod wire;
mod workroot;
mod zygote;

pub(crate) use cgroups::teardown;
pub use pool::PoolExecutor;
pub use process::ProcessExecutor;
pub use protection::{Protection, ProtectionKind};
pub use sandbox::{host_isolation, landlock_abi, Isolation};
pub use schedule::default_max_in_flight;
pub use verdict::{INTEGRITY_FAILED, MEMORY_LIMIT};
pub(crate) use workroot::remove_live as remove_work_roots;
