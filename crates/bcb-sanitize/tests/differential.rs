//! Differential test: our sanitizer against the original (bigcodebench 0.2.5's sanitize.py
//! with tree-sitter 0.25.2 / tree-sitter-python 0.25.0) on answers generated from the real
//! dataset. Outputs must be byte-identical.
//!
//! The original runs in a venv made by `.ci/setup-sanitize.sh` (found via
//! `BCB_UPSTREAM_PYTHON`, else created by running that script). Where neither works the test
//! prints why and passes as skipped, unless `BCB_REQUIRE_UPSTREAM=1`, where it fails.
#![allow(clippy::print_stdout, clippy::print_stderr)] // test output: what ran, what was skipped

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::answers::{answers, dataset_file, load_tasks};

const ANSWERS: usize = 800;

fn require() -> bool {
    bcb_testkit::Need::Upstream.required()
}

fn skip(why: &str) {
    bcb_testkit::missing(bcb_testkit::Need::Upstream, why);
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn upstream_python() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("BCB_UPSTREAM_PYTHON") {
        let p = PathBuf::from(p);
        return if p.exists() {
            Ok(p)
        } else {
            Err(format!(
                "BCB_UPSTREAM_PYTHON={} does not exist",
                p.display()
            ))
        };
    }
    let script = workspace_root().join(".ci/setup-sanitize.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed (no python3 -m venv or no PyPI?): {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok(PathBuf::from(path))
}

/// Sends all requests to one driver process and reads the answers back.
fn run_original(python: &PathBuf, requests: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let driver = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/upstream_driver.py");
    let mut child = Command::new(python)
        .arg(&driver)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the original's driver");
    let mut stdin = child.stdin.take().unwrap();
    let body: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let writer = std::thread::spawn(move || {
        stdin.write_all(body.as_bytes()).unwrap();
    });
    let out: Vec<serde_json::Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success(), "driver failed");
    assert_eq!(out.len(), requests.len(), "driver answered every request");
    out
}

/// Hand-written answers that hit the corners (also run where the dataset is absent).
fn corner_cases() -> Vec<(String, String)> {
    let e = "task_func".to_string();
    [
        "",
        "\n\n",
        "no code here, sorry.",
        "```python\n```",
        "def task_func(:\n    pass\n",
        "def task_func():\r\n\treturn 1\r\n\r\nprint(task_func())\r\n",
        "Voilà:\n```python\ndef task_func(s='héllo ✓'):\n    return s\n```\nC’est tout.",
        "x = 1\ndef task_func():\n    return x\n@decorator\ndef task_func():\n    pass\n",
        "import os\nclass A:\n    pass\nA = 3\ndef task_func(): return A\nprint(task_func())",
        "```\n'''\nunterminated\n```\ndef task_func():\n    return 1\n",
        "if True:\n    def task_func():\n        return 1\nelse:\n    pass\n",
        "a.b = task_func\nx, y = 1, 2\nz: int = 3\ndef task_func():\n    return z\ntask_func()",
        "def task_func():\n    return 1\n\n\n\n",
        "   \n  def task_func():\n      return 1\n",
        "s = \"\"\"\n```python\n\"\"\"\ndef task_func():\n    return s\n",
        "def task_func():\n    return f\"{1}\" \\\n        'x'\n# done",
    ]
    .iter()
    .map(|s| (s.to_string(), e.clone()))
    .collect()
}

#[test]
fn byte_identical_to_the_original_sanitizer() {
    let python = match upstream_python() {
        Ok(p) => p,
        Err(why) => return skip(&why),
    };
    let mut cases: Vec<(String, String, String)> = corner_cases()
        .into_iter()
        .map(|(t, e)| (t, e, "corner".to_string()))
        .collect();
    match dataset_file() {
        Some(f) => {
            let tasks = load_tasks(&f);
            for a in answers(&tasks, ANSWERS, 20250101) {
                cases.push((
                    a.text,
                    a.entry_point,
                    format!("{} [{}]", a.task_id, a.recipe),
                ));
            }
        }
        None => {
            if require() {
                panic!("BCB_REQUIRE_UPSTREAM=1 but the dataset is missing (set BCB_DATASET_DIR)");
            }
            eprintln!("dataset not found (BCB_DATASET_DIR): only the corner cases are compared");
        }
    }
    let requests: Vec<serde_json::Value> = cases
        .iter()
        .map(|(t, e, _)| serde_json::json!({"op": "sanitize", "code": t, "entry": e}))
        .collect();
    let theirs = run_original(&python, &requests);
    let mut mismatches = Vec::new();
    let mut original_errors = 0;
    for ((text, entry, label), want) in cases.iter().zip(&theirs) {
        let Some(want) = want.get("out").and_then(|v| v.as_str()) else {
            original_errors += 1;
            eprintln!("original raised on {label}: {}", want["error"]);
            continue;
        };
        let got = bcb_sanitize::sanitize(text, Some(entry));
        if got != want {
            mismatches.push(format!(
                "--- {label}\ninput: {text:?}\nwant: {want:?}\ngot:  {got:?}"
            ));
        }
    }
    let report = std::env::temp_dir().join("bcb-sanitize-differential.txt");
    std::fs::write(&report, mismatches.join("\n\n")).unwrap();
    eprintln!(
        "differential: {} answers, {} mismatches, {} raised by the original (details: {})",
        cases.len(),
        mismatches.len(),
        original_errors,
        report.display()
    );
    assert!(
        mismatches.is_empty(),
        "{} of {} outputs differ from the original; first:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches[0]
    );
    assert_eq!(original_errors, 0);
    assert!(cases.len() >= 16);
}

/// Our syntax check against CPython's `ast.parse` (the venv's interpreter) on every answer,
/// every window of 1-12 lines of a sample of them: this measures where we disagree.
#[test]
fn syntax_check_agrees_with_ast_parse() {
    let python = match upstream_python() {
        Ok(p) => p,
        Err(why) => return skip(&why),
    };
    let Some(f) = dataset_file() else {
        return skip("the dataset is missing (set BCB_DATASET_DIR)");
    };
    let tasks = load_tasks(&f);
    let mut snippets: Vec<String> = Vec::new();
    for a in answers(&tasks, 150, 777) {
        let lines: Vec<&str> = a.text.split('\n').collect();
        for i in (0..lines.len()).step_by(3) {
            for len in [1usize, 2, 3, 5, 8, 12] {
                if i + len <= lines.len() {
                    snippets.push(lines[i..i + len].join("\n"));
                }
            }
        }
        snippets.push(a.text);
    }
    let requests: Vec<serde_json::Value> = snippets
        .iter()
        .map(|s| serde_json::json!({"op": "syncheck", "code": s}))
        .collect();
    let theirs = run_original(&python, &requests);
    let mut disagree = Vec::new();
    for (s, want) in snippets.iter().zip(&theirs) {
        let want = want["out"].as_bool().expect("syntax_check returns a bool");
        if bcb_sanitize::syntax_check(s) != want {
            disagree.push(format!("ast.parse={want}: {s:?}"));
        }
    }
    eprintln!(
        "syntax check: {} snippets, {} disagreements with ast.parse",
        snippets.len(),
        disagree.len()
    );
    assert!(
        disagree.is_empty(),
        "{} disagreements, e.g.:\n{}",
        disagree.len(),
        disagree
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
