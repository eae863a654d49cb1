//! The wire between bcb and its Python harness, field by field (the version alone is
//! `wire.rs`'s own test): every field one side writes, the other reads, and every field one
//! side reads, the other writes.
//!
//! bcb's lines are its own serde types (`src/wire.rs`) with every optional field set: the
//! config, jobs (a script's too) and each control op. The harness's side is the harness
//! itself, as bcb embeds it, driven by `harness/tests/wire_probe.py` on the eval env's Python:
//! slots with every kernel protection off (no root needed) read those lines with the
//! harness's own reader, which notes each field the harness looks up, and run samples that
//! make them send each kind of event (a pass with a hack flag, a kill by a signal, a script, a
//! one-shot exit, a harness error). bcb reads those events with its own types, strictly: each
//! must parse, and a field whose value changes nothing bcb reads (`Event`, `Report::parse`,
//! `ScriptRun`, `HackFlag`) is a field bcb never reads. What bcb's types read is their serde
//! field list where serde has one, and the lists below where it has none (the events'
//! variants, `Report::parse`), each checked to be read.
//!
//! The fields one side writes and the other ignores on purpose are [`ONE_SIDED`], each with
//! its reason; any other disagreement fails the test, naming the field.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::de::{DeserializeOwned, Deserializer, Error as _, Visitor};
use serde_json::{json, Value};

use bcb_executor::{HackFlag, Job, JobKind, Limits, Program, ScriptInput, ScriptRun};
use bcb_sandbox::wire::{Control, Event, JobRequest, Report, SlotConfig, WireLimits, WIRE_VERSION};
use bcb_sandbox::Isolation;

/// Fields only one side uses, on purpose. `message.field`: messages are `config` (and its
/// `isolation`, `limits`), `job` (and its `script`), `op.<op>`, the events `ready`,
/// `started`, `result`, `idle`, and in a result `report`, `report.script`, `hacks`.
const ONE_SIDED: &[(&str, &str)] = &[
    (
        "config.limits.memory_mb",
        "the memory cgroup's cap, which bcb applies itself; the harness gets `tmpfs_mb` and \
         `memory_rlimit_mb`, derived from it",
    ),
    (
        "config.limits.kill_grace",
        "`Limits::kill_grace` as serde writes a Duration (the limits are flattened in); the \
         harness reads `kill_grace_secs`",
    ),
    (
        "config.ro_paths",
        "extra read-only binds into the sample's root the harness accepts (its `__init__` \
         says so); bcb sends none",
    ),
    (
        "job.op",
        "the slot tells a control op from a job by it (`slot.main`): a job has none",
    ),
    (
        "ready.pid",
        "bcb spawned the slot and knows its process; the zygote's ready line is another wire",
    ),
    (
        "ready.preload_secs",
        "not used by bcb (the pool times a slot's start itself)",
    ),
    ("started.key", "one job at a time per slot: bcb knows which"),
    ("result.key", "one job at a time per slot: bcb knows which"),
    (
        "result.wall_secs",
        "bcb times the job itself, from the line's send to the result",
    ),
    (
        "result.frozen_secs",
        "the scheduler's own freezer bookkeeping holds it on bcb's side",
    ),
];

/// What bcb reads of each event besides its tag, where serde gives no field list (the
/// variants of an internally tagged enum): each is checked to be read.
const EVENT_READS: &[(&str, &[&str])] = &[
    ("ready", &["preload_failed", "forked"]),
    ("started", &["pid"]),
    ("idle", &["cpu_after_verdict_secs"]),
];

/// The report's fields bcb reads: `Report::parse`'s, and `script` (a script job's run, read
/// by `verdict_rules::read_script_result`).
const REPORT_READS: &[&str] = &[
    "status",
    "details",
    "test_secs",
    "ran",
    "skipped",
    "integrity",
    "harness_error",
    "script",
];

/// The messages whose fields are checked inside another's (the rest are maps: `env`, a
/// script's `files`, the `stages`, a report's `details`).
const NESTED: &[(&str, &str)] = &[
    ("config", "isolation"),
    ("config", "limits"),
    ("job", "script"),
];

const TEST: &str = "import unittest\n\n\nclass TestCases(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(task_func(), 1)\n";

fn unittest_job(code: &str) -> Job {
    let mut job = Job::for_test("BigCodeBench/0", Program::Sample(0), code, TEST);
    job.time_limit = Duration::from_secs(30);
    job
}

