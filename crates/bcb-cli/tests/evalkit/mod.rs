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

    /// [`run`](Self::run), asserting success; returns its stderr.
    pub fn run_ok(&self, args: &[&str]) -> String {
        ok(&self.run(args))
    }

    /// `bcb evaluate` of `samples` on tasks `ids` of the complete split, full subset, with
    /// `extra` flags.
    pub fn evaluate(&self, ids: &str, samples: &Path, extra: &[&str]) -> Output {
        self.run(&evaluate_args(ids, samples, extra))
    }

    /// [`evaluate`](Self::evaluate), asserting success; returns its stderr.
    pub fn evaluate_ok(&self, ids: &str, samples: &Path, extra: &[&str]) -> String {
        ok(&self.evaluate(ids, samples, extra))
    }

    /// A samples file `name` in the work dir holding `rows`.
    pub fn samples(&self, name: &str, rows: &[serde_json::Value]) -> PathBuf {
        let path = self.path(name);
        write_jsonl(&path, rows);
        path
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

/// `bcb` offline, with no override file from the caller's environment.
pub fn bcb() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bcb"));
    cmd.env("BCB_OFFLINE", "1")
        .env_remove("BIGCODEBENCH_OVERRIDE_PATH");
    cmd
}

/// `bcb` offline over the dataset in `dataset`, with no Python env of this test's choosing
/// (for commands that run no sample) and no override file from the caller's environment.
pub fn bcb_over(dataset: &Path) -> Command {
    let mut cmd = bcb();
    cmd.env("BCB_DATASET_DIR", dataset);
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

/// The arguments of `bcb evaluate` of `samples` on tasks `ids` of the complete split, full
/// subset, then `extra` (a flag that takes a value may end it: the caller pushes the value).
pub fn evaluate_args<'a>(ids: &'a str, samples: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "evaluate", "--split", "complete", "--subset", "full", "--ids", ids,
    ];
    args.extend(["--samples", samples.to_str().unwrap()]);
    args.extend_from_slice(extra);
    args
}

/// Asserts that `out` succeeded (its stderr in the message) and returns its stderr.
pub fn ok(out: &Output) -> String {
    let err = stderr(out);
    assert!(out.status.success(), "status {:?}\n{err}", out.status);
    err
}

/// Asserts that `out`'s stderr says each of `wants` (all of it in the message otherwise).
pub fn assert_stderr_has(out: &Output, wants: &[&str]) {
    let err = stderr(out);
    for want in wants {
        assert!(err.contains(want), "{want:?} missing from:\n{err}");
    }
}

/// Asserts that `out` failed and that its stderr says each of `wants`.
pub fn assert_fails_saying(out: &Output, wants: &[&str]) {
    assert!(
        !out.status.success(),
        "{:?} succeeded:\n{}",
        out.status,
        stderr(out)
    );
    assert_stderr_has(out, wants);
}

/// Starts `cmd` with its output dropped and returns once `ready()` holds, the run still
/// going (600 s at most).
pub fn start_until(cmd: &mut Command, ready: impl Fn() -> bool) -> std::process::Child {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    while !ready() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was ready"
        );
        assert!(Instant::now() < deadline, "not ready in 600 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// `second` (run while `first` ran) was refused, saying `wants`, before `first` ended; then
/// `first` ends well.
pub fn assert_refused_beside(first: &mut std::process::Child, second: &Output, wants: &[&str]) {
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first run ended before the second did"
    );
    assert_fails_saying(second, wants);
    assert!(first.wait().unwrap().success());
}

/// A port on loopback that nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A file of the ground-truth folder of `cache` whose name ends with `suffix` (`.jsonl`: the
/// cache itself; `.shard-1-of-2.jsonl`: a shard's journal), if one is there.
pub fn ground_truth_file(cache: &Path, suffix: &str) -> Option<PathBuf> {
    std::fs::read_dir(cache.join("ground-truth"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(suffix))
}

/// The text of a gzipped file.
pub fn read_gz(path: &Path) -> String {
    use std::io::Read;
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// The file stems of two real models' answers and official results (complete split) in
/// `../shared/real-samples/`.
pub const HERMES: &str = "NousResearch--Hermes-2-Theta-Llama-3-8B--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated";
pub const PHI: &str =
    "microsoft--Phi-4-multimodal-instruct--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated";

/// `(real-samples dir, dataset dir)`, or `None` (skip) unless `BCB_REQUIRE_DATA=1`: for tests
/// of the real models' result files.
pub fn real_results() -> Option<(PathBuf, PathBuf)> {
    let dataset = bcb_testkit::dataset_dir()?;
    let real = std::env::var_os("BCB_REAL_SAMPLES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dataset.join("../real-samples"));
    if real.join(format!("{HERMES}_eval_results.json.gz")).exists() {
        return Some((real, dataset));
    }
    bcb_testkit::missing(
        bcb_testkit::Need::Data,
        &format!(
            "no real samples in {} (../shared/real-samples)",
            real.display()
        ),
    );
    None
}

/// The answers of a real model (`stem`, as [`HERMES`]) to `tasks`, as `{task_id, solution}`
/// rows in file order.
pub fn real_answers(env: &Env, stem: &str, tasks: &[&str]) -> Vec<serde_json::Value> {
    let text = read_gz(
        &env.dataset_dir
            .join(format!("../real-samples/{stem}.jsonl.gz")),
    );
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| tasks.contains(&r["task_id"].as_str().unwrap()))
        .map(|r| serde_json::json!({"task_id": r["task_id"], "solution": r["solution"]}))
        .collect()
}

/// The row of `task` in the `tasks` of a `bcb report --format json`.
pub fn report_task<'a>(report: &'a serde_json::Value, task: &str) -> &'a serde_json::Value {
    report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task_id"] == task)
        .unwrap_or_else(|| panic!("{task} in the report"))
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

/// The number that follows the first `marker` in `text` (up to the next space); panics
/// showing `text` when there is none.
pub fn number_after<T: std::str::FromStr>(text: &str, marker: &str) -> T {
    text.split(marker)
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {marker:?} in:\n{text}"))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// A real model's answers (Hermes-2-Theta, complete split, from `../shared/real-samples/`)
/// written to `name` in the work dir.
pub fn hermes_samples(env: &Env, name: &str) -> PathBuf {
    let text = read_gz(
        &env.dataset_dir
            .join(format!("../real-samples/{HERMES}.jsonl.gz")),
    );
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

/// A file name for a sample to hold open while it runs, unique to this test process and
/// `what`: a test then waits until [`holding_open`] finds the sample running, not a guessed
/// while.
pub fn marker(what: &str) -> String {
    format!("bcb-test-{}-{what}", std::process::id())
}

/// A line of Python that opens `marker` (in the sample's working folder) and keeps it open
/// until the sample's process ends.
pub fn hold_open(marker: &str) -> String {
    format!("_bcb_test_marker = open({marker:?}, 'w')\n")
}

/// Whether process `pid` holds a file named `name` open.
pub fn holds_open(pid: i32, name: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|t| t.file_name().is_some_and(|n| n == name))
        })
}

/// The processes that hold a file named `name` open.
pub fn holding_open(name: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&pid| holds_open(pid, name))
        .collect()
}
