//! The report as one self-contained HTML page: inline CSS, inline SVG charts drawn here, a
//! little inline script for sorting, filtering, the theme switch and the task view. Nothing
//! is fetched: the per-task detail (prompt, code, tracebacks) is embedded as gzip+base64 and
//! inflated by the browser's own `DecompressionStream` when a task is opened.

use std::fmt::Write as _;
use std::io::Write as _;

use base64::Engine as _;
use serde_json::{json, Value};

use crate::classify::FailureClass;
use crate::results::RunResults;
use crate::stats::Estimate;
use crate::summary::{Report, TaskInfo};

/// Characters of one traceback kept in the page (the tail, where the exception is).
const TRACEBACK_KEEP: usize = 4000;

/// Renders the page. `runs` and `tasks` are those the report was built from (for the
/// embedded code, tracebacks and prompts).
pub fn render(report: &Report, runs: &[RunResults], tasks: &[TaskInfo], title: &str) -> String {
    let mut h = String::with_capacity(1 << 20);
    h.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    // No network, ever: also forbids anything a future edit might add by mistake.
    h.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">");
    let _ = write!(
        h,
        "<title>{}</title><style>{CSS}</style></head><body>",
        esc(title)
    );
    let _ = write!(
        h,
        "<header><h1>{}</h1><button id=\"theme\" type=\"button\" title=\"Switch dark/light\">◐ theme</button></header>",
        esc(title)
    );
    let n_tasks = report.tasks.len();
    let _ = write!(
        h,
        "<p class=\"muted\">{} result file{} · {} tasks · intervals are 95% percentile-bootstrap over tasks (seeded) · environment failures are counted apart: they are not the model's fault.</p>",
        report.models.len(),
        if report.models.len() == 1 { "" } else { "s" },
        n_tasks
    );
    legend(&mut h, report);
    headline(&mut h, report);
    h.push_str("<div class=\"grid\">");
    h.push_str("<section><h2>pass@1 by domain</h2>");
    let domain_rows: Vec<(String, usize, Vec<Option<Estimate>>)> = report
        .domains
        .iter()
        .map(|d| (d.name.clone(), d.tasks, d.pass_at_1.clone()))
        .collect();
    estimate_bars(&mut h, &domain_rows, report.models.len());
    h.push_str("</section><section><h2>Failures by class</h2>");
    class_bars(&mut h, report, false);
    h.push_str("<h3>Environment (not the model's fault)</h3>");
    class_bars(&mut h, report, true);
    h.push_str("</section></div>");
    strip(&mut h, report);
    disagreements(&mut h, report);
    libraries(&mut h, report);
    task_table(&mut h, report);
    h.push_str("<dialog id=\"detail\"><form method=\"dialog\"><button class=\"close\" title=\"Close\">✕</button></form><div id=\"detail-body\"></div></dialog>");
    let _ = write!(
        h,
        "<script id=\"models\" type=\"application/json\">{}</script>",
        script_json(&json!(report
            .models
            .iter()
            .map(|m| &m.name)
            .collect::<Vec<_>>()))
    );
    let _ = write!(
        h,
        "<script id=\"data\" type=\"application/octet-stream\">{}</script>",
        detail_blob(report, runs, tasks)
    );
    let _ = writeln!(h, "<script>{JS}</script></body></html>");
    h
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// JSON inside a `<script>`: `</` must not appear.
fn script_json(v: &Value) -> String {
    v.to_string().replace("</", "<\\/")
}

fn pct(x: f64) -> String {
    format!("{:.1}", 100.0 * x)
}

/// A model's colour swatch (its place in the report, mod 8) and `label` (escaped).
fn swatch(i: usize, label: &str) -> String {
    format!("<i class=\"sw m{}\"></i>{}", i % 8, esc(label))
}

/// One `<th>` per model: its swatch, `prefix` and its name.
fn model_headers(h: &mut String, report: &Report, prefix: &str) {
    for (i, m) in report.models.iter().enumerate() {
        let _ = write!(h, "<th>{}</th>", swatch(i, &format!("{prefix}{}", m.name)));
    }
}

