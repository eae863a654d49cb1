//! What `evaluate --check-gt-only` writes besides the ground-truth cache: `-q` silences
//! everything on stderr but errors, the phase cost lines included (they are progress output;
//! without it each phase ends with its cost), and `--gt-summary PATH` writes the summary as
//! JSON for programs (the evaluator Space) that would otherwise parse the console.

mod evalkit;

#[test]
fn quiet_silences_the_cost_lines_and_gt_summary_writes_json() {
    let Some(env) = evalkit::env() else { return };
    let run = |extra: &[&str]| {
        let mut args = vec!["evaluate", "--check-gt-only", "--ids", "4"];
        args.extend_from_slice(extra);
        let out = env.run(&args);
        assert!(out.status.success(), "{}", evalkit::stderr(&out));
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            evalkit::stderr(&out),
        )
    };
    let (stdout, stderr) = run(&[]);
    assert!(stderr.contains("ground truth: 1 run, wall"), "{stderr}");
    assert!(stdout.contains("Groundtruth pass rate: 1.000"), "{stdout}");
    let summary = env.path("gt.json");
    let (stdout, stderr) = run(&["-q", "--gt-summary", summary.to_str().unwrap()]);
    assert!(!stderr.contains("sum of test time"), "{stderr}");
    assert!(
        stderr.trim().is_empty(),
        "nothing but errors with -q: {stderr}"
    );
    assert!(stdout.contains("Groundtruth pass rate: 1.000"), "{stdout}");
    let v = evalkit::read_json(&summary);
    assert_eq!(
        v,
        serde_json::json!({"gt_pass_rate": 1.0, "tasks": 1, "failed_tasks": [], "failures": []})
    );
}
