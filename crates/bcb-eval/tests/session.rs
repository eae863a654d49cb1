//! The session and its sinks without Python: a scripted executor (`bcb_testkit::FakeExecutor`)
//! and three synthetic tasks. Resume, retries, stops, journal keys, `.bak` files, pass@k files,
//! ground-truth cache keys and ground-truth shards. The real local backend is tested end to end
//! in bcb-cli.

mod common;

use common::dataset;
use std::path::{Path, PathBuf};

use bcb_dataset::Dataset;
use bcb_eval::journal::{read_journal, samples_journal_path};
use bcb_eval::samples_journal_key;
use bcb_eval::{GtCache, SampleRun, Samples, Session, SessionError, Settings};
use bcb_execute::{ExecError, Program, Status};
use bcb_sinks::{ProgressMode, StandardSinks};
use bcb_testkit::{fail, pass, FakeExecutor};

fn settings(base_timeout: f64) -> Settings {
    Settings {
        base_timeout,
        ..common::settings()
    }
}

/// Two samples per task; sample 1 of task 2 is wrong.
fn samples_file(dir: &Path) -> PathBuf {
    common::samples_file(dir, "m", 2, |i, k| match (i, k) {
        (2, 1) => common::returning("return -1"),
        _ => common::returning("return 1"),
    })
}

/// Fails the wrong sample, passes everything else.
fn script(job: &bcb_execute::Job, _attempt: usize) -> Result<bcb_execute::Outcome, ExecError> {
    if job.code.contains("return -1") {
        Ok(fail("test_it", "AssertionError: -1 != 2"))
    } else {
        Ok(pass())
    }
}

struct Run<'a> {
    ds: &'a Dataset,
    settings: Settings,
    cache: &'a Path,
    save_pass_rate: bool,
    force: bool,
}

impl<'a> Run<'a> {
    /// The default run: 240 s base timeout, the pass@k file written, no `--force`.
    fn new(ds: &'a Dataset, cache: &'a Path) -> Run<'a> {
        Run {
            ds,
            settings: settings(240.0),
            cache,
            save_pass_rate: true,
            force: false,
        }
    }

    fn evaluate(
        &self,
        exec: &FakeExecutor,
        samples: &Path,
    ) -> Result<bcb_eval::RunReport, SessionError> {
        let samples = Samples::read(self.ds, samples, self.settings.calibrated).unwrap();
        let gt_cache = GtCache::new(self.cache, self.ds, &self.settings);
        let sinks = bcb_sinks::standard(StandardSinks {
            gt_cache: Some(&gt_cache),
            samples: vec![(
                samples.path.as_path(),
                samples_journal_key(&samples, &self.settings),
            )],
            progress: ProgressMode::Off,
            save_pass_rate: self.save_pass_rate,
            force: self.force,
            console: None,
            shard: None,
        });
        let session =
            Session::new(self.ds, exec, &self.settings, sinks).with_retry(common::retry(2, 10, 20));
        let gt = session.ground_truth(&gt_cache, false)?;
        session.evaluate(
            &samples,
            &gt,
            &SampleRun {
                pass_k: vec![1, 2],
                no_gt: false,
                force: self.force,
            },
        )
    }
}

/// The sinks of a ground-truth-only run: the cache journal (or the shard's), nothing else.
fn gt_sinks<'a>(
    cache: &'a GtCache,
    shard: Option<&'a bcb_eval::ShardPlan>,
) -> Vec<Box<dyn bcb_eval::Sink>> {
    bcb_sinks::standard(StandardSinks {
        gt_cache: Some(cache),
        samples: Vec::new(),
        progress: ProgressMode::Off,
        save_pass_rate: true,
        force: false,
        console: None,
        shard,
    })
}

use common::read_json as read;

#[test]
fn a_clean_run_writes_upstream_files() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let run = Run::new(&ds, dir.path());
    let exec = FakeExecutor::new(script);
    let report = run.evaluate(&exec, &samples_file(dir.path())).unwrap();
    // 3 ground-truth jobs + 6 samples, each once.
    assert_eq!(exec.total_runs(), 9);
    let pk = read(&report.pass_at_k_path);
    assert_eq!(pk["pass@1"], 5.0 / 6.0);
    assert_eq!(pk["gt_pass_rate"], 1.0);
    let res = read(&report.results_path);
    assert_eq!(res["eval"]["BigCodeBench/2"][1]["status"], "fail");
    assert_eq!(
        res["eval"]["BigCodeBench/2"][1]["details"]["test_it"],
        "AssertionError: -1 != 2"
    );
    assert!(
        !samples_journal_path(&report.results_path).exists(),
        "journal dropped at the end"
    );
}

