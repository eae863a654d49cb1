//! What isolation the host permits, probed once, and the per-slot resources (cgroups, work dirs).

use bcb_envvars::EnvVars;
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
    /// Host root: the sample switches to uid/gid 65534 (after its mounts are built), so no
    /// DAC check on a host file passes as root.
    pub uid_switch: bool,
    /// Landlock (no mount namespace): writes only in the sample dir, signals scoped.
    pub landlock: bool,
    /// seccomp (no network namespace): only AF_UNIX sockets.
    pub seccomp_net: bool,
    /// cgroup v1 controllers usable for per-slot limits (memory, pids).
    #[serde(skip)]
    pub cgroup_memory: Option<PathBuf>,
    #[serde(skip)]
    pub cgroup_pids: Option<PathBuf>,
    /// cgroup v1 freezer: samples beyond `--parallel` are stopped while our runnable demand
    /// exceeds the cores (see `freeze.rs`).
    #[serde(skip)]
    pub cgroup_freezer: Option<PathBuf>,
    /// cgroup v1 cpu controller: samples beyond `--parallel` run at the lowest CPU weight,
    /// so they take only what the others leave (see `freeze.rs`).
    #[serde(skip)]
    pub cgroup_cpu: Option<PathBuf>,
}

impl Isolation {
    /// Human-readable list of what is in force, for `bcb env check` and logs.
    pub fn describe(&self, cfg: &ExecConfig) -> Vec<String> {
        let l = &cfg.limits;
        let mut out = Vec::new();
        if self.userns {
            out.push("user namespace (unprivileged host: root only inside the sandbox)".into());
        }
        if self.clone().for_python(&cfg.python).uid_switch {
            out.push("sample runs as uid/gid 65534 (never host root)".into());
        }
        if self.pidns {
            out.push("PID namespace per sample (leftover processes die with it)".into());
        }
        if self.mountns {
            out.push(
                "mount namespace: allow-listed read-only root (no homes, /run, output), masked /proc, minimal /dev, private tmpfs on /tmp and /dev/shm (cwd, HOME)"
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

/// A protection of the sandbox, by kind: what the verdict cache's key is made of (never the
/// wording of its description, which may change freely).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum ProtectionKind {
    UnprivilegedSample,
    UserNamespace,
    PidNamespace,
    FilesystemAllowList,
    ContainerProcSys,
    MinimalDev,
    NetworkNamespace,
    IpcUtsNamespaces,
    MemoryCgroup,
    PidsCgroup,
    CapabilitiesDropped,
    Landlock,
    SeccompNetwork,
    NoNewPrivs,
    DescriptorHygiene,
    ReportChannel,
    IntegrityChecks,
    EnvironmentAllowList,
}

impl ProtectionKind {
    /// Its name in `bcb env check`.
    pub fn name(self) -> &'static str {
        match self {
            ProtectionKind::UnprivilegedSample => "unprivileged sample",
            ProtectionKind::UserNamespace => "user namespace",
            ProtectionKind::PidNamespace => "PID namespace per sample",
            ProtectionKind::FilesystemAllowList => "filesystem allow-list (mount namespace)",
            ProtectionKind::ContainerProcSys => "container /proc and /sys",
            ProtectionKind::MinimalDev => "minimal /dev",
            ProtectionKind::NetworkNamespace => "network namespace",
            ProtectionKind::IpcUtsNamespaces => "IPC and UTS namespaces",
            ProtectionKind::MemoryCgroup => "memory cgroup",
            ProtectionKind::PidsCgroup => "pids cgroup",
            ProtectionKind::CapabilitiesDropped => "capabilities dropped",
            ProtectionKind::Landlock => "Landlock",
            ProtectionKind::SeccompNetwork => "seccomp network filter",
            ProtectionKind::NoNewPrivs => "no_new_privs",
            ProtectionKind::DescriptorHygiene => "descriptor hygiene",
            ProtectionKind::ReportChannel => "report channel",
            ProtectionKind::IntegrityChecks => "integrity checks",
            ProtectionKind::EnvironmentAllowList => "environment allow-list",
        }
    }
}

/// One protection of the sandbox, in force or not, and what stands in for it when not.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Protection {
    /// Serialized as its name (`bcb env check --json`).
    #[serde(rename = "name", serialize_with = "kind_name")]
    pub kind: ProtectionKind,
    pub active: bool,
    /// What it does here, or the fallback in force when it is not active.
    pub detail: String,
}

fn kind_name<S: serde::Serializer>(kind: &ProtectionKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.name())
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