/// The process rlimit the sample gets: this process's own (it may not be raised), which no
/// sample here comes near.
fn process_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut lim) }, 0);
    if lim.rlim_cur == libc::RLIM_INFINITY {
        1 << 20
    } else {
        lim.rlim_cur
    }
}

/// bcb's lines, as its types write them, every optional field set: the config (every kernel
/// protection off but the process rlimit, whose limit the harness then reads), jobs by name
/// (each sample one of the probe's runs needs), and each control op.
fn bcb_lines(work: &Path) -> Value {
    let iso = Isolation {
        nproc_rlimit: true,
        ..Isolation::default()
    };
    let limits = Limits {
        max_processes: process_limit(),
        ..Limits::default()
    };
    let freezer = work.join("freezer");
    let preload = vec!["json".to_string()];
    let cgroups: Vec<PathBuf> = Vec::new();
    let config = SlotConfig {
        protocol: WIRE_VERSION,
        isolation: &iso,
        limits: WireLimits {
            limits: &limits,
            kill_grace_secs: 1.0,
            memory_rlimit_mb: Some(4096),
            tmpfs_mb: 1024,
            freeze_budget_secs: 60.0,
        },
        env: BTreeMap::from([("LANG", "C.UTF-8"), ("PATH", "/usr/bin:/bin")]),
        preload: &preload,
        cgroups: &cgroups,
        freezer: Some(&freezer),
        cgroup_home: Some(work.to_path_buf()),
        workroot: work,
        one_shot: false,
        hacks: true,
    };
    let script = Job {
        kind: JobKind::Script(std::sync::Arc::new(ScriptInput {
            stdin: "2\n".into(),
            files: vec![("data/in.txt".into(), b"21".to_vec())],
            fetch_files: vec!["out.txt".into()],
            memory_mb: Some(1024),
        })),
        ..unittest_job(
            "import sys\nn = int(sys.stdin.read()) * int(open('data/in.txt').read())\nopen('out.txt', 'w').write(str(n))\nprint(n)\n",
        )
    };
    let jobs = [
        // A pass with a trace hook set by the sample: the watch flags it.
        (
            "hack",
            unittest_job("import sys\nsys.settrace(None)\n\n\ndef task_func():\n    return 1\n"),
        ),
        // Killed by a signal before any report.
        (
            "killed",
            unittest_job("import os\nimport signal\nos.kill(os.getpid(), signal.SIGKILL)\n"),
        ),
        ("plain", unittest_job("def task_func():\n    return 1\n")),
        ("script", script),
    ];
    let jobs: serde_json::Map<String, Value> = jobs
        .iter()
        .enumerate()
        .map(|(key, (name, job))| {
            let line = serde_json::to_value(JobRequest::new(key as u64, job)).unwrap();
            (name.to_string(), line)
        })
        .collect();
    let ops = [
        Control::Freeze { key: 0 },
        Control::Thaw { key: 0 },
        Control::Credit { key: 0, secs: 0.25 },
        Control::Exit,
    ];
    let ops: serde_json::Map<String, Value> = ops
        .iter()
        .map(|op| {
            let line = serde_json::to_value(op).unwrap();
            (line["op"].as_str().unwrap().to_string(), line)
        })
        .collect();
    json!({"config": serde_json::to_value(&config).unwrap(), "jobs": jobs, "ops": ops})
}

/// The fields of each message in `lines` (`config`, `config.limits`, `job`, `op.freeze`...).
fn written_by_bcb(lines: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut add = |path: &str, msg: &Value| {
        let fields = msg.as_object().expect("a message is an object");
        out.entry(path.into())
            .or_default()
            .extend(fields.keys().cloned());
        for (outer, inner) in NESTED {
            if *outer == path {
                if let Some(o) = msg[*inner].as_object() {
                    out.entry(format!("{path}.{inner}"))
                        .or_default()
                        .extend(o.keys().cloned());
                }
            }
        }
    };
    add("config", &lines["config"]);
    for job in lines["jobs"].as_object().unwrap().values() {
        add("job", job);
    }
    for (op, line) in lines["ops"].as_object().unwrap() {
        add(&format!("op.{op}"), line);
    }
    out
}

