//! JSON written the way Python's `json.dumps` writes it, so bcb's files are byte-compatible
//! with the original's: `ensure_ascii` escaping (every character outside printable ASCII as
//! `\uXXXX`, DEL included, surrogate pairs above U+FFFF), floats as `repr(float)`, and the
//! separators `", "` / `": "` (compact rows) or a two-space indent (`indent=2` files).
//!
//! The one writer of the workspace: the dataset cache, samples files, result files and
//! journals all go through it.

use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter};

/// `json.dumps(s)` of one string, appended to `out`.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    escape_into(out, s).expect("writing to a Vec cannot fail");
    out.push(b'"');
}

/// The body of a Python JSON string (no quotes).
fn escape_into<W: ?Sized + Write>(w: &mut W, s: &str) -> io::Result<()> {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let escaped: Option<&[u8]> = match c {
            '"' => Some(b"\\\""),
            '\\' => Some(b"\\\\"),
            '\n' => Some(b"\\n"),
            '\r' => Some(b"\\r"),
            '\t' => Some(b"\\t"),
            '\u{8}' => Some(b"\\b"),
            '\u{c}' => Some(b"\\f"),
            ' '..='~' => continue,
            _ => None,
        };
        w.write_all(&bytes[start..i])?;
        match escaped {
            Some(e) => w.write_all(e)?,
            None => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(w, "\\u{unit:04x}")?;
                }
            }
        }
        start = i + c.len_utf8();
    }
    w.write_all(&bytes[start..])
}

/// Python's `repr(float)`: the shortest digits that round-trip, fixed notation for decimal
/// exponents -4..=15, else `d.ddde+XX`; `nan`, `inf`, `-inf` for the non-finite values.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    // Rust's `{:e}` prints the same shortest round-trip digits, e.g. `-1.25e-7`.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` always has an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` exponent is an integer");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}e{esign}{:02}", exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        let zeros = "0".repeat(int_len - digits.len());
        format!("{sign}{digits}{zeros}.0")
    } else {
        let (int_part, frac) = digits.split_at(int_len);
        format!("{sign}{int_part}.{frac}")
    }
}

/// A float as `json.dumps` prints it (`NaN`, `Infinity`, `-Infinity` for non-finite values).
pub fn json_float(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        float_repr(x)
    }
}

/// `json.dumps` layout: `indent = None` is one line with `", "` and `": "`; `Some(n)` puts
/// each item on its own line, n spaces per level, with `","` at line ends.
struct PythonFormatter {
    indent: Option<usize>,
    level: usize,
    has_value: bool,
}

impl PythonFormatter {
    fn newline<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        if let Some(n) = self.indent {
            w.write_all(b"\n")?;
            for _ in 0..n * self.level {
                w.write_all(b" ")?;
            }
        }
        Ok(())
    }

    fn separator<W: ?Sized + Write>(&self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(if self.indent.is_some() { b"," } else { b", " })?;
        }
        self.newline(w)
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, b: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(b)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, b: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.newline(w)?;
        }
        self.has_value = true;
        w.write_all(b)
    }
}

impl Formatter for PythonFormatter {
    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        w.write_all(json_float(value).as_bytes())
    }
    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(w, f64::from(value))
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.separator(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.separator(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        escape_into(w, fragment)
    }
    fn write_char_escape<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        escape: CharEscape,
    ) -> io::Result<()> {
        // serde_json hands control characters here; Python spells them the same way except
        // that it has no `\/`, which serde_json never emits.
        let s: String = match escape {
            CharEscape::Quote => "\\\"".into(),
            CharEscape::ReverseSolidus => "\\\\".into(),
            CharEscape::Solidus => "/".into(),
            CharEscape::Backspace => "\\b".into(),
            CharEscape::FormFeed => "\\f".into(),
            CharEscape::LineFeed => "\\n".into(),
            CharEscape::CarriageReturn => "\\r".into(),
            CharEscape::Tab => "\\t".into(),
            CharEscape::AsciiControl(b) => format!("\\u{b:04x}"),
        };
        w.write_all(s.as_bytes())
    }
}

fn serialize_into<W: Write, T: Serialize + ?Sized>(
    out: W,
    value: &T,
    indent: Option<usize>,
) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(
        out,
        PythonFormatter {
            indent,
            level: 0,
            has_value: false,
        },
    );
    value.serialize(&mut ser)
}

