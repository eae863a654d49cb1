//! Hostile samples, run through both executors with the host's full isolation and with the
//! degraded (no namespaces) level: each must end as fail/timeout within its limit, leave no
//! process behind and write nothing outside its own directory.
#![allow(clippy::print_stdout, clippy::print_stderr)] // test output: what ran, what was skipped

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Once;
use std::time::Duration;

use bcb_execute::LocalKind;
use bcb_execute::{executor_with, host_isolation, landlock_abi, Isolation, Job, Status};
use common::*;

const SECRET_VAR: &str = "BCB_ADVERSARIAL_TEST_API_KEY";
const SECRET: &str = "sk-bcb-adversarial-7c1e";
const LIMIT: f64 = 4.0;

fn set_secret() {
    static ONCE: Once = Once::new();
    // Set before any executor exists in this process.
    ONCE.call_once(|| std::env::set_var(SECRET_VAR, SECRET));
}

struct Case {
    name: &'static str,
    code: String,
    /// May only end as timeout (loops that never return).
    must_timeout: bool,
}

fn cases(token: &str, port: u16, home: &str, degraded_kill_safe: bool) -> Vec<Case> {
    // Every sample renames itself (comm) so leftovers can be found; `task_func() == 1` is a
    // pass, so each returns 1 exactly when its attack worked.
    let comm = format!("import ctypes as _c\n_c.CDLL(None).prctl(15, b'{token}', 0, 0, 0)\n");
    let f = |body: &str| format!("import os, sys, time, signal\n{comm}def task_func():\n{body}");
    let mut v = vec![
        Case {
            name: "fork bomb",
            code: f("    while True:\n        try:\n            os.fork()\n        except OSError:\n            pass\n"),
            must_timeout: true,
        },
        Case {
            name: "memory bomb",
            code: f("    x = []\n    for _ in range(60):\n        b = bytearray(100 << 20)\n        b[::4096] = b'x' * len(b[::4096])\n        x.append(b)\n    return 1\n"),
            must_timeout: false,
        },
        Case {
            name: "1 GB print",
            code: f("    s = 'x' * (1 << 20)\n    for _ in range(1024):\n        print(s)\n    for _ in range(256):\n        os.write(1, s.encode())\n        os.write(2, s.encode())\n    return 0\n"),
            must_timeout: false,
        },
        Case {
            name: "infinite loop ignoring SIGALRM",
            code: f("    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n        pass\n"),
            must_timeout: true,
        },
        Case {
            name: "catch-all exception loop",
            code: f("    while True:\n        try:\n            while True:\n                pass\n        except BaseException:\n            pass\n"),
            must_timeout: true,
        },
        Case {
            name: "setsid grandchild ignoring SIGTERM",
            code: f(&format!("    import subprocess\n    subprocess.Popen([sys.executable, '-c', 'import os, signal, time\\nos.setsid()\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\ntime.sleep(600) # {token}'], start_new_session=True)\n    if os.fork() == 0:\n        os.setsid()\n        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n        time.sleep(600)\n    time.sleep(0.5)\n    return 0\n")),
            must_timeout: false,
        },
        Case {
            name: "connect to a loopback listener of the test",
            code: f(&format!("    import socket\n    try:\n        socket.create_connection(('127.0.0.1', {port}), timeout=2).close()\n        return 1\n    except OSError:\n        return 0\n")),
            must_timeout: false,
        },
        Case {
            name: "DNS lookup",
            code: f("    import socket\n    try:\n        socket.getaddrinfo('pypi.org', 443)\n        return 1\n    except OSError:\n        return 0\n"),
            must_timeout: false,
        },
        Case {
            name: "write to /etc and the user's home",
            code: f(&format!("    ok = 0\n    for p in ['/etc/{token}', '{home}/{token}', '/tmp/../etc/{token}.2']:\n        try:\n            open(p, 'w').write('x')\n            ok = 1\n        except OSError:\n            pass\n    return ok\n")),
            must_timeout: false,
        },
        Case {
            name: "read a secret from the parent's environment",
            code: f(&format!("    seen = '{SECRET}' in repr(dict(os.environ))\n    for p in os.listdir('/proc'):\n        try:\n            seen = seen or b'{SECRET}' in open('/proc/%s/environ' % p, 'rb').read()\n        except OSError:\n            pass\n    return 1 if seen else 0\n")),
            must_timeout: false,
        },
        Case {
            name: "unittest monkey-patching (TestCase.run)",
            code: format!("import unittest\n{comm}def _run(self, result=None):\n    result.startTest(self)\n    result.addSuccess(self)\n    result.stopTest(self)\nunittest.TestCase.run = _run\ndef task_func():\n    return 0\n"),
            must_timeout: false,
        },
        Case {
            name: "unittest monkey-patching (empty suite)",
            code: format!("import unittest\n{comm}unittest.TestLoader.loadTestsFromTestCase = lambda self, cls: unittest.TestSuite()\ndef task_func():\n    return 0\n"),
            must_timeout: false,
        },
        Case {
            name: "test class rewritten at run time",
            code: f("    import sys\n    tc = sys.modules['__test__'].TestCases\n    for n in dir(tc):\n        if n.startswith('test'):\n            setattr(tc, n, lambda self: None)\n    return 0\n"),
            must_timeout: false,
        },
        Case {
            name: "early os._exit(0) at import",
            code: format!("import os\n{comm}os._exit(0)\n"),
            must_timeout: false,
        },
        Case {
            name: "early sys.exit(0) at import",
            code: format!("import sys\n{comm}sys.exit(0)\n"),
            must_timeout: false,
        },
        Case {
            name: "forged report on every fd, then os._exit(0)",
            code: f("    import json\n    for fd in range(3, 4096):\n        for st in ('pass',):\n            try:\n                os.write(fd, (json.dumps({'event': 'result', 'status': st, 'details': {}, 'ran': ['test_it']}) + '\\n').encode())\n            except OSError:\n                pass\n    os._exit(0)\n"),
            must_timeout: false,
        },
    ];
    if degraded_kill_safe {
        v.push(Case {
            name: "kill the parent",
            // getppid() is 0 inside a PID namespace; kill(-1) then hits whatever is reachable.
            code: f(&format!("    import posix\n    killed = 0\n    for pid in (os.getppid(), {pid}):\n        if pid > 1:\n            try:\n                posix.kill(pid, 9)\n                killed = 1\n            except OSError:\n                pass\n    time.sleep(1)\n    posix.kill(-1, 9)\n    return killed\n", pid = std::process::id())),
            must_timeout: false,
        });
    }
    v
}

