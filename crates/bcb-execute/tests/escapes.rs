//! The seven attack classes of issue 9, one test each: every probe is first shown to work with
//! the sandbox off (a control made only of harmless probes: opening for write without writing,
//! reading files this test planted, connecting to this test's own socket), then shown
//! contained with the host's isolation.
//!
//! Convention: each sample's `task_func()` returns the string "contained" when every probe
//! failed, otherwise the list of what got through, so a contained attack is a `pass` and the
//! failure details name each leak (a crash is a `fail`: a false alarm, never a false all-clear).
// Tests report what each probe saw: printing is their output, not a library's.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use bcb_execute::LocalKind;
use bcb_execute::{
    executor_with, host_isolation, landlock_abi, Isolation, Job, Outcome, Remark, Status,
};
use common::*;

const CONTAINED_TEST: &str = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_it(self):\n        self.assertEqual(task_func(), 'contained')\n";
const LIMIT: f64 = 10.0;

/// No namespaces, no capability drop, no Landlock/seccomp: the control ("sandbox off").
fn sandbox_off() -> Isolation {
    Isolation {
        nproc_rlimit: true,
        ..Isolation::default()
    }
}

fn probe(name: &str, body: &str) -> String {
    format!(
        "import os, sys, stat, socket\ndef task_func():\n    hits = []\n{body}    return 'contained' if not hits else hits\n# {name}\n"
    )
}

fn run_with(kind: LocalKind, iso: Isolation, codes: &[String], parallel: usize) -> Vec<Outcome> {
    let py = python().expect("checked by the caller");
    let jobs: Vec<Job> = codes
        .iter()
        .enumerate()
        .map(|(i, c)| job(i, "escape", c, CONTAINED_TEST, LIMIT))
        .collect();
    let exec = executor_with(kind, config(py, parallel), iso).expect("executor");
    let mut out = run_on(exec.as_ref(), jobs);
    (0..codes.len()).map(|i| out.remove(&i).unwrap()).collect()
}

fn leaks(o: &Outcome) -> String {
    format!("{} {:?} {:?}", o.status.as_str(), o.details, o.remark)
}

/// Shows the attack works with the sandbox off (only on probes that are harmless), then that
/// both executors contain it with the host's isolation.
/// Whether to run the sandbox-off control first.
#[derive(Clone, Copy)]
enum Control {
    Always,
    AsRoot,
    None,
}

fn contained(codes: &[String], control: Control) {
    if python().is_none() {
        return;
    }
    // Kernel settings and devices are closed to an unprivileged user even with the sandbox
    // off: those controls only mean something as root.
    let control = match control {
        Control::Always => true,
        Control::AsRoot => (unsafe { libc::geteuid() }) == 0,
        Control::None => false,
    };
    if control {
        for (i, o) in run_with(LocalKind::Process, sandbox_off(), codes, 2)
            .iter()
            .enumerate()
        {
            assert_eq!(
                o.status,
                Status::Fail,
                "control: probe {i} found nothing with the sandbox off, so the test proves nothing: {}",
                leaks(o)
            );
        }
    }
    for kind in [LocalKind::Pool, LocalKind::Process] {
        for (i, o) in run_with(kind, host_isolation(), codes, 2)
            .iter()
            .enumerate()
        {
            assert_eq!(
                o.status,
                Status::Pass,
                "{kind}: probe {i} got through: {}",
                leaks(o)
            );
        }
    }
}

/// A directory this test owns that is visible on the host (not under a private /tmp).
fn visible_dir(tag: &str) -> tempfile::TempDir {
    let base = std::env::var_os("BCB_ESCAPE_VISIBLE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    std::fs::create_dir_all(&base).unwrap();
    tempfile::Builder::new()
        .prefix(&format!("bcb-escape-{tag}-"))
        .tempdir_in(base)
        .unwrap()
}

fn world_accessible(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777));
}

