//! `bcb serve --min-isolation`: the least sandbox a service starts with. A minimum is a set of
//! protections ([`ProtectionKind`]), named by level (`none`, `basic`, `namespaces`, `full`),
//! by protection (`memory-cgroup`), or both (`basic,pids-cgroup`). Unset, it is `none` on a
//! loopback address (the clients could run code on this machine anyway) and `basic` on any
//! other (samples from the network never run with capabilities, read or write outside the
//! allow-list, open a socket or reach bcb's processes). docs/sandbox.md says what each level needs from a
//! container.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use bcb_execute::{Protection, ProtectionKind};

/// A named level: each holds the protections of the one before it, and more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Nothing required.
    None,
    /// What every container gives on a kernel with Landlock (5.13+): the sample unprivileged
    /// and without capabilities, reads only in the OS's and Python's trees and writes only in
    /// its directory (no dataset, cache or secret), no sockets, bcb and its supervisors out of
    /// its reach, and the harness's own checks (descriptors, report channel, integrity,
    /// environment): a pass cannot be bought and nothing leaks.
    Basic,
    /// `basic` in the sandbox's own namespaces: PID, mount (allow-listed read-only root,
    /// masked /proc, minimal /dev), network (loopback only), IPC and UTS.
    Namespaces,
    /// `namespaces` with per-sample memory and pids cgroups.
    Full,
}

impl Level {
    const ALL: [Level; 4] = [Level::None, Level::Basic, Level::Namespaces, Level::Full];

    fn name(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::Basic => "basic",
            Level::Namespaces => "namespaces",
            Level::Full => "full",
        }
    }

    /// The protections this level adds to the one before it.
    fn adds(self) -> &'static [ProtectionKind] {
        use ProtectionKind as K;
        match self {
            Level::None => &[],
            Level::Basic => &[
                K::UnprivilegedSample,
                K::CapabilitiesDropped,
                K::Landlock,
                K::SeccompNetwork,
                K::NoNewPrivs,
                K::SupervisorOutOfReach,
                K::DescriptorHygiene,
                K::ReportChannel,
                K::IntegrityChecks,
                K::EnvironmentAllowList,
            ],
            Level::Namespaces => &[
                K::PidNamespace,
                K::FilesystemAllowList,
                K::ContainerProcSys,
                K::MinimalDev,
                K::NetworkNamespace,
                K::IpcUtsNamespaces,
            ],
            Level::Full => &[K::MemoryCgroup, K::PidsCgroup],
        }
    }

    /// Every protection the level requires.
    fn required(self) -> impl Iterator<Item = ProtectionKind> {
        Level::ALL
            .into_iter()
            .take_while(move |l| *l as u8 <= self as u8)
            .flat_map(|l| l.adds().iter().copied())
    }
}

/// One item of a minimum: a level or a single protection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Level(Level),
    Kind(ProtectionKind),
}

/// The least isolation `bcb serve` starts with (`--min-isolation`, `BCB_MIN_ISOLATION`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinIsolation {
    items: Vec<Item>,
}

impl MinIsolation {
    /// The minimum when none is configured: `none` on loopback, `basic` elsewhere.
    pub fn default_for(listen: SocketAddr) -> MinIsolation {
        let level = if listen.ip().is_loopback() {
            Level::None
        } else {
            Level::Basic
        };
        MinIsolation {
            items: vec![Item::Level(level)],
        }
    }

    /// Every protection required, each once.
    pub fn required(&self) -> Vec<ProtectionKind> {
        let mut out: Vec<ProtectionKind> = Vec::new();
        for item in &self.items {
            let kinds: Vec<ProtectionKind> = match *item {
                Item::Level(l) => l.required().collect(),
                Item::Kind(k) => vec![k],
            };
            for k in kinds {
                if !out.contains(&k) {
                    out.push(k);
                }
            }
        }
        out
    }

