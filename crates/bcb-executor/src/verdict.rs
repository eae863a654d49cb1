//! What a job's tests said: upstream's three statuses, and the per-test details behind a
//! failure. Rules that turn a harness report into these live with each backend
//! (`local::verdict` for the local one).

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Timeout,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Timeout => "timeout",
        }
    }

    pub fn is_pass(self) -> bool {
        self == Status::Pass
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The key upstream uses for a failure of the whole module (import error, syntax error...).
pub const ALL: &str = "ALL";

/// Why tests failed, in upstream's shape: failing test method -> traceback (failures first,
/// then errors, as unittest lists them), or [`ALL`] -> the exception text when the module
/// itself raised. Order is kept: the result files list entries as they were reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    entries: Vec<(String, String)>,
}

impl Details {
    pub fn new() -> Self {
        Details::default()
    }

    /// Details of a module-level failure: `{"ALL": text}`.
    pub fn all(text: impl Into<String>) -> Self {
        let mut d = Details::new();
        d.insert(ALL, text);
        d
    }

    /// Adds or replaces one entry (a replaced entry keeps its place).
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let (key, value) = (key.into(), value.into());
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The module-level failure text, if the module itself raised.
    pub fn module_error(&self) -> Option<&str> {
        self.get(ALL)
    }

    /// `(key, text)` in reported order, [`ALL`] included.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Failing test methods and their tracebacks, [`ALL`] excluded.
    pub fn tests(&self) -> impl Iterator<Item = (&str, &str)> {
        self.iter().filter(|(k, _)| *k != ALL)
    }
}

impl std::ops::Index<&str> for Details {
    type Output = str;
    fn index(&self, key: &str) -> &str {
        self.get(key)
            .unwrap_or_else(|| panic!("no details entry `{key}`"))
    }
}

impl Serialize for Details {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.entries.len()))?;
        for (k, v) in &self.entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Details {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Details;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of test name -> traceback")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Details, A::Error> {
                let mut out = Details::new();
                while let Some((k, v)) = m.next_entry::<String, serde_json::Value>()? {
                    // Tracebacks are strings; anything else (older or foreign files) is kept
                    // as its JSON text rather than refused.
                    let text = match v {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    };
                    out.insert(k, text);
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// What happened to one job: the verdict (status + details, as upstream records it) plus
/// timings and an executor remark that never reaches the upstream files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub status: Status,
    pub details: Details,
    /// Wall time of `suite.run` when the suite ran to the end.
    pub test_secs: Option<f64>,
    /// Wall time of the whole job as seen by the executor.
    pub wall_secs: f64,
    /// CPU time (user + system) of the sample's process tree, where the backend measures it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_secs: Option<f64>,
    /// Executor-side remark (killed by signal, memory limit, integrity check...). Read from
    /// `note` (free text) in journals written before it was typed.
    #[serde(
        default,
        alias = "note",
        skip_serializing_if = "Option::is_none",
        deserialize_with = "remark_compat"
    )]
    pub remark: Option<Remark>,
    /// Reward hacks the harness's watch saw (see `hack`), under the `flag` and `fail`
    /// policies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<crate::HackFlag>,
    /// A script job's run (`JobKind::Script`): its output and return code. `status` then
    /// says `pass` (ran to the end, return code 0), `fail` (another return code) or
    /// `timeout` (killed at its wall limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<Box<ScriptRun>>,
}

impl Outcome {
    /// An outcome with no timings yet.
    pub fn new(status: Status, details: Details) -> Outcome {
        Outcome {
            status,
            details,
            test_secs: None,
            wall_secs: 0.0,
            cpu_secs: None,
            remark: None,
            flags: Vec::new(),
            script: None,
        }
    }
}

/// How a script's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptEnd {
    /// The program ended by itself (any return code, or killed by a signal of its own doing).
    Finished,
    /// The program was still running at its wall limit and was killed.
    TimeLimitExceeded,
}

/// What a script job's program did, as the sandbox observed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptRun {
    pub end: ScriptEnd,
    /// Wall seconds from the program's start to its end (time frozen by the scheduler
    /// excluded).
    pub execution_time: f64,
    /// The exit status (`-N` when killed by signal N); `None` when killed at the limit.
    #[serde(default)]
    pub return_code: Option<i32>,
    /// Its output, each stream cut at the executor's output cap, decoded as UTF-8 (invalid
    /// bytes replaced).
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    /// The fetched files that existed: path -> base64 content.
    #[serde(default)]
    pub files: std::collections::BTreeMap<String, String>,
}

