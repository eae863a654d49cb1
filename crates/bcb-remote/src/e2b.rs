//! `--execution e2b`: one E2B sandbox per run, driven over E2B's published HTTP APIs (no SDK):
//!
//! - control plane (`spec/openapi.yml`): `POST /sandboxes` creates it from a template,
//!   `POST /sandboxes/{id}/timeout` extends its life while the run lasts,
//!   `DELETE /sandboxes/{id}` kills it — always: on success, on error, on Ctrl-C;
//! - envd inside it (`spec/envd/envd.yaml`, `process.proto`): `POST /files` uploads the samples,
//!   `POST /process.Process/Start` (Connect server stream) runs `bcb evaluate --execution local`
//!   with its output streamed back, `GET /files` downloads the two result files.

use bcb_envvars::EnvVars;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use bcb_eval::EvalResults;
use bcb_execute::ExecError;
use reqwest::blocking::{multipart, Client, RequestBuilder, Response};
use serde_json::{json, Value};

use crate::{pass_at_k_from_json, short, Progress, RemoteEvaluator, RemoteRequest, RemoteResult};

/// Where the sandbox's home is (E2B's default user).
const HOME: &str = "/home/user";
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
    /// Set by Ctrl-C: the run stops at the next stream message and the sandbox is killed.
    pub cancel: Arc<AtomicBool>,
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
            cancel: Arc::new(AtomicBool::new(false)),
        })
    }
}

pub struct E2bClient {
    opts: E2bOptions,
    http: Client,
}

/// A created sandbox; killed when dropped, whatever happened.
struct Sandbox<'a> {
    client: &'a E2bClient,
    id: String,
    envd: String,
    token: Option<String>,
}

impl Drop for Sandbox<'_> {
    fn drop(&mut self) {
        let url = format!("{}/sandboxes/{}", self.client.opts.api_url, self.id);
        match self.client.api(self.client.http.delete(&url)).send() {
            Ok(r) if r.status().is_success() || r.status().as_u16() == 404 => {
                tracing::info!("killed sandbox {}", self.id)
            }
            Ok(r) => tracing::error!(
                "could not kill sandbox {}: HTTP {}; kill it in the E2B dashboard",
                self.id,
                r.status()
            ),
            Err(e) => tracing::error!(
                "could not kill sandbox {}: {e}; kill it in the E2B dashboard",
                self.id
            ),
        }
    }
}

impl Sandbox<'_> {
    fn envd(&self, rb: RequestBuilder) -> RequestBuilder {
        match &self.token {
            Some(t) => rb.header("X-Access-Token", t),
            None => rb,
        }
    }
}

impl E2bClient {
    pub fn new(opts: E2bOptions) -> Result<Self, ExecError> {
        let http = Client::builder()
            .connect_timeout(Duration::from_secs(20))
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| {
                ExecError::fatal(
                    format!("cannot build an HTTP client: {e}"),
                    "this is a bug in bcb; please report it",
                )
            })?;
        Ok(E2bClient { opts, http })
    }

    /// The flag that interrupts a run (what Ctrl-C sets).
    pub fn cancel(&self) -> Arc<AtomicBool> {
        self.opts.cancel.clone()
    }

    fn api(&self, rb: RequestBuilder) -> RequestBuilder {
        rb.header("X-API-Key", &self.opts.api_key)
    }

    fn create(&self) -> Result<Sandbox<'_>, ExecError> {
        let url = format!("{}/sandboxes", self.opts.api_url);
        let body = json!({"templateID": self.opts.template, "timeout": self.opts.life.as_secs(), "metadata": {"client": "bcb"}});
        let resp = self
            .api(self.http.post(&url).json(&body))
            .send()
            .map_err(|e| {
                ExecError::transient(format!(
                    "cannot reach E2B at {url}: {e}; check the network or E2B_DOMAIN, then rerun"
                ))
            })?;
        let v = checked(resp, "creating the sandbox", &format!("check E2B_API_KEY and that template `{}` exists (`e2b template list`; build it from sandbox-templates/)", self.opts.template))?;
        let id = v
            .get("sandboxID")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ExecError::fatal(
                    format!("E2B answered without a sandboxID: {}", short(&v)),
                    "report this to bcb",
                )
            })?
            .to_string();
        let domain = v.get("domain").and_then(Value::as_str).unwrap_or("e2b.app");
        let envd = self
            .opts
            .envd_url
            .clone()
            .unwrap_or_else(|| format!("https://{ENVD_PORT}-{id}.{domain}"));
        Ok(Sandbox {
            client: self,
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
        let form = multipart::Form::new().part(
            "file",
            multipart::Part::bytes(bytes).file_name(
                path.rsplit('/')
                    .next()
                    .unwrap_or("samples.jsonl")
                    .to_string(),
            ),
        );
        let resp = sb
            .envd(
                self.http
                    .post(&url)
                    .query(&[("path", path), ("username", "user")])
                    .multipart(form),
            )
            .send()
            .map_err(|e| {
                ExecError::transient(format!(
                    "uploading the samples into the sandbox failed: {e}; rerun"
                ))
            })?;
        let hint = if resp.status().as_u16() == 507 {
            "the sandbox's disk is full: give the template more disk"
        } else {
            "rerun; if it persists, rebuild the template"
        };
        checked_bytes(resp, "uploading the samples", hint).map(drop)
    }

    fn download(&self, sb: &Sandbox, path: &str) -> Result<Vec<u8>, ExecError> {
        let url = format!("{}/files", sb.envd);
        let resp = sb
            .envd(
                self.http
                    .get(&url)
                    .query(&[("path", path), ("username", "user")]),
            )
            .send()
            .map_err(|e| {
                ExecError::transient(format!(
                    "downloading {path} from the sandbox failed: {e}; rerun"
                ))
            })?;
        checked_bytes(
            resp,
            &format!("downloading {path}"),
            "the run inside wrote no results: see its output above",
        )
    }

    /// Runs `cmd` in the sandbox through envd's process API, streaming its output.
    fn run(
        &self,
        sb: &Sandbox,
        cmd: &str,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(), ExecError> {
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
                    "starting the evaluation in the sandbox failed: {e}; rerun"
                ))
            })?;
        let mut resp = match resp.status().is_success() {
            true => resp,
            false => {
                return Err(ExecError::fatal(
                    format!(
                        "starting the evaluation in the sandbox: HTTP {} {}",
                        resp.status(),
                        short(&resp.text().unwrap_or_default())
                    ),
                    "rebuild the template from sandbox-templates/",
                ))
            }
        };
        let mut last_extend = Instant::now();
        let b64 = base64::engine::general_purpose::STANDARD;
        loop {
            if self.opts.cancel.load(Ordering::SeqCst) {
                return Err(ExecError::fatal(
                    "interrupted (Ctrl-C); the sandbox is being killed",
                    "rerun to evaluate again",
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
                            progress(Progress::Output {
                                line: line.to_string(),
                            });
                        }
                    }
                }
            } else if let Some(end) = event.get("end") {
                let code = end.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
                return match code {
                    0 => Ok(()),
                    _ => Err(ExecError::fatal(format!("the evaluation in the sandbox failed (exit {code}{})", end.get("error").and_then(Value::as_str).map(|e| format!(": {e}")).unwrap_or_default()), "see its output above; the same command runs locally with --execution local")),
                };
            }
        }
    }
}

