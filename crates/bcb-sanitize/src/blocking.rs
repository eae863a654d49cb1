//! Signs that a program may wait rather than compute: process pools, servers that accept
//! connections, calls that block without a timeout, long sleeps, loops with no way out.
//! The scheduler starts such samples first (`bcb_eval::sleepers`), so their waits overlap
//! the rest of a run instead of stretching its end. Only a hint: it never changes a verdict.
//!
//! It shares the tamper scan's tree-sitter parse and import-aware names
//! (`from multiprocessing import Pool as P; P()` is `multiprocessing.Pool`).
//!
//! ```
//! use bcb_sanitize::blocking::{scan, Sign};
//! let signs = scan("from multiprocessing import Pool\ndef task_func(x):\n    with Pool() as p:\n        return p.map(abs, x)\n");
//! assert_eq!(signs[0].sign, Sign::ProcessPool);
//! assert!(scan("def task_func(x):\n    return sorted(x)\n").is_empty());
//! ```

use tree_sitter::Node;

use crate::tamper::{self, Scanner};

/// What kind of wait a construct may cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sign {
    /// multiprocessing pools, processes and managers (their teardown can hang).
    ProcessPool,
    /// A server: `accept`, `listen`, `serve_forever`, `select.select`, socketserver / HTTP
    /// servers, `asyncio.start_server`.
    Server,
    /// `while True` (or `while 1`) with no `break`, `return` or `raise` inside.
    EndlessLoop,
    /// `time.sleep` of at least a second (or of a computed time).
    Sleep,
    /// A wait with no timeout: `.join()`, `.wait()`, `.communicate()`, queue `.get()`,
    /// `subprocess.run/call/check_*` without `timeout=`.
    Wait,
    /// A network client call without `timeout=`.
    Network,
    /// `input()`.
    Input,
}

/// One sign and its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockingSign {
    pub sign: Sign,
    pub line: usize,
}

const POOLS: &[&str] = &[
    "multiprocessing.Pool",
    "multiprocessing.pool.Pool",
    "multiprocessing.pool.ThreadPool",
    "multiprocessing.Process",
    "multiprocessing.Manager",
    "multiprocessing.Queue",
    "multiprocessing.JoinableQueue",
    "concurrent.futures.ProcessPoolExecutor",
];
const SERVERS: &[&str] = &[
    "select.select",
    "select.poll",
    "select.epoll",
    "selectors.DefaultSelector",
    "socketserver.TCPServer",
    "socketserver.UDPServer",
    "socketserver.ThreadingTCPServer",
    "http.server.HTTPServer",
    "http.server.ThreadingHTTPServer",
    "asyncio.start_server",
    "wsgiref.simple_server.make_server",
];
const SERVER_METHODS: &[&str] = &["accept", "listen", "serve_forever", "recvfrom"];
const WAIT_METHODS: &[&str] = &["join", "wait", "communicate", "get", "acquire", "recv"];
const SUBPROCESS_WAITS: &[&str] = &[
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
];
const NETWORK: &[&str] = &[
    "requests.get",
    "requests.post",
    "requests.put",
    "requests.delete",
    "requests.head",
    "requests.request",
    "urllib.request.urlopen",
    "urllib.request.urlretrieve",
    "socket.create_connection",
    "smtplib.SMTP",
    "smtplib.SMTP_SSL",
    "ftplib.FTP",
];

/// The signs in `code`, by line (one per line and sign).
pub fn scan(code: &str) -> Vec<BlockingSign> {
    let Some(tree) = tamper::parse(code) else {
        return Vec::new();
    };
    let mut s = Scanner::new(code, tree.root_node(), false);
    let mut out = Vec::new();
    s.walk(tree.root_node(), &mut |s, n| {
        if let Some(sign) = sign_of(s, n) {
            out.push(BlockingSign {
                sign,
                line: n.start_position().row + 1,
            });
        }
    });
    out.sort_by_key(|b| (b.line, b.sign));
    out.dedup();
    out
}

fn has_keyword(s: &Scanner, args: Option<Node>, name: &str) -> bool {
    let Some(args) = args else { return false };
    let mut c = args.walk();
    let found = args.named_children(&mut c).any(|a| {
        a.kind() == "keyword_argument"
            && a.child_by_field_name("name")
                .is_some_and(|k| s.text(k) == name)
    });
    found
}

