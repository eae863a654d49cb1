//! Where a dataset comes from, in order: explicit path, `BCB_DATASET_DIR`, cache, the copy
//! embedded at build time (default version only), hub.

use bcb_envvars::EnvVars;
use std::path::{Path, PathBuf};

use crate::{hub, Dataset, DatasetError, Subset, DEFAULT_VERSION};

/// Directory holding files named like `bigcodebench[-hard]-{version}.jsonl[.gz]`.
pub const DATASET_DIR_ENV: &str = EnvVars::BCB_DATASET_DIR;
/// The original harness's override: one file used whatever the subset.
pub const OVERRIDE_PATH_ENV: &str = EnvVars::BIGCODEBENCH_OVERRIDE_PATH;

/// The cache root: `$BCB_CACHE_DIR`, else `~/.cache/bcb`.
pub use bcb_envvars::cache_dir;

/// Base file name (no extension) for a subset and version, as in `../shared/bigcodebench/`.
pub fn file_name(subset: Subset, version: &str) -> String {
    match subset {
        Subset::Full => format!("bigcodebench-{version}"),
        Subset::Hard => format!("bigcodebench-hard-{version}"),
    }
}

/// Everything that decides which dataset is loaded.
#[derive(Debug, Clone)]
pub struct DatasetSpec {
    pub subset: Subset,
    pub version: String,
    /// `--dataset PATH`: a JSONL or JSONL.gz file.
    pub path: Option<PathBuf>,
    /// Directory of named files (defaults to `$BCB_DATASET_DIR`).
    pub dataset_dir: Option<PathBuf>,
    pub cache_dir: PathBuf,
    /// Never touch the network.
    pub offline: bool,
    /// Hub base URL (tests point this at a loopback server).
    pub hub_endpoint: String,
    /// Use the copy built into the binary for the default version (off: `BCB_NO_EMBEDDED=1`).
    pub embedded: bool,
}

impl DatasetSpec {
    /// A spec with defaults taken from the environment.
    pub fn new(subset: Subset, version: Option<&str>) -> Self {
        let env_path = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        DatasetSpec {
            subset,
            version: version.unwrap_or(DEFAULT_VERSION).to_string(),
            path: env_path(OVERRIDE_PATH_ENV),
            dataset_dir: env_path(DATASET_DIR_ENV),
            cache_dir: cache_dir().join("datasets"),
            offline: std::env::var_os(EnvVars::HF_HUB_OFFLINE).is_some_and(|v| v == "1")
                || std::env::var_os(EnvVars::BCB_OFFLINE).is_some_and(|v| v == "1"),
            hub_endpoint: std::env::var(EnvVars::HF_ENDPOINT)
                .unwrap_or_else(|_| "https://huggingface.co".to_string()),
            embedded: std::env::var_os(EnvVars::BCB_NO_EMBEDDED).is_none_or(|v| v != "1"),
        }
    }

    /// The cache file this spec reads and the hub download writes.
    pub fn cache_path(&self) -> PathBuf {
        self.cache_dir
            .join(format!("{}.jsonl", file_name(self.subset, &self.version)))
    }

    /// Picks the first source that exists; the hub if none does and we are online.
    pub fn resolve(&self) -> Result<Source, DatasetError> {
        if let Some(path) = &self.path {
            if !path.is_file() {
                return Err(DatasetError::NotFound(format!(
                    "dataset file {} does not exist",
                    path.display()
                )));
            }
            return Ok(Source::File(path.clone()));
        }
        let name = file_name(self.subset, &self.version);
        if let Some(dir) = &self.dataset_dir {
            for ext in ["jsonl.gz", "jsonl"] {
                let candidate = dir.join(format!("{name}.{ext}"));
                if candidate.is_file() {
                    return Ok(Source::Dir(candidate));
                }
            }
        }
        let cached = self.cache_path();
        if cached.is_file() {
            return Ok(Source::Cache(cached));
        }
        if self.embedded && crate::embedded::gz(self.subset, &self.version).is_some() {
            return Ok(Source::Embedded(cached));
        }
        if self.offline {
            return Err(DatasetError::NotFound(format!(
                "{name} is not in {}{} and offline mode is on: pass --dataset FILE, set {DATASET_DIR_ENV}, or go online{}",
                self.cache_dir.display(),
                self.dataset_dir
                    .as_ref()
                    .map(|d| format!(" nor in {}", d.display()))
                    .unwrap_or_default(),
                crate::embedded::missing_hint(&self.version),
            )));
        }
        Ok(Source::Hub {
            url: hub::parquet_url(&self.hub_endpoint, self.subset, &self.version),
            cache: cached,
        })
    }

    /// Resolves and reads the dataset, downloading it into the cache if needed.
    pub fn load(&self) -> Result<Dataset, DatasetError> {
        let path = match self.resolve()? {
            Source::File(p) | Source::Dir(p) | Source::Cache(p) => p,
            Source::Embedded(cache) => {
                // Copied out once, so every later run (and `bcb dataset`) reads a plain file.
                crate::embedded::materialize(self.subset, &self.version, &cache)?;
                cache
            }
            Source::Hub { url, cache } => {
                tracing::info!("downloading {url}");
                hub::download_to(&url, &cache)?;
                cache
            }
        };
        Dataset::from_file(&path, self.subset, &self.version)
    }
}

/// Which source [`DatasetSpec::resolve`] picked.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    File(PathBuf),
    Dir(PathBuf),
    Cache(PathBuf),
    /// The copy built into the binary, written to this cache file on first use.
    Embedded(PathBuf),
    Hub {
        url: String,
        cache: PathBuf,
    },
}

impl Source {
    pub fn describe(&self) -> String {
        match self {
            Source::File(p) => format!("file {}", p.display()),
            Source::Dir(p) => format!("{DATASET_DIR_ENV} file {}", p.display()),
            Source::Cache(p) => format!("cache {}", p.display()),
            Source::Embedded(p) => format!("embedded copy (written to {})", p.display()),
            Source::Hub { url, .. } => format!("hub {url}"),
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            Source::File(p) | Source::Dir(p) | Source::Cache(p) | Source::Embedded(p) => p,
            Source::Hub { cache, .. } => cache,
        }
    }
}
