//! `bcb report`, `compare`, `leaderboard` and `inspect` on the real result files in
//! ../shared/real-samples, and the environment classes on a live run here.

mod evalkit;

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use evalkit::{real_results as shared, HERMES, PHI};

fn bcb(dataset: &Path, args: &[&str]) -> Output {
    evalkit::run_logged(evalkit::bcb_over(dataset), args)
}

fn file(real: &Path, model: &str) -> String {
    real.join(format!("{model}_eval_results.json.gz"))
        .display()
        .to_string()
}

#[test]
fn report_tables_on_two_real_models() {
    let Some((real, ds)) = shared() else { return };
    let (h, p) = (file(&real, HERMES), file(&real, PHI));
    let out = bcb(&ds, &["report", &h, &p, "--format", "json"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["models"].as_array().unwrap().len(), 2);
    assert_eq!(v["tasks"].as_array().unwrap().len(), 1140);
    assert_eq!(v["domains"].as_array().unwrap().len(), 7);
    // The terminal summary goes to stderr when the tables go to stdout.
    assert!(String::from_utf8_lossy(&out.stderr).contains("environment (not the model's fault):"));

    let out = bcb(&ds, &["report", &h, &p, "--format", "md"]);
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.contains("| NousResearch--Hermes-2-Theta-Llama-3-8B--main | 1140 | 1140 | 36.5 ["),
        "{md}"
    );
    assert!(md.contains("## Failures caused by the environment (not the model's)"));
    assert!(md.contains("## Tasks where the models disagree (283)"));

    // --gt-failed: tasks whose canonical solution fails here count as environment.
    let tmp = tempfile::tempdir().unwrap();
    let gt = tmp.path().join("gt.txt");
    std::fs::write(&gt, "# failing here\n6\nBigCodeBench/12\n").unwrap();
    let out = bcb(
        &ds,
        &[
            "report",
            &h,
            "--format",
            "json",
            "--gt-failed",
            gt.to_str().unwrap(),
        ],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for task in ["BigCodeBench/6", "BigCodeBench/12"] {
        let t = evalkit::report_task(&v, task);
        assert_eq!(
            t["verdicts"][0]["failures"][0]["class"], "env_ground_truth",
            "{task}"
        );
    }
    assert_eq!(v["models"][0]["env_failures"], 6 + 2);

    let out = bcb(&ds, &["report", &h, "--format", "csv"]);
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(csv.starts_with("table,model,key,tasks,value,low,high,count,example\n"));
    assert!(csv.contains(
        "\npass_at_k,NousResearch--Hermes-2-Theta-Llama-3-8B--main,pass@1,1140,0.364912,"
    ));
    assert_eq!(csv.lines().filter(|l| l.starts_with("task,")).count(), 1140);
}

#[test]
fn compare_two_real_models() {
    let Some((real, ds)) = shared() else { return };
    let out = bcb(
        &ds,
        &[
            "compare",
            &file(&real, HERMES),
            &file(&real, PHI),
            "--format",
            "json",
        ],
    );
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Counted from the two files: 84 tasks only Hermes passes, 199 only Phi.
    assert_eq!(v["a_only"].as_array().unwrap().len(), 84);
    assert_eq!(v["b_only"].as_array().unwrap().len(), 199);
    // scipy.stats.binomtest(84, 283, 0.5).pvalue = 6.332295610828597e-12
    let p = v["mcnemar_p"].as_f64().unwrap();
    assert!((p / 6.332295610828597e-12 - 1.0).abs() < 1e-6, "{p}");
    let d = &v["difference"];
    assert!((d["value"].as_f64().unwrap() - (531.0 - 416.0) / 1140.0).abs() < 1e-12);
    assert!(d["low"].as_f64().unwrap() > 0.0);
    assert_eq!(v["noise"], false);
    let text = bcb(&ds, &["compare", &file(&real, HERMES), &file(&real, PHI)]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("flips: 84 solved only by A, 199 only by B"),
        "{text}"
    );
    assert!(text.contains("verdict: B is better than A beyond noise"));
}

#[test]
fn leaderboard_over_a_folder() {
    let Some((real, ds)) = shared() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for m in [HERMES, PHI] {
        for suffix in ["_eval_results.json.gz", "_pass_at_k.json"] {
            std::fs::copy(
                real.join(format!("{m}{suffix}")),
                tmp.path().join(format!("{m}{suffix}")),
            )
            .unwrap();
        }
    }
    let dir = tmp.path().display().to_string();
    let out = bcb(&ds, &["leaderboard", &dir, "--format", "csv"]);
    assert!(out.status.success());
    let csv = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        csv.lines().collect::<Vec<_>>(),
        [
            "model,complete,instruct,hard_complete,hard_instruct,date",
            "microsoft--Phi-4-multimodal-instruct--main,46.6,-,-,-,2025-05-08",
            "NousResearch--Hermes-2-Theta-Llama-3-8B--main,36.5,-,-,-,2025-05-08",
        ]
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("results.json")).unwrap())
            .unwrap();
    assert_eq!(
        json["Hermes-2-Theta-Llama-3-8B"]["pass@1"]["complete"],
        36.5
    );
    assert!(!tmp.path().join("results-hard.json").exists());
}

#[test]
fn inspect_defaults_to_hard_and_warns_on_a_full_results_file() {
    let Some((real, ds)) = shared() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let save = tmp.path().display().to_string();
    let h = file(&real, HERMES);
    // --split is required, as in the original.
    let out = bcb(
        &ds,
        &["inspect", "--eval-results", &h, "--save-path", &save],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--split"));

    let out = bcb(
        &ds,
        &[
            "inspect",
            "--eval-results",
            &h,
            "--split",
            "complete",
            "--save-path",
            &save,
        ],
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("was evaluated on the full subset but --subset is hard; 992 of its 1140 tasks are skipped"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("148 tasks, pass@1"), "{stdout}");
    assert!(stdout.contains("failures by class:"), "{stdout}");
    let index =
        std::fs::read_to_string(tmp.path().join(format!("{HERMES}_eval_results/README.md")))
            .unwrap();
    assert!(
        index.contains("of 148 tasks passed every sample"),
        "{index}"
    );
}

/// A live run here: canonical solutions that fail for want of NLTK data and network come out
/// as environment failures, not the model's.
#[test]
fn environment_classes_from_a_live_run_here() {
    let Some(env) = evalkit::env() else { return };
    let rows: Vec<Value> = ["BigCodeBench/177", "BigCodeBench/314"]
        .iter()
        .map(|id| serde_json::json!({"task_id": id, "solution": env.canonical(id)}))
        .collect();
    let samples = env.samples(
        "here--main--bigcodebench-complete--bcb-0-1-sanitized_calibrated.jsonl",
        &rows,
    );
    env.evaluate_ok("177,314", &samples, &["--no-gt"]);
    let results = env
        .path("here--main--bigcodebench-complete--bcb-0-1-sanitized_calibrated_eval_results.json");
    let out = env.run(&["report", results.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let class = |task: &str| {
        evalkit::report_task(&v, task)["verdicts"][0]["failures"][0]["class"]
            .as_str()
            .map(str::to_string)
    };
    assert_eq!(class("BigCodeBench/177").as_deref(), Some("env_nltk_data"));
    assert_eq!(class("BigCodeBench/314").as_deref(), Some("env_network"));
    assert_eq!(v["models"][0]["env_failures"], 2);
}
