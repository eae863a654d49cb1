//! The workspace's documents keep their promises: every measured number in `bench/README.md`
//! sits in an entry that names its date, machine, commit and command; the README stays a
//! reference (at most 450 lines, its layout naming every crate); and every relative link of
//! `README.md`, `docs/` and `bench/README.md` reaches a file and heading that exist. These live
//! here, beside the README's variable-table test, because this crate builds in seconds.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Units after which a number is a measurement (`12 s`, `3.5 ms`, `1.11×`, `7.8%`).
const UNITS: [&str; 11] = [
    "ms", "µs", "s", "min", "KB", "MB", "GB", "%", "×", "core-s", "cores",
];

/// The first measured number in `line`, if any: a number followed (after at most one space)
/// by one of [`UNITS`] that is not the start of a longer word.
fn measured_number(line: &str) -> Option<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_alphanumeric());
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.' || chars[j] == ',') {
            j += 1;
        }
        let number: String = chars[i..j].iter().collect();
        let mut k = j;
        if k < chars.len() && chars[k] == ' ' {
            k += 1;
        }
        let rest: String = chars[k..].iter().collect();
        for unit in UNITS {
            if let Some(after) = rest.strip_prefix(unit) {
                if !after.chars().next().is_some_and(char::is_alphanumeric) {
                    return Some(format!("{number} {unit}"));
                }
            }
        }
        i = j;
    }
    None
}

/// `Run: YYYY-MM-DD · machine · commit HASH[ …]`.
fn is_run_line(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("Run: ") else {
        return false;
    };
    let parts: Vec<&str> = rest.split(" · ").collect();
    let [date, machine, commit] = parts[..] else {
        return false;
    };
    let date_ok = date.len() == 10
        && date.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        });
    let hash = commit
        .strip_prefix("commit ")
        .and_then(|c| c.split([' ', ',']).next())
        .unwrap_or_default();
    date_ok
        && !machine.trim().is_empty()
        && hash.len() >= 7
        && hash.chars().all(|c| c.is_ascii_hexdigit())
}

/// What is wrong with a bench document: each `### ` entry needs a `Run:` line and a command
/// (a `Command:` line with a code span, or a fenced `sh` block); outside entries (the preamble
/// and the `## ` group headings) no measured number may appear.
fn bench_problems(text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut entry: Option<(String, bool, bool)> = None;
    let close = |entry: &mut Option<(String, bool, bool)>, problems: &mut Vec<String>| {
        if let Some((title, run, command)) = entry.take() {
            if !run {
                problems.push(format!(
                    "`{title}`: no `Run: DATE · MACHINE · commit HASH` line"
                ));
            }
            if !command {
                problems.push(format!("`{title}`: no `Command: `…`` line or ```sh block"));
            }
        }
    };
    let mut in_fence = false;
    for line in text.lines() {
        if line.starts_with("```") {
            if !in_fence && line.trim() == "```sh" {
                if let Some(e) = entry.as_mut() {
                    e.2 = true;
                }
            }
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some(title) = line.strip_prefix("### ") {
            close(&mut entry, &mut problems);
            entry = Some((title.to_string(), false, false));
            continue;
        }
        if line.starts_with("## ") || line.starts_with("# ") {
            close(&mut entry, &mut problems);
            continue;
        }
        match entry.as_mut() {
            Some(e) => {
                if is_run_line(line) {
                    e.1 = true;
                } else if line.starts_with("Run:") {
                    problems.push(format!("`{}`: malformed run line: {line}", e.0));
                }
                if line.starts_with("Command: ") && line.contains('`') {
                    e.2 = true;
                }
            }
            None => {
                if let Some(n) = measured_number(line) {
                    problems.push(format!("a measured number ({n}) outside an entry: {line}"));
                }
            }
        }
    }
    close(&mut entry, &mut problems);
    problems
}

#[test]
fn every_bench_number_names_its_date_machine_commit_and_command() {
    let text = read(&workspace().join("bench/README.md"));
    let entries = text.lines().filter(|l| l.starts_with("### ")).count();
    assert!(entries >= 10, "bench/README.md has its entries ({entries})");
    let problems = bench_problems(&text);
    assert!(
        problems.is_empty(),
        "bench/README.md breaks its convention:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_bench_check_catches_what_it_should() {
    let good = "# t\n\nIntro.\n\n## Group\n\n### A\n\nRun: 2026-12-04 · 2-core · commit aa8793e\n\
                Command: `bench/serve.sh 100 2`\n\n209.3 s against 188.2 s.\n\n### B\n\n\
                Run: 2026-12-01 · 2-core, loaded · commit 0393096 (main)\n\n```sh\nbench/x.sh\n```\n\n1.2 ms.\n";
    assert_eq!(bench_problems(good), Vec::<String>::new());
    let no_command = "### A\n\nRun: 2026-12-04 · m · commit aa8793e\n\n12 s.\n";
    assert_eq!(bench_problems(no_command).len(), 1);
    let no_run = "### A\n\nCommand: `x`\n\n12 s.\n";
    assert_eq!(bench_problems(no_run).len(), 1);
    let bad_run = "### A\n\nRun: yesterday · m · commit aa8793e\nCommand: `x`\n";
    assert_eq!(bench_problems(bad_run).len(), 2);
    let stray = "# t\n\nIt took 12.5 s once.\n\n### A\n\nRun: 2026-12-04 · m · commit abcdef0\nCommand: `x`\n";
    assert_eq!(bench_problems(stray).len(), 1);
    assert_eq!(measured_number("1.11× of the floor"), Some("1.11 ×".into()));
    assert_eq!(measured_number("v0.1.4 and 148 tasks, 2-core"), None);
    assert_eq!(measured_number("p50 21.7 ms"), Some("21.7 ms".into()));
}

#[test]
fn the_readme_is_a_reference_that_names_every_crate() {
    let readme = read(&workspace().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 450,
        "README.md has {lines} lines: design goes to docs/, numbers to bench/README.md"
    );
    let layout = readme
        .split("\n## Layout")
        .nth(1)
        .expect("README.md has a `## Layout` section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut missing = Vec::new();
    for dir in std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .flatten()
    {
        let name = dir.file_name().to_string_lossy().into_owned();
        if dir.path().join("Cargo.toml").exists() && !layout.contains(&format!("`{name}`")) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "README's layout misses {missing:?}");
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut in_fence = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// Relative link targets `](target)` of a markdown text.
fn links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(str::to_string)
        .filter(|t| !t.starts_with("http") && !t.starts_with("mailto:"))
        .collect()
}

#[test]
fn document_links_reach_files_and_headings_that_exist() {
    let root = workspace();
    let mut files = vec![root.join("README.md"), root.join("bench/README.md")];
    if let Ok(dir) = std::fs::read_dir(root.join("docs")) {
        files.extend(
            dir.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md")),
        );
    }
    let mut broken = Vec::new();
    for file in &files {
        let text = read(file);
        for target in links(&text) {
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let dest = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            if !dest.exists() {
                broken.push(format!("{}: {target} (no such file)", file.display()));
                continue;
            }
            if !anchor.is_empty()
                && dest.extension().is_some_and(|x| x == "md")
                && !anchors(&read(&dest)).contains(anchor)
            {
                broken.push(format!("{}: {target} (no such heading)", file.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
