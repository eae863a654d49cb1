//! The samples file name, exactly as the original's `run_codegen` derives it.

use std::path::{Path, PathBuf};

use bcb_dataset::{Split, Subset};

/// What the file name depends on.
pub struct NameParts<'a> {
    pub root: &'a Path,
    pub model: &'a str,
    pub backend: &'a str,
    pub revision: &'a str,
    pub subset: Subset,
    pub split: Split,
    /// As Python's `str()` prints it (see [`python_number_str`]).
    pub temperature: &'a str,
    pub n_samples: u32,
    pub reasoning_effort: &'a str,
    pub reasoning_budget: u32,
    pub reasoning_beta: &'a str,
    pub skip_prefill: bool,
    /// `--lora_path`: added as `--lora-{path}`, as the original does.
    pub lora_path: Option<&'a str>,
}

/// `{root}/{MODEL}[--skip_prefill]--{revision}--bigcodebench[-hard]-{split}--{backend}-{temp}-{n}-sanitized_calibrated.jsonl`
pub fn samples_path(p: &NameParts) -> PathBuf {
    let mut model = p.model.to_string();
    // The original's condition, with its operator precedence:
    // `backend == "openai" and effort and model.startswith("o1-") or model.startswith("o3-") or model.endswith("-reasoner")`.
    if (p.backend == "openai" && !p.reasoning_effort.is_empty() && model.starts_with("o1-"))
        || model.starts_with("o3-")
        || model.ends_with("-reasoner")
    {
        model = format!("{model}--{}", p.reasoning_effort);
    }
    if let Some(lora) = p.lora_path.filter(|l| !l.is_empty()) {
        model = format!("{model}--lora-{lora}");
    }
    if p.backend == "anthropic" && p.reasoning_budget > 0 && !p.reasoning_beta.is_empty() {
        model = format!("{model}--{}-{}", p.reasoning_budget, p.reasoning_beta);
    }
    if p.skip_prefill {
        model.push_str("--skip_prefill");
    }
    p.root.join(bcb_samples::generated_name(
        &model,
        p.revision,
        p.subset,
        p.split,
        p.backend,
        p.temperature,
        p.n_samples,
    ))
}

/// Python's `str()` of a number given as text: integers stay integers (`"1"`), floats use the
/// shortest round-trip form with a `.0` for whole values (`"1.0"`, `"0.8"`, `"1e-05"`).
pub fn python_number_str(literal: &str) -> Option<String> {
    let t = literal.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Some(i.to_string());
    }
    let x: f64 = t.parse().ok()?;
    Some(bcb_pyjson::float_repr(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(model: &'a str, backend: &'a str) -> NameParts<'a> {
        NameParts {
            root: Path::new("bcb_results"),
            model,
            backend,
            revision: "main",
            subset: Subset::Hard,
            split: Split::Instruct,
            temperature: "0",
            n_samples: 1,
            reasoning_effort: "medium",
            reasoning_budget: 0,
            reasoning_beta: "output-128k-2025-02-19",
            skip_prefill: false,
            lora_path: None,
        }
    }

    #[test]
    fn matches_upstream_examples() {
        assert_eq!(
            samples_path(&parts("meta-llama/Meta-Llama-3.1-8B-Instruct", "vllm")),
            Path::new("bcb_results/meta-llama--Meta-Llama-3.1-8B-Instruct--main--bigcodebench-hard-instruct--vllm-0-1-sanitized_calibrated.jsonl")
        );
        let mut p = parts("o1-mini", "openai");
        p.subset = Subset::Full;
        p.split = Split::Complete;
        p.temperature = "0.8";
        p.n_samples = 5;
        assert_eq!(
            samples_path(&p),
            Path::new("bcb_results/o1-mini--medium--main--bigcodebench-complete--openai-0.8-5-sanitized_calibrated.jsonl")
        );
        // Precedence quirk: o3-/-reasoner get the effort whatever the backend.
        assert!(samples_path(&parts("deepseek-reasoner", "google"))
            .to_string_lossy()
            .starts_with("bcb_results/deepseek-reasoner--medium--main"));
        assert!(samples_path(&parts("o1-mini", "anthropic"))
            .to_string_lossy()
            .starts_with("bcb_results/o1-mini--main"));
        let mut p = parts("claude-3-7-sonnet", "anthropic");
        p.reasoning_budget = 4096;
        p.skip_prefill = true;
        assert_eq!(
            samples_path(&p),
            Path::new("bcb_results/claude-3-7-sonnet--4096-output-128k-2025-02-19--skip_prefill--main--bigcodebench-hard-instruct--anthropic-0-1-sanitized_calibrated.jsonl")
        );
    }

    #[test]
    fn numbers_print_like_python() {
        for (lit, want) in [
            ("0", "0"),
            ("1", "1"),
            ("0.8", "0.8"),
            ("1.0", "1.0"),
            ("0.20", "0.2"),
            ("1e-5", "1e-05"),
            ("2.5e16", "2.5e+16"),
            ("0.0001", "0.0001"),
        ] {
            assert_eq!(python_number_str(lit).unwrap(), want, "{lit}");
        }
        assert!(python_number_str("hot").is_none());
    }
}
