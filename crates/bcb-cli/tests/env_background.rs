//! The README's main command installs the eval env in the background while bcb builds:
//! `bcb-pyenv setup --background` returns at once holding the install lock, a `bcb evaluate`
//! started meanwhile waits for the install and then runs, and a later `bcb env setup` finds the
//! env current. A real install into a fresh folder (uv's cache makes it quick after the first).

mod evalkit;

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use evalkit::stderr;

/// `bcb-pyenv`, built beside `bcb` by the workspace build.
fn bcb_pyenv() -> PathBuf {
    let bcb = PathBuf::from(env!("CARGO_BIN_EXE_bcb"));
    let path = bcb.with_file_name("bcb-pyenv");
    assert!(
        path.exists(),
        "{} is missing: build the workspace (`cargo build --workspace`)",
        path.display()
    );
    path
}

#[test]
fn a_background_install_is_waited_for_by_evaluate_and_setup() {
    let Some(env) = evalkit::env() else { return };
    let env_dir = env.path("eval-env");
    let with_env = |cmd: &mut Command| {
        cmd.env("BCB_ENV_DIR", &env_dir)
            .env("BCB_CACHE_DIR", env.cache.path())
            .env_remove("BCB_PYTHON");
    };
    let start = Instant::now();
    let mut bg = Command::new(bcb_pyenv());
    bg.args(["setup", "--background", "--no-nltk"]);
    with_env(&mut bg);
    let out = bg.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    evalkit::assert_stderr_has(
        &out,
        &["installing the evaluation environment in the background"],
    );
    assert!(
        start.elapsed().as_secs() < 30,
        "--background returns once the install holds its lock, not when it is done"
    );
    assert!(
        !env_dir.join(".bcb-env-lock").exists(),
        "the install cannot be finished already"
    );

    // Started while the install runs: waits for it instead of failing for want of Python.
    let mut eval = env.bcb();
    eval.args([
        "evaluate",
        "--check-gt-only",
        "--subset",
        "full",
        "--ids",
        "13",
    ]);
    with_env(&mut eval);
    let out = eval.output().unwrap();
    let text = stderr(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("is being installed"), "{text}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Groundtruth pass rate: 1.000"), "{stdout}");
    let log = std::fs::read_to_string(env.path("eval-env.setup.log")).unwrap();
    assert!(log.contains("environment ready"), "{log}");

    let mut again = env.bcb();
    again.args(["env", "setup", "--no-nltk"]);
    with_env(&mut again);
    let out = again.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    evalkit::assert_stderr_has(&out, &["environment is current"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        env_dir.join("bin/python").to_string_lossy()
    );
}