#[test]
fn escape_1_host_kernel_settings_not_writable() {
    // Opening for write is the whole probe: nothing is ever written.
    let writable = probe(
        "kernel settings",
        "    for p in ['/proc/sys/kernel/core_pattern', '/proc/sys/vm/swappiness', '/proc/sys/vm/overcommit_memory', '/proc/sysrq-trigger', '/proc/sys/kernel/hostname']:\n        try:\n            os.close(os.open(p, os.O_WRONLY))\n            hits.append('writable ' + p)\n        except OSError:\n            pass\n",
    );
    // /proc/keys lists the keys its reader may view: without a mount namespace to mask it, the
    // sample's own fresh session keyring is all it may show (none of bcb's or the runtime's).
    let masked = probe(
        "masked proc files",
        "    for p in ['/proc/kcore', '/proc/keys', '/proc/timer_list', '/proc/sched_debug']:\n        try:\n            with open(p, 'rb') as f:\n                data = f.read(4096).splitlines()\n            if p == '/proc/keys':\n                data = [k for k in data if k.split()[5:6] != [str(os.getuid()).encode()]]\n            if data:\n                hits.append('readable ' + p)\n        except OSError:\n            pass\n",
    );
    contained(&[writable], Control::AsRoot);
    contained(&[masked], Control::None);
}

#[test]
fn escape_2_user_secrets_not_readable() {
    if python().is_none() {
        return;
    }
    let home = visible_dir("home");
    let h = home.path();
    let plant = |rel: &str, text: &str| {
        let p = h.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    };
    let files = [
        plant(".cache/huggingface/token", "hf_planted_secret"),
        plant(".ssh/id_ed25519", "planted private key"),
        plant(".netrc", "machine example.com login me password planted"),
        plant(".config/gh/hosts.yml", "oauth_token: planted"),
        plant("run/samples.jsonl", "{\"task_id\": \"planted\"}"),
        plant("run/samples_eval_results.json.journal", "planted journal"),
        // The answer key: a pass bought by exec'ing its own task's canonical solution.
        plant(
            ".cache/bcb/datasets/bigcodebench-v0.1.4.jsonl",
            "{\"task_id\": \"BigCodeBench/0\", \"canonical_solution\": \"planted\"}",
        ),
    ];
    let list = files
        .iter()
        .map(|p| format!("{:?}", p.to_str().unwrap()))
        .collect::<Vec<_>>()
        .join(", ");
    let code = probe(
        "secrets",
        &format!(
            "    for p in [{list}]:\n        try:\n            open(p).read()\n            hits.append('read ' + p)\n        except OSError:\n            pass\n    allowed = tuple(p.rstrip('/') + '/' for p in (sys.prefix, sys.base_prefix, os.environ.get('MPLCONFIGDIR') or sys.prefix))\n    for d in ['/root', '/home']:\n        for top, dirs, names in os.walk(d):\n            if (top + '/').startswith(allowed):\n                dirs[:] = []\n                continue\n            if names:\n                hits.append('files in ' + top)\n                break\n"
        ),
    );
    contained(&[code], Control::Always);
}

#[test]
fn escape_3_host_unix_sockets_unreachable() {
    if python().is_none() {
        return;
    }
    let dir = visible_dir("sock");
    world_accessible(dir.path());
    let path = dir.path().join("s.sock");
    let listener = UnixListener::bind(&path).unwrap();
    world_accessible(&path);
    listener.set_nonblocking(true).unwrap();
    let code = probe(
        "unix sockets",
        &format!(
            "    try:\n        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n        s.connect({:?})\n        hits.append('connected to the test listener')\n    except OSError:\n        pass\n    for d in ['/run', '/var/run']:\n        try:\n            for n in os.listdir(d):\n                if n.endswith('.sock') or n in ('docker', 'dbus', 'systemd'):\n                    hits.append('sees ' + d + '/' + n)\n        except OSError:\n            pass\n",
            path.to_str().unwrap()
        ),
    );
    contained(&[code], Control::Always);
    // Drain what the control connected.
    while listener.accept().is_ok() {}
}

