//! A run's private work folder, `bcb-exec-{pid}-{pidns}-…` in the temp dir: removed when the
//! run ends, on an interrupt (`bcb_executor::stop::request`), and, for a bcb killed with SIGKILL, by
//! the next bcb's start (the pid in the name says whose it is; the PID namespace's inode keeps
//! a bcb from judging the pids of another namespace sharing the temp dir, as containers of
//! one pod may). Before, every interrupted or killed run left its folder, slots' dirs and
//! harness copy behind for good.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::cgroups::pid_is_gone;

const PREFIX: &str = "bcb-exec-";

/// The inode of our PID namespace (0 where /proc does not say).
fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").map_or(0, |m| m.ino())
}

/// `{PREFIX}{pid}-{pidns}-`: a work folder of process `pid` in namespace `pidns`.
fn name_prefix(pid: u32, pidns: u64) -> String {
    format!("{PREFIX}{pid}-{pidns}-")
}

/// The owner's pid of a work folder made in our PID namespace.
fn owner_here(name: &std::ffi::OsStr, pidns: u64) -> Option<i32> {
    let mut fields = name.to_str()?.strip_prefix(PREFIX)?.split('-');
    let pid = fields.next()?.parse().ok()?;
    (fields.next()?.parse::<u64>().ok()? == pidns).then_some(pid)
}

/// The folders of this process's live [`WorkRoot`]s, for [`remove_live`].
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The work folder of one executor, removed on drop.
pub struct WorkRoot(tempfile::TempDir);

impl WorkRoot {
    pub fn create() -> std::io::Result<WorkRoot> {
        let dir = tempfile::Builder::new()
            .prefix(&name_prefix(std::process::id(), pid_namespace()))
            .tempdir()?;
        live().push(dir.path().to_path_buf());
        Ok(WorkRoot(dir))
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for WorkRoot {
    fn drop(&mut self) {
        live().retain(|d| d != self.0.path());
    }
}

/// Removes every work folder this process holds: called once its samples are killed and the
/// process is about to exit (its destructors never run after `exit`).
pub fn remove_live() {
    for dir in live().drain(..) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Removes the work folders in `tmp` of bcb processes that are gone. Called after the stale
/// cgroups' sweep, which kills any sample still working in them.
pub fn sweep_stale(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    let pidns = pid_namespace();
    for entry in entries.flatten() {
        if owner_here(&entry.file_name(), pidns).is_some_and(pid_is_gone) {
            let _ = std::fs::remove_dir_all(entry.path());
            tracing::debug!("removed the stale work folder {}", entry.path().display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_bcbs_folder_is_swept_and_a_live_ones_and_a_strangers_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = {
            let mut c = std::process::Command::new("true").spawn().unwrap();
            c.wait().unwrap();
            c.id()
        };
        let here = pid_namespace();
        let stale = tmp
            .path()
            .join(format!("{}abc123", name_prefix(dead, here)));
        let ours = tmp
            .path()
            .join(format!("{}abc123", name_prefix(std::process::id(), here)));
        // A dead pid of another PID namespace may be a live bcb there.
        let elsewhere = tmp
            .path()
            .join(format!("{}abc123", name_prefix(dead, here + 1)));
        let old_style = tmp.path().join(format!("{PREFIX}Xy12Zq"));
        for dir in [&stale, &ours, &elsewhere, &old_style] {
            std::fs::create_dir_all(dir.join("w0")).unwrap();
            std::fs::write(dir.join("w0").join("f"), "x").unwrap();
        }
        sweep_stale(tmp.path());
        assert!(!stale.exists(), "the dead owner's folder is removed");
        assert!(ours.exists(), "a live owner's folder stays");
        assert!(elsewhere.exists(), "another PID namespace's folder stays");
        assert!(old_style.exists(), "a folder without an owner's pid stays");
    }

    #[test]
    fn remove_live_removes_what_this_process_holds() {
        let root = WorkRoot::create().unwrap();
        let path = root.path().to_path_buf();
        assert!(path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(&name_prefix(std::process::id(), pid_namespace())));
        remove_live();
        assert!(!path.exists());
        drop(root);
    }
}
