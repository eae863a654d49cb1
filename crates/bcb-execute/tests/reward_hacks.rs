//! Reward hacks (issue 19), tried as a hostile trainer would: each fixture in
//! `fixtures/reward_hacks/` is a wrong answer to a real task plus one hack (`<class>__<name>.py`,
//! first line `# task: BigCodeBench/N`). With the watch off (`HackPolicy::Off`: bcb's harness
//! before the watch) each hack is shown to `pass`; with the default policy it is `fail` with
//! `bcb: reward hack: ...` as its details. Controls: the canonical solutions pass with no flag
//! under both, and the wrong answers without a hack (`baseline__*`) fail under both.
//!
//! These run the executor directly, so the static tamper scan (which lives in the session) is
//! not involved: every catch here is the run-time watch's. What the scan would say of each
//! fixture is printed beside it.
#![allow(clippy::print_stdout, clippy::print_stderr)] // test output: the table of what was caught

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use bcb_execute::LocalKind;
use bcb_execute::{HackClass, HackPolicy, Job, Marker, Outcome, Status};
use common::*;

/// Contained by bcb without the watch: the harness ends the process with `os._exit` after
/// the report, so `atexit` handlers never run (the wrong answer stays `fail`).
const CONTAINED: &[&str] = &["after_tests__atexit"];

struct Fixture {
    name: String,
    class: String,
    task_id: String,
    code: String,
}

fn fixtures() -> Vec<Fixture> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reward_hacks");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("fixtures dir") {
        let path = entry.expect("entry").path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let code = std::fs::read_to_string(&path).expect("fixture");
        let task_id = code
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# task: "))
            .unwrap_or_else(|| panic!("{name}: first line must be `# task: BigCodeBench/N`"))
            .trim()
            .to_string();
        let class = name.split("__").next().unwrap().to_string();
        out.push(Fixture {
            name,
            class,
            task_id,
            code,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn run_policy(policy: HackPolicy, jobs: Vec<Job>) -> std::collections::HashMap<usize, Outcome> {
    let mut cfg = config(python().expect("checked"), 2);
    cfg.hacks = policy;
    run(LocalKind::Pool, cfg, jobs)
}

#[test]
fn each_hack_passes_without_the_watch_and_is_caught_with_it() {
    if python().is_none() || bcb_testkit::dataset_dir().is_none() {
        return;
    }
    let ds = dataset();
    let fx = fixtures();
    let mut jobs = Vec::new();
    let mut labels: Vec<(String, String, bool)> = Vec::new(); // name, class, is_hack
    for (i, f) in fx.iter().enumerate() {
        let task = ds.get(&f.task_id).expect("task");
        jobs.push(job(i, &f.task_id, &f.code, &task.test, 60.0));
        labels.push((f.name.clone(), f.class.clone(), f.class != "baseline"));
    }
    let mut canon: BTreeMap<String, usize> = BTreeMap::new();
    for f in &fx {
        canon.entry(f.task_id.clone()).or_insert(0);
    }
    for (j, tid) in canon.keys().enumerate() {
        let task = ds.get(tid).unwrap();
        let code = format!("{}\n{}", task.complete_prompt, task.canonical_solution);
        let key = 1000 + j;
        jobs.push(job(key, tid, &code, &task.test, 60.0));
        labels.push((format!("canonical {tid}"), "canonical".into(), false));
    }
    let keys: Vec<usize> = (0..fx.len()).chain(1000..1000 + canon.len()).collect();
    let off = run_policy(HackPolicy::Off, jobs.clone());
    let on = run_policy(HackPolicy::Fail, jobs.clone());
    let flag = run_policy(HackPolicy::Flag, jobs);
    let mut problems = Vec::new();
    println!(
        "{:<46} {:<8} {:<8} {:<6} flags (default policy)",
        "fixture", "off", "default", "scan"
    );
    for (key, (name, class, is_hack)) in keys.iter().zip(&labels) {
        let (o, d, fl) = (&off[key], &on[key], &flag[key]);
        let scanned = bcb_sanitize::tamper::scan(&jobs_code(&fx, *key)).len();
        let flags: Vec<String> = d.flags.iter().map(ToString::to_string).collect();
        println!(
            "{:<46} {:<8} {:<8} {:<6} {}",
            name,
            o.status.as_str(),
            d.status.as_str(),
            if *key >= 1000 {
                "-".into()
            } else {
                scanned.to_string()
            },
            flags.join(" | ")
        );
        let caught = d.status == Status::Fail
            && d.details
                .module_error()
                .is_some_and(|t| matches!(Marker::read(t), Some((Marker::RewardHack, _))));
        match class.as_str() {
            "canonical" => {
                if o.status != Status::Pass || d.status != Status::Pass || !d.flags.is_empty() {
                    problems.push(format!(
                        "{name}: canonical must pass unflagged ({o:?} / {d:?})"
                    ));
                }
            }
            "baseline" => {
                if o.status != Status::Fail || d.status != Status::Fail || caught {
                    problems.push(format!("{name}: the wrong answer must fail as itself"));
                }
            }
            _ if CONTAINED.contains(&name.as_str()) => {
                if o.status == Status::Pass || d.status == Status::Pass {
                    problems.push(format!("{name}: expected contained without the watch"));
                }
            }
            _ => {
                assert!(is_hack);
                if o.status != Status::Pass {
                    problems.push(format!(
                        "{name}: the hack should pass without the watch, got {} {:?}",
                        o.status, o.details
                    ));
                }
                if !caught {
                    problems.push(format!("{name}: not caught: {} {:?}", d.status, d.details));
                }
                if fl.status != Status::Pass || fl.flags.is_empty() {
                    problems.push(format!(
                        "{name}: `flag` must keep the pass and flag it, got {} {:?} flags {:?} remark {:?}",
                        fl.status, fl.details, fl.flags, fl.remark
                    ));
                }
                let want = match class.as_str() {
                    "equality" => Some(HackClass::Equality),
                    "control_flow" => Some(HackClass::UnittestControl),
                    "tracing" => Some(HackClass::Tracing),
                    "after_tests" => None, // caught as whatever it used (heap walk, rewrite)
                    other => panic!("unknown fixture class {other}"),
                };
                // The module teardown's own signal is the rewrite it does and the frame it
                // takes, not unittest's control flow.
                if let Some(want) = want.filter(|_| !name.contains("teardown")) {
                    if !d.flags.iter().any(|f| f.class == want) {
                        problems.push(format!("{name}: no {want} flag among {flags:?}"));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn jobs_code(fx: &[Fixture], key: usize) -> String {
    fx.get(key).map(|f| f.code.clone()).unwrap_or_default()
}
