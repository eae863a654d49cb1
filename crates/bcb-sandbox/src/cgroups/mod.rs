//! Per-slot cgroups (memory, pids, freezer, cpu): made for each worker, removed on drop,
//! torn down whole on an interrupt, and those of a bcb that is gone swept at the next start.
//! A folder per controller on cgroup v1, one folder for all on v2 (`layout.rs`).

use std::path::{Path, PathBuf};

use bcb_executor::ExecConfig;

mod delegated;
mod layout;
pub use delegated::{own_v2_cgroup, subtree, NoSubtree, Subtree, SubtreeStep, LEAF};
pub use layout::{cpu_weight, layout, CgroupLayout, V1, V2};

/// The v1 hierarchy of controller `name`, if bcb may make cgroups in it (v2: [`subtree`]).
pub fn cgroup_controller(name: &str) -> Option<PathBuf> {
    let root = Path::new("/sys/fs/cgroup").join(name);
    if !root.join("cgroup.procs").exists() {
        return None;
    }
    let probe = root.join(format!("bcb-probe-{}", std::process::id()));
    if std::fs::create_dir(&probe).is_err() {
        return None;
    }
    let _ = std::fs::remove_dir(&probe);
    Some(root)
}

/// Where a slot's cgroups are made, by controller (those the host probe found usable): the
/// v1 hierarchies, or the v2 subtree for each.
#[derive(Debug, Clone, Copy)]
pub struct Roots<'a> {
    pub memory: Option<&'a Path>,
    pub pids: Option<&'a Path>,
    pub freezer: Option<&'a Path>,
    pub cpu: Option<&'a Path>,
}

/// A per-slot cgroup directory in each available controller, removed on drop.
pub struct SlotCgroups {
    pub dirs: Vec<PathBuf>,
    /// The freezer cgroup among `dirs`, if any.
    pub freezer: Option<PathBuf>,
    /// The cpu cgroup among `dirs`, if any (the sample's CPU weight follows its role).
    pub cpu: Option<PathBuf>,
}

/// Removes the slot cgroups of bcb processes that are gone (`bcb-{pid}-…` whose pid is dead),
/// with whatever they still hold: a bcb killed with SIGKILL never runs [`SlotCgroups`]'s drop,
/// and samples it had frozen would stay frozen (unkillable) forever. The freezer is swept
/// first, so its members are thawed before the kill. A pid reused by another process makes
/// its cgroups look alive: they are left alone (safe), and swept once that process is gone.
pub fn sweep_stale_cgroups(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        if !owner_is_gone(&entry.file_name(), "bcb-") {
            continue;
        }
        let dir = entry.path();
        thaw_cgroup(&dir);
        remove_cgroup(&dir);
        tracing::debug!("removed the stale cgroup {}", dir.display());
    }
}

/// Whether `name` is `{prefix}{pid}-…` of a bcb process that no longer exists (not ours; a
/// name of another shape is never anyone's leftover).
fn owner_is_gone(name: &std::ffi::OsStr, prefix: &str) -> bool {
    name.to_str()
        .and_then(|n| n.strip_prefix(prefix))
        .and_then(|rest| rest.split('-').next())
        .and_then(|pid| pid.parse::<i32>().ok())
        .is_some_and(pid_is_gone)
}

