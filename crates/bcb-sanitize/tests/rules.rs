//! The sanitizer's rules on hand-written answers (expected outputs checked against the
//! original sanitizer 0.2.5), and the fast span search against the original's cubic one.
#![allow(clippy::print_stdout, clippy::print_stderr)] // test output: what ran, what was skipped

mod common;

use bcb_sanitize::{
    code_extract, code_extract_for, code_extract_naive, sanitize, sanitize_with, strip_think,
    Options, PythonVersion,
};
use common::answers::Rng;

const E: Option<&str> = Some("task_func");

#[test]
fn prose_around_one_fence() {
    let a = "Here's my solution:\n\n```python\nimport os\n\ndef task_func(p):\n    return os.path.exists(p)\n```\n\nIt checks the path.";
    assert_eq!(
        sanitize(a, E),
        "import os\ndef task_func(p):\n    return os.path.exists(p)"
    );
}

#[test]
fn several_fences_keep_the_longest_parsable_span() {
    let a = "```python\nimport re\n```\nand then\n```python\nimport math\n\ndef task_func(x):\n    y = x * 2\n    return math.floor(y)\n```\n```python\nprint(task_func(2))\n```";
    assert_eq!(
        sanitize(a, E),
        "import math\ndef task_func(x):\n    y = x * 2\n    return math.floor(y)"
    );
}

#[test]
fn first_definition_of_a_name_wins() {
    let a = "def task_func():\n    return 1\n\ndef task_func():\n    return 2\n";
    assert_eq!(sanitize(a, E), "def task_func():\n    return 1");
}

#[test]
fn entry_point_pulls_in_helper_class_and_constant_only() {
    let a = "import sys\nLIMIT = 10\nUNUSED = 3\n\nclass Helper:\n    def go(self):\n        return LIMIT\n\ndef other():\n    return UNUSED\n\ndef task_func():\n    return Helper().go()\n";
    assert_eq!(
        sanitize(a, E),
        "import sys\nLIMIT = 10\nclass Helper:\n    def go(self):\n        return LIMIT\ndef task_func():\n    return Helper().go()"
    );
}

#[test]
fn main_block_and_trailing_prints_are_dropped() {
    let a = "def task_func(n):\n    return n + 1\n\nif __name__ == \"__main__\":\n    print(task_func(1))\nprint(task_func(2))\n";
    assert_eq!(sanitize(a, E), "def task_func(n):\n    return n + 1");
}

#[test]
fn tail_trim_cuts_trailing_top_level_lines_naming_the_entry_point() {
    // Reachable from task_func: C (and from C, task_func again). The original then walks
    // back from the last line until an indented one and cuts before `C = task_func...`.
    let a = "def task_func():\n    return C\nC = task_func.__name__\n";
    assert_eq!(sanitize(a, E), "def task_func():\n    return C");
    // Unreachable definitions are dropped; reachable ones ending in an indented line stay.
    let b = "def task_func():\n    return 1\nalias = task_func\ndef g():\n    return alias\n";
    assert_eq!(sanitize(b, E), "def task_func():\n    return 1");
    assert_eq!(
        sanitize(b, Some("g")),
        "def task_func():\n    return 1\nalias = task_func\ndef g():\n    return alias"
    );
}

#[test]
fn empty_and_codeless_answers_fall_back_to_the_first_line() {
    assert_eq!(sanitize("", E), "");
    // The fallback extracts from the unstripped answer: its first line, blanks included.
    assert_eq!(sanitize("   \n\n  ", E), "   ");
    assert_eq!(
        sanitize("I can't do that.\nSorry — really.", E),
        "I can't do that."
    );
}

#[test]
fn syntax_errors_shrink_the_span() {
    let a = "def task_func(:\n    return 1\n\ndef helper():\n    return 2\n\nx = helper()\n";
    // The broken def is left out; the slice for task_func is empty, so the answer is the
    // extracted span of the unstripped text.
    assert_eq!(
        sanitize(a, E),
        "\ndef helper():\n    return 2\n\nx = helper()"
    );
}

#[test]
fn crlf_and_tabs() {
    let a = "```python\r\ndef task_func():\r\n\tx = 1\r\n\treturn x\r\n```\r\n";
    // The trim sees no line starting with a space (tabs), cuts at `def task_func`, leaves
    // nothing, and the fallback span of the unstripped text keeps its '\r's.
    assert_eq!(
        sanitize(a, E),
        "def task_func():\r\n\tx = 1\r\n\treturn x\r"
    );
}

