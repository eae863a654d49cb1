//! End-to-end tests of `bcb evaluate` on real tasks, in the real eval env.

mod evalkit;

use std::time::{Duration, Instant};

use evalkit::{number_after, read_json, stderr, write_jsonl};
use serde_json::{json, Value};

/// Fast tasks with light (1, 4) and heavy (9: pandas/seaborn) imports (not 0: its canonical
/// solution computes for 15 s).
const TASKS: [&str; 3] = ["BigCodeBench/1", "BigCodeBench/4", "BigCodeBench/9"];

const WRONG: &str = "def task_func(*args, **kwargs):\n    return None\n";

#[test]
fn canonical_samples_pass_and_files_match_upstream_schema() {
    let Some(env) = evalkit::env() else { return };
    let samples = env.path("m--main--bigcodebench-complete--openai-0-2-sanitized_calibrated.jsonl");
    let mut rows = Vec::new();
    for id in TASKS {
        let t = env.task(id);
        rows.push(json!({"task_id": id, "solution": env.canonical(id)}));
        // The completion form: the prompt is prepended.
        rows.push(json!({"task_id": id, "completion": t["canonical_solution"]}));
    }
    write_jsonl(&samples, &rows);
    let ids = "1,4,9";
    // No --subset: full is evaluate's default.
    env.run_ok(&[
        "evaluate",
        "--split",
        "complete",
        "--ids",
        ids,
        "--samples",
        samples.to_str().unwrap(),
    ]);

    let results_path = env
        .path("m--main--bigcodebench-complete--openai-0-2-sanitized_calibrated_eval_results.json");
    let pass_path =
        env.path("m--main--bigcodebench-complete--openai-0-2-sanitized_calibrated_pass_at_k.json");
    let results = read_json(&results_path);
    assert_eq!(
        results.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["date", "eval"]
    );
    assert_eq!(
        results["date"].as_str().unwrap().len(),
        "2026-11-30 10:00".len()
    );
    for id in TASKS {
        let list = results["eval"][id].as_array().unwrap();
        assert_eq!(list.len(), 2, "{id}");
        let code_prompt = env.task(id)["code_prompt"].as_str().unwrap().to_string();
        for r in list {
            assert_eq!(
                r.as_object().unwrap().keys().collect::<Vec<_>>(),
                ["task_id", "solution", "status", "details"]
            );
            assert_eq!(r["task_id"], id);
            assert_eq!(r["status"], "pass", "{id}: {}", r["details"]);
            assert_eq!(r["details"], json!({}));
            // Calibrated: the executed code starts with the code prompt and a stub body.
            let sol = r["solution"].as_str().unwrap();
            assert!(
                sol.starts_with(&format!("{code_prompt}\n    pass\n")),
                "{id}"
            );
        }
    }
    let pk = read_json(&pass_path);
    assert_eq!(
        pk.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "pass@1",
            "model",
            "split",
            "subset",
            "calibrated",
            "gt_pass_rate",
            "failed_tasks"
        ]
    );
    assert_eq!(pk["pass@1"], 1.0);
    assert_eq!(pk["model"], "m--main");
    assert_eq!(pk["split"], "complete");
    assert_eq!(pk["subset"], "full");
    assert_eq!(pk["calibrated"], true);
    assert_eq!(pk["gt_pass_rate"], 1.0);
    assert_eq!(pk["failed_tasks"], json!([]));

    // Python reads both files with json.load and sees upstream's types.
    let check = std::process::Command::new(&env.python)
        .arg("-c")
        .arg(
            r#"import json, sys
r = json.load(open(sys.argv[1])); p = json.load(open(sys.argv[2]))
assert isinstance(r['date'], str) and isinstance(r['eval'], dict)
for k, v in r['eval'].items():
    for s in v:
        assert set(s) == {'task_id', 'solution', 'status', 'details'}
        assert s['status'] in ('pass', 'fail', 'timeout') and isinstance(s['details'], dict)
assert isinstance(p['pass@1'], float) and isinstance(p['calibrated'], bool)
assert isinstance(p['gt_pass_rate'], float) and isinstance(p['failed_tasks'], list)
print('ok')"#,
        )
        .arg(&results_path)
        .arg(&pass_path)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&check.stdout).trim(),
        "ok",
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    // A second run loads the results (as upstream) instead of executing again.
    let again = env.evaluate(ids, &samples, &[]);
    assert!(again.status.success());
    evalkit::assert_stderr_has(&again, &["Loading previous results"]);
}

