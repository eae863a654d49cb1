//! One sample's sandbox on this machine: what the host allows ([`Isolation`], probed once),
//! the protections that gives ([`Protection`]), the cgroups a sample is held in, its work
//! folder, the embedded Python harness that applies the sandbox and runs the tests
//! (`harness/`), the wire between bcb and that harness, and the rules that turn the
//! harness's report into a verdict. Which process runs where, and when, is `bcb-pool`'s.
//! [`env`] manages the Python evaluation environment the harness runs in.

pub mod cgroups;
pub mod env;
pub mod isolation;
pub mod launch;
mod move_lock;
pub mod platform;
pub mod protection;
pub mod verdict_rules;
pub mod wire;
pub mod workroot;

pub use cgroups::teardown;
pub use isolation::{host_isolation, landlock_abi, Isolation};
pub use platform::{CgroupVersion, Platform};
pub use protection::{Protection, ProtectionKind};
pub use workroot::remove_live as remove_work_roots;