#[test]
fn escape_4_inherited_fds_do_not_reach_the_sample() {
    if python().is_none() {
        return;
    }
    // This test is the leaky launcher: a directory fd on a writable dir and a file fd, both
    // without close-on-exec, open before the executor starts.
    let dir = visible_dir("fds");
    world_accessible(dir.path());
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "planted fd secret").unwrap();
    let dfd = std::fs::File::open(dir.path()).unwrap();
    let ffd = std::fs::File::open(&secret).unwrap();
    for fd in [dfd.as_raw_fd(), ffd.as_raw_fd()] {
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
    }
    let code = probe(
        "inherited fds",
        "    for fd in range(3, 1024):\n        try:\n            st = os.fstat(fd)\n        except OSError:\n            continue\n        if stat.S_ISFIFO(st.st_mode):\n            continue  # the report channel\n        hits.append('fd %d open (%s)' % (fd, os.readlink('/proc/self/fd/%d' % fd) if os.path.exists('/proc/self/fd/%d' % fd) else '?'))\n        if stat.S_ISDIR(st.st_mode):\n            try:\n                os.close(os.open('created-through-leaked-fd', os.O_CREAT | os.O_WRONLY, dir_fd=fd))\n                hits.append('created a file through fd %d' % fd)\n            except OSError:\n                pass\n",
    );
    // Control: an ordinary child of this launcher does see both descriptors.
    let py = python().unwrap();
    let out = std::process::Command::new(&py)
        .args(["-c", &format!("{code}\nprint(task_func())")])
        .output()
        .unwrap();
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(
        seen.contains("created a file through fd") && seen.contains("secret.txt"),
        "control: a plain child did not see the leaked fds: {seen}"
    );
    contained(&[code], Control::None);
    let planted = dir.path().join("created-through-leaked-fd");
    let _ = std::fs::remove_file(&planted);
    drop((dfd, ffd));
}

#[test]
fn escape_5_dev_is_minimal() {
    // O_NOCTTY and no write: opening /dev/kmsg or /dev/console for write is the probe.
    let code = probe(
        "host /dev",
        "    for p in ['/dev/kmsg', '/dev/console', '/dev/mem', '/dev/port']:\n        try:\n            os.close(os.open(p, os.O_WRONLY | os.O_NOCTTY))\n            hits.append('writable ' + p)\n        except OSError:\n            pass\n    allowed = {'null', 'zero', 'full', 'random', 'urandom', 'tty', 'shm', 'pts', 'ptmx', 'fd', 'stdin', 'stdout', 'stderr', 'mqueue'}\n    try:\n        seen = set(os.listdir('/dev'))\n    except OSError:\n        seen = set()\n    extra = sorted(seen - allowed)\n    if extra:\n        hits.append('extra devices: ' + ' '.join(extra[:20]))\n    for p in ['/dev/null', '/dev/zero', '/dev/urandom']:\n        try:\n            os.close(os.open(p, os.O_RDWR))\n        except OSError as e:\n            hits.append('needed device missing: %s (%s)' % (p, e))\n",
    );
    contained(&[code], Control::AsRoot);
}

/// Three samples of the probe `code` in one slot of each backend (pool, process), one after
/// the other: each must pass (a probe reports what it found).
fn each_of_three_in_one_slot_passes(code: String) {
    let codes = vec![code; 3];
    for kind in [LocalKind::Pool, LocalKind::Process] {
        for (i, o) in run_with(kind, host_isolation(), &codes, 1)
            .iter()
            .enumerate()
        {
            assert_eq!(o.status, Status::Pass, "{kind} sample {i}: {}", leaks(o));
        }
    }
}

#[test]
fn escape_6_no_state_between_samples_of_a_slot() {
    if python().is_none() {
        return;
    }
    // Each sample marks every non-pipe descriptor it holds (O_NONBLOCK is a file-status flag,
    // shared by every holder of the description) and reports marks left by a previous sample.
    let code = probe(
        "slot descriptors",
        "    import fcntl\n    for fd in range(3, 1024):\n        try:\n            st = os.fstat(fd)\n        except OSError:\n            continue\n        if stat.S_ISFIFO(st.st_mode):\n            continue\n        fl = fcntl.fcntl(fd, fcntl.F_GETFL)\n        if fl & os.O_NONBLOCK:\n            hits.append('fd %d carries a flag set by an earlier sample' % fd)\n        try:\n            fcntl.fcntl(fd, fcntl.F_SETFL, fl | os.O_NONBLOCK)\n        except OSError:\n            pass\n        try:\n            hits.append('slot fd %d: %s' % (fd, os.readlink('/proc/self/fd/%d' % fd)))\n        except OSError:\n            hits.append('slot fd %d' % fd)\n",
    );
    each_of_three_in_one_slot_passes(code);
}

