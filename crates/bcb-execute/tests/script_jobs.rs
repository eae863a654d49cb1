//! Script jobs (`JobKind::Script`, what `bcb serve`'s `/run_code` runs) on the real eval env,
//! in the host's sandbox, on both local executors: stdin reaches the program and its output
//! comes back; the wall limit, a non-zero exit, the memory cap, files in and out; and a hostile
//! program (network, writes outside its directory, the host's secrets) gets nothing.

mod common;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use bcb_execute::LocalKind;
use bcb_execute::{Job, JobId, JobKind, Outcome, Program, ScriptEnd, ScriptInput, Status};
use common::*;

fn script(key: usize, code: &str, input: ScriptInput, secs: f64) -> Job {
    Job {
        id: JobId::new("bcb/run_code", Program::Sample(key), code),
        code: code.into(),
        test: "".into(),
        entry_point: String::new(),
        time_limit: Duration::from_secs_f64(secs),
        expected_secs: None,
        expected_cpu_secs: None,
        kind: JobKind::Script(Arc::new(input)),
    }
}

fn stdin(text: &str) -> ScriptInput {
    ScriptInput {
        stdin: text.into(),
        ..ScriptInput::default()
    }
}

fn run_scripts(kind: LocalKind, jobs: Vec<Job>) -> Vec<Outcome> {
    let n = jobs.len();
    let mut out = run(kind, config(python().unwrap(), 2), jobs);
    (0..n).map(|i| out.remove(&i).unwrap()).collect()
}

#[test]
fn a_script_reads_stdin_writes_stdout_and_its_end_is_reported() {
    if python().is_none() {
        return;
    }
    for kind in [LocalKind::Pool, LocalKind::Process] {
        let big = "x".repeat(300_000); // more than a pipe holds: stdin is fed as it is read
        let jobs = vec![
            script(
                0,
                "import sys\nn = int(input())\nprint(sum(map(int, sys.stdin.read().split())) * n)\nprint(__name__)\n",
                stdin("2\n1 2 3\n4\n"),
                10.0,
            ),
            script(1, "import time\nprint('started', flush=True)\ntime.sleep(30)\n", stdin(""), 1.0),
            script(2, "import sys\nprint('to stderr', file=sys.stderr)\nsys.exit(3)\n", stdin(""), 10.0),
            script(3, "raise ValueError('boom')\n", stdin(""), 10.0),
            script(4, "import sys\nprint(len(sys.stdin.read()))\nprint('y' * 200000)\n", stdin(&big), 10.0),
            script(5, "print('never reads stdin')\n", stdin(&big), 10.0),
        ];
        let o = run_scripts(kind, jobs);
        let run = |i: usize| {
            o[i].script
                .as_deref()
                .unwrap_or_else(|| panic!("{kind} {i}: {:?}", o[i]))
        };
        assert_eq!(
            (o[0].status, run(0).end),
            (Status::Pass, ScriptEnd::Finished),
            "{kind}"
        );
        assert_eq!(run(0).stdout, "20\n__main__\n");
        assert_eq!(run(0).return_code, Some(0));
        assert!(run(0).execution_time > 0.0 && run(0).execution_time < 10.0);

        assert_eq!(
            (o[1].status, run(1).end),
            (Status::Timeout, ScriptEnd::TimeLimitExceeded),
            "{kind}"
        );
        assert_eq!(run(1).return_code, None);
        assert_eq!(
            run(1).stdout,
            "started\n",
            "output before the limit is kept"
        );
        assert!(
            run(1).execution_time >= 1.0 && run(1).execution_time < 5.0,
            "{:?}",
            run(1)
        );

        assert_eq!(
            (o[2].status, run(2).return_code),
            (Status::Fail, Some(3)),
            "{kind}"
        );
        assert_eq!(run(2).stderr, "to stderr\n");
        assert_eq!((o[3].status, run(3).return_code), (Status::Fail, Some(1)));
        assert!(run(3).stderr.contains("ValueError: boom"), "{:?}", run(3));

        assert_eq!(o[4].status, Status::Pass, "{kind}: {:?}", o[4]);
        let cap = bcb_execute::Limits::default().output_cap_bytes;
        assert!(
            run(4).stdout.starts_with("300000\nyyy"),
            "{:?}",
            &run(4).stdout[..20]
        );
        assert_eq!(run(4).stdout.len(), cap, "stdout is cut at the output cap");
        assert_eq!(
            (o[5].status, run(5).stdout.as_str()),
            (Status::Pass, "never reads stdin\n")
        );
    }
}

