//! What the tests of the Python harness share: their tools, skip-or-require as
//! `bcb_testkit::require` does (a missing tool skips the test; in CI, `CI=true`, it fails).

#![allow(dead_code)] // each test file uses part of this

use bcb_envvars::EnvVars;
use std::path::PathBuf;
use std::process::Command;

/// The harness's directory: `bcb_harness.py`, `bcb_harness/`, its `tests/` and `pyproject.toml`.
pub fn harness_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("harness")
}

/// Whether a missing dependency fails the test: in CI (`CI=true`), or when `require_var`
/// (one of bcb-testkit's `BCB_REQUIRE_*`) is `1`.
pub fn required(require_var: Option<&str>) -> bool {
    std::env::var(EnvVars::CI).is_ok_and(|v| v == "true")
        || require_var.is_some_and(|r| std::env::var(r).is_ok_and(|v| v == "1"))
}

/// The path in `var` if it is set and exists; otherwise the test skips (`None`), or fails
/// when the dependency is [`required`].
pub fn require(var: &str, require_var: Option<&str>, what: &str) -> Option<PathBuf> {
    let why = match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(p) if PathBuf::from(&p).exists() => return Some(PathBuf::from(p)),
        Some(p) => format!("{var}={} does not exist ({what})", p.to_string_lossy()),
        None => format!("set {var} to {what}"),
    };
    assert!(
        !required(require_var),
        "a test dependency is missing: {why}"
    );
    #[allow(clippy::print_stderr)] // a skipped test says why, as bcb-testkit's do
    {
        eprintln!("SKIPPED: {why}");
    }
    None
}

/// The eval env's interpreter (`BCB_PYTHON`), which the harness runs on.
pub fn eval_python() -> Option<PathBuf> {
    require(
        EnvVars::BCB_PYTHON,
        Some(EnvVars::BCB_REQUIRE_PYTHON),
        "the evaluation interpreter (`bcb env setup` prints it)",
    )
}

/// Runs `cmd`; its exit status and its stdout and stderr together.
pub fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{:?}: {e}", cmd.get_program()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}