/// The command the sandbox runs: bcb's local evaluation with the request's settings.
pub fn command(req: &RemoteRequest, samples: &str) -> String {
    let mut args = vec![
        "bcb evaluate --execution local".to_string(),
        format!("--split {}", req.split),
        format!("--subset {}", req.subset),
        format!("--pass-k {}", req.pass_k_text()),
        format!("--parallel {}", req.parallel),
        format!("--min-time-limit {}", req.min_time_limit),
        format!("--max-as-limit {}", req.max_as_limit),
        format!("--max-data-limit {}", req.max_data_limit),
        format!("--max-stack-limit {}", req.max_stack_limit),
        format!("--calibrated {}", req.calibrated),
        "--progress-interval 10".to_string(),
    ];
    if !req.task_ids.is_empty() {
        args.push(format!("--ids {}", req.selective_ids()));
    }
    if req.no_gt {
        args.push("--no-gt".into());
    }
    if req.check_gt_only {
        args.push("--check-gt-only".into());
    } else {
        args.push(format!("--samples '{samples}'"));
    }
    args.join(" ")
}

impl RemoteEvaluator for E2bClient {
    fn evaluate(
        &self,
        req: &RemoteRequest,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<RemoteResult, ExecError> {
        let sb = self.create()?;
        progress(Progress::Connected {
            description: format!("E2B sandbox {} from template {}", sb.id, self.opts.template),
        });
        let mut remote_samples = String::new();
        if let Some(path) = &req.samples {
            let bytes = std::fs::read(path).map_err(|e| {
                ExecError::fatal(
                    format!("cannot read {}: {e}", path.display()),
                    "check the --samples path",
                )
            })?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_else(|| "samples.jsonl".into());
            remote_samples = format!("{HOME}/{name}");
            let size = bytes.len() as u64;
            self.upload(&sb, bytes, &remote_samples)?;
            progress(Progress::Uploaded { bytes: size });
        }
        self.run(&sb, &command(req, &remote_samples), progress)?;
        if req.check_gt_only {
            return Err(ExecError::fatal(
                "--check-gt-only ran in the sandbox (its output is above); it writes no files",
                "run without --check-gt-only to evaluate samples",
            ));
        }
        let stem = remote_samples.trim_end_matches(".jsonl");
        let results = self.download(&sb, &format!("{stem}_eval_results.json"))?;
        let pass_at_k = self.download(&sb, &format!("{stem}_pass_at_k.json"))?;
        let bad = |what: &str, e: String| {
            ExecError::fatal(
                format!("the sandbox's {what} is not valid: {e}"),
                "rebuild the template so its bcb matches this one",
            )
        };
        let results: EvalResults =
            serde_json::from_slice(&results).map_err(|e| bad("results file", e.to_string()))?;
        let pass_at_k = serde_json::from_slice::<Value>(&pass_at_k)
            .map_err(|e| e.to_string())
            .and_then(|v| pass_at_k_from_json(&v))
            .map_err(|e| bad("pass@k file", e))?;
        drop(sb);
        Ok(RemoteResult {
            results: Some(results),
            pass_at_k,
        })
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