#[test]
fn escape_6b_a_sample_forked_ahead_holds_only_its_report_pipes() {
    if python().is_none() {
        return;
    }
    // A slot forks and isolates each sample's process before its job comes, and hands the
    // job over a third pipe: that one is closed before the sample's code exists, so the
    // sample holds exactly two pipes (report and key), in every sample of a slot.
    let code = probe(
        "pipes of a sample forked ahead",
        "    fifos = []\n    for fd in range(3, 4096):\n        try:\n            if stat.S_ISFIFO(os.fstat(fd).st_mode):\n                fifos.append(fd)\n        except OSError:\n            pass\n    if len(fifos) != 2:\n        hits.append('%d pipes open: %s' % (len(fifos), fifos))\n",
    );
    each_of_three_in_one_slot_passes(code);
}

/// Sample code that defines `_harness()`: every namespace of the harness (the entry, which is
/// `__main__`, and each module of its package, out of sys.modules since they were loaded),
/// reached from `__main__` through the globals of its functions and classes.
const HARNESS_NAMESPACES: &str = "import sys\ndef _harness():\n    seen, todo = {}, [vars(sys.modules['__main__'])]\n    while todo:\n        ns = todo.pop()\n        if id(ns) in seen:\n            continue\n        seen[id(ns)] = ns\n        for v in list(ns.values()):\n            for f in (v, getattr(v, '__init__', None)):\n                g = getattr(f, '__globals__', None)\n                if isinstance(g, dict):\n                    todo.append(g)\n    return list(seen.values())\n";