fn legend(h: &mut String, report: &Report) {
    h.push_str("<div class=\"legend\">");
    for (i, m) in report.models.iter().enumerate() {
        let _ = write!(h, "<span>{}</span>", swatch(i, &m.name));
    }
    h.push_str("</div>");
}

fn headline(h: &mut String, report: &Report) {
    let ks = report.ks();
    h.push_str("<section><h2>pass@k</h2><table class=\"headline\"><thead><tr><th>model</th><th>date</th><th>tasks</th><th>samples</th>");
    for k in &ks {
        let _ = write!(h, "<th>pass@{k} [95% CI]</th>");
    }
    h.push_str("<th>pass@1 w/o env failures</th><th>env failures</th><th>flaky tasks</th></tr></thead><tbody>");
    for (i, m) in report.models.iter().enumerate() {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            swatch(i, &m.name),
            esc(&m.date),
            m.tasks,
            m.samples
        );
        for k in &ks {
            match m.pass_at_k.iter().find(|(kk, _)| kk == k) {
                Some((_, e)) => {
                    let _ = write!(
                        h,
                        "<td><b>{}</b> <span class=\"muted\">[{}, {}]</span></td>",
                        pct(e.value),
                        pct(e.low),
                        pct(e.high)
                    );
                }
                None => h.push_str("<td>-</td>"),
            }
        }
        let w = m.pass_at_1_without_env.map_or("-".into(), |e| {
            format!(
                "{} <span class=\"muted\">[{}, {}]</span>",
                pct(e.value),
                pct(e.low),
                pct(e.high)
            )
        });
        let _ = write!(
            h,
            "<td>{w}</td><td>{}</td><td>{}</td></tr>",
            m.env_failures, m.flaky
        );
    }
    h.push_str("</tbody></table></section>");
}

/// Horizontal grouped bars (one per model) with interval whiskers, values in percent.
fn estimate_bars(h: &mut String, rows: &[(String, usize, Vec<Option<Estimate>>)], n_models: usize) {
    let (label_w, bar_w, bar_h, gap) = (150.0, 400.0, 12.0, 10.0);
    let group_h = bar_h * n_models as f64 + gap;
    let height = group_h * rows.len() as f64 + 24.0;
    let width = label_w + bar_w + 60.0;
    let _ = write!(
        h,
        "<svg class=\"chart\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"pass@1 by group\">"
    );
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let x = label_w + t * bar_w;
        let _ = write!(
            h,
            "<line class=\"grid\" x1=\"{x}\" x2=\"{x}\" y1=\"0\" y2=\"{}\"/><text class=\"tick\" x=\"{x}\" y=\"{}\">{}%</text>",
            height - 16.0,
            height - 4.0,
            (t * 100.0) as u32
        );
    }
    for (r, (name, tasks, ests)) in rows.iter().enumerate() {
        let y0 = r as f64 * group_h;
        let _ = write!(
            h,
            "<text class=\"label\" x=\"{}\" y=\"{}\">{} <tspan class=\"muted\">({tasks})</tspan></text>",
            label_w - 6.0,
            y0 + group_h / 2.0,
            esc(name)
        );
        for (m, e) in ests.iter().enumerate() {
            let Some(e) = e else { continue };
            let y = y0 + m as f64 * bar_h;
            let _ = write!(
                h,
                "<rect class=\"m{}\" x=\"{label_w}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\"><title>{}: {}% [{}, {}]</title></rect>",
                m % 8,
                e.value * bar_w,
                bar_h - 2.0,
                esc(name),
                pct(e.value),
                pct(e.low),
                pct(e.high)
            );
            let (xl, xh, ym) = (
                label_w + e.low * bar_w,
                label_w + e.high * bar_w,
                y + (bar_h - 2.0) / 2.0,
            );
            let _ = write!(
                h,
                "<line class=\"ci\" x1=\"{xl:.1}\" x2=\"{xh:.1}\" y1=\"{ym}\" y2=\"{ym}\"/><text class=\"val\" x=\"{:.1}\" y=\"{}\">{}</text>",
                label_w + e.high.max(e.value) * bar_w + 4.0,
                y + bar_h - 3.0,
                pct(e.value)
            );
        }
    }
    h.push_str("</svg>");
}

