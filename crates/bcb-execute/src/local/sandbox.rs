//! What isolation the host permits, probed once, and the per-slot resources (cgroups, work dirs).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Serialize;

use crate::ExecConfig;

/// Isolation features the harness child applies (each probed on this host).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Isolation {
    /// The slot enters a user namespace first (unprivileged hosts where that is allowed).
    pub userns: bool,
    pub pidns: bool,
    pub mountns: bool,
    pub netns: bool,
    pub ipcns: bool,
    pub utsns: bool,
    /// Drop every capability (root without namespaces-of-its-own stays uid 0 but powerless).
    pub dropcaps: bool,
    /// RLIMIT_NPROC fallback when there is no pids cgroup.
    pub nproc_rlimit: bool,
    /// Landlock (no mount namespace): writes only in the sample dir, signals scoped.
    pub landlock: bool,
    /// seccomp (no network namespace): only AF_UNIX sockets.
    pub seccomp_net: bool,
    /// cgroup v1 controllers usable for per-slot limits (memory, pids).
    #[serde(skip)]
    pub cgroup_memory: Option<PathBuf>,
    #[serde(skip)]
    pub cgroup_pids: Option<PathBuf>,
}

impl Isolation {
    /// Human-readable list of what is in force, for `bcb env check` and logs.
    pub fn describe(&self, cfg: &ExecConfig) -> Vec<String> {
        let l = &cfg.limits;
        let mut out = Vec::new();
        if self.userns {
            out.push("user namespace (unprivileged host: root only inside the sandbox)".into());
        }
        if self.pidns {
            out.push("PID namespace per sample (leftover processes die with it)".into());
        }
        if self.mountns {
            out.push(
                "mount namespace: read-only filesystem, private tmpfs on /tmp and /dev/shm (cwd, HOME)"
                    .into(),
            );
        }
        if self.netns {
            out.push("network namespace: loopback only".into());
        }
        if self.ipcns || self.utsns {
            out.push("IPC and UTS namespaces".into());
        }
        match (&self.cgroup_memory, l.memory_mb) {
            (Some(_), mb) if mb > 0 => out.push(format!("memory cgroup: {mb} MB per sample")),
            _ => {}
        }
        match (&self.cgroup_pids, l.max_processes) {
            (Some(_), n) if n > 0 => out.push(format!("pids cgroup: {n} processes per sample")),
            (None, n) if n > 0 && self.nproc_rlimit => {
                out.push(format!("RLIMIT_NPROC {n} (no pids cgroup)"))
            }
            _ => {}
        }
        if self.landlock {
            out.push(format!(
                "Landlock ABI {}: writes only in the sample's dir (and /dev, /dev/shm){}",
                landlock_abi(),
                if landlock_abi() >= 6 {
                    "; signals and abstract sockets scoped to the sample"
                } else {
                    ""
                }
            ));
        }
        if self.seccomp_net {
            out.push("seccomp: no network sockets (AF_UNIX only)".into());
        }
        if self.cgroup_memory.is_none() && l.memory_mb > 0 {
            out.push(format!(
                "RLIMIT_AS {} MB as memory cap (no memory cgroup)",
                l.memory_mb
            ));
        }
        if self.dropcaps {
            out.push("all capabilities dropped".into());
        }
        out.push("no_new_privs".into());
        if l.max_as_mb > 0 && l.max_data_mb > 0 && l.max_stack_mb > 0 {
            out.push(format!(
                "rlimits AS {} MB, DATA {} MB, STACK {} MB (as upstream)",
                l.max_as_mb, l.max_data_mb, l.max_stack_mb
            ));
        }
        out.push("own session + subreaper: every leftover process killed after the sample".into());
        out.push("environment allow-list (no parent secrets)".into());
        out.push(format!(
            "output swallowed, at most {} bytes kept",
            l.output_cap_bytes
        ));
        out
    }
}

fn probe_in_child(f: impl FnOnce() -> bool) -> bool {
    // Fork without exec: the child only makes raw syscalls, then _exit.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return false;
        }
        if pid == 0 {
            let ok = f();
            libc::_exit(if ok { 0 } else { 1 });
        }
        let mut status = 0;
        if libc::waitpid(pid, &mut status, 0) != pid {
            return false;
        }
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }
}

fn try_namespaces(with_user: bool) -> bool {
    probe_in_child(|| unsafe {
        let mut flags = libc::CLONE_NEWNS
            | libc::CLONE_NEWNET
            | libc::CLONE_NEWPID
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS;
        if with_user {
            flags |= libc::CLONE_NEWUSER;
        }
        if libc::unshare(flags) != 0 {
            return false;
        }
        let root = c"/";
        let tmp = c"/tmp";
        let tmpfs = c"tmpfs";
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return false;
        }
        libc::mount(
            tmpfs.as_ptr(),
            tmp.as_ptr(),
            tmpfs.as_ptr(),
            0,
            std::ptr::null(),
        ) == 0
    })
}

