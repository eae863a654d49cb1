//! The BigCodeBench sanitizer, with the same output as the original (`bigcodebench.sanitize`
//! 0.2.5) and a strict Python syntax check (`bigcodebench.syncheck`).
//!
//! ```
//! let answer = "Sure!\n```python\nimport math\n\ndef task_func(x):\n    return math.sqrt(x)\n\nprint(task_func(4))\n```\n";
//! assert_eq!(
//!     bcb_sanitize::sanitize(answer, Some("task_func")),
//!     "import math\ndef task_func(x):\n    return math.sqrt(x)"
//! );
//! ```

mod answer;
pub mod blocking;
mod extract;
mod pystr;
pub mod safety;
mod slice;
mod syntax;
pub mod tamper;
mod testcode;

pub use answer::{read_answer, AnswerText, ReadAs, Reading};
pub use extract::{code_extract, code_extract_for, code_extract_naive};
pub use pystr::{py_splitlines, py_strip};
pub use syntax::{syntax_check, syntax_check_for, syntax_error, PythonVersion, SyntaxErrorInfo};
pub use testcode::{read_test_code, DeclaredSkips, TestCodeReading};

/// Behaviour beyond the original's; the defaults reproduce it exactly.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Whose `ast.parse` decides what parses (default 3.11).
    pub python_version: PythonVersion,
    /// Remove `<think>…</think>` blocks (reasoning models) before anything else. Off by
    /// default because the original does not, and it can change the result.
    pub strip_think: bool,
}

/// The original's `sanitize(code, entrypoint)`: extract the longest parsable span, keep the
/// imports and the definitions reachable from `entrypoint`, trim, fall back to the span.
pub fn sanitize(code: &str, entrypoint: Option<&str>) -> String {
    sanitize_with(code, entrypoint, &Options::default())
}

pub fn sanitize_with(code: &str, entrypoint: Option<&str>, opts: &Options) -> String {
    let stripped_think;
    let code = if opts.strip_think {
        stripped_think = strip_think(code);
        stripped_think.as_str()
    } else {
        code
    };
    let v = opts.python_version;
    let extracted = code_extract_for(py_strip(code), v);
    let target = slice::target_code_or_empty(&extracted, entrypoint);
    slice::finish(target, || code_extract_for(code, v))
}

/// Removes every `<think>…</think>` block; an unclosed `<think>` removes the rest of the text
/// and a lone `</think>` removes everything before it (the reasoning was cut off at the start).
pub fn strip_think(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    if let Some(close) = rest.find("</think>") {
        if !rest[..close].contains("<think>") {
            rest = &rest[close + "</think>".len()..];
        }
    }
    while let Some(open) = rest.find("<think>") {
        out.push_str(&rest[..open]);
        match rest[open..].find("</think>") {
            Some(close) => rest = &rest[open + close + "</think>".len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}