fn class_bars(h: &mut String, report: &Report, environment: bool) {
    let rows: Vec<_> = report
        .classes
        .iter()
        .filter(|c| c.environment == environment && c.counts.iter().any(|&n| n > 0))
        .collect();
    if rows.is_empty() {
        h.push_str("<p class=\"muted\">none</p>");
        return;
    }
    let max = rows
        .iter()
        .flat_map(|c| c.counts.iter().copied())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let n_models = report.models.len();
    let (label_w, bar_w, bar_h, gap) = (230.0, 300.0, 12.0, 8.0);
    let group_h = bar_h * n_models as f64 + gap;
    let height = group_h * rows.len() as f64;
    let _ = write!(
        h,
        "<svg class=\"chart\" viewBox=\"0 0 {} {height}\" role=\"img\" aria-label=\"failures by class\">",
        label_w + bar_w + 60.0
    );
    for (r, c) in rows.iter().enumerate() {
        let y0 = r as f64 * group_h;
        let _ = write!(
            h,
            "<rect class=\"c-{}\" x=\"0\" y=\"{}\" width=\"8\" height=\"8\"/><text class=\"label\" x=\"{}\" y=\"{}\">{}</text>",
            c.key,
            y0 + group_h / 2.0 - 8.0,
            label_w - 6.0,
            y0 + group_h / 2.0,
            esc(c.label)
        );
        for (m, &n) in c.counts.iter().enumerate() {
            let y = y0 + m as f64 * bar_h;
            let example = c.examples[m]
                .as_ref()
                .map_or(String::new(), |(t, e)| format!(" — e.g. {t}: {e}"));
            let _ = write!(
                h,
                "<rect class=\"m{}\" x=\"{label_w}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\"><title>{}: {n}{}</title></rect><text class=\"val\" x=\"{:.1}\" y=\"{}\">{n}</text>",
                m % 8,
                n as f64 / max * bar_w,
                bar_h - 2.0,
                esc(&report.models[m].name),
                esc(&example),
                label_w + n as f64 / max * bar_w + 4.0,
                y + bar_h - 3.0
            );
        }
    }
    h.push_str("</svg>");
    if !environment {
        if let Some(other) = report
            .classes
            .iter()
            .find(|c| c.class == FailureClass::OtherException)
        {
            let top: Vec<String> = other
                .exception_types
                .iter()
                .take(10)
                .map(|(t, n)| format!("{} {n}", esc(t)))
                .collect();
            if !top.is_empty() {
                let _ = write!(
                    h,
                    "<p class=\"muted small\">Other exceptions: {}</p>",
                    top.join(" · ")
                );
            }
        }
    }
}

fn class_of_verdict(v: &Option<crate::summary::TaskVerdict>) -> &'static str {
    match v {
        None => "none",
        Some(v) => v.class().map_or("pass", FailureClass::key),
    }
}

/// One row per model, one cell per task, coloured by the task's class.
fn strip(h: &mut String, report: &Report) {
    let n = report.tasks.len().max(1);
    h.push_str("<section><h2>Every task, every model</h2><p class=\"muted small\">One column per task in dataset order; colour = pass or failure class; click a column to open the task.</p><div class=\"strip\">");
    for (m, model) in report.models.iter().enumerate() {
        let _ = write!(
            h,
            "<div class=\"strip-row\"><span class=\"strip-label\">{}</span><svg viewBox=\"0 0 {n} 1\" preserveAspectRatio=\"none\" data-m=\"{m}\">",
            esc(&model.name)
        );
        for (i, t) in report.tasks.iter().enumerate() {
            let class = class_of_verdict(&t.verdicts[m]);
            let _ = write!(
                h,
                "<rect x=\"{i}\" width=\"1\" height=\"1\" class=\"c-{class}\" data-t=\"{}\"><title>{}: {class}</title></rect>",
                esc(&t.task_id),
                esc(&t.task_id)
            );
        }
        h.push_str("</svg></div>");
    }
    h.push_str("</div><div class=\"legend small\">");
    let _ = write!(h, "<span><i class=\"sw c-pass\"></i>pass</span>");
    per_class(h, |key, label| {
        format!("<span><i class=\"sw c-{key}\"></i>{label}</span>")
    });
    h.push_str("</div></section>");
}

