//! `bcb serve`: BigCodeBench verdicts over HTTP from one long-lived warm session.
//!
//! The server loads its dataset once, answers `/healthz` at once and `/readyz` only when the
//! engine behind it ([`Verdicts`], the warm session after its ground-truth check) is set, and
//! hands every sample of every request to that one engine: dedup, the verdict cache and fair
//! sharing of the workers happen there. Endpoints: the native API (`/v1/evaluate`,
//! `/v1/tasks`), SandboxFusion's dataset endpoints as far as BigCodeBench needs them (`fusion`)
//! and its `/run_code` for `python` (`runcode`: a script job on the same engine), OpenRLHF's
//! remote reward model (`openrlhf`), `/metrics`, `/openapi.json`.
//!
//! Load and faults: samples admitted but not answered are bounded (`queue_limit`; past it a
//! request is answered in the status its clients retry, after waiting for room as long as
//! they wait: `shed`); each request has a deadline; a client that goes away cancels its
//! jobs not started (the submission is dropped); SIGTERM (see [`shutdown_signal`]) stops
//! admitting (503), lets admitted samples finish, then closes; an executor fault is a 503 with
//! a `hint`, never a verdict. Loopback only unless a bearer token is set; no CORS headers.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

mod api;
pub mod backend;
pub mod catalog;
mod error;
mod fusion;
mod metrics;
mod openrlhf;
mod request;
mod run;
mod runcode;
mod shed;
mod upstream;
pub mod warm;

pub use backend::{
    Deliver, DeliverScript, EngineContext, SampleBody, ScriptJob, ScriptRequest, Stats, Submission,
    SubmitError, SubmitOptions, SubmitSample, Verdicts,
};
pub use catalog::Catalog;
pub use error::ApiError;
pub use run::SampleResult;

/// How the server runs (the engine's own settings are the session's).
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    /// Bearer token every request but `/healthz` and `/readyz` must carry.
    pub token: Option<String>,
    /// Request bodies larger than this are refused with 413.
    pub max_body_bytes: usize,
    /// Samples admitted and not yet answered, over all requests; past it, 429.
    pub queue_limit: usize,
    /// Default and largest per-request deadline.
    pub request_timeout: Duration,
    /// Verdicts per request calibrated unless the request says otherwise.
    pub calibrated: bool,
    /// How long SIGTERM waits for admitted samples before closing anyway.
    pub drain_timeout: Duration,
}

impl ServeConfig {
    pub fn new(listen: SocketAddr) -> ServeConfig {
        ServeConfig {
            listen,
            token: None,
            max_body_bytes: 16 * 1024 * 1024,
            queue_limit: 4096,
            request_timeout: Duration::from_secs(900),
            calibrated: true,
            drain_timeout: Duration::from_secs(600),
        }
    }

    /// Refuses a listen address other than loopback without a token.
    pub fn check(&self) -> anyhow::Result<()> {
        let token_set = self.token.as_deref().is_some_and(|t| !t.is_empty());
        if !self.listen.ip().is_loopback() && !token_set {
            anyhow::bail!(
                "--listen {}: a non-loopback address needs a bearer token\nhint: pass --token (or set BCB_SERVE_TOKEN), or listen on 127.0.0.1",
                self.listen
            );
        }
        Ok(())
    }
}

/// Shared by every handler.
pub struct AppState {
    pub cfg: ServeConfig,
    pub catalog: Arc<Catalog>,
    backend: OnceLock<Arc<dyn Verdicts>>,
    /// Why the engine failed to start (then `/readyz` says so forever).
    start_error: Mutex<Option<String>>,
    draining: AtomicBool,
    /// Samples admitted and not yet answered (the bounded queue).
    outstanding: AtomicUsize,
    /// Woken whenever admitted samples leave the queue (requests held for room wait on it).
    room: tokio::sync::Notify,
    metrics: metrics::Metrics,
}

impl AppState {
    pub fn new(cfg: ServeConfig, catalog: Arc<Catalog>) -> Arc<AppState> {
        Arc::new(AppState {
            cfg,
            catalog,
            backend: OnceLock::new(),
            start_error: Mutex::new(None),
            draining: AtomicBool::new(false),
            outstanding: AtomicUsize::new(0),
            room: tokio::sync::Notify::new(),
            metrics: metrics::Metrics::default(),
        })
    }

