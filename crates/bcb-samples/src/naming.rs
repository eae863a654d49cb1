//! Output file names, exactly as the original harness derives them.

use std::path::{Path, PathBuf};

/// `X.jsonl` → `X_eval_results.json`; a directory → `{dir}/eval_results.json`.
pub fn eval_results_path(samples: &Path) -> PathBuf {
    if samples.is_dir() {
        return samples.join("eval_results.json");
    }
    let s = samples.to_string_lossy();
    // The original does `samples.replace(".jsonl", "_eval_results.json")`: every occurrence.
    PathBuf::from(s.replace(".jsonl", "_eval_results.json"))
}

/// `..._eval_results.json` → `..._pass_at_k.json` (the original's string replace).
pub fn pass_at_k_path(eval_results: &Path) -> PathBuf {
    PathBuf::from(
        eval_results
            .to_string_lossy()
            .replace("eval_results.json", "pass_at_k.json"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_upstream() {
        let s = Path::new(
            "r/m--main--bigcodebench-hard-instruct--openai-0-1-sanitized_calibrated.jsonl",
        );
        let e = eval_results_path(s);
        assert_eq!(
            e,
            Path::new("r/m--main--bigcodebench-hard-instruct--openai-0-1-sanitized_calibrated_eval_results.json")
        );
        assert_eq!(
            pass_at_k_path(&e),
            Path::new("r/m--main--bigcodebench-hard-instruct--openai-0-1-sanitized_calibrated_pass_at_k.json")
        );
    }
}
