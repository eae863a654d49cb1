//! Where a cgroup version keeps what bcb reads and writes: the one place that names cgroup
//! files. [`V1`] is the layout of the v1 hierarchies bcb uses today (a folder per controller);
//! a unified v2 hierarchy (one folder, `cgroup.freeze`, `cpu.weight`, `memory.max`) is a
//! second implementation of [`CgroupLayout`], and nothing outside this module changes.

use std::io;
use std::path::{Path, PathBuf};

/// One cgroup version's files, for a sample's cgroup folder `dir`.
pub trait CgroupLayout: Send + Sync {
    /// The file a process is moved in by writing its pid (the members, one pid a line).
    fn procs(&self, dir: &Path) -> PathBuf;
    /// The file listing every thread of the members.
    fn threads(&self, dir: &Path) -> PathBuf;
    /// Caps the memory of the members, swap excluded (a bomb must not outlive the cap).
    fn limit_memory(&self, dir: &Path, bytes: u64);
    /// Caps the processes and threads of the members.
    fn limit_pids(&self, dir: &Path, max: u64);
    /// Whether `dir` is a freezer (it holds the freezer's state).
    fn is_freezer(&self, dir: &Path) -> bool;
    /// Freezes or thaws every member (a frozen process takes no signal, not even SIGKILL).
    fn set_frozen(&self, dir: &Path, frozen: bool) -> io::Result<()>;
    /// The members' CPU weight against their siblings, in v1 shares (the kernel's default
    /// is 1024).
    fn set_cpu_shares(&self, dir: &Path, shares: u32) -> io::Result<()>;
}

/// The v1 hierarchies: `memory`, `pids`, `freezer` and `cpu` mounted apart.
#[derive(Debug, Clone, Copy, Default)]
pub struct V1;

impl CgroupLayout for V1 {
    fn procs(&self, dir: &Path) -> PathBuf {
        dir.join("cgroup.procs")
    }

    fn threads(&self, dir: &Path) -> PathBuf {
        dir.join("tasks")
    }

    fn limit_memory(&self, dir: &Path, bytes: u64) {
        let _ = std::fs::write(dir.join("memory.limit_in_bytes"), bytes.to_string());
        let _ = std::fs::write(dir.join("memory.swappiness"), "0");
    }

    fn limit_pids(&self, dir: &Path, max: u64) {
        let _ = std::fs::write(dir.join("pids.max"), max.to_string());
    }

    fn is_freezer(&self, dir: &Path) -> bool {
        dir.join("freezer.state").exists()
    }

    fn set_frozen(&self, dir: &Path, frozen: bool) -> io::Result<()> {
        let state = if frozen { "FROZEN" } else { "THAWED" };
        std::fs::write(dir.join("freezer.state"), state)
    }

    fn set_cpu_shares(&self, dir: &Path, shares: u32) -> io::Result<()> {
        std::fs::write(dir.join("cpu.shares"), shares.to_string())
    }
}

/// The layout of the hierarchies bcb makes its cgroups in.
pub fn layout() -> &'static dyn CgroupLayout {
    &V1
}