/// One piece of markup per failure class, in display order, from its key and escaped label.
fn per_class(h: &mut String, piece: impl Fn(&str, &str) -> String) {
    for c in FailureClass::ALL {
        h.push_str(&piece(c.key(), &esc(c.label())));
    }
}

fn verdict_cell(v: &Option<crate::summary::TaskVerdict>) -> String {
    match v {
        None => "<td class=\"muted\" data-sort=\"-1\">-</td>".into(),
        Some(v) => {
            let class = v.class().map_or("pass", FailureClass::key);
            let flaky = if v.flaky {
                " <span class=\"flaky\" title=\"verdict changed on re-run\">flaky</span>"
            } else {
                ""
            };
            format!(
                "<td data-sort=\"{:.4}\"><i class=\"sw c-{class}\"></i>{}/{} {}{flaky}</td>",
                v.passed as f64 / v.n.max(1) as f64,
                v.passed,
                v.n,
                esc(&class.replace('_', " "))
            )
        }
    }
}

fn task_link(id: &str) -> String {
    format!(
        "<a href=\"#task/{}\" class=\"task\">{}</a>",
        esc(id),
        esc(id)
    )
}

fn disagreements(h: &mut String, report: &Report) {
    if report.models.len() < 2 {
        return;
    }
    let rows: Vec<_> = report.disagreements().collect();
    let _ = write!(
        h,
        "<section><h2>Tasks where the models disagree ({})</h2><div class=\"scroll short\"><table class=\"sortable\"><thead><tr><th>task</th><th>domains</th>",
        rows.len()
    );
    model_headers(h, report, "");
    h.push_str("</tr></thead><tbody>");
    for t in rows {
        let _ = write!(
            h,
            "<tr><td data-sort=\"{}\">{}</td><td>{}</td>",
            bcb_dataset::task_number(&t.task_id).unwrap_or(0),
            task_link(&t.task_id),
            t.domains
                .iter()
                .map(|d| d.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for v in &t.verdicts {
            h.push_str(&verdict_cell(v));
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table></div></section>");
}

fn libraries(h: &mut String, report: &Report) {
    let _ = write!(
        h,
        "<section><h2>Libraries ({})</h2><div class=\"scroll short\"><table class=\"sortable\"><thead><tr><th>library</th><th>tasks</th>",
        report.libraries.len()
    );
    model_headers(h, report, "pass@1 ");
    h.push_str("</tr></thead><tbody>");
    for r in &report.libraries {
        let _ = write!(
            h,
            "<tr><td>{}</td><td data-sort=\"{}\">{}</td>",
            esc(&r.name),
            r.tasks,
            r.tasks
        );
        for e in &r.pass_at_1 {
            match e {
                Some(e) => {
                    let _ = write!(
                        h,
                        "<td data-sort=\"{:.4}\">{} <span class=\"muted\">[{}, {}]</span></td>",
                        e.value,
                        pct(e.value),
                        pct(e.low),
                        pct(e.high)
                    );
                }
                None => h.push_str("<td data-sort=\"-1\">-</td>"),
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table></div></section>");
}

fn task_table(h: &mut String, report: &Report) {
    h.push_str("<section><h2>All tasks</h2><div class=\"filters\"><input id=\"q\" type=\"search\" placeholder=\"filter: task, library, domain…\" aria-label=\"filter\"><select id=\"cls\" aria-label=\"class\"><option value=\"\">any verdict</option><option value=\"fail\">any failure</option><option value=\"disagree\">models disagree</option><option value=\"env\">environment</option><option value=\"flaky\">flaky</option>");
    per_class(h, |key, label| {
        format!("<option value=\"{key}\">{label}</option>")
    });
    h.push_str("</select><span id=\"shown\" class=\"muted\"></span></div><div class=\"scroll\"><table id=\"tasks\" class=\"sortable\"><thead><tr><th>task</th><th>domains</th><th>libraries</th><th>solve rate</th>");
    model_headers(h, report, "");
    h.push_str("</tr></thead><tbody>");
    for t in &report.tasks {
        let classes: Vec<&str> = t.verdicts.iter().map(class_of_verdict).collect();
        let mut tags: Vec<&str> = classes.clone();
        if classes.iter().any(|c| *c != "pass" && *c != "none") {
            tags.push("fail");
        }
        if t.disagreement {
            tags.push("disagree");
        }
        if classes.iter().any(|c| c.starts_with("env_")) {
            tags.push("env");
        }
        if t.verdicts.iter().flatten().any(|v| v.flaky) {
            tags.push("flaky");
        }
        let domains = t
            .domains
            .iter()
            .map(|d| d.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let libs = t.libs.join(", ");
        let _ = write!(
            h,
            "<tr data-tags=\"{}\" data-text=\"{}\"><td data-sort=\"{}\">{}</td><td>{}</td><td class=\"small\">{}</td><td data-sort=\"{:.4}\">{}%</td>",
            tags.join(" "),
            esc(&format!("{} {} {}", t.task_id, domains, libs).to_lowercase()),
            bcb_dataset::task_number(&t.task_id).unwrap_or(0),
            task_link(&t.task_id),
            esc(&domains),
            esc(&libs),
            t.solve_rate,
            pct(t.solve_rate)
        );
        for v in &t.verdicts {
            h.push_str(&verdict_cell(v));
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table></div></section>");
}

/// `{task_id: {p: prompt, m: [[{s, c, d: [[test, tb]], f}] per sample] per model}}`, gzip, base64.
fn detail_blob(report: &Report, runs: &[RunResults], tasks: &[TaskInfo]) -> String {
    let prompts: std::collections::HashMap<&str, &str> = tasks
        .iter()
        .map(|t| (t.task_id.as_str(), t.prompt.as_str()))
        .collect();
    let by_task: Vec<_> = runs.iter().map(RunResults::by_task).collect();
    let mut all = serde_json::Map::new();
    for row in &report.tasks {
        let models: Vec<Value> = by_task
            .iter()
            .zip(&row.verdicts)
            .map(|(m, verdict)| {
                let Some(samples) = m.get(row.task_id.as_str()) else {
                    return Value::Null;
                };
                let list: Vec<Value> = samples
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let class = verdict
                            .as_ref()
                            .and_then(|v| v.failures.get(i).cloned().flatten())
                            .map(|f| f.class.label());
                        let details: Vec<Value> = s
                            .details
                            .iter()
                            .map(|(k, tb)| json!([k, tail(tb, TRACEBACK_KEEP)]))
                            .collect();
                        json!({"s": s.status.as_str(), "k": class, "c": s.solution, "d": details, "f": s.flaky})
                    })
                    .collect();
                Value::Array(list)
            })
            .collect();
        all.insert(
            row.task_id.clone(),
            json!({"p": prompts.get(row.task_id.as_str()).copied().unwrap_or(""), "m": models}),
        );
    }
    let raw = Value::Object(all).to_string();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(raw.as_bytes()).expect("in-memory gzip");
    let bytes = gz.finish().expect("in-memory gzip");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn tail(s: &str, keep: usize) -> String {
    let n = s.chars().count();
    if n <= keep {
        return s.to_string();
    }
    let t: String = s.chars().skip(n - keep).collect();
    format!("… ({} characters cut)\n{t}", n - keep)
}

/// The page's stylesheet and script, inlined into every report (no network).
const CSS: &str = include_str!("html/report.css");
const JS: &str = include_str!("html/report.js");
