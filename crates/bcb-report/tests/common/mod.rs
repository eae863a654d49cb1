//! Where the tests find the shared real samples: `BCB_REAL_SAMPLES_DIR`, else
//! `$BCB_DATASET_DIR/../real-samples` (../shared). With `BCB_REQUIRE_DATA=1` (CI) a missing
//! folder fails the test instead of skipping it (bcb-testkit).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub const HERMES: &str = "NousResearch--Hermes-2-Theta-Llama-3-8B--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated";
pub const PHI: &str =
    "microsoft--Phi-4-multimodal-instruct--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated";

pub fn real_samples() -> Option<PathBuf> {
    let dir = match std::env::var_os("BCB_REAL_SAMPLES_DIR") {
        Some(d) => PathBuf::from(d),
        None => bcb_testkit::dataset_dir()?.join("../real-samples"),
    };
    if dir.join(format!("{HERMES}_eval_results.json.gz")).exists() {
        return Some(dir);
    }
    bcb_testkit::missing(
        bcb_testkit::Need::Data,
        &format!(
            "no real samples in {} (../shared/real-samples; or set BCB_REAL_SAMPLES_DIR)",
            dir.display()
        ),
    );
    None
}

pub fn results_file(dir: &Path, model: &str) -> PathBuf {
    dir.join(format!("{model}_eval_results.json.gz"))
}

/// The real `bcb evaluate` output made here (no network, no NLTK data); see tests/data/README.md.
pub fn here_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/here--main--bigcodebench-complete--bcb-0-1-sanitized_calibrated_eval_results.json")
}
