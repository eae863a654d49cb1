//! Do each program once, without Python (a scripted `FakeExecutor`, three synthetic tasks):
//! dedup within a run, the verdict cache across runs, several samples files in one run, and
//! resuming a killed run. The same session with the real eval env is tested in bcb-cli
//! (`tests/reuse.rs`).

mod common;

use common::settings;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bcb_dataset::Dataset;
use bcb_eval::samples_journal_key;
use bcb_eval::verdict_cache::{self, VerdictCache};
use bcb_eval::Reuse;
use bcb_eval::{
    Event, GtCache, GtMode, Origin, Phase, Request, RunReport, SampleRun, Samples, Session,
    SessionError, Settings, Sink,
};
use bcb_execute::{ExecError, Job, Outcome, Program, Status};
use bcb_sinks::{ProgressMode, StandardSinks, VerdictCacheSink};
use bcb_testkit::{fail, pass, FakeExecutor};

fn dataset(dir: &Path) -> Dataset {
    common::dataset_with_tests(dir, |i| {
        format!("import unittest\nclass TestCases(unittest.TestCase):\n    def test_it(self):\n        self.assertEqual(task_func(), {i})\n")
    })
}

/// `n` samples per task, each `return {answers[k % len]}`: a sweep with duplicates.
fn samples_file(dir: &Path, name: &str, n: usize, answers: &[i32]) -> PathBuf {
    common::samples_file(dir, name, n, |_, k| {
        common::returning(&format!("return {}", answers[k % answers.len()]))
    })
}

/// Right when the program returns the task's number (the canonical solution does).
fn script(job: &Job, _attempt: usize) -> Result<Outcome, ExecError> {
    let want = job.id.task_id.trim_start_matches("BigCodeBench/");
    if job.code.contains(&format!("return {want}\n")) {
        Ok(pass())
    } else {
        Ok(fail("test_it", "AssertionError"))
    }
}

/// [`script`]'s executor that dies for good after `n` executions (not counting the ground
/// truth's when `spare_gt`).
fn dying_after(n: usize, spare_gt: bool) -> FakeExecutor {
    let count = Mutex::new(0);
    FakeExecutor::new(move |job, attempt| {
        if spare_gt && job.id.program == Program::GroundTruth {
            return script(job, attempt);
        }
        let mut done = count.lock().unwrap();
        *done += 1;
        if *done > n {
            Err(ExecError::fatal("worker killed", "run again"))
        } else {
            script(job, attempt)
        }
    })
}

/// Records the order of events (phase starts and the origin of each verdict).
#[derive(Clone, Default)]
struct Trace(Arc<Mutex<Vec<String>>>);

impl Sink for Trace {
    fn handle(&mut self, event: &Event) -> anyhow::Result<()> {
        let line = match event {
            Event::PhaseStarted { phase, todo, done } => format!("start {phase:?} {todo} {done}"),
            Event::JobDone { phase, origin, .. } => format!("done {phase:?} {origin:?}"),
            _ => return Ok(()),
        };
        self.0.lock().unwrap().push(line);
        Ok(())
    }
}

struct Env {
    ds: Dataset,
    cache_dir: PathBuf,
    settings: Settings,
    dedup: bool,
    cache: bool,
    max_bytes: u64,
    sandbox: &'static str,
    trace: Trace,
}

impl Env {
    fn new(dir: &Path) -> Env {
        Env {
            ds: dataset(dir),
            cache_dir: dir.join("cache"),
            settings: settings(),
            dedup: true,
            cache: true,
            max_bytes: 64 << 20,
            sandbox: "full",
            trace: Trace::default(),
        }
    }

