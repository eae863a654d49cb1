//! A PROTOCOL FAKE of E2B on loopback (E2B itself cannot run here). It serves only the routes
//! bcb uses, shaped as E2B's published specs define them (github.com/e2b-dev/E2B
//! `spec/openapi.yml`, `spec/envd/envd.yaml`, `spec/envd/process/process.proto`). Its sandbox
//! is a temporary directory standing for `/home/user`: uploaded files land there, and the
//! command it is sent runs there with the REAL bcb (the test's binary) first on `PATH`, so a
//! flag the client drops or misspells fails here as it would in E2B. A failure can be injected
//! at any step.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bcb_execute::e2b::connect_frame;

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Fail {
    None,
    Create,
    Upload,
    Run,
    Download,
    /// The process never ends (keepalives only): the client is interrupted.
    Hang,
}

#[derive(Default)]
pub struct State {
    pub calls: Vec<String>,
    /// The commands the sandbox ran, as sent.
    pub commands: Vec<String>,
    /// Environment the sandbox's commands get (what the template's image sets).
    pub env: Vec<(String, String)>,
    /// Keepalives sent on a process stream that hangs ([`Fail::Hang`]).
    pub keepalives: usize,
}

pub struct Fake {
    pub url: String,
    pub state: Arc<Mutex<State>>,
    /// The sandbox's `/home/user`.
    pub home: tempfile::TempDir,
}

/// The fake's sandbox: where `/home/user` is, and the bcb its commands run.
struct Sandbox {
    home: PathBuf,
    bin: PathBuf,
}

pub fn start(fail: Fail) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let state = Arc::new(Mutex::new(State::default()));
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join(".bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_bcb"), bin.join("bcb")).unwrap();
    let sb = Arc::new(Sandbox {
        home: home.path().to_path_buf(),
        bin,
    });
    let st = state.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let (st, sb) = (st.clone(), sb.clone());
            std::thread::spawn(move || serve(conn, &st, &sb, fail));
        }
    });
    Fake { url, state, home }
}

/// A sandbox path (`/home/user/x`) on this machine.
fn local(sb: &Sandbox, path: &str) -> PathBuf {
    sb.home.join(path.trim_start_matches("/home/user/"))
}

fn respond(mut s: &TcpStream, status: &str, body: &[u8]) {
    let head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n", body.len());
    let _ = s.write_all(head.as_bytes());
    let _ = s.write_all(body);
}

fn query(target: &str, key: &str) -> Option<String> {
    let q = target.split_once('?')?.1;
    q.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| v.replace("%2F", "/").replace("%2f", "/"))
    })
}

