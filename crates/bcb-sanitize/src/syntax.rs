//! A strict Python syntax check: the Rust stand-in for the original's `ast.parse`.
//!
//! Built on ruff's parser (`ruff_python_parser`), which implements the CPython 3.x grammar and
//! reports both grammar errors and "this syntax needs a newer Python" errors; we treat both as
//! invalid for the chosen [`PythonVersion`], so e.g. `def f[T](): ...` is rejected for 3.11,
//! exactly as `ast.parse` on CPython 3.11 rejects it.

use ruff_python_parser::{parse_unchecked, Mode, ParseOptions};

/// Whose `ast.parse` we agree with. The default is 3.11, the interpreter of the evaluation
/// environment (the original's Docker image uses 3.10; pass `--python-version 3.10` for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum PythonVersion {
    Py310,
    #[default]
    Py311,
    Py312,
    Py313,
}

impl PythonVersion {
    fn ruff(self) -> ruff_python_ast::PythonVersion {
        match self {
            PythonVersion::Py310 => ruff_python_ast::PythonVersion::PY310,
            PythonVersion::Py311 => ruff_python_ast::PythonVersion::PY311,
            PythonVersion::Py312 => ruff_python_ast::PythonVersion::PY312,
            PythonVersion::Py313 => ruff_python_ast::PythonVersion::PY313,
        }
    }

    /// 3.12 tokenizes f-strings as nested code (PEP 701); earlier versions as plain strings.
    pub(crate) fn has_pep701(self) -> bool {
        self >= PythonVersion::Py312
    }
}

impl std::str::FromStr for PythonVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "3.10" | "310" => Ok(PythonVersion::Py310),
            "3.11" | "311" => Ok(PythonVersion::Py311),
            "3.12" | "312" => Ok(PythonVersion::Py312),
            "3.13" | "313" => Ok(PythonVersion::Py313),
            other => Err(format!(
                "unsupported Python version `{other}`; use 3.10, 3.11, 3.12 or 3.13"
            )),
        }
    }
}

impl std::fmt::Display for PythonVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PythonVersion::Py310 => "3.10",
            PythonVersion::Py311 => "3.11",
            PythonVersion::Py312 => "3.12",
            PythonVersion::Py313 => "3.13",
        })
    }
}

/// Where and why code does not parse. `line` and `col` are 1-based; `col` counts characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxErrorInfo {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl std::fmt::Display for SyntaxErrorInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, col {}: {}", self.line, self.col, self.message)
    }
}

/// `ast.parse(code)` succeeds (for Python 3.11).
pub fn syntax_check(code: &str) -> bool {
    syntax_check_for(code, PythonVersion::default())
}

pub fn syntax_check_for(code: &str, version: PythonVersion) -> bool {
    syntax_error(code, version).is_none()
}

/// The first syntax error `ast.parse` would report for `version`, or `None` if the code parses.
pub fn syntax_error(code: &str, version: PythonVersion) -> Option<SyntaxErrorInfo> {
    if let Some(pos) = code.find('\0') {
        // CPython refuses NUL in source (3.11: ValueError, which the original does not even
        // catch; 3.12: SyntaxError). Either way the code is not usable.
        return Some(at(
            code,
            pos,
            "source code cannot contain null bytes".into(),
        ));
    }
    let options = ParseOptions::from(Mode::Module).with_target_version(version.ruff());
    let parsed = parse_unchecked(code, options);
    let first_err = parsed
        .errors()
        .iter()
        .map(|e| (e.location.start().to_usize(), e.error.to_string()))
        .chain(
            parsed
                .unsupported_syntax_errors()
                .iter()
                .map(|e| (e.range.start().to_usize(), e.to_string())),
        )
        .min_by_key(|(pos, _)| *pos)?;
    Some(at(code, first_err.0, first_err.1))
}

/// The module `ast.parse` returns for `version`, or `None` where it raises.
pub(crate) fn parse_module_for(
    code: &str,
    version: PythonVersion,
) -> Option<ruff_python_ast::ModModule> {
    if code.contains('\0') {
        return None;
    }
    let options = ParseOptions::from(Mode::Module).with_target_version(version.ruff());
    let parsed = parse_unchecked(code, options);
    if !parsed.errors().is_empty() || !parsed.unsupported_syntax_errors().is_empty() {
        return None;
    }
    match parsed.into_syntax() {
        ruff_python_ast::Mod::Module(module) => Some(module),
        ruff_python_ast::Mod::Expression(_) => None,
    }
}

fn at(code: &str, pos: usize, message: String) -> SyntaxErrorInfo {
    let pos = pos.min(code.len());
    let before = &code[..pos];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    let col = code[line_start..pos].chars().count() + 1;
    SyntaxErrorInfo { line, col, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_and_rejects_invalid() {
        assert!(syntax_check("def f(x):\n    return x + 1\n"));
        assert!(syntax_check("return 1")); // compile-time error only; ast.parse accepts
        assert!(!syntax_check("def f(:\n"));
        assert!(!syntax_check("Here's the code:"));
        assert!(!syntax_check("  x = 1"));
        assert!(!syntax_check("x = 1\0"));
    }

    #[test]
    fn version_gated_syntax() {
        let pep695 = "def f[T](x: T) -> T:\n    return x\n";
        assert!(!syntax_check_for(pep695, PythonVersion::Py311));
        assert!(syntax_check_for(pep695, PythonVersion::Py312));
        let nested = "f\"{x[\"a\"]}\"";
        assert!(!syntax_check_for(nested, PythonVersion::Py311));
        assert!(syntax_check_for(nested, PythonVersion::Py312));
        let except_star = "try:\n    pass\nexcept* ValueError:\n    pass\n";
        assert!(!syntax_check_for(except_star, PythonVersion::Py310));
        assert!(syntax_check_for(except_star, PythonVersion::Py311));
    }

    #[test]
    fn error_position_is_one_based() {
        let e = syntax_error("x = 1\ny = (\n", PythonVersion::Py311).unwrap();
        assert!(e.line >= 2, "{e}");
    }
}
