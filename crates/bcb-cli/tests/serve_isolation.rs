//! `bcb serve --min-isolation`, with the real binary: on a non-loopback address a sandbox
//! weaker than the minimum (protections forced off with `BCB_SANDBOX`, as the degraded-path
//! tests do) refuses to start with a `hint:`; a minimum the sandbox meets starts and answers;
//! loopback keeps starting with anything; an explicit lower minimum is accepted.

mod evalkit;

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One quick hard task: the ground-truth check at start stays short.
const IDS: &str = "BigCodeBench/592";

/// `bcb` with the kernel protections `BCB_SANDBOX` forces off (`none`, `basic`) or the host's.
fn bcb(env: &evalkit::Env, sandbox: Option<&str>) -> Command {
    let mut cmd = env.bcb();
    match sandbox {
        Some(level) => cmd.env("BCB_SANDBOX", level),
        None => cmd.env_remove("BCB_SANDBOX"),
    };
    cmd
}

fn serve(env: &evalkit::Env, sandbox: Option<&str>, listen: &str, extra: &[&str]) -> Command {
    let mut cmd = bcb(env, sandbox);
    cmd.env("BCB_SERVE_TOKEN", "t")
        .env_remove("BCB_MIN_ISOLATION")
        .args([
            "serve", "--listen", listen, "--subset", "hard", "--ids", IDS,
        ])
        .args(["--parallel", "1", "--max-in-flight", "1"])
        .args(extra);
    cmd
}

/// The protections `bcb env check --json` reports in force here, by their kebab-case names.
fn in_force(env: &evalkit::Env, sandbox: Option<&str>) -> std::thread::JoinHandle<Vec<String>> {
    let mut cmd = bcb(env, sandbox);
    cmd.args(["env", "check", "--json", "--subset", "hard"]);
    // It imports every library of the dataset (half a minute): the two checks run side by side.
    std::thread::spawn(move || protections_in_force(cmd.output().unwrap()))
}

fn protections_in_force(out: std::process::Output) -> Vec<String> {
    let j: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", evalkit::stderr(&out)));
    j["protections"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["active"] == true)
        .map(|p| {
            let name = p["name"].as_str().unwrap();
            let kind = bcb_execute::ProtectionKind::ALL
                .into_iter()
                .find(|k| k.name() == name)
                .unwrap_or_else(|| panic!("unknown protection {name}"));
            kind.slug()
        })
        .collect()
}

#[test]
fn a_sandbox_weaker_than_the_minimum_refuses_a_non_loopback_serve_with_a_hint() {
    let Some(env) = evalkit::env() else { return };
    // No kernel protection: `basic` (the non-loopback default) lacks Landlock and seccomp.
    let out = serve(&env, Some("none"), "0.0.0.0:0", &[])
        .output()
        .unwrap();
    let err = evalkit::stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("--min-isolation basic")
            && err.contains("  landlock: ")
            && err.contains("  seccomp-network: ")
            && err.contains("\nhint: "),
        "{err}"
    );
    assert!(
        !err.contains("listening on"),
        "refused before listening: {err}"
    );
    // The fallback (no namespaces) against a minimum that names them, by level and by kind.
    for min in ["namespaces", "pid-namespace,network-namespace"] {
        let out = serve(&env, Some("basic"), "0.0.0.0:0", &["--min-isolation", min])
            .output()
            .unwrap();
        let err = evalkit::stderr(&out);
        assert!(
            !out.status.success()
                && err.contains("  pid-namespace: fallback")
                && err.contains("hint: "),
            "{min}: {err}"
        );
    }
    // The variable sets the minimum too; lowering it explicitly is accepted.
    let out = serve(&env, Some("basic"), "0.0.0.0:0", &["--check"])
        .env("BCB_MIN_ISOLATION", "namespaces")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", evalkit::stderr(&out));
    for lower in [
        ["--min-isolation", "none"],
        ["--min-isolation", "no-new-privs"],
    ] {
        let out = serve(&env, Some("none"), "0.0.0.0:0", &lower)
            .arg("--check")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", evalkit::stderr(&out));
        assert!(
            text.contains(&format!("isolation at least {}", lower[1])),
            "{text}"
        );
    }
}

#[test]
fn loopback_starts_with_any_sandbox() {
    let Some(env) = evalkit::env() else { return };
    for sandbox in ["none", "basic"] {
        let out = serve(&env, Some(sandbox), "127.0.0.1:0", &["--check"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{sandbox}: {}", evalkit::stderr(&out));
        assert!(text.contains("isolation at least none"), "{text}");
    }
}

/// Every protection `bcb env check` reports in force, required: the server starts on every
/// address and answers; the same minimum with the kernel's protections forced off is refused
/// (exactly when one of them was in force).
#[test]
fn a_minimum_the_sandbox_meets_starts_and_serves() {
    let Some(env) = evalkit::env() else { return };
    let (active, weaker) = (in_force(&env, None), in_force(&env, Some("none")));
    let (active, weaker) = (active.join().unwrap(), weaker.join().unwrap());
    assert!(active.contains(&"no-new-privs".to_string()), "{active:?}");
    let min = active.join(",");
    let mut child = serve(&env, None, "0.0.0.0:0", &["--min-isolation", &min])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[serve] {line}");
            let _ = tx.send(line);
        }
    });
    let until = Instant::now() + Duration::from_secs(60);
    let port = loop {
        let line = rx
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .expect("bcb serve says where it listens");
        if let Some(addr) = line
            .split("listening on http://")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
        {
            break addr.parse::<SocketAddr>().unwrap().port();
        }
    };
    // Listening on every address: /healthz answers at once (no token needed).
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
    std::io::Write::write_all(
        &mut stream,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut reply = String::new();
    std::io::Read::read_to_string(&mut stream, &mut reply).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");

    // The same minimum with the kernel protections forced off is refused.
    let out = serve(
        &env,
        Some("none"),
        "0.0.0.0:0",
        &["--min-isolation", &min, "--check"],
    )
    .output()
    .unwrap();
    let lost = active.iter().any(|k| !weaker.contains(k));
    assert_eq!(!out.status.success(), lost, "{}", evalkit::stderr(&out));
}
