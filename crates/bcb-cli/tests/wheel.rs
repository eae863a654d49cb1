//! bcb as a Python wheel (pyproject.toml at the repository root, maturin with binary
//! bindings): built with the dev profile (the artifacts `cargo build` already made), installed
//! into a fresh venv, then every console script under the original's name answers `--help`
//! as `bcb <command>` does, and `bigcodebench.evaluate` with the original's flags evaluates one
//! hard task on the real eval env and writes both result files.

mod evalkit;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

const SCRIPTS: [(&str, &str); 5] = [
    ("bigcodebench.evaluate", "evaluate"),
    ("bigcodebench.generate", "generate"),
    ("bigcodebench.sanitize", "sanitize"),
    ("bigcodebench.syncheck", "syncheck"),
    ("bigcodebench.inspect", "inspect"),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `cmd`, echoes its output, panics (with it) unless it succeeded; returns stdout.
fn run_ok(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("$ {what}\n{stdout}{stderr}");
    assert!(out.status.success(), "{what} failed: {}", out.status);
    stdout
}

/// `maturin build` of the workspace's pyproject.toml into `dist`: the wheel's path.
fn build_wheel(maturin: &Path, dist: &Path) -> PathBuf {
    let mut cmd = Command::new(maturin);
    cmd.current_dir(workspace())
        .args(["build", "--profile", "dev", "--out"])
        .arg(dist);
    // The test harness's cargo variables would make cargo see another build and recompile.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().to_string();
        if key.starts_with("CARGO_") && key != "CARGO_HOME" && key != "CARGO_TARGET_DIR" {
            cmd.env_remove(&key);
        }
    }
    run_ok(&mut cmd, "maturin build --profile dev");
    let wheels: Vec<PathBuf> = std::fs::read_dir(dist)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    assert_eq!(
        wheels.len(),
        1,
        "one wheel in {}: {wheels:?}",
        dist.display()
    );
    wheels.into_iter().next().unwrap()
}

#[test]
fn wheel_installs_the_originals_console_scripts_and_evaluates_one_task() {
    let Some(maturin) = bcb_testkit::maturin() else {
        return;
    };
    let Some(env) = evalkit::env() else {
        return;
    };
    let dist = env.path("dist");
    let wheel = build_wheel(&maturin, &dist);
    let name = wheel.file_name().unwrap().to_string_lossy().to_string();
    assert!(name.starts_with("bcb-"), "{name}");

    // A fresh venv from the Python maturin runs on (setup-wheel.sh made it), then the wheel.
    let python = maturin.with_file_name("python");
    let venv = env.path("venv");
    run_ok(
        Command::new(&python).args(["-m", "venv"]).arg(&venv),
        "python -m venv",
    );
    run_ok(
        Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--no-index",
                "--no-deps",
                "--disable-pip-version-check",
            ])
            .arg(&wheel),
        "pip install bcb-*.whl",
    );
    let bin = venv.join("bin");
    assert!(bin.join("bcb").is_file(), "the wheel installs bcb itself");
    let version = run_ok(
        Command::new(bin.join("bcb")).arg("--version"),
        "bcb --version",
    );
    assert!(version.starts_with("bcb "), "{version}");

    for (script, command) in SCRIPTS {
        let help = run_ok(
            Command::new(bin.join(script)).arg("--help"),
            &format!("{script} --help"),
        );
        assert!(
            help.contains(&format!("Usage: bcb {command}")),
            "{script} --help is `bcb {command} --help`:\n{help}"
        );
    }

    // One hard task, a right and a wrong answer, the original's spelling of every flag.
    let task = "BigCodeBench/19";
    let row = env.task(task);
    let right = format!(
        "{}{}",
        row["complete_prompt"].as_str().unwrap(),
        row["canonical_solution"].as_str().unwrap()
    );
    let samples =
        env.path("m--main--bigcodebench-hard-complete--wheel-0-2-sanitized_calibrated.jsonl");
    evalkit::write_jsonl(
        &samples,
        &[
            json!({"task_id": task, "solution": right}),
            json!({"task_id": task, "solution": "def task_func(directory):\n    return None\n"}),
        ],
    );
    let mut evaluate = Command::new(bin.join("bigcodebench.evaluate"));
    evaluate
        .current_dir(env.work.path())
        .env("BCB_CACHE_DIR", env.cache.path())
        .env("BCB_DATASET_DIR", &env.dataset_dir)
        .env("BCB_PYTHON", &env.python)
        .env("BCB_OFFLINE", "1")
        .args([
            "--execution",
            "local",
            "--split",
            "complete",
            "--subset",
            "hard",
            "--samples",
        ])
        .arg(&samples)
        .args([
            "--selective_evaluate",
            task,
            "--parallel",
            "2",
            "--pass_k",
            "1,2",
            "--save_pass_rate",
        ]);
    run_ok(
        &mut evaluate,
        "bigcodebench.evaluate ... --selective_evaluate",
    );

    let results = evalkit::read_json(&bcb_samples::eval_results_path(&samples));
    let statuses: Vec<&str> = results["eval"][task]
        .as_array()
        .unwrap_or_else(|| panic!("{task} in the results: {results}"))
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["pass", "fail"]);
    let pass_at_k = evalkit::read_json(&bcb_samples::pass_at_k_path(
        &bcb_samples::eval_results_path(&samples),
    ));
    assert_eq!(pass_at_k["pass@1"], json!(0.5), "{pass_at_k}");
    assert_eq!(pass_at_k["pass@2"], json!(1.0), "{pass_at_k}");
    assert_eq!(pass_at_k["gt_pass_rate"], json!(1.0), "{pass_at_k}");
}
