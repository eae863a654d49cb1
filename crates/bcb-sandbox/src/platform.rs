//! What kind of host the sandbox runs on (`bcb env check`'s first sandbox line and the run's
//! log): the cgroup hierarchy, whether namespaces can be made and how, the uid, Landlock's ABI.
//! Each decides which protections are possible; [`crate::Isolation`] says which are in force.

use serde::Serialize;

use std::path::PathBuf;

use crate::cgroups::subtree;
use crate::isolation::{host_isolation, landlock_abi};

/// The cgroup hierarchy mounted at /sys/fs/cgroup.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CgroupVersion {
    /// One hierarchy per controller (a tmpfs of v1 mounts), perhaps with a v2 one beside.
    V1,
    /// The unified hierarchy alone (cgroup2fs): bcb's cgroups go in a subtree it may write.
    V2,
    /// No cgroup file system at all.
    None,
}

/// `cgroup2fs`'s magic number (statfs(2)).
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

impl CgroupVersion {
    pub fn of_host() -> CgroupVersion {
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(c"/sys/fs/cgroup".as_ptr(), &mut st) } != 0 {
            return CgroupVersion::None;
        }
        if st.f_type as i64 == CGROUP2_SUPER_MAGIC {
            CgroupVersion::V2
        } else if std::fs::read_dir("/sys/fs/cgroup").is_ok_and(|mut d| d.next().is_some()) {
            CgroupVersion::V1
        } else {
            CgroupVersion::None
        }
    }

    fn name(self) -> &'static str {
        match self {
            CgroupVersion::V1 => "cgroup v1",
            CgroupVersion::V2 => "cgroup v2",
            CgroupVersion::None => "no cgroups",
        }
    }
}

/// The host as the sandbox sees it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Platform {
    pub cgroup: CgroupVersion,
    /// Namespaces made for each sample (directly as root, or in a user namespace).
    pub namespaces: bool,
    /// Through a user namespace of the slot's own.
    pub user_namespace: bool,
    pub uid: u32,
    /// 0: no Landlock.
    pub landlock_abi: i64,
    /// cgroup v2: the subtree bcb makes its slots' cgroups in, or why there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup_subtree: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup_subtree_refused: Option<String>,
}

impl Platform {
    pub fn of_host() -> Platform {
        let iso = host_isolation();
        Platform {
            cgroup: CgroupVersion::of_host(),
            namespaces: iso.mountns,
            user_namespace: iso.userns,
            uid: unsafe { libc::geteuid() },
            landlock_abi: landlock_abi().max(0),
            cgroup_subtree: None,
            cgroup_subtree_refused: None,
        }
        .with_subtree()
    }

    fn with_subtree(mut self) -> Platform {
        if self.cgroup == CgroupVersion::V2 {
            match subtree() {
                Ok(tree) => self.cgroup_subtree = Some(tree.base.clone()),
                Err(refused) => self.cgroup_subtree_refused = Some(refused.to_string()),
            }
        }
        self
    }
}

/// `cgroup v1, namespaces (in a user namespace), uid 1000, Landlock ABI 7`.
impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ns = match (self.namespaces, self.user_namespace) {
            (true, true) => "namespaces (in a user namespace)",
            (true, false) => "namespaces",
            (false, _) => "no namespaces",
        };
        let landlock = match self.landlock_abi {
            0 => "no Landlock".to_string(),
            abi => format!("Landlock ABI {abi}"),
        };
        let unwritable = match self.cgroup_subtree_refused {
            Some(_) => " (no subtree bcb may write)",
            None => "",
        };
        write!(
            f,
            "{}{unwritable}, {ns}, uid {}, {landlock}",
            self.cgroup.name(),
            self.uid
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_line_names_each_part() {
        let p = Platform {
            cgroup: CgroupVersion::V2,
            namespaces: false,
            user_namespace: false,
            uid: 1000,
            landlock_abi: 6,
            cgroup_subtree: None,
            cgroup_subtree_refused: Some("making a cgroup in /sys/fs/cgroup/x was refused".into()),
        };
        assert_eq!(
            p.to_string(),
            "cgroup v2 (no subtree bcb may write), no namespaces, uid 1000, Landlock ABI 6"
        );
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["cgroup"], "v2");
        // This machine's hierarchy is one of the three.
        let _ = CgroupVersion::of_host();
    }
}
