//! A llama.cpp server for a local GGUF model, started for the run on a free loopback port
//! (through the `xllamacpp` Python package) and stopped when dropped.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::options::LocalServerOptions;

/// The launcher script, run with `python -c`.
pub const LAUNCHER: &str = include_str!("../python/llama_server.py");

pub struct LocalServer {
    child: Child,
    // Held open: the launcher exits when it sees EOF, even if we die by SIGKILL.
    _stdin: Option<ChildStdin>,
    pub port: u16,
    log: PathBuf,
}

impl LocalServer {
    /// Starts the server and waits until it answers `/health`.
    pub fn start(
        model: &Path,
        alias: &str,
        n_parallel: usize,
        opts: &LocalServerOptions,
    ) -> anyhow::Result<Self> {
        if !model.is_file() {
            anyhow::bail!("model file {} does not exist", model.display());
        }
        let port = free_port()?;
        let log = std::env::temp_dir().join(format!(
            "bcb-llama-server-{}-{port}.log",
            std::process::id()
        ));
        let log_file = std::fs::File::create(&log)
            .with_context(|| format!("cannot create server log {}", log.display()))?;
        let mut cmd = Command::new(&opts.python);
        cmd.arg("-c")
            .arg(LAUNCHER)
            .arg("--model")
            .arg(model)
            .args(["--alias", alias, "--host", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .args(["--n-ctx", &opts.n_ctx.to_string()])
            .args(["--n-parallel", &n_parallel.max(1).to_string()])
            .args(["--threads", &opts.threads.to_string()])
            // With few cores, busy-waiting OpenMP threads only slow llama.cpp down.
            .env("OMP_WAIT_POLICY", "PASSIVE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file));
        if let Some(t) = &opts.chat_template {
            cmd.arg("--chat-template-file").arg(t);
        } else if opts.gemma_template {
            cmd.arg("--gemma-template");
        }
        let mut child = cmd.spawn().with_context(|| {
            format!(
                "cannot start {} for the local llama.cpp server (set BCB_LLM_PYTHON or --llm-python to a Python with xllamacpp; .ci/setup-llm.sh installs one)",
                opts.python.display()
            )
        })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with("READY") {
                    let _ = tx.send(());
                }
            }
        });
        let mut server = LocalServer {
            child,
            _stdin: stdin,
            port,
            log,
        };
        wait_ready(
            &mut server.child,
            &server.log,
            "the llama.cpp server",
            Duration::from_secs(180),
            "did not become ready in 180 s",
            Duration::from_millis(100),
            || rx.try_recv().is_ok() && healthy(port),
        )?;
        Ok(server)
    }

    pub fn base_url(&self) -> String {
        loopback_url(self.port)
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        // EOF on stdin is the launcher's cue to shut the server down cleanly.
        self._stdin.take();
        if !exits_within(&mut self.child, Duration::from_secs(5)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The address of a server on the loopback `port`.
pub(crate) fn loopback_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// A port the OS says is free on loopback right now.
pub fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).context("cannot bind a loopback port")?;
    Ok(l.local_addr()?.port())
}

/// `GET /health` on the loopback `port` answers 200.
pub(crate) fn healthy(port: u16) -> bool {
    use std::io::Write;
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.starts_with("HTTP/1.1 200") || buf.starts_with("HTTP/1.0 200")
}

/// The last 15 lines of a server's log.
pub(crate) fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// Waits up to `limit` for `child` to exit; whether it did.
pub(crate) fn exits_within(child: &mut Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Polls every `poll` until `ready`; fails with the log's tail when `child` (`name`) exits
/// first, or with `late` once `limit` has passed.
pub(crate) fn wait_ready(
    child: &mut Child,
    log: &Path,
    name: &str,
    limit: Duration,
    late: &str,
    poll: Duration,
    mut ready: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        if ready() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            anyhow::bail!(
                "{name} exited ({status}) before it was ready; its log ({}) ends with:\n{}",
                log.display(),
                log_tail(log)
            );
        }
        if Instant::now() > deadline {
            anyhow::bail!("{name} {late}; log: {}", log.display());
        }
        std::thread::sleep(poll);
    }
}
