//! The Python evaluation environment: where it lives, how it is created from the embedded
//! lock, how to find its interpreter, and how an install runs in the background while bcb
//! builds ([`spawn_background`]). One install at a time per env folder: a lock file beside it
//! (`{env}.lock`) is held for the whole install, and whoever needs the interpreter while it is
//! held waits for it ([`resolve_python`]).

use bcb_envvars::EnvVars;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use sha2::Digest;

/// The lock known to install on CPython 3.11 (from `../shared/eval-env/`): the upstream
/// pins, moved only where 3.11 wheels do not exist.
pub const LOCK_PY311: &str = include_str!("../../../env/lock-py311.txt");

/// NLTK data the tasks use (nltk.download calls in the dataset, plus TextBlob's corpora).
pub const NLTK_PACKAGES: &[&str] = &[
    "stopwords",
    "punkt",
    "vader_lexicon",
    "words",
    "averaged_perceptron_tagger",
    "wordnet",
    "brown",
    "conll2000",
    "movie_reviews",
];

/// `{cache}/eval-env-py311`, or `$BCB_ENV_DIR`.
pub fn default_env_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(EnvVars::BCB_ENV_DIR) {
        return PathBuf::from(dir);
    }
    bcb_envvars::cache_dir().join("eval-env-py311")
}

pub fn env_python(env_dir: &Path) -> PathBuf {
    env_dir.join("bin").join("python")
}

/// The interpreter to evaluate with: `--python`, `$BCB_PYTHON`, else the managed env.
pub fn resolve_python(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        if !p.exists() {
            bail!("Python interpreter {} does not exist", p.display());
        }
        return Ok(p.to_path_buf());
    }
    let dir = default_env_dir();
    wait_for_install(&dir)?;
    let managed = env_python(&dir);
    if managed.exists() {
        return Ok(managed);
    }
    bail!(
        "no Python evaluation environment at {}: run `bcb env setup` (about 3 minutes), or pass --python / set BCB_PYTHON",
        default_env_dir().display()
    )
}

pub fn lock_digest() -> String {
    hex::encode(&sha2::Sha256::digest(LOCK_PY311.as_bytes())[..16])
}

const MARKER: &str = ".bcb-env-lock";

/// How the env is installed, beside the lock in the marker: an env installed by an older
/// recipe is completed by the next setup. 2: every module compiled to bytecode.
const RECIPE: &str = "recipe:2";

fn marker_text() -> String {
    format!("{} {RECIPE}", lock_digest())
}

/// Whether the env at `dir` was built from the current lock, by the current recipe.
pub fn is_current(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(MARKER)).is_ok_and(|s| s.trim() == marker_text())
        && env_python(dir).exists()
}

fn run(cmd: &mut Command, what: &str) -> anyhow::Result<()> {
    tracing::info!("running {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {what}: {cmd:?}"))?;
    if !status.success() {
        bail!("{what} failed ({status}): {cmd:?}");
    }
    Ok(())
}

