//! Where a cgroup version keeps what bcb reads and writes: the one place that names cgroup
//! files. [`V1`]: a folder per controller in the v1 hierarchies; [`V2`]: one folder per slot
//! in the unified hierarchy's subtree bcb may write (`delegated.rs`). The harness's
//! counterpart is `bcb_harness/cgroupfs.py`.

use std::io;
use std::path::{Path, PathBuf};

use crate::platform::CgroupVersion;

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
    /// Freezes or thaws every member (on v1 a frozen process takes no signal, not even
    /// SIGKILL; on v2 a fatal signal still kills).
    fn set_frozen(&self, dir: &Path, frozen: bool) -> io::Result<()>;
    /// Whether every member is stopped (freezing is asynchronous: asked, then done).
    fn is_frozen(&self, dir: &Path) -> bool;
    /// The members' CPU weight against their siblings, in v1 shares (the kernel's default
    /// is 1024).
    fn set_cpu_shares(&self, dir: &Path, shares: u32) -> io::Result<()>;
    /// Where a slot's supervisor goes back to after warming up in its sample's freezer
    /// cgroup `freezer` (it must be out before a sample runs there).
    fn supervisor_home(&self, freezer: &Path) -> PathBuf;
}

/// One cgroup version's file names and values (the two differ in nothing else).
#[derive(Debug)]
pub struct Files {
    threads: &'static str,
    memory_max: &'static str,
    /// The file and value that keep the members out of swap.
    no_swap: (&'static str, &'static str),
    /// The freezer's file, its values for frozen and thawed, and what it reads once frozen.
    freeze: (&'static str, &'static str, &'static str),
    /// The file that says whether the members are all stopped, and its line then.
    frozen: (&'static str, &'static str),
    cpu_weight: &'static str,
    /// From v1 `cpu.shares` to this version's weight.
    weight_of_shares: fn(u32) -> u32,
    /// The supervisor's cgroup to go back to, for a slot's freezer cgroup.
    home_of_freezer: fn(&Path) -> PathBuf,
}

/// The v1 hierarchies: `memory`, `pids`, `freezer` and `cpu` mounted apart.
pub const V1: Files = Files::of(false);
/// The unified hierarchy: each slot's one folder holds its limits, weight and freezer.
pub const V2: Files = Files::of(true);

impl Files {
    /// Each version's name beside the other's: v2's, else v1's.
    const fn of(v2: bool) -> Files {
        const fn pick(v2: bool, v2_name: &'static str, v1_name: &'static str) -> &'static str {
            if v2 {
                v2_name
            } else {
                v1_name
            }
        }
        Files {
            threads: pick(v2, "cgroup.threads", "tasks"),
            memory_max: pick(v2, "memory.max", "memory.limit_in_bytes"),
            no_swap: (pick(v2, "memory.swap.max", "memory.swappiness"), "0"),
            freeze: if v2 {
                ("cgroup.freeze", "1", "0")
            } else {
                ("freezer.state", "FROZEN", "THAWED")
            },
            frozen: if v2 {
                ("cgroup.events", "frozen 1")
            } else {
                ("freezer.state", "FROZEN")
            },
            cpu_weight: pick(v2, "cpu.weight", "cpu.shares"),
            weight_of_shares: if v2 { cpu_weight } else { same_shares },
            home_of_freezer: if v2 { own_cgroup_home } else { freezer_root },
        }
    }
}

fn same_shares(shares: u32) -> u32 {
    shares
}

/// v1: the freezer hierarchy's root (membership there constrains nothing).
fn freezer_root(freezer: &Path) -> PathBuf {
    freezer.parent().unwrap_or(freezer).to_path_buf()
}

/// v2: not the slots' parent (below the root it may hold no process once its controllers are
/// on), but bcb's own cgroup (the leaf `delegated.rs` moved it to, or its scope).
fn own_cgroup_home(_freezer: &Path) -> PathBuf {
    super::delegated::own_v2_cgroup()
}

/// `cpu.weight` for v1 `cpu.shares`: the defaults (1024 and 100) match, in proportion.
pub fn cpu_weight(shares: u32) -> u32 {
    ((u64::from(shares) * 100 + 512) / 1024).clamp(1, 10_000) as u32
}

impl CgroupLayout for Files {
    fn procs(&self, dir: &Path) -> PathBuf {
        dir.join("cgroup.procs")
    }

    fn threads(&self, dir: &Path) -> PathBuf {
        dir.join(self.threads)
    }

    fn limit_memory(&self, dir: &Path, bytes: u64) {
        let _ = std::fs::write(dir.join(self.memory_max), bytes.to_string());
        let _ = std::fs::write(dir.join(self.no_swap.0), self.no_swap.1);
    }

