//! The warm session with the scripted executor (`FakeExecutor`): submitters share one
//! executor fairly, a dropped submission cancels its queued jobs, the ground truth runs once;
//! dedup reaches across submissions (in flight and finished, timeouts not reused, a
//! cancelled owner's run handed over) and verdicts reach the disk cache as they arrive.

mod common;

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use bcb_eval::{GtCache, SessionError, SubmitOptions, SubmitSample, WarmSession};
use bcb_eval::{Origin, Sink, Submission, VerdictCache, WarmOptions};
use bcb_execute::{Details, Executor, Outcome, Program, Status};
use bcb_samples::SampleBody;
use bcb_testkit::{pass, wait_until, FakeExecutor};

fn sample(task: usize, code: &str) -> SubmitSample {
    SubmitSample {
        task_id: format!("BigCodeBench/{task}"),
        body: SampleBody::Solution(format!("def task_func():\n    return {code}\n")),
    }
}

/// A submission of one sample (`sample(task, code)`) with default options.
fn one(session: &WarmSession, task: usize, code: &str) -> Submission {
    session
        .submit(vec![sample(task, code)], SubmitOptions::default())
        .unwrap()
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

/// A started session over `exec` (and its log of runs) in a fresh dir, kept alive with it.
fn started(
    (exec, ran): (Arc<FakeExecutor>, Arc<Mutex<Vec<String>>>),
) -> (
    tempfile::TempDir,
    Arc<FakeExecutor>,
    Arc<Mutex<Vec<String>>>,
    WarmSession,
) {
    let dir = tempfile::tempdir().unwrap();
    let session = start(&exec, dir.path());
    (dir, exec, ran, session)
}

fn start(exec: &Arc<FakeExecutor>, dir: &std::path::Path) -> WarmSession {
    start_with(exec, dir, Vec::new(), WarmOptions::default())
}

#[test]
fn a_later_submission_of_one_job_is_not_starved_by_an_earlier_one_of_many_scripted() {
    let (_dir, exec, order, session) = started(recording(Duration::from_millis(10)));
    let big: Vec<SubmitSample> = (0..40).map(|i| sample(0, &i.to_string())).collect();
    let big = session.submit(big, SubmitOptions::default()).unwrap();
    let small = one(&session, 2, "0");
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
fn many_one_sample_submissions_start_a_sleeper_then_the_least_expected_cpu_first_scripted() {
    // Ground truth: task 1 takes 50 s of which 1 s of CPU (it sleeps), task 2 5 s of CPU, task
    // 0 0.1 s. While the one worker is held by a first sample, five one-sample submissions
    // queue in the order 0, 2, 1, 0, 2; they then run the sleeper first (its wait overlaps
    // the rest), then least CPU first, not in arrival order.
    let dir = tempfile::tempdir().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let (seen, held) = (order.clone(), gate.clone());
    let exec = Arc::new(FakeExecutor::new(move |job, _| {
        let mut o = pass();
        if job.id.program == Program::GroundTruth {
            let (wall, cpu) = match job.task_id() {
                "BigCodeBench/1" => (50.0, 1.0),
                "BigCodeBench/2" => (5.0, 5.0),
                _ => (0.1, 0.1),
            };
            o.test_secs = Some(wall);
            o.cpu_secs = Some(cpu);
            return Ok(o);
        }
        let (open, cv) = &*held;
        drop(cv.wait_while(open.lock().unwrap(), |o| !*o).unwrap());
        seen.lock().unwrap().push(job.task_id().to_string());
        Ok(o)
    }));
    let session = start(&exec, dir.path());
    let wait_for = |what: &str, ok: &dyn Fn(bcb_eval::WarmStats) -> bool| {
        wait_until(Duration::from_secs(30), what, || ok(session.stats()))
    };
    let first = one(&session, 0, "-1");
    wait_for("in flight", &|s| s.in_flight == 1);
    let rest: Vec<_> = [0, 2, 1, 0, 2]
        .iter()
        .enumerate()
        .map(|(i, t)| {
            session
                .submit(vec![sample(*t, &i.to_string())], SubmitOptions::default())
                .unwrap()
        })
        .collect();
    wait_for("queued", &|s| s.queued == 5);
    {
        let (open, cv) = &*gate;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }
    assert_eq!(first.count(), 1);
    assert_eq!(rest.into_iter().map(|s| s.count()).sum::<usize>(), 5);
    let tasks: Vec<String> = order
        .lock()
        .unwrap()
        .iter()
        .map(|t| t[13..].to_string())
        .collect();
    assert_eq!(tasks, ["0", "1", "0", "0", "2", "2"]);
}

#[test]
fn two_submitters_interleave_round_robin_scripted() {
    let (_dir, _, order, session) = started(recording(Duration::from_millis(5)));
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
    let (_dir, exec, _, session) = started(recording(Duration::from_millis(10)));
    let mut big = session
        .submit(
            (0..50).map(|i| sample(0, &i.to_string())).collect(),
            SubmitOptions::default(),
        )
        .unwrap();
    assert!(big.next().is_some());
    drop(big);
    // The session settles: nothing queued, nothing running (uncancelled jobs would keep the
    // queue busy for up to 0.5 s and then count below).
    wait_until(
        Duration::from_secs(30),
        "the session to settle after the cancel",
        || {
            let s = session.stats();
            s.queued == 0 && s.in_flight == 0
        },
    );
    let ran = exec.total_runs() - 3;
    assert!(ran < 10, "{ran} of 50 ran after the cancel");
    let after = one(&session, 1, "1");
    assert_eq!(after.count(), 1);
    assert_eq!(session.stats().queued, 0);
    session.close();
}

#[test]
fn unknown_task_ids_are_refused_before_anything_runs_and_duplicates_run_once() {
    let (_dir, exec, _, session) = started(recording(Duration::ZERO));
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

/// An executor that counts the runs of each sample program (by its code) and times out the
/// ones whose code says `slow`, taking `each` per job.
fn counting(each: Duration) -> (Arc<FakeExecutor>, Arc<Mutex<Vec<String>>>) {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let seen = ran.clone();
    let exec = FakeExecutor::new(move |job, _| {
        if job.id.program == Program::GroundTruth {
            return Ok(pass());
        }
        std::thread::sleep(each);
        seen.lock().unwrap().push(job.code.to_string());
        if job.code.contains("slow") {
            return Ok(Outcome::new(Status::Timeout, Details::all("Timeout")));
        }
        Ok(pass())
    });
    (Arc::new(exec), ran)
}

fn runs_of(ran: &Mutex<Vec<String>>, code: &str) -> usize {
    ran.lock()
        .unwrap()
        .iter()
        .filter(|c| c.contains(&format!("return {code}\n")))
        .count()
}

fn start_with(
    exec: &Arc<FakeExecutor>,
    dir: &std::path::Path,
    sinks: Vec<Box<dyn Sink + Send>>,
    opts: WarmOptions,
) -> WarmSession {
    let ds = Arc::new(common::dataset(dir));
    let settings = common::settings();
    let cache = GtCache::new(dir, &ds, &settings);
    let executor: Arc<dyn Executor> = exec.clone();
    WarmSession::start(ds, executor, settings, &cache, sinks, opts).unwrap()
}

fn origins(sub: Submission) -> Vec<(Status, Origin)> {
    let mut got: Vec<(usize, Status, Origin)> = sub
        .map(|(i, r)| {
            let v = r.unwrap();
            (i, v.outcome.status, v.origin)
        })
        .collect();
    got.sort_by_key(|g| g.0);
    got.into_iter().map(|(_, s, o)| (s, o)).collect()
}

#[test]
fn two_submissions_of_the_same_program_at_once_run_it_once_and_both_get_its_verdict() {
    let (_dir, _, ran, session) = started(counting(Duration::from_millis(100)));
    let a = one(&session, 0, "same");
    let b = one(&session, 0, "same");
    let a = std::thread::spawn(move || origins(a));
    let (b, a) = (origins(b), a.join().unwrap());
    assert_eq!(
        runs_of(&ran, "same"),
        1,
        "one execution for both submissions"
    );
    // Each submission is triaged on its own thread: either may be the one that runs it.
    let mut both = [a[0], b[0]];
    both.sort_by_key(|(_, o)| *o != Origin::Executed);
    assert_eq!(
        both,
        [
            (Status::Pass, Origin::Executed),
            (Status::Pass, Origin::Duplicate)
        ]
    );
    let st = session.stats();
    assert_eq!((st.executed, st.deduplicated), (1, 1));
}

#[test]
fn a_repeat_after_the_first_finished_is_answered_without_running_and_flagged() {
    let (_dir, _, ran, session) = started(counting(Duration::ZERO));
    let first = one(&session, 1, "x");
    assert_eq!(origins(first), [(Status::Pass, Origin::Executed)]);
    let again = session
        .submit(
            vec![sample(1, "x"), sample(1, "x"), sample(2, "x")],
            SubmitOptions::default(),
        )
        .unwrap();
    assert_eq!(
        origins(again),
        [
            (Status::Pass, Origin::Duplicate),
            (Status::Pass, Origin::Duplicate),
            (Status::Pass, Origin::Executed),
        ],
        "the same program of another task is another job"
    );
    assert_eq!(runs_of(&ran, "x"), 2);
    assert_eq!(session.stats().remembered, 2);
}

#[test]
fn a_timeout_is_not_reused_by_a_later_submission() {
    let (_dir, _, ran, session) = started(counting(Duration::ZERO));
    for _ in 0..2 {
        let sub = one(&session, 0, "slow");
        assert_eq!(origins(sub), [(Status::Timeout, Origin::Executed)]);
    }
    assert_eq!(
        runs_of(&ran, "slow"),
        2,
        "a timeout is the machine's, not the program's"
    );
}

#[test]
fn the_owner_cancelled_while_another_waits_still_gives_the_waiter_its_verdict() {
    let (_dir, _, ran, session) = started(counting(Duration::from_millis(50)));
    // The shared program is the owner's last job (index order): still queued at the drop.
    let mut owner_samples: Vec<SubmitSample> =
        (0..6).map(|i| sample(0, &format!("own{i}"))).collect();
    owner_samples.push(sample(0, "shared"));
    let mut owner = session
        .submit(owner_samples, SubmitOptions::default())
        .unwrap();
    let waiter = one(&session, 0, "shared");
    assert!(owner.next().is_some());
    drop(owner);
    assert_eq!(
        origins(waiter),
        [(Status::Pass, Origin::Executed)],
        "the run was handed over to the waiter"
    );
    assert_eq!(runs_of(&ran, "shared"), 1);
    assert!(
        ran.lock().unwrap().len() < 7,
        "the owner's own jobs were cancelled"
    );
    // The session goes on, and remembers the handed-over verdict.
    let later = one(&session, 0, "shared");
    assert_eq!(origins(later), [(Status::Pass, Origin::Duplicate)]);
}

#[test]
fn without_dedup_every_submission_runs_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let (exec, ran) = counting(Duration::from_millis(20));
    let session = start_with(
        &exec,
        dir.path(),
        Vec::new(),
        WarmOptions {
            dedup: false,
            ..Default::default()
        },
    );
    let a = one(&session, 0, "same");
    let b = one(&session, 0, "same");
    assert_eq!(origins(a), [(Status::Pass, Origin::Executed)]);
    assert_eq!(origins(b), [(Status::Pass, Origin::Executed)]);
    assert_eq!(runs_of(&ran, "same"), 2);
    assert_eq!(session.stats().remembered, 0);
}

#[test]
fn verdicts_reach_the_disk_cache_as_they_arrive_and_a_new_session_reuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let (exec, ran) = counting(Duration::ZERO);
    let settings = common::settings();
    let open = || Arc::new(VerdictCache::open(dir.path(), &settings, "fake", 1 << 30));
    let cache = open();
    // The sink borrows the cache for the session's life, as `bcb serve` does.
    let leaked: &'static VerdictCache = Box::leak(Box::new(cache.clone()));
    let session = start_with(
        &exec,
        dir.path(),
        vec![Box::new(bcb_sinks::VerdictCacheSink::live(leaked))],
        WarmOptions {
            cache: Some(cache),
            ..Default::default()
        },
    );
    let sub = session
        .submit(
            vec![sample(0, "kept"), sample(0, "slow")],
            SubmitOptions::default(),
        )
        .unwrap();
    assert_eq!(sub.count(), 2);
    // Still open: what is on disk now is what a killed server would leave.
    assert_eq!(open().len(), 1, "the pass is on disk, the timeout is not");
    let second = start_with(
        &exec,
        dir.path(),
        Vec::new(),
        WarmOptions {
            cache: Some(open()),
            ..Default::default()
        },
    );
    let sub = second
        .submit(vec![sample(0, "kept")], SubmitOptions::default())
        .unwrap();
    assert_eq!(origins(sub), [(Status::Pass, Origin::Cached)]);
    assert_eq!(runs_of(&ran, "kept"), 1);
    drop(session);
}