    /// One `bcb evaluate` over `files`: ground truth (cached), then every file.
    fn run(&self, exec: &FakeExecutor, files: &[&Path]) -> Result<Vec<RunReport>, SessionError> {
        let samples: Vec<Samples> = files
            .iter()
            .map(|f| Samples::read(&self.ds, f, true).unwrap())
            .collect();
        let gt_cache = GtCache::new(&self.cache_dir, &self.ds, &self.settings);
        let cache = self.cache.then(|| {
            VerdictCache::open(
                &self.cache_dir,
                &self.settings,
                self.sandbox,
                self.max_bytes,
            )
        });
        let mut sinks = bcb_sinks::standard(StandardSinks {
            gt_cache: Some(&gt_cache),
            samples: samples
                .iter()
                .map(|s| (s.path.as_path(), samples_journal_key(s, &self.settings)))
                .collect(),
            progress: ProgressMode::Off,
            save_pass_rate: true,
            force: true,
            console: None,
            shard: None,
        });
        sinks.push(Box::new(self.trace.clone()));
        let mut sinks: Vec<Box<dyn Sink + '_>> = sinks;
        if let Some(c) = &cache {
            sinks.push(Box::new(VerdictCacheSink::new(c)));
        }
        let request = Request {
            gt: GtMode::Use,
            samples,
            run: SampleRun {
                pass_k: vec![1, 2],
                no_gt: false,
                force: true,
            },
            parallel: 1,
            shard: None,
        };
        let session = Session::new(&self.ds, exec, &self.settings, sinks)
            .with_retry(common::retry(0, 1, 1))
            .with_reuse(Reuse {
                dedup: self.dedup,
                cache: cache.as_ref(),
            });
        let reports = session.run(&gt_cache, &request);
        drop(session);
        reports
    }

    fn samples_runs(exec: &FakeExecutor) -> usize {
        exec.attempts()
            .iter()
            .filter(|(id, _)| id.program != Program::GroundTruth)
            .map(|(_, n)| n)
            .sum()
    }
}

/// The result files of a report, `date` blanked.
fn files_of(report: &RunReport) -> (serde_json::Value, String) {
    let mut results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report.results_path).unwrap()).unwrap();
    results["date"] = serde_json::Value::Null;
    (
        results,
        std::fs::read_to_string(&report.pass_at_k_path).unwrap(),
    )
}

#[test]
fn dedup_writes_the_files_of_no_dedup_with_fewer_executions() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = Env::new(dir.path());
    env.cache = false;
    // 5 samples per task, 2 distinct programs each: 15 jobs, 6 executions.
    let a = samples_file(&dir.path().join("a"), "m", 5, &[0, 1]);
    let b = samples_file(&dir.path().join("b"), "m", 5, &[0, 1]);
    let exec = FakeExecutor::new(script);
    let deduped = env.run(&exec, &[&a]).unwrap().remove(0);
    assert_eq!(Env::samples_runs(&exec), 6);
    assert_eq!(
        (deduped.executed, deduped.deduplicated, deduped.cached),
        (6, 9, 0)
    );
    env.dedup = false;
    let exec = FakeExecutor::new(script);
    let plain = env.run(&exec, &[&b]).unwrap().remove(0);
    assert_eq!(Env::samples_runs(&exec), 15);
    assert_eq!((plain.executed, plain.deduplicated), (15, 0));
    assert_eq!(files_of(&deduped), files_of(&plain));
}

#[test]
fn a_warm_cache_executes_nothing_and_writes_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::new(dir.path());
    let a = samples_file(&dir.path().join("a"), "m", 3, &[0, 1, 2]);
    let b = samples_file(&dir.path().join("b"), "m", 3, &[0, 1, 2]);
    let cold = env
        .run(&FakeExecutor::new(script), &[&a])
        .unwrap()
        .remove(0);
    assert_eq!(cold.executed, 9);
    let exec = FakeExecutor::new(script);
    let warm = env.run(&exec, &[&b]).unwrap().remove(0);
    assert_eq!(exec.total_runs(), 0, "ground truth and every sample known");
    assert_eq!((warm.executed, warm.cached), (0, 9));
    assert_eq!(files_of(&cold), files_of(&warm));
    let stats = verdict_cache::stats(&VerdictCache::root(&env.cache_dir));
    assert_eq!(
        (stats.records, stats.segments),
        (9, 1),
        "a warm run adds nothing"
    );
}