#[test]
fn non_ascii_text_and_identifiers() {
    let a = "Voilà ! Le code 🚀 :\n```python\ndef task_func(s=\"héllo\"):\n    café = s\n    return café\n```\nC’est tout.";
    assert_eq!(
        sanitize(a, E),
        "def task_func(s=\"héllo\"):\n    café = s\n    return café"
    );
}

#[test]
fn decorated_definitions_are_not_kept_like_the_original() {
    // tree-sitter wraps them in `decorated_definition`, which the original ignores.
    let a = "import functools\n\n@functools.cache\ndef task_func():\n    return 1\n";
    assert_eq!(sanitize(a, E), "import functools");
}

#[test]
fn think_blocks_only_with_the_flag() {
    let a = "<think>\nmaybe:\ndef task_func():\n    return 0\n    # and more reasoning lines\n    # that make this span longer\n</think>\ndef task_func():\n    return 1\n";
    let plain = sanitize(a, E);
    let opts = Options {
        strip_think: true,
        ..Options::default()
    };
    assert_eq!(sanitize_with(a, E, &opts), "def task_func():\n    return 1");
    assert_ne!(plain, "def task_func():\n    return 1");
    assert_eq!(strip_think("a<think>x</think>b<think>y"), "ab");
    assert_eq!(strip_think("cut off</think>rest"), "rest");
}

#[test]
fn ties_go_to_the_first_span() {
    let a = "x = 1\ny = 2\n!!!\nz = 3\nw = 4";
    assert_eq!(code_extract(a), "x = 1\ny = 2");
    // Trailing blank lines do not add weight: the shorter span wins.
    assert_eq!(code_extract("\nx = 1\n\n\n"), "\nx = 1");
}

/// Lines that stress the scanner: strings, brackets, continuations, decorators, clauses,
/// prose, fences, indentation.
const POOL: &[&str] = &[
    "x = 1",
    "def f(a,",
    "      b):",
    "    return a",
    "    pass",
    "",
    "   ",
    "# comment",
    "    # indented comment",
    "```python",
    "```",
    "Here's the code:",
    "Note: ok",
    "s = \"\"\"doc",
    "\"\"\"",
    "'''",
    "t = 'it\\",
    "continued'",
    "y = (1 +",
    "     2)",
    "z = [",
    "]",
    ")",
    "if x:",
    "else:",
    "elif y:",
    "try:",
    "except ValueError:",
    "finally:",
    "@dec",
    "class A:",
    "    def m(self):",
    "        return 1",
    "print(f\"{x!r} and {y:>{w}}\")",
    "print(f'{d[\"k\"]}')",
    "v = 1 + \\",
    "    2",
    "w = \\",
    "C’est — fini…",
    "\tz = 2",
    "\x0cq = 3",
    "a = b ? c",
    "k = 'unterminated",
    "m = {'a': [1, (2,",
    "}",
    "lambda: (yield)",
    "    x = 'a' # it's",
    "u = r'\\'",
    "r\"\"\"raw",
    "e = \"x\\\\\"",
    "match x:",
    "    case 1:",
    "        pass",
    "x = 1\r",
    "def g(): return 1\r",
];

fn random_text(rng: &mut Rng) -> String {
    let n = 1 + rng.below(14);
    (0..n)
        .map(|_| rng.pick(POOL))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn fast_search_returns_the_original_span() {
    let mut rng = Rng::new(42);
    for case in 0..3000 {
        let text = random_text(&mut rng);
        for v in [PythonVersion::Py311, PythonVersion::Py312] {
            assert_eq!(
                code_extract_for(&text, v),
                code_extract_naive(&text, v),
                "case {case}, Python {v}, text {text:?}"
            );
        }
    }
}

#[test]
fn fast_search_on_dataset_answers() {
    let Some(f) = common::answers::dataset_file() else {
        eprintln!("SKIPPED: dataset not found (set BCB_DATASET_DIR)");
        return;
    };
    let tasks = common::answers::load_tasks(&f);
    // Naive is cubic: keep the answers short enough.
    let mut checked = 0;
    for a in common::answers::answers(&tasks, 200, 99) {
        if a.text.split('\n').count() > 45 {
            continue;
        }
        assert_eq!(
            code_extract(&a.text),
            code_extract_naive(&a.text, PythonVersion::Py311),
            "{} [{}]",
            a.task_id,
            a.recipe
        );
        checked += 1;
    }
    assert!(checked > 25, "only {checked} short answers");
}
