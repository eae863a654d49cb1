//! Reading samples files.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::SamplesError;

/// Where a sample came from, for messages: `file:line` or the `.py` path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub path: PathBuf,
    /// 1-based line for JSONL rows; `None` for a `.py` file of a directory layout.
    pub line: Option<usize>,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.path.display()),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

/// The code of a sample as given: a full solution, or a completion to append to the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SampleBody {
    Solution(String),
    Completion(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub task_id: String,
    pub body: SampleBody,
    /// The unsanitized model output, when the file carries one.
    pub raw_solution: Option<String>,
    pub origin: Origin,
}

/// Reads a JSONL file (optionally gzip'd) or a directory layout, in file order.
pub fn read_samples(path: &Path) -> Result<Vec<Sample>, SamplesError> {
    if path.is_dir() {
        read_dir_layout(path)
    } else {
        read_jsonl(path)
    }
}

/// A file's bytes, gunzipped when they are gzip data (by the magic bytes, not the name): the
/// one reader of bcb's possibly-compressed files (samples, result files).
pub fn read_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    let raw = std::fs::read(path)?;
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out)?;
    Ok(out)
}

fn read_jsonl(path: &Path) -> Result<Vec<Sample>, SamplesError> {
    let io_err = |source| SamplesError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = read_bytes(path).map_err(io_err)?;
    let mut samples = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = i + 1;
        let err = |message: String| SamplesError::Line {
            path: path.to_path_buf(),
            line: line_no,
            message,
        };
        let text = std::str::from_utf8(line).map_err(|e| {
            err(format!(
                "not valid UTF-8 (byte {} of the line); re-encode the file as UTF-8",
                e.valid_up_to() + 1
            ))
        })?;
        if text.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| err(format!("not a JSON object: {e}")))?;
        let obj = value
            .as_object()
            .ok_or_else(|| err("expected a JSON object with task_id and solution".into()))?;
        let string_field = |name: &str| -> Result<Option<String>, SamplesError> {
            match obj.get(name) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(err(format!(
                    "`{name}` must be a string, found {}; for several samples of a task repeat the task_id on separate lines",
                    json_kind(other)
                ))),
            }
        };
        let task_id = string_field("task_id")?.ok_or_else(|| err("missing `task_id`".into()))?;
        let body = match (string_field("solution")?, string_field("completion")?) {
            (Some(s), _) => SampleBody::Solution(s),
            (None, Some(c)) => SampleBody::Completion(c),
            (None, None) => {
                return Err(err(format!(
                    "sample for {task_id} has neither `solution` nor `completion`"
                )))
            }
        };
        samples.push(Sample {
            task_id,
            body,
            raw_solution: string_field("raw_solution")?,
            origin: Origin {
                path: path.to_path_buf(),
                line: Some(line_no),
            },
        });
    }
    Ok(samples)
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// `{dir}/BigCodeBench_N/{k}.py`: solutions are complete programs, ordered by `k`.
fn read_dir_layout(dir: &Path) -> Result<Vec<Sample>, SamplesError> {
    let io_err = |path: &Path, source| SamplesError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut task_dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io_err(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    task_dirs.sort_by_key(|p| {
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        (task_number_of_dir(&name).unwrap_or(u64::MAX), name)
    });
    let mut samples = Vec::new();
    for task_dir in task_dirs {
        let name = task_dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let task_id = name.replacen('_', "/", 1);
        let mut files: Vec<(u64, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(&task_dir).map_err(|e| io_err(&task_dir, e))? {
            let p = entry.map_err(|e| io_err(&task_dir, e))?.path();
            if p.extension().is_some_and(|e| e == "py") {
                let stem = p.file_stem().unwrap_or_default().to_string_lossy();
                let k = stem.parse::<u64>().map_err(|_| SamplesError::File {
                    path: p.clone(),
                    message: "sample files must be named {k}.py with k = 0, 1, ...".into(),
                })?;
                files.push((k, p));
            }
        }
        files.sort();
        for (_, p) in files {
            let bytes = std::fs::read(&p).map_err(|e| io_err(&p, e))?;
            let code = String::from_utf8(bytes).map_err(|e| SamplesError::Line {
                path: p.clone(),
                line: line_of_byte(e.as_bytes(), e.utf8_error().valid_up_to()),
                message: "not valid UTF-8; re-encode the file as UTF-8".into(),
            })?;
            samples.push(Sample {
                task_id: task_id.clone(),
                body: SampleBody::Solution(code),
                raw_solution: None,
                origin: Origin {
                    path: p,
                    line: None,
                },
            });
        }
    }
    Ok(samples)
}

fn task_number_of_dir(name: &str) -> Option<u64> {
    name.rsplit('_').next()?.parse().ok()
}

fn line_of_byte(bytes: &[u8], offset: usize) -> usize {
    bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::File::create(&p)
            .unwrap()
            .write_all(content)
            .unwrap();
        p
    }

    #[test]
    fn reads_solution_and_completion_rows() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            "s.jsonl",
            b"{\"task_id\": \"BigCodeBench/1\", \"solution\": \"x = 1\"}\n\n{\"task_id\": \"BigCodeBench/2\", \"completion\": \"  return 2\"}\n",
        );
        let s = read_samples(&p).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].body, SampleBody::Solution("x = 1".into()));
        assert_eq!(s[1].body, SampleBody::Completion("  return 2".into()));
        assert_eq!(s[1].origin.line, Some(3));
    }

    #[test]
    fn errors_name_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let cases: &[(&[u8], &str)] = &[
            (b"{\"task_id\": \"BigCodeBench/1\", \"solution\": \"x\"}\n{bad json\n", ":2: not a JSON object"),
            (b"{\"task_id\": \"BigCodeBench/1\"}\n", ":1: sample for BigCodeBench/1 has neither"),
            (b"{\"solution\": \"x\"}\n", ":1: missing `task_id`"),
            (b"{\"task_id\": \"BigCodeBench/1\", \"solution\": [\"a\"]}\n", ":1: `solution` must be a string"),
            (b"{\"task_id\": \"BigCodeBench/1\", \"solution\": \"x\"}\n{\"task_id\": \"BigCodeBench/1\", \"solution\": \"\xff\"}\n", ":2: not valid UTF-8"),
        ];
        for (content, expected) in cases {
            let p = write(d.path(), "bad.jsonl", content);
            let msg = read_samples(&p).unwrap_err().to_string();
            assert!(msg.contains("bad.jsonl"), "{msg}");
            assert!(msg.contains(expected), "expected {expected:?} in {msg}");
        }
    }

    #[test]
    fn reads_directory_layout_in_numeric_order() {
        let d = tempfile::tempdir().unwrap();
        for (task, k) in [
            ("BigCodeBench_10", 1),
            ("BigCodeBench_10", 0),
            ("BigCodeBench_2", 0),
        ] {
            std::fs::create_dir_all(d.path().join(task)).unwrap();
            write(
                &d.path().join(task),
                &format!("{k}.py"),
                format!("# {task} {k}").as_bytes(),
            );
        }
        let s = read_samples(d.path()).unwrap();
        let got: Vec<(String, SampleBody)> = s.into_iter().map(|s| (s.task_id, s.body)).collect();
        assert_eq!(
            got,
            vec![
                (
                    "BigCodeBench/2".into(),
                    SampleBody::Solution("# BigCodeBench_2 0".into())
                ),
                (
                    "BigCodeBench/10".into(),
                    SampleBody::Solution("# BigCodeBench_10 0".into())
                ),
                (
                    "BigCodeBench/10".into(),
                    SampleBody::Solution("# BigCodeBench_10 1".into())
                ),
            ]
        );
    }
}
