//! The warm session on the real pool executor and the real eval interpreter: two submitters
//! interleave on one worker, a dropped submission's queued jobs never run, and the pool's
//! warm interpreters are started once for the session, not per submission.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bcb_eval::{GtCache, Session, SubmitOptions, SubmitSample, WarmSession};
use bcb_eval::{GtMode, WarmOptions};
use bcb_execute::{ExecConfig, Executor, Limits, PoolExecutor};
use bcb_samples::SampleBody;

/// One worker (`--parallel 1`) and up to `max_in_flight` samples at once.
fn one_worker(python: std::path::PathBuf, max_in_flight: usize) -> ExecConfig {
    ExecConfig {
        python,
        parallel: 1,
        max_in_flight,
        limits: Limits {
            memory_mb: 1024,
            max_processes: 64,
            ..Limits::default()
        },
        hacks: Default::default(),
    }
}

/// The real eval interpreter, and the three tasks (`only` these, when given) with default
/// settings and their ground-truth cache in a fresh dir; `None` (test skipped) without Python.
struct Setup {
    python: std::path::PathBuf,
    _dir: tempfile::TempDir,
    ds: Arc<bcb_dataset::Dataset>,
    settings: bcb_eval::Settings,
    cache: GtCache,
}

fn setup(only: Option<&str>) -> Option<Setup> {
    let python = bcb_testkit::python()?;
    let dir = tempfile::tempdir().unwrap();
    let mut ds = common::dataset(dir.path());
    if let Some(id) = only {
        ds.retain_ids(&[id.to_string()]).unwrap();
    }
    let settings = common::settings();
    let cache = GtCache::new(dir.path(), &ds, &settings);
    Some(Setup {
        python,
        _dir: dir,
        ds: Arc::new(ds),
        settings,
        cache,
    })
}

/// A sample of `task` that sleeps `secs` at import, then passes.
fn sleeper(task: usize, tag: usize, secs: f64) -> SubmitSample {
    SubmitSample {
        task_id: format!("BigCodeBench/{task}"),
        body: SampleBody::Solution(format!(
            "import time\ntime.sleep({secs})\nTAG = {tag}\ndef task_func():\n    return 0\n"
        )),
    }
}

#[test]
fn submitters_share_one_warm_pool_fairly_and_a_dropped_one_is_cancelled() {
    let Some(s) = setup(None) else { return };
    // `s` keeps the dir alive to the end of the test.
    let (python, ds, settings, cache) = (s.python, s.ds, s.settings, s.cache);
    // One worker and nothing beside it, so the order of jobs is the order they were taken.
    let pool = Arc::new(PoolExecutor::new(one_worker(python, 1)).unwrap());
    let executor: Arc<dyn Executor> = pool.clone();
    let session = WarmSession::start(
        ds,
        executor,
        settings,
        &cache,
        Vec::new(),
        WarmOptions::default(),
    )
    .unwrap();
    assert_eq!(session.ground_truth().pass_rate(["BigCodeBench/0"]), 1.0);
    let warm_slots = pool.slots_started();
    assert!(warm_slots >= 1);

    // A submission of 6 slow samples, then one of a single sample: the single one is taken
    // on the worker's next turn, not after all six.
    let big = session
        .submit(
            (0..6).map(|i| sleeper(0, i, 0.3)).collect(),
            SubmitOptions::default(),
        )
        .unwrap();
    let small = session
        .submit(vec![sleeper(2, 0, 0.0)], SubmitOptions::default())
        .unwrap();
    let start = Instant::now();
    let big_done = std::thread::spawn(move || {
        big.map(|(i, r)| (i, r.unwrap().outcome.status, start.elapsed()))
            .collect::<Vec<_>>()
    });
    let small_done: Vec<_> = small.collect();
    let small_at = start.elapsed();
    let big_done = big_done.join().unwrap();
    assert_eq!(small_done.len(), 1);
    assert!(small_done[0].1.as_ref().unwrap().outcome.status.is_pass());
    assert_eq!(big_done.len(), 6);
    assert!(big_done.iter().all(|(_, s, _)| s.is_pass()), "{big_done:?}");
    let big_before = big_done.iter().filter(|(_, _, t)| *t < small_at).count();
    assert!(
        big_before <= 2,
        "{big_before} of the big submission's samples finished before the single one"
    );

    // Dropping a submission cancels what it has queued; the session goes on.
    let executed = session.stats().executed;
    let mut dropped = session
        .submit(
            (0..6).map(|i| sleeper(1, 100 + i, 0.3)).collect(),
            SubmitOptions::default(),
        )
        .unwrap();
    assert!(dropped.next().is_some());
    drop(dropped);
    let after = session
        .submit(vec![sleeper(2, 1, 0.0)], SubmitOptions::default())
        .unwrap();
    assert_eq!(after.count(), 1);
    // Settled: nothing queued, nothing running. Had the cancel not emptied the queue, its jobs
    // would run (0.3 s each) until it did, and count below.
    bcb_testkit::wait_until(Duration::from_secs(60), "the session to settle", || {
        let s = session.stats();
        s.queued == 0 && s.in_flight == 0
    });
    let ran = session.stats().executed - executed;
    assert!(
        ran <= 3,
        "{ran} jobs ran: the dropped submission's queue was not cancelled"
    );
    assert_eq!(session.stats().queued, 0);

    assert_eq!(
        pool.slots_started(),
        warm_slots,
        "the pool's interpreters were started again between submissions"
    );
    session.close();
}

