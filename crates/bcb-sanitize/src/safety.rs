//! The safety report of `bcb syncheck --safety`: the risky operations a program contains —
//! shell and subprocess calls, network clients aimed at non-loopback hosts, deletes, writes to
//! paths outside the working directory, environment and credential access — plus whatever the
//! tamper scan flags. Information for reviewers: it never changes a verdict (the sandbox is
//! what contains these operations).
//!
//! It shares the tamper scan's tree-sitter parse and its import-aware name resolution
//! (`import subprocess as sp; sp.run(...)` is `subprocess.run`).
//!
//! ```
//! use bcb_sanitize::safety::scan_for_task;
//! let f = scan_for_task("import subprocess as sp\ndef task_func(c):\n    return sp.run(c, shell=True)\n", &[] as &[&str]);
//! assert_eq!((f[0].rule, f[0].line), ("shell", 3));
//! assert!(scan_for_task("import requests\nrequests.get('http://localhost:8000/x')\n", &[] as &[&str]).is_empty());
//! ```

use tree_sitter::Node;

use crate::tamper::{self, Scanner, TamperFinding};

/// One risky operation: the rule, the 1-based line and the construct (shortened).
pub type SafetyFinding = TamperFinding;

/// The safety rules (the tamper scan's [`tamper::RULES`] are reported too).
pub const RULES: &[(&str, &str)] = &[
    (
        "shell",
        "os.system, os.popen, subprocess with shell=True, subprocess.getoutput, asyncio.create_subprocess_shell: a command line run by a shell",
    ),
    (
        "subprocess",
        "subprocess.run/call/check_call/check_output/Popen, os.exec*/spawn*/posix_spawn, pty.spawn, asyncio.create_subprocess_exec: another program started",
    ),
    (
        "network",
        "HTTP, socket, mail, FTP and SSH clients (requests, httpx, aiohttp, urllib, http.client, socket, smtplib, ftplib, paramiko, ...) unless a loopback host is named",
    ),
    (
        "delete",
        "os.remove/unlink/rmdir/removedirs, shutil.rmtree, .unlink()/.rmdir(): files or directories deleted",
    ),
    (
        "write-outside-cwd",
        "open for writing, shutil copy/move, os.rename/makedirs/mkdir, Path.write_*/mkdir/touch on an absolute, home (~) or parent (..) path literal",
    ),
    (
        "environment",
        "os.environ, os.getenv/putenv/unsetenv: environment variables read or set",
    ),
    (
        "credentials",
        "~/.ssh, id_rsa, .aws/credentials, .netrc, .pypirc, .git-credentials, .docker/config.json, .kube/config, /etc/shadow, or a *TOKEN/SECRET/API_KEY/PASSWORD* name in a string",
    ),
];

/// Every rule id the report can give: the safety rules, then the tamper scan's.
pub fn all_rules() -> impl Iterator<Item = &'static str> {
    RULES.iter().chain(tamper::RULES).map(|(id, _)| *id)
}

/// Scans a program: safety findings and tamper findings together, by line.
pub fn scan(code: &str) -> Vec<SafetyFinding> {
    scan_with(code, false)
}

/// Scans a program of a task whose declared libraries are `libs` (ctypes is allowed to the
/// tasks about it, as in the tamper scan).
pub fn scan_for_task<S: AsRef<str>>(code: &str, libs: &[S]) -> Vec<SafetyFinding> {
    scan_with(code, libs.iter().any(|l| l.as_ref() == "ctypes"))
}

fn scan_with(code: &str, allow_ctypes: bool) -> Vec<SafetyFinding> {
    let Some(tree) = tamper::parse(code) else {
        return Vec::new();
    };
    let mut s = Scanner::new(code, tree.root_node(), allow_ctypes);
    // One walk of the one tree for both rule sets.
    s.walk(tree.root_node(), &mut |s, n| {
        s.check(n);
        check(s, n);
    });
    s.into_findings()
}

