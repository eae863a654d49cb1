//! The harness's Python is checked as bcb's Rust is: `ruff check` over it (the rules and their
//! reasons: `harness/pyproject.toml`) and its unit tests (`harness/tests/`, pytest), with the
//! pinned tools of `.ci/setup-harness-checks.sh` (`BCB_RUFF`, `BCB_PYTEST_PYTHON`). pytest runs
//! on that venv's interpreter, made from python3.11 as the eval env is (checked below): the
//! eval env is what samples run in, installed from its lock, and gets nothing for bcb's tests.

mod common;

use bcb_envvars::EnvVars;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the tool in `var` with `args` in the harness's directory: the tool, whether it
/// succeeded, its output; `None` when the tool is missing (the test skips).
fn in_harness(var: &str, what: &str, args: &[&str]) -> Option<(PathBuf, bool, String)> {
    let tool = bcb_testkit::require(bcb_testkit::Need::Harness, var, what)?;
    let (ok, out) = common::run(
        Command::new(&tool)
            .args(args)
            .current_dir(common::harness_dir()),
    );
    Some((tool, ok, out))
}

#[test]
fn ruff_finds_nothing_in_the_harness() {
    let what = "the ruff executable (`.ci/setup-harness-checks.sh` prints BCB_RUFF=...)";
    let args = ["check", "--no-cache", "--no-fix", "."];
    if let Some((_, ok, out)) = in_harness(EnvVars::BCB_RUFF, what, &args) {
        assert!(
            ok,
            "ruff check in crates/bcb-sandbox/harness (rules in its pyproject.toml):\n{out}"
        );
    }
}

/// `major.minor` of an interpreter.
fn version(python: &Path) -> String {
    let (ok, out) = common::run(
        Command::new(python).args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"]),
    );
    assert!(ok, "{}: {out}", python.display());
    out.trim().to_string()
}

#[test]
fn the_harness_unit_tests_pass() {
    let what =
        "a Python 3.11 with pytest (`.ci/setup-harness-checks.sh` prints BCB_PYTEST_PYTHON=...)";
    // -B and the config's `-p no:cacheprovider`: nothing written into the source tree.
    let args = ["-I", "-B", "-m", "pytest", "-q"];
    let Some((python, ok, out)) = in_harness(EnvVars::BCB_PYTEST_PYTHON, what, &args) else {
        return;
    };
    assert!(ok, "pytest in crates/bcb-sandbox/harness:\n{out}");
    assert!(out.contains(" passed"), "{out}");
    if let Some(eval) = std::env::var_os(EnvVars::BCB_PYTHON).filter(|p| Path::new(p).exists()) {
        assert_eq!(
            version(&python),
            version(Path::new(&eval)),
            "the harness's tests run on the eval env's Python version"
        );
    }
}
