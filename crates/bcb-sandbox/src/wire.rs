//! The protocol between a slot (Rust) and its harness process (`harness/`), as serde types.
//! Control pipe (fd 3, JSON lines to the harness): one [`SlotConfig`], then [`JobRequest`]s or
//! [`Control`] ops (exit, and the governor's freeze, thaw and credit). Event pipe (fd 4, JSON lines from the harness): [`Event`]s.
//! The harness package's `__init__.py` lists the same fields; change both together
//! (`tests/wire_agreement.rs` checks that the two sides agree, field by field).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, TryLockError};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::isolation::Isolation;
use bcb_executor::{Job, Limits};

/// The protocol's version, sent first in [`SlotConfig`]; the harness package's `PROTOCOL`
/// (its `__init__.py`) must equal it, or the harness refuses the config.
pub const WIRE_VERSION: u32 = 2;

/// The first line a harness reads: how to isolate and what to preload.
#[derive(Serialize)]
pub struct SlotConfig<'a> {
    /// [`WIRE_VERSION`].
    pub protocol: u32,
    pub isolation: &'a Isolation,
    pub limits: WireLimits<'a>,
    pub env: BTreeMap<&'a str, &'a str>,
    pub preload: &'a [String],
    pub cgroups: &'a [PathBuf],
    /// The freezer cgroup among `cgroups` (the scheduler's `freeze`/`thaw` ops act on it).
    pub freezer: Option<&'a Path>,
    /// Where the supervisor goes back to once warm, out of `freezer` (set with it).
    pub cgroup_home: Option<PathBuf>,
    pub workroot: &'a Path,
    pub one_shot: bool,
    /// Run the reward-hack watch (see `bcb_executor::hack`).
    pub hacks: bool,
}

#[derive(Serialize)]
pub struct WireLimits<'a> {
    #[serde(flatten)]
    pub limits: &'a Limits,
    pub kill_grace_secs: f64,
    /// RLIMIT_AS stand-in for the memory cap when no memory cgroup is available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_rlimit_mb: Option<u64>,
    /// Size of the private tmpfs each sample gets as cwd and /tmp.
    pub tmpfs_mb: u64,
    /// Most seconds a sample's deadlines move for time frozen or credited
    /// (`freeze::FREEZE_BUDGET`): the supervisor thaws it once spent.
    pub freeze_budget_secs: f64,
}

/// One sample to run.
#[derive(Serialize)]
pub struct JobRequest<'a> {
    /// Echoed back in `started` / `result` events.
    pub key: u64,
    pub code: &'a str,
    pub test: &'a str,
    pub time_limit: f64,
    /// The test code's `test*` methods, which the run must report (`None`: a script job, or
    /// test code `ast` cannot read).
    pub expected: Option<Vec<String>>,
    /// The tests the test code lets skip or expect to fail; `["*"]`: any.
    pub declared_skips: Vec<String>,
    /// Present for a script job: run `code` as a program instead of a unittest suite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script: Option<WireScript<'a>>,
}

impl<'a> JobRequest<'a> {
    /// The line for `job`, its test code read here (trusted, before the sample exists).
    pub fn new(key: u64, job: &'a Job) -> JobRequest<'a> {
        let script = job.script().map(WireScript::new);
        let (expected, declared_skips) = match script {
            Some(_) => (None, Vec::new()),
            None => {
                let reading = bcb_sanitize::read_test_code(&job.test);
                (reading.expected, reading.declared_skips.into_names())
            }
        };
        JobRequest {
            key,
            code: &job.code,
            test: &job.test,
            time_limit: job.time_limit.as_secs_f64(),
            expected,
            declared_skips,
            script,
        }
    }
}

/// A script job's input as the harness reads it (file contents in base64).
#[derive(Serialize)]
pub struct WireScript<'a> {
    pub stdin: &'a str,
    pub files: BTreeMap<&'a str, String>,
    pub fetch_files: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
}

