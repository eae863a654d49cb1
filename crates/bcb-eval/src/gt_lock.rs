//! One process at a time runs the ground truth of a cache file. Two runs that need the same
//! ground truth (two models evaluated at once on a fresh machine, a `bcb serve` starting
//! beside a `bcb evaluate`) would each run every canonical solution, halving each other's
//! speed, and a rewrite of the cache by one (a re-check, a merge of shards) would drop what
//! the other appended meanwhile. The first takes an advisory lock (`flock`) on
//! `{cache}.lock` while it reads, runs and writes the ground truth; the others wait and then
//! find it done. The kernel releases the lock however the holder ends (SIGKILL included):
//! a waiter then takes it and runs what is still missing.
//!
//! A wait ends: when the holder lets go, or with an error once the cache has not changed for
//! [`stall_bound`] (the holder stopped with Ctrl-Z, or something that is no run holds it).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bcb_envvars::EnvVars;

use crate::error::SessionError;

/// How often a waiting run looks at the lock and the cache again.
const POLL: Duration = Duration::from_millis(200);
/// How often at most a waiting run is told that the cache grew (each telling reads it).
const UPDATE: Duration = Duration::from_secs(2);
/// How long a wait may take to learn its holder's name before it says it waits without it.
const NAMING: Duration = Duration::from_secs(1);

/// Held while a run reads, runs and writes a ground truth; released when dropped.
pub struct GtLock {
    /// `None` where the filesystem has no file locks or the lock file cannot be made: the run
    /// goes on unlocked, as before there was a lock.
    file: Option<File>,
}

impl Drop for GtLock {
    /// Unnamed before it is let go, so a waiter never names a holder that has gone.
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            let _ = file.set_len(0);
        }
    }
}

/// `{cache}.lock`, beside the cache file (which is replaced by a rename when rewritten, so it
/// cannot carry the lock itself).
pub fn lock_path(cache: &Path) -> PathBuf {
    let mut s = cache.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// How long a holder may leave the cache unchanged before a waiter gives up: a holder
/// appends a verdict whenever a canonical solution ends, and none runs longer than its time
/// limit plus the time it may spend frozen (60 s at most) and its reaping. `BCB_GT_STALL_SECS`
/// sets it instead (tests shorten it).
pub fn stall_bound(gt_time_limit_secs: f64) -> Duration {
    let Ok(text) = std::env::var(EnvVars::BCB_GT_STALL_SECS) else {
        return default_stall_bound(gt_time_limit_secs);
    };
    match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Duration::from_secs_f64(secs),
        _ => {
            let name = EnvVars::BCB_GT_STALL_SECS;
            tracing::warn!("{name}={text:?} is not a number of seconds: the default bound holds");
            default_stall_bound(gt_time_limit_secs)
        }
    }
}

/// Three time limits and 30 s.
fn default_stall_bound(gt_time_limit_secs: f64) -> Duration {
    Duration::from_secs_f64(3.0 * gt_time_limit_secs + 30.0)
}

/// Takes the lock of the ground truth at `cache`, waiting while another process holds it.
/// `waiting` is told who holds it (as the holder wrote it: `pid N on HOST`) when a wait
/// starts, and again when the cache has grown since (every [`UPDATE`] at most), so a long
/// wait shows its progress.
pub fn lock(
    cache: &Path,
    stall: Duration,
    mut waiting: impl FnMut(Option<&str>) -> anyhow::Result<()>,
) -> Result<GtLock, SessionError> {
    let path = lock_path(cache);
    let file = match open(&path) {
        Ok(file) => file,
        Err(e) => {
            tracing::warn!(
                "cannot open {} ({e}): the ground truth is run without its lock",
                path.display()
            );
            return Ok(GtLock { file: None });
        }
    };
    let mut seen = fingerprint(cache);
    let mut changed_at = Instant::now();
    let waited = Instant::now();
    // When `waiting` was last told, and whether the cache changed since.
    let mut told: Option<Instant> = None;
    let mut grew = false;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => {
                if !bcb_samples::no_file_locks(&e) {
                    tracing::warn!("cannot lock {} ({e})", path.display());
                }
                return Ok(GtLock { file: None });
            }
        }
        if told.is_none_or(|t| grew && t.elapsed() >= UPDATE) {
            let name = holder(&path);
            // A holder that has just taken the lock may not have named itself yet: the first
            // word of a wait waits a moment for its name.
            if told.is_some() || name.is_some() || waited.elapsed() >= NAMING {
                waiting(name.as_deref())?;
                told = Some(Instant::now());
                grew = false;
            }
        }
        let now = fingerprint(cache);
        if now != seen {
            seen = now;
            changed_at = Instant::now();
            grew = true;
        } else if changed_at.elapsed() >= stall {
            return Err(SessionError::GroundTruthStalled {
                path: cache.to_path_buf(),
                holder: holder(&path),
                secs: changed_at.elapsed().as_secs_f64(),
            });
        }
        std::thread::sleep(POLL);
    }
    // Who holds it, for the messages of those who wait.
    let mut file = file;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let me = format!("pid {} on {}", std::process::id(), host.trim());
    if let Err(e) = file.set_len(0).and_then(|()| file.write_all(me.as_bytes())) {
        tracing::debug!("cannot write the holder into {}: {e}", path.display());
    }
    Ok(GtLock { file: Some(file) })
}

