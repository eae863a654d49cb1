//! The page is self-contained: no external reference of any kind, the charts inline, the
//! task data embedded (gzip+base64) and round-tripping. Browser behaviour is checked in
//! crates/bcb-cli/tests/report_page.rs (headless Chromium).

mod common;

use std::io::Read;

use base64::Engine as _;
use bcb_report::html::render;
use bcb_report::results::RunResults;
use bcb_report::summary::{Report, ReportOptions, TaskInfo};
use common::here_file;

#[test]
fn page_is_self_contained_and_embeds_the_task_data() {
    let run = RunResults::load(&here_file()).unwrap();
    let tasks = vec![TaskInfo::new(
        "BigCodeBench/177",
        vec!["re".into(), "nltk".into(), "string".into()],
        "import re\nimport nltk\ndef task_func(df): <prompt>".into(),
    )];
    let runs = vec![run];
    let report = Report::build(&runs, &tasks, &ReportOptions::default());
    let page = render(&report, &runs, &tasks, "t <&> title");
    assert!(page.starts_with("<!doctype html>"));
    assert!(
        page.contains("<title>t &lt;&amp;&gt; title</title>"),
        "titles are escaped"
    );
    assert!(page.contains("Content-Security-Policy"));
    for needle in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "<link",
        "<img",
        "<iframe",
    ] {
        assert!(!page.contains(needle), "external reference {needle:?}");
    }
    assert!(page.matches("<svg").count() >= 4, "charts are inline SVG");
    assert!(page.contains("environment: NLTK data missing"));
    // The embedded blob inflates to the task data: prompt, code and tracebacks.
    let start = page
        .find("<script id=\"data\" type=\"application/octet-stream\">")
        .unwrap();
    let rest = &page[start..];
    let b64 = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
    let gz = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    let mut json = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut json)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["BigCodeBench/177"]["p"],
        "import re\nimport nltk\ndef task_func(df): <prompt>"
    );
    let sample = &v["BigCodeBench/177"]["m"][0][0];
    assert_eq!(sample["s"], "fail");
    assert_eq!(sample["k"], "environment: NLTK data missing");
    assert!(sample["d"][0][1].as_str().unwrap().contains("LookupError"));
    // No raw `</script>` can end the data early: base64 has no '<'.
    assert!(!b64.contains('<'));
}

#[test]
fn flaky_verdicts_are_shown_apart() {
    // A `flaky` flag as re-run tooling will write it (absent from upstream files).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m_eval_results.json");
    let v = serde_json::json!({"date": "2026-12-01 08:00", "eval": {
        "BigCodeBench/1": [{"task_id": "BigCodeBench/1", "solution": "", "status": "pass", "details": {}, "flaky": true}],
        "BigCodeBench/2": [{"task_id": "BigCodeBench/2", "solution": "", "status": "pass", "details": {}}]
    }});
    std::fs::write(&path, v.to_string()).unwrap();
    let runs = vec![RunResults::load(&path).unwrap()];
    let report = Report::build(&runs, &[], &ReportOptions::default());
    assert_eq!(report.models[0].flaky, 1);
    let row = &report.tasks[0];
    assert!(row.verdicts[0].as_ref().unwrap().flaky);
    let page = render(&report, &runs, &[], "flaky");
    assert_eq!(page.matches("<span class=\"flaky\"").count(), 1);
    assert!(page.contains("data-tags=\"pass flaky\""));
    // The tables show them apart too: a count per model (md) and a row per task (csv).
    let md = bcb_report::tables::render_markdown(&report);
    assert!(md.contains("flaky tasks"), "{md}");
    let csv = bcb_report::tables::render_csv(&report);
    let flaky_rows: Vec<&str> = csv.lines().filter(|l| l.starts_with("flaky,")).collect();
    assert_eq!(flaky_rows.len(), 1, "{csv}");
    assert!(flaky_rows[0].contains("BigCodeBench/1"), "{csv}");
    // compare: a flip on a flaky task says the flip may be noise.
    let other = dir.path().join("n_eval_results.json");
    let w = serde_json::json!({"date": "2026-12-01 08:00", "eval": {
        "BigCodeBench/1": [{"task_id": "BigCodeBench/1", "solution": "", "status": "fail", "details": {"ALL": "AssertionError"}}],
        "BigCodeBench/2": [{"task_id": "BigCodeBench/2", "solution": "", "status": "pass", "details": {}}]
    }});
    std::fs::write(&other, w.to_string()).unwrap();
    let pair = vec![runs[0].clone(), RunResults::load(&other).unwrap()];
    let both = Report::build(&pair, &[], &ReportOptions::default());
    let cmp = bcb_report::compare::compare(&both, 1, 100);
    assert_eq!(cmp.a_only.len(), 1);
    assert!(cmp.a_only[0].flaky);
    assert!(
        cmp.render_text().contains("(flaky"),
        "{}",
        cmp.render_text()
    );
}
