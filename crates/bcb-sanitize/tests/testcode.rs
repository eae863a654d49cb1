//! Differential test: `read_test_code` against its spec, Python's `ast` on the evaluation
//! interpreter, over every task's test code in every dataset file (both subsets, every
//! version) and over test code written to hit the edges (skip names where `ast` has no name
//! node, duplicate methods, decorated and nested definitions, code that does not parse).
#![allow(clippy::print_stderr)] // a skipped test says why

mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};

use bcb_sanitize::read_test_code;
use common::answers::read_gz;

/// The readings as the harness made them in the sample's supervisor before bcb did: one JSON
/// line of test code in, `{"expected": [...] | null, "skips": [...]}` out ("*": any test).
const SPEC: &str = r#"
import ast, json, sys
SKIP = {"skip", "skipIf", "skipUnless", "skipTest", "SkipTest", "expectedFailure", "_ShouldStop"}
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
def mentions(node):
    return any((isinstance(n, ast.Name) and n.id in SKIP) or (isinstance(n, ast.Attribute) and n.attr in SKIP) for n in ast.walk(node))
def read(code):
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None, ["*"]
    expected, skips = None, []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TestCases":
            expected = []
            for item in node.body:
                if isinstance(item, DEFS) and item.name.startswith("test") and item.name not in expected:
                    expected.append(item.name)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TestCases":
            if any(mentions(d) for d in node.decorator_list):
                return expected, ["*"]
            for item in node.body:
                if isinstance(item, DEFS) and mentions(item):
                    if not item.name.startswith("test"):
                        return expected, ["*"]
                    skips.append(item.name)
        elif isinstance(node, DEFS + (ast.ClassDef,)) and mentions(node):
            return expected, ["*"]
    return expected, skips
for line in sys.stdin:
    expected, skips = read(json.loads(line))
    print(json.dumps({"expected": expected, "skips": skips}))
"#;

/// Edge cases: where a skip name is no `ast.Name`/`ast.Attribute` (a parameter, a keyword, an
/// import, a `global`, an `except ... as`, a pattern), where it is (an f-string, a walrus, a
/// default, an annotation, a nested function), and readings `ast` refuses.
const EDGES: &[&str] = &[
    "class TestCases:\n    def test_a(self, skip=1): pass\n    def test_b(self): f(skip=1)\n",
    "from unittest import skip\nclass TestCases:\n    def test_a(self):\n        global skipIf\n        try: pass\n        except E as SkipTest: pass\n",
    "class TestCases:\n    def test_a(self):\n        match x:\n            case {'k': skip}: pass\n            case C(skip=1): pass\n",
    "class TestCases:\n    def test_a(self):\n        match x:\n            case m.skip: pass\n",
    "class TestCases:\n    def test_a(self): print(f'{skip}')\n    def test_b(self): (skipIf := 1)\n",
    "class TestCases:\n    def test_a(self, x=unittest.skip): pass\n    def test_b(self, x: SkipTest): pass\n    def test_c(self) -> expectedFailure: pass\n",
    "class TestCases:\n    def test_a(self):\n        def inner():\n            raise _ShouldStop\n    x = skip\n",
    "class TestCases:\n    async def test_a(self): await self.skipTest('x')\n    def test_a(self): pass\n    def testb(self): pass\n    def tes_c(self): pass\n",
    "class TestCases(Base, metaclass=skip):\n    def test_a(self): pass\n",
    "@decorate(lambda: unittest.skip)\nclass TestCases:\n    def test_a(self): pass\n",
    "class Helper:\n    def go(self): self.skipTest('x')\nclass TestCases:\n    def test_a(self): pass\n",
    "skip = unittest.skip\nif True:\n    def helper(): skip()\nclass TestCases:\n    def test_a(self): pass\n",
    "class TestCases:\n    def test_a(self): pass\nclass TestCases:\n    def test_b(self): self.skipTest('x')\n",
    "class TestCases:\n    class Inner:\n        def test_x(self): skip()\n    def test_a(self): pass\n",
    "def test_a(): pass\n",
    "class TestCases:\n    def test_a(self):\n  pass\n",
    "class TestCases:\n    def test_a[T](self): pass\n",
    "x = 1\0\n",
    "",
];

fn ours(code: &str) -> serde_json::Value {
    let reading = read_test_code(code);
    serde_json::json!({"expected": reading.expected, "skips": reading.declared_skips.into_names()})
}

#[test]
fn reads_every_dataset_test_and_the_edge_cases_as_pythons_ast_does() {
    let (Some(python), Some(dir)) = (bcb_testkit::python(), bcb_testkit::dataset_dir()) else {
        return;
    };
    let mut codes: BTreeSet<String> = EDGES.iter().map(|c| c.to_string()).collect();
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("dataset dir").flatten() {
        let path = entry.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if !(name.starts_with("bigcodebench") && name.ends_with(".jsonl.gz")) {
            continue;
        }
        files += 1;
        for line in read_gz(&path).lines().filter(|l| !l.trim().is_empty()) {
            let row: serde_json::Value = serde_json::from_str(line).expect("dataset row");
            codes.insert(row["test"].as_str().expect("test").to_string());
        }
    }
    assert!(files >= 2, "no dataset files in {}", dir.display());
    let codes: Vec<String> = codes.into_iter().collect();
    let mut child = Command::new(&python)
        .args(["-c", SPEC])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python");
    let mut stdin = child.stdin.take().expect("stdin");
    let input: String = codes
        .iter()
        .map(|c| serde_json::to_string(c).expect("json") + "\n")
        .collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("python output");
    writer.join().expect("writer").expect("write");
    assert!(out.status.success(), "the spec failed");
    let theirs: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("spec line"))
        .collect();
    assert_eq!(theirs.len(), codes.len());
    let differ: Vec<String> = codes
        .iter()
        .zip(&theirs)
        .filter(|(code, spec)| ours(code) != **spec)
        .map(|(code, spec)| format!("{code:?}\n  ast: {spec}\n  ours: {}", ours(code)))
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} test codes read differently:\n{}",
        differ.len(),
        codes.len(),
        differ.join("\n")
    );
    eprintln!(
        "{} test codes from {files} files read as ast does",
        codes.len()
    );
}
