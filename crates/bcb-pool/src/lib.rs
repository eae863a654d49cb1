//! The local executors and the scheduler they share: [`ProcessExecutor`] starts a fresh
//! sandboxed interpreter per sample; [`PoolExecutor`] keeps pre-warmed interpreters (forked
//! from a zygote) and forks one child per sample. Both run samples in `bcb-sandbox`'s
//! sandbox, admitted by one queue (`schedule`) whose governor (`freeze`) weighs, freezes and
//! thaws what overlaps the CPU-bound samples.

mod freeze;
mod pool;
mod process;
mod procfs;
mod route;
mod schedule;
mod slot;
mod targets;
mod zygote;

pub use pool::PoolExecutor;
pub use process::ProcessExecutor;
pub use schedule::default_max_in_flight;
