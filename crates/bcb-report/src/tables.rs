//! The report's tables as Markdown, CSV (one tidy table) and JSON.

use std::fmt::Write as _;

use crate::stats::Estimate;
use crate::summary::Report;

fn pct(e: &Estimate) -> String {
    format!(
        "{:.1} [{:.1}, {:.1}]",
        100.0 * e.value,
        100.0 * e.low,
        100.0 * e.high
    )
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Markdown: headline, failure classes (environment apart), domains, libraries, disagreements.
pub fn render_markdown(report: &Report) -> String {
    let mut s = String::new();
    let names: Vec<&str> = report.models.iter().map(|m| m.name.as_str()).collect();
    // The models' header cells, and the rule under them.
    let name_cells = names.iter().map(|n| md_cell(n)).collect::<Vec<_>>();
    let (name_cells, rule) = (name_cells.join(" | "), "---|".repeat(names.len()));
    let ks = report.ks();
    let _ = writeln!(
        s,
        "# BigCodeBench report\n\n## pass@k (95% bootstrap interval)\n"
    );
    let mut head = String::from("| model | tasks | samples |");
    for k in &ks {
        let _ = write!(head, " pass@{k} |");
    }
    head.push_str(" pass@1 without env failures | env failures | flaky tasks |");
    let _ = writeln!(s, "{head}\n|{}", "---|".repeat(6 + ks.len()));
    for m in &report.models {
        let _ = write!(s, "| {} | {} | {} |", md_cell(&m.name), m.tasks, m.samples);
        for k in &ks {
            let cell = m
                .pass_at_k
                .iter()
                .find(|(kk, _)| kk == k)
                .map_or("-".into(), |(_, e)| pct(e));
            let _ = write!(s, " {cell} |");
        }
        let _ = writeln!(
            s,
            " {} | {} | {} |",
            m.pass_at_1_without_env.as_ref().map_or("-".into(), pct),
            m.env_failures,
            m.flaky
        );
    }
    for (title, env) in [
        ("Failures by class (the model's)", false),
        ("Failures caused by the environment (not the model's)", true),
    ] {
        let _ = writeln!(s, "\n## {title}\n");
        let _ = writeln!(s, "| class | {} | example |\n|---|{}---|", name_cells, rule);
        for c in report.classes.iter().filter(|c| c.environment == env) {
            let counts: Vec<String> = c.counts.iter().map(usize::to_string).collect();
            let example = c
                .examples
                .iter()
                .flatten()
                .next()
                .map_or(String::new(), |(t, e)| format!("{t}: {e}"));
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                c.label,
                counts.join(" | "),
                md_cell(&example)
            );
        }
    }
    if let Some(other) = report
        .classes
        .iter()
        .find(|c| c.class == crate::FailureClass::OtherException)
    {
        if !other.exception_types.is_empty() {
            let top: Vec<String> = other
                .exception_types
                .iter()
                .take(12)
                .map(|(t, n)| format!("{t} {n}"))
                .collect();
            let _ = writeln!(s, "\nOther exceptions by type: {}", top.join(", "));
        }
    }
    for (title, rows) in [
        ("Domains", &report.domains),
        ("Libraries", &report.libraries),
    ] {
        let _ = writeln!(s, "\n## {title}: pass@1 (95% interval)\n");
        let _ = writeln!(
            s,
            "| {} | tasks | {} |\n|---|---|{}",
            title.trim_end_matches('s').to_lowercase(),
            name_cells,
            rule
        );
        for r in rows.iter() {
            let cells: Vec<String> = r
                .pass_at_1
                .iter()
                .map(|e| e.as_ref().map_or("-".into(), pct))
                .collect();
            let _ = writeln!(s, "| {} | {} | {} |", r.name, r.tasks, cells.join(" | "));
        }
    }
    if report.models.len() > 1 {
        let dis: Vec<_> = report.disagreements().collect();
        let _ = writeln!(s, "\n## Tasks where the models disagree ({})\n", dis.len());
        let _ = writeln!(s, "| task | {} |\n|---|{}", name_cells, rule);
        for t in dis {
            let cells: Vec<String> = t
                .verdicts
                .iter()
                .map(|v| match v {
                    None => "-".into(),
                    Some(v) => match v.class() {
                        None => "pass".into(),
                        Some(c) => c.key().into(),
                    },
                })
                .collect();
            let _ = writeln!(s, "| {} | {} |", t.task_id, cells.join(" | "));
        }
    }
    s
}