/// Python `major.minor` of an interpreter.
pub fn python_version(python: &Path) -> anyhow::Result<String> {
    let out = Command::new(python)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    if !out.status.success() {
        bail!(
            "{} does not run: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Creates (or completes) the venv at `dir` from the lock. Idempotent: a current env is left
/// alone. `step` hears each stage as it starts (the CLI shows them).
pub fn setup(
    dir: &Path,
    base_python: &Path,
    force: bool,
    step: &mut dyn FnMut(&str),
) -> anyhow::Result<bool> {
    if is_current(dir) && !force {
        return Ok(false);
    }
    let _install = InstallLock::acquire(dir, step)?;
    // Another install may have finished while we waited for the lock.
    if is_current(dir) && !force {
        return Ok(false);
    }
    let version = python_version(base_python)?;
    if version != "3.11" {
        bail!(
            "the evaluation lock is for CPython 3.11 but {} is {version}: pass --base-python /path/to/python3.11",
            base_python.display()
        );
    }
    let py = env_python(dir);
    if !py.exists() {
        step(&format!("creating venv {}", dir.display()));
        run(
            Command::new(base_python).args(["-m", "venv"]).arg(dir),
            "python -m venv",
        )?;
    }
    let uv = dir.join("bin").join("uv");
    if !uv.exists() {
        step("installing uv into the venv");
        run(
            Command::new(&py).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "uv",
            ]),
            "pip install uv",
        )?;
    }
    let lock_file = dir.join("bcb-lock.txt");
    std::fs::write(&lock_file, LOCK_PY311)
        .with_context(|| format!("cannot write {}", lock_file.display()))?;
    step("installing the task libraries (168 packages; about 3 minutes from an empty cache)");
    run(
        Command::new(&uv)
            .args(["pip", "install", "--no-deps", "--python"])
            .arg(&py)
            .arg("-r")
            .arg(&lock_file),
        "uv pip install",
    )?;
    // Compiled now, once: samples run with PYTHONDONTWRITEBYTECODE on a read-only env, so a
    // module without its .pyc is compiled from source by every sample that imports it
    // (faker, pytz, sklearn's submodules: a sixth of a full ground truth's CPU). Here and not
    // by uv, which compiles nothing when it installs nothing (an env of an older recipe).
    // Files that do not compile (a package's Python 2 fixtures) cannot be imported either.
    step("compiling the libraries to bytecode");
    run(
        Command::new(&py).args([
            "-c",
            "import compileall, sysconfig; compileall.compile_dir(sysconfig.get_paths()['purelib'], quiet=2, workers=0)",
        ]),
        "compileall",
    )?;
    std::fs::write(dir.join(MARKER), marker_text())?;
    Ok(true)
}

/// Downloads NLTK data into `{env}/nltk_data` (on NLTK's default search path for the env).
/// Returns the packages that could not be fetched (offline machines).
pub fn fetch_nltk_data(dir: &Path) -> anyhow::Result<Vec<String>> {
    let target = dir.join("nltk_data");
    let script = format!(
        r#"
import socket, sys
socket.setdefaulttimeout(20)
import nltk
missing = []
for name in {names:?}:
    try:
        ok = nltk.download(name, download_dir={target:?}, quiet=True, raise_on_error=True)
    except Exception:
        ok = False
    if not ok:
        missing.append(name)
print("missing:" + " ".join(missing))
"#,
        names = NLTK_PACKAGES,
        target = target.to_string_lossy(),
    );
    let out = Command::new(env_python(dir))
        .args(["-c", &script])
        .output()
        .context("cannot run the env's python for nltk.download")?;
    if !out.status.success() {
        bail!(
            "nltk download script failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The script's last line: `missing:` and the names (NLTK package names have no spaces).
    let stdout = String::from_utf8_lossy(&out.stdout);
    let missing = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("missing:"))
        .unwrap_or_default();
    Ok(missing.split_whitespace().map(str::to_string).collect())
}

/// What [`setup_with_data`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupReport {
    /// False when the env was already current.
    pub installed: bool,
    /// NLTK packages that could not be downloaded (offline machines); `None`: not tried.
    pub nltk_missing: Option<Vec<String>>,
}

/// The whole `env setup`: the venv from the lock, then (unless `nltk` is false) the NLTK data.
/// The one flow behind `bcb env setup` and `bcb-pyenv setup`.
pub fn setup_with_data(
    req: &SetupRequest,
    step: &mut dyn FnMut(&str),
) -> anyhow::Result<SetupReport> {
    let installed = setup(&req.dir, &req.base_python, req.force, step)?;
    let nltk_missing = if req.nltk {
        Some(fetch_nltk_data(&req.dir)?)
    } else {
        None
    };
    Ok(SetupReport {
        installed,
        nltk_missing,
    })
}

/// The lines `env setup` ends with (both front-ends print them as they are).
pub fn report_lines(dir: &Path, report: &SetupReport) -> Vec<String> {
    let mut lines = vec![if report.installed {
        format!("environment ready: {}", dir.display())
    } else {
        format!("environment is current: {}", dir.display())
    }];
    match report.nltk_missing.as_deref() {
        None => {}
        Some([]) => lines.push(format!(
            "NLTK data present in {}",
            dir.join("nltk_data").display()
        )),
        Some(missing) => lines.push(format!(
            "warning: could not download NLTK data ({}): no network? Tasks that need it will fail; `bcb env check` lists them",
            missing.join(", ")
        )),
    }
    lines
}

/// `{env}.lock`, beside the env folder (which may not exist yet).
fn lock_path(dir: &Path) -> PathBuf {
    sibling(dir, "lock")
}

/// `{env}.setup.log`: what a background install prints.
pub fn background_log(dir: &Path) -> PathBuf {
    sibling(dir, "setup.log")
}

fn sibling(dir: &Path, ext: &str) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".");
    name.push(ext);
    dir.with_file_name(name)
}

fn open_lock(dir: &Path) -> anyhow::Result<std::fs::File> {
    let path = lock_path(dir);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the install lock {}", path.display()))
}

/// Held for the whole install: a second `env setup` (or a background one) waits instead of
/// installing into the same folder at once. An advisory `flock`, so a killed install never
/// leaves it held.
struct InstallLock(#[allow(dead_code)] std::fs::File);

impl InstallLock {
    fn acquire(dir: &Path, step: &mut dyn FnMut(&str)) -> anyhow::Result<InstallLock> {
        let file = open_lock(dir)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                step(&format!(
                    "another install into {} is running (log: {}); waiting for it",
                    dir.display(),
                    background_log(dir).display()
                ));
                file.lock().context("cannot wait for the install lock")?;
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).context("cannot take the install lock");
            }
        }
        Ok(InstallLock(file))
    }
}