#[test]
fn wrong_crashing_hanging_and_invalid_samples_get_upstream_verdicts() {
    let Some(env) = evalkit::env() else { return };
    let samples = env.samples(
        "bad.jsonl",
        &[
            json!({"task_id": "BigCodeBench/0", "solution": WRONG}),
            json!({"task_id": "BigCodeBench/0", "solution": "raise RuntimeError('boom')\n"}),
            json!({"task_id": "BigCodeBench/0", "solution": "def task_func(*args, **kwargs):\n    while True:\n        pass\n"}),
            json!({"task_id": "BigCodeBench/0", "solution": "def task_func(:\n    return 1\n"}),
            json!({"task_id": "BigCodeBench/4", "solution": env.canonical("BigCodeBench/4")}),
        ],
    );
    let start = Instant::now();
    // --timeout 2: the limit becomes max(2, min-time-limit, GT time) + 1 = 3 s for these tasks.
    env.evaluate_ok("0,4", &samples, &["--timeout", "2", "--pass-k", "1"]);
    let results = read_json(&env.path("bad_eval_results.json"));
    let r0 = results["eval"]["BigCodeBench/0"].as_array().unwrap();
    let status: Vec<&str> = r0.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["fail", "fail", "timeout", "fail"]);

    // Wrong answer: per-test unittest tracebacks, keyed by test method name.
    let wrong = r0[0]["details"].as_object().unwrap();
    assert!(!wrong.is_empty());
    for (name, trace) in wrong {
        assert!(name.starts_with("test_"), "{name}");
        assert!(
            trace
                .as_str()
                .unwrap()
                .starts_with("Traceback (most recent call last):"),
            "{trace}"
        );
    }
    // Module-level exception: ALL = str(exception).
    assert_eq!(r0[1]["details"], json!({"ALL": "boom"}));
    // Syntax error: ALL = str(SyntaxError), naming the module file.
    let syntax = r0[3]["details"]["ALL"].as_str().unwrap();
    assert!(syntax.contains("(__test__.py, line"), "{syntax}");
    // The run went on after the bad samples.
    assert_eq!(results["eval"]["BigCodeBench/4"][0]["status"], "pass");
    // Nothing waited for upstream's 241 s limit (a loose bound; not a speed target).
    assert!(
        start.elapsed() < Duration::from_secs(200),
        "{:?}",
        start.elapsed()
    );
    let pk = read_json(&env.path("bad_pass_at_k.json"));
    assert_eq!(pk["pass@1"], json!(0.5)); // task 0: 0/4, task 4: 1/1

    // inspect lays out the failing task (only), with upstream's file names, and an index.
    let save = env.path("inspect");
    let results_path = env.path("bad_eval_results.json");
    // inspect defaults to the hard subset, as the original does.
    let (results, save_path) = (results_path.to_str().unwrap(), save.to_str().unwrap());
    env.run_ok(&[
        "inspect",
        "--eval_results",
        results,
        "--split",
        "complete",
        "--subset",
        "full",
        "--save_path",
        save_path,
    ]);
    let dir = save.join("bad_eval_results").join("BigCodeBench/0");
    for f in [
        "ground_truth.py",
        "test_case.py",
        "completion_0.py",
        "completion_3.py",
        "complete_1_execution_trace.txt",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    assert!(
        !save
            .join("bad_eval_results")
            .join("BigCodeBench/4")
            .exists(),
        "passing tasks are not written"
    );
    let trace = std::fs::read_to_string(dir.join("complete_1_execution_trace.txt")).unwrap();
    assert_eq!(trace, format!("Test Case: ALL\n\nboom{}\n", "=".repeat(50)));
    let index = std::fs::read_to_string(save.join("bad_eval_results").join("README.md")).unwrap();
    assert!(
        index.contains("| [BigCodeBench/0](BigCodeBench/0/) | 0/4 | fail fail timeout fail |"),
        "{index}"
    );
}