#[test]
fn a_transient_error_is_retried_and_the_files_equal_a_clean_run() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let clean_dir = dir.path().join("clean");
    std::fs::create_dir(&clean_dir).unwrap();
    let run = Run::new(&ds, dir.path());
    let clean = run
        .evaluate(&FakeExecutor::new(script), &samples_file(&clean_dir))
        .unwrap();
    // Every sample's first attempt dies (a harness crash), the second works.
    let flaky = FakeExecutor::new(|job, attempt| {
        if attempt == 1 && matches!(job.id.program, Program::Sample(_)) {
            Err(ExecError::transient(
                "sandbox supervisor died during the sample",
            ))
        } else {
            script(job, attempt)
        }
    });
    let report = run.evaluate(&flaky, &samples_file(dir.path())).unwrap();
    let mut a = read(&report.results_path);
    let mut b = read(&clean.results_path);
    a["date"] = serde_json::Value::Null;
    b["date"] = serde_json::Value::Null;
    assert_eq!(a, b);
    assert_eq!(
        read(&report.pass_at_k_path)["pass@1"],
        read(&clean.pass_at_k_path)["pass@1"]
    );
    assert!(flaky.attempts().values().all(|&n| n <= 2));
}

#[test]
fn a_persistent_error_stops_the_run_and_journals_only_real_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let run = Run::new(&ds, dir.path());
    let samples = samples_file(dir.path());
    // Task 1's samples never get a verdict; the others do.
    let broken = FakeExecutor::new(|job, attempt| {
        if job.id.task_id == "BigCodeBench/1" && matches!(job.id.program, Program::Sample(_)) {
            Err(ExecError::transient(
                "execution harness did not start: boom",
            ))
        } else {
            script(job, attempt)
        }
    });
    let err = run.evaluate(&broken, &samples).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("2 job(s) got no verdict after 3 attempt(s)"),
        "{text}"
    );
    assert!(
        text.contains("execution harness did not start: boom"),
        "{text}"
    );
    assert!(text.contains("hint:"), "{text}");
    let results = bcb_samples::eval_results_path(&samples);
    assert!(!results.exists(), "no results file from an incomplete run");
    let parsed = Samples::read(&ds, &samples, true).unwrap();
    let journaled = read_journal(
        &samples_journal_path(&results),
        &samples_journal_key(&parsed, &run.settings),
    );
    assert_eq!(journaled.len(), 4, "the four real verdicts");
    assert!(journaled.iter().all(|r| r.id.task_id != "BigCodeBench/1"));
    // After the fix, a re-run runs only the two missing samples.
    let fixed = FakeExecutor::new(script);
    run.evaluate(&fixed, &samples).unwrap();
    assert_eq!(fixed.total_runs(), 2);
    assert_eq!(
        read(&results)["eval"]["BigCodeBench/1"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn a_fatal_error_stops_at_once_with_its_hint() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let run = Run::new(&ds, dir.path());
    let exec = FakeExecutor::new(|_, _| {
        Err(ExecError::fatal(
            "cannot set up a local worker: disk full",
            "free some space",
        ))
    });
    let err = run
        .evaluate(&exec, &samples_file(dir.path()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("after 1 attempt(s)") && err.contains("hint: free some space"),
        "{err}"
    );
    assert_eq!(exec.total_runs(), 1, "stopped at the first fatal error");
}

#[test]
fn ground_truth_cache_depends_on_the_time_settings() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let quick = GtCache::new(dir.path(), &ds, &settings(5.0));
    let default = GtCache::new(dir.path(), &ds, &settings(240.0));
    assert_ne!(quick.path, default.path);
    let mut other_limits = settings(240.0);
    other_limits.limits.memory_mb = 1024;
    assert_ne!(
        GtCache::new(dir.path(), &ds, &other_limits).path,
        default.path
    );
    // A quick run's timeouts are not seen by a default run.
    let timeouts = FakeExecutor::new(|_, _| {
        Ok(bcb_execute::Outcome::new(
            Status::Timeout,
            bcb_execute::Details::new(),
        ))
    });
    let s5 = settings(5.0);
    let session = Session::new(&ds, &timeouts, &s5, gt_sinks(&quick, None));
    assert_eq!(
        session
            .ground_truth(&quick, false)
            .unwrap()
            .pass_rate(["BigCodeBench/0"]),
        0.0
    );
    assert_eq!(quick.load().len(), 3);
    assert!(default.load().is_empty());
}

#[test]
fn recheck_of_some_ids_keeps_the_other_cache_entries() {
    let dir = tempfile::tempdir().unwrap();
    let mut ds = dataset(dir.path());
    let s = settings(240.0);
    let cache = GtCache::new(dir.path(), &ds, &s);
    let exec = FakeExecutor::passing();
    Session::new(&ds, &exec, &s, gt_sinks(&cache, None))
        .ground_truth(&cache, false)
        .unwrap();
    assert_eq!(exec.total_runs(), 3);
    ds.retain_ids(&["BigCodeBench/1".to_string()]).unwrap();
    let cache1 = GtCache::new(dir.path(), &ds, &s);
    assert_eq!(
        cache1.path, cache.path,
        "the key is the dataset content, not the selection"
    );
    let again = FakeExecutor::passing();
    Session::new(&ds, &again, &s, gt_sinks(&cache1, None))
        .ground_truth(&cache1, true)
        .unwrap();
    assert_eq!(again.total_runs(), 1, "only the selected task ran again");
    assert_eq!(cache.load().len(), 3, "the other entries are still cached");
}

#[test]
fn without_the_pass_rate_sink_an_existing_pass_at_k_file_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let samples = samples_file(dir.path());
    let pass_at_k = bcb_samples::pass_at_k_path(&bcb_samples::eval_results_path(&samples));
    std::fs::write(&pass_at_k, "{\"mine\": true}").unwrap();
    let run = Run {
        save_pass_rate: false,
        ..Run::new(&ds, dir.path())
    };
    run.evaluate(&FakeExecutor::new(script), &samples).unwrap();
    assert_eq!(
        std::fs::read_to_string(&pass_at_k).unwrap(),
        "{\"mine\": true}"
    );
}

