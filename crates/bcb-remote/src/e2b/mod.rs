//! `--execution e2b`: an E2B sandbox runs the jobs with bcb's own local executor, driven over
//! E2B's published HTTP APIs (no SDK):
//!
//! - control plane (`spec/openapi.yml`): `POST /sandboxes` creates it from a template (once,
//!   at the first chunk), `POST /sandboxes/{id}/timeout` extends its life while a chunk runs,
//!   `DELETE /sandboxes/{id}` kills it when the executor is dropped — on success, on error, on
//!   Ctrl-C;
//! - envd inside it (`spec/envd/envd.yaml`, `process.proto`): per chunk, `POST /files` uploads
//!   the jobs ([`wire`]), `POST /process.Process/Start` (Connect server stream) runs
//!   `bcb exec-jobs` with every executor setting as a flag, `GET /files` downloads one outcome
//!   per job.
//!
//! The jobs carry their code, tests and time limits, so the sandbox runs exactly what a local
//! run would, with any dataset.

pub mod wire;

use bcb_envvars::EnvVars;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use reqwest::blocking::{multipart, Client, RequestBuilder, Response};
use serde_json::{json, Value};

use crate::{all_failed, short, text_field, HttpRetry, JobResults, RemoteBackend};
use bcb_executor::{ExecConfig, ExecError, Job, LocalKind};

/// Where the sandbox's home is (E2B's default user).
pub const HOME: &str = "/home/user";
/// envd's port inside every sandbox.
const ENVD_PORT: u16 = 49983;

#[derive(Debug, Clone)]
pub struct E2bOptions {
    /// Template name or id (`--e2b-endpoint`).
    pub template: String,
    pub api_key: String,
    /// Control-plane URL: `https://api.{E2B_DOMAIN}` (default domain `e2b.app`).
    pub api_url: String,
    /// envd URL; `None` = `https://49983-{sandboxID}.{domain}` as E2B routes it.
    pub envd_url: Option<String>,
    /// Sandbox life granted at creation and at each extension.
    pub life: Duration,
    /// Further tries of each HTTP step (`--remote-retries`).
    pub retries: usize,
    /// Samples at once in the sandbox (`--parallel`; < 1: its cores).
    pub parallel: i64,
    /// The sandbox's local executor (`--executor`).
    pub executor: LocalKind,
    /// Set to stop the run (as an interrupt does): the chunk stops at the next stream message
    /// and the sandbox is killed.
    pub cancel: Arc<AtomicBool>,
}

impl PartialEq for E2bOptions {
    fn eq(&self, o: &Self) -> bool {
        (
            &self.template,
            &self.api_url,
            &self.envd_url,
            self.parallel,
            self.executor,
        ) == (&o.template, &o.api_url, &o.envd_url, o.parallel, o.executor)
    }
}

impl E2bOptions {
    /// From `E2B_API_KEY`, `E2B_DOMAIN` and (for tests and self-hosting) `E2B_API_URL`,
    /// `E2B_ENVD_URL`.
    pub fn from_env(template: &str) -> Result<Self, ExecError> {
        let api_key = std::env::var(EnvVars::E2B_API_KEY)
            .ok()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                ExecError::fatal(
                    "--execution e2b needs an E2B API key",
                    "set E2B_API_KEY (https://e2b.dev/dashboard → API keys)",
                )
            })?;
        let domain = std::env::var(EnvVars::E2B_DOMAIN).unwrap_or_else(|_| "e2b.app".into());
        Ok(E2bOptions {
            template: template.to_string(),
            api_key,
            api_url: std::env::var(EnvVars::E2B_API_URL)
                .unwrap_or_else(|_| format!("https://api.{domain}")),
            envd_url: std::env::var(EnvVars::E2B_ENVD_URL).ok(),
            life: Duration::from_secs(600),
            retries: 8,
            parallel: 0,
            executor: LocalKind::Pool,
            cancel: Arc::new(AtomicBool::new(false)),
        })
    }
}

/// A created sandbox.
struct Sandbox {
    id: String,
    envd: String,
    token: Option<String>,
}

impl Sandbox {
    fn envd(&self, rb: RequestBuilder) -> RequestBuilder {
        match &self.token {
            Some(t) => rb.header("X-Access-Token", t),
            None => rb,
        }
    }
}

