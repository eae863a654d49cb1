//! Upstream's verdict rules (bigcodebench 0.2.5) plus bcb's integrity checks, in one place:
//! how the supervisor's [`ResultMsg`] becomes an [`Outcome`].
//!
//! - The suite ran and every test passed, with a result for every test the code defines and
//!   unittest untouched: `pass`.
//! - A test failed or errored, or the module raised: `fail` with the tracebacks / `ALL`.
//! - The alarm fired, or the process was killed (time limit, memory limit): `timeout`, as
//!   upstream reports any death before a verdict.
//! - The sample ended its own process before reporting (`os._exit`, a forged or missing
//!   report): `fail` — upstream would say `timeout`; bcb never lets it pass.
//! - The hack watch saw a reward hack: the [`HackPolicy`] decides (`fail` by default: a pass
//!   becomes `fail` with `bcb: reward hack: ...` as its details).

use serde_json::Value;

use crate::wire::{Report, ResultMsg};
use bcb_executor::{
    Details, ExecError, HackPolicy, Job, JobKind, Marker, Outcome, Remark, ScriptEnd, ScriptRun,
    Status,
};

/// How a result should be treated.
pub enum Reading {
    Done(Outcome),
    /// The forked run died abnormally (not its own doing as far as we can tell): retry cold.
    Abnormal(Outcome),
}

fn details_of(report: &Report) -> Details {
    let mut d = Details::new();
    for (k, v) in &report.details {
        match v {
            Value::String(s) => d.insert(k.clone(), stable_harness_path(s)),
            other => d.insert(k.clone(), other.to_string()),
        }
    }
    d
}