#[test]
fn existing_results_are_loaded_and_force_keeps_a_bak() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let samples = samples_file(dir.path());
    let run = Run::new(&ds, dir.path());
    let first = run.evaluate(&FakeExecutor::new(script), &samples).unwrap();
    let again = FakeExecutor::new(script);
    let second = run.evaluate(&again, &samples).unwrap();
    assert!(second.loaded_existing);
    assert_eq!(again.total_runs(), 0, "ground truth cached, results loaded");
    let forced = Run { force: true, ..run };
    let exec = FakeExecutor::new(script);
    forced.evaluate(&exec, &samples).unwrap();
    assert_eq!(exec.total_runs(), 6);
    let mut bak = first.results_path.as_os_str().to_owned();
    bak.push(".bak");
    assert!(Path::new(&bak).exists());
}

#[test]
fn a_changed_setting_starts_the_journal_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let samples = samples_file(dir.path());
    let parsed = Samples::read(&ds, &samples, true).unwrap();
    let a = samples_journal_key(&parsed, &settings(240.0));
    let b = samples_journal_key(&parsed, &settings(60.0));
    assert_ne!(a, b);
    let uncalibrated = Samples::read(&ds, &samples, false).unwrap();
    let mut s = settings(240.0);
    s.calibrated = false;
    assert_ne!(samples_journal_key(&uncalibrated, &s), a);
}

#[test]
fn a_sample_the_tamper_scan_flags_is_refused_without_running() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let path = common::tamper_samples(dir.path());
    let run = Run::new(&ds, dir.path());
    let exec = FakeExecutor::passing();
    let report = run.evaluate(&exec, &path).unwrap();
    let r = &report.results.eval["BigCodeBench/1"][0];
    assert_eq!(r.status, Status::Fail);
    let why = r.details.module_error().unwrap();
    assert!(
        why.starts_with("bcb: refused by the tamper scan: "),
        "{why}"
    );
    assert!(exec
        .attempts()
        .keys()
        .all(|id| id.task_id != "BigCodeBench/1" || id.program == Program::GroundTruth));
}