fn serialize<T: Serialize + ?Sized>(
    value: &T,
    indent: Option<usize>,
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::new();
    serialize_into(&mut out, value, indent)?;
    Ok(out)
}

/// `json.dumps(value)`: one line, `", "` and `": "` separators (samples rows, journals).
pub fn to_line<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    serialize(value, None)
}

/// `json.dumps(value, indent=2)` (result files).
pub fn to_pretty<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    serialize(value, Some(2))
}

/// Writes `dest` so that readers see the old file or the whole new one, never a part: a temp
/// file in the same directory (mode 0644, so shared caches stay readable), flushed, renamed.
pub fn write_atomic(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(dest, |w| w.write_all(bytes))
}

/// [`to_pretty`] of `value` written to `dest` as [`write_atomic`] does, streamed: the file's
/// bytes are never held in memory at once (result files of a million samples are gigabytes).
pub fn write_pretty_atomic<T: Serialize + ?Sized>(dest: &Path, value: &T) -> io::Result<()> {
    write_atomic_with(dest, |w| {
        let mut buf = io::BufWriter::with_capacity(1 << 20, w);
        serialize_into(&mut buf, value, Some(2)).map_err(io::Error::other)?;
        buf.flush()
    })
}

fn write_atomic_with(
    dest: &Path,
    write: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(".bcb-").suffix(".tmp");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    let mut tmp = builder.tempfile_in(dir)?;
    write(tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    tmp.persist(dest).map_err(|e| e.error)?;
    // Make the rename itself durable; failing that is harmless.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pretty_like_python_indent_2() {
        let v = json!({"a": "é😀\n\"\u{7f}\u{1}", "b": [1, 2.5, 1e16, 1e-5], "c": {}, "d": [], "e": {"x": [true, null]}});
        let s = String::from_utf8(to_pretty(&v).unwrap()).unwrap();
        // python3 -c 'import json;print(json.dumps({"a":"é😀\n\"\x7f\x01","b":[1,2.5,1e16,1e-5],"c":{},"d":[],"e":{"x":[True,None]}},indent=2))'
        let expected = "{\n  \"a\": \"\\u00e9\\ud83d\\ude00\\n\\\"\\u007f\\u0001\",\n  \"b\": [\n    1,\n    2.5,\n    1e+16,\n    1e-05\n  ],\n  \"c\": {},\n  \"d\": [],\n  \"e\": {\n    \"x\": [\n      true,\n      null\n    ]\n  }\n}";
        assert_eq!(s, expected);
    }

    #[test]
    fn streamed_file_equals_to_pretty() {
        let v = json!({"date": "2025-01-01 10:00", "eval": {"t": [{"s": "x\ny", "n": 1.5}]}});
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        write_pretty_atomic(&p, &v).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), to_pretty(&v).unwrap());
    }

    #[test]
    fn line_like_python_dumps() {
        let v = json!({"task_id": "BigCodeBench/1", "solution": "x\ty", "n": [1, 0.1], "e": {}});
        let s = String::from_utf8(to_line(&v).unwrap()).unwrap();
        // python3 -c 'import json;print(json.dumps({"task_id":"BigCodeBench/1","solution":"x\ty","n":[1,0.1],"e":{}}))'
        assert_eq!(
            s,
            r#"{"task_id": "BigCodeBench/1", "solution": "x\ty", "n": [1, 0.1], "e": {}}"#
        );
    }

    #[test]
    fn str_like_python() {
        let mut out = Vec::new();
        write_str(&mut out, "a\"b\\c\n\té😀\u{7f}\u{1}");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""a\"b\\c\n\t\u00e9\ud83d\ude00\u007f\u0001""#
        );
    }

    #[test]
    fn floats_like_python_repr() {
        // What CPython 3.11 `repr` prints.
        for (x, want) in [
            (0.7876234055, "0.7876234055"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e22, "1.2345e+22"),
            (123456789012345.6, "123456789012345.6"),
            (f64::from(0.1f32), "0.10000000149011612"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(float_repr(x), want, "{x}");
        }
        assert_eq!(json_float(f64::INFINITY), "Infinity");
    }
}
