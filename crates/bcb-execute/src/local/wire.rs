//! The protocol between a slot (Rust) and its harness process (`harness/`), as serde types.
//! Control pipe (fd 3, JSON lines to the harness): one [`SlotConfig`], then [`JobRequest`]s or
//! [`Control`] ops (exit, and the governor's freeze, thaw and credit). Event pipe (fd 4, JSON lines from the harness): [`Event`]s.
//! The harness package's `__init__.py` lists the same fields; change both together.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::sandbox::Isolation;
use crate::Limits;

/// The first line a harness reads: how to isolate and what to preload.
#[derive(Serialize)]
pub(crate) struct SlotConfig<'a> {
    pub isolation: &'a Isolation,
    pub limits: WireLimits<'a>,
    pub env: BTreeMap<&'a str, &'a str>,
    pub preload: &'a [String],
    pub cgroups: &'a [PathBuf],
    /// The freezer cgroup among `cgroups` (the scheduler's `freeze`/`thaw` ops act on it).
    pub freezer: Option<&'a Path>,
    pub workroot: &'a Path,
    pub one_shot: bool,
    /// Run the reward-hack watch (see `crate::hack`).
    pub hacks: bool,
}

#[derive(Serialize)]
pub(crate) struct WireLimits<'a> {
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
pub(crate) struct JobRequest<'a> {
    /// Echoed back in `started` / `result` events.
    pub key: u64,
    pub code: &'a str,
    pub test: &'a str,
    pub time_limit: f64,
    /// Present for a script job: run `code` as a program instead of a unittest suite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script: Option<WireScript<'a>>,
}

/// A script job's input as the harness reads it (file contents in base64).
#[derive(Serialize)]
pub(crate) struct WireScript<'a> {
    pub stdin: &'a str,
    pub files: BTreeMap<&'a str, String>,
    pub fetch_files: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
}

impl<'a> WireScript<'a> {
    pub fn new(input: &'a crate::ScriptInput) -> WireScript<'a> {
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
pub(crate) enum Control {
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
pub(crate) enum Event {
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
    Idle,
}

/// The supervisor's account of one sample. Everything but `report` is the supervisor's own
/// observation; `report` is what the sample's process wrote on its private channel (with the
/// right nonce), so it is untrusted and parsed leniently by [`Report::parse`].
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResultMsg {
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
    /// A problem the supervisor saw with the report (e.g. more than one).
    #[serde(default)]
    pub integrity: Option<String>,
    #[serde(default)]
    pub report: Option<Value>,
    /// What the supervisor read on the account channel (the hack watch): trusted as far as
    /// the channel carried it as it happened.
    #[serde(default)]
    pub hacks: Vec<crate::HackFlag>,
    /// Where the job's time went inside the slot: stage name -> seconds since the supervisor
    /// read the job line (`child_*`: the sample process's own clock, untrusted). Logged only.
    #[serde(default)]
    pub stages: BTreeMap<String, f64>,
}

/// The sample process's own report.
#[derive(Debug, Default)]
pub(crate) struct Report {
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

#[cfg(test)]
mod tests {
    use super::Control;

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
}