/// One tidy CSV: `table,model,key,tasks,value,low,high,count,example`.
pub fn render_csv(report: &Report) -> String {
    let mut s = String::from("table,model,key,tasks,value,low,high,count,example\n");
    let f = |x: f64| format!("{x:.6}");
    // A row of an estimate over `tasks`, with its interval.
    let estimate = |s: &mut String, [table, model, key]: [&str; 3], tasks: usize, e: &Estimate| {
        let tasks = tasks.to_string();
        let (value, low, high) = (f(e.value), f(e.low), f(e.high));
        csv_row(s, [table, model, key, &tasks, &value, &low, &high, "", ""]);
    };
    for m in &report.models {
        for (k, e) in &m.pass_at_k {
            let key = format!("pass@{k}");
            estimate(&mut s, ["pass_at_k", &m.name, &key], m.tasks, e);
        }
    }
    for c in &report.classes {
        for (i, m) in report.models.iter().enumerate() {
            let example = c.examples[i]
                .as_ref()
                .map_or(String::new(), |(t, e)| format!("{t}: {e}"));
            let table = if c.environment {
                "environment"
            } else {
                "failure_class"
            };
            let count = c.counts[i].to_string();
            csv_row(
                &mut s,
                [table, &m.name, c.key, "", "", "", "", &count, &example],
            );
        }
    }
    for (table, rows) in [("domain", &report.domains), ("library", &report.libraries)] {
        for r in rows.iter() {
            for (i, m) in report.models.iter().enumerate() {
                let Some(e) = &r.pass_at_1[i] else { continue };
                estimate(&mut s, [table, &m.name, &r.name], r.tasks, e);
            }
        }
    }
    for t in &report.tasks {
        for (i, m) in report.models.iter().enumerate() {
            let Some(v) = &t.verdicts[i] else { continue };
            let class = v.class().map_or("pass", |c| c.key());
            let (rate, n) = (f(v.passed as f64 / v.n.max(1) as f64), v.n.to_string());
            csv_row(
                &mut s,
                ["task", &m.name, &t.task_id, "", &rate, "", "", &n, class],
            );
            if v.flaky {
                // Flaky verdicts apart: a rerun changed one of this task's verdicts.
                let flaky = ["flaky", &m.name, &t.task_id, "", "", "", "", "1", class];
                csv_row(&mut s, flaky);
            }
        }
    }
    s
}

/// The whole report model as JSON (pretty, stable key order).
pub fn render_json(report: &Report) -> String {
    serde_json::to_string_pretty(report).expect("the report serializes")
}

/// One CSV line of `cells`.
fn csv_row(s: &mut String, cells: [&str; 9]) {
    let cells: Vec<String> = cells.iter().map(|c| csv_cell(c)).collect();
    s.push_str(&cells.join(","));
    s.push('\n');
}

/// RFC 4180 quoting where needed.
pub fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The terminal summary by failure class (used by `report` and `inspect`).
pub fn render_class_summary(report: &Report) -> String {
    let mut s = String::new();
    for (i, m) in report.models.iter().enumerate() {
        let p1 = m
            .pass_at_k
            .iter()
            .find(|(k, _)| *k == 1)
            .map_or("-".into(), |(_, e)| pct(e));
        let _ = writeln!(s, "{}: {} tasks, pass@1 {p1}", m.name, m.tasks);
        for env in [false, true] {
            let rows: Vec<_> = report
                .classes
                .iter()
                .filter(|c| c.environment == env && c.counts[i] > 0)
                .collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(
                s,
                "  {}",
                if env {
                    "environment (not the model's fault):"
                } else {
                    "failures by class:"
                }
            );
            for c in rows {
                let example = c.examples[i]
                    .as_ref()
                    .map_or(String::new(), |(t, e)| format!("{t}: {e}"));
                let example: String = example.chars().take(110).collect();
                let _ = writeln!(s, "    {:>5}  {:<34} e.g. {example}", c.counts[i], c.label);
            }
        }
    }
    s
}
