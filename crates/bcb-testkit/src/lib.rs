//! Test support shared by every crate's tests.
//!
//! - [`require`]: a test that needs something outside the repository (the eval env, the
//!   dataset, the LLM server, the original harness) gets it, or skips saying why — unless CI
//!   asked for it (`BCB_REQUIRE_<KIND>=1`), where the test fails instead.
//! - [`FakeExecutor`]: an in-memory [`Executor`] whose outcomes and infrastructure errors a
//!   test scripts, to test the session logic (resume, retries, journals, files) without Python.
//! - [`wait_until`] / [`poll_until`]: a test waits for the thing it waits for (a server to
//!   listen, a job to be taken, a file to appear), never for a guessed while, and fails saying
//!   what never happened instead of hanging.

#![allow(clippy::print_stderr)] // skipping tests say why on stderr, as cargo test shows it

use bcb_envvars::EnvVars;
use std::collections::HashMap;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bcb_executor::{
    Details, ExecError, Executor, Job, JobId, JobSource, OnDone, OnServed, Outcome, Peek, Status,
};

/// Something a test may need from outside the repository.
#[derive(Debug, Clone, Copy)]
pub enum Need {
    /// The Python evaluation env (`BCB_PYTHON`).
    Python,
    /// The dataset directory (`BCB_DATASET_DIR`).
    Data,
    /// The llama.cpp test server (`BCB_LLM_PYTHON`, `BCB_LLM_MODEL`).
    Llm,
    /// The original harness (`BCB_UPSTREAM_PYTHON`).
    Upstream,
    /// Real Gradio servers (`BCB_GRADIO5_PYTHON`, `BCB_GRADIO6_PYTHON`; `.ci/setup-gradio.sh`).
    Gradio,
    /// Slurm and MUNGE daemons, run as root (`BCB_SLURM_SBIN`; `.ci/setup-slurm.sh`).
    Slurm,
    /// maturin, to build bcb's wheel (`BCB_MATURIN`; `.ci/setup-wheel.sh`).
    Wheel,
    /// The `sandbox-fusion` client venv (`BCB_SERVE_CLIENT_PYTHON`; `.ci/setup-serve.sh`).
    Serve,
    /// kubernetes-validate, with the Kubernetes schemas (`BCB_K8S_VALIDATE`;
    /// `.ci/setup-k8s-validate.sh`).
    K8s,
    /// podman and mmdebstrap, to build and run bcb's image (`BCB_PODMAN`; `.ci/setup-podman.sh`).
    Podman,
    /// ruff and pytest, to check the sandbox's Python harness (`BCB_RUFF`,
    /// `BCB_PYTEST_PYTHON`; `.ci/setup-harness-checks.sh`).
    Harness,
}

impl Need {
    fn require_var(self) -> &'static str {
        match self {
            Need::Python => EnvVars::BCB_REQUIRE_PYTHON,
            Need::Data => EnvVars::BCB_REQUIRE_DATA,
            Need::Llm => EnvVars::BCB_REQUIRE_LLM,
            Need::Upstream => EnvVars::BCB_REQUIRE_UPSTREAM,
            Need::Gradio => EnvVars::BCB_REQUIRE_GRADIO,
            Need::Slurm => EnvVars::BCB_REQUIRE_SLURM,
            Need::Wheel => EnvVars::BCB_REQUIRE_WHEEL,
            Need::Serve => EnvVars::BCB_REQUIRE_SERVE,
            Need::K8s => EnvVars::BCB_REQUIRE_K8S,
            Need::Podman => EnvVars::BCB_REQUIRE_PODMAN,
            Need::Harness => EnvVars::BCB_REQUIRE_HARNESS,
        }
    }

    /// Whether CI demands it (a missing dependency then fails the test).
    pub fn required(self) -> bool {
        std::env::var(self.require_var()).is_ok_and(|v| v == "1")
    }
}

/// Call when `need` is missing: panics if it is required, else says the test is skipped.
pub fn missing(need: Need, why: &str) {
    if need.required() {
        panic!("{}=1 but {why}", need.require_var());
    }
    eprintln!("SKIPPED ({need:?} missing): {why}");
}

