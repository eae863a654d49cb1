//! The samples-file name grammar, in one place: the names the original harness gives its
//! files and derives from them, and what bcb reads back out of a name.
//!
//! `{model}--{revision}--bigcodebench[-hard]-{split}--{backend}-{temp}-{n}-sanitized_calibrated.jsonl`
//! → `…_eval_results.json` and `…_pass_at_k.json` beside it; bcb's own files beside those
//! (journals `….partial.jsonl`, shards `….shard-I-of-N.jsonl`) are never samples.

use std::path::{Path, PathBuf};

use bcb_dataset::{Split, Subset};

/// What separates the model part of a name from its labels.
pub const LABELS_MARK: &str = "--bigcodebench-";

/// The tail every generated samples file name ends with.
pub const GENERATED_TAIL: &str = "-sanitized_calibrated.jsonl";

/// `{model}--{revision}--bigcodebench[-hard]-{split}--{backend}-{temp}-{n}-sanitized_calibrated.jsonl`
/// (`model` with `/` as `--`, as the original writes it).
pub fn generated_name(
    model: &str,
    revision: &str,
    subset: Subset,
    split: Split,
    backend: &str,
    temperature: &str,
    n_samples: u32,
) -> String {
    let hard = match subset {
        Subset::Full => "",
        Subset::Hard => "-hard",
    };
    format!(
        "{}--{revision}{}{hard}-{split}--{backend}-{temperature}-{n_samples}{GENERATED_TAIL}",
        model.replace('/', "--"),
        LABELS_MARK.trim_end_matches('-'),
    )
}

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

/// The pass@k file that exists beside a results file `X_eval_results.json[.gz]`
/// (`X_pass_at_k.json`, or its `.gz`); `None` for other names or when there is none.
pub fn existing_pass_at_k(results: &Path) -> Option<PathBuf> {
    let name = results.file_name()?.to_str()?;
    let stem = name.strip_suffix(".gz").unwrap_or(name);
    let base = stem.strip_suffix("eval_results.json")?;
    let plain = results.with_file_name(format!("{base}pass_at_k.json"));
    let gz = results.with_file_name(format!("{base}pass_at_k.json.gz"));
    [plain, gz].into_iter().find(|p| p.exists())
}

/// `(subset, split)` a name carries (`…--bigcodebench-hard-instruct--…`, or the labels last:
/// `m--bigcodebench-complete.jsonl`); the split is `None` when the name's is not one.
pub fn labels(path: &Path) -> Option<(Subset, Option<Split>)> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let rest = name.split_once(LABELS_MARK)?.1;
    let label = rest.split("--").next()?;
    let label = label.split('.').next().unwrap_or(label);
    let label = label.strip_suffix("_eval_results").unwrap_or(label);
    Some(match label.strip_prefix("hard-") {
        Some(split) => (Subset::Hard, split.parse().ok()),
        None => (Subset::Full, label.parse().ok()),
    })
}

/// Upstream's model name of a samples file: its base name up to `--bigcodebench-` (the
/// whole base name when there is none, as the original does).
pub fn model_name(samples: &Path) -> String {
    let base = samples
        .file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    base.split(LABELS_MARK).next().unwrap_or("").to_string()
}

/// The model name of a results file: the part before `--bigcodebench-`, else the name
/// without `_eval_results.json[.gz]`.
pub fn model_of_results(results: &Path) -> String {
    let name = results
        .file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    if let Some((model, _)) = name.split_once(LABELS_MARK) {
        return model.to_string();
    }
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let name = name.strip_suffix(".json").unwrap_or(name);
    name.strip_suffix("_eval_results")
        .or_else(|| name.strip_suffix("eval_results"))
        .unwrap_or(name)
        .trim_end_matches(['_', '-'])
        .to_string()
}

/// A samples file's name, not one of bcb's own files beside it (journals, result files,
/// shard journals).
pub fn is_samples_file_name(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.ends_with(".jsonl")
        && !name.ends_with(".partial.jsonl")
        && !name.contains("_eval_results.json")
        && !name.contains(".shard-")
}

/// `bcb sanitize`'s output name: in the file name every `.jsonl` becomes
/// `-sanitized[-calibrated].jsonl` (`x.jsonl.gz` → `x-sanitized.jsonl.gz`); a directory
/// gets the suffix. `None` when a file name has no `.jsonl` (the output would be the input).
pub fn sanitized_name(name: &str, calibrate: bool, is_folder: bool) -> Option<String> {
    let suffix = if calibrate {
        "-sanitized-calibrated"
    } else {
        "-sanitized"
    };
    if is_folder {
        Some(format!("{name}{suffix}"))
    } else if name.contains(".jsonl") {
        Some(name.replace(".jsonl", &format!("{suffix}.jsonl")))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HARD: &str =
        "r/m--main--bigcodebench-hard-instruct--openai-0-1-sanitized_calibrated.jsonl";

    #[test]
    fn names_match_upstream() {
        let e = eval_results_path(Path::new(HARD));
        assert_eq!(
            e,
            Path::new("r/m--main--bigcodebench-hard-instruct--openai-0-1-sanitized_calibrated_eval_results.json")
        );
        assert_eq!(
            pass_at_k_path(&e),
            Path::new("r/m--main--bigcodebench-hard-instruct--openai-0-1-sanitized_calibrated_pass_at_k.json")
        );
        assert_eq!(
            generated_name(
                "org/m",
                "main",
                Subset::Hard,
                Split::Instruct,
                "openai",
                "0",
                1
            ),
            "org--m--main--bigcodebench-hard-instruct--openai-0-1-sanitized_calibrated.jsonl"
        );
    }

    #[test]
    fn labels_and_models_read_back() {
        assert_eq!(
            labels(Path::new(HARD)),
            Some((Subset::Hard, Some(Split::Instruct)))
        );
        assert_eq!(
            labels(Path::new("m--bigcodebench-complete.jsonl")),
            Some((Subset::Full, Some(Split::Complete)))
        );
        assert_eq!(
            labels(&eval_results_path(Path::new(
                "m--bigcodebench-complete.jsonl"
            ))),
            Some((Subset::Full, Some(Split::Complete)))
        );
        assert_eq!(
            labels(Path::new("m--bigcodebench-x--y.jsonl")),
            Some((Subset::Full, None))
        );
        assert_eq!(labels(Path::new("samples.jsonl")), None);
        assert_eq!(model_name(Path::new(HARD)), "m--main");
        assert_eq!(model_name(Path::new("samples.jsonl")), "samples.jsonl");
        assert_eq!(
            model_of_results(&eval_results_path(Path::new(HARD))),
            "m--main"
        );
        assert_eq!(
            model_of_results(Path::new("x/mine_eval_results.json.gz")),
            "mine"
        );
        assert_eq!(model_of_results(Path::new("dir/eval_results.json")), "");
    }

    #[test]
    fn own_files_are_not_samples() {
        for name in [
            "a_eval_results.json",
            "b_eval_results.json.partial.jsonl",
            "b_eval_results.json.shard-1-of-2.jsonl",
            "x.jsonl.partial.jsonl",
        ] {
            assert!(!is_samples_file_name(Path::new(name)), "{name}");
        }
        assert!(is_samples_file_name(Path::new(HARD)));
        assert_eq!(
            sanitized_name("a.jsonl.gz", false, false).as_deref(),
            Some("a-sanitized.jsonl.gz")
        );
        assert_eq!(sanitized_name("a.txt", true, false), None);
    }
}
