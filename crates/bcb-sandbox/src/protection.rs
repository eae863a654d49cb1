//! The sandbox's protections, each by kind, in force or not with what stands in for it: what
//! `bcb env check` lists, what the log and the run's header say, and what the verdict cache's
//! key is made of.

use serde::Serialize;

use crate::isolation::{landlock_abi, Isolation};
use bcb_executor::ExecConfig;

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
    SupervisorOutOfReach,
    DescriptorHygiene,
    ReportChannel,
    IntegrityChecks,
    EnvironmentAllowList,
}

impl ProtectionKind {
    /// Every kind, in `bcb env check`'s order.
    pub const ALL: [ProtectionKind; 19] = [
        ProtectionKind::UnprivilegedSample,
        ProtectionKind::UserNamespace,
        ProtectionKind::PidNamespace,
        ProtectionKind::FilesystemAllowList,
        ProtectionKind::ContainerProcSys,
        ProtectionKind::MinimalDev,
        ProtectionKind::NetworkNamespace,
        ProtectionKind::IpcUtsNamespaces,
        ProtectionKind::MemoryCgroup,
        ProtectionKind::PidsCgroup,
        ProtectionKind::CapabilitiesDropped,
        ProtectionKind::Landlock,
        ProtectionKind::SeccompNetwork,
        ProtectionKind::NoNewPrivs,
        ProtectionKind::SupervisorOutOfReach,
        ProtectionKind::DescriptorHygiene,
        ProtectionKind::ReportChannel,
        ProtectionKind::IntegrityChecks,
        ProtectionKind::EnvironmentAllowList,
    ];

    /// Its kebab-case spelling (`memory-cgroup`): the verdict cache's key and
    /// `bcb serve --min-isolation` use it.
    pub fn slug(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    }

    /// The protection that, in force, does this one's work and more, so this one is then
    /// neither applied nor listed: the mount namespace's allow-list for Landlock, the network
    /// namespace for the seccomp socket filter.
    pub fn superseded_by(self) -> Option<ProtectionKind> {
        match self {
            ProtectionKind::Landlock => Some(ProtectionKind::FilesystemAllowList),
            ProtectionKind::SeccompNetwork => Some(ProtectionKind::NetworkNamespace),
            _ => None,
        }
    }

    /// Whether `list` ([`Isolation::protections`]) has this kind in force, itself or through
    /// the protection that supersedes it.
    pub fn in_force(self, list: &[Protection]) -> bool {
        let active = |kind| list.iter().any(|p| p.kind == kind && p.active);
        active(self) || self.superseded_by().is_some_and(active)
    }

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
            ProtectionKind::SupervisorOutOfReach => "supervisor out of reach",
            ProtectionKind::DescriptorHygiene => "descriptor hygiene",
            ProtectionKind::ReportChannel => "report channel",
            ProtectionKind::IntegrityChecks => "integrity checks",
            ProtectionKind::EnvironmentAllowList => "environment allow-list",
        }
    }
}

impl std::str::FromStr for ProtectionKind {
    type Err = String;

    /// Its [`ProtectionKind::slug`].
    fn from_str(s: &str) -> Result<Self, String> {
        ProtectionKind::ALL
            .into_iter()
            .find(|k| k.slug() == s)
            .ok_or_else(|| {
                let all: Vec<String> = ProtectionKind::ALL.iter().map(|k| k.slug()).collect();
                format!("unknown protection `{s}` (one of {})", all.join(", "))
            })
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

/// `PID namespace per sample (leftover processes die with it; ...)`: the run's header and
/// log line list the protections in force this way.
impl std::fmt::Display for Protection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.kind.name(), self.detail)
    }
}

fn kind_name<S: serde::Serializer>(kind: &ProtectionKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.name())
}

impl Isolation {
    /// What a verdict may depend on in this sandbox, for the verdict cache's key: a version
    /// and the kinds of protection in force (a sandbox that allows more may give another
    /// verdict; rewording a description changes nothing).
    pub fn cache_key(&self, cfg: &ExecConfig) -> String {
        let active: Vec<String> = self
            .protections(cfg)
            .iter()
            .filter(|p| p.active)
            .map(|p| p.kind.slug())
            .collect();
        format!("sandbox-v1:{}", active.join(","))
    }

