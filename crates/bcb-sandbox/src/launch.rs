//! Starting a harness process: the embedded harness, the modules a warm one preloads, the
//! environment a sample may see, the command line (clean environment, descriptors moved to
//! 3, 4, ...), and its stderr kept for error messages. Shared by slots and the zygote.

use bcb_envvars::EnvVars;
use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `(path, text)` of each file of `harness/`, embedded from there.
macro_rules! harness_files {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../harness/", $path)))),*]
    };
}

/// The embedded harness, one `(path, text)` per file as a session writes it into its work
/// root: the entry script (`python -I` runs it; `ps` shows its name) and its package (see
/// `harness/bcb_harness/__init__.py`). The one list of its files (a test checks it against
/// `harness/`).
pub const HARNESS: &[(&str, &str)] = harness_files![
    "bcb_harness.py",
    "bcb_harness/__init__.py",
    "bcb_harness/account.py",
    "bcb_harness/audit.py",
    "bcb_harness/channel.py",
    "bcb_harness/cgroupfs.py",
    "bcb_harness/child.py",
    "bcb_harness/clock.py",
    "bcb_harness/freezer.py",
    "bcb_harness/guard.py",
    "bcb_harness/integrity.py",
    "bcb_harness/isolate.py",
    "bcb_harness/landlock.py",
    "bcb_harness/kernel.py",
    "bcb_harness/reap.py",
    "bcb_harness/recorder.py",
    "bcb_harness/rootfs.py",
    "bcb_harness/runner.py",
    "bcb_harness/script.py",
    "bcb_harness/slot.py",
    "bcb_harness/supervisor.py",
    "bcb_harness/watch.py",
    "bcb_harness/zygote.py",
];

/// The harness's entry script, relative to the work root.
const HARNESS_ENTRY: &str = "bcb_harness.py";