/// Harness-aware forgeries: each sample's `task_func` is wrong (returns 0, the test wants 1)
/// and tries to get a `pass` anyway.
fn forgeries() -> Vec<(&'static str, String)> {
    let wrong = "def task_func():\n    return 0\n";
    vec![
        ("nonce and report fd from the harness's frames", format!("import sys, os, json\ndef _forge():\n    f = sys._getframe()\n    while f is not None:\n        l = f.f_locals\n        job = l.get('job')\n        if isinstance(job, dict) and job.get('nonce'):\n            for k in ('wfd', 'report_fd', 'fd'):\n                if isinstance(l.get(k), int):\n                    os.write(l[k], (json.dumps({{'nonce': job['nonce'], 'status': 'pass', 'details': {{}}, 'ran': ['test_it'], 'test_secs': 0.0}}) + '\\n').encode())\n                    os._exit(0)\n        f = f.f_back\n{wrong}_forge()\n")),
        ("nonce from process memory", format!("import os, re, json, stat\ndef _forge():\n    cands = []\n    with open('/proc/self/maps') as m, open('/proc/self/mem', 'rb', 0) as mem:\n        for line in m:\n            p = line.split()\n            if p[1] != 'rw-p':\n                continue\n            a, b = (int(x, 16) for x in p[0].split('-'))\n            if b - a > (256 << 20):\n                continue\n            try:\n                mem.seek(a)\n                cands += re.findall(rb'(?<![0-9a-f])[0-9a-f]{{32}}(?![0-9a-f])', mem.read(b - a))\n            except (OSError, OverflowError, ValueError):\n                pass\n    fifos = []\n    for fd in range(3, 10000):\n        try:\n            if stat.S_ISFIFO(os.fstat(fd).st_mode):\n                fifos.append(fd)\n        except OSError:\n            pass\n    for c in list(dict.fromkeys(cands))[:20000]:\n        line = (json.dumps({{'nonce': c.decode(), 'status': 'pass', 'details': {{}}, 'ran': ['test_it'], 'test_secs': 0.0}}) + '\\n').encode()\n        for fd in fifos:\n            try:\n                os.write(fd, line)\n            except OSError:\n                pass\n    os._exit(0)\n{wrong}_forge()\n")),
        ("json.dumps replaced through sys.modules", format!("import sys\n_j = sys.modules['json']\n_orig = _j.dumps\ndef _dumps(obj, *a, **k):\n    if isinstance(obj, dict) and 'status' in obj:\n        obj = dict(obj, status='pass', details={{}}, ran=['test_it'], integrity=None)\n    return _orig(obj, *a, **k)\n_j.dumps = _dumps\n{wrong}")),
        ("harness writer replaced through sys.modules", format!("{HARNESS_NAMESPACES}import json as _json\nfor _h in _harness():\n    if 'write_all' in _h:\n        def _fake(fd, data, _w=_h['write_all']):\n            try:\n                obj = _json.loads(data)\n                if isinstance(obj, dict) and 'status' in obj:\n                    obj.update(status='pass', details={{}}, ran=['test_it'], integrity=None)\n                    data = (_json.dumps(obj) + '\\n').encode()\n            except Exception:\n                pass\n            return _w(fd, data)\n        _h['write_all'] = _fake\n{wrong}")),
        ("integrity snapshot replaced through sys.modules", format!("{HARNESS_NAMESPACES}import unittest\nfor _h in _harness():\n    for _n, _f in (('unittest_snapshot', lambda *a, **k: {{}}), ('harness_snapshot', lambda *a, **k: {{}}), ('snapshot_diff', lambda *a, **k: [])):\n        if _n in _h:\n            _h[_n] = _f\ndef _run(self, result=None):\n    result.startTest(self)\n    result.addSuccess(self)\n    result.stopTest(self)\nunittest.TestCase.run = _run\n{wrong}")),
        ("builtins.__build_class__ hook neutralises the tests", format!("import builtins\n_bc = builtins.__build_class__\ndef _hook(func, name, *bases, **kw):\n    cls = _bc(func, name, *bases, **kw)\n    if name == 'TestCases':\n        for n in list(vars(cls)):\n            if n.startswith('test'):\n                setattr(cls, n, lambda self: None)\n    return cls\nbuiltins.__build_class__ = _hook\n{wrong}")),
        ("__import__ hook hands the integrity check pristine fakes", format!("import builtins, types, unittest, unittest.case, unittest.loader, unittest.result, unittest.suite\n_fake = {{}}\nfor _m in (unittest, unittest.case, unittest.loader, unittest.result, unittest.suite):\n    _c = types.ModuleType(_m.__name__)\n    _c.__dict__.update(vars(_m))\n    _fake[_m.__name__] = _c\n_fake['unittest'].case, _fake['unittest'].loader, _fake['unittest'].result, _fake['unittest'].suite = _fake['unittest.case'], _fake['unittest.loader'], _fake['unittest.result'], _fake['unittest.suite']\n_TC = type('TestCase', (), dict(vars(unittest.TestCase)))\n_TC.__qualname__ = 'TestCase'\n_fake['unittest'].TestCase = _TC\n_imp = builtins.__import__\ndef _hook(name, g=None, l=None, fromlist=(), level=0):\n    if name.startswith('unittest') and g is not None and g.get('__name__') == '__main__':\n        return _fake['unittest']\n    return _imp(name, g, l, fromlist, level)\ndef _run(self, result=None):\n    result.startTest(self)\n    result.addSuccess(self)\n    result.stopTest(self)\nunittest.TestCase.run = _run\nbuiltins.__import__ = _hook\n{wrong}")),
        ("result-recorder class patched", "import gc, unittest\ndef task_func():\n    for o in gc.get_objects():\n        if isinstance(o, type) and issubclass(o, unittest.TestResult) and o.__name__ == 'Recorder':\n            o.addFailure = lambda self, test, err, _o=o: _o.addSuccess(self, test)\n            o.addError = lambda self, test, err, _o=o: _o.addSuccess(self, test)\n    return 0\n".to_string()),
        ("result-recorder instance patched", "import gc, unittest\ndef task_func():\n    for o in gc.get_objects():\n        if isinstance(o, unittest.TestResult) and type(o).__name__ == 'Recorder':\n            o.addFailure = lambda test, err, _o=o: _o.addSuccess(test)\n            o.addError = lambda test, err, _o=o: _o.addSuccess(test)\n    return 0\n".to_string()),
    ]
}