    /// The engine is warm: requests are served from now on.
    pub fn set_ready(&self, backend: Arc<dyn Verdicts>) {
        let _ = self.backend.set(backend);
    }

    /// The engine could not start; the server stays up to say so on `/readyz`.
    pub fn set_failed(&self, error: String) {
        *self.start_error.lock().unwrap() = Some(error);
    }

    pub fn is_ready(&self) -> bool {
        self.backend.get().is_some() && !self.draining.load(Ordering::SeqCst)
    }

    pub fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::SeqCst)
    }

    /// Stops admitting requests (503) from now on.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn backend(&self) -> Option<&Arc<dyn Verdicts>> {
        self.backend.get()
    }

    fn engine(&self) -> Result<&Arc<dyn Verdicts>, ApiError> {
        if self.draining.load(Ordering::SeqCst) {
            return Err(ApiError::unavailable("the server is shutting down", 1)
                .hint("send the request to another replica, or retry when this one is back"));
        }
        if let Some(e) = self.start_error.lock().unwrap().as_ref() {
            return Err(ApiError::unavailable(
                format!("the evaluation session failed to start: {e}"),
                60,
            )
            .hint(
                "see the server's log; fix the cause (eval env, dataset) and restart bcb serve",
            ));
        }
        self.backend.get().ok_or_else(|| {
            ApiError::unavailable("starting: the ground truth is being checked", 5)
                .hint("wait until GET /readyz answers 200")
        })
    }
}

/// The whole service.
pub fn router(state: Arc<AppState>) -> Router {
    let open = Router::new()
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz));
    let guarded = Router::new()
        .route("/v1/evaluate", post(api::evaluate))
        .route("/v1/tasks", get(api::tasks))
        .route("/metrics", get(api::metrics))
        .route("/openapi.json", get(api::openapi))
        .route("/submit", post(fusion::submit))
        .route("/get_prompts", post(fusion::get_prompts))
        .route("/list_ids", post(fusion::list_ids))
        .route(
            "/list_datasets",
            get(fusion::list_datasets).post(fusion::list_datasets),
        )
        .route("/run_code", post(runcode::run_code))
        .route("/openrlhf", post(openrlhf::reward))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth));
    open.merge(guarded)
        // Body limits are checked by each handler (`api::body`) to answer 413 as JSON.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(state)
}

/// Bearer token check (constant-time compare), when the server has one.
async fn auth(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(token) = state.cfg.token.as_deref().filter(|t| !t.is_empty()) {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        let same = given.len() == token.len()
            && given
                .bytes()
                .zip(token.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        if !same {
            let mut res = ApiError::new(StatusCode::UNAUTHORIZED, "missing or wrong bearer token")
                .hint("send `Authorization: Bearer <token>` with the server's --token")
                .into_response();
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return res;
        }
    }
    next.run(req).await
}

/// Resolves on SIGTERM or Ctrl-C after draining: new requests get 503 at once, admitted samples
/// finish (up to `drain_timeout`), then the server closes its connections.
pub async fn shutdown_signal(state: Arc<AppState>) {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {},
        _ = tokio::signal::ctrl_c() => {},
    }
    drain(&state).await;
}

/// Stops admitting and waits until every admitted sample is answered (or the drain timeout).
pub async fn drain(state: &AppState) {
    state.start_draining();
    tracing::info!(
        outstanding = state.outstanding(),
        "draining: refusing new requests, finishing admitted samples"
    );
    let until = tokio::time::Instant::now() + state.cfg.drain_timeout;
    while state.outstanding() > 0 && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let the last responses reach their clients.
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Serves until `shutdown` resolves, then closes the engine (running jobs finish).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    state.cfg.check()?;
    axum::serve(listener, router(state.clone()))
        .with_graceful_shutdown(shutdown)
        .await?;
    if let Some(b) = state.backend() {
        let b = b.clone();
        tokio::task::spawn_blocking(move || b.close()).await?;
    }
    Ok(())
}