const SHELL_CALLS: &[&str] = &[
    "os.system",
    "os.popen",
    "posix.system",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "asyncio.create_subprocess_shell",
];
const SUBPROCESS_CALLS: &[&str] = &[
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "subprocess.Popen",
    "pty.spawn",
    "asyncio.create_subprocess_exec",
    "os.posix_spawn",
    "os.posix_spawnp",
];
const NETWORK_CALLS: &[&str] = &[
    "requests.get",
    "requests.post",
    "requests.put",
    "requests.patch",
    "requests.delete",
    "requests.head",
    "requests.options",
    "requests.request",
    "requests.Session",
    "requests.session",
    "httpx.get",
    "httpx.post",
    "httpx.put",
    "httpx.patch",
    "httpx.delete",
    "httpx.head",
    "httpx.request",
    "httpx.stream",
    "httpx.Client",
    "httpx.AsyncClient",
    "aiohttp.ClientSession",
    "aiohttp.request",
    "urllib.request.urlopen",
    "urllib.request.urlretrieve",
    "urllib.urlopen",
    "urllib.urlretrieve",
    "urllib2.urlopen",
    "urllib3.PoolManager",
    "urllib3.request",
    "http.client.HTTPConnection",
    "http.client.HTTPSConnection",
    "socket.create_connection",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyname_ex",
    "socket.gethostbyaddr",
    "smtplib.SMTP",
    "smtplib.SMTP_SSL",
    "ftplib.FTP",
    "ftplib.FTP_TLS",
    "poplib.POP3",
    "poplib.POP3_SSL",
    "imaplib.IMAP4",
    "imaplib.IMAP4_SSL",
    "telnetlib.Telnet",
    "paramiko.SSHClient",
    "wget.download",
    "mechanize.Browser",
    "webbrowser.open",
    "pytube.YouTube",
];
/// Socket methods that reach a peer: flagged when their first argument is an address tuple.
const SOCKET_METHODS: &[&str] = &["connect", "connect_ex", "sendto"];
const DELETE_CALLS: &[&str] = &[
    "os.remove",
    "os.unlink",
    "os.rmdir",
    "os.removedirs",
    "shutil.rmtree",
];
/// Path methods that delete, whatever object they are called on (`Path(...)`, a variable).
const DELETE_METHODS: &[&str] = &["unlink", "rmdir"];
/// Calls that write to their destination (the last positional argument).
const WRITE_DEST_CALLS: &[&str] = &[
    "shutil.copy",
    "shutil.copy2",
    "shutil.copyfile",
    "shutil.copytree",
    "shutil.move",
    "os.rename",
    "os.replace",
    "os.symlink",
    "os.link",
];
/// Calls that create what their first argument names.
const CREATE_CALLS: &[&str] = &["os.makedirs", "os.mkdir", "os.mknod", "os.mkfifo"];
const OPEN_CALLS: &[&str] = &["open", "io.open", "builtins.open", "codecs.open", "os.open"];
/// Path methods that write, on an object built from an outside path literal.
const PATH_WRITE_METHODS: &[&str] = &["write_text", "write_bytes", "touch", "mkdir", "open"];
/// Path builders whose first argument is the path.
const PATH_BUILDERS: &[&str] = &[
    "os.path.join",
    "os.path.expanduser",
    "os.path.abspath",
    "pathlib.Path",
    "Path",
    "pathlib.PurePath",
];
const ENV_NAMES: &[&str] = &[
    "os.environ",
    "os.environb",
    "os.getenv",
    "os.getenvb",
    "os.putenv",
    "os.unsetenv",
    "posix.environ",
];
const CREDENTIAL_PATHS: &[&str] = &[
    ".ssh/",
    "~/.ssh",
    "id_rsa",
    "id_ed25519",
    ".aws/credentials",
    ".netrc",
    ".pypirc",
    ".git-credentials",
    ".docker/config.json",
    ".kube/config",
    ".config/gcloud",
    "/etc/shadow",
    "/etc/sudoers",
];
const SECRET_WORDS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "API_KEY",
    "APIKEY",
    "PASSWORD",
    "PASSWD",
    "ACCESS_KEY",
    "PRIVATE_KEY",
];

fn check(s: &mut Scanner, n: Node) {
    match n.kind() {
        "call" => check_call(s, n),
        // `os.environ[...]`, `os.environ.get(...)`, `from os import getenv; getenv(...)`.
        "attribute" | "identifier"
            if s.qual(n).is_some_and(|q| ENV_NAMES.contains(&q.as_str())) =>
        {
            s.flag("environment", n);
        }
        // A bare string statement is a docstring or a comment: prose, not an access.
        "string"
            if n.parent()
                .is_some_and(|p| p.kind() != "expression_statement") =>
        {
            let t = s.text(n);
            if CREDENTIAL_PATHS.iter().any(|p| t.contains(p)) || names_a_secret(&t) {
                s.flag("credentials", n);
            }
        }
        _ => {}
    }
}

