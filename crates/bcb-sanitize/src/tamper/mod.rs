//! A static scan for samples written against the evaluation harness rather than the task:
//! frame and heap introspection, replacing builtins or import/class hooks, patching unittest,
//! the harness or the modules it uses, reading process memory, ctypes.
//!
//! In-process Python cannot be made tamper-proof, so the executor only raises the cost of a
//! forged verdict; this scan flags the known ways in before the sample runs. It works on the
//! tree-sitter syntax tree (a sample that does not parse is left to the executor).
//!
//! ```
//! use bcb_sanitize::tamper::{findings_list, scan};
//! let f = scan("import sys\ndef task_func():\n    return sys._getframe(1).f_locals\n");
//! assert_eq!(f[0].rule, "frame-introspection");
//! assert_eq!(findings_list(&f), "frame-introspection (line 3)");
//! assert!(scan("import math\ndef task_func(x):\n    return math.sqrt(x)\n").is_empty());
//! ```

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use tree_sitter::{Node, Parser};

mod patterns;

use patterns::{
    FRAME_ATTRS, FRAME_CALLS, FUNCTION_ATTRS, GC_CALLS, HARNESS_MODULES, RAW_FD_CALLS, SYS_GUARDED,
    TRACE_CALLS,
};

/// One suspicious construct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TamperFinding {
    /// Stable rule id (see [`RULES`]).
    pub rule: &'static str,
    /// 1-based line in the scanned code.
    pub line: usize,
    /// The construct, shortened.
    pub text: String,
}

/// Every rule id with what it catches.
pub const RULES: &[(&str, &str)] = &[
    (
        "frame-introspection",
        "sys._getframe, inspect.currentframe/stack, f_back/f_locals/tb_frame: reach the harness's locals",
    ),
    (
        "gc-introspection",
        "gc.get_objects/get_referrers/get_referents: find the harness's objects on the heap",
    ),
    (
        "subclass-walk",
        "__subclasses__(): find the harness's classes through their bases",
    ),
    (
        "trace-hook",
        "sys.settrace/setprofile: run code inside the harness's frames",
    ),
    (
        "builtins-write",
        "assigning to builtins / __builtins__",
    ),
    (
        "import-hook",
        "replacing __import__ or __build_class__, sys.meta_path/path_hooks",
    ),
    (
        "module-patch",
        "writing attributes of sys.modules entries or of modules the harness relies on (json, os, gc, traceback, ...)",
    ),
    (
        "unittest-write",
        "writing attributes of unittest or its classes",
    ),
    (
        "harness-access",
        "reaching the harness module (sys.modules['__main__'], import __main__)",
    ),
    (
        "function-patch",
        "assigning __code__, __globals__, __defaults__, __closure__",
    ),
    (
        "proc-mem",
        "/proc/<pid>/mem or process_vm_readv/writev: read or write process memory",
    ),
    (
        "raw-fd",
        "os.read/os.write/os.fstat/os.dup/os.fdopen, /proc/self/fd, /dev/fd: reach descriptors the sample did not open (the report pipes)",
    ),
    (
        "ctypes",
        "ctypes (outside the tasks about ctypes): raw memory access",
    ),
];

/// What a flagged sample gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TamperPolicy {
    /// Not run: `fail`, with the findings as the reason.
    #[default]
    Refuse,
    /// Run as usual; the findings are reported next to the verdict.
    Warn,
    /// No scan.
    Off,
}

impl TamperPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            TamperPolicy::Refuse => "refuse",
            TamperPolicy::Warn => "warn",
            TamperPolicy::Off => "off",
        }
    }
}

impl fmt::Display for TamperPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TamperPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "refuse" => Ok(TamperPolicy::Refuse),
            "warn" => Ok(TamperPolicy::Warn),
            "off" => Ok(TamperPolicy::Off),
            other => Err(format!(
                "unknown tamper policy `{other}`: expected refuse, warn or off"
            )),
        }
    }
}