#[test]
fn a_changed_limit_time_limit_or_environment_misses_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = Env::new(dir.path());
    let a = samples_file(&dir.path().join("a"), "m", 1, &[0]);
    env.run(&FakeExecutor::new(script), &[&a]).unwrap();
    let misses = |env: &Env| {
        let exec = FakeExecutor::new(script);
        env.run(&exec, &[&a]).unwrap();
        Env::samples_runs(&exec)
    };
    assert_eq!(misses(&env), 0, "same settings: a hit");
    env.settings.limits.memory_mb = 1024;
    assert_eq!(misses(&env), 3, "another memory limit");
    env.settings = settings();
    env.settings.runtime = "lock:other".into();
    assert_eq!(misses(&env), 3, "another env lock or harness");
    env.settings = settings();
    env.settings.base_timeout = 60.0;
    assert_eq!(misses(&env), 3, "another time limit");
    env.settings = settings();
    env.sandbox = "basic";
    assert_eq!(misses(&env), 3, "other sandbox protections");
    env.sandbox = "full";
    assert_eq!(misses(&env), 0, "the first settings still hit");
}

#[test]
fn timeouts_and_verdicts_that_change_within_the_run_are_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = Env::new(dir.path());
    env.dedup = false;
    // Task 0's program times out; task 1's identical samples disagree (a flaky program).
    let flips = Mutex::new(0);
    let exec = FakeExecutor::new(move |job, attempt| match job.id.task_id.as_str() {
        _ if job.id.program == Program::GroundTruth => script(job, attempt),
        "BigCodeBench/0" => Ok(Outcome::new(Status::Timeout, bcb_execute::Details::new())),
        "BigCodeBench/1" => {
            let mut n = flips.lock().unwrap();
            *n += 1;
            Ok(if *n % 2 == 0 {
                pass()
            } else {
                fail("test_it", "flaky")
            })
        }
        _ => script(job, attempt),
    });
    let a = samples_file(&dir.path().join("a"), "m", 2, &[7]);
    env.run(&exec, &[&a]).unwrap();
    let stats = verdict_cache::stats(&VerdictCache::root(&env.cache_dir));
    assert_eq!(stats.records, 1, "only task 2's stable failure");
}

/// Dates every segment of the verdict cache at `root` `by` earlier.
fn age_segments(root: &Path, by: Duration) {
    let then = std::time::SystemTime::now() - by;
    let mut aged = 0;
    for env in std::fs::read_dir(root).unwrap().flatten() {
        for seg in std::fs::read_dir(env.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if seg.path().extension().is_some_and(|x| x == "jsonl") {
                let file = std::fs::File::options()
                    .write(true)
                    .open(seg.path())
                    .unwrap();
                file.set_modified(then).unwrap();
                aged += 1;
            }
        }
    }
    assert!(aged > 0, "no segment under {}", root.display());
}

#[test]
fn cache_clean_empties_it_and_the_size_bound_evicts_the_oldest() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = Env::new(dir.path());
    let root = VerdictCache::root(&env.cache_dir);
    let first = samples_file(&dir.path().join("a"), "m", 1, &[5]);
    env.run(&FakeExecutor::new(script), &[&first]).unwrap();
    let one = verdict_cache::stats(&root);
    assert_eq!((one.records, one.segments), (3, 1));
    // A bound of one segment: the second run's segment pushes the first one out.
    env.max_bytes = one.bytes + one.bytes / 2;
    let second = samples_file(&dir.path().join("b"), "m", 1, &[6]);
    // The first run's segment is the older one: dated a minute back, not left to the clock
    // moving on before the second run writes its own.
    age_segments(&root, Duration::from_secs(60));
    env.run(&FakeExecutor::new(script), &[&second]).unwrap();
    let after = verdict_cache::stats(&root);
    assert_eq!((after.records, after.segments), (3, 1), "oldest evicted");
    let exec = FakeExecutor::new(script);
    env.run(&exec, &[&second]).unwrap();
    assert_eq!(Env::samples_runs(&exec), 0, "the newest is kept");
    let exec = FakeExecutor::new(script);
    env.run(&exec, &[&first]).unwrap();
    assert_eq!(Env::samples_runs(&exec), 3, "the evicted ones run again");
    let removed = verdict_cache::clean(&root).unwrap();
    assert!(removed.records > 0);
    assert_eq!(verdict_cache::stats(&root).records, 0);
    let exec = FakeExecutor::new(script);
    env.run(&exec, &[&second]).unwrap();
    assert_eq!(Env::samples_runs(&exec), 3, "nothing cached after clean");
}

