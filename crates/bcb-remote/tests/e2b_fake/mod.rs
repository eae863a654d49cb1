//! A PROTOCOL FAKE of E2B on loopback (E2B itself cannot run here), shared by the bcb-remote
//! and bcb-cli tests. It serves only the routes bcb uses, shaped as E2B's published specs
//! define them (github.com/e2b-dev/E2B `spec/openapi.yml`, `spec/envd/envd.yaml`,
//! `spec/envd/process/process.proto`); it runs no code: its "process" writes canned result
//! files, and a failure can be injected at any step.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bcb_remote::e2b::connect_frame;

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
    pub files: HashMap<String, Vec<u8>>,
}

pub struct Fake {
    pub url: String,
    pub state: Arc<Mutex<State>>,
}

pub fn start(fail: Fail) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let state = Arc::new(Mutex::new(State::default()));
    let st = state.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let st = st.clone();
            std::thread::spawn(move || serve(conn, &st, fail));
        }
    });
    Fake { url, state }
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

fn serve(conn: TcpStream, st: &Mutex<State>, fail: Fail) {
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
                    st.lock().unwrap().files.insert(path.clone(), body);
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
            let file = st.lock().unwrap().files.get(&path).cloned();
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
            assert!(cmd.starts_with("bcb evaluate --execution local"), "{cmd}");
            let samples = cmd
                .split("--samples '")
                .nth(1)
                .unwrap()
                .trim_end_matches('\'')
                .to_string();
            let stem = samples.trim_end_matches(".jsonl").to_string();
            let mut s = &conn;
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/connect+json\r\nConnection: close\r\n\r\n");
            let send = |mut s: &TcpStream, flags: u8, v: serde_json::Value| {
                s.write_all(&connect_frame(flags, v.to_string().as_bytes()))
            };
            let b64 = base64::engine::general_purpose::STANDARD;
            let _ = send(s, 0, serde_json::json!({"event": {"start": {"pid": 42}}}));
            let _ = send(
                s,
                0,
                serde_json::json!({"event": {"data": {"stdout": b64.encode("evaluate: 1 run\n")}}}),
            );
            if fail == Fail::Hang {
                while send(s, 0, serde_json::json!({"event": {"keepalive": {}}})).is_ok() {
                    std::thread::sleep(Duration::from_millis(100));
                }
                return;
            }
            let code = if fail == Fail::Run { 1 } else { 0 };
            if code == 0 {
                let mut st = st.lock().unwrap();
                st.files.insert(format!("{stem}_eval_results.json"), br#"{"date": "2026-12-01 09:00", "eval": {"BigCodeBench/1": [{"task_id": "BigCodeBench/1", "solution": "x", "status": "pass", "details": {}}]}}"#.to_vec());
                st.files.insert(format!("{stem}_pass_at_k.json"), br#"{"pass@1": 1.0, "model": "m", "split": "complete", "subset": "full", "calibrated": true, "gt_pass_rate": 1.0, "failed_tasks": []}"#.to_vec());
            }
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

impl Fake {
    /// The routes called so far, in order (`METHOD /path`).
    pub fn calls(&self) -> Vec<String> {
        self.state.lock().unwrap().calls.clone()
    }
}