#[test]
fn pass_at_k_matches_the_estimator_for_five_samples() {
    let Some(env) = evalkit::env() else { return };
    let good1 = env.canonical("BigCodeBench/1");
    let mut rows = Vec::new();
    // Task 1: c = 2 of n = 5; task 4: c = 0 of 5.
    for i in 0..5 {
        let sol = if i == 1 || i == 3 {
            good1.clone()
        } else {
            WRONG.to_string()
        };
        rows.push(json!({"task_id": "BigCodeBench/1", "solution": sol}));
        rows.push(json!({"task_id": "BigCodeBench/4", "solution": WRONG}));
    }
    let samples = env.samples("five.jsonl", &rows);
    env.evaluate_ok("1,4", &samples, &["--no-gt", "--pass-k", "1,2,5,10"]);
    let pk = read_json(&env.path("five_pass_at_k.json"));
    // pass@k(n=5,c=2) = 1 - C(3,k)/C(5,k): k=1 0.4, k=2 0.7, k=5 1.0; task 4 gives 0.
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-12;
    assert!(close(&pk["pass@1"], 0.2), "{pk}");
    assert!(close(&pk["pass@2"], 0.35), "{pk}");
    assert!(close(&pk["pass@5"], 0.5), "{pk}");
    assert!(
        pk.get("pass@10").is_none(),
        "k > n must not be reported: {pk}"
    );
    // --no-gt: upstream reports 0.0 and every task as failed.
    assert_eq!(pk["gt_pass_rate"], 0.0);
    assert_eq!(
        pk["failed_tasks"],
        json!(["BigCodeBench/1", "BigCodeBench/4"])
    );
}

#[test]
fn broken_samples_files_name_file_and_line() {
    let Some(env) = evalkit::env() else { return };
    let good = json!({"task_id": "BigCodeBench/0", "solution": "x = 1"}).to_string();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "badjson.jsonl",
            format!("{good}\n{{\"task_id\": \n").into_bytes(),
            "badjson.jsonl:2: not a JSON object",
        ),
        (
            "unknown.jsonl",
            format!(
                "{good}\n{}\n",
                json!({"task_id": "BigCodeBench/99999", "solution": "x"})
            )
            .into_bytes(),
            "unknown.jsonl:2: unknown task id `BigCodeBench/99999`",
        ),
        (
            "nosolution.jsonl",
            format!("{}\n", json!({"task_id": "BigCodeBench/0"})).into_bytes(),
            "nosolution.jsonl:1: sample for BigCodeBench/0 has neither",
        ),
        (
            "latin1.jsonl",
            [
                format!("{good}\n").into_bytes(),
                b"{\"task_id\": \"BigCodeBench/0\", \"solution\": \"caf\xe9\"}\n".to_vec(),
            ]
            .concat(),
            "latin1.jsonl:2: not valid UTF-8",
        ),
    ];
    for (name, content, expected) in cases {
        let path = env.path(name);
        std::fs::write(&path, content).unwrap();
        let out = env.evaluate("0", &path, &[]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = stderr(&out);
        assert!(err.contains(expected), "expected {expected:?} in {err}");
        // Nothing was written next to the broken file.
        assert!(!env
            .path(&name.replace(".jsonl", "_eval_results.json"))
            .exists());
    }
    // Samples missing for a selected task: a clear error with the way out.
    let path = env.path("missing.jsonl");
    std::fs::write(&path, format!("{good}\n")).unwrap();
    let out = env.evaluate("0,4", &path, &[]);
    assert_eq!(out.status.code(), Some(2));
    evalkit::assert_stderr_has(&out, &["no samples for 1 of the 2 tasks"]);
}