fn open(path: &Path) -> io::Result<File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// The holder as it wrote itself into the lock file, if it did.
fn holder(path: &Path) -> Option<String> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

/// What changes when a holder writes the cache: its file (a rewrite renames a new one in),
/// its length and its time of change.
fn fingerprint(cache: &Path) -> Option<(u64, u64, i64, i64)> {
    let m = std::fs::metadata(cache).ok()?;
    Some((m.ino(), m.len(), m.mtime(), m.mtime_nsec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_gives_up_after_three_time_limits_and_30_s() {
        // `--timeout 1`: a limit of max(1 s, --min-time-limit 1) + 1 = 2 s.
        assert_eq!(default_stall_bound(2.0), Duration::from_secs(36));
        assert_eq!(default_stall_bound(241.0), Duration::from_secs(753));
    }

    #[test]
    fn a_second_holder_waits_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("gt").join("k.jsonl");
        let first = lock(&cache, Duration::from_secs(60), |_| panic!("free")).unwrap();
        let (told, waiter) = std::sync::mpsc::channel();
        let second = std::thread::spawn({
            let cache = cache.clone();
            move || {
                lock(&cache, Duration::from_secs(60), |holder| {
                    told.send(holder.map(str::to_string)).unwrap();
                    Ok(())
                })
                .map(drop)
            }
        });
        let holder = waiter.recv_timeout(Duration::from_secs(10)).unwrap();
        let me = format!("pid {} on ", std::process::id());
        assert!(holder.is_some_and(|h| h.starts_with(&me)));
        assert!(!second.is_finished());
        drop(first);
        second.join().unwrap().unwrap();
        // Let go, a holder is no longer named.
        assert_eq!(std::fs::read(lock_path(&cache)).unwrap(), b"");
    }

    #[test]
    fn the_first_word_of_a_wait_names_a_holder_that_names_itself_a_moment_late() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("k.jsonl");
        let path = lock_path(&cache);
        let held = File::create(&path).unwrap();
        held.lock().unwrap();
        let (told, heard) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn({
            let cache = cache.clone();
            move || {
                lock(&cache, Duration::from_secs(60), |holder| {
                    let _ = told.send(holder.map(str::to_string));
                    Ok(())
                })
                .map(drop)
            }
        });
        std::thread::sleep(Duration::from_millis(300));
        std::fs::write(&path, "pid 1 on h").unwrap();
        let first = heard.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(first.as_deref(), Some("pid 1 on h"));
        drop(held);
        waiter.join().unwrap().unwrap();
    }

    #[test]
    fn a_wait_on_a_holder_that_writes_nothing_ends_with_an_error_and_a_growing_cache_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("k.jsonl");
        let _first = lock(&cache, Duration::from_secs(60), |_| Ok(())).unwrap();
        let started = Instant::now();
        let stall = Duration::from_millis(1500);
        // The cache grows for 2.7 s, then stops: the wait outlives the growth by `stall`.
        let writer = std::thread::spawn({
            let cache = cache.clone();
            move || {
                for i in 0..10 {
                    std::fs::write(&cache, "x".repeat(i + 1)).unwrap();
                    std::thread::sleep(Duration::from_millis(300));
                }
            }
        });
        let err = lock(&cache, stall, |_| Ok(())).err().expect("gave up");
        writer.join().unwrap();
        assert!(started.elapsed() >= Duration::from_millis(2700 + 1500));
        assert!(matches!(err, SessionError::GroundTruthStalled { .. }));
        let text = err.to_string();
        assert!(text.contains("k.jsonl") && text.contains("hint:"), "{text}");
    }
}