fn check_call(s: &mut Scanner, n: Node) {
    let Some(func) = n.child_by_field_name("function") else {
        return;
    };
    let args = n.child_by_field_name("arguments");
    let q = s.qual(func).unwrap_or_default();
    let method = (func.kind() == "attribute")
        .then(|| func.child_by_field_name("attribute").map(|a| s.text(a)))
        .flatten()
        .unwrap_or_default();
    let positional: Vec<Node> = args
        .map(|a| {
            let mut c = a.walk();
            a.named_children(&mut c)
                .filter(|x| x.kind() != "keyword_argument" && x.kind() != "comment")
                .collect()
        })
        .unwrap_or_default();
    if SHELL_CALLS.contains(&q.as_str())
        || (q.starts_with("subprocess.") && keyword_is_true(s, args, "shell"))
    {
        s.flag("shell", n);
    } else if SUBPROCESS_CALLS.contains(&q.as_str())
        || q.starts_with("os.exec")
        || q.starts_with("os.spawn")
    {
        s.flag("subprocess", n);
    }
    let socket_call = SOCKET_METHODS.contains(&method.as_str())
        && positional.first().is_some_and(|a| a.kind() == "tuple");
    if (NETWORK_CALLS.contains(&q.as_str()) || socket_call) && !names_loopback(s, args) {
        s.flag("network", n);
    }
    // `Path(p).unlink()`, `d.rmdir()`: the object is unknown, the method says it.
    let delete_method = DELETE_METHODS.contains(&method.as_str()) && positional.is_empty();
    if DELETE_CALLS.contains(&q.as_str()) || delete_method {
        s.flag("delete", n);
    }
    let outside = |s: &Scanner, arg: Option<&Node>| arg.is_some_and(|a| is_outside(s, *a));
    let writes_outside = if OPEN_CALLS.contains(&q.as_str()) {
        open_mode_writes(s, args, positional.get(1)) && outside(s, positional.first())
    } else if WRITE_DEST_CALLS.contains(&q.as_str()) {
        outside(s, positional.last())
    } else if CREATE_CALLS.contains(&q.as_str()) {
        outside(s, positional.first())
    } else if PATH_WRITE_METHODS.contains(&method.as_str()) {
        let object = func.child_by_field_name("object");
        let writes = method != "open" || open_mode_writes(s, args, positional.first());
        writes && object.is_some_and(|o| o.kind() == "call" && is_outside(s, o))
    } else {
        false
    };
    if writes_outside {
        s.flag("write-outside-cwd", n);
    }
}

/// `name=True` among the call's keyword arguments.
fn keyword_is_true(s: &Scanner, args: Option<Node>, name: &str) -> bool {
    keyword(s, args, name).is_some_and(|v| s.text(v) == "True")
}

fn keyword<'t>(s: &Scanner, args: Option<Node<'t>>, name: &str) -> Option<Node<'t>> {
    let args = args?;
    let mut c = args.walk();
    let found = args
        .named_children(&mut c)
        .filter(|k| k.kind() == "keyword_argument")
        .find(|k| {
            k.child_by_field_name("name")
                .is_some_and(|n| s.text(n) == name)
        })?;
    found.child_by_field_name("value")
}

/// An `open` mode (positional or `mode=`) that writes; no mode is a read.
fn open_mode_writes(s: &Scanner, args: Option<Node>, positional_mode: Option<&Node>) -> bool {
    let mode = keyword(s, args, "mode").or(positional_mode.copied());
    mode.filter(|m| m.kind() == "string")
        .map(|m| literal(&s.text(m)))
        .is_some_and(|m| m.contains(['w', 'a', 'x', '+']))
}

/// A string literal (or a path builder whose first argument is one) naming an absolute path
/// other than `/dev/null`, a home path (`~`), or a parent directory (`..`).
fn is_outside(s: &Scanner, n: Node) -> bool {
    match n.kind() {
        "string" => {
            let p = literal(&s.text(n));
            (p.starts_with('/') && !p.starts_with("/dev/null"))
                || p.starts_with('~')
                || p == ".."
                || p.starts_with("../")
        }
        "call" => {
            let builder = n
                .child_by_field_name("function")
                .and_then(|f| s.qual(f))
                .is_some_and(|q| PATH_BUILDERS.contains(&q.as_str()));
            let first = n
                .child_by_field_name("arguments")
                .and_then(|a| a.named_child(0));
            builder && first.is_some_and(|a| is_outside(s, a))
        }
        "binary_operator" => {
            // `Path('/etc') / 'x'`
            n.child_by_field_name("left")
                .is_some_and(|l| is_outside(s, l))
        }
        _ => false,
    }
}

