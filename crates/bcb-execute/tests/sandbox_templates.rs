//! The E2B template's config parses and sizes the sandbox for the job. Its Dockerfile derives
//! from bcb's image, whose definition `crates/bcb-cli/tests/image.rs` checks.

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