const FORGE_TEST: &str = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_it(self):\n        self.assertEqual(task_func(), 1)\n";

/// The runtime defences alone (what an executor sees): a forged pass must not survive.
#[test]
fn escape_7_forged_pass_is_caught_at_run_time() {
    let Some(py) = python() else { return };
    let all = forgeries();
    for kind in [LocalKind::Pool, LocalKind::Process] {
        let jobs: Vec<Job> = all
            .iter()
            .enumerate()
            .map(|(i, (name, code))| job(i, name, code, FORGE_TEST, LIMIT))
            .collect();
        let exec = executor_with(kind, config(py.clone(), 2), host_isolation()).unwrap();
        let out = run_on(exec.as_ref(), jobs);
        let forged: Vec<&str> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| out[i].status == Status::Pass)
            .map(|(_, (name, _))| *name)
            .collect();
        for (i, (name, _)) in all.iter().enumerate() {
            eprintln!("{kind} {name}: {}", leaks(&out[&i]));
        }
        assert!(forged.is_empty(), "{kind}: forged passes: {forged:#?}");
    }
}

/// A verdict is judged as soon as the report channel is closed, before the sample's slow exit;
/// a process that still holds the channel must keep it open. Here a child forked by the sample
/// copies the nonce out of the key pipe without consuming it (`tee`), writes a forged pass
/// before the harness's own report and keeps the channel: answering at the first report would
/// hand out its pass (made to do so, the supervisor read the forged report and only the hack
/// watch's account, incomplete at that point, failed it); waiting for the close sees both.
#[test]
fn escape_7b_a_forged_report_before_the_real_one_is_caught() {
    let Some(py) = python() else { return };
    let code = "import os, json, stat, ctypes, time\ndef _forge():\n    libc = ctypes.CDLL(None, use_errno=True)\n    fifos = []\n    for n in os.listdir('/proc/self/fd'):\n        try:\n            if int(n) > 2 and stat.S_ISFIFO(os.fstat(int(n)).st_mode):\n                fifos.append(int(n))\n        except (OSError, ValueError):\n            pass\n    r, w = os.pipe()\n    nonce = ''\n    for fd in fifos:\n        got = libc.tee(fd, w, 64, 2)\n        if got > 0:\n            nonce = os.read(r, got).decode()\n            break\n    if os.fork() == 0:\n        line = (json.dumps({'nonce': nonce, 'status': 'pass', 'details': {}, 'ran': ['test_it'], 'test_secs': 0.0}) + '\\n').encode()\n        for fd in fifos:\n            try:\n                os.write(fd, line)\n            except OSError:\n                pass\n        time.sleep(3)\n        os._exit(0)\n    time.sleep(0.2)\ndef task_func():\n    return 0\n_forge()\n";
    for kind in [LocalKind::Pool, LocalKind::Process] {
        let exec = executor_with(kind, config(py.clone(), 1), host_isolation()).unwrap();
        let out = run_on(
            exec.as_ref(),
            vec![job(0, "forged first", code, FORGE_TEST, LIMIT)],
        );
        let o = &out[&0];
        eprintln!("{kind}: {}", leaks(o));
        assert_ne!(o.status, Status::Pass, "{kind}: {}", leaks(o));
        // Both reports seen (the hack watch's account is a second, independent catch).
        assert!(
            matches!(&o.remark, Some(Remark::Integrity { problem }) if problem == "more than one report"),
            "{kind}: {}",
            leaks(o)
        );
    }
}

