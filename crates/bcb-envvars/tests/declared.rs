//! Keeps the declaration the only one: no variable name as a string literal in an `env::var`
//! call (or a clap `env =`) anywhere in the workspace's sources, tests read only declared
//! variables, and the README's table lists exactly the declared variables.

use std::path::{Path, PathBuf};

use bcb_envvars::ALL;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Library, binary, build-script and example sources of every crate but this one.
fn sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for c in std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .flatten()
    {
        let dir = c.path();
        if dir.ends_with("bcb-envvars") {
            continue;
        }
        rust_files(&dir.join("src"), &mut files);
        rust_files(&dir.join("examples"), &mut files);
        let build = dir.join("build.rs");
        if build.is_file() {
            files.push(build);
        }
    }
    files
}

#[test]
fn no_variable_is_named_by_a_literal_outside_the_declaration() {
    // Cargo's own build-script variables are not bcb's to declare.
    let cargo = ["\"CARGO_MANIFEST_DIR\"", "\"OUT_DIR\""];
    let readers = [
        "env::var(\"",
        "env::var_os(\"",
        "env = \"",
        "from_env(\"",
        "non_empty(\"",
    ];
    let mut bad = Vec::new();
    for file in sources() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let literal_read =
                readers.iter().any(|r| line.contains(r)) && !cargo.iter().any(|c| line.contains(c));
            let declared_literal = ALL
                .iter()
                .any(|v| line.contains(&format!("\"{}\"", v.name)))
                && !line.contains("value_name = ");
            if literal_read || declared_literal {
                bad.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "environment variables named outside bcb-envvars (use EnvVars::NAME, declaring it there first):\n{}",
        bad.join("\n")
    );
}

/// The `tests/` folders of every crate (this one's too).
fn test_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for c in std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .flatten()
    {
        rust_files(&c.path().join("tests"), &mut files);
    }
    files
}

#[test]
fn tests_read_only_declared_variables() {
    // Cargo's own variables are not bcb's to declare.
    let cargo = [
        "CARGO",
        "CARGO_MANIFEST_DIR",
        "CARGO_TARGET_TMPDIR",
        "CARGO_BIN_EXE_bcb",
    ];
    let readers = ["env::var(\"", "env::var_os(\"", "env!(\"", "option_env!(\""];
    let mut bad = Vec::new();
    let mut seen = 0;
    for file in test_sources() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for reader in readers {
                for piece in line.split(reader).skip(1) {
                    let name = piece.split('"').next().unwrap_or_default();
                    seen += 1;
                    if !cargo.contains(&name) && !ALL.iter().any(|v| v.name == name) {
                        bad.push(format!("{}:{}: {name}", file.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(seen > 10, "the scan finds the tests' reads ({seen})");
    assert!(
        bad.is_empty(),
        "tests read undeclared environment variables (declare them in bcb-envvars, group Tests):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_readme_table_lists_exactly_the_declared_variables() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let section = readme
        .split("## Environment variables")
        .nth(1)
        .expect("README.md has an `## Environment variables` section")
        .split("\n## ")
        .next()
        .unwrap();
    let listed: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .collect();
    let declared: Vec<&str> = ALL.iter().map(|v| v.name).collect();
    assert_eq!(
        listed, declared,
        "README's table out of date: regenerate it from ALL (same order)"
    );
}