/// E2B as an executor's backend: one sandbox for the whole run, killed on drop.
pub struct E2bBackend {
    opts: E2bOptions,
    http: Client,
    /// `bcb exec-jobs` flags: every executor setting of this run.
    flags: String,
    sandbox: Mutex<Option<Sandbox>>,
    chunks: AtomicUsize,
    /// An interrupt waits for this run to kill its sandbox rather than exit at once.
    _graceful: bcb_executor::stop::GracefulStop,
}

impl Drop for E2bBackend {
    fn drop(&mut self) {
        let Some(sb) = self.sandbox.lock().unwrap().take() else {
            return;
        };
        let url = format!("{}/sandboxes/{}", self.opts.api_url, sb.id);
        match self.api(self.http.delete(&url)).send() {
            Ok(r) if r.status().is_success() || r.status().as_u16() == 404 => {
                tracing::info!("killed sandbox {}", sb.id)
            }
            Ok(r) => tracing::error!(
                "could not kill sandbox {}: HTTP {}; kill it in the E2B dashboard",
                sb.id,
                r.status()
            ),
            Err(e) => tracing::error!(
                "could not kill sandbox {}: {e}; kill it in the E2B dashboard",
                sb.id
            ),
        }
    }
}

/// The `bcb exec-jobs` flags that carry `cfg` and the sandbox's executor settings.
pub fn exec_flags(opts: &E2bOptions, cfg: &ExecConfig) -> String {
    let l = &cfg.limits;
    format!(
        "--executor {} --parallel {} --max-in-flight {} --max-as-limit {} --max-data-limit {} --max-stack-limit {} --memory-limit {} --max-processes {} --output-cap {} --kill-grace {} --hack-policy {}",
        opts.executor,
        opts.parallel.max(0),
        cfg.max_in_flight,
        l.max_as_mb,
        l.max_data_mb,
        l.max_stack_mb,
        l.memory_mb,
        l.max_processes,
        l.output_cap_bytes,
        l.kill_grace.as_secs_f64(),
        cfg.hacks
    )
}

impl E2bBackend {
    /// Ready to run; the sandbox is created at the first chunk. An interrupt
    /// ([`bcb_execute::stop::request`]) from now on stops the run at the next message from the
    /// sandbox, which is then killed.
    pub fn new(opts: E2bOptions, cfg: &ExecConfig) -> Result<Self, ExecError> {
        let http = crate::http_client(Duration::from_secs(120))?;
        Ok(E2bBackend {
            flags: exec_flags(&opts, cfg),
            opts,
            http,
            sandbox: Mutex::new(None),
            chunks: AtomicUsize::new(0),
            _graceful: bcb_executor::stop::GracefulStop::register(),
        })
    }

    /// The flag that interrupts this run (beside [`bcb_executor::stop::requested`]).
    pub fn cancel(&self) -> Arc<AtomicBool> {
        self.opts.cancel.clone()
    }

    fn cancelled(&self) -> bool {
        self.opts.cancel.load(Ordering::SeqCst) || bcb_executor::stop::requested()
    }

    fn retry(&self) -> HttpRetry {
        HttpRetry {
            retries: self.opts.retries,
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(20),
        }
    }

    fn api(&self, rb: RequestBuilder) -> RequestBuilder {
        rb.header("X-API-Key", &self.opts.api_key)
    }

    fn create(&self) -> Result<Sandbox, ExecError> {
        let url = format!("{}/sandboxes", self.opts.api_url);
        let body = json!({"templateID": self.opts.template, "timeout": self.opts.life.as_secs(), "metadata": {"client": "bcb"}});
        let resp = self
            .retry()
            .send("creating the sandbox", &|| {
                self.api(self.http.post(&url).json(&body))
            })
            .map_err(|why| {
                ExecError::transient(format!(
                    "{why}; check the network or E2B_DOMAIN, then rerun"
                ))
            })?;
        let v = checked(resp, "creating the sandbox", &format!("check E2B_API_KEY and that template `{}` exists (`e2b template list`; build it from sandbox-templates/)", self.opts.template))?;
        let id = text_field(
            &v,
            "sandboxID",
            "E2B answered without a sandboxID",
            "report this to bcb",
        )?
        .to_string();
        let domain = v.get("domain").and_then(Value::as_str).unwrap_or("e2b.app");
        let envd = self
            .opts
            .envd_url
            .clone()
            .unwrap_or_else(|| format!("https://{ENVD_PORT}-{id}.{domain}"));
        tracing::info!("E2B sandbox {id} from template {}", self.opts.template);
        Ok(Sandbox {
            token: v
                .get("envdAccessToken")
                .and_then(Value::as_str)
                .map(str::to_string),
            id,
            envd: envd.trim_end_matches('/').to_string(),
        })
    }