    fn limit_pids(&self, dir: &Path, max: u64) {
        let _ = std::fs::write(dir.join("pids.max"), max.to_string());
    }

    fn is_freezer(&self, dir: &Path) -> bool {
        dir.join(self.freeze.0).exists()
    }

    fn set_frozen(&self, dir: &Path, frozen: bool) -> io::Result<()> {
        let (file, on, off) = self.freeze;
        std::fs::write(dir.join(file), if frozen { on } else { off })
    }

    fn is_frozen(&self, dir: &Path) -> bool {
        let (file, line) = self.frozen;
        std::fs::read_to_string(dir.join(file)).is_ok_and(|s| s.lines().any(|l| l == line))
    }

    fn set_cpu_shares(&self, dir: &Path, shares: u32) -> io::Result<()> {
        let weight = (self.weight_of_shares)(shares);
        std::fs::write(dir.join(self.cpu_weight), weight.to_string())
    }

    fn supervisor_home(&self, freezer: &Path) -> PathBuf {
        (self.home_of_freezer)(freezer)
    }
}

/// The layout of the hierarchies bcb makes its cgroups in: v2 where /sys/fs/cgroup is the
/// unified hierarchy alone, else v1 (a hybrid host's v2 mount has no controllers to give).
pub fn layout() -> &'static dyn CgroupLayout {
    static VERSION: std::sync::OnceLock<CgroupVersion> = std::sync::OnceLock::new();
    match VERSION.get_or_init(CgroupVersion::of_host) {
        CgroupVersion::V2 => &V2,
        CgroupVersion::V1 | CgroupVersion::None => &V1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_weights_keep_the_shares_proportions() {
        assert_eq!(cpu_weight(1024), 100, "the defaults match");
        assert_eq!(cpu_weight(16), 2);
        assert_eq!(cpu_weight(2), 1, "never below the kernel's minimum");
        assert_eq!(cpu_weight(262_144), 10_000, "nor above its maximum");
    }

    /// A unified hierarchy this process may write: /sys/fs/cgroup on a v2 host, the hybrid
    /// one's v2 mount beside the v1 hierarchies (no controllers there, but `cgroup.freeze`).
    fn writable_cgroup2() -> Option<PathBuf> {
        ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| {
                p.join("cgroup.procs").exists()
                    && !p.join("tasks").exists()
                    && std::fs::create_dir(p.join(format!("bcb-probe-{}", std::process::id())))
                        .and_then(|_| {
                            std::fs::remove_dir(p.join(format!("bcb-probe-{}", std::process::id())))
                        })
                        .is_ok()
            })
    }

    /// The v2 layout on the kernel's own cgroup2: a member is listed, frozen (its CPU time
    /// stops), thawed, and killed while frozen (v2 lets a fatal signal through).
    #[test]
    fn the_v2_layout_freezes_thaws_and_lists_a_real_cgroup2() {
        let Some(root) = writable_cgroup2() else {
            return; // needs root, or a delegated subtree
        };
        let dir = root.join(format!("bcb-{}-wtest-v2", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let mut spinner = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let pid = spinner.id().to_string();
        std::fs::write(V2.procs(&dir), &pid).unwrap();
        let listed = |file: PathBuf| std::fs::read_to_string(file).unwrap();
        assert_eq!(listed(V2.procs(&dir)).trim(), pid);
        assert!(listed(V2.threads(&dir)).contains(&pid));
        assert!(V2.is_freezer(&dir) && !V2.is_frozen(&dir));
        let cpu_ticks = || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            let fields: Vec<u64> = stat
                .rsplit(')')
                .next()
                .unwrap()
                .split_whitespace()
                .skip(11)
                .take(2)
                .map(|f| f.parse().unwrap())
                .collect();
            fields[0] + fields[1]
        };
        V2.set_frozen(&dir, true).unwrap();
        let asked = std::time::Instant::now();
        while !V2.is_frozen(&dir) {
            assert!(asked.elapsed().as_secs() < 10, "the spinner froze");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let frozen_at = cpu_ticks();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(cpu_ticks(), frozen_at, "a frozen member gets no CPU");
        V2.set_frozen(&dir, false).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(
            !V2.is_frozen(&dir) && cpu_ticks() > frozen_at,
            "thawed, it runs"
        );
        V2.set_frozen(&dir, true).unwrap();
        spinner.kill().unwrap();
        assert!(
            spinner.wait().unwrap().code().is_none(),
            "killed while frozen"
        );
        std::fs::remove_dir(&dir).unwrap();
    }
}
