//! The default dataset version built into the library by `build.rs` (when the build found a
//! copy with the published sha256; dataset files are never committed to the repository).

use std::io::Read;
use std::path::Path;

use crate::{DatasetError, Subset, DEFAULT_VERSION};

mod data {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

/// The embedded `.jsonl.gz` bytes for `subset` at `version`, if this build has them.
pub fn gz(subset: Subset, version: &str) -> Option<&'static [u8]> {
    if version != DEFAULT_VERSION {
        return None;
    }
    match subset {
        Subset::Full => data::FULL_V014,
        Subset::Hard => data::HARD_V014,
    }
}

/// Whether this build carries the default version of `subset`.
pub fn has_embedded(subset: Subset) -> bool {
    gz(subset, DEFAULT_VERSION).is_some()
}

/// What to say when the default version is wanted offline and this build lacks it.
pub(crate) fn missing_hint(version: &str) -> String {
    if version == DEFAULT_VERSION && !has_embedded(Subset::Full) {
        format!(
            " (this bcb was built without the embedded {DEFAULT_VERSION} dataset: rebuild with \
             BCB_DATASET_DIR set to a folder holding bigcodebench[-hard]-{DEFAULT_VERSION}.jsonl.gz)"
        )
    } else {
        String::new()
    }
}

/// Writes the embedded JSONL (uncompressed, as the cache holds it) to `dest`, atomically.
pub(crate) fn materialize(subset: Subset, version: &str, dest: &Path) -> Result<(), DatasetError> {
    let gz = gz(subset, version).ok_or_else(|| {
        DatasetError::NotFound(format!(
            "no embedded {version} {subset} dataset in this build"
        ))
    })?;
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut text)
        .map_err(|e| DatasetError::NotFound(format!("the embedded dataset is corrupt: {e}")))?;
    let io = |e: std::io::Error| {
        DatasetError::NotFound(format!(
            "cannot write the embedded dataset to {} ({e}); set BCB_CACHE_DIR to a writable folder",
            dest.display()
        ))
    };
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    bcb_pyjson::write_atomic(dest, &text).map_err(io)
}
