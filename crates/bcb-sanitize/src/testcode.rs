//! Static readings of a task's test code, made by the orchestrator before the sample runs
//! (the harness trusts them as it trusts the rest of the job): the `test*` methods class
//! `TestCases` defines, which a run must report, and the ones the test code itself lets skip
//! or expect to fail, which the reward-hack watch must not blame on the sample.
//!
//! The spec is Python's `ast` on the evaluation interpreter (3.11): a parse that `ast.parse`
//! refuses reads as nothing expected and any skip declared. `tests/testcode.rs` compares both
//! on every task of every dataset version. Read here rather than in the sample's supervisor:
//! parsing there took about a fifth of a warm slot's CPU per job, on the path to the handover.

use ruff_python_ast::visitor::{walk_expr, Visitor};
use ruff_python_ast::{Decorator, Expr, Stmt, StmtClassDef};

use crate::syntax::{parse_module_for, PythonVersion};

/// unittest's names for "skip" and "expect failure": what test code may declare.
const SKIP_NAMES: &[&str] = &[
    "skip",
    "skipIf",
    "skipUnless",
    "skipTest",
    "SkipTest",
    "expectedFailure",
    "_ShouldStop",
];

/// The test class BigCodeBench's test code defines.
const TEST_CLASS: &str = "TestCases";

/// Which tests the test code lets skip or expect to fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeclaredSkips {
    /// These test methods, by a decorator or a call in their own body (in source order).
    Methods(Vec<String>),
    /// Any test may: the class, a fixture or a helper mentions a skip, or the code does not parse.
    Any,
}

impl DeclaredSkips {
    /// As the harness reads them: the method names, or `["*"]` for any.
    pub fn into_names(self) -> Vec<String> {
        match self {
            DeclaredSkips::Methods(methods) => methods,
            DeclaredSkips::Any => vec!["*".to_string()],
        }
    }
}

/// What the test code says before any sample runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCodeReading {
    /// The `test*` methods of the last top-level `TestCases` class, in source order, each
    /// once; `None` when there is no such class or the code does not parse.
    pub expected: Option<Vec<String>>,
    pub declared_skips: DeclaredSkips,
}

/// Reads `code` as Python 3.11's `ast` would.
pub fn read_test_code(code: &str) -> TestCodeReading {
    match parse_module_for(code, PythonVersion::default()) {
        Some(module) => TestCodeReading {
            expected: expected_tests(&module.body),
            declared_skips: declared_skips(&module.body),
        },
        None => TestCodeReading {
            expected: None,
            declared_skips: DeclaredSkips::Any,
        },
    }
}

fn test_classes(body: &[Stmt]) -> impl Iterator<Item = &StmtClassDef> {
    body.iter().filter_map(|stmt| match stmt {
        Stmt::ClassDef(class) if class.name.as_str() == TEST_CLASS => Some(class),
        _ => None,
    })
}