    /// The required protections `protections` ([`bcb_execute::Isolation::protections`]) does
    /// not have in force, each with what stands in for it here.
    pub fn unmet<'a>(
        &self,
        protections: &'a [Protection],
    ) -> Vec<(ProtectionKind, Option<&'a Protection>)> {
        self.required()
            .into_iter()
            .filter(|k| !k.in_force(protections))
            .map(|k| (k, protections.iter().find(|p| p.kind == k)))
            .collect()
    }

    /// Refuses (with a `hint:`) when a required protection is not in force.
    pub fn enforce(&self, listen: SocketAddr, protections: &[Protection]) -> anyhow::Result<()> {
        let unmet = self.unmet(protections);
        if unmet.is_empty() {
            return Ok(());
        }
        let lines: Vec<String> = unmet
            .iter()
            .map(|(k, p)| match p {
                Some(p) => format!("  {}: {}", k.slug(), p.detail),
                None => format!("  {}", k.slug()),
            })
            .collect();
        anyhow::bail!(
            "--listen {listen}: the sandbox here is weaker than --min-isolation {self}; not in force:\n{}\n\
             hint: give the container what these need (docs/sandbox.md, \"bcb in a container\"), \
             or accept less explicitly: --min-isolation (BCB_MIN_ISOLATION) with a lower level, \
             e.g. `none`; `bcb env check` lists every protection",
            lines.join("\n")
        )
    }
}

impl fmt::Display for MinIsolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self
            .items
            .iter()
            .map(|i| match i {
                Item::Level(l) => l.name().to_string(),
                Item::Kind(k) => k.slug(),
            })
            .collect();
        f.write_str(&names.join(","))
    }
}

impl FromStr for MinIsolation {
    type Err = String;

    /// Comma-separated levels and protection slugs: `basic`, `namespaces,memory-cgroup`.
    fn from_str(s: &str) -> Result<Self, String> {
        let items = s
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| match Level::ALL.into_iter().find(|l| l.name() == t) {
                Some(l) => Ok(Item::Level(l)),
                None => t.parse().map(Item::Kind).map_err(|e: String| {
                    let levels: Vec<&str> = Level::ALL.iter().map(|l| l.name()).collect();
                    format!("{e}; or a level: {}", levels.join(", "))
                }),
            })
            .collect::<Result<Vec<Item>, String>>()?;
        if items.is_empty() {
            return Err("an empty minimum: name a level (e.g. `none`) or protections".into());
        }
        Ok(MinIsolation { items })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn off(kind: ProtectionKind) -> Protection {
        Protection {
            kind,
            active: false,
            detail: "fallback: none".into(),
        }
    }

    fn on(kind: ProtectionKind) -> Protection {
        Protection {
            kind,
            active: true,
            detail: String::new(),
        }
    }

    #[test]
    fn levels_nest_and_parse_with_single_protections() {
        let basic: MinIsolation = "basic".parse().unwrap();
        let ns: MinIsolation = "namespaces".parse().unwrap();
        let full: MinIsolation = "full".parse().unwrap();
        assert!(basic.required().iter().all(|k| ns.required().contains(k)));
        assert!(ns.required().iter().all(|k| full.required().contains(k)));
        assert_eq!(full.required().len(), 18, "all but the user namespace");
        assert!("none"
            .parse::<MinIsolation>()
            .unwrap()
            .required()
            .is_empty());
        let mixed: MinIsolation = "basic, memory-cgroup".parse().unwrap();
        assert_eq!(mixed.to_string(), "basic,memory-cgroup");
        assert_eq!(mixed.required().len(), basic.required().len() + 1);
        assert!("strict".parse::<MinIsolation>().is_err());
        assert!("".parse::<MinIsolation>().is_err());
    }

    #[test]
    fn the_default_depends_on_the_address() {
        let lo: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:1".parse().unwrap();
        assert_eq!(MinIsolation::default_for(lo).to_string(), "none");
        assert_eq!(MinIsolation::default_for(any).to_string(), "basic");
    }

    /// What supersedes a protection meets it (namespaces meet `basic`'s Landlock); an unmet
    /// one is named in the refusal, which carries a hint.
    #[test]
    fn unmet_protections_are_named_with_a_hint() {
        use ProtectionKind as K;
        let with_ns: Vec<Protection> = K::ALL
            .into_iter()
            .filter(|k| k.superseded_by().is_none())
            .map(on)
            .collect();
        let basic: MinIsolation = "basic".parse().unwrap();
        assert!(basic.unmet(&with_ns).is_empty());
        let mut weak = with_ns.clone();
        weak.retain(|p| p.kind != K::FilesystemAllowList);
        weak.push(off(K::FilesystemAllowList));
        weak.push(off(K::Landlock));
        let unmet = basic.unmet(&weak);
        assert_eq!(unmet.len(), 1);
        assert_eq!(unmet[0].0, K::Landlock);
        let any: SocketAddr = "0.0.0.0:1".parse().unwrap();
        let err = basic.enforce(any, &weak).unwrap_err().to_string();
        assert!(
            err.contains("  landlock: fallback") && err.contains("\nhint: "),
            "{err}"
        );
    }
}