#[test]
fn many_files_in_one_run_write_the_files_of_separate_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = Env::new(dir.path());
    env.cache = false;
    let answers: [&[i32]; 2] = [&[0, 1], &[1, 2, 0]];
    let together: Vec<PathBuf> = answers
        .iter()
        .enumerate()
        .map(|(i, a)| samples_file(&dir.path().join("one"), &format!("m{i}"), 4, a))
        .collect();
    let exec = FakeExecutor::new(script);
    let refs: Vec<&Path> = together.iter().map(PathBuf::as_path).collect();
    let reports = env.run(&exec, &refs).unwrap();
    // Per task: programs 0,1 in file 0 and 1,2,0 in file 1 are 3 distinct programs.
    assert_eq!(Env::samples_runs(&exec), 9, "dedup across the files");
    assert_eq!(
        reports
            .iter()
            .map(|r| r.executed + r.deduplicated)
            .sum::<usize>(),
        24
    );
    for (i, a) in answers.iter().enumerate() {
        let alone = samples_file(
            &dir.path().join(format!("alone{i}")),
            &format!("m{i}"),
            4,
            a,
        );
        let report = env
            .run(&FakeExecutor::new(script), &[&alone])
            .unwrap()
            .remove(0);
        assert_eq!(files_of(&reports[i]), files_of(&report), "file {i}");
        assert!(!bcb_eval::journal::samples_journal_path(&reports[i].results_path).exists());
    }
}

#[test]
fn a_killed_run_resumes_with_dedup_and_ends_with_the_clean_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = Env::new(dir.path());
    env.cache = false;
    let a = samples_file(&dir.path().join("a"), "m", 4, &[0, 1]);
    let b = samples_file(&dir.path().join("b"), "m", 4, &[0, 1]);
    let clean = env
        .run(&FakeExecutor::new(script), &[&b])
        .unwrap()
        .remove(0);
    // The executor dies for good after the ground truth and two sample executions.
    let dying = dying_after(2, true);
    assert!(env.run(&dying, &[&a]).is_err());
    let parsed = Samples::read(&env.ds, &a, true).unwrap();
    let results = bcb_samples::eval_results_path(&a);
    let journaled = bcb_eval::journal::read_journal(
        &bcb_eval::journal::samples_journal_path(&results),
        &samples_journal_key(&parsed, &env.settings),
    );
    assert_eq!(
        journaled.len(),
        4,
        "two executions, each with its duplicate"
    );
    let exec = FakeExecutor::new(script);
    let resumed = env.run(&exec, &[&a]).unwrap().remove(0);
    assert_eq!(resumed.resumed, 4);
    assert_eq!(
        Env::samples_runs(&exec),
        4,
        "the other 4 programs, once each"
    );
    assert_eq!(files_of(&resumed), files_of(&clean));
}

#[test]
fn refused_samples_are_announced_inside_their_phase() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::new(dir.path());
    let path = common::tamper_samples(dir.path());
    env.run(&FakeExecutor::new(script), &[&path]).unwrap();
    let trace = env.trace.0.lock().unwrap().clone();
    let start = trace
        .iter()
        .position(|l| l == "start Samples 3 0")
        .expect("samples phase");
    let refused = trace
        .iter()
        .position(|l| l == &format!("done {:?} {:?}", Phase::Samples, Origin::Refused))
        .expect("refused verdict");
    assert!(start < refused, "{trace:?}");
}

#[test]
fn a_run_stopped_by_an_error_still_caches_what_it_executed() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::new(dir.path());
    let a = samples_file(&dir.path().join("a"), "m", 2, &[0, 1]);
    env.run(
        &FakeExecutor::passing(),
        &[&samples_file(&dir.path().join("gt"), "m", 1, &[9])],
    )
    .unwrap();
    let dying = dying_after(2, false);
    assert!(env.run(&dying, &[&a]).is_err());
    let root = VerdictCache::root(&env.cache_dir);
    assert_eq!(
        verdict_cache::stats(&root).records,
        3 + 2,
        "the first run's and these two"
    );
}
