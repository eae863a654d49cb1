//! One run at a time per samples file: an advisory lock (`flock`) on its journal, held for a
//! whole run and released by the kernel when the process ends, however it ends. Two
//! `bcb generate` runs on one file would each ask for the samples still missing, append them
//! to one journal, and the first to finish would remove the journal the other still appends
//! to: the other's final file is then written without any of them. Two `bcb evaluate` runs of
//! one file would run every sample twice, and one under other settings would start the
//! other's journal afresh under it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Attempts at taking the lock of a path whose file keeps being replaced under it.
const ATTEMPTS: usize = 100;

/// The lock on a journal (created empty if absent). A journal still empty when the lock is
/// dropped is removed: a run that wrote nothing leaves nothing to resume from.
pub struct JournalLock {
    file: File,
    path: PathBuf,
}

/// Why a run did not get the lock on its journal.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot open the journal {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Another run holds it: the caller's words for what is busy, with a hint.
    #[error("{0}")]
    Held(String),
}

impl JournalLock {
    /// Takes the lock on `path`, or refuses with `held()` (what is busy, with a `hint:`)
    /// while another process holds it.
    pub fn acquire(path: &Path, held: impl FnOnce() -> String) -> Result<JournalLock, LockError> {
        match Self::try_acquire(path) {
            Ok(Some(lock)) => Ok(lock),
            Ok(None) => Err(LockError::Held(held())),
            Err(source) => Err(LockError::Open {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Takes the lock on `path`; `Ok(None)` while another process holds it.
    fn try_acquire(path: &Path) -> io::Result<Option<JournalLock>> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        for _ in 0..ATTEMPTS {
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .create(true)
                .open(path)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => return Ok(None),
                Err(TryLockError::Error(e)) if no_file_locks(&e) => {
                    tracing::warn!(
                        "cannot lock {} ({e}): its filesystem has no file locks, so nothing stops a second run on the same file",
                        path.display()
                    );
                    return Ok(Some(JournalLock {
                        file,
                        path: path.to_path_buf(),
                    }));
                }
                Err(TryLockError::Error(e)) => return Err(e),
            }
            // The holder before us may have removed the path as it finished (its journal went
            // into the final file): the lock must be on the file now at the path.
            if is_at(&file, path)? {
                return Ok(Some(JournalLock {
                    file,
                    path: path.to_path_buf(),
                }));
            }
        }
        Err(io::Error::other(format!(
            "{} was replaced {ATTEMPTS} times while being locked",
            path.display()
        )))
    }

    /// Empties the journal (a run that starts afresh), keeping the file and its lock.
    pub fn clear(&self) -> io::Result<()> {
        self.file.set_len(0)
    }
}

/// Whether a lock failed because the filesystem has none (Lustre mounted without `flock`
/// answers ENOSYS, some network filesystems ENOLCK or EOPNOTSUPP): the run goes on unlocked,
/// as it did before there was a lock.
pub fn no_file_locks(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSYS | libc::ENOLCK | libc::EOPNOTSUPP)
    )
}

/// Whether `path` names the open `file`.
fn is_at(file: &File, path: &Path) -> io::Result<bool> {
    let held = file.metadata()?;
    match std::fs::metadata(path) {
        Ok(m) => Ok(m.dev() == held.dev() && m.ino() == held.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

impl Drop for JournalLock {
    fn drop(&mut self) {
        let empty = self.file.metadata().is_ok_and(|m| m.len() == 0);
        if empty && is_at(&self.file, &self.path).unwrap_or(false) {
            if let Err(e) = std::fs::remove_file(&self.path) {
                tracing::warn!("cannot remove the empty {}: {e}", self.path.display());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lock on `path`, which must be free.
    fn take(path: &Path) -> JournalLock {
        JournalLock::try_acquire(path).unwrap().expect("free")
    }

    fn held_elsewhere(path: &Path) -> bool {
        JournalLock::try_acquire(path).unwrap().is_none()
    }

    #[test]
    fn a_held_journal_is_refused_until_its_holder_lets_go_and_an_empty_one_goes() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("out").join("a.jsonl.partial.jsonl");
        let first = take(&journal);
        // Another open file description is another holder, as another process would be.
        assert!(held_elsewhere(&journal));
        drop(first);
        assert!(
            !journal.exists(),
            "an empty journal is removed with its lock"
        );
        let second = take(&journal);
        std::fs::write(&journal, b"{\"task_id\":\"x\"}\n").unwrap();
        drop(second);
        assert!(
            journal.exists(),
            "a journal with records stays for the next run"
        );
    }

    #[test]
    fn only_a_filesystem_without_locks_lets_a_run_go_on_unlocked() {
        for errno in [libc::ENOSYS, libc::ENOLCK, libc::EOPNOTSUPP] {
            assert!(no_file_locks(&io::Error::from_raw_os_error(errno)));
        }
        for errno in [libc::EIO, libc::EBADF, libc::EINTR] {
            assert!(!no_file_locks(&io::Error::from_raw_os_error(errno)));
        }
    }

    #[test]
    fn a_journal_removed_by_its_last_holder_is_locked_afresh_at_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("a.jsonl.partial.jsonl");
        let old = take(&journal);
        std::fs::write(&journal, b"{}\n").unwrap();
        // A finished run removes its journal while it still holds the lock on it.
        std::fs::remove_file(&journal).unwrap();
        let new = take(&journal);
        assert!(is_at(&new.file, &journal).unwrap());
        assert!(!is_at(&old.file, &journal).unwrap());
        assert!(held_elsewhere(&journal), "held by `new`");
        std::fs::write(&journal, b"{}\n").unwrap();
        new.clear().unwrap();
        assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0);
    }
}