/// The path in `var` if it is set and exists; otherwise [`missing`] and `None`.
pub fn require(need: Need, var: &str, what: &str) -> Option<PathBuf> {
    match std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
    {
        Some(p) if p.exists() => Some(p),
        Some(p) => {
            missing(
                need,
                &format!("{var}={} does not exist ({what})", p.display()),
            );
            None
        }
        None => {
            missing(need, &format!("set {var} to {what}"));
            None
        }
    }
}

/// The text of `path` (relative to the repository's root); panics naming it if unreadable.
pub fn repo_file(path: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Returns once `ready()` holds, asking again every few milliseconds; panics saying `what`
/// did not happen if it still does not hold after `within`.
pub fn wait_until(within: Duration, what: &str, ready: impl FnMut() -> bool) {
    assert!(
        poll_until(within, ready),
        "timed out after {within:?} waiting for {what}"
    );
}

/// Whether `ready()` came to hold within `within` (asked every few milliseconds, and once
/// more at the end): for a wait that must not panic (a `Drop`) or whose failure the test
/// reports its own way.
pub fn poll_until(within: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    // Quick to see a quick event, and no busy loop beside a slow one.
    let mut pause = Duration::from_millis(1);
    loop {
        if ready() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// The eval env's interpreter.
pub fn python() -> Option<PathBuf> {
    require(
        Need::Python,
        EnvVars::BCB_PYTHON,
        "the evaluation interpreter (`bcb env setup` prints it)",
    )
}

/// The directory of `bigcodebench-*.jsonl.gz`.
pub fn dataset_dir() -> Option<PathBuf> {
    require(
        Need::Data,
        EnvVars::BCB_DATASET_DIR,
        "the directory of the BigCodeBench files (../shared/bigcodebench)",
    )
}

/// The interpreter of a Gradio venv from `.ci/setup-gradio.sh` (`major` 5 or 6), which also
/// holds the original client (bigcodebench 0.2.5).
pub fn gradio_python(major: u32) -> Option<PathBuf> {
    require(
        Need::Gradio,
        match major {
            5 => EnvVars::BCB_GRADIO5_PYTHON,
            _ => EnvVars::BCB_GRADIO6_PYTHON,
        },
        &format!("the Gradio {major} venv's python (`.ci/setup-gradio.sh` prints it)"),
    )
}

/// The `maturin` executable (`.ci/setup-wheel.sh` installs it and prints `BCB_MATURIN=`).
pub fn maturin() -> Option<PathBuf> {
    require(
        Need::Wheel,
        EnvVars::BCB_MATURIN,
        "the maturin executable (`.ci/setup-wheel.sh` prints BCB_MATURIN=...)",
    )
}

/// The `kubernetes-validate` executable (`.ci/setup-k8s-validate.sh` prints `BCB_K8S_VALIDATE=`).
pub fn k8s_validate() -> Option<PathBuf> {
    require(
        Need::K8s,
        EnvVars::BCB_K8S_VALIDATE,
        "the kubernetes-validate executable (`.ci/setup-k8s-validate.sh` prints BCB_K8S_VALIDATE=...)",
    )
}

/// The `podman` executable (`.ci/setup-podman.sh` installs it with mmdebstrap and prints
/// `BCB_PODMAN=`), when this process may build images with it (root: image/build.sh runs
/// mmdebstrap and rootful podman). Otherwise [`missing`] and `None`.
pub fn podman() -> Option<PathBuf> {
    let podman = require(
        Need::Podman,
        EnvVars::BCB_PODMAN,
        "the podman executable (`.ci/setup-podman.sh` prints BCB_PODMAN=...)",
    )?;
    if !is_root() {
        missing(
            Need::Podman,
            "the image test builds with rootful podman: run it as root",
        );
        return None;
    }
    if !std::env::split_paths(&std::env::var_os(EnvVars::PATH).unwrap_or_default())
        .any(|d| d.join("mmdebstrap").is_file())
    {
        missing(
            Need::Podman,
            "mmdebstrap is not on PATH (`.ci/setup-podman.sh` installs it)",
        );
        return None;
    }
    Some(podman)
}

/// The python of the venv holding the `sandbox-fusion` client (`.ci/setup-serve.sh`).
pub fn serve_client_python() -> Option<PathBuf> {
    require(
        Need::Serve,
        EnvVars::BCB_SERVE_CLIENT_PYTHON,
        "the sandbox-fusion client venv's python (`.ci/setup-serve.sh` prints it)",
    )
}

/// The directory of `slurmctld`, `slurmd` and `munged` (`BCB_SLURM_SBIN`, else `/usr/sbin`
/// if they are there), when this process may run them (root: slurmd starts jobs as their
/// owner). Otherwise [`missing`] and `None`.
pub fn slurm_sbin() -> Option<PathBuf> {
    let dir = std::env::var_os(EnvVars::BCB_SLURM_SBIN)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/usr/sbin"), PathBuf::from);
    let absent: Vec<&str> = ["slurmctld", "slurmd", "munged"]
        .into_iter()
        .filter(|b| !dir.join(b).is_file())
        .collect();
    if !absent.is_empty() {
        missing(
            Need::Slurm,
            &format!(
                "{} not in {} (run .ci/setup-slurm.sh, or set BCB_SLURM_SBIN)",
                absent.join(", "),
                dir.display()
            ),
        );
        return None;
    }
    if !is_root() {
        missing(
            Need::Slurm,
            "the one-node Slurm cluster needs root (slurmd, a network namespace)",
        );
        return None;
    }
    Some(dir)
}

/// Whether this process runs as root: `/proc/self` belongs to the process's effective uid.
fn is_root() -> bool {
    std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0
}

/// What a [`FakeExecutor`] does with one job on one attempt (1 = first).
pub type Script = dyn Fn(&Job, usize) -> Result<Outcome, ExecError> + Send + Sync;

/// An executor that runs nothing: a script decides each job's outcome or error.
pub struct FakeExecutor {
    script: Box<Script>,
    attempts: Mutex<HashMap<JobId, usize>>,
}

impl FakeExecutor {
    pub fn new(
        script: impl Fn(&Job, usize) -> Result<Outcome, ExecError> + Send + Sync + 'static,
    ) -> Self {
        FakeExecutor {
            script: Box::new(script),
            attempts: Mutex::new(HashMap::new()),
        }
    }

    /// Every job passes (test time 0.1 s).
    pub fn passing() -> Self {
        FakeExecutor::new(|_, _| Ok(pass()))
    }

    /// How many times each job was handed to this executor.
    pub fn attempts(&self) -> HashMap<JobId, usize> {
        self.attempts.lock().unwrap().clone()
    }

    fn step(&self, job: &Job) -> Result<Outcome, ExecError> {
        let attempt = {
            let mut a = self.attempts.lock().unwrap();
            let n = a.entry(job.id.clone()).or_default();
            *n += 1;
            *n
        };
        (self.script)(job, attempt)
    }

    /// Jobs run in all.
    pub fn total_runs(&self) -> usize {
        self.attempts.lock().unwrap().values().sum()
    }
}

impl Executor for FakeExecutor {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn run(&self, jobs: Vec<Job>, done: &OnDone) -> Result<(), ExecError> {
        for job in jobs {
            let result = self.step(&job);
            if done(job, result).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// One job at a time, pulled when the previous one is done (as a one-slot warm backend).
    fn serve(&self, source: &dyn JobSource, done: &OnServed) -> Result<(), ExecError> {
        loop {
            match source.pull() {
                Some((ticket, job)) => {
                    let result = self.step(&job);
                    done(ticket, job, result);
                }
                None => match source.peek() {
                    Peek::Closed => return Ok(()),
                    _ => source.wait(std::time::Duration::from_millis(20)),
                },
            }
        }
    }
}

/// A passing outcome with a test time of 0.1 s.
pub fn pass() -> Outcome {
    let mut o = Outcome::new(Status::Pass, Details::new());
    o.test_secs = Some(0.1);
    o.wall_secs = 0.2;
    o
}

/// A failing outcome with one failing test.
pub fn fail(test: &str, traceback: &str) -> Outcome {
    let mut d = Details::new();
    d.insert(test, traceback);
    let mut o = Outcome::new(Status::Fail, d);
    o.wall_secs = 0.2;
    o
}
