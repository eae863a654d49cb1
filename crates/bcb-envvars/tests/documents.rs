//! The workspace's documents keep their promises: every measured number in `bench/README.md`
//! sits in an entry that names its date, machine, commit and command; its claims table lists
//! every file of `bench/` (a script in the command column, or a helper a listed script names),
//! gives every `bench/` script that `README.md` or `docs/` names a row, and links each claim's
//! latest entry; the README stays a reference (at most 450 lines, its layout naming every
//! crate); and every relative link of `README.md`, `docs/` and `bench/README.md` reaches a file
//! and heading that exist. These live here, beside the README's variable-table test, because
//! this crate builds in seconds.

use std::collections::{BTreeMap, BTreeSet};
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
/// and the `## ` group headings) no measured number may appear, but for the `threshold` column
/// of a table (a target, not a measurement).
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
    // The `threshold` column of the table being read, outside entries.
    let mut threshold: Option<usize> = None;
    for line in text.lines() {
        if !line.starts_with('|') {
            threshold = None;
        }
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
                let mut checked = line.to_string();
                if line.starts_with('|') {
                    let mut row = cells(line);
                    if threshold.is_none() {
                        threshold = row.iter().position(|c| c == "threshold");
                    } else if let Some(col) = threshold.filter(|&c| c < row.len()) {
                        row.remove(col);
                    }
                    checked = row.join(" | ");
                }
                if let Some(n) = measured_number(&checked) {
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
    let target = "# t\n\n| claim | threshold |\n|---|---|\n| fast | ≤ 1.1× the floor |\n";
    assert_eq!(bench_problems(target), Vec::<String>::new());
    let stray_cell = "# t\n\n| claim | threshold |\n|---|---|\n| took 12 s | ≤ 1.1× |\n";
    assert_eq!(bench_problems(stray_cell).len(), 1);
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

/// The cells of a Markdown table row (`| a | b |`), trimmed; an escaped `\|` stays in its cell.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = match inner.strip_suffix('|') {
        Some(rest) if !rest.ends_with('\\') => rest,
        _ => inner,
    };
    let mut out = vec![String::new()];
    let mut escaped = false;
    for c in inner.chars() {
        if c == '|' && !escaped {
            out.push(String::new());
        } else {
            out.last_mut().expect("one cell at least").push(c);
        }
        escaped = c == '\\';
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The first table of `text` whose header row starts with the cell `first`: its header and its
/// rows (the separator row left out).
fn table(text: &str, first: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = Vec::new();
    let mut rows = Vec::new();
    for line in text.lines() {
        if !line.starts_with('|') {
            if !header.is_empty() {
                break;
            }
            continue;
        }
        let row = cells(line);
        if header.is_empty() {
            if row.first().is_some_and(|c| c == first) {
                header = row;
            }
        } else if !row
            .iter()
            .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
        {
            rows.push(row);
        }
    }
    (header, rows)
}

/// What each `bench/NAME` in `text` names: a file or folder of `bench/` (`seccomp` for
/// `bench/seccomp/x.json`), a sentence's closing full stop left out.
fn bench_names(text: &str) -> Vec<String> {
    let part = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '-');
    text.match_indices("bench/")
        .filter(|(i, _)| !text[..*i].chars().next_back().is_some_and(part))
        .map(|(i, _)| {
            let name: String = text[i + "bench/".len()..]
                .chars()
                .take_while(|&c| part(c))
                .collect();
            name.trim_end_matches('.').to_string()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// A `### ` entry of `bench/README.md`: its anchor, whether a line under it says
/// `Superseded by` (the whole entry), and the anchors its `Superseded by` and
/// `Partly superseded by` lines link.
struct Entry {
    anchor: String,
    superseded: bool,
    successors: Vec<String>,
}

fn entries(text: &str) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let mut inside = false;
    let mut in_fence = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some(title) = line.strip_prefix("### ") {
            out.push(Entry {
                anchor: slug(title),
                superseded: false,
                successors: Vec::new(),
            });
            inside = true;
        } else if line.starts_with("## ") || line.starts_with("# ") {
            inside = false;
        } else if inside {
            let whole = line.starts_with("Superseded by ");
            if whole || line.starts_with("Partly superseded by ") {
                let entry = out.last_mut().expect("inside an entry");
                entry.superseded |= whole;
                entry.successors.extend(
                    links(line)
                        .iter()
                        .filter_map(|t| t.strip_prefix('#'))
                        .map(str::to_string),
                );
            }
        }
    }
    out
}

/// The columns of the claims table, in order.
const CLAIM_COLUMNS: [&str; 5] = ["claim", "made in", "command", "threshold", "latest entry"];

/// What is wrong with `bench/README.md`'s claims table (`readme`), given the folder's files
/// (`bench`: name → text, empty for a folder) and the documents that may name its scripts
/// (`docs`: path → text): (a) a file of `bench/` neither in the command column nor a helper a
/// listed script names; (b) a `bench/*.sh` or `bench/*.py` a document names that does not
/// exist or has no row; (c) a latest-entry link that reaches no `### ` entry, or a superseded
/// one; and rows or helpers that are malformed.
fn claims_problems(
    readme: &str,
    bench: &BTreeMap<String, String>,
    docs: &[(String, String)],
) -> Vec<String> {
    let mut problems = Vec::new();
    let (header, rows) = table(readme, "claim");
    if header != CLAIM_COLUMNS {
        problems.push(format!(
            "bench/README.md: no claims table with the columns {CLAIM_COLUMNS:?} (found {header:?}): \
             put one after the convention, one row per claim README.md or docs/ makes that a \
             bench script checks"
        ));
        return problems;
    }
    let entries = entries(readme);
    let entry = |anchor: &str| entries.iter().find(|e| e.anchor == anchor);
    let mut listed = BTreeSet::new();
    for row in &rows {
        let claim = row.first().map(String::as_str).unwrap_or_default();
        let [_, made_in, command, _, latest] = &row[..] else {
            problems.push(format!(
                "bench/README.md claims table, row `{claim}`: {} cells, not {}: give it a claim, \
                 where it is made, its command, its threshold and its latest entry",
                row.len(),
                CLAIM_COLUMNS.len()
            ));
            continue;
        };
        if !links(made_in)
            .iter()
            .any(|t| t.starts_with("../README.md") || t.starts_with("../docs/"))
        {
            problems.push(format!(
                "bench/README.md claims table, row `{claim}`: `made in` links no section of \
                 README.md or docs/: link where the claim is made, e.g. \
                 [scheduling.md: The goal](../docs/scheduling.md#the-goal)"
            ));
        }
        let names = bench_names(command);
        if names.is_empty() {
            problems.push(format!(
                "bench/README.md claims table, row `{claim}`: its command names no bench/ \
                 script: a row is a claim a script of bench/ checks"
            ));
        }
        for name in names {
            if !bench.contains_key(&name) {
                problems.push(format!(
                    "bench/README.md claims table, row `{claim}`: bench/{name} does not exist: \
                     fix the command, or restore the script"
                ));
            }
            listed.insert(name);
        }
        if latest != "none yet" {
            let anchors: Vec<String> = links(latest)
                .iter()
                .filter_map(|t| t.strip_prefix('#'))
                .map(str::to_string)
                .collect();
            match (&anchors[..], anchors.first().and_then(|a| entry(a))) {
                ([_], Some(e)) if e.superseded => problems.push(format!(
                    "bench/README.md claims table, row `{claim}`: its latest entry #{} says \
                     `Superseded by`: link the newest entry that measures the claim",
                    e.anchor
                )),
                ([_], Some(_)) => {}
                _ => problems.push(format!(
                    "bench/README.md claims table, row `{claim}`: latest entry `{latest}` is not \
                     one link to a `### ` entry of bench/README.md: link the newest entry that \
                     measures the claim ([Title](#its-anchor)), or write `none yet`"
                )),
            }
        }
    }
    for e in &entries {
        for s in &e.successors {
            match entry(s) {
                Some(next) if !next.superseded => {}
                Some(_) => problems.push(format!(
                    "bench/README.md entry #{}: it is superseded by #{s}, which is superseded \
                     itself: link the newest entry of the claim",
                    e.anchor
                )),
                None => problems.push(format!(
                    "bench/README.md entry #{}: it is superseded by #{s}, which is no `### ` \
                     entry: link the newest entry of the claim",
                    e.anchor
                )),
            }
        }
    }
    let (_, helper_rows) = table(readme, "helper");
    let mut helpers = BTreeSet::new();
    for row in &helper_rows {
        let Some(helper) = row.first().and_then(|c| bench_names(c).into_iter().next()) else {
            problems.push(format!(
                "bench/README.md helpers table: row {row:?} names no bench/ file in its first cell"
            ));
            continue;
        };
        if !bench.contains_key(&helper) {
            problems.push(format!(
                "bench/README.md helpers table: bench/{helper} does not exist: remove its row"
            ));
        }
        let users = row.get(1).map(|c| bench_names(c)).unwrap_or_default();
        let named = users
            .iter()
            .any(|u| listed.contains(u) && bench.get(u).is_some_and(|text| text.contains(&helper)));
        if !named {
            problems.push(format!(
                "bench/README.md helpers table: bench/{helper} is named by none of its users \
                 {users:?} that the command column lists: name beside it a listed script whose \
                 text uses it, or delete it (git keeps it)"
            ));
        }
        helpers.insert(helper);
    }
    for name in bench.keys() {
        if name != "README.md" && !listed.contains(name) && !helpers.contains(name) {
            problems.push(format!(
                "bench/{name} is not in bench/README.md's claims table: add a row for the claim \
                 it checks (claim, made in, command, threshold, latest entry: `none yet` until a \
                 run is recorded), list it as a helper beside the listed scripts that use it, or \
                 delete it (git keeps it)"
            ));
        }
    }
    let mut named = BTreeSet::new();
    for (doc, text) in docs {
        for name in bench_names(text) {
            if (name.ends_with(".sh") || name.ends_with(".py"))
                && named.insert((doc.clone(), name.clone()))
            {
                if !bench.contains_key(&name) {
                    problems.push(format!(
                        "{doc} names bench/{name}, which does not exist: fix the sentence, or \
                         restore the script"
                    ));
                } else if !listed.contains(&name) {
                    problems.push(format!(
                        "{doc} names bench/{name}, which no row of bench/README.md's claims table \
                         runs: add a row (claim, made in, command, threshold, latest entry: \
                         `none yet` until a run is recorded), or stop naming it"
                    ));
                }
            }
        }
    }
    problems
}

#[test]
fn every_bench_file_is_in_the_claims_table_and_every_named_script_has_a_row() {
    let root = workspace();
    let readme = read(&root.join("bench/README.md"));
    let mut bench = BTreeMap::new();
    for e in std::fs::read_dir(root.join("bench")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // Not content: dotfiles, and the bytecode Python leaves beside an imported helper.
        if name.starts_with('.') || name == "__pycache__" {
            continue;
        }
        let path = e.path();
        let text = if path.is_file() {
            std::fs::read_to_string(&path).unwrap_or_default()
        } else {
            String::new()
        };
        bench.insert(name, text);
    }
    let mut docs = vec![("README.md".to_string(), read(&root.join("README.md")))];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    for page in pages {
        let name = format!("docs/{}", page.file_name().unwrap().to_string_lossy());
        docs.push((name, read(&page)));
    }
    let (_, rows) = table(&readme, "claim");
    assert!(
        rows.len() >= 10,
        "bench/README.md has its claims ({})",
        rows.len()
    );
    let problems = claims_problems(&readme, &bench, &docs);
    assert!(
        problems.is_empty(),
        "bench/ and its claims table disagree:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_claims_check_catches_what_it_should() {
    let readme = "# bench\n\n## Claims\n\n\
        | claim | made in | command | threshold | latest entry |\n|---|---|---|---|---|\n\
        | fast | [a](../docs/a.md#x) | `bench/run.sh 2` | ≤ 1.1× the floor | [A](#a) |\n\
        | new | [README.md](../README.md) | `bench/new.py` | 0 differ | none yet |\n\n\
        | helper | used by |\n|---|---|\n| `bench/lib.sh`: setup | `bench/run.sh` |\n\n\
        ## Runs\n\n### A\n\nRun: 2026-12-04 · m · commit abcdef0\nCommand: `bench/run.sh 2`\n\n\
        ### Old A\n\nSuperseded by [A](#a).\n\nRun: 2026-12-01 · m · commit abcdef1\nCommand: `x`\n";
    let files = |extra: &[(&str, &str)]| {
        let mut bench: BTreeMap<String, String> = [
            ("README.md", ""),
            ("run.sh", ". lib.sh"),
            ("new.py", ""),
            ("lib.sh", ""),
        ]
        .iter()
        .chain(extra)
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
        bench.retain(|_, t| t != "gone");
        bench
    };
    let doc = |text: &str| vec![("docs/a.md".to_string(), text.to_string())];
    let good = claims_problems(
        readme,
        &files(&[]),
        &doc("`bench/run.sh` and bench/new.py."),
    );
    assert_eq!(good, Vec::<String>::new());
    assert_eq!(bench_problems(readme), Vec::<String>::new());

    // (a) a file of bench/ in no row and no helper.
    // Exactly one problem, saying `what`.
    let only = |problems: Vec<String>, what: &str| {
        assert!(
            problems.len() == 1 && problems[0].contains(what),
            "{problems:?}"
        );
    };
    only(
        claims_problems(readme, &files(&[("probe.sh", "")]), &[]),
        "bench/probe.sh is not in",
    );
    // A helper no listed script names.
    only(
        claims_problems(readme, &files(&[("run.sh", "")]), &[]),
        "bench/lib.sh is named by none",
    );
    // (b) a script docs/ names that has no row, and one that does not exist.
    let named = claims_problems(
        readme,
        &files(&[("other.sh", "")]),
        &doc("see `bench/other.sh` and `bench/gone.py`"),
    );
    assert_eq!(named.len(), 3, "{named:?}");
    assert!(named
        .iter()
        .any(|p| p.starts_with("docs/a.md names bench/other.sh, which no row")));
    assert!(named
        .iter()
        .any(|p| p.starts_with("docs/a.md names bench/gone.py, which does not")));
    // (c) a latest entry that is no heading, or a superseded one.
    let linked = |to: &str| claims_problems(&readme.replace("[A](#a) |", to), &files(&[]), &[]);
    only(linked("[B](#b) |"), "is not one link to a `### ` entry");
    only(linked("[Old A](#old-a) |"), "says `Superseded by`");
    // A row whose command names a script that is gone.
    only(
        claims_problems(readme, &files(&[("new.py", "gone")]), &[]),
        "bench/new.py does not exist",
    );
    assert_eq!(
        bench_names("(`bench/seccomp/x.json`, ../bench/a.sh. mybench/b.sh)"),
        ["seccomp", "a.sh"]
    );
}