fn expected_tests(body: &[Stmt]) -> Option<Vec<String>> {
    let class = test_classes(body).last()?;
    let mut names: Vec<String> = Vec::new();
    for item in &class.body {
        if let Stmt::FunctionDef(f) = item {
            let name = f.name.as_str();
            if name.starts_with("test") && !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    Some(names)
}

/// `Any` wins wherever it is found, so the order of the checks does not matter.
fn declared_skips(body: &[Stmt]) -> DeclaredSkips {
    let helper_mentions = |stmt: &Stmt| match stmt {
        Stmt::ClassDef(class) if class.name.as_str() == TEST_CLASS => false,
        Stmt::FunctionDef(_) | Stmt::ClassDef(_) => mentions_skip(stmt),
        _ => false,
    };
    // A module-level helper or fixture of the test code, or the class itself.
    if body.iter().any(helper_mentions)
        || test_classes(body).any(|c| c.decorator_list.iter().any(decorator_mentions_skip))
    {
        return DeclaredSkips::Any;
    }
    let mut methods = Vec::new();
    let defs = test_classes(body)
        .flat_map(|c| &c.body)
        .filter_map(|item| match item {
            Stmt::FunctionDef(f) if mentions_skip(item) => Some(f.name.as_str()),
            _ => None,
        });
    for name in defs {
        if !name.starts_with("test") {
            return DeclaredSkips::Any; // a fixture or helper of the class
        }
        methods.push(name.to_string());
    }
    DeclaredSkips::Methods(methods)
}

/// Finds a skip name used as a name or an attribute anywhere in a node (`ast.walk`'s reach:
/// not parameter, keyword or import names, which are no expressions).
#[derive(Default)]
struct SkipMention(bool);

impl<'a> Visitor<'a> for SkipMention {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.0 {
            return;
        }
        self.0 = match expr {
            Expr::Name(name) => SKIP_NAMES.contains(&name.id.as_str()),
            Expr::Attribute(attribute) => SKIP_NAMES.contains(&attribute.attr.as_str()),
            _ => false,
        };
        walk_expr(self, expr);
    }
}

fn mentions_skip(stmt: &Stmt) -> bool {
    let mut found = SkipMention::default();
    found.visit_stmt(stmt);
    found.0
}

fn decorator_mentions_skip(decorator: &Decorator) -> bool {
    let mut found = SkipMention::default();
    found.visit_decorator(decorator);
    found.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const TESTS: &str = "import unittest\n\
        class TestCases(unittest.TestCase):\n\
        \x20   def setUp(self):\n        self.x = 1\n\
        \x20   def test_a(self):\n        pass\n\
        \x20   @unittest.skip('no network')\n    def test_b(self):\n        pass\n\
        \x20   async def test_c(self):\n        self.skipTest('later')\n\
        \x20   def test_a(self):\n        pass\n\
        \x20   def helper(self, skip=True):\n        pass\n";

    #[test]
    fn reads_the_test_methods_once_each_in_source_order_and_the_declared_skips() {
        let reading = read_test_code(TESTS);
        assert_eq!(
            reading.expected,
            Some(vec!["test_a".into(), "test_b".into(), "test_c".into()])
        );
        // A keyword parameter named `skip` is no name in `ast`: the helper declares nothing.
        assert_eq!(
            reading.declared_skips,
            DeclaredSkips::Methods(vec!["test_b".into(), "test_c".into()])
        );
    }

    #[test]
    fn a_skip_in_a_fixture_a_helper_or_on_the_class_lets_any_test_skip() {
        let fixture = TESTS.replace("self.x = 1", "raise unittest.SkipTest('x')");
        assert_eq!(read_test_code(&fixture).declared_skips, DeclaredSkips::Any);
        let helper = format!("{TESTS}\ndef needs_net():\n    return unittest.skipIf(True, 'x')\n");
        assert_eq!(read_test_code(&helper).declared_skips, DeclaredSkips::Any);
        let class = TESTS.replace(
            "class TestCases",
            "@unittest.skipUnless(True, 'x')\nclass TestCases",
        );
        assert_eq!(read_test_code(&class).declared_skips, DeclaredSkips::Any);
    }

    #[test]
    fn code_that_does_not_parse_or_has_no_test_class_expects_nothing() {
        let broken = read_test_code("class TestCases(:\n");
        assert_eq!(broken.expected, None);
        assert_eq!(broken.declared_skips, DeclaredSkips::Any);
        let none = read_test_code("def test_a():\n    pass\n");
        assert_eq!(none.expected, None);
        assert_eq!(none.declared_skips, DeclaredSkips::Methods(vec![]));
        // The last class of the name is the one unittest would run.
        let two = read_test_code(
            "class TestCases:\n    def test_x(self): pass\nclass TestCases:\n    def test_y(self): pass\n",
        );
        assert_eq!(two.expected, Some(vec!["test_y".into()]));
    }
}
