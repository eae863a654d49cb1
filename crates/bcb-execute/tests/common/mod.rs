//! Shared helpers: the real eval interpreter, the real dataset, running a batch of jobs.
#![allow(clippy::print_stdout, clippy::print_stderr)] // test output: what ran, what was skipped
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use bcb_dataset::{Dataset, DatasetSpec, Subset};

/// One `#[test]` per local executor: `$process` and `$pool` each call `$check` with their
/// kind (and the `$arg`s after it).
#[allow(unused_macros)] // not every test binary runs a check on both
macro_rules! on_both_executors {
    ($process:ident, $pool:ident, $check:path $(, $arg:expr)*) => {
        #[test]
        fn $process() {
            $check(bcb_execute::LocalKind::Process $(, $arg)*);
        }

        #[test]
        fn $pool() {
            $check(bcb_execute::LocalKind::Pool $(, $arg)*);
        }
    };
}
use bcb_execute::LocalKind;
use bcb_execute::{executor_for, ExecConfig, Executor, Job, JobId, Limits, Outcome, Program};
#[allow(unused_imports)] // not every test binary runs a check on both
pub(crate) use on_both_executors;

/// The eval interpreter from `BCB_PYTHON`; `None` (test skipped) unless `BCB_REQUIRE_PYTHON=1`.
pub fn python() -> Option<PathBuf> {
    bcb_testkit::python()
}

pub fn dataset() -> Dataset {
    DatasetSpec::new(Subset::Full, None)
        .load()
        .expect("dataset (set BCB_DATASET_DIR to the directory of bigcodebench-v0.1.4.jsonl.gz)")
}

pub fn config(python: PathBuf, parallel: usize) -> ExecConfig {
    ExecConfig {
        python,
        parallel,
        max_in_flight: 0,
        limits: Limits {
            memory_mb: 1024,
            max_processes: 64,
            ..Limits::default()
        },
        hacks: Default::default(),
    }
}

/// A pool of `workers` and no overlap slots: every slot it starts is accounted for.
pub fn pool_without_overlap(python: PathBuf, workers: usize) -> bcb_execute::PoolExecutor {
    let cfg = ExecConfig {
        max_in_flight: workers,
        ..config(python, workers)
    };
    bcb_execute::PoolExecutor::with_isolation(cfg, bcb_execute::host_isolation()).unwrap()
}

/// A job whose id carries `key` as its sample index (tests look outcomes up by it).
pub fn job(key: usize, task_id: &str, code: &str, test: &str, secs: f64) -> Job {
    Job {
        id: JobId::new(task_id, Program::Sample(key), code),
        code: code.into(),
        test: test.into(),
        entry_point: "task_func".into(),
        time_limit: Duration::from_secs_f64(secs),
        kind: bcb_execute::JobKind::Unittest,
        expected_secs: None,
        expected_cpu_secs: None,
    }
}

/// Runs the jobs together, returns outcomes by key.
pub fn run(kind: LocalKind, cfg: ExecConfig, jobs: Vec<Job>) -> HashMap<usize, Outcome> {
    let exec = executor_for(kind, cfg).expect("executor");
    run_on(exec.as_ref(), jobs)
}

/// Runs the jobs on `exec`, returns outcomes by the key given to [`job`]; an infrastructure
/// error fails the test.
pub fn run_on(exec: &dyn Executor, jobs: Vec<Job>) -> HashMap<usize, Outcome> {
    let out = Mutex::new(HashMap::new());
    exec.run(jobs, &|job, o| {
        let Program::Sample(key) = job.id.program else {
            unreachable!("test jobs are samples")
        };
        let o = o.unwrap_or_else(|e| panic!("{}: no verdict: {e}", job.id));
        out.lock().unwrap().insert(key, o);
        std::ops::ControlFlow::Continue(())
    })
    .expect("run");
    out.into_inner().unwrap()
}

/// A trivial one-test suite for synthetic samples.
pub const ONE_TEST: &str = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_it(self):\n        self.assertEqual(task_func(), 1)\n";

/// Moves this test process (and so every sample it starts) into a cgroup v1 `cpu` group of
/// the highest weight while it lives, where that is possible (root): the samples then share
/// the CPUs among themselves as on a quiet machine, whatever else the machine runs, so the
/// verdicts below depend only on how the scheduler shares the cores between samples.
pub struct QuietCpu(Option<std::path::PathBuf>);

impl QuietCpu {
    pub fn enter() -> QuietCpu {
        let root = std::path::Path::new("/sys/fs/cgroup/cpu");
        let dir = root.join(format!("bcb-quiet-test-{}", std::process::id()));
        let ok = std::fs::create_dir(&dir).is_ok()
            && std::fs::write(dir.join("cpu.shares"), "262144").is_ok()
            && std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string()).is_ok();
        if !ok {
            let _ = std::fs::remove_dir(&dir);
            eprintln!("no cpu cgroup of our own: the machine's other load counts too");
        }
        QuietCpu(ok.then_some(dir))
    }
}

impl Drop for QuietCpu {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::write(
                "/sys/fs/cgroup/cpu/cgroup.procs",
                std::process::id().to_string(),
            );
            let _ = std::fs::remove_dir(dir);
        }
    }
}