/// Whether a string literal among the call's arguments names a loopback host.
fn names_loopback(s: &Scanner, args: Option<Node>) -> bool {
    let Some(args) = args else { return false };
    let mut stack = vec![args];
    while let Some(n) = stack.pop() {
        if n.kind() == "string" {
            let t = s.text(n);
            if ["localhost", "127.0.0.1", "[::1]", "'::1'", "\"::1\""]
                .iter()
                .any(|h| t.contains(h))
            {
                return true;
            }
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    false
}

/// The body of a string literal: prefix letters and quotes removed.
fn literal(text: &str) -> String {
    let body = text.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    body.trim_matches(|c| c == '"' || c == '\'').to_string()
}

/// An upper-case identifier-like word in the literal containing a secret's name
/// (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`), not prose ("the password").
fn names_a_secret(text: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.len() >= 5 && !w.chars().any(|c| c.is_ascii_lowercase()))
        .any(|w| SECRET_WORDS.iter().any(|s| w.contains(s)))
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
            ("import os\nos.system('ls')\n", &["shell"]),
            (
                "import subprocess\nsubprocess.run('ls | wc', shell=True)\n",
                &["shell"],
            ),
            (
                "from subprocess import Popen\nPopen(['ls'])\n",
                &["subprocess"],
            ),
            ("import os\nos.execvp('ls', ['ls'])\n", &["subprocess"]),
            ("import requests\nrequests.get(url)\n", &["network"]),
            (
                "import urllib.request\nurllib.request.urlopen('https://example.com')\n",
                &["network"],
            ),
            ("s.connect((host, 80))\n", &["network"]),
            ("import shutil\nshutil.rmtree(d)\n", &["delete"]),
            ("from pathlib import Path\nPath(p).unlink()\n", &["delete"]),
            (
                "with open('/etc/hosts', 'a') as f:\n pass\n",
                &["write-outside-cwd"],
            ),
            (
                "import os\nopen(os.path.join('~', 'x'), mode='w')\n",
                &["write-outside-cwd"],
            ),
            (
                "import shutil\nshutil.copy('a', '/usr/bin/a')\n",
                &["write-outside-cwd"],
            ),
            (
                "from pathlib import Path\nPath('../x').write_text('y')\n",
                &["write-outside-cwd"],
            ),
            ("import os\nx = os.environ['HOME']\n", &["environment"]),
            (
                "from os import getenv\ngetenv('X')\n",
                &["environment", "environment"],
            ),
            ("k = open('~/.ssh/id_rsa').read()\n", &["credentials"]),
            (
                "import os\nt = os.environ.get('GITHUB_TOKEN')\n",
                &["credentials", "environment"],
            ),
            // The tamper scan's findings come with them.
            (
                "import os, sys\nos.system('x')\nsys._getframe()\n",
                &["shell", "frame-introspection"],
            ),
        ];
        for (code, want) in cases {
            assert_eq!(rules(code), *want, "{code:?}");
        }
    }

    #[test]
    fn leaves_ordinary_code_alone() {
        for code in [
            "with open('out.csv', 'w') as f:\n    f.write('x')\n",
            "with open('/etc/hosts') as f:\n    f.read()\n",
            "import os\nos.makedirs('data', exist_ok=True)\n",
            "import requests\nrequests.get('http://127.0.0.1:5000/')\n",
            "import sqlite3\nconn = sqlite3.connect(db)\n",
            "import subprocess\nx = subprocess.PIPE\n",
            "s = 'Enter the password'\n",
            "def f():\n    \"\"\"Reads GITHUB_TOKEN from ~/.ssh.\"\"\"\n",
            "import os\np = os.path.join('a', 'b')\n",
            "with open('/dev/null', 'w') as f:\n    pass\n",
        ] {
            assert!(scan(code).is_empty(), "{code}: {:?}", scan(code));
        }
    }

    #[test]
    fn every_rule_is_listed() {
        let all: Vec<&str> = all_rules().collect();
        for r in ["shell", "network", "credentials", "raw-fd", "ctypes"] {
            assert!(all.contains(&r), "{r}");
        }
    }
}