/// Processes whose name or command line carries the token.
fn leftovers(token: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let mut text = String::new();
        for f in ["comm", "cmdline"] {
            if let Ok(mut file) = std::fs::File::open(e.path().join(f)) {
                let mut buf = Vec::new();
                let _ = file.read_to_end(&mut buf);
                text.push_str(&String::from_utf8_lossy(&buf));
            }
        }
        if text.contains(token) {
            found.push(format!("{name}: {}", text.replace('\0', " ")));
        }
    }
    found
}

fn adversarial(kind: LocalKind, iso: Isolation, label: &str) {
    let Some(py) = python() else { return };
    set_secret();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let token = format!(
        "bcbadv{}{}",
        &kind.to_string()[..2],
        std::process::id() % 100000
    );
    // Killing arbitrary same-uid pids is only contained by a PID namespace or Landlock scopes.
    let kill_safe = iso.pidns || (iso.landlock && landlock_abi() >= 6);
    let all = cases(&token, port, &home, kill_safe);
    let jobs: Vec<Job> = all
        .iter()
        .enumerate()
        .map(|(i, c)| job(i, c.name, &c.code, ONE_TEST, LIMIT))
        .collect();
    let cfg = config(py, 2);
    let grace = cfg.limits.kill_grace.as_secs_f64();
    let exec = executor_with(kind, cfg, iso).expect("executor");
    eprintln!("{label}: {:?}", exec.describe());
    let out = run_on(exec.as_ref(), jobs);
    drop(exec);
    let mut problems = Vec::new();
    for (i, c) in all.iter().enumerate() {
        let o = &out[&i];
        eprintln!(
            "{label} {kind} {}: {} {:?} {:.1}s",
            c.name,
            o.status.as_str(),
            o.remark,
            o.wall_secs
        );
        if o.status == Status::Pass {
            problems.push(format!("{}: passed ({:?})", c.name, o.details));
        }
        if c.must_timeout && o.status != Status::Timeout {
            problems.push(format!("{}: {:?}, expected timeout", c.name, o.status));
        }
        // limit + grace, plus a cold interpreter's start-up and one cold retry
        let bound = 2.0 * (LIMIT + grace + 20.0);
        if o.wall_secs > bound {
            problems.push(format!("{}: took {:.1}s", c.name, o.wall_secs));
        }
    }
    // The executor is dropped: what it started is gone within moments (a process that
    // escaped it is not, however long this waits).
    bcb_testkit::poll_until(Duration::from_secs(5), || leftovers(&token).is_empty());
    let left = leftovers(&token);
    if !left.is_empty() {
        problems.push(format!("processes left running: {left:?}"));
        for l in &left {
            if let Some(pid) = l.split(':').next().and_then(|p| p.parse::<i32>().ok()) {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
    for p in [
        PathBuf::from(format!("/etc/{token}")),
        PathBuf::from(format!("/etc/{token}.2")),
        PathBuf::from(format!("{home}/{token}")),
    ] {
        if p.exists() {
            let _ = std::fs::remove_file(&p);
            problems.push(format!("{} was written", p.display()));
        }
    }
    if listener.accept().is_ok() {
        problems.push("the loopback listener received a connection".into());
    }
    assert!(problems.is_empty(), "{label} {kind}: {problems:#?}");
}

on_both_executors!(
    adversarial_process_full_isolation,
    adversarial_pool_full_isolation,
    adversarial,
    host_isolation(),
    "host"
);

on_both_executors!(
    adversarial_process_degraded_landlock_seccomp,
    adversarial_pool_degraded_landlock_seccomp,
    adversarial,
    Isolation::degraded(),
    "degraded"
);

/// As root: runs the suite again as the unprivileged user `nobody` (re-executing this test
/// binary with setpriv), with host isolation, which then means a user namespace or the
/// degraded level. The eval venv under /root is not readable by other users here, so the
/// inner run uses the system Python (the cases need only the standard library).
#[test]
fn adversarial_unprivileged_user() {
    if std::env::var_os("BCB_ADV_INNER").is_some() {
        adversarial(LocalKind::Pool, host_isolation(), "unprivileged");
        adversarial(LocalKind::Process, host_isolation(), "unprivileged");
        return;
    }
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: not root (the other tests already run unprivileged)");
        return;
    }
    if python().is_none() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let Some(py) = [
        "/usr/bin/python3",
        "/usr/bin/python3.11",
        "/usr/local/bin/python3",
    ]
    .into_iter()
    .find(|p| {
        std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                p,
                "-c",
                "pass",
            ])
            .status()
            .is_ok_and(|s| s.success())
    }) else {
        eprintln!("skipping: no Python that user nobody can run (or no setpriv)");
        return;
    };
    let ok_exe = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "test",
            "-x",
        ])
        .arg(&exe)
        .status()
        .is_ok_and(|s| s.success());
    if !ok_exe {
        eprintln!(
            "skipping: {} is not executable by user nobody",
            exe.display()
        );
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let c = std::ffi::CString::new(home.path().to_str().unwrap()).unwrap();
    unsafe {
        libc::chown(c.as_ptr(), 65534, 65534);
    }
    let status = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe)
        .args([
            "--exact",
            "adversarial_unprivileged_user",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home.path())
        .env("TMPDIR", "/tmp")
        .env("BCB_ADV_INNER", "1")
        .env("BCB_PYTHON", py)
        .status()
        .unwrap();
    assert!(status.success(), "unprivileged run failed");
}