/// Tracebacks through the harness's wrappers name its files in a per-run temporary directory
/// (`<root>/bcb_harness.py`, `<root>/bcb_harness/<module>.py`); that directory is cut so the
/// same sample gives the same details in every run.
fn stable_harness_path(trace: &str) -> String {
    const OPEN: &str = "File \"";
    let mut out = String::with_capacity(trace.len());
    let mut rest = trace;
    while let Some(open) = rest.find(OPEN) {
        let (head, tail) = rest.split_at(open + OPEN.len());
        out.push_str(head);
        rest = tail;
        // The quoted path, on this line.
        let Some(end) = rest
            .find(['"', '\n'])
            .filter(|&e| rest[e..].starts_with('"'))
        else {
            continue;
        };
        let path = &rest[..end];
        let Some(cut) = path.rfind("/bcb_harness") else {
            continue;
        };
        let file = &path[cut + 1..];
        if file == "bcb_harness.py" || file.starts_with("bcb_harness/") {
            out.push_str(file);
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    out
}

/// The result of `job`: a script's run, or a unittest verdict under the rules above.
pub fn read_job_result(job: &Job, msg: &ResultMsg, wall: f64, hacks: HackPolicy) -> Reading {
    match &job.kind {
        JobKind::Unittest => read_result(msg, wall, hacks),
        JobKind::Script(_) => read_script_result(msg, wall),
    }
}

/// A script job's result: what the program did, as the runner inside the sandbox saw it
/// (its output and return code are the program's own to choose, so nothing there needs
/// trusting); the supervisor's kill at the deadline or the memory limit when no report came.
fn read_script_result(msg: &ResultMsg, wall: f64) -> Reading {
    let mut out = Outcome::new(Status::Timeout, Details::new());
    out.wall_secs = wall;
    out.cpu_secs = msg.cpu_secs;
    let report = msg.report.as_ref();
    let run = report
        .and_then(|r| r.get("script"))
        .and_then(|v| serde_json::from_value::<ScriptRun>(v.clone()).ok());
    if let Some(mut run) = run {
        if msg.killed_at_deadline {
            // The supervisor's own deadline (limit + grace) came first.
            run.end = ScriptEnd::TimeLimitExceeded;
            run.return_code = None;
            out.remark = Some(Remark::KilledAtDeadline);
        }
        out.status = match (run.end, run.return_code) {
            (ScriptEnd::TimeLimitExceeded, _) => Status::Timeout,
            (ScriptEnd::Finished, Some(0)) => Status::Pass,
            (ScriptEnd::Finished, _) => Status::Fail,
        };
        out.test_secs = Some(run.execution_time);
        out.script = Some(Box::new(run));
        return Reading::Done(out);
    }
    if let Some(err) = report.and_then(Report::parse).and_then(|r| r.harness_error) {
        out.status = Status::Fail;
        out.remark = Some(Remark::HarnessError { message: err });
        return Reading::Abnormal(out);
    }
    let ended = |end, return_code, stderr: &str| {
        Some(Box::new(ScriptRun {
            end,
            execution_time: wall,
            return_code,
            stdout: String::new(),
            stderr: stderr.to_string(),
            files: Default::default(),
        }))
    };
    // The runner ended before reporting (the program killed it): no run to show.
    let early =
        |code| format!("bcb: the script's runner exited with code {code} before it reported");
    match without_report(msg, out, early) {
        Reading::Done(mut o) => {
            match o.remark {
                Some(Remark::KilledAtDeadline) => {
                    o.script = ended(ScriptEnd::TimeLimitExceeded, None, "");
                }
                // Killed by a limit: the program ended by SIGKILL, the limit named.
                Some(Remark::KilledByMemoryLimit | Remark::KilledAtProcessLimit) => {
                    let limit = if o.remark == Some(Remark::KilledByMemoryLimit) {
                        Marker::MemoryLimit
                    } else {
                        Marker::ProcessLimit
                    };
                    o.status = Status::Fail;
                    o.script = ended(ScriptEnd::Finished, Some(-libc::SIGKILL), &limit.text(""));
                }
                _ => {}
            }
            Reading::Done(o)
        }
        abnormal => abnormal,
    }
}

/// Applies the rules to one result message; `wall` is the executor's own measure.
fn read_result(msg: &ResultMsg, wall: f64, hacks: HackPolicy) -> Reading {
    let mut out = Outcome::new(Status::Timeout, Details::new());
    out.wall_secs = wall;
    out.cpu_secs = msg.cpu_secs;
    if let Some(report) = msg.report.as_ref().and_then(Report::parse) {
        return match from_report(msg, &report, out) {
            Reading::Done(mut o) => {
                hacks.apply(&mut o, msg.hacks.clone());
                Reading::Done(o)
            }
            abnormal => abnormal,
        };
    }
    // The sample ended its own process early (os._exit, exit in a thread...): never a pass.
    let early = |code| {
        format!("bcb: the sample's process exited with code {code} before the tests reported")
    };
    without_report(msg, out, early)
}

/// No report came: killed (at the deadline, by the memory limit, by a signal), or the process
/// exited before reporting (its harness failing, or early: `early_exit` says so in the details).
fn without_report(
    msg: &ResultMsg,
    mut out: Outcome,
    early_exit: impl FnOnce(i32) -> String,
) -> Reading {
    if msg.killed_at_deadline {
        out.remark = Some(Remark::KilledAtDeadline);
        return Reading::Done(out);
    }
    if msg.oom_killed {
        out.details = Details::all(Marker::MemoryLimit.text(""));
        out.remark = Some(Remark::KilledByMemoryLimit);
        return Reading::Done(out);
    }
    if msg.process_bomb {
        out.details = Details::all(Marker::ProcessLimit.text(""));
        out.remark = Some(Remark::KilledAtProcessLimit);
        return Reading::Done(out);
    }
    if let Some(sig) = msg.signal {
        out.remark = Some(Remark::KilledBySignal { signal: sig });
        return Reading::Abnormal(out);
    }
    let code = msg.exit_code.unwrap_or(-1);
    if (70..=72).contains(&code) {
        out.remark = Some(Remark::HarnessExit { code });
        return Reading::Abnormal(out);
    }
    out.status = Status::Fail;
    out.details = Details::all(early_exit(code));
    out.remark = Some(Remark::EarlyExit { code });
    Reading::Done(out)
}

fn from_report(msg: &ResultMsg, report: &Report, mut out: Outcome) -> Reading {
    if let Some(err) = &report.harness_error {
        out.status = Status::Fail;
        out.remark = Some(Remark::HarnessError {
            message: err.clone(),
        });
        return Reading::Abnormal(out);
    }
    out.details = details_of(report);
    out.test_secs = report.test_secs;
    let mut problem = msg.integrity.clone().or_else(|| report.integrity.clone());
    if report.status == "pass" && problem.is_none() {
        if let Some(expected) = &msg.expected {
            let mut want = expected.clone();
            let mut got = report.ran.clone();
            want.sort();
            got.sort();
            if want != got {
                problem = Some(format!(
                    "expected results for {} tests ({}), got {}",
                    want.len(),
                    want.join(", "),
                    got.len()
                ));
            }
        }
    }
    out.status = match report.status.as_str() {
        "pass" if out.details.is_empty() && problem.is_none() => Status::Pass,
        "pass" | "fail" => Status::Fail,
        _ => Status::Timeout,
    };
    if let Some(p) = problem {
        if out.details.is_empty() {
            out.details = Details::all(Marker::IntegrityFailed.text(&p));
        }
        out.remark = Some(Remark::Integrity { problem: p });
    }
    if out.status == Status::Timeout && out.remark.is_none() {
        out.remark = Some(Remark::InSampleAlarm);
    }
    if report.skipped > 0 && out.remark.is_none() {
        out.remark = Some(Remark::Skipped {
            tests: report.skipped as usize,
        });
    }
    Reading::Done(out)
}

/// Why a sample's process could not deliver a result (it has been killed).
#[derive(Debug)]
pub struct SlotFailure {
    pub message: String,
    pub timed_out: bool,
}

/// A job whose slot died or hung: a hung supervisor past the deadline is the sample's
/// timeout (as upstream would see it); a dead one is infrastructure, never the sample's verdict.
pub fn slot_failure(f: &SlotFailure, wall: f64) -> Result<Outcome, ExecError> {
    if f.timed_out {
        let mut out = Outcome::new(Status::Timeout, Details::new());
        out.wall_secs = wall;
        out.remark = Some(Remark::SupervisorHung {
            message: f.message.clone(),
        });
        return Ok(out);
    }
    Err(ExecError::transient(f.message.clone()))
}

#[cfg(test)]
mod tests {
    use super::{read_result, Reading, ResultMsg};
    use bcb_executor::{HackClass, HackPolicy, Status};

    fn hacked_pass() -> ResultMsg {
        serde_json::from_value(serde_json::json!({
            "expected": ["test_a"],
            "report": {"status": "pass", "details": {}, "ran": ["test_a"]},
            "hacks": [{"class": "tracing", "evidence": "sys.settrace", "line": 3, "runtime": false}]
        }))
        .unwrap()
    }

    #[test]
    fn the_hack_policy_decides_a_pass_the_watch_flagged() {
        let done = |p| match read_result(&hacked_pass(), 1.0, p) {
            Reading::Done(o) => o,
            Reading::Abnormal(_) => panic!("a report is never abnormal"),
        };
        let o = done(HackPolicy::Fail);
        assert_eq!(o.status, Status::Fail);
        assert_eq!(
            o.details.module_error(),
            Some("bcb: reward hack: tracing: sys.settrace (line 3)")
        );
        assert_eq!(o.flags[0].class, HackClass::Tracing);
        let o = done(HackPolicy::Flag);
        assert_eq!((o.status, o.flags.len()), (Status::Pass, 1));
        let o = done(HackPolicy::Off);
        assert_eq!((o.status, o.flags.len()), (Status::Pass, 0));
    }

    #[test]
    fn a_process_bomb_ended_at_its_limit_is_a_timeout_that_says_so() {
        use bcb_executor::{Marker, Remark};
        let msg: ResultMsg =
            serde_json::from_value(serde_json::json!({"process_bomb": true, "signal": 9})).unwrap();
        let Reading::Done(o) = read_result(&msg, 0.6, HackPolicy::Off) else {
            panic!("a limit's kill is a verdict, not a fault");
        };
        assert_eq!(
            (o.status, o.remark),
            (Status::Timeout, Some(Remark::KilledAtProcessLimit))
        );
        let text = Marker::ProcessLimit.text("");
        assert_eq!(o.details.module_error(), Some(text.as_str()));
    }

    #[test]
    fn a_scripts_run_decides_its_status_and_the_supervisors_kills_win() {
        use super::read_script_result;
        use bcb_executor::{Marker, Remark, ScriptEnd};
        let msg = |v: serde_json::Value| serde_json::from_value::<ResultMsg>(v).unwrap();
        let run = |end: &str, rc: serde_json::Value| {
            serde_json::json!({"report": {"script": {"end": end, "execution_time": 0.2,
                "return_code": rc, "stdout": "out", "stderr": "", "files": {}}}})
        };
        let read = |m: &ResultMsg| match read_script_result(m, 1.0) {
            Reading::Done(o) => o,
            Reading::Abnormal(o) => panic!("abnormal: {o:?}"),
        };
        let o = read(&msg(run("finished", 0.into())));
        assert_eq!(
            (o.status, o.script.unwrap().stdout.as_str()),
            (Status::Pass, "out")
        );
        assert_eq!(
            read(&msg(run("finished", (-11).into()))).status,
            Status::Fail
        );
        assert_eq!(
            read(&msg(run("time_limit_exceeded", serde_json::Value::Null))).status,
            Status::Timeout
        );
        let mut late = run("finished", 0.into());
        late["killed_at_deadline"] = true.into();
        let o = read(&msg(late));
        assert_eq!(
            (o.status, o.remark),
            (Status::Timeout, Some(Remark::KilledAtDeadline))
        );
        assert_eq!(o.script.unwrap().end, ScriptEnd::TimeLimitExceeded);
        let o = read(&msg(serde_json::json!({"oom_killed": true, "signal": 9})));
        let s = o.script.unwrap();
        assert_eq!((o.status, s.return_code), (Status::Fail, Some(-9)));
        let o = read(&msg(serde_json::json!({"process_bomb": true, "signal": 9})));
        assert_eq!(o.remark, Some(Remark::KilledAtProcessLimit));
        let s = o.script.unwrap();
        assert_eq!((o.status, s.return_code), (Status::Fail, Some(-9)));
        assert_eq!(s.stderr, Marker::ProcessLimit.text(""));
        assert!(matches!(
            read_script_result(&msg(serde_json::json!({"signal": 9})), 1.0),
            Reading::Abnormal(_)
        ));
    }

    #[test]
    fn harness_paths_are_stable() {
        let t = "  File \"__test__.py\", line 50, in task_func\n  File \"/tmp/bcb-exec-Ohtjq0/bcb_harness.py\", line 529, in patched\n";
        assert_eq!(
            super::stable_harness_path(t),
            "  File \"__test__.py\", line 50, in task_func\n  File \"bcb_harness.py\", line 529, in patched\n"
        );
        assert_eq!(super::stable_harness_path("no harness"), "no harness");
        let t = "  File \"/tmp/bcb-exec-Ohtjq0/bcb_harness/guard.py\", line 9, in patched\n  File \"/usr/lib/python3.11/subprocess.py\", line 1, in run\n";
        assert_eq!(
            super::stable_harness_path(t),
            "  File \"bcb_harness/guard.py\", line 9, in patched\n  File \"/usr/lib/python3.11/subprocess.py\", line 1, in run\n"
        );
        // Only a quoted path of the harness's own files is cut.
        for same in [
            "  File \"/srv/notes/bcb_harness_notes.py\", line 1, in f\n",
            "  File \"/tmp/x/bcb_harness.py, line 1 (no closing quote)\n  File \"y\"",
            "see /tmp/x/bcb_harness.py\" here",
        ] {
            assert_eq!(super::stable_harness_path(same), same);
        }
    }
}
