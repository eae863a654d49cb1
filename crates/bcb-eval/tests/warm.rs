//! The warm session with the scripted executor (`FakeExecutor`): submitters share one
//! executor fairly, a dropped submission cancels its queued jobs, the ground truth runs once.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bcb_eval::WarmOptions;
use bcb_eval::{GtCache, SessionError, SubmitOptions, SubmitSample, WarmSession};
use bcb_execute::{Executor, Program};
use bcb_samples::SampleBody;
use bcb_testkit::{pass, FakeExecutor};

fn sample(task: usize, code: &str) -> SubmitSample {
    SubmitSample {
        task_id: format!("BigCodeBench/{task}"),
        body: SampleBody::Solution(format!("def task_func():\n    return {code}\n")),
    }
}

/// An executor that records which samples ran, in order, taking `each` per job.
fn recording(each: Duration) -> (Arc<FakeExecutor>, Arc<Mutex<Vec<String>>>) {
    let order = Arc::new(Mutex::new(Vec::new()));
    let seen = order.clone();
    let exec = FakeExecutor::new(move |job, _| {
        if job.id.program != Program::GroundTruth {
            std::thread::sleep(each);
            seen.lock().unwrap().push(job.task_id().to_string());
        }
        Ok(pass())
    });
    (Arc::new(exec), order)
}

fn start(exec: &Arc<FakeExecutor>, dir: &std::path::Path) -> WarmSession {
    let ds = Arc::new(common::dataset(dir));
    let settings = common::settings();
    let cache = GtCache::new(dir, &ds, &settings);
    let executor: Arc<dyn Executor> = exec.clone();
    WarmSession::start(
        ds,
        executor,
        settings,
        &cache,
        Vec::new(),
        WarmOptions::default(),
    )
    .unwrap()
}

#[test]
fn a_later_submission_of_one_job_is_not_starved_by_an_earlier_one_of_many_scripted() {
    let dir = tempfile::tempdir().unwrap();
    let (exec, order) = recording(Duration::from_millis(10));
    let session = start(&exec, dir.path());
    let big: Vec<SubmitSample> = (0..40).map(|i| sample(0, &i.to_string())).collect();
    let big = session.submit(big, SubmitOptions::default()).unwrap();
    let small = session
        .submit(vec![sample(2, "0")], SubmitOptions::default())
        .unwrap();
    let got: Vec<_> = small.collect();
    assert_eq!(got.len(), 1);
    assert!(got[0].1.as_ref().unwrap().outcome.status.is_pass());
    let at = order
        .lock()
        .unwrap()
        .iter()
        .position(|t| t == "BigCodeBench/2")
        .unwrap();
    assert!(
        at <= 2,
        "the single job ran {at}th, after the big submission's"
    );
    assert_eq!(big.count(), 40);
    assert_eq!(
        exec.total_runs(),
        3 + 41,
        "ground truth once, every sample once"
    );
}

#[test]
fn two_submitters_interleave_round_robin_scripted() {
    let dir = tempfile::tempdir().unwrap();
    let (exec, order) = recording(Duration::from_millis(5));
    let session = start(&exec, dir.path());
    let a = session
        .submit(
            (0..10).map(|i| sample(0, &format!("a{i}"))).collect(),
            SubmitOptions::default(),
        )
        .unwrap();
    let b = session
        .submit(
            (0..10).map(|i| sample(1, &format!("b{i}"))).collect(),
            SubmitOptions::default(),
        )
        .unwrap();
    let (ta, tb) = (std::thread::spawn(move || a.count()), b.count());
    assert_eq!((ta.join().unwrap(), tb), (10, 10));
    let order = order.lock().unwrap();
    // Once both are queued they alternate: no run of 3 of the same submission in the middle.
    let middle = &order[2..order.len() - 2];
    assert!(
        middle.windows(3).all(|w| !(w[0] == w[1] && w[1] == w[2])),
        "{order:?}"
    );
}

#[test]
fn dropping_a_submission_cancels_its_queued_jobs_and_the_session_goes_on_scripted() {
    let dir = tempfile::tempdir().unwrap();
    let (exec, _) = recording(Duration::from_millis(10));
    let session = start(&exec, dir.path());
    let mut big = session
        .submit(
            (0..50).map(|i| sample(0, &i.to_string())).collect(),
            SubmitOptions::default(),
        )
        .unwrap();
    assert!(big.next().is_some());
    drop(big);
    std::thread::sleep(Duration::from_millis(100));
    let ran = exec.total_runs() - 3;
    assert!(ran < 10, "{ran} of 50 ran after the cancel");
    let after = session
        .submit(vec![sample(1, "1")], SubmitOptions::default())
        .unwrap();
    assert_eq!(after.count(), 1);
    assert_eq!(session.stats().queued, 0);
    session.close();
}

#[test]
fn unknown_task_ids_are_refused_before_anything_runs_and_duplicates_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let (exec, _) = recording(Duration::ZERO);
    let session = start(&exec, dir.path());
    let err = session
        .submit(
            vec![sample(0, "1"), sample(7, "1")],
            SubmitOptions::default(),
        )
        .err()
        .unwrap();
    assert!(matches!(&err, SessionError::UnknownTasks(ids) if ids == &["BigCodeBench/7"]));
    assert!(err.to_string().contains("hint:"));
    let twice = session
        .submit(
            vec![sample(0, "1"), sample(0, "1")],
            SubmitOptions::default(),
        )
        .unwrap();
    let mut got: Vec<usize> = twice.map(|(i, r)| r.map(|_| i).unwrap()).collect();
    got.sort();
    assert_eq!(got, [0, 1]);
    let stats = session.stats();
    assert_eq!((stats.executed, stats.deduplicated), (1, 1));
    assert_eq!(exec.total_runs(), 3 + 1);
}
