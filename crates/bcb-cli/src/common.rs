//! Pieces every command shares: dataset flags, logging, legacy flag spellings.

use std::ffi::OsString;
use std::path::PathBuf;

use bcb_dataset::{DatasetSpec, Subset};

/// Flags that choose the dataset; flattened into every command that needs tasks.
#[derive(clap::Args, Debug, Clone)]
pub struct DatasetArgs {
    /// Subset: `full` (1,140 tasks) or `hard` (148).
    #[arg(long, default_value = "full")]
    pub subset: Subset,
    /// Dataset version (v0.1.0_hf .. v0.1.5).
    #[arg(long, value_parser = bcb_dataset::parse_version, default_value = bcb_dataset::DEFAULT_VERSION)]
    pub version: String,
    /// A dataset file (JSONL or JSONL.gz) to use instead of the named version.
    #[arg(long, value_name = "PATH", env = "BIGCODEBENCH_OVERRIDE_PATH")]
    pub dataset: Option<PathBuf>,
    /// Directory of files named like `bigcodebench[-hard]-{version}.jsonl.gz`.
    #[arg(long, value_name = "DIR", env = "BCB_DATASET_DIR")]
    pub dataset_dir: Option<PathBuf>,
    /// Never download; use only local files and the cache.
    #[arg(long, env = "BCB_OFFLINE", value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub offline: bool,
    /// Hugging Face hub address (for mirrors and tests).
    #[arg(
        long,
        env = "HF_ENDPOINT",
        default_value = "https://huggingface.co",
        hide = true
    )]
    pub hub_endpoint: String,
}

impl DatasetArgs {
    pub fn spec(&self) -> DatasetSpec {
        let mut spec = DatasetSpec::new(self.subset, Some(&self.version));
        spec.path = self.dataset.clone();
        spec.dataset_dir = self.dataset_dir.clone();
        spec.offline = self.offline || spec.offline;
        spec.hub_endpoint = self.hub_endpoint.clone();
        spec
    }
}

/// The original harness (python-fire) spells flags with underscores (`--pass_k`) and
/// negates booleans as `--noflag`; rewrite those spellings to ours before parsing.
pub fn normalize_legacy_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    args.into_iter()
        .map(|arg| {
            let Some(s) = arg.to_str() else { return arg };
            let Some(body) = s.strip_prefix("--") else {
                return arg;
            };
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let mut name = name.replace('_', "-");
            // python-fire negation: --nono-gt is not a thing, but --nocalibrated is.
            for negatable in ["calibrated", "resume", "save-pass-rate"] {
                if name == format!("no{negatable}") {
                    name = format!("no-{negatable}");
                }
            }
            match value {
                Some(v) => OsString::from(format!("--{name}={v}")),
                None => OsString::from(format!("--{name}")),
            }
        })
        .collect()
}

pub fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("BCB_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_spellings_are_rewritten() {
        let args = [
            "bcb",
            "evaluate",
            "--pass_k",
            "1,5",
            "--check_gt_only",
            "--max_as_limit=100",
            "--nocalibrated",
            "x_y",
        ];
        let out: Vec<String> = normalize_legacy_args(args.iter().map(OsString::from))
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect();
        assert_eq!(
            out,
            [
                "bcb",
                "evaluate",
                "--pass-k",
                "1,5",
                "--check-gt-only",
                "--max-as-limit=100",
                "--no-calibrated",
                "x_y"
            ]
        );
    }
}