/// Whether no process `pid` exists in our PID namespace (never true of ourselves).
pub fn pid_is_gone(pid: i32) -> bool {
    pid != std::process::id() as i32
        && unsafe { libc::kill(pid, 0) } != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// This process's cgroup in the v1 hierarchy of `controller` mounted at `root` (the root
/// itself where /proc/self/cgroup does not say).
pub fn own_cgroup(root: &Path, controller: &str) -> PathBuf {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    cgroups
        .lines()
        .filter_map(|l| {
            let mut fields = l.splitn(3, ':').skip(1);
            fields.next().zip(fields.next())
        })
        .find(|(controllers, _)| controllers.split(',').any(|c| c == controller))
        .map(|(_, path)| root.join(path.trim_start_matches('/')))
        .filter(|dir| dir.is_dir())
        .unwrap_or_else(|| root.to_path_buf())
}

/// Kills every member of a cgroup and removes it (retrying briefly while members exit).
fn remove_cgroup(dir: &Path) {
    for _ in 0..50 {
        if std::fs::remove_dir(dir).is_ok() {
            return;
        }
        if let Ok(procs) = std::fs::read_to_string(layout().procs(dir)) {
            for pid in procs
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
                // 0: a member outside our PID namespace (kill(0) would end our own group).
                .filter(|&pid| pid > 0)
            {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The cgroup folders of this process's live [`SlotCgroups`], for [`teardown`].
static LIVE_CGROUPS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Thaws, kills and removes every cgroup this process made and still holds (an interrupt:
/// `bcb_execute::stop::request`). Freezers first: a frozen member takes no signal.
pub fn teardown() {
    let dirs = LIVE_CGROUPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    for dir in &dirs {
        if layout().is_freezer(dir) {
            thaw_cgroup(dir);
        }
    }
    for dir in &dirs {
        remove_cgroup(dir);
    }
}

/// Thaws a freezer cgroup (a frozen process takes no signal, not even SIGKILL).
pub fn thaw_cgroup(dir: &Path) {
    let _ = layout().set_frozen(dir, false);
}

impl SlotCgroups {
    pub fn create(roots: &Roots, cfg: &ExecConfig, tag: &str) -> SlotCgroups {
        let mut dirs: Vec<PathBuf> = Vec::new();
        let name = format!("bcb-{}-{tag}", std::process::id());
        // The slot's folder under `root`, made once (on v2 every controller shares it).
        let mut folder_in = |root: &Path| -> Option<PathBuf> {
            let dir = root.join(&name);
            if dirs.contains(&dir) {
                return Some(dir);
            }
            std::fs::create_dir(&dir).ok()?;
            dirs.push(dir.clone());
            Some(dir)
        };
        if let Some(root) = roots.memory.filter(|_| cfg.limits.memory_mb > 0) {
            if let Some(dir) = folder_in(root) {
                layout().limit_memory(&dir, cfg.limits.memory_mb * 1024 * 1024);
            }
        }
        if let Some(root) = roots.pids.filter(|_| cfg.limits.max_processes > 0) {
            if let Some(dir) = folder_in(root) {
                layout().limit_pids(&dir, cfg.limits.max_processes);
            }
        }
        let freezer = roots.freezer.and_then(&mut folder_in);
        // Only worth having where samples run beyond `--parallel`, which needs the freezer.
        // Nested in our own cpu cgroup, not the root: the weights then divide what this
        // process was given (a container's, a test's), as its other samples do (on v2 the
        // subtree is that already).
        let cpu = match (roots.cpu, &freezer) {
            (Some(root), Some(_)) => folder_in(&own_cgroup(root, "cpu")),
            _ => None,
        };
        if !dirs.is_empty() {
            crate::move_lock::favor_dynamic_moves_once();
        }
        LIVE_CGROUPS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend(dirs.iter().cloned());
        SlotCgroups { dirs, freezer, cpu }
    }
}

impl Drop for SlotCgroups {
    fn drop(&mut self) {
        if let Some(dir) = &self.freezer {
            thaw_cgroup(dir);
        }
        for dir in &self.dirs {
            // Empty by now (the harness kills every member); retry briefly for exiting tasks.
            remove_cgroup(dir);
        }
        LIVE_CGROUPS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .retain(|d| !self.dirs.contains(d));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolation::host_isolation;

    #[test]
    fn own_cgroup_is_a_folder_of_the_hierarchy_or_its_root() {
        let root = Path::new("/sys/fs/cgroup/cpu");
        let own = own_cgroup(root, "cpu");
        assert!(own.starts_with(root), "{}", own.display());
        // A controller this process has no line for: the root.
        assert_eq!(own_cgroup(root, "no-such-controller"), root);
    }

    /// A frozen sample left by a bcb killed with SIGKILL is thawed, killed and its cgroup
    /// removed by the next bcb's sweep; a live owner's cgroup is left alone.
    #[test]
    fn stale_frozen_cgroups_of_a_dead_bcb_are_swept() {
        let Some(root) = host_isolation().cgroup_freezer else {
            return; // needs a freezer: root on v1, a writable subtree on v2
        };
        let dead = {
            let mut c = std::process::Command::new("true").spawn().unwrap();
            c.wait().unwrap();
            c.id()
        };
        // v1: built under our own (live) name, so that no other bcb's sweep running meanwhile
        // (tests run in parallel) ends the sleeper before the control below; renamed to the
        // dead owner's name only for our sweep. v2 renames no cgroup, and has no such control
        // (a fatal signal ends a frozen process): built under the dead name at once.
        let v1 = root.join("freezer.state").exists() || root.join("tasks").exists();
        let stale = root.join(format!("bcb-{dead}-wtest"));
        let building = if v1 {
            root.join(format!("bcb-{}-wtest-stale", std::process::id()))
        } else {
            stale.clone()
        };
        let live = root.join(format!("bcb-{}-wtest-live", std::process::id()));
        for dir in [&building, &live] {
            std::fs::create_dir(dir).unwrap();
        }
        let mut sleeper = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap();
        std::fs::write(layout().procs(&building), sleeper.id().to_string()).unwrap();
        layout().set_frozen(&building, true).unwrap();
        // Frozen is asked for, freezing until every task stopped; a SIGKILL before that kills.
        let asked = std::time::Instant::now();
        while !layout().is_frozen(&building) {
            assert!(asked.elapsed().as_secs() < 10, "the sleeper froze");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if v1 {
            unsafe { libc::kill(sleeper.id() as i32, libc::SIGKILL) };
            std::thread::sleep(std::time::Duration::from_millis(100));
            assert!(
                sleeper.try_wait().unwrap().is_none(),
                "on v1 a frozen process does not die of SIGKILL (the leak this sweep mends)"
            );
        }
        if v1 {
            std::fs::rename(&building, &stale).unwrap();
        }
        sweep_stale_cgroups(&root);
        assert!(!stale.exists(), "the dead owner's cgroup is removed");
        assert!(
            sleeper.wait().unwrap().code().is_none(),
            "the sample was killed"
        );
        assert!(live.exists(), "a live owner's cgroup stays");
        std::fs::remove_dir(&live).unwrap();
    }
}