/// The findings of a refused sample, as its details text lists them after the refusal's
/// marker (`bcb_executor::Marker::TamperRefused`).
pub fn findings_list(findings: &[TamperFinding]) -> String {
    let list: Vec<String> = findings
        .iter()
        .map(|f| format!("{} (line {})", f.rule, f.line))
        .collect();
    list.join(", ")
}

/// Scans a program; `ctypes` is flagged. See [`scan_for_task`] for tasks about ctypes.
pub fn scan(code: &str) -> Vec<TamperFinding> {
    scan_with(code, false)
}

/// Scans a program for a task whose declared libraries are `libs` (the dataset's `libs`):
/// a task that uses ctypes itself may use it.
pub fn scan_for_task<S: AsRef<str>>(code: &str, libs: &[S]) -> Vec<TamperFinding> {
    scan_with(code, libs.iter().any(|l| l.as_ref() == "ctypes"))
}

thread_local! {
    static PARSER: std::cell::RefCell<Parser> = std::cell::RefCell::new({
        let mut p = Parser::new();
        p.set_language(&tree_sitter_python::LANGUAGE.into())
            .expect("tree-sitter-python grammar matches the tree-sitter runtime");
        p
    });
}

/// The syntax tree of `code` (None only if tree-sitter gives up; a tree with errors is
/// still returned, as for the scan).
pub(crate) fn parse(code: &str) -> Option<tree_sitter::Tree> {
    PARSER.with(|p| p.borrow_mut().parse(code, None))
}

/// Walks a tree resolving names through the program's imports; the tamper rules and the
/// safety report (`crate::safety`) share it.
pub(crate) struct Scanner<'a> {
    src: &'a [u8],
    /// Local name -> what it stands for ("inspect", "sys._getframe", "module:json"...).
    aliases: HashMap<String, String>,
    allow_ctypes: bool,
    out: Vec<TamperFinding>,
}

fn scan_with(code: &str, allow_ctypes: bool) -> Vec<TamperFinding> {
    let Some(tree) = parse(code) else {
        return Vec::new();
    };
    let mut s = Scanner::new(code, tree.root_node(), allow_ctypes);
    s.walk(tree.root_node(), &mut |s, n| s.check(n));
    s.into_findings()
}

impl<'a> Scanner<'a> {
    /// A scanner of `code` (parsed to `root`) with every import alias already collected:
    /// imports and module handles may come after their use in a function body.
    pub(crate) fn new(code: &'a str, root: Node, allow_ctypes: bool) -> Self {
        let mut s = Scanner {
            src: code.as_bytes(),
            aliases: HashMap::new(),
            allow_ctypes,
            out: Vec::new(),
        };
        s.walk(root, &mut |s, n| s.collect_aliases(n));
        s
    }

    /// The findings, by line, one per (line, rule).
    pub(crate) fn into_findings(mut self) -> Vec<TamperFinding> {
        self.out
            .sort_by(|a, b| (a.line, a.rule).cmp(&(b.line, b.rule)));
        self.out
            .dedup_by(|a, b| a.line == b.line && a.rule == b.rule);
        self.out
    }

