//! Starting a harness process: the embedded harness, the modules a warm one preloads, the
//! environment a sample may see, the command line (clean environment, descriptors moved to
//! 3, 4, ...), and its stderr kept for error messages. Shared by slots and the zygote.

use bcb_envvars::EnvVars;
use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) const HARNESS: &str = include_str!("harness.py");

/// Short digest of the embedded harness: verdict caches are only valid for the same one.
pub(crate) fn harness_digest() -> String {
    crate::program_digest(HARNESS)
}

/// Modules a pool slot imports once (thread counts are forced to 1 by the environment first).
pub(crate) const PRELOAD: &[&str] = &[
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

/// Parent variables a sample may see (nothing that could hold a secret).
const ENV_ALLOW: &[&str] = &[
    EnvVars::LANG,
    EnvVars::LC_ALL,
    EnvVars::LC_CTYPE,
    EnvVars::LANGUAGE,
    EnvVars::TERM,
];

/// The environment of every harness process: an allow-list plus what tasks need.
pub(crate) fn sample_env(python: &Path, mplconfig: &Path) -> Vec<(String, String)> {
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
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// `python -I harness [args]` with a clean environment, `fds` moved to 3, 4, ... and every
/// other descriptor closed, in its own session; `join` (a `cgroup.procs` path) is entered
/// before the interpreter starts.
pub(crate) fn harness_command(
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
pub(crate) fn drain_stderr<R: Read + Send + 'static>(
    source: Option<R>,
) -> Arc<Mutex<VecDeque<u8>>> {
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

pub(crate) fn stderr_text(tail: &Mutex<VecDeque<u8>>) -> String {
    let t = tail.lock().unwrap();
    let (a, b) = t.as_slices();
    let mut s = String::from_utf8_lossy(a).into_owned();
    s.push_str(&String::from_utf8_lossy(b));
    s.trim().to_string()
}