#[test]
fn files_go_in_and_come_back_and_the_memory_cap_only_lowers() {
    if python().is_none() {
        return;
    }
    let files = ScriptInput {
        files: vec![
            ("data/in.txt".into(), b"hello".to_vec()),
            ("helper.py".into(), b"X = 41\n".to_vec()),
        ],
        fetch_files: vec!["out.bin".into(), "missing.txt".into(), "../escape".into()],
        ..ScriptInput::default()
    };
    let hog = "b = bytearray(400 * 1024 * 1024)\nprint('allocated')\n";
    let capped = |mb| ScriptInput {
        memory_mb: Some(mb),
        ..ScriptInput::default()
    };
    let jobs = vec![
        script(
            0,
            "import helper\nprint(open('data/in.txt').read(), helper.X + 1)\nopen('out.bin', 'wb').write(bytes([0, 1, 255]))\n",
            files,
            10.0,
        ),
        script(1, hog, capped(200), 10.0),
        script(2, hog, ScriptInput::default(), 10.0),
        // Above the executor's own cap (1024 MB in these tests): that cap still holds.
        script(3, "b = bytearray(1500 * 1024 * 1024)\nprint('allocated')\n", capped(1 << 20), 10.0),
    ];
    let o = run_scripts(LocalKind::Pool, jobs);
    let run = |i: usize| {
        o[i].script
            .as_deref()
            .unwrap_or_else(|| panic!("{i}: {:?}", o[i]))
    };
    assert_eq!(run(0).stdout, "hello 42\n", "{:?}", run(0));
    assert_eq!(
        run(0).files.len(),
        1,
        "only the file that exists: {:?}",
        run(0).files
    );
    assert_eq!(run(0).files["out.bin"], "AAH/");
    assert_eq!(o[1].status, Status::Fail);
    assert!(run(1).stderr.contains("MemoryError"), "{:?}", run(1));
    assert_eq!(
        (o[2].status, run(2).stdout.as_str()),
        (Status::Pass, "allocated\n")
    );
    assert_eq!(o[3].status, Status::Fail, "{:?}", o[3]);
    assert!(!run(3).stdout.contains("allocated"), "{:?}", run(3));
}

#[test]
fn a_hostile_script_gets_nothing() {
    if python().is_none() {
        return;
    }
    // A listener of this test's, a secret file beside it and a secret in the environment.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "s3cr3t").unwrap();
    let victim = dir.path().join("written-by-script");
    let code = format!(
        r#"
import os, socket
hits = []
for host, port in (("127.0.0.1", {port}), ("1.1.1.1", 53)):
    try:
        socket.create_connection((host, port), timeout=2).close()
        hits.append("connected to %s:%d" % (host, port))
    except OSError:
        pass
for path in ({secret:?}, "/etc/shadow", {history:?}, "/proc/1/environ"):
    try:
        data = open(path).read()
        if "s3cr3t" in data or path in ("/etc/shadow", {history:?}):
            hits.append("read " + path)
    except OSError:
        pass
for path in ({victim:?}, "/etc/bcb-script-probe", "/usr/bcb-script-probe", "../../bcb-script-probe"):
    try:
        open(path, "w").write("x")
        if not path.startswith(".."):
            hits.append("wrote " + path)
    except OSError:
        pass
if any("s3cr3t" in v for v in os.environ.values()):
    hits.append("secret in the environment")
print("contained" if not hits else hits)
"#,
        secret = secret.to_str().unwrap(),
        victim = victim.to_str().unwrap(),
        // The host user's own shell history: a home the sandbox must not show.
        history = format!(
            "{}/.bash_history",
            std::env::var("HOME").unwrap_or_default()
        ),
    );
    // A secret in this process's environment too (samples get a clean one).
    std::env::set_var("RUNCODE_TEST_SECRET", "s3cr3t");
    for kind in [LocalKind::Pool, LocalKind::Process] {
        let o = run_scripts(kind, vec![script(0, &code, stdin(""), 20.0)]);
        let run = o[0]
            .script
            .as_deref()
            .unwrap_or_else(|| panic!("{:?}", o[0]));
        assert_eq!(run.stdout, "contained\n", "{kind}: {run:?}");
        assert!(
            !victim.exists(),
            "{kind}: the script wrote outside its directory"
        );
    }
    drop(listener);
}