/// Why an executor remarks on a job: kills, harness faults, checks. Never part of the
/// upstream files; the verdict cache's policy and reports read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Remark {
    /// Killed at the time limit plus grace (no report).
    KilledAtDeadline,
    /// Killed by the memory limit.
    KilledByMemoryLimit,
    /// Ended at its process limit: it kept forking where the limit refused it (a process
    /// bomb), so it was ended there, as at its deadline.
    KilledAtProcessLimit,
    /// Killed by a signal before reporting.
    KilledBySignal { signal: i32 },
    /// The supervisor of the sample hung past the deadline.
    SupervisorHung { message: String },
    /// The harness failed inside the sample's process (its exit codes 70..=72).
    HarnessExit { code: i32 },
    /// The harness reported an error of its own.
    HarnessError { message: String },
    /// The sample ended its own process before the tests reported (never a pass).
    EarlyExit { code: i32 },
    /// The result failed the integrity check (a forged or incomplete report).
    Integrity { problem: String },
    /// The in-sample alarm fired: the suite hit its time limit.
    InSampleAlarm,
    /// Some tests were skipped.
    Skipped { tests: usize },
    /// A warm slot's reading was abnormal, so the sample ran again cold: what happened
    /// first, and the cold run's own remark.
    RetriedCold {
        after: Box<Remark>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        then: Option<Box<Remark>>,
    },
    /// The sample was held beside others (frozen, or waiting for a core at the lowest CPU
    /// weight) for `held_ms` and did not pass, so it ran again never held: the first run's
    /// status, and the second run's own remark. The verdict is the second run's.
    RerunUnheld {
        held_ms: u64,
        first: Status,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        then: Option<Box<Remark>>,
    },
    /// Free text: another backend's remark, or a journal written before remarks were typed.
    Other { text: String },
}

impl Remark {
    /// Its kind, as serialized (`killed_at_deadline`, `early_exit`, ...): the name flags and
    /// reports give it.
    pub fn kind(&self) -> &'static str {
        match self {
            Remark::KilledAtDeadline => "killed_at_deadline",
            Remark::KilledByMemoryLimit => "killed_by_memory_limit",
            Remark::KilledAtProcessLimit => "killed_at_process_limit",
            Remark::KilledBySignal { .. } => "killed_by_signal",
            Remark::SupervisorHung { .. } => "supervisor_hung",
            Remark::HarnessExit { .. } => "harness_exit",
            Remark::HarnessError { .. } => "harness_error",
            Remark::EarlyExit { .. } => "early_exit",
            Remark::Integrity { .. } => "integrity",
            Remark::InSampleAlarm => "in_sample_alarm",
            Remark::Skipped { .. } => "skipped",
            Remark::RetriedCold { .. } => "retried_cold",
            Remark::RerunUnheld { .. } => "rerun_unheld",
            Remark::Other { .. } => "other",
        }
    }

    /// The executor killed the sample (time, memory, a signal, a hung supervisor): the
    /// machine's load may have had a hand in it.
    pub fn is_kill(&self) -> bool {
        matches!(
            self,
            Remark::KilledAtDeadline
                | Remark::KilledByMemoryLimit
                | Remark::KilledAtProcessLimit
                | Remark::KilledBySignal { .. }
                | Remark::SupervisorHung { .. }
        )
    }

    /// The harness, not the sample, went wrong.
    pub fn is_harness_fault(&self) -> bool {
        matches!(
            self,
            Remark::HarnessExit { .. } | Remark::HarnessError { .. }
        )
    }

    /// Whether a verdict with this remark may be reused by later runs: not after a kill, a
    /// harness fault or a cold retry (the machine's doing, maybe), nor for text we cannot
    /// read. An unheld rerun's verdict is as good as its own remark.
    pub fn keeps_verdict_reusable(&self) -> bool {
        if let Remark::RerunUnheld { then, .. } = self {
            return then.as_ref().is_none_or(|r| r.keeps_verdict_reusable());
        }
        !(self.is_kill()
            || self.is_harness_fault()
            || matches!(self, Remark::RetriedCold { .. } | Remark::Other { .. }))
    }

    /// The remark this one comes down to (a cold retry's first cause; an unheld rerun's own).
    pub fn cause(&self) -> &Remark {
        match self {
            Remark::RetriedCold { after, .. } => after.cause(),
            Remark::RerunUnheld {
                then: Some(then), ..
            } => then.cause(),
            other => other,
        }
    }
}

