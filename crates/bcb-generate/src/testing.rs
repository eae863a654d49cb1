//! Loopback servers for tests (feature `testing`): a proxy that injects faults and counts
//! requests in front of a real server, or a stub that records request bodies and answers
//! with canned responses; plus the real llama.cpp test server from the environment.

// Test support: telling the person running the tests that a dependency is missing is its job.
#![allow(clippy::print_stderr)]

use bcb_envvars::EnvVars;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;

use crate::local::LocalServer;
use crate::options::LocalServerOptions;

/// What the proxy does to one incoming request instead of forwarding it.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Answer with this status (and `Retry-After` seconds if given).
    Status {
        status: u16,
        retry_after: Option<u64>,
    },
    /// Send headers, then cut the connection mid-body.
    DropConnection,
    /// Wait this long, then forward (longer than the client's timeout = a stall).
    Stall(Duration),
}

/// Header names and values of one request.
pub type HeaderList = Vec<(String, String)>;

/// Computes a canned answer: (status, content type, body).
pub type Canned = Arc<dyn Fn(&str, &Value) -> (u16, &'static str, String) + Send + Sync>;

#[derive(Default)]
pub struct State {
    /// Requests received (including faulted ones).
    pub received: AtomicU64,
    /// Requests forwarded to the upstream server or answered by the canned function.
    pub served: AtomicU64,
    /// (path, JSON body) of every request received, in arrival order.
    pub bodies: Mutex<Vec<(String, Value)>>,
    /// (path, headers) of every request, for header checks.
    pub headers: Mutex<Vec<(String, HeaderList)>>,
    faults: Mutex<VecDeque<Fault>>,
    upstream: Option<String>,
    canned: Option<Canned>,
    client: Option<reqwest::Client>,
}

/// A loopback HTTP server on its own thread and runtime; stops when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    pub state: Arc<State>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    /// A proxy forwarding every request to `upstream` (e.g. `http://127.0.0.1:8080`).
    pub fn proxy(upstream: &str) -> Self {
        Self::start(State {
            upstream: Some(upstream.trim_end_matches('/').to_string()),
            client: Some(reqwest::Client::builder().build().expect("client")),
            ..Default::default()
        })
    }

    /// A stub answering every request with `canned(path, body)`.
    pub fn stub(canned: Canned) -> Self {
        Self::start(State {
            canned: Some(canned),
            ..Default::default()
        })
    }

    fn start(state: State) -> Self {
        let state = Arc::new(state);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let st = state.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let app = axum::Router::new().fallback(handle).with_state(st);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
            });
            rt.shutdown_timeout(Duration::from_millis(100));
        });
        TestServer {
            addr,
            state,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL of an OpenAI-compatible server here (`…/v1`).
    pub fn v1_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// Faults applied to the next requests, in order.
    pub fn push_faults(&self, faults: impl IntoIterator<Item = Fault>) {
        self.state.faults.lock().unwrap().extend(faults);
    }

    pub fn received(&self) -> u64 {
        self.state.received.load(Ordering::SeqCst)
    }

    pub fn served(&self) -> u64 {
        self.state.served.load(Ordering::SeqCst)
    }

    pub fn bodies(&self) -> Vec<(String, Value)> {
        self.state.bodies.lock().unwrap().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn handle(
    axum::extract::State(st): axum::extract::State<Arc<State>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    st.received.fetch_add(1, Ordering::SeqCst);
    let path = uri.path().to_string();
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    st.bodies.lock().unwrap().push((path.clone(), json.clone()));
    st.headers.lock().unwrap().push((
        path.clone(),
        headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
    ));
    let fault = st.faults.lock().unwrap().pop_front();
    match fault {
        Some(Fault::Status {
            status,
            retry_after,
        }) => {
            let mut b = Response::builder()
                .status(status)
                .header("content-type", "application/json");
            if let Some(s) = retry_after {
                b = b.header("retry-after", s.to_string());
            }
            return b
                .body(Body::from(format!(
                    "{{\"error\":{{\"message\":\"injected {status}\",\"type\":\"test\"}}}}"
                )))
                .unwrap();
        }
        Some(Fault::DropConnection) => {
            // Headers go out, then the body stream fails: the client sees a cut connection.
            let stream = futures::stream::once(async {
                Err::<Bytes, std::io::Error>(std::io::Error::other("injected drop"))
            });
            return Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(Body::from_stream(stream))
                .unwrap();
        }
        Some(Fault::Stall(d)) => tokio::time::sleep(d).await,
        None => {}
    }
    st.served.fetch_add(1, Ordering::SeqCst);
    if let Some(canned) = &st.canned {
        let (status, ct, text) = canned(&path, &json);
        return Response::builder()
            .status(status)
            .header("content-type", ct)
            .body(Body::from(text))
            .unwrap();
    }
    let upstream = st.upstream.as_deref().expect("proxy or stub");
    let client = st.client.as_ref().expect("client");
    let url = format!(
        "{upstream}{}",
        uri.path_and_query().map(|p| p.as_str()).unwrap_or("/")
    );
    let mut req = client.request(method, &url).body(body);
    if let Some(ct) = headers.get("content-type") {
        req = req.header("content-type", ct.clone());
    }
    match req.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            let ct = r
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/json")
                .to_string();
            let bytes = r.bytes().await.unwrap_or_default();
            Response::builder()
                .status(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY))
                .header("content-type", ct)
                .body(Body::from(bytes))
                .unwrap()
        }
        Err(e) => Response::builder()
            .status(502)
            .body(Body::from(format!("proxy: {e}")))
            .unwrap(),
    }
}

/// The real llama.cpp test server (`.ci/setup-llm.sh` installs it), or `None` when it is not
/// installed and `BCB_REQUIRE_LLM` is not `1` (then the caller skips, saying so).
pub fn llm_server(n_parallel: usize) -> Option<LocalServer> {
    let required = std::env::var(EnvVars::BCB_REQUIRE_LLM).is_ok_and(|v| v == "1");
    let python = llm_python_path();
    let model = llm_model_path();
    if !python.exists() || !model.exists() {
        assert!(
            !required,
            "BCB_REQUIRE_LLM=1 but the test LLM is missing ({} / {}): run .ci/setup-llm.sh",
            python.display(),
            model.display()
        );
        eprintln!(
            "SKIPPED: no test LLM (run .ci/setup-llm.sh, or set BCB_LLM_PYTHON and BCB_LLM_MODEL)"
        );
        return None;
    }
    let opts = LocalServerOptions {
        python,
        n_ctx: 2048,
        threads: 1,
        chat_template: None,
        gemma_template: true,
    };
    Some(
        LocalServer::start(&model, "gemma-test", n_parallel, &opts)
            .expect("start the test llama.cpp server"),
    )
}

/// The Python that has `xllamacpp`, as the tests find it.
pub fn llm_python_path() -> PathBuf {
    var_or_test_llm(EnvVars::BCB_LLM_PYTHON, "venv/bin/python")
}

/// Path of the test model, when installed.
pub fn llm_model_path() -> PathBuf {
    var_or_test_llm(EnvVars::BCB_LLM_MODEL, "model.gguf")
}

/// The path in `var`, else `file` in `~/.cache/bcb/test-llm` (where `.ci/setup-llm.sh` puts it).
fn var_or_test_llm(var: &str, file: &str) -> PathBuf {
    std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os(EnvVars::HOME)
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(".cache/bcb/test-llm")
            .join(file)
    })
}