impl<'a> WireScript<'a> {
    pub fn new(input: &'a bcb_executor::ScriptInput) -> WireScript<'a> {
        use base64::Engine;
        WireScript {
            stdin: &input.stdin,
            files: input
                .files
                .iter()
                .map(|(path, bytes)| {
                    let text = base64::engine::general_purpose::STANDARD.encode(bytes);
                    (path.as_str(), text)
                })
                .collect(),
            fetch_files: &input.fetch_files,
            memory_mb: input.memory_mb,
        }
    }
}

/// The ops on the control pipe besides config and jobs. Job `key`'s ops are ignored by the
/// supervisor once another job runs (a late freeze never reaches the next sample).
#[derive(Debug, Serialize, PartialEq)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Control {
    /// The slot is done: discard the process forked ahead and exit.
    Exit,
    /// Stop the sample (its freezer cgroup); frozen time extends its deadlines (at most
    /// `freeze_budget_secs` with credits).
    Freeze { key: u64 },
    /// Resume it.
    Thaw { key: u64 },
    /// It waited `secs` for a core at the lowest CPU weight: its deadlines move by that.
    Credit { key: u64, secs: f64 },
}

impl Control {
    /// One JSON line: a single short write, atomic on a pipe whoever else writes to it.
    pub fn line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("a control op serializes");
        line.push('\n');
        line
    }
}

/// What the harness says on fd 4.
#[derive(Debug, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Event {
    /// Preloads imported; jobs may come.
    Ready {
        #[serde(default)]
        preload_failed: Vec<String>,
        /// Forked by the pool's zygote (its preloads inherited, not imported).
        #[serde(default)]
        forked: bool,
    },
    /// The sample's process exists (pid in the orchestrator's namespace, when meaningful).
    Started {
        #[serde(default)]
        pid: Option<i32>,
    },
    /// Boxed: far larger than the other events, which travel in the same channel.
    Result(Box<ResultMsg>),
    /// A pool slot after a result: the sample cleaned up, the next process forked ahead.
    Idle {
        /// CPU the sample's process used after a verdict sent before its exit (its exit,
        /// mostly); absent when the verdict waited for the reap and so counts it.
        #[serde(default)]
        cpu_after_verdict_secs: Option<f64>,
    },
}

/// The supervisor's account of one sample. Everything but `report` is the supervisor's own
/// observation; `report` is what the sample's process wrote on its private channel (with the
/// right nonce), so it is untrusted and parsed leniently by [`Report::parse`].
#[derive(Debug, Default, Deserialize)]
pub struct ResultMsg {
    /// User + system CPU of the sample's process (and the children it waited for).
    #[serde(default)]
    pub cpu_secs: Option<f64>,
    /// Test methods the test code defines (what a pass must have run).
    #[serde(default)]
    pub expected: Option<Vec<String>>,
    #[serde(default)]
    pub signal: Option<i32>,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub killed_at_deadline: bool,
    #[serde(default)]
    pub oom_killed: bool,
    /// Ended once its process limit had refused it many forks (the harness's
    /// `PROCESS_BOMB_FORKS`): a process bomb.
    #[serde(default)]
    pub process_bomb: bool,
    /// A problem the supervisor saw with the report (e.g. more than one).
    #[serde(default)]
    pub integrity: Option<String>,
    #[serde(default)]
    pub report: Option<Value>,
    /// What the supervisor read on the account channel (the hack watch): trusted as far as
    /// the channel carried it as it happened.
    #[serde(default)]
    pub hacks: Vec<bcb_executor::HackFlag>,
    /// Where the job's time went inside the slot: stage name -> seconds since the supervisor
    /// read the job line (`child_*`: the sample process's own clock, untrusted). Logged only.
    #[serde(default)]
    pub stages: BTreeMap<String, f64>,
}

/// The sample process's own report.
#[derive(Debug, Default)]
pub struct Report {
    /// `pass`, `fail`, or anything else (= upstream's timeout/unknown).
    pub status: String,
    pub details: Map<String, Value>,
    pub test_secs: Option<f64>,
    /// Test ids that reported a result.
    pub ran: Vec<String>,
    pub skipped: u64,
    /// A tampering check inside the sample process failed.
    pub integrity: Option<String>,
    /// The harness itself failed inside the sample process.
    pub harness_error: Option<String>,
}

