//! `--rerun-failures` without Python: a scripted executor (`bcb_testkit::FakeExecutor`) whose
//! outcome for one sample changes on its second attempt (flaky), one that fails every time
//! (not flaky), a canonical solution that fails once, and a run stopped during the reruns
//! that resumes without redoing them. The real eval env is tested in bcb-cli (`evaluate.rs`).

mod common;

use common::{dataset, settings};
use std::path::{Path, PathBuf};

use bcb_dataset::Dataset;
use bcb_eval::journal::rerun_journal_path;
use bcb_eval::samples_journal_key;
use bcb_eval::{GtCache, RunReport, SampleRun, Samples, Session, SessionError};
use bcb_execute::{ExecError, Job, Outcome, Program};
use bcb_sinks::{ProgressMode, StandardSinks};
use bcb_testkit::{fail, pass, FakeExecutor};

/// Two samples per task: sample 1 of task 0 is always wrong (`STABLE`), sample 1 of task 2
/// fails on its first attempt only (`FLAKY`).
const STABLE: &str = "return -1";
const FLAKY: &str = "return -2";

fn samples_file(dir: &Path) -> PathBuf {
    common::samples_file(dir, "m", 2, |i, k| {
        common::returning(match (i, k) {
            (0, 1) => STABLE,
            (2, 1) => FLAKY,
            _ => "return 1",
        })
    })
}

fn script(job: &Job, attempt: usize) -> Result<Outcome, ExecError> {
    if job.code.contains(STABLE) || (job.code.contains(FLAKY) && attempt == 1) {
        Ok(fail("test_it", "AssertionError"))
    } else {
        Ok(pass())
    }
}

fn evaluate(
    dir: &Path,
    ds: &Dataset,
    exec: &FakeExecutor,
    reruns: usize,
) -> Result<RunReport, SessionError> {
    let settings = settings();
    let samples = Samples::read(ds, &samples_file(dir), true).unwrap();
    let gt_cache = GtCache::new(dir, ds, &settings);
    let sinks = bcb_sinks::standard(StandardSinks {
        gt_cache: Some(&gt_cache),
        samples: vec![(
            samples.path.as_path(),
            samples_journal_key(&samples, &settings),
        )],
        progress: ProgressMode::Off,
        save_pass_rate: true,
        force: false,
        console: None,
        shard: None,
    });
    let session = Session::new(ds, exec, &settings, sinks)
        .with_retry(common::retry(1, 10, 10))
        .with_rerun_failures(reruns);
    let gt = session.ground_truth(&gt_cache, false)?;
    let opts = SampleRun {
        pass_k: vec![1],
        no_gt: false,
        force: false,
    };
    session.evaluate(&samples, &gt, &opts)
}

use common::read_json as read;

fn runs_of(exec: &FakeExecutor, body: &str, ds: &Dataset, dir: &Path) -> usize {
    let samples = Samples::read(ds, &samples_file(dir), true).unwrap();
    let id = &samples
        .programs
        .iter()
        .find(|p| p.solution.contains(body))
        .unwrap()
        .id;
    exec.attempts().get(id).copied().unwrap_or(0)
}

#[test]
fn a_verdict_that_changes_on_a_rerun_is_flaky_and_the_first_one_counts() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let exec = FakeExecutor::new(script);
    let report = evaluate(dir.path(), &ds, &exec, 3).unwrap();
    // The flaky sample stops after the rerun that changed it; the stable failure runs 1 + 3.
    assert_eq!(runs_of(&exec, FLAKY, &ds, dir.path()), 2);
    assert_eq!(runs_of(&exec, STABLE, &ds, dir.path()), 4);
    // 3 ground truths + 6 samples + 1 + 3 reruns.
    assert_eq!(exec.total_runs(), 13);
    let res = read(&report.results_path);
    let flaky = &res["eval"]["BigCodeBench/2"][1];
    assert_eq!(flaky["status"], "fail", "the first verdict is kept");
    assert_eq!(flaky["flaky"], true);
    let stable = &res["eval"]["BigCodeBench/0"][1];
    assert_eq!(stable["status"], "fail");
    assert!(
        stable.get("flaky").is_none(),
        "a stable failure is not flaky"
    );
    assert!(res["eval"]["BigCodeBench/0"][0].get("flaky").is_none());
    // pass@1 from the first verdicts: 4 of 6 pass.
    assert_eq!(read(&report.pass_at_k_path)["pass@1"], 4.0 / 6.0);
    assert!(report.flaky_ground_truth.is_empty());
    assert!(!rerun_journal_path(&report.results_path).exists());
}

#[test]
fn without_reruns_nothing_runs_twice_and_no_flaky_key_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let exec = FakeExecutor::new(script);
    let report = evaluate(dir.path(), &ds, &exec, 0).unwrap();
    assert_eq!(exec.total_runs(), 9);
    let text = std::fs::read_to_string(&report.results_path).unwrap();
    assert!(!text.contains("flaky"), "{text}");
}

#[test]
fn a_run_stopped_during_the_reruns_resumes_without_redoing_them() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    // The stable failure's second rerun (attempt 3) gets no verdict, fatally: the run stops.
    let broken = FakeExecutor::new(|job, attempt| {
        if job.code.contains(STABLE) && attempt == 3 {
            Err(ExecError::fatal("the executor broke", "run again"))
        } else {
            script(job, attempt)
        }
    });
    let err = evaluate(dir.path(), &ds, &broken, 3).unwrap_err();
    assert!(matches!(err, SessionError::NoVerdict { .. }), "{err}");
    // Both first reruns are journaled.
    let results = dir
        .path()
        .join("m--main--bigcodebench-complete--x-0-2-sanitized_calibrated_eval_results.json");
    let journal = std::fs::read_to_string(rerun_journal_path(&results)).unwrap();
    assert_eq!(journal.lines().count(), 1 + 2, "{journal}");
    // Resumed: no sample and no ground truth runs again, only the 2 missing reruns.
    let exec = FakeExecutor::new(|job, _| {
        if job.code.contains(STABLE) {
            Ok(fail("test_it", "AssertionError"))
        } else {
            Ok(pass())
        }
    });
    let report = evaluate(dir.path(), &ds, &exec, 3).unwrap();
    assert_eq!(exec.total_runs(), 2);
    assert_eq!(runs_of(&exec, STABLE, &ds, dir.path()), 2);
    let res = read(&report.results_path);
    assert_eq!(res["eval"]["BigCodeBench/2"][1]["flaky"], true);
    assert!(res["eval"]["BigCodeBench/0"][1].get("flaky").is_none());
}

#[test]
fn a_failing_ground_truth_that_passes_on_a_rerun_is_reported_flaky() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let exec = FakeExecutor::new(|job, attempt| {
        let gt1 = job.id.program == Program::GroundTruth && job.id.task_id == "BigCodeBench/1";
        if gt1 && attempt == 1 {
            Ok(fail("test_it", "ConnectionError"))
        } else {
            script(job, attempt)
        }
    });
    let report = evaluate(dir.path(), &ds, &exec, 2).unwrap();
    assert_eq!(report.flaky_ground_truth, ["BigCodeBench/1"]);
    // Recorded as it first was: the task is still listed as failing ground truth.
    assert_eq!(report.pass_at_k.failed_tasks, ["BigCodeBench/1"]);
}
