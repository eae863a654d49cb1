//! Every failure class comes out of a real sample: the two real models evaluated by the
//! original (../shared/real-samples), bcb's own output made here without network or NLTK
//! data (tests/data), and — only where no real sample exists yet — constructed samples
//! carrying the exact markers bcb's executors write (tests named `constructed_`).

#![allow(clippy::print_stderr)] // prints the counts for the closing note

mod common;

use std::collections::BTreeMap;

use bcb_executor::Marker;
use bcb_report::classify::{classify, FailureClass};
use bcb_report::results::{RunResults, Sample, Status};
use common::{here_file, real_samples, results_file, HERMES, PHI};

fn class_of(run: &RunResults, task: &str) -> FailureClass {
    let gt = run.gt_failed.iter().any(|t| t == task);
    let s = &run
        .samples(task)
        .unwrap_or_else(|| panic!("{task} missing"))[0];
    classify(s, gt).expect("a failing sample").class
}

#[test]
fn real_samples_of_the_original_give_the_model_classes() {
    let Some(dir) = real_samples() else { return };
    let hermes = RunResults::load(&results_file(&dir, HERMES)).unwrap();
    assert_eq!(hermes.gt_failed.len(), 4, "failed_tasks of the pass@k file");
    let cases = [
        // ALL: "keyword argument repeated: data (__test__.py, line 15)"
        ("BigCodeBench/987", FailureClass::SyntaxError),
        // ModuleNotFoundError: No module named 'hypothesis'
        ("BigCodeBench/541", FailureClass::ImportError),
        // ALL: "name 'np' is not defined"
        ("BigCodeBench/607", FailureClass::NameOrAttributeError),
        // ALL: "module '...rsa' has no attribute 'default_backend'"
        ("BigCodeBench/534", FailureClass::NameOrAttributeError),
        // FileNotFoundError in task_func
        ("BigCodeBench/79", FailureClass::OtherException),
        // AssertionError only
        ("BigCodeBench/6", FailureClass::AssertionFailure),
        // status timeout, empty details
        ("BigCodeBench/10", FailureClass::Timeout),
        // socket.gaierror: Name or service not known (reverse DNS)
        ("BigCodeBench/176", FailureClass::EnvNetwork),
        // NameError: name 'URLError' is not defined, next to a DNS failure: the model's
        ("BigCodeBench/590", FailureClass::NameOrAttributeError),
        // in failed_tasks: the canonical solution failed in that run too
        ("BigCodeBench/63", FailureClass::EnvGroundTruth),
        ("BigCodeBench/205", FailureClass::EnvGroundTruth),
    ];
    for (task, want) in cases {
        assert_eq!(class_of(&hermes, task), want, "{task}");
    }
    let s = &hermes.samples("BigCodeBench/79").unwrap()[0];
    assert_eq!(
        classify(s, false).unwrap().exception.as_deref(),
        Some("FileNotFoundError")
    );
    // Passing samples have no class.
    let pass = hermes.tasks.iter().find(|(_, s)| s[0].passed()).unwrap();
    assert!(classify(&pass.1[0], false).is_none());
}

#[test]
fn real_samples_here_give_the_environment_classes() {
    let run = RunResults::load(&here_file()).unwrap();
    let cases = [
        // nltk LookupError: Resource punkt / stopwords not found
        ("BigCodeBench/177", FailureClass::EnvNltkData),
        ("BigCodeBench/332", FailureClass::EnvNltkData),
        ("BigCodeBench/376", FailureClass::EnvNltkData),
        // socket.gaierror: Temporary failure in name resolution
        ("BigCodeBench/314", FailureClass::EnvNetwork),
        // URLError wrapped in the task's ValueError: still the network
        ("BigCodeBench/101", FailureClass::EnvNetwork),
        // A MemoryError under RLIMIT_AS (constructed sample, real execution)
        ("BigCodeBench/0", FailureClass::MemoryLimit),
    ];
    for (task, want) in cases {
        assert_eq!(class_of(&run, task), want, "{task}");
    }
    // A real memory-cgroup kill: bcb's marker, status timeout.
    let killed = &run.samples("BigCodeBench/0").unwrap()[1];
    assert_eq!(killed.status, Status::Timeout);
    assert_eq!(
        classify(killed, false).unwrap().class,
        FailureClass::MemoryLimit
    );
    // Reverse DNS here returns None: only the ground-truth list can tell it is the environment.
    assert_eq!(
        class_of(&run, "BigCodeBench/176"),
        FailureClass::AssertionFailure
    );
    let s = &run.samples("BigCodeBench/176").unwrap()[0];
    assert_eq!(
        classify(s, true).unwrap().class,
        FailureClass::EnvGroundTruth
    );
}