    pub(crate) fn walk(&mut self, root: Node, f: &mut dyn FnMut(&mut Self, Node)) {
        let mut cursor = root.walk();
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            f(self, n);
            for c in n.children(&mut cursor) {
                stack.push(c);
            }
        }
    }

    pub(crate) fn text(&self, n: Node) -> String {
        String::from_utf8_lossy(&self.src[n.start_byte()..n.end_byte()]).into_owned()
    }

    pub(crate) fn flag(&mut self, rule: &'static str, n: Node) {
        let mut text: String = self
            .text(n)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if text.chars().count() > 80 {
            text = text.chars().take(77).collect::<String>() + "...";
        }
        self.out.push(TamperFinding {
            rule,
            line: n.start_position().row + 1,
            text,
        });
    }

    /// A dotted name with its first part resolved through imports (`ins.stack` -> `inspect.stack`),
    /// `sys.modules[...]` -> `module:<key>`; None for anything else.
    pub(crate) fn qual(&self, n: Node) -> Option<String> {
        match n.kind() {
            "identifier" => {
                let name = self.text(n);
                Some(self.aliases.get(&name).cloned().unwrap_or(name))
            }
            "attribute" => {
                let obj = self.qual(n.child_by_field_name("object")?)?;
                let attr = self.text(n.child_by_field_name("attribute")?);
                Some(format!("{obj}.{attr}"))
            }
            "subscript" => {
                let value = self.qual(n.child_by_field_name("value")?)?;
                if value == "sys.modules" {
                    let key = n.child_by_field_name("subscript").map(|k| self.text(k));
                    let key = key.unwrap_or_default();
                    Some(format!(
                        "module:{}",
                        key.trim_matches(|c| c == '"' || c == '\'')
                    ))
                } else {
                    None
                }
            }
            "call" => {
                // sys.modules.get("x"), importlib.import_module("x"), __import__("x")
                let f = self.qual(n.child_by_field_name("function")?)?;
                if matches!(
                    f.as_str(),
                    "sys.modules.get" | "importlib.import_module" | "__import__"
                ) {
                    let args = n.child_by_field_name("arguments")?;
                    let first = args
                        .named_child(0)
                        .map(|a| self.text(a))
                        .unwrap_or_default();
                    Some(format!(
                        "module:{}",
                        first.trim_matches(|c| c == '"' || c == '\'')
                    ))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    fn collect_aliases(&mut self, n: Node) {
        match n.kind() {
            "import_statement" => {
                let mut c = n.walk();
                for child in n.named_children(&mut c) {
                    if child.kind() == "aliased_import" {
                        if let (Some(name), Some(alias)) = (
                            child.child_by_field_name("name"),
                            child.child_by_field_name("alias"),
                        ) {
                            let (name, alias) = (self.text(name), self.text(alias));
                            self.aliases.insert(alias, name);
                        }
                    }
                }
            }
            "import_from_statement" => {
                let Some(module) = n.child_by_field_name("module_name") else {
                    return;
                };
                let module = self.text(module);
                let mut c = n.walk();
                for child in n.children_by_field_name("name", &mut c) {
                    let (name, alias) = if child.kind() == "aliased_import" {
                        let name = child.child_by_field_name("name").map(|x| self.text(x));
                        let alias = child.child_by_field_name("alias").map(|x| self.text(x));
                        (name.unwrap_or_default(), alias.unwrap_or_default())
                    } else {
                        let t = self.text(child);
                        (t.clone(), t)
                    };
                    self.aliases.insert(alias, format!("{module}.{name}"));
                }
            }
            "assignment" => {
                // `m = sys.modules["json"]`, `b = builtins`, `u = unittest.TestCase`
                if let (Some(left), Some(right)) = (
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                ) {
                    if left.kind() == "identifier" {
                        if let Some(q) = self.qual(right) {
                            let root = q.split('.').next().unwrap_or("");
                            if q.starts_with("module:")
                                || matches!(root, "builtins" | "__builtins__" | "unittest" | "sys")
                                || HARNESS_MODULES.contains(&root)
                            {
                                let name = self.text(left);
                                if name != q {
                                    self.aliases.insert(name, q);
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The tamper rules on one node.
    pub(crate) fn check(&mut self, n: Node) {
        match n.kind() {
            "call" => self.check_call(n),
            "attribute" => {
                if let Some(attr) = n.child_by_field_name("attribute") {
                    let a = self.text(attr);
                    if FRAME_ATTRS.contains(&a.as_str()) {
                        self.flag("frame-introspection", n);
                    } else if a == "__subclasses__" {
                        self.flag("subclass-walk", n);
                    }
                }
                if let Some(q) = self.qual(n) {
                    if q == "module:__main__" || q.starts_with("module:__main__.") {
                        self.flag("harness-access", n);
                    }
                }
            }
            "subscript" => {
                if let Some(q) = self.qual(n) {
                    if q == "module:__main__" || q == "module:bcb_harness" {
                        self.flag("harness-access", n);
                    }
                }
            }
            "assignment" | "augmented_assignment" => {
                if let Some(left) = n.child_by_field_name("left") {
                    self.check_target(left, n);
                }
            }
            "delete_statement" => {
                let mut c = n.walk();
                let targets: Vec<Node> = n.named_children(&mut c).collect();
                for t in targets {
                    self.check_target(t, n);
                }
            }
            "import_statement" | "import_from_statement" => {
                let mut modules: Vec<String> = Vec::new();
                if n.kind() == "import_from_statement" {
                    if let Some(m) = n.child_by_field_name("module_name") {
                        modules.push(self.text(m));
                    }
                } else {
                    let mut c = n.walk();
                    for child in n.named_children(&mut c) {
                        let name = if child.kind() == "aliased_import" {
                            child.child_by_field_name("name")
                        } else {
                            Some(child)
                        };
                        if let Some(name) = name {
                            modules.push(self.text(name));
                        }
                    }
                }
                for m in modules {
                    let root = m.split('.').next().unwrap_or("");
                    if root == "ctypes" && !self.allow_ctypes {
                        self.flag("ctypes", n);
                    }
                    if root == "__main__" || root == "bcb_harness" {
                        self.flag("harness-access", n);
                    }
                }
            }
            "string" => {
                let t = self.text(n);
                if is_proc_mem(&t) {
                    self.flag("proc-mem", n);
                }
                if t.contains("/proc/self/fd")
                    || t.contains("/dev/fd/")
                    || t.contains("/proc/self/fdinfo")
                {
                    self.flag("raw-fd", n);
                }
            }
            "identifier" => {
                let t = self.text(n);
                if t == "process_vm_readv" || t == "process_vm_writev" {
                    self.flag("proc-mem", n);
                }
            }
            _ => {}
        }
    }

    fn check_call(&mut self, n: Node) {
        let Some(func) = n.child_by_field_name("function") else {
            return;
        };
        let Some(q) = self.qual(func) else { return };
        if FRAME_CALLS.contains(&q.as_str()) {
            self.flag("frame-introspection", n);
        } else if GC_CALLS.contains(&q.as_str()) {
            self.flag("gc-introspection", n);
        } else if TRACE_CALLS.contains(&q.as_str()) {
            self.flag("trace-hook", n);
        } else if RAW_FD_CALLS.contains(&q.as_str()) || q == "posix.read" || q == "posix.write" {
            self.flag("raw-fd", n);
        } else if q == "setattr" || q == "delattr" || q == "object.__setattr__" {
            if let Some(target) = n
                .child_by_field_name("arguments")
                .and_then(|a| a.named_child(0))
            {
                let attr = n
                    .child_by_field_name("arguments")
                    .and_then(|a| a.named_child(1))
                    .map(|a| {
                        self.text(a)
                            .trim_matches(|c| c == '"' || c == '\'')
                            .to_string()
                    })
                    .unwrap_or_default();
                self.check_write(target, &attr, n);
            }
        } else if let Some(obj) = q
            .strip_suffix(".append")
            .or_else(|| q.strip_suffix(".insert"))
            .or_else(|| q.strip_suffix(".extend"))
            .or_else(|| q.strip_suffix(".update"))
            .or_else(|| q.strip_suffix(".__setitem__"))
            .or_else(|| q.strip_suffix(".setdefault"))
        {
            match obj {
                "sys.meta_path" | "sys.path_hooks" => self.flag("import-hook", n),
                "sys.modules" => self.flag("module-patch", n),
                "builtins.__dict__" | "__builtins__" | "__builtins__.__dict__" => {
                    self.flag("builtins-write", n)
                }
                _ => {}
            }
        }
    }

    /// An assignment or `del` target.
    fn check_target(&mut self, t: Node, stmt: Node) {
        match t.kind() {
            "pattern_list" | "tuple_pattern" | "list_pattern" | "expression_list" | "tuple"
            | "list" => {
                let mut c = t.walk();
                let items: Vec<Node> = t.named_children(&mut c).collect();
                for i in items {
                    self.check_target(i, stmt);
                }
            }
            "attribute" => {
                if let (Some(obj), Some(attr)) = (
                    t.child_by_field_name("object"),
                    t.child_by_field_name("attribute"),
                ) {
                    let attr = self.text(attr);
                    self.check_write(obj, &attr, stmt);
                }
            }
            "subscript" => {
                if let Some(value) = t.child_by_field_name("value") {
                    match self.qual(value).as_deref() {
                        Some("sys.modules") => self.flag("module-patch", stmt),
                        Some("__builtins__" | "builtins.__dict__" | "__builtins__.__dict__") => {
                            self.flag("builtins-write", stmt)
                        }
                        _ => {}
                    }
                }
            }
            "identifier" => {
                let name = self.text(t);
                if name == "__builtins__" {
                    self.flag("builtins-write", stmt);
                }
            }
            _ => {}
        }
    }

    /// `obj.attr = ...` (or setattr/delattr).
    fn check_write(&mut self, obj: Node, attr: &str, stmt: Node) {
        if FUNCTION_ATTRS.contains(&attr) {
            self.flag("function-patch", stmt);
            return;
        }
        let Some(q) = self.qual(obj) else { return };
        let root = q.split('.').next().unwrap_or("");
        if (root == "builtins" || root == "__builtins__") && q.split('.').count() == 1 {
            if attr == "__import__" || attr == "__build_class__" {
                self.flag("import-hook", stmt);
            } else {
                self.flag("builtins-write", stmt);
            }
        } else if let Some(module) = root.strip_prefix("module:") {
            if module == "__main__" || module == "bcb_harness" {
                self.flag("harness-access", stmt);
            } else if module.starts_with("unittest") {
                self.flag("unittest-write", stmt);
            } else if module == "builtins" {
                self.flag("builtins-write", stmt);
            } else {
                self.flag("module-patch", stmt);
            }
        } else if root == "unittest" {
            self.flag("unittest-write", stmt);
        } else if root == "sys" && q == "sys" {
            if matches!(attr, "meta_path" | "path_hooks" | "path_importer_cache") {
                self.flag("import-hook", stmt);
            } else if attr.starts_with('_') || SYS_GUARDED.contains(&attr) {
                self.flag("module-patch", stmt);
            }
        } else if HARNESS_MODULES.contains(&root) && !q.contains("environ") {
            // `os.environ[...]` is a subscript, never here; `os.write = ...` is.
            if q.split('.').count() <= 2 || HARNESS_MODULES.contains(&q.as_str()) {
                self.flag("module-patch", stmt);
            }
        }
    }
}

/// `/proc/self/mem`, `/proc/<pid>/mem`, `/proc/%d/mem`, `/proc/{}/mem` in a string literal.
fn is_proc_mem(s: &str) -> bool {
    let mut rest = s;
    while let Some(i) = rest.find("/proc/") {
        let after = &rest[i + 6..];
        if let Some(j) = after.find('/') {
            let middle = &after[..j];
            let tail = &after[j + 1..];
            let pidlike = middle == "self"
                || middle
                    .chars()
                    .all(|c| c.is_ascii_digit() || "{}%dsi".contains(c));
            if pidlike
                && tail.starts_with("mem")
                && !tail[3..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
            {
                return true;
            }
        }
        rest = after;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(code: &str) -> Vec<&'static str> {
        scan(code).into_iter().map(|f| f.rule).collect()
    }

    #[test]
    fn each_rule_flags_its_pattern() {
        let cases: &[(&str, &[&str])] = &[
            (
                "import sys\nf = sys._getframe()\n",
                &["frame-introspection"],
            ),
            (
                "from inspect import currentframe as cf\ncf()\n",
                &["frame-introspection"],
            ),
            ("import gc\ngc.get_objects()\n", &["gc-introspection"]),
            (
                "import unittest\nunittest.TestCase.run = None\n",
                &["unittest-write"],
            ),
            (
                "from unittest import TestCase\nTestCase.run = None\n",
                &["unittest-write"],
            ),
            (
                "import builtins\nbuiltins.__import__ = None\n",
                &["import-hook"],
            ),
            (
                "import builtins as b\nb.__build_class__ = None\n",
                &["import-hook"],
            ),
            ("__builtins__['open'] = None\n", &["builtins-write"]),
            (
                "import sys\nsys.modules['json'].dumps = None\n",
                &["module-patch"],
            ),
            (
                "import sys\nj = sys.modules['json']\nj.dumps = None\n",
                &["module-patch"],
            ),
            ("import json\njson.dumps = None\n", &["module-patch"]),
            (
                "import sys\nh = sys.modules['__main__']\n",
                &["harness-access"],
            ),
            ("def f(): pass\nf.__code__ = None\n", &["function-patch"]),
            ("open('/proc/self/mem', 'rb')\n", &["proc-mem"]),
            ("open('/proc/%d/mem' % 1)\n", &["proc-mem"]),
            ("import ctypes\n", &["ctypes"]),
            ("import sys\nsys.settrace(None)\n", &["trace-hook"]),
            (
                "import sys\nsys.meta_path.insert(0, None)\n",
                &["import-hook"],
            ),
            ("object.__subclasses__()\n", &["subclass-walk"]),
            ("import os\nsetattr(os, 'write', None)\n", &["module-patch"]),
            ("import sys\nsys.modules = {}\n", &["module-patch"]),
            ("import os\nos.write(5, b'x')\n", &["raw-fd"]),
            ("from os import read\nread(7, 64)\n", &["raw-fd"]),
            ("import os\nos.listdir('/proc/self/fd')\n", &["raw-fd"]),
        ];
        for (code, want) in cases {
            assert_eq!(rules(code), *want, "{code:?}");
        }
        assert!(
            scan_for_task("import ctypes\n", &["ctypes"]).is_empty(),
            "ctypes tasks"
        );
    }

    #[test]
    fn leaves_ordinary_code_alone() {
        for code in [
            "import os\nos.environ['TZ'] = 'UTC'\n",
            "import sys\nsys.stdout = open('x', 'w')\n",
            "import sys\nsys.executable = '/usr/bin/python3'\n",
            "import pandas as pd\npd.options.display.max_rows = 10\n",
            "if __name__ == '__main__':\n    main()\n",
            "import matplotlib\nmatplotlib.rcParams['font.size'] = 3\n",
            "class A:\n    pass\na = A()\na.x = 1\n",
            "import sys\nname = sys.modules[__name__]\n",
            "with open('/proc/meminfo') as f:\n    pass\n",
            "import numpy as np\nnp.random.seed(0)\n",
            "import os\np = os.path.join('a', 'b')\n",
        ] {
            assert!(scan(code).is_empty(), "{code}: {:?}", scan(code));
        }
    }

    #[test]
    fn policy_round_trips() {
        for p in [TamperPolicy::Refuse, TamperPolicy::Warn, TamperPolicy::Off] {
            assert_eq!(p.to_string().parse::<TamperPolicy>(), Ok(p));
        }
        assert!("maybe".parse::<TamperPolicy>().is_err());
    }

    #[test]
    fn findings_list_names_rules_and_lines() {
        let f = scan("import gc, sys\ngc.get_objects()\nsys._getframe()\n");
        assert_eq!(
            findings_list(&f),
            "gc-introspection (line 2), frame-introspection (line 3)"
        );
    }
}