fn text(v: &Value) -> String {
    v.as_str().map(str::to_string).unwrap_or_default()
}

impl Report {
    /// `None` when the value is not an object at all.
    pub fn parse(v: &Value) -> Option<Report> {
        let o = v.as_object()?;
        Some(Report {
            status: o.get("status").map(text).unwrap_or_default(),
            details: o
                .get("details")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            test_secs: o.get("test_secs").and_then(Value::as_f64),
            ran: o
                .get("ran")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(text).collect())
                .unwrap_or_default(),
            skipped: o.get("skipped").and_then(Value::as_u64).unwrap_or(0),
            integrity: o
                .get("integrity")
                .and_then(Value::as_str)
                .map(str::to_string),
            harness_error: o.get("harness_error").filter(|v| !v.is_null()).map(text),
        })
    }
}

/// The write end of a harness's control pipe, shared by its slot (jobs) and the governor
/// (freeze, thaw and credit ops). A job's line is larger than one pipe write is atomic
/// (`PIPE_BUF`, 4 KiB), so each line goes out under one lock: an op written while a job is
/// written never lands inside the job's JSON (which made the harness drop the job and exit).
pub struct ControlPipe(Mutex<File>);

impl ControlPipe {
    pub fn new(file: File) -> ControlPipe {
        ControlPipe(Mutex::new(file))
    }

    /// Writes a whole line (a job), waiting for an op being written.
    pub fn write_line(&self, line: &[u8]) -> std::io::Result<()> {
        let file = self.0.lock().unwrap_or_else(|p| p.into_inner());
        (&*file).write_all(line)
    }

