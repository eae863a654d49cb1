//! The one samples-file writer: `json.dumps(row)` lines (the original's format), gzip when the
//! name ends in `.gz`, written atomically (a temporary file in the same directory, then a
//! rename), so a reader never sees half a file and a crash leaves the old one.

use std::io::Write;
use std::path::Path;

/// Writes `rows` to `path` as described above.
pub fn write_samples<R: serde::Serialize>(path: &Path, rows: &[R]) -> std::io::Result<()> {
    let mut text = Vec::new();
    for row in rows {
        text.extend(bcb_pyjson::to_line(row).map_err(std::io::Error::other)?);
        text.push(b'\n');
    }
    let bytes = if path.to_string_lossy().ends_with(".gz") {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&text)?;
        gz.finish()?
    } else {
        text
    };
    bcb_pyjson::write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_gzip_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let rows = [serde_json::json!({"task_id": "BigCodeBench/1", "solution": "é"})];
        for name in ["s.jsonl", "s.jsonl.gz"] {
            let p = dir.path().join(name);
            write_samples(&p, &rows).unwrap();
            let back = crate::read_samples(&p).unwrap();
            assert_eq!(back.len(), 1);
            assert_eq!(back[0].task_id, "BigCodeBench/1");
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join("s.jsonl")).unwrap(),
            "{\"task_id\": \"BigCodeBench/1\", \"solution\": \"\\u00e9\"}\n"
        );
    }
}