/// A ground-truth-only shard (`--check-gt-only --shard I/N`) through the standard sinks.
fn gt_shard(
    ds: &Dataset,
    s: &Settings,
    cache: &GtCache,
    exec: &FakeExecutor,
    shard: bcb_eval::Shard,
) -> Result<(), SessionError> {
    let plan = bcb_eval::ShardPlan::ground_truth(ds, s, shard, cache);
    let sinks = gt_sinks(cache, Some(&plan));
    let request = bcb_eval::Request {
        gt: bcb_eval::GtMode::Recheck,
        samples: Vec::new(),
        run: SampleRun {
            pass_k: vec![1],
            no_gt: false,
            force: false,
        },
        parallel: 1,
        shard: Some(plan.clone()),
    };
    Session::new(ds, exec, s, sinks)
        .with_retry(common::retry(0, 1, 1))
        .run(cache, &request)
        .map(|_| ())
}

#[test]
fn ground_truth_shards_resume_and_merge_into_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dataset(dir.path());
    let s = settings(240.0);
    let cache = GtCache::new(&dir.path().join("sharded"), &ds, &s);
    let shards: Vec<bcb_eval::Shard> = (0..2)
        .map(|index| bcb_eval::Shard { index, count: 2 })
        .collect();
    let failing = |job: &bcb_execute::Job, _: usize| match job.id.task_id.as_str() {
        "BigCodeBench/2" => Ok(fail("test_it", "AssertionError")),
        _ => Ok(pass()),
    };
    // The shard with two tasks is cut short (its executor breaks after one verdict): a killed
    // pod or array task.
    let (cut, other) = match bcb_eval::shard::shard_tasks(&ds, None, shards[0]).len() {
        1 => (shards[1], shards[0]),
        _ => (shards[0], shards[1]),
    };
    let first = bcb_eval::shard::shard_tasks(&ds, None, cut);
    assert_eq!(first.len(), 2, "{first:?}");
    let seen = std::sync::atomic::AtomicUsize::new(0);
    let breaks = FakeExecutor::new(move |job, attempt| {
        match seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => failing(job, attempt),
            _ => Err(ExecError::fatal("node lost", "run the shard again")),
        }
    });
    assert!(gt_shard(&ds, &s, &cache, &breaks, cut).is_err());
    // Merging now names what is missing: the other shard, then the unfinished one.
    let journals = |n: usize| -> Vec<PathBuf> {
        (1..=n)
            .map(|i| {
                bcb_eval::journal::shard_journal_path(
                    &cache.path,
                    bcb_eval::journal::ShardTag { index: i, count: 2 },
                )
            })
            .collect()
    };
    let cut_journal = &journals(2)[cut.index];
    let err =
        bcb_eval::shard::merge_ground_truth(&ds, std::slice::from_ref(cut_journal)).unwrap_err();
    let missing = format!(
        "shard(s) {}/2 of the ground truth are missing",
        other.index + 1
    );
    assert!(err.to_string().contains(&missing), "{err}");
    // The re-run resumes: only what the cut shard had not finished runs.
    let resumed = FakeExecutor::new(failing);
    gt_shard(&ds, &s, &cache, &resumed, cut).unwrap();
    assert_eq!(
        resumed.total_runs(),
        1,
        "the verdict of the cut run is kept"
    );
    let second = FakeExecutor::new(failing);
    gt_shard(&ds, &s, &cache, &second, other).unwrap();
    assert!(!cache.path.exists(), "shards write only their own journals");

    let merged = bcb_eval::shard::merge_ground_truth(&ds, &journals(2)).unwrap();
    cache.store(&merged.records).unwrap();
    // The same as one unsharded check.
    let whole = GtCache::new(&dir.path().join("whole"), &ds, &s);
    Session::new(&ds, &FakeExecutor::new(failing), &s, gt_sinks(&whole, None))
        .ground_truth(&whole, true)
        .unwrap();
    let verdicts = |c: &GtCache| {
        let mut v: Vec<(String, Status)> = read_journal(&c.path, &c.key)
            .into_iter()
            .map(|r| (r.id.task_id, r.outcome.status))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    assert_eq!(verdicts(&cache), verdicts(&whole));
    assert_eq!(
        cache
            .load()
            .failed(ds.tasks().iter().map(|t| t.task_id.as_str())),
        ["BigCodeBench/2"]
    );
}