    /// Writes an op's line unless a job is being written (false: not delivered; the governor
    /// never waits on a harness that is slow to read its job).
    pub fn try_write_line(&self, line: &[u8]) -> bool {
        let file = match self.0.try_lock() {
            Ok(f) => f,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        (&*file).write_all(line).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::{Control, ControlPipe};
    use std::fs::File;
    use std::io::Write as _;

    /// Both ends speak one version of the protocol.
    #[test]
    fn the_harness_speaks_this_wire_version() {
        let init = include_str!("../harness/bcb_harness/__init__.py");
        let line = format!("\nPROTOCOL = {}\n", super::WIRE_VERSION);
        assert!(
            init.contains(&line),
            "harness/bcb_harness/__init__.py: {line:?}"
        );
    }

    /// What `slot.py` says after a job: the CPU the sample used after a verdict sent before
    /// its exit, when there was one (bench/gt-floors.sh sums it into the floor to the reap).
    #[test]
    fn an_idle_line_carries_the_cpu_used_after_an_early_verdict() {
        let idle = |line: &str| match serde_json::from_str(line).unwrap() {
            super::Event::Idle {
                cpu_after_verdict_secs,
            } => cpu_after_verdict_secs,
            other => panic!("{other:?}"),
        };
        let slot = include_str!("../harness/bcb_harness/slot.py");
        assert!(slot.contains("\"event\": \"idle\", \"cpu_after_verdict_secs\": "));
        assert_eq!(
            idle(r#"{"event": "idle", "cpu_after_verdict_secs": 0.0042}"#),
            Some(0.0042)
        );
        assert_eq!(
            idle(r#"{"event": "idle", "cpu_after_verdict_secs": null}"#),
            None
        );
        assert_eq!(idle(r#"{"event": "idle"}"#), None);
    }

    /// A job line carries its test code's readings, which `supervisor.py` takes as they are
    /// (the tests the run must report, the skips the hack watch forgives).
    #[test]
    fn a_job_line_carries_the_tests_to_report_and_the_declared_skips() {
        let test = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_a(self): pass\n    @unittest.skip('net')\n    def test_b(self): pass\n";
        let job = bcb_executor::Job::for_test(
            "BigCodeBench/1",
            bcb_executor::Program::GroundTruth,
            "x = 1",
            test,
        );
        let line = serde_json::to_value(super::JobRequest::new(7, &job)).unwrap();
        assert_eq!(line["expected"], serde_json::json!(["test_a", "test_b"]));
        assert_eq!(line["declared_skips"], serde_json::json!(["test_b"]));
        let broken = bcb_executor::Job::for_test(
            "BigCodeBench/1",
            bcb_executor::Program::GroundTruth,
            "",
            "(",
        );
        let line = serde_json::to_value(super::JobRequest::new(7, &broken)).unwrap();
        assert_eq!(line["expected"], serde_json::Value::Null);
        assert_eq!(line["declared_skips"], serde_json::json!(["*"]));
        let supervisor = include_str!("../harness/bcb_harness/supervisor.py");
        assert!(supervisor.contains("job.get(\"expected\")"));
        assert!(supervisor.contains("job.get(\"declared_skips\")"));
    }

    /// The lines the harness reads (`freezer.py`'s `Freezer.op`, `slot.py`'s exit).
    #[test]
    fn control_ops_are_the_lines_the_harness_reads() {
        assert_eq!(Control::Exit.line(), "{\"op\":\"exit\"}\n");
        assert_eq!(
            Control::Freeze { key: 3 }.line(),
            "{\"op\":\"freeze\",\"key\":3}\n"
        );
        assert_eq!(
            Control::Thaw { key: 3 }.line(),
            "{\"op\":\"thaw\",\"key\":3}\n"
        );
        assert_eq!(
            Control::Credit { key: 3, secs: 0.25 }.line(),
            "{\"op\":\"credit\",\"key\":3,\"secs\":0.25}\n"
        );
    }

    type Write = Box<dyn Fn(&[u8]) + Send>;

    /// One thread writes a 300-KB job while another writes an op every millisecond, into a
    /// pipe read slowly (a harness busy reading); returns the lines read.
    fn lines_received(writers: impl FnOnce(std::io::PipeWriter) -> (Write, Write)) -> Vec<Vec<u8>> {
        use std::io::Read;
        use std::sync::atomic::{AtomicBool, Ordering};
        let (mut reader, writer) = std::io::pipe().unwrap();
        let (write_job, write_op) = writers(writer);
        let job_done = AtomicBool::new(false);
        let mut got = Vec::new();
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut job = vec![b'x'; 300_000];
                job.push(b'\n');
                write_job(&job);
                drop(write_job);
                job_done.store(true, Ordering::SeqCst);
            });
            s.spawn(|| {
                while !job_done.load(Ordering::SeqCst) {
                    write_op(b"{\"op\":\"thaw\",\"key\":0}\n");
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                drop(write_op);
            });
            let mut chunk = [0u8; 4096];
            loop {
                match reader.read(&mut chunk).unwrap() {
                    0 => break,
                    n => got.extend_from_slice(&chunk[..n]),
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        });
        got.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect()
    }

    fn job_torn(lines: &[Vec<u8>]) -> bool {
        lines
            .iter()
            .any(|l| l.contains(&b'x') && l.len() != 300_000)
    }

    /// A job's line is longer than a pipe write is atomic: an op written by the governor
    /// meanwhile lands inside it unless both go through the pipe's lock. Control: the same
    /// writes straight to the file tear the job.
    #[test]
    fn an_op_written_during_a_job_never_lands_inside_it() {
        let locked = lines_received(|w| {
            let pipe =
                std::sync::Arc::new(ControlPipe::new(File::from(std::os::fd::OwnedFd::from(w))));
            let ops = pipe.clone();
            (
                Box::new(move |l: &[u8]| pipe.write_line(l).unwrap()),
                Box::new(move |l: &[u8]| {
                    ops.try_write_line(l);
                }),
            )
        });
        assert!(!job_torn(&locked), "the job arrived whole");
        assert!(locked.iter().any(|l| l.len() == 300_000));

        let raw = lines_received(|w| {
            let job = File::from(std::os::fd::OwnedFd::from(w));
            let op = job.try_clone().unwrap();
            (
                Box::new(move |l: &[u8]| (&job).write_all(l).unwrap()),
                Box::new(move |l: &[u8]| (&op).write_all(l).unwrap()),
            )
        });
        assert!(job_torn(&raw), "control: unlocked ops tear the job");
    }
}