/// What the run-time checks cannot stop (written against this harness: the sample reads the
/// key pipe itself, forges a report and exits before the harness reports). Only the tamper
/// scan stands in its way; see the README's threat model.
fn fd_forgery() -> (&'static str, String) {
    (
        "key pipe read and report forged through raw fds",
        "import os, json, stat\ndef _forge():\n    fifos = []\n    for n in os.listdir('/proc/self/fd'):\n        try:\n            if int(n) > 2 and stat.S_ISFIFO(os.fstat(int(n)).st_mode):\n                fifos.append(int(n))\n        except OSError:\n            pass\n    nonce = ''\n    for fd in fifos:\n        try:\n            os.set_blocking(fd, False)\n            nonce = nonce or os.read(fd, 64).decode()\n        except OSError:\n            pass\n    for fd in fifos:\n        try:\n            os.write(fd, (json.dumps({'nonce': nonce, 'status': 'pass', 'details': {}, 'ran': ['test_it'], 'test_secs': 0.0}) + '\\n').encode())\n        except OSError:\n            pass\n    os._exit(0)\ndef task_func():\n    return 0\n_forge()\n".to_string(),
    )
}

/// The static tamper scan flags every forgery before it runs.
#[test]
fn escape_7_forged_pass_is_flagged_by_the_tamper_scan() {
    for (name, code) in forgeries().into_iter().chain([fd_forgery()]) {
        let findings = bcb_sanitize::tamper::scan(&code);
        assert!(!findings.is_empty(), "not flagged: {name}");
        let list = bcb_sanitize::tamper::findings_list(&findings);
        assert!(!list.is_empty(), "{name}");
    }
}

/// A probe of every ancestor of the sample (its supervisor, the zygote, bcb, and above) whose
/// command name starts with `prefix`: their memory, mappings and environment through /proc
/// (the supervisor's memory holds the report key; bcb's environment, API keys).
fn ancestors_probe(prefix: &str) -> String {
    probe(
        "bcb's processes",
        &format!(
            "    pid = os.getppid()\n    while pid > 1:\n        try:\n            comm = open('/proc/%d/comm' % pid).read().strip()\n            parent = int(open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[1])\n        except OSError:\n            break\n        if comm.startswith({prefix:?}):\n            for f in ('environ', 'maps', 'mem'):\n                try:\n                    os.close(os.open('/proc/%d/%s' % (pid, f), os.O_RDONLY))\n                    hits.append('opened /proc/%d/%s (%s)' % (pid, f, comm))\n                except OSError:\n                    pass\n        pid = parent\n"
        ),
    )
}

/// bcb and the harness's own processes are out of the sample's reach: no memory, mappings or
/// environment of an ancestor through /proc, whatever the host permits.
#[test]
fn escape_8_bcb_and_its_supervisors_out_of_reach() {
    contained(&[ancestors_probe("")], Control::Always);
    // Not dumpable alone (no namespace, no Landlock, the sample at the supervisor's uid):
    // shown where it is what decides, an unprivileged bcb (root's samples may trace anyone).
    if python().is_none() || unsafe { libc::geteuid() } == 0 {
        return;
    }
    let harness = ancestors_probe("python");
    let only_dumpable = Isolation {
        supervisor_out_of_reach: true,
        ..sandbox_off()
    };
    for kind in [LocalKind::Pool, LocalKind::Process] {
        let off = run_with(kind, sandbox_off(), std::slice::from_ref(&harness), 1);
        assert_eq!(
            off[0].status,
            Status::Fail,
            "{kind}: control: {}",
            leaks(&off[0])
        );
        let on = run_with(
            kind,
            only_dumpable.clone(),
            std::slice::from_ref(&harness),
            1,
        );
        assert_eq!(on[0].status, Status::Pass, "{kind}: {}", leaks(&on[0]));
    }
}

/// As root: the escape tests again as user `nobody` (this test binary re-executed with
/// setpriv, the system Python, since the eval venv under a private home is not readable by
/// other users), where the host isolation means a user namespace or the degraded level.
#[test]
fn escapes_as_unprivileged_user() {
    escapes_as_nobody(&[]);
}

/// As root: the escape tests as user `nobody` without namespaces (`BCB_SANDBOX=basic`), as in
/// a container under Docker's default seccomp profile or Kubernetes' restricted one, or on a
/// host without user namespaces: the sample shares bcb's uid; Landlock, seccomp and the
/// supervisor's not being dumpable stand in for the namespaces.
#[test]
fn escapes_as_unprivileged_user_without_namespaces() {
    escapes_as_nobody(&[("BCB_SANDBOX", "basic")]);
}