fn cgroup_controller(name: &str) -> Option<PathBuf> {
    let root = Path::new("/sys/fs/cgroup").join(name);
    // cgroup v1 only (v2 unified hierarchies would need a delegated subtree).
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

/// Landlock ABI version of this kernel (0: unavailable); scoped signals need >= 6.
pub fn landlock_abi() -> i64 {
    // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    unsafe { libc::syscall(444, std::ptr::null::<u8>(), 0usize, 1u32) }
}

impl Isolation {
    /// What is left where namespaces are not permitted (unprivileged Ubuntu 24.04,
    /// containers): Landlock + seccomp + rlimits + process-group/subreaper kill, keeping
    /// cgroups when usable. Used by tests of the degraded path.
    pub fn degraded() -> Isolation {
        let host = host_isolation();
        Isolation {
            userns: false,
            pidns: false,
            mountns: false,
            netns: false,
            ipcns: false,
            utsns: false,
            dropcaps: unsafe { libc::geteuid() } == 0,
            nproc_rlimit: host.cgroup_pids.is_none(),
            landlock: landlock_abi() >= 1,
            seccomp_net: Path::new("/proc/sys/kernel/seccomp").exists(),
            cgroup_memory: host.cgroup_memory,
            cgroup_pids: host.cgroup_pids,
        }
    }
}

/// Probes the host once per process. `BCB_SANDBOX=none|basic` forces a weaker level
/// (for tests of the degraded path).
pub fn host_isolation() -> Isolation {
    static ISO: OnceLock<Isolation> = OnceLock::new();
    ISO.get_or_init(|| {
        let forced = std::env::var("BCB_SANDBOX").unwrap_or_default();
        let mut iso = Isolation {
            nproc_rlimit: true,
            ..Default::default()
        };
        if forced == "none" {
            return iso;
        }
        let root = unsafe { libc::geteuid() } == 0;
        let ns = forced != "basic" && try_namespaces(false);
        let userns = forced != "basic" && !ns && try_namespaces(true);
        if ns || userns {
            iso.userns = userns;
            iso.pidns = true;
            iso.mountns = true;
            iso.netns = true;
            iso.ipcns = true;
            iso.utsns = true;
        }
        iso.dropcaps = root || userns;
        // Without namespaces, Landlock and seccomp stand in for the mount and net namespaces.
        iso.landlock = !iso.mountns && landlock_abi() >= 1;
        iso.seccomp_net = !iso.netns && Path::new("/proc/sys/kernel/seccomp").exists();
        if root {
            iso.cgroup_memory = cgroup_controller("memory");
            iso.cgroup_pids = cgroup_controller("pids");
            // RLIMIT_NPROC counts every process of the uid: only useful without a pids cgroup.
            iso.nproc_rlimit = iso.cgroup_pids.is_none();
        }
        iso
    })
    .clone()
}

/// A per-slot cgroup directory in each available controller, removed on drop.
pub(crate) struct SlotCgroups {
    pub dirs: Vec<PathBuf>,
}

impl SlotCgroups {
    pub fn create(iso: &Isolation, cfg: &ExecConfig, tag: &str) -> SlotCgroups {
        let mut dirs = Vec::new();
        let name = format!("bcb-{}-{tag}", std::process::id());
        if let Some(root) = &iso.cgroup_memory {
            if cfg.limits.memory_mb > 0 {
                let dir = root.join(&name);
                if std::fs::create_dir(&dir).is_ok() {
                    let bytes = cfg.limits.memory_mb * 1024 * 1024;
                    let _ = std::fs::write(dir.join("memory.limit_in_bytes"), bytes.to_string());
                    // Swap would let a bomb outlive the cap.
                    let _ = std::fs::write(dir.join("memory.swappiness"), "0");
                    dirs.push(dir);
                }
            }
        }
        if let Some(root) = &iso.cgroup_pids {
            if cfg.limits.max_processes > 0 {
                let dir = root.join(&name);
                if std::fs::create_dir(&dir).is_ok() {
                    let _ =
                        std::fs::write(dir.join("pids.max"), cfg.limits.max_processes.to_string());
                    dirs.push(dir);
                }
            }
        }
        SlotCgroups { dirs }
    }
}

impl Drop for SlotCgroups {
    fn drop(&mut self) {
        for dir in &self.dirs {
            // Empty by now (the harness kills every member); retry briefly for exiting tasks.
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() {
                    break;
                }
                if let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) {
                    for pid in procs
                        .split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok())
                    {
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}
