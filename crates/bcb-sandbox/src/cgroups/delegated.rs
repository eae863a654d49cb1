//! The unified hierarchy's (cgroup v2) subtree where bcb may make its slots' cgroups.
//!
//! Root on a host uses the hierarchy's root, as it uses the v1 hierarchies' roots. Anyone else
//! (a user in `systemd-run --user --scope -p Delegate=yes`, root in a container's cgroup
//! namespace) uses the cgroup it was started in, if it may write there. Below the root a
//! cgroup that hands controllers to its children may hold no process itself, so the
//! processes already in it (bcb, perhaps the shell of the scope) move first to a leaf beside
//! the slots, [`LEAF`]; a bcb started later from there finds its parent set up. Where no
//! subtree is writable, [`subtree`] says why (`bcb env check` prints it).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where the unified hierarchy is mounted.
pub const MOUNT: &str = "/sys/fs/cgroup";
/// The leaf the processes of a delegated cgroup move to (not a `bcb-{pid}-…` slot name, so
/// never swept).
pub const LEAF: &str = "bcb.supervisors";
/// The controllers a slot's cgroup uses, each where the parent offers it.
const CONTROLLERS: [&str; 3] = ["memory", "pids", "cpu"];

/// The subtree bcb makes its slots' cgroups in.
#[derive(Debug, Clone)]
pub struct Subtree {
    pub base: PathBuf,
    /// Those of [`CONTROLLERS`] the base hands to its children.
    pub controllers: Vec<String>,
}

impl Subtree {
    pub fn has(&self, controller: &str) -> bool {
        self.controllers.iter().any(|c| c == controller)
    }
}

/// Why no subtree could be used.
#[derive(Debug)]
pub struct NoSubtree {
    /// The cgroup bcb tried.
    pub tried: PathBuf,
    /// The step that was refused.
    pub step: SubtreeStep,
    pub error: io::Error,
}

/// What bcb does to a cgroup to use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubtreeStep {
    MakeFolder,
    MoveProcesses,
    EnableControllers,
}

impl std::fmt::Display for NoSubtree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let step = match self.step {
            SubtreeStep::MakeFolder => "making a cgroup in",
            SubtreeStep::MoveProcesses => "moving its processes to a leaf of",
            SubtreeStep::EnableControllers => "handing controllers down from",
        };
        write!(
            f,
            "{step} {} was refused: {}",
            self.tried.display(),
            self.error
        )
    }
}

/// The subtree of this process, found (and set up) once.
pub fn subtree() -> &'static Result<Subtree, NoSubtree> {
    static SUBTREE: OnceLock<Result<Subtree, NoSubtree>> = OnceLock::new();
    SUBTREE.get_or_init(set_up)
}

/// This process's cgroup in the unified hierarchy (`0::/path` in /proc/self/cgroup, relative
/// to its cgroup namespace); the mount itself where it does not say.
pub fn own_v2_cgroup() -> PathBuf {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    cgroups
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|path| Path::new(MOUNT).join(path.trim_start_matches('/')))
        .filter(|dir| dir.is_dir())
        .unwrap_or_else(|| PathBuf::from(MOUNT))
}

/// The hierarchy's root, as the init cgroup namespace sees it (only there has it no
/// `cgroup.type`).
fn is_true_root(dir: &Path) -> bool {
    dir == Path::new(MOUNT) && !dir.join("cgroup.type").exists()
}

fn set_up() -> Result<Subtree, NoSubtree> {
    let root = Path::new(MOUNT);
    let base = if unsafe { libc::geteuid() } == 0 && is_true_root(root) {
        root.to_path_buf()
    } else {
        let own = own_v2_cgroup();
        match (own.file_name(), own.parent()) {
            (Some(name), Some(parent)) if name == LEAF => parent.to_path_buf(),
            _ => own,
        }
    };
    let refused = |step, error| NoSubtree {
        tried: base.clone(),
        step,
        error,
    };
    // Nothing is moved before bcb knows it may make its folders here.
    let probe = base.join(format!("bcb-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).map_err(|e| refused(SubtreeStep::MakeFolder, e))?;
    let _ = std::fs::remove_dir(&probe);
    if !is_true_root(&base) {
        move_processes_to_leaf(&base).map_err(|e| refused(SubtreeStep::MoveProcesses, e))?;
    }
    let offered = read_words(&base.join("cgroup.controllers"));
    let control = base.join("cgroup.subtree_control");
    for controller in CONTROLLERS {
        if offered.iter().any(|c| c == controller)
            && !read_words(&control).contains(&controller.to_string())
        {
            std::fs::write(&control, format!("+{controller}"))
                .map_err(|e| refused(SubtreeStep::EnableControllers, e))?;
        }
    }
    let enabled = read_words(&control);
    Ok(Subtree {
        controllers: CONTROLLERS
            .iter()
            .filter(|c| enabled.iter().any(|e| e == *c))
            .map(|c| c.to_string())
            .collect(),
        base,
    })
}

/// Moves every process of `base` into its [`LEAF`] (processes may start meanwhile: a few
/// rounds, then the kernel's refusal to hand controllers down says what is left).
fn move_processes_to_leaf(base: &Path) -> io::Result<()> {
    let leaf = base.join(LEAF);
    for _ in 0..10 {
        let pids = read_words(&base.join("cgroup.procs"));
        if pids.is_empty() {
            return Ok(());
        }
        match std::fs::create_dir(&leaf) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        for pid in pids {
            if let Err(e) = std::fs::write(leaf.join("cgroup.procs"), &pid) {
                // Gone meanwhile: nothing to move.
                if e.raw_os_error() != Some(libc::ESRCH) {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

fn read_words(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}
