//! Download of a dataset split from the Hugging Face hub into the cache.

use std::path::Path;

use crate::{DatasetError, Subset};

/// Parquet file of one split (split name = version) on the hub.
pub fn parquet_url(endpoint: &str, subset: Subset, version: &str) -> String {
    let repo = match subset {
        Subset::Full => "bigcode/bigcodebench",
        Subset::Hard => "bigcode/bigcodebench-hard",
    };
    format!(
        "{}/datasets/{repo}/resolve/main/data/{version}-00000-of-00001.parquet",
        endpoint.trim_end_matches('/')
    )
}

/// Fetches `url` and writes the rows as JSONL to `dest` (atomically).
pub fn download_to(url: &str, _dest: &Path) -> Result<(), DatasetError> {
    Err(DatasetError::Download {
        url: url.to_string(),
        message: "hub download is not implemented yet".into(),
    })
}
