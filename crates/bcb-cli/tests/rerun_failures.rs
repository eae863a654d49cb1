//! `bcb evaluate --rerun-failures` in the real eval env: samples that fail on a coin
//! (`random.random() < 0.5`) are marked flaky and the first verdicts are the ones pass@k
//! counts. (A stable failure would make every one of the N rounds run; the scripted-executor
//! tests in bcb-sinks cover it.)

mod evalkit;

use evalkit::read_json;
use serde_json::json;

#[test]
fn samples_failing_on_a_coin_are_flaky() {
    let Some(env) = evalkit::env() else { return };
    let good = env.canonical("BigCodeBench/4");
    let coin = format!(
        "{good}\nimport random\nif random.random() < 0.5:\n    raise RuntimeError('tails')\n"
    );
    // Twelve coins: some fail first (all pass first with p = 2^-12); each failing one passes
    // in one of 14 reruns but with p = 2^-14.
    let rows: Vec<_> = (0..12)
        .map(|_| json!({"task_id": "BigCodeBench/4", "solution": coin}))
        .collect();
    let samples = env.samples("coins.jsonl", &rows);
    let out = env.evaluate(
        "4",
        &samples,
        &[
            "--pass-k",
            "1",
            "--rerun-failures",
            "14",
            // Twelve independent coins: identical programs must each run (no dedup, no cache).
            "--no-dedup",
            "--no-cache",
            // A fresh process per sample: each rerun round costs no pool start-up.
            "--executor",
            "process",
        ],
    );
    evalkit::ok(&out);
    let results = read_json(&env.path("coins_eval_results.json"));
    let list = results["eval"]["BigCodeBench/4"].as_array().unwrap();
    let coins = &list[..];
    let failed: Vec<_> = coins.iter().filter(|r| r["status"] == "fail").collect();
    assert!(!failed.is_empty(), "no coin failed first: {list:?}");
    for r in &failed {
        assert_eq!(r["flaky"], true, "{r}");
    }
    for r in coins.iter().filter(|r| r["status"] == "pass") {
        assert!(
            r.get("flaky").is_none(),
            "passing samples are not rerun: {r}"
        );
    }
    // pass@1 counts the first verdicts.
    let pk = read_json(&env.path("coins_pass_at_k.json"));
    let passed = coins.len() - failed.len();
    let pass1 = pk["pass@1"].as_f64().unwrap();
    assert!(
        (pass1 - passed as f64 / coins.len() as f64).abs() < 1e-9,
        "{pk}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("flaky: {} sample(s)", failed.len())),
        "{stdout}"
    );
}
