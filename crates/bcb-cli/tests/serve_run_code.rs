//! `/run_code` of `bcb serve` with the real `sandbox-fusion` client from PyPI and verl's
//! request shape: stdin, time and memory limits, exit codes, files in and out, and a hostile
//! program contained.

mod evalkit;
mod servekit;

use std::process::Command;

use serde_json::{json, Value};
use servekit::{Server, NO_OVERLAP};

/// A program that tries the network, the host's files and the server's secrets, printing
/// `contained` when every probe failed, else what got through.
const HOSTILE: &str = r#"
import os, socket, sys
port, secret_file, victim = PORT, SECRET, VICTIM
hits = []
for host, p in (("127.0.0.1", port), ("1.1.1.1", 53)):
    try:
        socket.create_connection((host, p), timeout=2).close()
        hits.append("connected to %s:%d" % (host, p))
    except OSError:
        pass
try:
    open(secret_file).read()
    hits.append("read the host's file")
except OSError:
    pass
for pid in os.listdir("/proc"):
    try:
        if b"s3cr3t" in open("/proc/%s/environ" % pid, "rb").read():
            hits.append("a secret in /proc/%s/environ" % pid)
    except (OSError, ValueError):
        pass
if any("s3cr3t" in v for v in os.environ.values()):
    hits.append("a secret in the environment")
for path in (victim, "/etc/bcb-probe", "/usr/bcb-probe"):
    try:
        open(path, "w").write("x")
        hits.append("wrote " + path)
    except OSError:
        pass
print("contained" if not hits else hits)
"#;

#[test]
fn run_code_with_the_sandbox_fusion_client_and_verls_request_shape() {
    let Some(env) = evalkit::env() else { return };
    let Some(client) = bcb_testkit::serve_client_python() else {
        return;
    };
    // A secret the server process holds (the children of a test process inherit its env).
    std::env::set_var("RUNCODE_TEST_SECRET", "s3cr3t");
    let server = Server::start(&env, &NO_OVERLAP);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let secret_file = env.path("secret.txt");
    std::fs::write(&secret_file, "s3cr3t").unwrap();
    let victim = env.path("written-by-a-script");
    let hostile = HOSTILE
        .replace("PORT", &listener.local_addr().unwrap().port().to_string())
        .replace("SECRET", &format!("{:?}", secret_file.to_str().unwrap()))
        .replace("VICTIM", &format!("{:?}", victim.to_str().unwrap()));
    let script = r#"
import base64, json, sys
import requests
from sandbox_fusion import set_endpoint, run_code, RunCodeRequest
set_endpoint(sys.argv[1])
def run(**kw):
    r = run_code(RunCodeRequest(language="python", **kw))
    rr = r.run_result
    return {"status": r.status, "run": rr.status, "rc": rr.return_code, "out": rr.stdout,
            "err": rr.stderr, "time": rr.execution_time, "files": r.files}
out = {
    "echo": run(code="import sys\nprint(sum(map(int, sys.stdin.read().split())))\n", stdin="1 2 3\n"),
    "tle": run(code="import time\nprint('begun', flush=True)\ntime.sleep(30)\n", run_timeout=1),
    "exit": run(code="import sys\nsys.stderr.write('bad input')\nsys.exit(2)\n"),
    "raise": run(code="raise KeyError('k')\n"),
    "files": run(code="print(open('in/a.txt').read())\nopen('out.txt', 'w').write('made')\n",
                 files={"in/a.txt": base64.b64encode(b"given").decode()}, fetch_files=["out.txt", "nope.txt"]),
    "hostile": run(code=sys.argv[2], run_timeout=30),
}
verl = {"compile_timeout": 10, "run_timeout": 10, "code": "print(input()[::-1])", "stdin": "abc\n",
        "memory_limit_MB": 1024, "language": "python", "files": {}, "fetch_files": []}
r = requests.post(sys.argv[1] + "/run_code", json=verl, timeout=30)
out["verl"] = {"http": r.status_code, "body": r.json()}
# The client's RunCodeRequest has no memory_limit_MB (0.3.7); verl sends it.
hog = "b = bytearray(700 * 1024 * 1024)\nprint('allocated')\n"
r = requests.post(sys.argv[1] + "/run_code", json=dict(verl, code=hog, memory_limit_MB=256), timeout=30)
rr = r.json()["run_result"]
out["mem"] = {"status": r.json()["status"], "run": rr["status"], "rc": rr["return_code"], "err": rr["stderr"]}
r = requests.post(sys.argv[1] + "/run_code", json=dict(verl, code=hog, memory_limit_MB=-1), timeout=30)
out["mem_server_cap"] = r.json()["run_result"]["stdout"]
r = requests.post(sys.argv[1] + "/run_code", json=dict(verl, language="cpp"), timeout=30)
out["cpp"] = {"http": r.status_code, "body": r.json()}
print(json.dumps(out))
"#;
    let out = Command::new(client)
        .args(["-c", script, &server.url, &hostile])
        .output()
        .unwrap();
    evalkit::ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let brief = |k: &str| {
        let r = &v[k];
        (
            r["status"].as_str().unwrap().to_string(),
            r["run"].as_str().unwrap().to_string(),
            r["rc"].as_i64(),
        )
    };
    assert_eq!(
        brief("echo"),
        ("Success".into(), "Finished".into(), Some(0)),
        "{v}"
    );
    assert_eq!(v["echo"]["out"], "6\n");
    assert_eq!(
        brief("tle"),
        ("Failed".into(), "TimeLimitExceeded".into(), None),
        "{v}"
    );
    assert_eq!(v["tle"]["out"], "begun\n");
    let tle_secs = v["tle"]["time"].as_f64().unwrap();
    assert!((1.0..5.0).contains(&tle_secs), "{tle_secs}");
    assert_eq!(
        brief("exit"),
        ("Failed".into(), "Finished".into(), Some(2)),
        "{v}"
    );
    assert_eq!(v["exit"]["err"], "bad input");
    assert_eq!(brief("raise").2, Some(1));
    assert!(
        v["raise"]["err"]
            .as_str()
            .unwrap()
            .contains("KeyError: 'k'"),
        "{v}"
    );
    assert_eq!(brief("mem").0, "Failed", "{v}");
    assert!(
        v["mem"]["err"].as_str().unwrap().contains("MemoryError"),
        "{v}"
    );
    assert_eq!(v["files"]["out"], "given\n");
    assert_eq!(v["files"]["files"], json!({"out.txt": "bWFkZQ=="}));
    assert_eq!(v["hostile"]["out"], "contained\n", "{v}");
    assert!(!victim.exists());

    let verl = &v["verl"];
    assert_eq!(verl["http"], 200);
    let body = verl["body"].as_object().unwrap();
    let mut keys: Vec<&str> = body.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "compile_result",
            "executor_pod_name",
            "files",
            "message",
            "run_result",
            "status"
        ]
    );
    assert_eq!(body["status"], "Success");
    assert_eq!(body["run_result"]["stdout"], "cba\n");
    let mut run_keys: Vec<&str> = body["run_result"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    run_keys.sort();
    assert_eq!(
        run_keys,
        [
            "execution_time",
            "return_code",
            "status",
            "stderr",
            "stdout"
        ]
    );
    assert_eq!(v["cpp"]["http"], 400);
    assert!(
        v["cpp"]["body"]["error"]
            .as_str()
            .unwrap()
            .contains("field `language`"),
        "{v}"
    );
    drop(listener);
}
