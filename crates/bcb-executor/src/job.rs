//! What to run: a program, its task's tests, and the limits it runs under.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::Digest;

/// Which program of a task a job runs: the canonical solution or the n-th sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Program {
    GroundTruth,
    Sample(usize),
}

/// A job's stable identity: the same task, program slot and program text give the same id on
/// every machine and in every run, so journals of shards and resumed runs merge by id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JobId {
    pub task_id: String,
    pub program: Program,
    /// First 12 bytes of the sha256 of the executed code, hex.
    pub digest: String,
}

impl JobId {
    pub fn new(task_id: &str, program: Program, code: &str) -> JobId {
        JobId {
            task_id: task_id.to_string(),
            program,
            digest: program_digest(code),
        }
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.program {
            Program::GroundTruth => write!(f, "{} (ground truth)", self.task_id),
            Program::Sample(i) => write!(f, "{} sample {i}", self.task_id),
        }
    }
}

/// The digest a [`JobId`] carries for `code`.
pub fn program_digest(code: &str) -> String {
    hex::encode(&sha2::Sha256::digest(code.as_bytes())[..12])
}

/// What a job runs, and so what its [`crate::Outcome`] reports.
#[derive(Debug, Clone, Default)]
pub enum JobKind {
    /// `code + "\n" + test` executed as module `__test__`, then `TestCases` loaded and run
    /// with unittest: a verdict in upstream's terms.
    #[default]
    Unittest,
    /// `code` alone run as a program (`python <file>.py`, so as `__main__`) with the given
    /// stdin, `time_limit` as its wall limit: its output and return code are the result
    /// ([`crate::ScriptRun`]). Never cached, never deduplicated (stdin, randomness).
    Script(Arc<ScriptInput>),
}

/// What a script job gets besides its code.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptInput {
    /// Written to the program's stdin, then closed.
    pub stdin: String,
    /// Files written into the program's working directory first: relative path -> bytes.
    pub files: Vec<(String, Vec<u8>)>,
    /// Files (relative to the working directory) read back after the program ends.
    pub fetch_files: Vec<String>,
    /// A lower memory cap for this program in MB (never above the executor's own).
    pub memory_mb: Option<u64>,
}

/// One program to run; [`JobKind`] says how (a unittest suite, or a script).
#[derive(Debug, Clone)]
pub struct Job {
    pub id: JobId,
    /// The code under test (calibration already applied by the plan). Shared, not copied,
    /// between the samples file's program, the plan and the executor's queue.
    pub code: Arc<str>,
    /// The task's unittest source (defines `TestCases`): one copy per task, shared by all
    /// its jobs (a pass@100 run would otherwise hold a hundred).
    pub test: Arc<str>,
    pub entry_point: String,
    /// The in-sample alarm for the suite (upstream: max(240, min_time_limit, gt) + 1).
    pub time_limit: Duration,
    /// Expected test time (ground truth or shipped priors): schedules the longest first.
    pub expected_secs: Option<f64>,
    /// Expected CPU time (the ground truth's): orders many submitters' jobs in bcb-eval's
    /// engine (the cheap first, so sleepers and short samples are not held behind CPU-bound
    /// ones; on its costly lanes the costliest first).
    pub expected_cpu_secs: Option<f64>,
    pub kind: JobKind,
}

/// A run whose CPU time is below this share of its wall time slept.
pub const SLEEPER_CPU_SHARE: f64 = 0.25;
/// Ground truth shorter than this is not worth calling a sleeper: its wait is short anyway.
const SLEEPER_MIN_SECS: f64 = 10.0;

impl Job {
    pub fn task_id(&self) -> &str {
        &self.id.task_id
    }

    /// Whether the canonical solution mostly slept (BigCodeBench/461: 156 s of wall, 1.4 s of
    /// CPU): its samples probably wait too, so they go early and their wait overlaps the rest.
    pub fn expected_to_sleep(&self) -> bool {
        match (self.expected_secs, self.expected_cpu_secs) {
            (Some(wall), Some(cpu)) => wall >= SLEEPER_MIN_SECS && cpu < SLEEPER_CPU_SHARE * wall,
            _ => false,
        }
    }

    /// The script's input, when this is a script job.
    pub fn script(&self) -> Option<&ScriptInput> {
        match &self.kind {
            JobKind::Script(s) => Some(s),
            JobKind::Unittest => None,
        }
    }

    /// A unittest job of `task` for the unit tests of the backend crates: a 1-s limit, no
    /// expectations.
    #[doc(hidden)]
    pub fn for_test(task: &str, program: Program, code: &str, test: &str) -> Job {
        Job {
            id: JobId::new(task, program, code),
            code: code.into(),
            test: test.into(),
            entry_point: "task_func".into(),
            time_limit: Duration::from_secs(1),
            kind: JobKind::Unittest,
            expected_secs: None,
            expected_cpu_secs: None,
        }
    }
}

/// Resource limits applied to every sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Address-space limit in MB (upstream `--max_as_limit`, default 30 GiB); 0 = none.
    pub max_as_mb: u64,
    /// Data-segment limit in MB (upstream `--max_data_limit`); 0 = none.
    pub max_data_mb: u64,
    /// Stack limit in MB (upstream `--max_stack_limit`, default 10); 0 = none.
    pub max_stack_mb: u64,
    /// Memory cap in MB for the whole sample (cgroup where available); 0 = none.
    pub memory_mb: u64,
    /// Max processes/threads per sample; 0 = none.
    pub max_processes: u64,
    /// Bytes of stdout/stderr kept per sample; the rest is drained and dropped.
    pub output_cap_bytes: usize,
    /// Extra time after `time_limit` before the sample's processes are killed.
    pub kill_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_as_mb: 30 * 1024,
            max_data_mb: 30 * 1024,
            max_stack_mb: 10,
            memory_mb: 8 * 1024,
            max_processes: 256,
            output_cap_bytes: 64 * 1024,
            kill_grace: Duration::from_secs(1),
        }
    }
}

impl Limits {
    /// A stable text of every limit that can change a verdict (cache and journal keys).
    pub fn key(&self) -> String {
        format!(
            "as={} data={} stack={} mem={} procs={} out={} grace={}",
            self.max_as_mb,
            self.max_data_mb,
            self.max_stack_mb,
            self.memory_mb,
            self.max_processes,
            self.output_cap_bytes,
            self.kill_grace.as_secs_f64()
        )
    }
}