    fn extend(&self, sb: &Sandbox) {
        let url = format!("{}/sandboxes/{}/timeout", self.opts.api_url, sb.id);
        let r = self
            .api(
                self.http
                    .post(&url)
                    .json(&json!({"timeout": self.opts.life.as_secs()})),
            )
            .send();
        if let Err(e) = r.and_then(Response::error_for_status) {
            tracing::warn!("could not extend sandbox {}'s life: {e}", sb.id);
        }
    }

    fn upload(&self, sb: &Sandbox, bytes: Vec<u8>, path: &str) -> Result<(), ExecError> {
        let url = format!("{}/files", sb.envd);
        let name = path.rsplit('/').next().unwrap_or("jobs.jsonl").to_string();
        let build = || {
            let form = multipart::Form::new().part(
                "file",
                multipart::Part::bytes(bytes.clone()).file_name(name.clone()),
            );
            sb.envd(
                self.http
                    .post(&url)
                    .query(&[("path", path), ("username", "user")])
                    .multipart(form),
            )
        };
        let resp = self
            .retry()
            .send("uploading the jobs", &build)
            .map_err(|why| ExecError::transient(format!("{why}; rerun")))?;
        let hint = if resp.status().as_u16() == 507 {
            "the sandbox's disk is full: give the template more disk"
        } else {
            "rerun; if it persists, rebuild the template"
        };
        checked_bytes(resp, "uploading the jobs", hint).map(drop)
    }

    fn download(&self, sb: &Sandbox, path: &str) -> Result<Vec<u8>, ExecError> {
        let url = format!("{}/files", sb.envd);
        let resp = self
            .retry()
            .send(&format!("downloading {path}"), &|| {
                sb.envd(
                    self.http
                        .get(&url)
                        .query(&[("path", path), ("username", "user")]),
                )
            })
            .map_err(|why| ExecError::transient(format!("{why}; rerun")))?;
        checked_bytes(
            resp,
            &format!("downloading {path}"),
            "the run inside wrote no outcomes: see its output in the error above",
        )
    }

    /// One chunk in the sandbox: upload, run `bcb exec-jobs`, download.
    fn evaluate(&self, jobs: &[Job]) -> Result<JobResults, ExecError> {
        let mut guard = self.sandbox.lock().unwrap();
        if guard.is_none() {
            *guard = Some(self.create()?);
        }
        let sb = guard.as_ref().expect("created above");
        let n = self.chunks.fetch_add(1, Ordering::SeqCst) + 1;
        let jobs_path = format!("{HOME}/bcb-chunk-{n}.jobs.jsonl");
        let out_path = format!("{HOME}/bcb-chunk-{n}.outcomes.jsonl");
        self.upload(sb, wire::jobs_file(jobs), &jobs_path)?;
        let cmd = format!(
            "bcb exec-jobs {} --jobs '{jobs_path}' --out '{out_path}'",
            self.flags
        );
        self.run(sb, &cmd)?;
        wire::read_results(&self.download(sb, &out_path)?).map_err(|e| {
            ExecError::fatal(
                format!("the sandbox's outcomes are not valid: {e}"),
                "rebuild the template so its bcb matches this one",
            )
        })
    }