fn escapes_as_nobody(env: &[(&str, &str)]) {
    if std::env::var_os("BCB_ESCAPE_INNER").is_some() || python().is_none() {
        return;
    }
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: not root (the other tests already run unprivileged)");
        return;
    }
    let as_nobody = |args: &[&str]| {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
        c.args(args);
        c
    };
    let Some(py) = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| {
            as_nobody(&[p, "-c", "pass"])
                .status()
                .is_ok_and(|s| s.success())
        })
    else {
        let msg = "no Python that user nobody can run (or no setpriv)";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{msg}");
        }
        eprintln!("skipping: {msg}");
        return;
    };
    let exe = std::env::current_exe().unwrap();
    let visible = visible_dir("nobody");
    let home = visible_dir("nobody-home");
    for d in [visible.path(), home.path()] {
        let c = std::ffi::CString::new(d.to_str().unwrap()).unwrap();
        unsafe { libc::chown(c.as_ptr(), 65534, 65534) };
    }
    let status = as_nobody(&[exe.to_str().unwrap(), "escape_", "--test-threads", "1"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home.path())
        .env("TMPDIR", "/tmp")
        .env("BCB_ESCAPE_INNER", "1")
        .env("BCB_ESCAPE_VISIBLE_DIR", visible.path())
        .env("BCB_PYTHON", py)
        .envs(env.iter().copied())
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the escape tests failed as user nobody with {env:?}"
    );
}

/// The fallback where namespaces are refused (`Isolation::degraded`: Landlock + seccomp +
/// rlimits, root without capabilities or uid 65534): what it still contains. The filesystem,
/// /proc, /dev and pathname unix sockets stay visible there (env check names that fallback).
#[test]
fn escapes_degraded_fallback_still_blocks_writes_fds_and_forgeries() {
    if python().is_none() {
        return;
    }
    if landlock_abi() < 1 {
        let msg = "no Landlock on this kernel: the degraded level has no write confinement";
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{msg}");
        }
        eprintln!("skipping: {msg}");
        return;
    }
    let writes = probe(
        "kernel settings and devices, degraded",
        "    for p in ['/proc/sys/kernel/core_pattern', '/proc/sys/vm/swappiness', '/proc/sysrq-trigger', '/dev/kmsg', '/dev/console']:\n        try:\n            os.close(os.open(p, os.O_WRONLY | os.O_NOCTTY))\n            hits.append('writable ' + p)\n        except OSError:\n            pass\n    for p in ['/dev/null', '/dev/zero', '/dev/urandom']:\n        try:\n            os.close(os.open(p, os.O_RDWR))\n        except OSError as e:\n            hits.append('needed device missing: %s (%s)' % (p, e))\n",
    );
    let fds = probe(
        "slot descriptors, degraded",
        "    for fd in range(3, 1024):\n        try:\n            st = os.fstat(fd)\n        except OSError:\n            continue\n        if not stat.S_ISFIFO(st.st_mode):\n            hits.append('fd %d' % fd)\n",
    );
    for kind in [LocalKind::Pool, LocalKind::Process] {
        for (i, o) in run_with(
            kind,
            Isolation::degraded(),
            &[writes.clone(), fds.clone()],
            2,
        )
        .iter()
        .enumerate()
        {
            assert_eq!(
                o.status,
                Status::Pass,
                "{kind} degraded probe {i}: {}",
                leaks(o)
            );
        }
        let forged: Vec<Job> = forgeries()
            .iter()
            .enumerate()
            .map(|(i, (name, code))| job(i, name, code, FORGE_TEST, LIMIT))
            .collect();
        let exec =
            executor_with(kind, config(python().unwrap(), 2), Isolation::degraded()).unwrap();
        let out = run_on(exec.as_ref(), forged);
        let names = forgeries();
        let passed: Vec<&str> = (0..names.len())
            .filter(|i| out[i].status == Status::Pass)
            .map(|i| names[i].0)
            .collect();
        assert!(
            passed.is_empty(),
            "{kind} degraded: forged passes {passed:?}"
        );
    }
}
