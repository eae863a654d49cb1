//! Shared helpers for the `bcb evaluate` end-to-end tests: the real dataset, the real eval
//! env, a private cache per test, and a way to run the binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Env {
    pub python: PathBuf,
    pub dataset_dir: PathBuf,
    pub cache: tempfile::TempDir,
    pub work: tempfile::TempDir,
}

/// The real dataset and Python env, or `None` (with a message) when they are not set up.
/// With `BCB_REQUIRE_PYTHON=1` / `BCB_REQUIRE_DATA=1` (CI) a missing one fails the test.
pub fn env() -> Option<Env> {
    Some(Env {
        python: bcb_testkit::python()?,
        dataset_dir: bcb_testkit::dataset_dir()?,
        cache: tempfile::tempdir().unwrap(),
        work: tempfile::tempdir().unwrap(),
    })
}

impl Env {
    /// `bcb` with this test's cache and the real data and env.
    pub fn bcb(&self) -> Command {
        let mut cmd = bcb_over(&self.dataset_dir);
        cmd.env("BCB_CACHE_DIR", self.cache.path())
            .env("BCB_PYTHON", &self.python)
            .env_remove("BIGCODEBENCH_TIMEOUT_PER_TASK");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        run_logged(self.bcb(), args)
    }

    /// `bcb evaluate` of `samples` on tasks `ids` of the complete split, full subset, with
    /// `extra` flags.
    pub fn evaluate(&self, ids: &str, samples: &Path, extra: &[&str]) -> Output {
        let samples = samples.to_str().unwrap();
        let mut args = vec![
            "evaluate", "--split", "complete", "--subset", "full", "--ids", ids,
        ];
        args.extend_from_slice(extra);
        args.extend(["--samples", samples]);
        self.run(&args)
    }

    /// The task's canonical solution as a sample: its prompt and its solution.
    pub fn canonical(&self, id: &str) -> String {
        let t = self.task(id);
        format!(
            "{}\n{}",
            t["complete_prompt"].as_str().unwrap(),
            t["canonical_solution"].as_str().unwrap()
        )
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }

    /// Task rows from the real dataset.
    pub fn task(&self, id: &str) -> serde_json::Value {
        let ds = bcb_dataset::Dataset::from_file(
            &self.dataset_dir.join("bigcodebench-v0.1.4.jsonl.gz"),
            bcb_dataset::Subset::Full,
            "v0.1.4",
        )
        .unwrap();
        serde_json::to_value(ds.get(id).expect("task exists")).unwrap()
    }
}

/// `bcb` offline over the dataset in `dataset`, with no Python env of this test's choosing
/// (for commands that run no sample) and no override file from the caller's environment.
pub fn bcb_over(dataset: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bcb"));
    cmd.env("BCB_DATASET_DIR", dataset)
        .env("BCB_OFFLINE", "1")
        .env_remove("BIGCODEBENCH_OVERRIDE_PATH");
    cmd
}

/// `BCB_DATASET_DIR`, else the shared copy beside the repository: for tests that need the
/// dataset but no Python env.
pub fn shared_dataset_dir() -> PathBuf {
    std::env::var_os("BCB_DATASET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bigcodebench")
        })
}

/// Runs `cmd` with `args`, printing the command line and its output for the test log.
pub fn run_logged(mut cmd: Command, args: &[&str]) -> Output {
    let out = cmd.args(args).output().expect("bcb runs");
    eprintln!(
        "$ bcb {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn write_jsonl(path: &Path, rows: &[serde_json::Value]) {
    let mut s = String::new();
    for r in rows {
        s.push_str(&serde_json::to_string(r).unwrap());
        s.push('\n');
    }
    std::fs::write(path, s).unwrap();
}

pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// A real model's answers (Hermes-2-Theta, complete split, from `../shared/real-samples/`)
/// written to `name` in the work dir.
pub fn hermes_samples(env: &Env, name: &str) -> PathBuf {
    use std::io::Read;
    let gz = env.dataset_dir.join("../real-samples/NousResearch--Hermes-2-Theta-Llama-3-8B--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated.jsonl.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&gz).expect("real samples in ../shared"))
        .read_to_string(&mut text)
        .unwrap();
    let path = env.path(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A results file with its `date` blanked (the one field two equal runs differ in).
pub fn without_date(path: &Path) -> serde_json::Value {
    let mut v = read_json(path);
    v["date"] = serde_json::Value::Null;
    v
}