/// The field names a struct's `Deserialize` knows (serde hands them to `deserialize_struct`).
fn serde_fields<T: DeserializeOwned>() -> BTreeSet<String> {
    struct Fields;
    impl<'de> Deserializer<'de> for Fields {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(Self::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            Err(Self::Error::custom(fields.join(",")))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let err = T::deserialize(Fields).err().expect("a struct").to_string();
    assert_ne!(err, "not a struct");
    err.split(',').map(str::to_string).collect()
}

/// How bcb reads a message: the `Debug` of what it parsed, or the parse error.
type Reader<'a> = &'a dyn Fn(&Value) -> Result<String, String>;

fn parsed<T: DeserializeOwned + std::fmt::Debug>(v: &Value) -> Result<String, String> {
    serde_json::from_value::<T>(v.clone())
        .map(|t| format!("{t:?}"))
        .map_err(|e| e.to_string())
}

/// What bcb reads of a report: `Report::parse`, and a script job's run (as
/// `verdict_rules::read_script_result` reads it).
fn read_report(v: &Value) -> Result<String, String> {
    let script = v.get("script").map(parsed::<ScriptRun>);
    Ok(format!("{:?} {script:?}", Report::parse(v)))
}

/// Whether bcb reads `field` of `msg`: some other value of it parses differently (or not at
/// all). A field bcb ignores parses the same whatever its value.
fn bcb_reads(msg: &Value, field: &str, read: Reader) -> bool {
    let before = read(msg);
    assert!(before.is_ok(), "bcb cannot read {msg}: {before:?}");
    let others = [
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(-1),
        json!(2.5),
        json!("x"),
        json!(""),
        json!([]),
        json!(["x"]),
        json!([1]),
        json!({}),
        json!({"x": 1}),
    ];
    others.iter().filter(|v| **v != msg[field]).any(|v| {
        let mut changed = msg.clone();
        changed[field] = v.clone();
        read(&changed) != before
    })
}

/// Per message, the fields the harness writes and those bcb reads of them; disagreements go
/// to `problems` as (field, what).
struct HarnessToBcb {
    written: BTreeMap<String, BTreeSet<String>>,
    problems: Vec<(String, String)>,
}

impl HarnessToBcb {
    fn message(&mut self, name: &str, msg: &Value, read: Reader) {
        let fields = msg.as_object().expect("a message is an object");
        for field in fields.keys() {
            self.written
                .entry(name.into())
                .or_default()
                .insert(field.clone());
            if !bcb_reads(msg, field, read) {
                self.problems.push((
                    format!("{name}.{field}"),
                    "the harness writes it, bcb never reads it".into(),
                ));
            }
        }
    }

    /// Fields bcb reads of `name` that the harness never wrote.
    fn unwritten(&mut self, name: &str, reads: impl IntoIterator<Item = String>) {
        let written = self.written.get(name).cloned().unwrap_or_default();
        for field in reads {
            if !written.contains(&field) {
                self.problems.push((
                    format!("{name}.{field}"),
                    "bcb reads it, the harness never writes it".into(),
                ));
            }
        }
    }
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn bcb_and_its_harness_agree_on_every_field_of_the_wire() {
    let Some(python) = bcb_testkit::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let harness = dir.path().join("harness");
    bcb_sandbox::launch::write_harness(&harness).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let lines = bcb_lines(&work);
    let messages = dir.path().join("messages.json");
    std::fs::write(&messages, lines.to_string()).unwrap();
    let probe = common::harness_dir().join("tests/wire_probe.py");
    let out = Command::new(&python)
        .arg("-I")
        .arg(&probe)
        .args([&harness, &messages, &work])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "wire_probe.py failed:\n{stderr}");
    let probe: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("wire_probe.py's output: {e}\n{stderr}"));
    assert_eq!(
        probe["problems"],
        json!([]),
        "the harness's runs:\n{stderr}"
    );

    let mut problems: Vec<(String, String)> = Vec::new();

    // bcb -> harness: what bcb writes of each message, what the harness read of it.
    let written = written_by_bcb(&lines);
    let mut read: BTreeMap<String, BTreeSet<String>> = probe["reads"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), strings(v)))
        .collect();
    read.entry("config".into())
        .or_default()
        .extend(strings(&probe["static"]["config"]));
    for (msg, fields) in &read {
        let Some(bcb) = written.get(msg) else {
            problems.push((
                msg.clone(),
                "the harness reads it, bcb never sends it".into(),
            ));
            continue;
        };
        for f in fields.difference(bcb) {
            problems.push((
                format!("{msg}.{f}"),
                "the harness reads it, bcb never writes it".into(),
            ));
        }
    }
    for (msg, fields) in &written {
        let harness = read.get(msg).cloned().unwrap_or_default();
        for f in fields.difference(&harness) {
            problems.push((
                format!("{msg}.{f}"),
                "bcb writes it, the harness never reads it".into(),
            ));
        }
    }

    // harness -> bcb: every event the harness sent, read by bcb's types.
    let mut back = HarnessToBcb {
        written: BTreeMap::new(),
        problems: Vec::new(),
    };
    let events = probe["events"].as_array().unwrap();
    let mut results: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for e in events {
        let (run, event) = (e["run"].as_str().unwrap(), &e["event"]);
        let kind = event["event"].as_str().unwrap_or("?").to_string();
        if let Err(err) = parsed::<Event>(event) {
            back.problems
                .push((kind.clone(), format!("bcb cannot read {event}: {err}")));
            continue;
        }
        back.message(&kind, event, &parsed::<Event>);
        if kind != "result" {
            continue;
        }
        results
            .entry(run.to_string())
            .or_default()
            .push(event.clone());
        if let Some(report) = event.get("report").filter(|r| r.is_object()) {
            back.message("report", report, &read_report);
            if let Some(run) = report.get("script").filter(|s| s.is_object()) {
                back.message("report.script", run, &parsed::<ScriptRun>);
            }
        }
        for flag in event["hacks"].as_array().into_iter().flatten() {
            back.message("hacks", flag, &parsed::<HackFlag>);
        }
    }
    // The result fields the harness writes on paths these runs do not take (a memory
    // cgroup's kill, a second report) count as written: `supervisor.py` writes them.
    back.written
        .entry("result".into())
        .or_default()
        .extend(strings(&probe["static"]["result"]));
    back.unwritten("result", serde_fields::<bcb_sandbox::wire::ResultMsg>());
    back.unwritten("report.script", serde_fields::<ScriptRun>());
    back.unwritten("hacks", serde_fields::<HackFlag>());
    back.unwritten("report", REPORT_READS.iter().map(|f| f.to_string()));
    for (kind, fields) in EVENT_READS {
        back.unwritten(kind, fields.iter().map(|f| f.to_string()));
    }
    problems.extend(back.problems);

    // The runs made the harness say what they were for (else a field could go unseen).
    let result = |run: &str, i: usize| results.get(run).and_then(|r| r.get(i)).cloned();
    let hack = result("pool", 0).expect("the pool's first result");
    assert_eq!(hack["report"]["status"], "pass", "{hack}");
    assert_eq!(hack["hacks"][0]["evidence"], "sys.settrace", "{hack}");
    let killed = result("pool", 1).expect("the pool's second result");
    assert_eq!(killed["signal"], 9, "{killed}");
    assert!(killed["frozen_secs"].as_f64() > Some(0.0), "{killed}");
    let script = result("pool", 2).expect("the pool's script result");
    assert_eq!(script["report"]["script"]["stdout"], "42\n", "{script}");
    assert_eq!(
        script["report"]["script"]["files"]["out.txt"], "NDI=",
        "{script}"
    );
    let one_shot = result("one-shot", 0).expect("the one-shot result");
    assert_eq!(one_shot["exit_code"], 0, "{one_shot}");
    let broken = result("harness-error", 0).expect("the harness error's result");
    assert!(broken["report"]["harness_error"].is_string(), "{broken}");

    // Every disagreement is a one-sided field with its reason, and every such field still is.
    let found: BTreeMap<String, String> = problems.into_iter().collect();
    let unexplained: Vec<String> = found
        .iter()
        .filter(|(field, _)| !ONE_SIDED.iter().any(|(f, _)| f == field))
        .map(|(field, what)| format!("{field}: {what}"))
        .collect();
    assert!(
        unexplained.is_empty(),
        "bcb (src/wire.rs) and the harness (harness/bcb_harness/) disagree:\n  {}\n(change both \
         sides together, or add the field to ONE_SIDED with the reason)",
        unexplained.join("\n  ")
    );
    let stale: Vec<&str> = ONE_SIDED
        .iter()
        .map(|(f, _)| *f)
        .filter(|f| !found.contains_key(*f))
        .collect();
    assert!(
        stale.is_empty(),
        "ONE_SIDED lists fields both sides now use: {stale:?}"
    );
}
