//! The E2B template files parse, size the sandbox for the job, and build the eval env from
//! exactly the lock this bcb embeds (no clone of a moving branch).

use bcb_testkit::repo_file as repo;

#[test]
fn e2b_toml_names_the_template_dockerfile_cpu_and_memory() {
    let t: toml::Table = repo("sandbox-templates/e2b.toml")
        .parse()
        .expect("valid TOML");
    assert_eq!(
        t["template_name"].as_str(),
        Some("bigcodebench_evaluator"),
        "the original's default --e2b_endpoint"
    );
    assert_eq!(
        t["dockerfile"].as_str(),
        Some("sandbox-templates/e2b.Dockerfile")
    );
    assert!(t["cpu_count"].as_integer().unwrap() >= 2);
    assert!(t["memory_mb"].as_integer().unwrap() >= 4096);
}

#[test]
fn e2b_dockerfile_installs_exactly_the_embedded_lock() {
    let text = repo("sandbox-templates/e2b.Dockerfile");
    // Instructions, with continuation lines joined.
    let joined = text.replace("\\\n", " ");
    let instrs: Vec<(&str, &str)> = joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_once(' ').unwrap_or((l, "")))
        .collect();
    let known = ["FROM", "WORKDIR", "COPY", "RUN", "ARG", "ENV", "USER"];
    for (op, _) in &instrs {
        assert!(known.contains(op), "unexpected instruction {op}");
    }
    let digest = instrs
        .iter()
        .find_map(|(op, rest)| {
            (*op == "ARG")
                .then(|| rest.strip_prefix("BCB_LOCK_DIGEST="))
                .flatten()
        })
        .expect("ARG BCB_LOCK_DIGEST=...");
    assert_eq!(
        digest,
        bcb_execute::local::env::lock_digest(),
        "update BCB_LOCK_DIGEST after changing env/lock-py311.txt"
    );
    let runs: Vec<&str> = instrs
        .iter()
        .filter(|(op, _)| *op == "RUN")
        .map(|(_, r)| *r)
        .collect();
    let setup = runs
        .iter()
        .find(|r| r.contains("bcb env setup"))
        .expect("the env is installed by `bcb env setup`");
    assert!(
        setup.contains(".bcb-env-lock") && setup.contains("$BCB_LOCK_DIGEST"),
        "the build checks the installed lock"
    );
    assert!(
        instrs
            .iter()
            .any(|(op, r)| *op == "FROM" && r.starts_with("python:3.11")),
        "the lock is for CPython 3.11"
    );
    for r in &runs {
        assert!(
            !r.contains("git clone") && !r.contains("pip install -r"),
            "no other source of packages: {r}"
        );
    }
}
