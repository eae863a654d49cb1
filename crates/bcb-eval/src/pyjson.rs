//! JSON written the way Python's `json.dump(obj, f, indent=2)` writes it: two-space indent,
//! `": "` after keys, and every non-ASCII character escaped as `\uXXXX` (surrogate pairs above
//! U+FFFF), so our files are byte-compatible with the original's.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

struct PythonFormatter<'a>(PrettyFormatter<'a>);

impl Formatter for PythonFormatter<'_> {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, ch) in fragment.char_indices() {
            if ch.is_ascii() {
                continue;
            }
            w.write_all(&fragment.as_bytes()[start..i])?;
            let mut units = [0u16; 2];
            for unit in ch.encode_utf16(&mut units) {
                write!(w, "\\u{unit:04x}")?;
            }
            start = i + ch.len_utf8();
        }
        w.write_all(&fragment.as_bytes()[start..])
    }
}

/// Serializes `value` like `json.dumps(value, indent=2)`.
pub fn to_python_json<T: Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        PythonFormatter(PrettyFormatter::with_indent(b"  ")),
    );
    value.serialize(&mut ser)?;
    Ok(out)
}

/// Writes `value` to `path` atomically (temp file in the same directory, then rename).
pub fn write_atomic<T: Serialize>(path: &std::path::Path, value: &T) -> anyhow::Result<()> {
    use anyhow::Context;
    let bytes = to_python_json(value)?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, &bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_python() {
        let v = serde_json::json!({"a": "é😀\n\"", "b": [1, 2.5], "c": {}, "d": []});
        let s = String::from_utf8(to_python_json(&v).unwrap()).unwrap();
        // python3 -c 'import json;print(json.dumps({"a":"é😀\n\"","b":[1,2.5],"c":{},"d":[]},indent=2))'
        let expected = "{\n  \"a\": \"\\u00e9\\ud83d\\ude00\\n\\\"\",\n  \"b\": [\n    1,\n    2.5\n  ],\n  \"c\": {},\n  \"d\": []\n}";
        assert_eq!(s, expected);
    }
}
