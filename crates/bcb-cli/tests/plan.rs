//! `bcb plan` on the real dataset: one row per machines × cores, the note when one task alone
//! keeps a shard above total / N, measured timings from a journal, and a clear error for a
//! file that is not one.

mod evalkit;

use evalkit::stderr;

#[test]
fn plan_prints_a_row_per_shape_and_reads_measured_timings() {
    let Some(env) = evalkit::env() else { return };
    let out = env.run(&[
        "plan",
        "--subset",
        "hard",
        "--machines",
        "1,4",
        "--cores",
        "1,2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() > 2 && w[0].parse::<usize>().is_ok() && w[1].parse::<usize>().is_ok())
        .collect();
    let shapes: Vec<(&str, &str)> = rows.iter().map(|w| (w[0], w[1])).collect();
    assert_eq!(
        shapes,
        [("1", "1"), ("4", "1"), ("1", "2"), ("4", "2")],
        "{text}"
    );
    assert!(
        text.contains("note: N = 4") && text.contains("one task alone"),
        "{text}"
    );

    // A journal's measured times replace the shipped ones for its jobs.
    let journal = env.path("gt.jsonl");
    std::fs::write(
        &journal,
        concat!(
            "{\"bcb_journal\":2,\"key\":\"k\"}\n",
            "{\"id\":{\"task_id\":\"BigCodeBench/13\",\"program\":\"ground_truth\",\"digest\":\"d\"},\"status\":\"pass\",\"details\":{},\"test_secs\":999.0,\"wall_secs\":1000.0}\n"
        ),
    )
    .unwrap();
    let out = env.run(&[
        "plan",
        "--ids",
        "13,15",
        "--machines",
        "1",
        "--cores",
        "2",
        "--timings",
        journal.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1 measured") && text.contains("1003.0s"),
        "{text}"
    );

    let out = env.run(&["plan", "--timings", "/dev/null"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not a bcb journal") && stderr(&out).contains("hint:"));
}
