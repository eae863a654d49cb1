//! What the tests of the Python harness share: where it is, and running a tool on it.

#![allow(dead_code)] // each test file uses part of this

use std::path::PathBuf;
use std::process::Command;

/// The harness's directory: `bcb_harness.py`, `bcb_harness/`, its `tests/` and `pyproject.toml`.
pub fn harness_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("harness")
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