fn sign_of(s: &Scanner, n: Node) -> Option<Sign> {
    match n.kind() {
        "while_statement" => endless(s, n).then_some(Sign::EndlessLoop),
        "call" => {
            let func = n.child_by_field_name("function")?;
            let args = n.child_by_field_name("arguments");
            let nargs = args.map_or(0, |a| a.named_child_count());
            let q = s.qual(func).unwrap_or_default();
            if POOLS.contains(&q.as_str()) {
                return Some(Sign::ProcessPool);
            }
            if SERVERS.contains(&q.as_str()) {
                return Some(Sign::Server);
            }
            if q == "time.sleep" {
                let arg = args.and_then(|a| a.named_child(0)).map(|a| s.text(a));
                let short = arg
                    .and_then(|a| a.trim().parse::<f64>().ok())
                    .is_some_and(|secs| secs < 1.0);
                return (!short).then_some(Sign::Sleep);
            }
            if q == "input" {
                return Some(Sign::Input);
            }
            if SUBPROCESS_WAITS.contains(&q.as_str()) && !has_keyword(s, args, "timeout") {
                return Some(Sign::Wait);
            }
            if NETWORK.contains(&q.as_str()) && !has_keyword(s, args, "timeout") {
                return Some(Sign::Network);
            }
            if func.kind() == "attribute" {
                let method = s.text(func.child_by_field_name("attribute")?);
                if SERVER_METHODS.contains(&method.as_str()) {
                    return Some(Sign::Server);
                }
                // `.join()` with no argument (not str.join), `.get()` with none (a queue),
                // `.wait()` / `.communicate()` / `.acquire()` / `.recv(n)` without a timeout.
                let no_timeout = !has_keyword(s, args, "timeout");
                let waits = match method.as_str() {
                    "join" | "get" | "wait" => nargs == 0,
                    "communicate" | "acquire" => no_timeout,
                    "recv" => true,
                    _ => false,
                };
                if waits && WAIT_METHODS.contains(&method.as_str()) {
                    return Some(Sign::Wait);
                }
            }
            None
        }
        _ => None,
    }
}

/// `while True:` / `while 1:` whose body has no `break`, `return` or `raise`.
fn endless(s: &Scanner, n: Node) -> bool {
    let Some(cond) = n.child_by_field_name("condition") else {
        return false;
    };
    if !matches!(s.text(cond).trim(), "True" | "1") {
        return false;
    }
    let Some(body) = n.child_by_field_name("body") else {
        return false;
    };
    let mut stack = vec![body];
    while let Some(x) = stack.pop() {
        if matches!(
            x.kind(),
            "break_statement" | "return_statement" | "raise_statement"
        ) {
            return false;
        }
        let mut c = x.walk();
        stack.extend(x.children(&mut c));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signs(code: &str) -> Vec<Sign> {
        scan(code).into_iter().map(|b| b.sign).collect()
    }

    #[test]
    fn pools_servers_and_waits_without_timeouts_are_signs() {
        assert_eq!(
            signs("import multiprocessing as mp\np = mp.Pool(4)\n"),
            [Sign::ProcessPool]
        );
        assert_eq!(
            signs("import socket\ns = socket.socket()\ns.listen(1)\nc, a = s.accept()\n"),
            [Sign::Server, Sign::Server]
        );
        assert_eq!(
            signs("import subprocess\nsubprocess.run(['x'])\n"),
            [Sign::Wait]
        );
        assert!(signs("import subprocess\nsubprocess.run(['x'], timeout=5)\n").is_empty());
        assert_eq!(signs("import requests\nrequests.get(u)\n"), [Sign::Network]);
        assert!(signs("import requests\nrequests.get(u, timeout=3)\n").is_empty());
        assert_eq!(signs("t.join()\n"), [Sign::Wait]);
        assert!(signs("', '.join(x)\n").is_empty(), "str.join is no wait");
        assert!(signs("d.get('k')\n").is_empty(), "dict.get is no wait");
    }

    #[test]
    fn only_long_or_computed_sleeps_and_loops_without_exit() {
        assert!(signs("import time\ntime.sleep(0.1)\n").is_empty());
        assert_eq!(signs("import time\ntime.sleep(5)\n"), [Sign::Sleep]);
        assert_eq!(signs("from time import sleep\nsleep(d)\n"), [Sign::Sleep]);
        assert_eq!(signs("while True:\n    x += 1\n"), [Sign::EndlessLoop]);
        assert!(signs("while True:\n    if x:\n        break\n").is_empty());
        assert!(signs("while x < 3:\n    x += 1\n").is_empty());
    }
}