    /// The protections in force, as the run's header lists them.
    pub fn in_force(&self, cfg: &ExecConfig) -> Vec<String> {
        self.protections(cfg)
            .iter()
            .filter(|p| p.active)
            .map(ToString::to_string)
            .collect()
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
                iso.uid_switch || !root,
                if iso.uid_switch {
                    "host root: the sample runs as uid/gid 65534"
                } else if iso.userns && !root {
                    "user namespace: uid 0 inside maps to the invoking unprivileged user"
                } else if !root {
                    "bcb runs unprivileged: the sample has the invoking user's uid"
                } else if iso.userns {
                    "fallback: root's own uid through a user namespace (root without CAP_SYS_ADMIN, as in a container: uid 65534 is not mapped there), every capability dropped; run bcb as a non-root user"
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
                    "fallback: Landlock, the same allow-list for reads and runs, writes only in the sample's dir (other paths stay visible, their contents closed)"
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
                    "fallback: seccomp, no socket but socketpair"
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
        // A cgroup limit in force, or the rlimit that stands in for it.
        let limit = |kind, active: bool, in_force: String, fallback: String| Protection {
            kind,
            active,
            detail: if active { in_force } else { fallback },
        };
        out.push(limit(
            ProtectionKind::MemoryCgroup,
            iso.cgroup_memory.is_some() && l.memory_mb > 0,
            format!("{} MB per sample", l.memory_mb),
            format!("fallback: RLIMIT_AS {} MB", l.memory_mb),
        ));
        out.push(limit(
            ProtectionKind::PidsCgroup,
            iso.cgroup_pids.is_some() && l.max_processes > 0,
            format!("{} processes per sample", l.max_processes),
            format!("fallback: RLIMIT_NPROC {}", l.max_processes),
        ));
        out.push(p(
            ProtectionKind::CapabilitiesDropped,
            iso.dropcaps || !root,
            if iso.dropcaps {
                "bounding, effective, permitted and inheritable sets emptied"
            } else if root {
                "fallback: none (the sample keeps bcb's capabilities)"
            } else {
                "unprivileged: none to drop"
            },
        ));
        if !iso.mountns {
            out.push(Protection {
                kind: ProtectionKind::Landlock,
                active: iso.landlock,
                detail: format!(
                    "ABI {}: reads in the OS's and Python's trees, a filtered /etc, /proc and /sys; writes in the sample's dir; no trace of a process outside it{}",
                    landlock_abi().max(0),
                    if landlock_abi() >= 6 {
                        ", nor a signal or abstract socket"
                    } else {
                        ""
                    }
                ),
            });
        }
        if !iso.netns {
            out.push(p(
                ProtectionKind::SeccompNetwork,
                iso.seccomp_net,
                "socket() refused (socketpair stays), as is every call of another ABI",
            ));
        }
        out.push(p(ProtectionKind::NoNewPrivs, true, "no setuid gains"));
        out.push(p(
            ProtectionKind::SupervisorOutOfReach,
            iso.supervisor_out_of_reach,
            if iso.supervisor_out_of_reach {
                "bcb, the zygote and each supervisor not dumpable: no ptrace, no /proc/PID/{mem,maps,environ} of them"
            } else {
                "fallback: none (the sample's uid may read its supervisor's memory)"
            },
        ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn cfg() -> ExecConfig {
        ExecConfig {
            python: PathBuf::from("/usr/bin/python3"),
            parallel: 1,
            max_in_flight: 0,
            limits: bcb_executor::Limits::default(),
            hacks: Default::default(),
        }
    }

    /// Every namespace, nothing else.
    fn namespaces() -> Isolation {
        Isolation {
            pidns: true,
            mountns: true,
            netns: true,
            ipcns: true,
            utsns: true,
            ..Isolation::default()
        }
    }

    /// The verdict cache's key names kinds of protection in force, never their wording: a
    /// description that changes with a limit (or is reworded) keeps the key; a sandbox with
    /// fewer protections gets another.
    #[test]
    fn the_cache_key_is_made_of_protection_kinds() {
        // Not the host's probe: it sweeps stale cgroups, which another test here stages.
        let iso = namespaces();
        let mut bigger = cfg();
        bigger.limits.memory_mb += 512;
        assert_eq!(iso.cache_key(&cfg()), iso.cache_key(&bigger));
        assert!(iso.cache_key(&cfg()).starts_with("sandbox-v1:"));
        assert!(iso.cache_key(&cfg()).contains("no-new-privs"));
        let mut fewer = iso.clone();
        fewer.netns = false;
        assert_ne!(iso.cache_key(&cfg()), fewer.cache_key(&cfg()));
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
            dropcaps: true,
            uid_switch: true,
            ..namespaces()
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

    /// Every kind parses from its slug; Landlock is in force where the allow-list (which
    /// supersedes it and so is listed instead) is.
    #[test]
    fn kinds_parse_from_their_slug_and_count_what_supersedes_them() {
        for kind in ProtectionKind::ALL {
            assert_eq!(kind.slug().parse::<ProtectionKind>(), Ok(kind));
        }
        assert!("memory".parse::<ProtectionKind>().is_err());
        let ns = Isolation {
            mountns: true,
            netns: true,
            ..Isolation::default()
        };
        let list = ns.protections(&cfg());
        assert!(!list.iter().any(|p| p.kind == ProtectionKind::Landlock));
        assert!(ProtectionKind::Landlock.in_force(&list));
        assert!(ProtectionKind::SeccompNetwork.in_force(&list));
        let none = Isolation::default().protections(&cfg());
        assert!(!ProtectionKind::Landlock.in_force(&none));
        assert!(ProtectionKind::NoNewPrivs.in_force(&none));
    }
}