impl fmt::Display for Remark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Remark::KilledAtDeadline => f.write_str("killed at time limit + grace"),
            Remark::KilledByMemoryLimit => f.write_str("killed by the memory limit"),
            Remark::KilledAtProcessLimit => {
                f.write_str("ended at the process limit (it kept forking: a process bomb)")
            }
            Remark::KilledBySignal { signal } => {
                write!(f, "killed by signal {signal} before reporting")
            }
            Remark::SupervisorHung { message } => f.write_str(message),
            Remark::HarnessExit { code } => {
                write!(f, "harness failed in the sample process (exit {code})")
            }
            Remark::HarnessError { message } => write!(f, "harness error: {message}"),
            Remark::EarlyExit { code } => write!(f, "early exit (code {code})"),
            Remark::Integrity { problem } => write!(f, "integrity: {problem}"),
            Remark::InSampleAlarm => f.write_str("time limit reached (in-sample alarm)"),
            Remark::Skipped { tests } => write!(f, "{tests} test(s) skipped"),
            Remark::RetriedCold { after, then } => match then {
                Some(then) => write!(f, "{then}; retried cold after: {after}"),
                None => write!(f, "retried cold after: {after}"),
            },
            Remark::RerunUnheld {
                held_ms,
                first,
                then,
            } => {
                if let Some(then) = then {
                    write!(f, "{then}; ")?;
                }
                let held = *held_ms as f64 / 1000.0;
                write!(
                    f,
                    "ran again never held: the first run, held {held:.1} s, ended {first}"
                )
            }
            Remark::Other { text } => f.write_str(text),
        }
    }
}

/// A remark as journals hold it: typed, or free text from before it was typed.
fn remark_compat<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Remark>, D::Error> {
    match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(text)) => Ok(Some(Remark::Other { text })),
        Some(v) => serde_json::from_value(v)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_round_trip_in_order() {
        let text = r#"{"test_b": "tb", "test_a": "ta", "n": 3}"#;
        let d: Details = serde_json::from_str(text).unwrap();
        let keys: Vec<&str> = d.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["test_b", "test_a", "n"]);
        assert_eq!(d["n"], *"3");
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"test_b":"tb","test_a":"ta","n":"3"}"#
        );
        assert_eq!(Details::all("boom").module_error(), Some("boom"));
        assert_eq!(Details::all("boom").tests().count(), 0);
    }

    #[test]
    fn remarks_round_trip_typed_and_old_journals_read_as_text() {
        let mut o = Outcome::new(Status::Fail, Details::new());
        o.remark = Some(Remark::RetriedCold {
            after: Box::new(Remark::KilledBySignal { signal: 9 }),
            then: None,
        });
        let text = serde_json::to_string(&o).unwrap();
        assert!(
            text.contains(r#""remark":{"kind":"retried_cold""#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Outcome>(&text).unwrap(), o);
        let old = r#"{"status":"fail","details":{},"test_secs":null,"wall_secs":1.0,"note":"killed by signal 9 before reporting"}"#;
        let o: Outcome = serde_json::from_str(old).unwrap();
        assert_eq!(
            o.remark,
            Some(Remark::Other {
                text: "killed by signal 9 before reporting".into()
            })
        );
        assert!(!o.remark.unwrap().keeps_verdict_reusable());
        assert!(Remark::Skipped { tests: 1 }.keeps_verdict_reusable());
        assert!(!Remark::KilledByMemoryLimit.keeps_verdict_reusable());
        assert!(!Remark::HarnessExit { code: 70 }.keeps_verdict_reusable());
    }

    /// `Remark::kind` is the name its serialized form carries, for every variant.
    #[test]
    fn a_remarks_kind_is_its_serialized_tag() {
        let text = |t: &str| t.to_string();
        for r in [
            Remark::KilledAtDeadline,
            Remark::KilledByMemoryLimit,
            Remark::KilledBySignal { signal: 9 },
            Remark::SupervisorHung { message: text("m") },
            Remark::HarnessExit { code: 70 },
            Remark::HarnessError { message: text("m") },
            Remark::EarlyExit { code: 0 },
            Remark::Integrity { problem: text("p") },
            Remark::InSampleAlarm,
            Remark::Skipped { tests: 1 },
            Remark::RetriedCold {
                after: Box::new(Remark::InSampleAlarm),
                then: None,
            },
            Remark::RerunUnheld {
                held_ms: 1500,
                first: Status::Fail,
                then: Some(Box::new(Remark::Skipped { tests: 1 })),
            },
            Remark::Other { text: text("t") },
        ] {
            let v = serde_json::to_value(&r).unwrap();
            assert_eq!(v["kind"], r.kind(), "{r:?}");
        }
    }
}
