//! Where the tests find the shared real samples: `BCB_REAL_SAMPLES_DIR`, else
//! `$BCB_DATASET_DIR/../real-samples`, else `../shared/real-samples` beside the repository.
//! With `BCB_REQUIRE_DATA=1` (CI) a missing folder fails the test instead of skipping it.
#![allow(dead_code, clippy::print_stderr)] // tests say why they skip

use std::path::{Path, PathBuf};

pub const HERMES: &str = "NousResearch--Hermes-2-Theta-Llama-3-8B--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated";
pub const PHI: &str =
    "microsoft--Phi-4-multimodal-instruct--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated";

pub fn real_samples() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("BCB_REAL_SAMPLES_DIR").map(PathBuf::from),
        std::env::var_os("BCB_DATASET_DIR").map(|d| PathBuf::from(d).join("../real-samples")),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/real-samples")),
    ];
    if let Some(dir) = candidates
        .into_iter()
        .flatten()
        .find(|d| d.join(format!("{HERMES}_eval_results.json.gz")).exists())
    {
        return Some(dir);
    }
    if std::env::var("BCB_REQUIRE_DATA").is_ok_and(|v| v == "1") {
        panic!("the shared real samples are missing: set BCB_REAL_SAMPLES_DIR to ../shared/real-samples");
    }
    eprintln!("SKIP: set BCB_REAL_SAMPLES_DIR (../shared/real-samples) to run this test");
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
