//! The Python evaluation environment: where it lives, how it is created from the embedded
//! lock, and how to find its interpreter.

use bcb_envvars::EnvVars;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use sha2::Digest;

/// The lock known to install on CPython 3.11 (from `../shared/eval-env/`): the upstream
/// pins, moved only where 3.11 wheels do not exist.
pub const LOCK_PY311: &str = include_str!("../../../../env/lock-py311.txt");

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
    bcb_dataset::cache_dir().join("eval-env-py311")
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
    let managed = env_python(&default_env_dir());
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

/// Whether the env at `dir` was built from the current lock.
pub fn is_current(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(MARKER)).is_ok_and(|s| s.trim() == lock_digest())
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
    std::fs::write(dir.join(MARKER), lock_digest())?;
    Ok(true)
}

/// Downloads NLTK data into `{env}/nltk_data` (on NLTK's default search path for the env).
/// Returns the packages that could not be fetched (offline machines).
pub fn fetch_nltk_data(dir: &Path) -> anyhow::Result<Vec<String>> {
    let target = dir.join("nltk_data");
    let script = format!(
        r#"
import json, socket, sys
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
print(json.dumps(missing))
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
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or("[]")
        .to_string();
    Ok(serde_json::from_str(&last).unwrap_or_default())
}

/// Identifies the environment verdicts come from, for cache keys: the lock of the managed env
/// (or the interpreter's path when another one is used) and the harness that drives it.
pub fn runtime_key(python: &Path) -> String {
    let env = if python == env_python(&default_env_dir()) && is_current(&default_env_dir()) {
        format!("lock:{}", lock_digest())
    } else {
        format!("python:{}", python.display())
    };
    format!("{env} harness:{}", super::slot::harness_digest())
}