fn serve(conn: TcpStream, st: &Mutex<State>, sb: &Sandbox, fail: Fail) {
    let mut r = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let mut parts = line.split_whitespace();
    let (method, target) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        if h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim().split_once(':') {
            headers.insert(k.to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    let route = target.split('?').next().unwrap().to_string();
    st.lock().unwrap().calls.push(format!("{method} {route}"));
    let envd_ok = headers.get("x-access-token").map(String::as_str) == Some("envd-token");
    match (method.as_str(), route.as_str()) {
        // openapi.yml `POST /sandboxes` (NewSandbox → 201 Sandbox), auth `X-API-Key`.
        ("POST", "/sandboxes") => {
            assert_eq!(
                headers.get("x-api-key").map(String::as_str),
                Some("test-key")
            );
            let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(req["templateID"], "bigcodebench_evaluator");
            match fail {
                Fail::Create => respond(&conn, "500 Internal Server Error", br#"{"code":500,"message":"no capacity"}"#),
                _ => respond(&conn, "201 Created", br#"{"sandboxID":"sbx1","templateID":"bigcodebench_evaluator","clientID":"c","envdVersion":"0.2.0","envdAccessToken":"envd-token","domain":"local"}"#),
            }
        }
        // openapi.yml `POST /sandboxes/{sandboxID}/timeout` → 204; `DELETE /sandboxes/{sandboxID}` → 204.
        ("POST", "/sandboxes/sbx1/timeout") | ("DELETE", "/sandboxes/sbx1") => {
            respond(&conn, "204 No Content", b"")
        }
        // envd.yaml `POST /files?path&username` (multipart `file`) → 200 [EntryInfo]; 507 when full.
        ("POST", "/files") => {
            assert!(envd_ok, "envd calls carry X-Access-Token");
            let path = query(&target, "path").unwrap();
            match fail {
                Fail::Upload => respond(
                    &conn,
                    "507 Insufficient Storage",
                    br#"{"code":507,"message":"not enough disk space"}"#,
                ),
                _ => {
                    std::fs::write(local(sb, &path), multipart_file(&body)).unwrap();
                    respond(
                        &conn,
                        "200 OK",
                        format!(r#"[{{"name":"s","type":"file","path":"{path}"}}]"#).as_bytes(),
                    );
                }
            }
        }
        // envd.yaml `GET /files?path&username` → the bytes, 404 when missing.
        ("GET", "/files") => {
            let path = query(&target, "path").unwrap();
            let file = std::fs::read(local(sb, &path)).ok();
            match (fail, file) {
                (Fail::Download, _) | (_, None) => respond(
                    &conn,
                    "404 Not Found",
                    br#"{"code":404,"message":"file not found"}"#,
                ),
                (_, Some(bytes)) => respond(&conn, "200 OK", &bytes),
            }
        }
        // process.proto `Process.Start` (server stream) over Connect: enveloped JSON messages
        // StartResponse{event: ProcessEvent{start|data|end|keepalive}}, then the end-of-stream
        // envelope (flag 0x02).
        ("POST", "/process.Process/Start") => {
            assert!(envd_ok);
            assert_eq!(
                headers.get("content-type").map(String::as_str),
                Some("application/connect+json")
            );
            let msg: serde_json::Value = serde_json::from_slice(&body[5..]).unwrap();
            let cmd = msg["process"]["args"][2].as_str().unwrap().to_string();
            st.lock().unwrap().commands.push(cmd.clone());
            let mut s = &conn;
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/connect+json\r\nConnection: close\r\n\r\n");
            let send = |mut s: &TcpStream, flags: u8, v: serde_json::Value| {
                s.write_all(&connect_frame(flags, v.to_string().as_bytes()))
            };
            let b64 = base64::engine::general_purpose::STANDARD;
            let _ = send(s, 0, serde_json::json!({"event": {"start": {"pid": 42}}}));
            if fail == Fail::Hang {
                while send(s, 0, serde_json::json!({"event": {"keepalive": {}}})).is_ok() {
                    st.lock().unwrap().keepalives += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                return;
            }
            let code = if fail == Fail::Run {
                let _ = send(
                    s,
                    0,
                    serde_json::json!({"event": {"data": {"stderr": b64.encode("error: injected failure\n")}}}),
                );
                1
            } else {
                // The real command, in the sandbox's home, with the real bcb.
                let cmd = cmd.replace("/home/user", sb.home.to_str().unwrap());
                let path = format!(
                    "{}:{}",
                    sb.bin.display(),
                    std::env::var("PATH").unwrap_or_default()
                );
                let env = st.lock().unwrap().env.clone();
                let out = std::process::Command::new("/bin/bash")
                    .args(["-c", &cmd])
                    .envs(env)
                    .current_dir(&sb.home)
                    .env("PATH", path)
                    .output()
                    .unwrap();
                for (key, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                    if !bytes.is_empty() {
                        let _ = send(
                            s,
                            0,
                            serde_json::json!({"event": {"data": {key: b64.encode(bytes)}}}),
                        );
                    }
                }
                out.status.code().unwrap_or(137)
            };
            let _ = send(
                s,
                0,
                serde_json::json!({"event": {"end": {"exitCode": code, "exited": true, "status": format!("exit status {code}")}}}),
            );
            let _ = send(s, 2, serde_json::json!({}));
            let _ = s.flush();
        }
        _ => respond(&conn, "404 Not Found", b"{}"),
    }
}

/// The file part of a multipart body (envd's `file` field).
fn multipart_file(body: &[u8]) -> Vec<u8> {
    let start = find(body, b"\r\n\r\n").unwrap() + 4;
    let boundary_end = find(body, b"\r\n").unwrap();
    let mut closing = b"\r\n".to_vec();
    closing.extend_from_slice(&body[..boundary_end]);
    let end = start + find(&body[start..], &closing).unwrap();
    body[start..end].to_vec()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl Fake {
    /// The routes called so far, in order (`METHOD /path`).
    pub fn calls(&self) -> Vec<String> {
        self.state.lock().unwrap().calls.clone()
    }

    /// Keepalives sent so far on a hanging process stream.
    pub fn keepalives(&self) -> usize {
        self.state.lock().unwrap().keepalives
    }

    /// The commands run in the sandbox so far.
    pub fn commands(&self) -> Vec<String> {
        self.state.lock().unwrap().commands.clone()
    }

    /// Sets a variable for the sandbox's commands (as the template's image would).
    pub fn set_env(&self, key: &str, value: &Path) {
        let v = value.to_string_lossy().to_string();
        self.state.lock().unwrap().env.push((key.into(), v));
    }

    /// The sandbox's `/home/user` on this machine.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// Points `cmd` (a `bcb evaluate --execution e2b`) at this fake, with a test key.
    pub fn client<'c>(&self, cmd: &'c mut std::process::Command) -> &'c mut std::process::Command {
        cmd.env("E2B_API_KEY", "test-key")
            .env("E2B_API_URL", &self.url)
            .env("E2B_ENVD_URL", &self.url)
    }
}