    /// Runs `cmd` in the sandbox through envd's process API, streaming its output.
    fn run(&self, sb: &Sandbox, cmd: &str) -> Result<(), ExecError> {
        let url = format!("{}/process.Process/Start", sb.envd);
        let msg = json!({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", cmd], "envs": {}, "cwd": HOME}});
        let body = connect_frame(0, &serde_json::to_vec(&msg).expect("json"));
        let resp = sb
            .envd(
                self.http
                    .post(&url)
                    .header("Content-Type", "application/connect+json")
                    .header("Connect-Protocol-Version", "1")
                    .body(body),
            )
            .timeout(Duration::from_secs(3600 * 24))
            .send()
            .map_err(|e| {
                ExecError::transient(format!(
                    "starting the jobs in the sandbox failed: {e}; rerun"
                ))
            })?;
        let mut resp = match resp.status().is_success() {
            true => resp,
            false => {
                return Err(ExecError::fatal(
                    format!(
                        "starting the jobs in the sandbox: HTTP {} {}",
                        resp.status(),
                        short(&resp.text().unwrap_or_default())
                    ),
                    "rebuild the template from sandbox-templates/",
                ))
            }
        };
        let mut last_extend = Instant::now();
        // The last lines of the command's output, for the error when it fails.
        let mut output: Vec<String> = Vec::new();
        let b64 = base64::engine::general_purpose::STANDARD;
        loop {
            if self.cancelled() {
                return Err(ExecError::fatal(
                    "interrupted (Ctrl-C); the sandbox is being killed",
                    "rerun the same command: finished jobs are journaled",
                ));
            }
            let (flags, payload) = match read_frame(&mut resp) {
                Ok(Some(f)) => f,
                Ok(None) => {
                    return Err(ExecError::transient(
                        "the sandbox's process stream ended before the run did; rerun",
                    ))
                }
                Err(e) => {
                    return Err(ExecError::transient(format!(
                        "the sandbox's process stream broke: {e}; rerun"
                    )))
                }
            };
            let v: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
            if flags & 0x02 != 0 {
                // End-of-stream trailer: an error here is Connect's, not the command's.
                if let Some(err) = v.get("error") {
                    return Err(ExecError::transient(format!(
                        "the sandbox's process API failed: {}; rerun",
                        short(err)
                    )));
                }
                return Err(ExecError::transient(
                    "the sandbox's process stream ended without an exit; rerun",
                ));
            }
            if last_extend.elapsed() > self.opts.life / 3 {
                self.extend(sb);
                last_extend = Instant::now();
            }
            let event = v.get("event").unwrap_or(&Value::Null);
            if let Some(data) = event.get("data") {
                for key in ["stdout", "stderr"] {
                    if let Some(text) = data
                        .get(key)
                        .and_then(Value::as_str)
                        .and_then(|s| b64.decode(s).ok())
                    {
                        for line in String::from_utf8_lossy(&text).lines() {
                            tracing::debug!("sandbox: {line}");
                            if output.len() == 20 {
                                output.remove(0);
                            }
                            output.push(line.to_string());
                        }
                    }
                }
            } else if let Some(end) = event.get("end") {
                let code = end.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
                return match code {
                    0 => Ok(()),
                    _ => Err(ExecError::fatal(
                        format!(
                            "the jobs in the sandbox failed (exit {code}{}); its last output:\n{}",
                            end.get("error").and_then(Value::as_str).map(|e| format!(": {e}")).unwrap_or_default(),
                            output.join("\n")
                        ),
                        "the template's bcb may differ from this one: rebuild it from sandbox-templates/",
                    )),
                };
            }
        }
    }
}

impl RemoteBackend for E2bBackend {
    fn name(&self) -> &'static str {
        "e2b"
    }

    fn run_chunk(&self, jobs: &[Job]) -> JobResults {
        if self.cancelled() {
            return all_failed(
                jobs,
                &ExecError::fatal(
                    "interrupted (Ctrl-C)",
                    "rerun the same command: finished jobs are journaled",
                ),
            );
        }
        self.evaluate(jobs).unwrap_or_else(|e| all_failed(jobs, &e))
    }

    fn describe(&self) -> Vec<String> {
        vec![format!(
            "E2B template {} at {}, `bcb exec-jobs {}`",
            self.opts.template, self.opts.api_url, self.flags
        )]
    }
}

fn checked_bytes(resp: Response, what: &str, hint: &str) -> Result<Vec<u8>, ExecError> {
    let status = resp.status();
    let bytes = resp.bytes().map(|b| b.to_vec()).unwrap_or_default();
    if status.is_success() {
        return Ok(bytes);
    }
    let text = String::from_utf8_lossy(&bytes).to_string();
    let message = format!("{what}: HTTP {status} {}", short(&text));
    Err(match status.is_server_error() && status.as_u16() != 507 {
        true => ExecError::transient(format!("{message}; rerun")),
        false => ExecError::fatal(message, hint),
    })
}

fn checked(resp: Response, what: &str, hint: &str) -> Result<Value, ExecError> {
    let bytes = checked_bytes(resp, what, hint)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ExecError::fatal(
            format!("{what}: the answer is not JSON: {e}"),
            hint.to_string(),
        )
    })
}

/// A Connect streaming envelope: 1 flag byte, 4-byte big-endian length, the message.
pub fn connect_frame(flags: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + body.len());
    out.push(flags);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

fn read_frame(r: &mut impl std::io::Read) -> std::io::Result<Option<(u8, Vec<u8>)>> {
    let mut head = [0u8; 5];
    match r.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Ok(Some((head[0], body)))
}
