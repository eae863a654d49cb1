//! What isolation the host permits, probed once per process (namespaces, Landlock, seccomp, cgroup
//! controllers), and the weaker levels tests and `BCB_SANDBOX` force.

use bcb_envvars::EnvVars;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Serialize;

use crate::cgroups::{cgroup_controller, own_cgroup, subtree, sweep_stale_cgroups, Roots};
use crate::platform::CgroupVersion;

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
    /// Host root: the sample switches to uid/gid 65534 (after its mounts are built), so no
    /// DAC check on a host file passes as root.
    pub uid_switch: bool,
    /// Landlock (no mount namespace): reads by the mount namespace's allow-list, writes only in
    /// the sample dir, no trace of a process outside the sample's domain, signals scoped.
    pub landlock: bool,
    /// seccomp (no network namespace): no socket() at all (socketpair stays).
    pub seccomp_net: bool,
    /// The zygote and each slot's supervisor make themselves not dumpable (the sample makes
    /// itself dumpable again): no ptrace or /proc/PID/{mem,maps,environ} of them for a sample
    /// of the same uid, whatever else is missing.
    pub supervisor_out_of_reach: bool,
    /// cgroup v1 controllers usable for per-slot limits (memory, pids).
    #[serde(skip)]
    pub cgroup_memory: Option<PathBuf>,
    #[serde(skip)]
    pub cgroup_pids: Option<PathBuf>,
    /// cgroup v1 freezer: samples beyond `--parallel` are stopped while our runnable demand
    /// exceeds the cores (see `freeze/`).
    #[serde(skip)]
    pub cgroup_freezer: Option<PathBuf>,
    /// cgroup v1 cpu controller: samples beyond `--parallel` run at the lowest CPU weight,
    /// so they take only what the others leave (see `freeze/`).
    #[serde(skip)]
    pub cgroup_cpu: Option<PathBuf>,
}

/// Whether uid 65534 could reach `path` (every ancestor searchable by others).
fn others_can_reach(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    real.ancestors()
        .skip(1)
        .all(|dir| std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

impl Isolation {
    /// Resolves the uid switch for this interpreter: without a mount namespace (which binds the
    /// eval env at reachable paths) uid 65534 must be able to reach the interpreter itself.
    pub fn for_python(mut self, python: &Path) -> Isolation {
        if self.uid_switch && !self.mountns && !others_can_reach(python) {
            self.uid_switch = false;
        }
        self
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

/// Whether a sample's namespaces can be made here: every call the harness makes for them
/// without a fallback (unshare, a private mount tree and a tmpfs, re-entering a PID namespace
/// by `setns`; a refused host name is only skipped), so that a seccomp profile refusing one of
/// them (a container's) reports the fallback instead of namespaces whose samples all die.
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
        if libc::mount(
            tmpfs.as_ptr(),
            tmp.as_ptr(),
            tmpfs.as_ptr(),
            0,
            std::ptr::null(),
        ) != 0
        {
            return false;
        }
        // In a PID namespace of its own (the child), a slot re-enters it by `setns` after each
        // sample's fork (with a user namespace it can enter no other).
        let child = libc::fork();
        if child < 0 {
            return false;
        }
        if child == 0 {
            let own = libc::open(
                c"/proc/self/ns/pid".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            let ok = own >= 0
                && libc::unshare(libc::CLONE_NEWPID) == 0
                && libc::setns(own, libc::CLONE_NEWPID) == 0;
            libc::_exit(if ok { 0 } else { 1 });
        }
        let mut status = 0;
        libc::waitpid(child, &mut status, 0) == child
            && libc::WIFEXITED(status)
            && libc::WEXITSTATUS(status) == 0
    })
}

impl Isolation {
    /// Where slot cgroups are made (`SlotCgroups::create`).
    pub fn cgroup_roots(&self) -> Roots<'_> {
        Roots {
            memory: self.cgroup_memory.as_deref(),
            pids: self.cgroup_pids.as_deref(),
            freezer: self.cgroup_freezer.as_deref(),
            cpu: self.cgroup_cpu.as_deref(),
        }
    }
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
            uid_switch: unsafe { libc::geteuid() } == 0,
            nproc_rlimit: host.cgroup_pids.is_none(),
            landlock: landlock_abi() >= 1,
            seccomp_net: Path::new("/proc/sys/kernel/seccomp").exists(),
            supervisor_out_of_reach: true,
            cgroup_memory: host.cgroup_memory,
            cgroup_pids: host.cgroup_pids,
            cgroup_freezer: host.cgroup_freezer,
            cgroup_cpu: host.cgroup_cpu,
        }
    }
}