    /// What a verdict may depend on in this sandbox, for the verdict cache's key: a version
    /// and the kinds of protection in force (a sandbox that allows more may give another
    /// verdict; rewording a description changes nothing).
    pub fn cache_key(&self, cfg: &ExecConfig) -> String {
        let active: Vec<String> = self
            .protections(cfg)
            .iter()
            .filter(|p| p.active)
            .map(|p| {
                serde_json::to_string(&p.kind)
                    .unwrap_or_default()
                    .replace('"', "")
            })
            .collect();
        format!("sandbox-v1:{}", active.join(","))
    }

    /// Every protection, active or not, with the fallback named (`bcb env check`).
    pub fn protections(&self, cfg: &ExecConfig) -> Vec<Protection> {
        let iso = self.clone().for_python(&cfg.python);
        let root = unsafe { libc::geteuid() } == 0;
        let l = &cfg.limits;
        let p = |kind, active, detail: &str| Protection {
            kind,
            active,
            detail: detail.to_string(),
        };
        let mut out = vec![
            p(
                ProtectionKind::UnprivilegedSample,
                iso.uid_switch || iso.userns || !root,
                if iso.uid_switch {
                    "host root: the sample runs as uid/gid 65534"
                } else if iso.userns {
                    "user namespace: uid 0 inside maps to the invoking unprivileged user"
                } else if !root {
                    "bcb runs unprivileged: the sample has the invoking user's uid"
                } else {
                    "fallback: root with every capability dropped (uid 65534 cannot reach the eval env; install it outside a private home)"
                },
            ),
            p(
                ProtectionKind::UserNamespace,
                iso.userns,
                if iso.userns {
                    "the slot maps itself to the invoking user"
                } else if root && iso.uid_switch {
                    "not needed as root (uid switch instead)"
                } else if root {
                    "not used as root"
                } else {
                    "fallback: Landlock + seccomp + rlimits"
                },
            ),
            p(
                ProtectionKind::PidNamespace,
                iso.pidns,
                if iso.pidns {
                    "leftover processes die with it; other processes invisible"
                } else {
                    "fallback: own session + subreaper, every descendant killed"
                },
            ),
            p(
                ProtectionKind::FilesystemAllowList,
                iso.mountns,
                if iso.mountns {
                    "new root: /usr /bin /sbin /lib*, the Python trees, a filtered /etc, private /tmp; all read-only but /tmp and /dev/shm"
                } else if iso.landlock {
                    "fallback: Landlock, writes only in the sample's dir (the filesystem stays visible)"
                } else {
                    "fallback: none (the sample sees and may write what its uid may)"
                },
            ),
            p(
                ProtectionKind::ContainerProcSys,
                iso.mountns,
                if iso.mountns {
                    "Docker's masked paths (kcore, keys, timer_list, ...) hidden; /proc/sys, sysrq-trigger, irq, bus, fs read-only"
                } else {
                    "fallback: the unprivileged uid (or dropped capabilities) decides"
                },
            ),
            p(
                ProtectionKind::MinimalDev,
                iso.mountns,
                if iso.mountns {
                    "null zero full random urandom tty, private shm and pts"
                } else {
                    "fallback: the host's /dev, checked by the sample's uid"
                },
            ),
            p(
                ProtectionKind::NetworkNamespace,
                iso.netns,
                if iso.netns {
                    "loopback only"
                } else if iso.seccomp_net {
                    "fallback: seccomp, AF_UNIX sockets only"
                } else {
                    "fallback: none"
                },
            ),
            p(
                ProtectionKind::IpcUtsNamespaces,
                iso.ipcns && iso.utsns,
                if iso.ipcns {
                    "private SysV IPC, hostname `sandbox`"
                } else {
                    "fallback: none"
                },
            ),
        ];
        let mem = iso.cgroup_memory.is_some() && l.memory_mb > 0;
        out.push(Protection {
            kind: ProtectionKind::MemoryCgroup,
            active: mem,
            detail: if mem {
                format!("{} MB per sample", l.memory_mb)
            } else {
                format!("fallback: RLIMIT_AS {} MB", l.memory_mb)
            },
        });
        let pids = iso.cgroup_pids.is_some() && l.max_processes > 0;
        out.push(Protection {
            kind: ProtectionKind::PidsCgroup,
            active: pids,
            detail: if pids {
                format!("{} processes per sample", l.max_processes)
            } else {
                format!("fallback: RLIMIT_NPROC {}", l.max_processes)
            },
        });
        out.push(p(
            ProtectionKind::CapabilitiesDropped,
            iso.dropcaps || !root,
            if iso.dropcaps {
                "bounding, effective, permitted and inheritable sets emptied"
            } else {
                "unprivileged: none to drop"
            },
        ));
        if !iso.mountns {
            out.push(Protection {
                kind: ProtectionKind::Landlock,
                active: iso.landlock,
                detail: format!("ABI {}", landlock_abi().max(0)),
            });
        }
        if !iso.netns {
            out.push(p(
                ProtectionKind::SeccompNetwork,
                iso.seccomp_net,
                "AF_UNIX only",
            ));
        }
        out.push(p(ProtectionKind::NoNewPrivs, true, "no setuid gains"));
        out.push(p(
                ProtectionKind::DescriptorHygiene,
            true,
            "the slot marks every inherited fd close-on-exec; the sample holds only 0-2 and its report pipes",
        ));
        out.push(p(
                ProtectionKind::ReportChannel,
            true,
            "nonce written by the supervisor after the fork, read only after the tests; report and key pipes at random fds",
        ));
        out.push(p(
                ProtectionKind::IntegrityChecks,
            true,
            "unittest, the harness's functions, builtins hooks, TestCases provenance, the result recorder",
        ));
        out.push(p(
            ProtectionKind::EnvironmentAllowList,
            true,
            "no parent variables but locale and TERM",
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
            uid_switch: unsafe { libc::geteuid() } == 0,
            nproc_rlimit: host.cgroup_pids.is_none(),
            landlock: landlock_abi() >= 1,
            seccomp_net: Path::new("/proc/sys/kernel/seccomp").exists(),
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
        // without one, [`Isolation::for_python`] decides whether uid 65534 could run it.
        iso.uid_switch = root;
        // Without namespaces, Landlock and seccomp stand in for the mount and net namespaces.
        iso.landlock = !iso.mountns && landlock_abi() >= 1;
        iso.seccomp_net = !iso.netns && Path::new("/proc/sys/kernel/seccomp").exists();
        if root {
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
pub(crate) fn sweep_stale_cgroups(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix("bcb-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = unsafe { libc::kill(owner, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if owner == std::process::id() as i32 || !gone {
            continue;
        }
        let dir = entry.path();
        thaw_cgroup(&dir);
        remove_cgroup(&dir);
        tracing::debug!("removed the stale cgroup {}", dir.display());
    }
}

/// This process's cgroup in the v1 hierarchy of `controller` mounted at `root` (the root
/// itself where /proc/self/cgroup does not say).
fn own_cgroup(root: &Path, controller: &str) -> PathBuf {
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

/// The cgroup folders of this process's live [`SlotCgroups`], for [`teardown`].
static LIVE_CGROUPS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Thaws, kills and removes every cgroup this process made and still holds (an interrupt:
/// `crate::stop::request`). Freezers first: a frozen member takes no signal.
pub(crate) fn teardown() {
    let dirs = LIVE_CGROUPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    for dir in &dirs {
        if dir.join("freezer.state").exists() {
            thaw_cgroup(dir);
        }
    }
    for dir in &dirs {
        remove_cgroup(dir);
    }
}

/// Thaws a v1 freezer cgroup (a frozen process takes no signal, not even SIGKILL).
pub(crate) fn thaw_cgroup(dir: &Path) {
    let _ = std::fs::write(dir.join("freezer.state"), "THAWED");
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
        let mut freezer = None;
        if let Some(root) = &iso.cgroup_freezer {
            let dir = root.join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                dirs.push(dir.clone());
                freezer = Some(dir);
            }
        }
        // Only worth having where samples run beyond `--parallel`, which needs the freezer.
        // Nested in our own cpu cgroup, not the root: the weights then divide what this
        // process was given (a container's, a test's), as its other samples do.
        let mut cpu = None;
        if let (Some(root), Some(_)) = (&iso.cgroup_cpu, &freezer) {
            let dir = own_cgroup(root, "cpu").join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                dirs.push(dir.clone());
                cpu = Some(dir);
            }
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

    #[test]
    fn own_cgroup_is_a_folder_of_the_hierarchy_or_its_root() {
        let root = Path::new("/sys/fs/cgroup/cpu");
        let own = own_cgroup(root, "cpu");
        assert!(own.starts_with(root), "{}", own.display());
        // A controller this process has no line for: the root.
        assert_eq!(own_cgroup(root, "no-such-controller"), root);
    }

    fn cfg() -> ExecConfig {
        ExecConfig {
            python: PathBuf::from("/usr/bin/python3"),
            parallel: 1,
            max_in_flight: 0,
            limits: crate::Limits::default(),
            hacks: Default::default(),
        }
    }

    /// The verdict cache's key names kinds of protection in force, never their wording: a
    /// description that changes with a limit (or is reworded) keeps the key; a sandbox with
    /// fewer protections gets another.
    #[test]
    fn the_cache_key_is_made_of_protection_kinds() {
        // Not the host's probe: it sweeps stale cgroups, which another test here stages.
        let iso = Isolation {
            pidns: true,
            mountns: true,
            netns: true,
            ipcns: true,
            utsns: true,
            ..Isolation::default()
        };
        let mut bigger = cfg();
        bigger.limits.memory_mb += 512;
        assert_eq!(iso.cache_key(&cfg()), iso.cache_key(&bigger));
        assert!(iso.cache_key(&cfg()).starts_with("sandbox-v1:"));
        assert!(iso.cache_key(&cfg()).contains("no-new-privs"));
        let mut fewer = iso.clone();
        fewer.netns = false;
        assert_ne!(iso.cache_key(&cfg()), fewer.cache_key(&cfg()));
    }

    /// A frozen sample left by a bcb killed with SIGKILL is thawed, killed and its cgroup
    /// removed by the next bcb's sweep; a live owner's cgroup is left alone.
    #[test]
    fn stale_frozen_cgroups_of_a_dead_bcb_are_swept() {
        let Some(root) = host_isolation().cgroup_freezer else {
            return; // needs root and a v1 freezer
        };
        let dead = {
            let mut c = std::process::Command::new("true").spawn().unwrap();
            c.wait().unwrap();
            c.id()
        };
        let stale = root.join(format!("bcb-{dead}-wtest"));
        let live = root.join(format!("bcb-{}-wtest-live", std::process::id()));
        for dir in [&stale, &live] {
            std::fs::create_dir(dir).unwrap();
        }
        let mut sleeper = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap();
        std::fs::write(stale.join("cgroup.procs"), sleeper.id().to_string()).unwrap();
        std::fs::write(stale.join("freezer.state"), "FROZEN").unwrap();
        unsafe { libc::kill(sleeper.id() as i32, libc::SIGKILL) };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            sleeper.try_wait().unwrap().is_none(),
            "a frozen process does not die of SIGKILL (the leak this sweep mends)"
        );
        sweep_stale_cgroups(&root);
        assert!(!stale.exists(), "the dead owner's cgroup is removed");
        assert!(
            sleeper.wait().unwrap().code().is_none(),
            "the sample was killed"
        );
        assert!(live.exists(), "a live owner's cgroup stays");
        std::fs::remove_dir(&live).unwrap();
    }

    /// Without namespaces every missing protection names what stands in for it.
    #[test]
    fn protections_name_the_fallback_when_namespaces_are_missing() {
        let iso = Isolation {
            nproc_rlimit: true,
            landlock: true,
            seccomp_net: true,
            ..Isolation::default()
        };
        let list = iso.protections(&cfg());
        let of = |kind| {
            list.iter()
                .find(|p| p.kind == kind)
                .unwrap_or_else(|| panic!("{kind:?}"))
        };
        for kind in [
            ProtectionKind::PidNamespace,
            ProtectionKind::FilesystemAllowList,
            ProtectionKind::NetworkNamespace,
            ProtectionKind::MemoryCgroup,
            ProtectionKind::PidsCgroup,
        ] {
            let p = of(kind);
            assert!(!p.active, "{kind:?}");
            assert!(p.detail.starts_with("fallback: "), "{kind:?}: {}", p.detail);
        }
        let landlock = of(ProtectionKind::FilesystemAllowList);
        assert!(landlock.detail.contains("Landlock"));
        let net = of(ProtectionKind::NetworkNamespace);
        assert!(net.detail.contains("seccomp"));
    }

    #[test]
    fn full_namespaces_are_all_listed_active() {
        let iso = Isolation {
            pidns: true,
            mountns: true,
            netns: true,
            ipcns: true,
            utsns: true,
            dropcaps: true,
            uid_switch: true,
            ..Isolation::default()
        };
        let list = iso.protections(&cfg());
        for kind in [
            ProtectionKind::UnprivilegedSample,
            ProtectionKind::PidNamespace,
            ProtectionKind::FilesystemAllowList,
            ProtectionKind::ContainerProcSys,
            ProtectionKind::MinimalDev,
            ProtectionKind::NetworkNamespace,
            ProtectionKind::DescriptorHygiene,
            ProtectionKind::ReportChannel,
        ] {
            assert!(list.iter().any(|p| p.kind == kind && p.active), "{kind:?}");
        }
    }
}