fn marked(status: Status, all: &str) -> Sample {
    Sample {
        status,
        details: bcb_report::results::Details::all(all),
        solution: String::new(),
        flaky: None,
    }
}

#[test]
fn constructed_marker_samples_give_the_bcb_classes() {
    // Constructed: no real sample of these yet (tamper scan and output cap markers are not
    // emitted yet; a real integrity failure needs a forging sample; the real memory kill is
    // in real_samples_here_give_the_environment_classes).
    let cases = [
        (
            marked(
                Status::Fail,
                &Marker::TamperRefused.text("writes to unittest internals"),
            ),
            FailureClass::TamperingRefused,
        ),
        (
            marked(
                Status::Fail,
                &Marker::IntegrityFailed.text("result nonce mismatch"),
            ),
            FailureClass::TamperingDetected,
        ),
        (
            marked(
                Status::Fail,
                &Marker::RewardHack.text("equality: Agree.__eq__ agrees with anything (line 5)"),
            ),
            FailureClass::RewardHack,
        ),
        (
            marked(Status::Timeout, &Marker::MemoryLimit.text("")),
            FailureClass::MemoryLimit,
        ),
        (
            marked(Status::Fail, &Marker::MemoryLimit.text("")),
            FailureClass::MemoryLimit,
        ),
    ];
    for (sample, want) in cases {
        assert_eq!(classify(&sample, false).unwrap().class, want);
    }
    // Tampering stays the model's fault on a task whose ground truth fails.
    let s = marked(Status::Fail, &Marker::TamperRefused.text("x"));
    assert_eq!(
        classify(&s, true).unwrap().class,
        FailureClass::TamperingRefused
    );
}

fn counts(run: &RunResults) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for (task, samples) in &run.tasks {
        let gt = run.gt_failed.contains(task);
        for s in samples {
            let key = classify(s, gt).map_or("pass", |f| f.class.key());
            *m.entry(key).or_default() += 1;
        }
    }
    m
}

#[test]
fn per_class_counts_on_the_two_real_models() {
    let Some(dir) = real_samples() else { return };
    let hermes = counts(&RunResults::load(&results_file(&dir, HERMES)).unwrap());
    let phi = counts(&RunResults::load(&results_file(&dir, PHI)).unwrap());
    eprintln!("hermes {hermes:?}\nphi {phi:?}");
    assert_eq!(hermes["pass"], 416);
    assert_eq!(phi["pass"], 531);
    assert_eq!(hermes.values().sum::<usize>(), 1140);
    assert_eq!(phi.values().sum::<usize>(), 1140);
    let want_hermes = [
        ("syntax_error", 1),
        ("import_error", 1),
        // 590: NameError 'URLError' next to a DNS failure is the model's bug.
        ("name_or_attribute_error", 65),
        ("other_exception", 319),
        ("assertion_failure", 329),
        ("timeout", 3),
        // 176 (reverse DNS) and 1040 (connection refused).
        ("env_network", 2),
        ("env_ground_truth", 4),
    ];
    for (k, n) in want_hermes {
        assert_eq!(hermes.get(k).copied().unwrap_or(0), n, "hermes {k}");
    }
    let want_phi = [
        ("import_error", 1),
        ("name_or_attribute_error", 49),
        ("other_exception", 267),
        ("assertion_failure", 284),
        ("timeout", 2),
        ("env_network", 2),
        ("env_ground_truth", 4),
    ];
    for (k, n) in want_phi {
        assert_eq!(phi.get(k).copied().unwrap_or(0), n, "phi {k}");
    }
}
