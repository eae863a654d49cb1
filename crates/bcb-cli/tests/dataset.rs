//! `bcb dataset` on the real files: counts and checksums for every version and subset.

mod evalkit;

use bcb_testkit::dataset_dir;

#[test]
fn every_version_has_the_right_count_and_checksum() {
    let Some(dir) = dataset_dir() else { return };
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    let mut checked = 0;
    for line in sums.lines() {
        let Some((sum, file)) = line.split_once("  ") else {
            continue;
        };
        let Some(rest) = file
            .strip_prefix("bigcodebench-")
            .and_then(|f| f.strip_suffix(".jsonl.gz"))
        else {
            continue;
        };
        let (subset, version, count) = match rest.strip_prefix("hard-") {
            Some(v) => ("hard", v, 148),
            None => ("full", rest, 1140),
        };
        let out = evalkit::bcb_over(&dir)
            .args(["dataset", "--json", "--offline", "--subset", subset])
            .args(["--version", version])
            .env(
                "BCB_CACHE_DIR",
                std::env::temp_dir().join("bcb-dataset-test-empty-cache"),
            )
            .output()
            .unwrap();
        evalkit::ok(&out);
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["tasks"], count, "{file}");
        assert_eq!(j["file_sha256"], sum, "{file}");
        assert_eq!(j["version"], version);
        assert!(j["libraries"].as_array().unwrap().len() > 50, "{file}");
        checked += 1;
    }
    assert_eq!(checked, 12, "six versions x two subsets");
}

#[test]
fn content_sha256_of_the_default_version_matches_the_published_value() {
    let Some(dir) = dataset_dir() else { return };
    for (subset, sha) in [
        (
            "full",
            "0a02220ab46eb02034d8e58f69fa1ac926f7e9a2b62a69c5c3a179a26edd6491",
        ),
        (
            "hard",
            "af4fed119f71fca6dda51251c294bf566f6ba6c394ee14525152a1a319eab432",
        ),
    ] {
        let out = evalkit::bcb_over(&dir)
            .args(["dataset", "--json", "--offline", "--subset", subset])
            .output()
            .unwrap();
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["content_sha256"], sha);
        assert_eq!(j["version"], "v0.1.4");
    }
}

#[test]
fn unknown_version_and_missing_file_are_clear_errors() {
    let out = evalkit::bcb()
        .args(["dataset", "--version", "v9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown dataset version `v9`"));
    let empty = tempfile::tempdir().unwrap();
    let out = evalkit::bcb_over(empty.path())
        // A version that is never embedded, so only files, cache or hub could have it.
        .args(["dataset", "--offline", "--version", "v0.1.5"])
        .env("BCB_CACHE_DIR", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("offline mode is on") && err.contains("--dataset FILE"),
        "{err}"
    );
}

#[test]
fn a_new_user_needs_no_network_and_no_dataset_variable_for_the_default_version() {
    let cache = tempfile::tempdir().unwrap();
    let out = evalkit::bcb()
        .args(["dataset", "--subset", "hard", "--json"])
        .env_remove("BCB_DATASET_DIR")
        .env("BCB_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("built without the embedded") {
        assert!(
            std::env::var("CI").is_err(),
            "CI builds must embed the default dataset: {stderr}"
        );
        eprintln!("SKIP: this build has no embedded dataset");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tasks"], 148);
    assert_eq!(v["version"], "v0.1.4");
    assert!(
        v["source"].as_str().unwrap().starts_with("embedded copy"),
        "{v}"
    );
    assert_eq!(
        v["content_sha256"],
        "af4fed119f71fca6dda51251c294bf566f6ba6c394ee14525152a1a319eab432"
    );
}