/// Probes the host once per process. `BCB_SANDBOX=none|basic` forces a weaker level
/// (for tests of the degraded path).
pub fn host_isolation() -> Isolation {
    static ISO: OnceLock<Isolation> = OnceLock::new();
    ISO.get_or_init(|| {
        let forced = std::env::var(EnvVars::BCB_SANDBOX).unwrap_or_default();
        let mut iso = Isolation {
            nproc_rlimit: true,
            ..Default::default()
        };
        if forced == "none" {
            return iso;
        }
        iso.supervisor_out_of_reach = true;
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
        // With a mount namespace the sample's view binds the eval env at traversable paths;
        // without one, [`Isolation::for_python`] decides whether uid 65534 could run it. Not in
        // a user namespace of root's own (root without CAP_SYS_ADMIN: a container): only uid 0
        // is mapped there and setgroups is denied, so the switch would fail every sample.
        iso.uid_switch = root && !userns;
        // Without namespaces, Landlock and seccomp stand in for the mount and net namespaces.
        iso.landlock = !iso.mountns && landlock_abi() >= 1;
        iso.seccomp_net = !iso.netns && Path::new("/proc/sys/kernel/seccomp").exists();
        match CgroupVersion::of_host() {
            CgroupVersion::V1 if root => find_v1_cgroups(&mut iso),
            CgroupVersion::V2 => find_v2_cgroups(&mut iso),
            _ => {}
        }
        // RLIMIT_NPROC counts every process of the uid: only useful without a pids cgroup.
        iso.nproc_rlimit = iso.cgroup_pids.is_none();
        // After the cgroups' sweep: no sample of a dead bcb still works in its folder.
        crate::workroot::sweep_stale(&std::env::temp_dir());
        iso
    })
    .clone()
}

/// Root's v1 hierarchies, each swept of the cgroups of a bcb that is gone.
fn find_v1_cgroups(iso: &mut Isolation) {
    iso.cgroup_memory = cgroup_controller("memory");
    iso.cgroup_pids = cgroup_controller("pids");
    iso.cgroup_freezer = cgroup_controller("freezer");
    iso.cgroup_cpu = cgroup_controller("cpu");
    for root in [
        &iso.cgroup_freezer,
        &iso.cgroup_memory,
        &iso.cgroup_pids,
        &iso.cgroup_cpu,
    ]
    .into_iter()
    .flatten()
    {
        sweep_stale_cgroups(root);
    }
    // The cpu groups are made in our own cpu cgroup, not the root (`SlotCgroups`).
    if let Some(own) = iso
        .cgroup_cpu
        .as_ref()
        .map(|root| own_cgroup(root, "cpu"))
        .filter(|own| Some(own) != iso.cgroup_cpu.as_ref())
    {
        sweep_stale_cgroups(&own);
    }
}

/// The v2 subtree bcb may write (any uid), swept; every controller in one folder per slot,
/// and the freezer (`cgroup.freeze`) in every cgroup below the root.
fn find_v2_cgroups(iso: &mut Isolation) {
    let Ok(tree) = subtree() else {
        return;
    };
    sweep_stale_cgroups(&tree.base);
    let base = Some(tree.base.clone());
    iso.cgroup_memory = base.clone().filter(|_| tree.has("memory"));
    iso.cgroup_pids = base.clone().filter(|_| tree.has("pids"));
    iso.cgroup_cpu = base.clone().filter(|_| tree.has("cpu"));
    iso.cgroup_freezer = base;
}
