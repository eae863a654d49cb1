//! Admission with the real eval env: samples that sleep past their limit overlap beyond
//! `parallel` instead of holding the workers one after another, and samples admitted beyond
//! `parallel` never take the cores of the others (the freezer governor).
//! Runs alone (`.config/nextest.toml`): it reads the machine's idle CPU.

#![allow(clippy::print_stderr)] // helpers report what each run saw

mod common;

use std::sync::Mutex;
use std::time::Instant;

use bcb_execute::LocalKind;
use bcb_execute::{executor_for, Job, Outcome, Program, Remark, Status};
use common::{config, job, on_both_executors, python, QuietCpu, ONE_TEST};

const SLEEPER: &str = "import time\ndef task_func():\n    time.sleep(120)\n    return 1\n";
const QUICK: &str = "def task_func():\n    return 1\n";

/// Largest number of `intervals` (start, end) that contain one common instant.
fn max_overlap(intervals: &[(f64, f64)]) -> usize {
    intervals
        .iter()
        .map(|&(_, end)| {
            intervals
                .iter()
                .filter(|&&(s, e)| s < end && end <= e)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn sleepers_of_a_task_overlap_past_the_workers_and_all_time_out() {
    let Some(py) = python() else { return };
    // One sleeper first, four quick samples, then seven more sleepers of the same task: with
    // 2 workers they would take four waves of the limit; overlapped, about one.
    let mut jobs: Vec<Job> = vec![job(0, "sleepy", SLEEPER, ONE_TEST, 6.0)];
    jobs.extend((10..14).map(|k| job(k, "quick", QUICK, ONE_TEST, 6.0)));
    jobs.extend((1..8).map(|k| job(k, "sleepy", SLEEPER, ONE_TEST, 6.0)));
    let exec = executor_for(LocalKind::Pool, config(py, 2)).expect("executor");
    let t0 = Instant::now();
    let seen: Mutex<Vec<(Job, Outcome, f64)>> = Mutex::new(Vec::new());
    exec.run(jobs, &|job, o| {
        let o = o.unwrap_or_else(|e| panic!("{}: no verdict: {e}", job.id));
        let end = t0.elapsed().as_secs_f64();
        seen.lock().unwrap().push((job, o, end));
        std::ops::ControlFlow::Continue(())
    })
    .expect("run");
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 12, "every job reported once");
    let mut sleepers = Vec::new();
    for (job, o, end) in &seen {
        let Program::Sample(k) = job.id.program else {
            unreachable!()
        };
        eprintln!(
            "{} sample {k}: {:?} wall {:.1}s ended at {end:.1}s",
            job.task_id(),
            o.status,
            o.wall_secs
        );
        if job.task_id() == "sleepy" {
            assert_eq!(o.status, Status::Timeout, "sleeper {k}: {:?}", o.details);
            sleepers.push((end - o.wall_secs, *end));
        } else {
            assert_eq!(o.status, Status::Pass, "quick {k}: {:?}", o.details);
        }
    }
    // Overlap beyond the old fixed bound (workers + as many extra = 4), whatever else runs
    // on the machine: what idle CPU does not admit, the first timeout does.
    let together = max_overlap(&sleepers);
    assert!(
        together >= 5,
        "at most {together} of 8 sleepers were in flight together (2 workers): {sleepers:?}"
    );
    // Learning: every sleeper still queued at the first sleeper's timeout started at once
    // after it, so those were all in flight together.
    let first_timeout = sleepers.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
    let late: Vec<(f64, f64)> = sleepers
        .iter()
        .copied()
        .filter(|s| s.0 >= first_timeout)
        .collect();
    assert_eq!(
        max_overlap(&late),
        late.len(),
        "sleepers queued behind the first timeout did not all overlap: {late:?}"
    );
}

/// Sleeps two seconds, then spins with eight processes until killed.
const WAKES_AND_SPINS: &str = "import os, time\ndef task_func():\n    time.sleep(2)\n    for _ in range(7):\n        if os.fork() == 0:\n            while True:\n                pass\n    while True:\n        pass\n";
/// Waits six seconds (I/O, say), then needs 1 s of CPU: within its 14-s limit on any
/// core it is given, even on a loaded machine.
const CPU_BOUND: &str = "import time\ndef task_func():\n    time.sleep(6)\n    t = time.process_time()\n    while time.process_time() - t < 1.0:\n        pass\n    return 1\n";

type Seen = Vec<(String, usize, Status, f64, f64)>;

fn verdicts(kind: LocalKind, py: std::path::PathBuf) -> Seen {
    // The two CPU-bound samples start first (the `--parallel` ones) and wait; meanwhile the
    // idle CPU admits the pure sleepers, then the samples that wake up spinning while the
    // first two compute. The pure sleepers go first: a spinning extra is held and, having
    // failed, runs again unheld, and its outcome then shows that second run alone, so only the
    // sleepers' spans show the overlap whatever else loads the machine.
    let mut jobs: Vec<Job> = (20..22)
        .map(|k| job(k, "cpu", CPU_BOUND, ONE_TEST, 14.0))
        .collect();
    jobs.extend((10..13).map(|k| job(k, "sleeps", SLEEPER, ONE_TEST, 6.0)));
    jobs.extend((0..4).map(|k| job(k, "spins", WAKES_AND_SPINS, ONE_TEST, 16.0)));
    let exec = executor_for(kind, config(py, 2)).expect("executor");
    let t0 = Instant::now();
    let seen = Mutex::new(Vec::new());
    exec.run(jobs, &|job, o| {
        let o = o.unwrap_or_else(|e| panic!("{}: no verdict: {e}", job.id));
        let end = t0.elapsed().as_secs_f64();
        let Program::Sample(k) = job.id.program else {
            unreachable!()
        };
        eprintln!(
            "{kind}: {} {k}: {:?} wall {:.1}s cpu {:?} ended at {end:.1}s",
            job.task_id(),
            o.status,
            o.wall_secs,
            o.cpu_secs,
        );
        seen.lock().unwrap().push((
            job.task_id().to_string(),
            k,
            o.status,
            end - o.wall_secs,
            end,
        ));
        std::ops::ControlFlow::Continue(())
    })
    .expect("run");
    let mut seen = seen.into_inner().unwrap();
    seen.sort_by_key(|s| s.1);
    seen
}

on_both_executors!(
    extra_samples_never_cost_a_cpu_bound_sample_its_verdict_process_executor,
    extra_samples_never_cost_a_cpu_bound_sample_its_verdict,
    same_verdicts_as_without_extras
);

/// The verdicts each sample gets without extras (`--max-in-flight` = the workers): the CPU-bound
/// samples pass, the others time out. A run with the default admission must give them too.
fn same_verdicts_as_without_extras(kind: LocalKind) {
    let Some(py) = python() else { return };
    let _quiet = QuietCpu::enter();
    let default = verdicts(kind, py);
    let expected = |task: &str| match task {
        "cpu" => Status::Pass,
        _ => Status::Timeout,
    };
    for (task, k, status, _, _) in &default {
        assert_eq!(*status, expected(task), "{task} {k}");
    }
    // Overlap stays: samples ran beyond the two workers (sleeping, or frozen while the
    // others computed), not one pair after another.
    let all: Vec<(f64, f64)> = default.iter().map(|s| (s.3, s.4)).collect();
    let together = max_overlap(&all);
    assert!(
        together >= 4,
        "at most {together} samples in flight together: {all:?}"
    );
}

/// Sleeps two seconds, then keeps a core busy for twelve (a primary that wakes up computing).
const WAKES_AND_COMPUTES: &str = "import time\ndef task_func():\n    time.sleep(2)\n    t = time.time()\n    while time.time() - t < 12:\n        pass\n    return 1\n";
/// The same after five seconds asleep: room for the extras' admission on a machine busy with
/// other tests (in a CI run the extras once started only after two seconds had passed, and
/// ran after the primaries instead of beside them).
const WAKES_LATER_AND_COMPUTES: &str = "import time\ndef task_func():\n    time.sleep(5)\n    t = time.time()\n    while time.time() - t < 12:\n        pass\n    return 1\n";
/// The same, pausing half a second every 2.5 s of its twelve (a frozen extra thaws then, as
/// it does between the short samples of a real run).
const WAKES_AND_COMPUTES_IN_STRETCHES: &str = "import time\ndef task_func():\n    time.sleep(2)\n    t = time.time()\n    while time.time() - t < 12:\n        s = time.time()\n        while time.time() - s < 2.5:\n            pass\n        time.sleep(0.5)\n    return 1\n";
/// BigCodeBench/1040's shape: a server thread that needs a moment of CPU before it listens
/// (60 ms here, imports or a config in real tasks), started by a test that sleeps a fixed
/// second and then connects.
const SERVER: &str = "import socket, time\ndef task_func(port):\n    t = time.thread_time()\n    while time.thread_time() - t < 0.06:\n        pass\n    srv = socket.socket()\n    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n    srv.bind(('127.0.0.1', port))\n    srv.listen(1)\n    c, _ = srv.accept()\n    c.sendall(c.recv(16))\n    c.close()\n    srv.close()\n";
const SERVER_TEST: &str = "import socket, threading, time, unittest\nclass TestCases(unittest.TestCase):\n    def test_rounds(self):\n        for i in range(6):\n            t = threading.Thread(target=task_func, args=(20000 + i,))\n            t.start()\n            time.sleep(1)\n            with socket.create_connection(('127.0.0.1', 20000 + i), timeout=10) as c:\n                c.sendall(b'hi')\n                self.assertEqual(c.recv(16), b'hi')\n            t.join()\n";

/// The same test, computing for half a second of CPU first (imports or setup in real tasks)
/// once the primaries compute, then quiet for a second before its rounds.
const COMPUTES_THEN_SERVER_TEST: &str = "import socket, threading, time, unittest\nclass TestCases(unittest.TestCase):\n    def test_rounds(self):\n        time.sleep(2.5)\n        t = time.thread_time()\n        while time.thread_time() - t < 0.5:\n            pass\n        time.sleep(1)\n        for i in range(6):\n            t = threading.Thread(target=task_func, args=(20000 + i,))\n            t.start()\n            time.sleep(1)\n            with socket.create_connection(('127.0.0.1', 20000 + i), timeout=10) as c:\n                c.sendall(b'hi')\n                self.assertEqual(c.recv(16), b'hi')\n            t.join()\n";

#[test]
fn an_extra_server_sample_keeps_its_fixed_sleep_beside_computing_primaries() {
    servers_beside_computing_primaries(WAKES_AND_COMPUTES, SERVER_TEST);
}

/// A sample that once computed (and so was frozen when starved) and then went quiet starts
/// over: BigCodeBench/1040's correct answer failed in `bcb serve` runs, frozen for 8 s beside
/// TensorFlow primaries after its start-up, while its server's ten-second window ran out.
#[test]
fn an_extra_that_computed_once_then_serves_keeps_its_fixed_sleep() {
    servers_beside_computing_primaries(WAKES_AND_COMPUTES_IN_STRETCHES, COMPUTES_THEN_SERVER_TEST);
}

fn servers_beside_computing_primaries(primary: &str, server_test: &str) {
    let Some(py) = python() else { return };
    let _quiet = QuietCpu::enter();
    // The two primaries sleep first, so the idle cores admit the server samples beside them;
    // then the primaries keep both cores busy while the servers' tests go round.
    let servers = (10..13).map(|k| job(k, "server", SERVER, server_test, 30.0));
    let seen: Vec<(String, Status, f64, f64)> = beside_two_primaries(py, primary, servers)
        .into_iter()
        .map(|(task, o, end)| (task, o.status, end - o.wall_secs, end))
        .collect();
    for (task, status, _, _) in &seen {
        assert_eq!(*status, Status::Pass, "{task}: {seen:?}");
    }
    // The servers really went round beside the computing primaries (their last 12 s), for
    // two rounds at least, not after them.
    let computing = seen
        .iter()
        .filter(|s| s.0 == "computes")
        .map(|s| (s.3 - 12.0, s.3))
        .fold((f64::INFINITY, 0.0_f64), |(a, b), (c, d)| {
            (a.min(c), b.max(d))
        });
    let beside = seen
        .iter()
        .filter(|s| s.0 == "server" && s.3.min(computing.1) - s.2.max(computing.0) >= 2.0)
        .count();
    assert!(
        beside >= 1,
        "no server sample ran beside the computing primaries: {seen:?}"
    );
}

/// Sleeps four seconds (the primaries compute by then), then times a second of its own CPU:
/// BigCodeBench/821's shape, a test that times its own work against a fixed tolerance.
const TIMES_ITS_WORK: &str = "import time\ndef task_func():\n    time.sleep(4)\n    t = time.time()\n    c = time.thread_time()\n    while time.thread_time() - c < 1.0:\n        pass\n    return time.time() - t\n";
const TIMES_ITS_WORK_TEST: &str = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_on_time(self):\n        self.assertLess(task_func(), 1.6)\n";

/// An extra sample is held (frozen, or credited at the lowest weight) while the primaries
/// compute; its deadlines move, but a clock the sample reads itself does not. BigCodeBench/821
/// failed so beside a CPU-bound load: a held sample's failure is not a verdict, it runs
/// again as a primary (never held) and that run's verdict counts.
#[test]
fn a_held_sample_that_fails_is_judged_again_unheld() {
    let Some(py) = python() else { return };
    let _quiet = QuietCpu::enter();
    let timers = (10..12).map(|k| job(k, "timer", TIMES_ITS_WORK, TIMES_ITS_WORK_TEST, 30.0));
    let seen = beside_two_primaries(py, WAKES_LATER_AND_COMPUTES, timers);
    assert_eq!(seen.len(), 4, "every job reported once");
    for (task, o, _) in &seen {
        assert_eq!(o.status, Status::Pass, "{task}: {seen:?}");
    }
    // The timers were held beside the primaries (the case this is about), not run after them.
    let held = seen
        .iter()
        .filter(|(_, o, _)| matches!(o.remark, Some(Remark::RerunUnheld { .. })))
        .count();
    assert!(held >= 1, "no timer was held and judged again: {seen:?}");
}

/// Runs two `primary` samples (task "computes") and then `others` on a pool of two workers;
/// returns each job's task, outcome and when it ended (seconds from the start).
fn beside_two_primaries(
    py: std::path::PathBuf,
    primary: &str,
    others: impl Iterator<Item = Job>,
) -> Vec<(String, Outcome, f64)> {
    let mut jobs: Vec<Job> = (0..2)
        .map(|k| job(k, "computes", primary, ONE_TEST, 30.0))
        .collect();
    jobs.extend(others);
    let exec = executor_for(LocalKind::Pool, config(py, 2)).expect("executor");
    let t0 = Instant::now();
    let seen = Mutex::new(Vec::new());
    exec.run(jobs, &|job, o| {
        let o = o.unwrap_or_else(|e| panic!("{}: no verdict: {e}", job.id));
        let end = t0.elapsed().as_secs_f64();
        eprintln!(
            "{}: {:?} wall {:.1}s ended at {end:.1}s {:?} {:?}",
            job.id, o.status, o.wall_secs, o.remark, o.details
        );
        seen.lock()
            .unwrap()
            .push((job.task_id().to_string(), o, end));
        std::ops::ControlFlow::Continue(())
    })
    .expect("run");
    seen.into_inner().unwrap()
}
