//! Steps 2–5 of the original: tree-sitter parse of the extracted code, keep the imports and the
//! definitions the entry point reaches, the ad-hoc tail trim, and the fallback.

use std::collections::{HashMap, HashSet, VecDeque};

use tree_sitter::{Node, Parser};

use crate::pystr::{py_splitlines, py_strip};

thread_local! {
    static PARSER: std::cell::RefCell<Parser> = std::cell::RefCell::new({
        let mut p = Parser::new();
        p.set_language(&tree_sitter_python::LANGUAGE.into())
            .expect("tree-sitter-python grammar matches the tree-sitter runtime");
        p
    });
}

/// The original's `extract_target_code_or_empty`, given the already extracted code.
///
/// `entrypoint = None` makes the original raise `TypeError` in its tail trim whenever the last
/// line is not indented; we skip the trim instead.
pub(crate) fn target_code_or_empty(code: &str, entrypoint: Option<&str>) -> String {
    let bytes = code.as_bytes();
    let tree = PARSER.with(|p| p.borrow_mut().parse(code, None));
    let Some(tree) = tree else {
        return String::new();
    };
    let root = tree.root_node();
    let text = |n: Node| String::from_utf8_lossy(&bytes[n.start_byte()..n.end_byte()]).into_owned();
    // First child of type `identifier`, like `get_definition_name` (None if there is none).
    let def_name = |n: Node| {
        let mut c = n.walk();
        let name = n
            .children(&mut c)
            .find(|ch| ch.kind() == "identifier")
            .map(text);
        name
    };

    let mut imports: Vec<Node> = Vec::new();
    let mut defs: Vec<(Option<String>, Node)> = Vec::new();
    // The original keeps three sets and checks all of them; a name is blocked once in any.
    let mut seen: HashSet<Option<String>> = HashSet::new();
    let mut cursor = root.walk();
    for child in root.children(&mut cursor) {
        match child.kind() {
            "import_statement" | "import_from_statement" => imports.push(child),
            "class_definition" | "function_definition" => {
                let name = def_name(child);
                if seen.insert(name.clone()) {
                    defs.push((name, child));
                }
            }
            "expression_statement" => {
                if let Some(sub) = child.child(0).filter(|c| c.kind() == "assignment") {
                    let name = def_name(sub);
                    if seen.insert(name.clone()) {
                        defs.push((name, sub));
                    }
                }
            }
            _ => {}
        }
    }

    let reachable: Option<HashSet<String>> = entrypoint.filter(|e| !e.is_empty()).map(|entry| {
        let deps: HashMap<&Option<String>, HashSet<String>> = defs
            .iter()
            .map(|(name, node)| {
                let mut set = HashSet::new();
                collect_identifiers(*node, bytes, &mut set);
                (name, set)
            })
            .collect();
        let mut visited: HashSet<String> = HashSet::from([entry.to_string()]);
        let mut queue = VecDeque::from([entry.to_string()]);
        while let Some(cur) = queue.pop_front() {
            if let Some(ns) = deps.get(&Some(cur)) {
                for nb in ns {
                    if visited.insert(nb.clone()) {
                        queue.push_back(nb.clone());
                    }
                }
            }
        }
        visited
    });

    let mut out: Vec<u8> = Vec::new();
    for node in &imports {
        out.extend_from_slice(&bytes[node.start_byte()..node.end_byte()]);
        out.push(b'\n');
    }
    for (name, node) in &defs {
        if let Some(r) = &reachable {
            if !name.as_ref().is_some_and(|n| r.contains(n)) {
                continue;
            }
        }
        out.extend_from_slice(&bytes[node.start_byte()..node.end_byte()]);
        out.push(b'\n');
    }
    out.pop();
    let sanitized = String::from_utf8_lossy(&out).into_owned();

    // The original's "ad-hoc" trim: from the end, stop at the first line that starts with a
    // space; remember top-level lines naming the entry point; cut before the earliest of them.
    let Some(entry) = entrypoint else {
        return sanitized;
    };
    let lines = py_splitlines(&sanitized);
    let mut cut = None;
    for (i, line) in lines.iter().enumerate().rev() {
        if line.starts_with(' ') {
            break;
        }
        if line.contains(entry) {
            cut = Some(i);
        }
    }
    match cut {
        Some(c) => lines[..c].join("\n"),
        None => sanitized,
    }
}

/// `get_deps`' DFS: identifiers below `node` (not `node` itself), not descending into them.
fn collect_identifiers(node: Node, bytes: &[u8], out: &mut HashSet<String>) {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        for ch in n.children(&mut c) {
            if ch.kind() == "identifier" {
                out.insert(
                    String::from_utf8_lossy(&bytes[ch.start_byte()..ch.end_byte()]).into_owned(),
                );
            } else {
                stack.push(ch);
            }
        }
    }
}

/// `sanitize`'s last step: strip, and fall back to the extracted span when nothing is left.
pub(crate) fn finish(sanitized: String, fallback: impl FnOnce() -> String) -> String {
    let s = py_strip(&sanitized);
    if s.is_empty() {
        fallback()
    } else {
        s.to_string()
    }
}

/// Whether `code` parses to a module with a top-level `def name` (plain or decorated).
pub(crate) fn defines_function(code: &str, name: &str) -> bool {
    let Some(tree) = PARSER.with(|p| p.borrow_mut().parse(code, None)) else {
        return false;
    };
    let bytes = code.as_bytes();
    let root = tree.root_node();
    let mut cursor = root.walk();
    let found = root.children(&mut cursor).any(|child| {
        let def = match child.kind() {
            "function_definition" => Some(child),
            "decorated_definition" => child
                .child_by_field_name("definition")
                .filter(|d| d.kind() == "function_definition"),
            _ => None,
        };
        def.and_then(|d| d.child_by_field_name("name"))
            .is_some_and(|n| &bytes[n.start_byte()..n.end_byte()] == name.as_bytes())
    });
    found
}