/// Whether an install into `dir` holds its lock now.
pub fn install_running(dir: &Path) -> bool {
    let Ok(file) = open_lock(dir) else {
        return false;
    };
    matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock))
}

/// Blocks while an install into `dir` is running (a background `env setup` started before the
/// build), so a command that needs the interpreter starts as soon as it is there rather than
/// failing. Returns at once when none runs.
pub fn wait_for_install(dir: &Path) -> anyhow::Result<()> {
    if is_current(dir) || !install_running(dir) {
        return Ok(());
    }
    tracing::warn!(
        "the evaluation environment {} is being installed (log: {}); waiting for it",
        dir.display(),
        background_log(dir).display()
    );
    let file = open_lock(dir)?;
    file.lock().context("cannot wait for the install lock")?;
    Ok(())
}

/// How a background install started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Background {
    /// The env was already current: nothing started.
    Current,
    /// An install runs now (this one or an earlier one), writing to `log`.
    Running { log: PathBuf },
}

impl Background {
    /// The line both front-ends print.
    pub fn describe(&self, dir: &Path) -> String {
        match self {
            Background::Current => format!("environment is current: {}", dir.display()),
            Background::Running { log } => format!(
                "installing the evaluation environment in the background (log: {}); \
                 bcb waits for it when it needs the interpreter",
                log.display()
            ),
        }
    }
}

/// An `env setup`, as both front-ends (`bcb env setup`, `bcb-pyenv setup`) take it.
#[derive(Debug, Clone)]
pub struct SetupRequest {
    pub dir: PathBuf,
    pub base_python: PathBuf,
    pub force: bool,
    pub nltk: bool,
}

impl SetupRequest {
    /// The flags that repeat this request in the foreground (same spelling in both front-ends).
    fn foreground_args(&self) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec![
            "--env-dir".into(),
            self.dir.clone().into(),
            "--base-python".into(),
            self.base_python.clone().into(),
        ];
        if self.force {
            args.push("--force".into());
        }
        if !self.nltk {
            args.push("--no-nltk".into());
        }
        args
    }
}

/// Starts `program command… <req's flags>` (the foreground `env setup`) detached, its output
/// to [`background_log`], and returns once it holds the install lock, so whatever runs next
/// and needs the interpreter waits for it instead of racing it. A child that exits before
/// taking the lock (a bad base Python, say) is an error quoting its log.
pub fn spawn_background(
    req: &SetupRequest,
    program: &Path,
    command: &[&str],
) -> anyhow::Result<Background> {
    use std::os::unix::process::CommandExt;
    let dir = req.dir.as_path();
    if is_current(dir) {
        return Ok(Background::Current);
    }
    let log = background_log(dir);
    if install_running(dir) {
        return Ok(Background::Running { log });
    }
    let out =
        std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut child = Command::new(program)
        .args(command)
        .args(req.foreground_args())
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        // Its own process group: Ctrl-C meant for the build that follows does not stop it.
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))?;
    let started = std::time::Instant::now();
    loop {
        if install_running(dir) {
            return Ok(Background::Running { log });
        }
        if let Some(status) = child.try_wait()? {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if status.success() && is_current(dir) {
                return Ok(Background::Current);
            }
            bail!(
                "the background install exited ({status}) before it started:\n{}",
                text.trim_end()
            );
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            bail!(
                "the background install did not start within a minute (log: {})",
                log.display()
            );
        }
        // Polling a file lock: there is nothing to wait on, and this loop ends within
        // milliseconds (the child takes the lock before its first step).
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_and_the_log_sit_beside_the_env_folder() {
        let dir = Path::new("/x/cache/eval-env-py311");
        assert_eq!(lock_path(dir), Path::new("/x/cache/eval-env-py311.lock"));
        assert_eq!(
            background_log(dir),
            Path::new("/x/cache/eval-env-py311.setup.log")
        );
    }

    #[test]
    fn a_held_install_lock_is_seen_and_waited_for() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("env");
        assert!(!install_running(&dir));
        let held = InstallLock::acquire(&dir, &mut |_| {}).unwrap();
        assert!(install_running(&dir));
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let dir = dir.clone();
            std::thread::spawn(move || {
                wait_for_install(&dir).unwrap();
                tx.send(()).unwrap();
            })
        };
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(300))
            .is_err());
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        waiter.join().unwrap();
        assert!(!install_running(&dir));
    }
}