#[test]
fn killed_run_resumes_without_redoing_samples_and_matches_an_uninterrupted_run() {
    let Some(env) = evalkit::env() else { return };
    let mut rows = Vec::new();
    for id in TASKS {
        for i in 0..4 {
            let sol = if i % 2 == 0 {
                env.canonical(id)
            } else {
                WRONG.to_string()
            };
            rows.push(json!({"task_id": id, "solution": sol}));
        }
    }
    let killed = env.samples("killed.jsonl", &rows);
    let whole = env.samples("whole.jsonl", &rows);
    fn args(p: &std::path::Path) -> Vec<&str> {
        evalkit::evaluate_args("1,4,9", p, &["--no-gt", "--parallel", "1"])
    }

    let journal = env.path("killed_eval_results.json.partial.jsonl");
    // Some but not all samples journaled: one header line, then at least four records.
    let lines = || std::fs::read_to_string(&journal).map_or(0, |s| s.lines().count());
    let mut child = evalkit::start_until(env.bcb().args(args(&killed)), || lines() > 4);
    let done_before_kill = lines() - 1;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(!env.path("killed_eval_results.json").exists());

    let err = evalkit::ok(&env.bcb().args(args(&killed)).output().unwrap());
    // The resumed run executed only what was missing.
    let resumed: usize = err
        .split_once("already done, resuming")
        .and_then(|(head, _)| head.rsplit('(').next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no resume line in {err}"));
    assert!(
        resumed >= done_before_kill && resumed < 12,
        "resumed {resumed}, journaled {done_before_kill}"
    );
    assert!(
        err.contains(&format!("evaluate: {} to run", 12 - resumed)),
        "{err}"
    );
    assert!(
        !journal.exists(),
        "journal removed once results are complete"
    );

    let out = env.bcb().args(args(&whole)).output().unwrap();
    assert!(out.status.success());
    let a = read_json(&env.path("killed_eval_results.json"));
    let b = read_json(&env.path("whole_eval_results.json"));
    assert_eq!(a["eval"], b["eval"]);
    let pa = read_json(&env.path("killed_pass_at_k.json"));
    let mut pb = read_json(&env.path("whole_pass_at_k.json"));
    pb["model"] = pa["model"].clone();
    assert_eq!(pa, pb);
}

#[test]
fn a_second_evaluate_of_the_same_file_refuses_while_the_first_runs() {
    let Some(env) = evalkit::env() else { return };
    // Two answers a task: the canonical one, and a wrong one that sleeps a second a call (a
    // few seconds a sample), so the first run is still going when the second starts.
    let slow = "import time\ndef task_func(*args, **kwargs):\n    time.sleep(1)\n";
    let rows: Vec<Value> = TASKS
        .iter()
        .flat_map(|id| [(id, env.canonical(id)), (id, slow.to_string())])
        .map(|(id, sol)| json!({"task_id": id, "solution": sol}))
        .collect();
    let samples = env.samples("twice.jsonl", &rows);
    let args = evalkit::evaluate_args("1,4,9", &samples, &["--no-gt", "--parallel", "1"]);
    let journal = env.path("twice_eval_results.json.partial.jsonl");
    // Under way: the header and a verdict in its journal.
    let lines = || std::fs::read_to_string(&journal).map_or(0, |s| s.lines().count());
    let mut first = evalkit::start_until(env.bcb().args(&args), || lines() >= 2);
    let second = env.run(&args);
    let wants = [samples.to_str().unwrap(), "another `bcb evaluate`", "hint:"];
    evalkit::assert_refused_beside(&mut first, &second, &wants);
    let results = read_json(&env.path("twice_eval_results.json"));
    let ran: usize = TASKS
        .iter()
        .map(|t| results["eval"][*t].as_array().unwrap().len())
        .sum();
    assert_eq!(ran, 6);
    assert!(!journal.exists());
    // The first run over, the file is free again: its results are loaded.
    evalkit::ok(&env.run(&args));
}

/// Two models evaluated at once on a fresh machine need one ground truth: the second run
/// waits for the first's (task 421's canonical solution sleeps about 10 s) and runs none of
/// it; the cache holds each task once.
#[test]
fn a_second_run_waits_for_the_ground_truth_the_first_is_running_and_runs_none_of_it() {
    let Some(env) = evalkit::env() else { return };
    let ids = "421,4";
    let rows: Vec<Value> = ["BigCodeBench/421", "BigCodeBench/4"]
        .iter()
        .map(|id| json!({"task_id": id, "solution": env.canonical(id)}))
        .collect();
    let (a, b) = (env.samples("a.jsonl", &rows), env.samples("b.jsonl", &rows));
    let gt_cache = || evalkit::ground_truth_file(env.cache.path(), ".jsonl");
    // Under way: the first run's ground truth has begun (its cache has its header).
    let started = || gt_cache().is_some_and(|p| std::fs::read(p).is_ok_and(|t| !t.is_empty()));
    let first_args = evalkit::evaluate_args(ids, &a, &["--parallel", "2"]);
    let mut first = evalkit::start_until(env.bcb().args(&first_args), started);
    let second = env.evaluate(ids, &b, &["--parallel", "2", "--progress-interval", "1"]);
    let err = evalkit::ok(&second);
    assert!(first.wait().unwrap().success());
    assert!(
        err.contains("is being run by another process (pid ") && err.contains("waiting for it"),
        "{err}"
    );
    // A wait shows its progress as a phase does (a line a second here).
    assert!(err.contains("waiting for ground truth: "), "{err}");
    assert!(err.contains("ground truth: 0 to run"), "{err}");
    let records = std::fs::read_to_string(gt_cache().unwrap()).unwrap();
    assert_eq!(records.lines().count(), 1 + 2, "{records}");
    for name in ["a_eval_results.json", "b_eval_results.json"] {
        let results = read_json(&env.path(name));
        assert_eq!(results["eval"]["BigCodeBench/421"][0]["status"], "pass");
    }
}

/// A wait on a ground truth whose holder writes nothing (here not a run at all: the test
/// holding the lock) ends with an error naming the cache once it has not changed for the
/// stall window: three time limits and 30 s (a unit test of `gt_lock` checks the sum), here
/// shortened to 2 s with `BCB_GT_STALL_SECS`.
#[test]
fn a_wait_for_a_ground_truth_whose_holder_writes_nothing_ends_with_an_error() {
    let Some(env) = evalkit::env() else { return };
    let gt_dir = env.cache.path().join("ground-truth");
    std::fs::create_dir_all(&gt_dir).unwrap();
    // The cache's name, from a run under the same settings in another cache.
    let args = [
        "evaluate",
        "--check-gt-only",
        "--ids",
        "4",
        "--timeout",
        "1",
    ];
    let probe = evalkit::env().unwrap();
    evalkit::ok(&probe.run(&args));
    let cache = evalkit::ground_truth_file(probe.cache.path(), ".jsonl").unwrap();
    let name = cache.file_name().unwrap();
    let mut lock = gt_dir.join(name).into_os_string();
    lock.push(".lock");
    // Held by this test's process, as any other process would hold it.
    let holder = std::fs::File::create(&lock).unwrap();
    holder.lock().unwrap();
    let began = Instant::now();
    let mut bcb = env.bcb();
    bcb.env("BCB_GT_STALL_SECS", "2");
    let out = evalkit::run_logged(bcb, &args);
    let waited = began.elapsed();
    drop(holder);
    assert!(waited >= Duration::from_secs(2), "{waited:?}");
    evalkit::assert_fails_saying(
        &out,
        &[
            name.to_str().unwrap(),
            "locked by another process",
            "written nothing to it for ",
            "hint:",
        ],
    );
    // The seconds since the cache last changed: the window, or a poll later on a busy machine.
    let err = stderr(&out);
    let secs: u64 = number_after(&err, "written nothing to it for ");
    assert!((2..10).contains(&secs), "{secs} s:\n{err}");
}

/// A ground truth checked under other time settings is kept apart (its timeouts would fail
/// the default run's samples): one cache per setting. Task 4, whose suite takes a moment:
/// the test runs it five times.
#[test]
fn a_quick_timeout_run_does_not_poison_the_default_ground_truth() {
    let Some(env) = evalkit::env() else { return };
    let samples = env.samples(
        "q.jsonl",
        &[json!({"task_id": "BigCodeBench/4", "solution": env.canonical("BigCodeBench/4")})],
    );
    let run = |extra: &[&str]| env.evaluate("4", &samples, &[&["--force"], extra].concat());
    let quick = run(&["--timeout", "5"]);
    assert!(quick.status.success(), "{}", stderr(&quick));
    assert!(stderr(&quick).contains("ground truth: 1 to run"));
    let default = run(&[]);
    assert!(default.status.success(), "{}", stderr(&default));
    assert!(
        stderr(&default).contains("ground truth: 1 to run"),
        "the default run computes its own ground truth: {}",
        stderr(&default)
    );
    let caches = std::fs::read_dir(env.cache.path().join("ground-truth"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .count();
    assert_eq!(
        caches, 2,
        "one cache per time setting (each with its lock file)"
    );
    // The same settings again: cached.
    let again = run(&[]);
    evalkit::assert_stderr_has(&again, &["ground truth: 0 to run"]);
}

#[test]
fn save_pass_rate_false_keeps_the_pass_at_k_file_and_no_execute_runs_nothing() {
    let Some(env) = evalkit::env() else { return };
    let samples = env.samples(
        "s.jsonl",
        &[json!({"task_id": "BigCodeBench/0", "solution": WRONG})],
    );
    let pass_at_k = env.path("s_pass_at_k.json");
    std::fs::write(&pass_at_k, "{\"kept\": 1}").unwrap();

    env.evaluate_ok("0", &samples, &["--no-gt", "--no_execute"]);
    assert!(
        !env.path("s_eval_results.json").exists(),
        "--no_execute executed nothing"
    );

    env.evaluate_ok("0", &samples, &["--no-gt", "--save_pass_rate", "False"]);
    assert!(env.path("s_eval_results.json").exists());
    assert_eq!(
        std::fs::read_to_string(&pass_at_k).unwrap(),
        "{\"kept\": 1}"
    );
}

/// The README's promise: on a terminal a bar; with `TERM=dumb` or when stderr is a pipe,
/// plain lines without escape codes. The terminal is a real pty (`script`, util-linux).
#[test]
fn term_dumb_and_pipes_get_plain_progress_lines_a_terminal_gets_a_bar() {
    let Some(env) = evalkit::env() else { return };
    let samples = env.samples(
        "t.jsonl",
        &[json!({"task_id": "BigCodeBench/4", "solution": env.canonical("BigCodeBench/4")})],
    );
    let args = evalkit::evaluate_args("4", &samples, &["--force", "--progress-interval", "1"]);
    let bare_cr = |s: &str| s.replace("\r\n", "\n").contains('\r');
    let text = env.run_ok(&args);
    assert!(!text.contains('\x1b') && !bare_cr(&text), "{text:?}");
    assert!(text.contains("evaluate: 1/1 jobs (100.0%)"), "{text}");
    let on_tty = |term: &str| {
        let line = std::iter::once(env!("CARGO_BIN_EXE_bcb"))
            .chain(args.iter().copied())
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let bcb = env.bcb();
        let mut script = std::process::Command::new("script");
        for (k, v) in bcb.get_envs() {
            match v {
                Some(v) => script.env(k, v),
                None => script.env_remove(k),
            };
        }
        let out = script
            .env("TERM", term)
            .env_remove("NO_COLOR")
            .args(["-qec", &line, "/dev/null"])
            .output()
            .expect("`script` (util-linux) gives bcb a terminal");
        evalkit::ok(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dumb = on_tty("dumb");
    assert!(!dumb.contains('\x1b') && !bare_cr(&dumb), "{dumb:?}");
    assert!(dumb.contains("evaluate: 1/1 jobs (100.0%)"), "{dumb}");
    let xterm = on_tty("xterm");
    assert!(xterm.contains('\x1b'), "a terminal gets a bar: {xterm:?}");
}