/// A service is ready only once every slot is warm, the overlap ones beyond `parallel`
/// included: its first burst of requests pays no imports (a batch run warms those on first
/// use, as before). Before this, the session returned with 2 slots warm of 3 after running
/// a ground truth, and with none when there was no ground truth to run.
#[test]
fn a_warm_session_starts_with_every_slot_warm_the_overlap_ones_included() {
    let Some(s) = setup(None) else { return };
    // `s` keeps the dir alive to the end of the test.
    let (python, ds, settings, cache) = (s.python, s.ds, s.settings, s.cache);
    let pool = Arc::new(PoolExecutor::new(one_worker(python.clone(), 3)).unwrap());
    let start = |pool: &Arc<PoolExecutor>, gt: GtMode| {
        let executor: Arc<dyn Executor> = pool.clone();
        WarmSession::start(
            ds.clone(),
            executor,
            settings.clone(),
            &cache,
            Vec::new(),
            WarmOptions {
                gt,
                ..WarmOptions::default()
            },
        )
        .unwrap()
    };
    let session = start(&pool, GtMode::Use);
    assert_eq!(pool.slots_started(), 3, "the overlap slots were not warmed");
    assert_eq!(
        pool.light_slots_started(),
        3,
        "the light slots were not warmed"
    );
    assert!(pool.wait_warm(Duration::ZERO));
    let answers: Vec<_> = session
        .submit(
            (0..3).map(|i| sleeper(0, i, 0.2)).collect(),
            SubmitOptions::default(),
        )
        .unwrap()
        .collect();
    assert!(answers
        .iter()
        .all(|(_, r)| r.as_ref().unwrap().outcome.status.is_pass()));
    assert_eq!(
        pool.slots_started(),
        3,
        "a slot was started for the first burst"
    );
    assert_eq!(pool.light_slots_started(), 3);
    session.close();

    // A session whose ground truth needs no run (cached, as a replica's often is, or skipped
    // as here) has no job at start: its slots warm all the same.
    let pool = Arc::new(PoolExecutor::new(one_worker(python, 3)).unwrap());
    let session = start(&pool, GtMode::Skip);
    assert_eq!(
        pool.slots_started(),
        3,
        "with no ground truth to run, nothing warmed"
    );
    session.close();
}

/// A batch run goes through the same engine and executor loop as a service, but warms an
/// overlap slot only when a sample needs it: a one-task ground truth never starts all three.
/// (A first version warmed every slot for batches too: one `bcb evaluate` of one sample took
/// 7.5 s instead of 2.6 s.)
#[test]
fn a_batch_run_warms_no_overlap_slot_it_does_not_use() {
    let Some(s) = setup(Some("BigCodeBench/0")) else {
        return;
    };
    // `s` keeps the dir alive to the end of the test.
    let (python, ds, settings, cache) = (s.python, s.ds, s.settings, s.cache);
    let pool = PoolExecutor::new(one_worker(python, 3)).unwrap();
    let gt = Session::new(&ds, &pool, &settings, Vec::new())
        .ground_truth(&cache, false)
        .unwrap();
    assert_eq!(gt.pass_rate(["BigCodeBench/0"]), 1.0);
    // The primary warms as the run starts; the one job may be taken by an overlap worker
    // (a free primary role goes to whoever asks first), which warms then. The third never.
    let started = pool.slots_started();
    assert!(
        started <= 2,
        "a batch warmed slots it never used: {started} of 3"
    );
}
