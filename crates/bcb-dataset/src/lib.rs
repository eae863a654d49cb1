//! The BigCodeBench dataset: task rows, versions, subsets and where they are loaded from.
//!
//! Sources are tried in a fixed order (see [`DatasetSpec::resolve`]): an explicit file,
//! a directory named by `BCB_DATASET_DIR`, the local cache, the default version embedded at
//! build time (when the build found a verified copy), then the Hugging Face hub.

mod embedded;
mod hub;
mod source;
mod task;

pub use embedded::has_embedded;
pub use hub::parquet_url;
pub use source::{cache_dir, file_name, DatasetSpec, Source, DATASET_DIR_ENV, OVERRIDE_PATH_ENV};
pub use task::{parse_task_ids, task_number, Dataset, Task};

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// `as_str`, `Display` and a case-insensitive `FromStr` (naming what was expected) for an
/// enum whose every variant is one word.
macro_rules! words {
    ($ty:ident, $what:literal, $($variant:ident => $word:literal),+) => {
        impl $ty {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $word),+
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s.to_ascii_lowercase().as_str() {
                    $($word => Ok($ty::$variant),)+
                    other => {
                        let expected = [$(concat!("`", $word, "`")),+].join(" or ");
                        Err(format!("unknown {} `{other}`: expected {expected}", $what))
                    }
                }
            }
        }
    };
}

/// Every published dataset version, oldest first.
pub const VERSIONS: &[&str] = &[
    "v0.1.0_hf",
    "v0.1.1",
    "v0.1.2",
    "v0.1.3",
    "v0.1.4",
    "v0.1.5",
];
/// The version the original harness (0.2.5) uses.
pub const DEFAULT_VERSION: &str = "v0.1.4";
/// Number of tasks in the full set; ids are `BigCodeBench/0` .. `BigCodeBench/1139`.
pub const FULL_TASK_COUNT: usize = 1140;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Subset {
    #[default]
    Full,
    Hard,
}

words!(Subset, "subset", Full => "full", Hard => "hard");

/// Prompt flavour: `complete` (docstring) or `instruct` (natural language).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    #[default]
    Complete,
    Instruct,
}

words!(Split, "split", Complete => "complete", Instruct => "instruct");

/// Checks a version string against [`VERSIONS`].
pub fn parse_version(s: &str) -> Result<String, String> {
    if VERSIONS.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown dataset version `{s}`: expected one of {}",
            VERSIONS.join(", ")
        ))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot read dataset file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Row {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: duplicate task id `{task_id}` (lines {first} and {second})")]
    Duplicate {
        path: PathBuf,
        task_id: String,
        first: usize,
        second: usize,
    },
    #[error("{0}")]
    NotFound(String),
    #[error("download from {url} failed: {message}")]
    Download { url: String, message: String },
}

/// sha256 of a file as stored (compressed or not), as in `SHA256SUMS`.
pub fn file_sha256(path: &std::path::Path) -> Result<String, DatasetError> {
    use sha2::Digest;
    let bytes = std::fs::read(path).map_err(|source| DatasetError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(hex::encode(sha2::Sha256::digest(&bytes)))
}