/// Writes the harness into `root`; returns the path of its entry script.
pub fn write_harness(root: &Path) -> std::io::Result<PathBuf> {
    for (rel, text) in HARNESS {
        let path = root.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(root.join(HARNESS_ENTRY))
}

/// Short digest of the embedded harness (every file, with its path): verdict caches are only
/// valid for the same one.
pub fn harness_digest() -> String {
    let mut all = String::new();
    for (rel, text) in HARNESS {
        all.push_str(rel);
        all.push('\0');
        all.push_str(text);
        all.push('\0');
    }
    bcb_executor::program_digest(&all)
}

/// Modules a pool slot imports once (thread counts are forced to 1 by the environment first).
pub const PRELOAD: &[&str] = &[
    "numpy",
    "pandas",
    "matplotlib",
    "scipy",
    "scipy.stats",
    "sklearn",
    "sklearn.model_selection",
    "sklearn.linear_model",
    "sklearn.preprocessing",
    "seaborn",
    "statsmodels.api",
    "requests",
    "bs4",
    "PIL.Image",
    "nltk",
    "unittest.mock",
    "ctypes",
    "select",
];

/// Modules the light slot imports once: the standard library's that the tasks importing
/// nothing else use most, and whose import takes a millisecond or more (the rest are there
/// after the interpreter's start anyway).
pub const LIGHT_PRELOAD: &[&str] = &[
    "unittest.mock",
    "ctypes",
    "select",
    "random",
    "shutil",
    "tempfile",
    "json",
    "doctest",
    "pathlib",
    "hashlib",
    "datetime",
    "csv",
    "glob",
    "zipfile",
    "urllib.request",
];

/// Parent variables a sample may see (nothing that could hold a secret).
const ENV_ALLOW: &[&str] = &[
    EnvVars::LANG,
    EnvVars::LC_ALL,
    EnvVars::LC_CTYPE,
    EnvVars::LANGUAGE,
    EnvVars::TERM,
];

/// The environment of every harness process: an allow-list plus what tasks need.
pub fn sample_env(python: &Path, mplconfig: &Path) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = ENV_ALLOW
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    if !env.iter().any(|(k, _)| k == EnvVars::LANG) {
        env.push((EnvVars::LANG.into(), "C.UTF-8".into()));
    }
    // The eval env's bin first, so `python` / console scripts in tasks resolve to it.
    let mut path = String::new();
    if let Some(bin) = python.parent() {
        path.push_str(&bin.to_string_lossy());
        path.push(':');
    }
    path.push_str("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    env.push((EnvVars::PATH.into(), path));
    for (k, v) in [
        ("TZ", "UTC"),
        ("OMP_NUM_THREADS", "1"),
        ("OPENBLAS_NUM_THREADS", "1"),
        ("MKL_NUM_THREADS", "1"),
        ("NUMEXPR_NUM_THREADS", "1"),
        ("VECLIB_MAXIMUM_THREADS", "1"),
        ("TF_CPP_MIN_LOG_LEVEL", "3"),
        ("TF_ENABLE_ONEDNN_OPTS", "0"),
        ("MPLBACKEND", "Agg"),
        ("PYTHONDONTWRITEBYTECODE", "1"),
        ("PYTHONIOENCODING", "utf-8"),
    ] {
        env.push((k.into(), v.into()));
    }
    env.push((
        "MPLCONFIGDIR".into(),
        mplconfig.to_string_lossy().into_owned(),
    ));
    env
}

/// How long a slot (or the zygote) may take to import its preloads and say it is ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// `python -I harness [args]` with a clean environment, `fds` moved to 3, 4, ... and every
/// other descriptor closed, in its own session; `join` (a `cgroup.procs` path) is entered
/// before the interpreter starts.
pub fn harness_command(
    python: &Path,
    harness: &Path,
    env: &[(String, String)],
    workdir: &Path,
    fds: &[i32],
    join: Option<std::ffi::CString>,
) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg("-I")
        .arg(harness)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(workdir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Checked here: a panic in `pre_exec` (after the fork) would be no way to say it.
    assert!(fds.len() <= 4, "at most 4 descriptors move to 3, 4, ...");
    let fds = fds.to_vec();
    unsafe {
        cmd.pre_exec(move || {
            // Move the given descriptors to 3, 4, ... (dup2 clears close-on-exec); first out
            // of the way, so that none is overwritten before it moved.
            let mut high = [0i32; 4];
            for (i, fd) in fds.iter().enumerate() {
                high[i] = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 10);
                if high[i] < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (i, fd) in high[..fds.len()].iter().enumerate() {
                if libc::dup2(*fd, 3 + i as i32) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // Whatever the launcher left open (CI runners do) closes at exec: only 0 to 2 and
            // ours reach the harness. CLOEXEC rather than close, so std's own exec-error pipe
            // keeps working; a kernel without close_range gets the same by a loop.
            let first = 3 + fds.len() as u32;
            if libc::syscall(
                libc::SYS_close_range,
                first,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            ) != 0
            {
                for fd in first as i32..65536 {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            // Own session: the whole slot can be killed as a group.
            libc::setsid();
            if let Some(procs) = &join {
                // Warm up inside the freezer cgroup (no allocation after fork: raw calls).
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
                if fd >= 0 {
                    libc::write(fd, b"0".as_ptr().cast(), 1);
                    libc::close(fd);
                }
            }
            Ok(())
        });
    }
    cmd
}

/// Drains a harness's stderr forever on a thread, keeping the last few KB for error messages.
pub fn drain_stderr<R: Read + Send + 'static>(source: Option<R>) -> Arc<Mutex<VecDeque<u8>>> {
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    if let Some(mut err) = source {
        let tail = tail.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut t = tail.lock().unwrap();
                t.extend(&buf[..n]);
                while t.len() > 8192 {
                    t.pop_front();
                }
            }
        });
    }
    tail
}

pub fn stderr_text(tail: &Mutex<VecDeque<u8>>) -> String {
    let t = tail.lock().unwrap();
    let (a, b) = t.as_slices();
    let mut s = String::from_utf8_lossy(a).into_owned();
    s.push_str(&String::from_utf8_lossy(b));
    s.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `.py` file under `harness/` is embedded (a module left out would fail only at a
    /// slot's start), and each stays a module of one job (at most 600 lines). `harness/tests/`
    /// holds its unit tests (`tests/harness_python.rs`), which are not.
    #[test]
    fn the_harness_list_is_every_file_of_harness_dir() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness");
        let mut on_disk = Vec::new();
        let mut todo = vec![dir.clone()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    if p.file_name().is_some_and(|n| n != "__pycache__") && p != dir.join("tests") {
                        todo.push(p);
                    }
                } else if p.extension().is_some_and(|x| x == "py") {
                    on_disk.push(p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        on_disk.sort();
        let mut listed: Vec<String> = HARNESS.iter().map(|(p, _)| p.to_string()).collect();
        listed.sort();
        assert_eq!(listed, on_disk);
        for (path, text) in HARNESS {
            let n = text.lines().count();
            assert!(n <= 600, "{path}: {n} lines");
        }
    }

    #[test]
    fn the_harness_is_written_as_listed() {
        let root = tempfile::tempdir().unwrap();
        let entry = write_harness(root.path()).unwrap();
        assert_eq!(entry, root.path().join("bcb_harness.py"));
        for (rel, text) in HARNESS {
            assert_eq!(
                std::fs::read_to_string(root.path().join(rel)).unwrap(),
                *text
            );
        }
    }
}
