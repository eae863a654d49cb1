//! Ollama's native API: `/api/chat` for chat models, `/api/generate` with `raw` for direct
//! completion; answers stream as NDJSON, one object per line, the last with `done: true`.

use bcb_envvars::EnvVars;
use futures::future::BoxFuture;
use futures::StreamExt;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use super::{join_url, protocol, GenRequest, GenResponse, Prompt, Provider, Sampling, Usage};
use crate::error::ApiError;
use crate::http::Http;
use crate::options::GenerateOptions;
use crate::prompt::{direct_completion_stops, EOS, PREFILL_STOP};

pub const DEFAULT_BASE: &str = "http://127.0.0.1:11434";

pub struct Ollama {
    base: String,
    model: String,
    sampling: Sampling,
}

impl Ollama {
    pub fn new(opts: &GenerateOptions, sampling: Sampling, base_url: Option<&str>) -> Self {
        let base = base_url
            .map(str::to_string)
            .or_else(|| {
                std::env::var(EnvVars::OLLAMA_HOST).ok().map(|h| {
                    if h.starts_with("http") {
                        h
                    } else {
                        format!("http://{h}")
                    }
                })
            })
            .unwrap_or_else(|| DEFAULT_BASE.to_string());
        Ollama {
            base,
            model: opts.model.clone(),
            sampling,
        }
    }

    fn options(&self, stop: Option<Vec<String>>) -> Value {
        let mut o = json!({
            "temperature": self.sampling.temperature_json(),
            "num_predict": self.sampling.max_tokens,
        });
        if let Some(p) = self.sampling.top_p {
            o["top_p"] = json!(p);
        }
        if let Some(s) = self.sampling.seed {
            o["seed"] = json!(s);
        }
        if let Some(stop) = stop {
            o["stop"] = json!(stop);
        }
        o
    }
}

impl Provider for Ollama {
    fn request(&self, req: &GenRequest) -> (String, Value) {
        match &req.prompt {
            Prompt::Chat { user, prefill } => {
                let mut messages = vec![json!({"role": "user", "content": user})];
                let mut stop = None;
                if let Some(p) = prefill {
                    messages.push(json!({"role": "assistant", "content": p}));
                    stop = Some(
                        EOS.iter()
                            .copied()
                            .chain([PREFILL_STOP])
                            .map(String::from)
                            .collect(),
                    );
                }
                let body = json!({
                    "model": self.model,
                    "messages": messages,
                    "stream": true,
                    "options": self.options(stop),
                });
                (join_url(&self.base, "api/chat"), body)
            }
            Prompt::Raw(p) => {
                let body = json!({
                    "model": self.model,
                    "prompt": p,
                    "raw": true,
                    "stream": true,
                    "options": self.options(Some(direct_completion_stops())),
                });
                (join_url(&self.base, "api/generate"), body)
            }
        }
    }

    fn headers(&self) -> HeaderMap {
        HeaderMap::new()
    }

    /// An answer sent whole (`"stream": false`) is a stream's one and last object.
    fn parse(&self, url: &str, _: &GenRequest, v: &Value) -> Result<GenResponse, ApiError> {
        let mut acc = NdjsonAccumulator::default();
        acc.object(url, v)?;
        acc.finish(url)
    }

    /// The answer streams as NDJSON, read line by line as it comes.
    fn generate<'a>(
        &'a self,
        http: &'a Http,
        req: &'a GenRequest,
    ) -> BoxFuture<'a, Result<GenResponse, ApiError>> {
        Box::pin(self.stream(http, req))
    }
}

impl Ollama {
    async fn stream(&self, http: &Http, req: &GenRequest) -> Result<GenResponse, ApiError> {
        let (url, body) = self.request(req);
        let resp = http.post(&url, self.headers(), &body).await?;
        let mut stream = resp.bytes_stream();
        let mut buf: Vec<u8> = Vec::new();
        let mut acc = NdjsonAccumulator::default();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| ApiError::from_reqwest(&url, &e))?;
            buf.extend_from_slice(&chunk);
            while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buf.drain(..=pos).collect();
                acc.line(&url, &line)?;
            }
        }
        if !buf.is_empty() {
            acc.line(&url, &buf)?;
        }
        acc.finish(&url)
    }
}

/// Collects the streamed pieces of one answer.
#[derive(Default)]
struct NdjsonAccumulator {
    text: String,
    done: bool,
    usage: Option<Usage>,
}

impl NdjsonAccumulator {
    fn line(&mut self, url: &str, line: &[u8]) -> Result<(), ApiError> {
        let s = String::from_utf8_lossy(line);
        if s.trim().is_empty() {
            return Ok(());
        }
        let v: Value = serde_json::from_str(s.trim()).map_err(|e| {
            protocol(
                url,
                format!("bad NDJSON line ({e}): {}", crate::http::excerpt(&s)),
            )
        })?;
        self.object(url, &v)
    }

    fn object(&mut self, url: &str, v: &Value) -> Result<(), ApiError> {
        if let Some(err) = v.get("error") {
            return Err(protocol(url, format!("error in stream: {err}")));
        }
        // /api/chat puts text in message.content, /api/generate in response.
        if let Some(t) = v.pointer("/message/content").and_then(Value::as_str) {
            self.text.push_str(t);
        } else if let Some(t) = v.get("response").and_then(Value::as_str) {
            self.text.push_str(t);
        }
        if v.get("done").and_then(Value::as_bool) == Some(true) {
            self.done = true;
            self.usage = Some(Usage {
                input_tokens: v
                    .get("prompt_eval_count")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                output_tokens: v.get("eval_count").and_then(Value::as_u64).unwrap_or(0),
            });
        }
        Ok(())
    }

    fn finish(self, url: &str) -> Result<GenResponse, ApiError> {
        if !self.done {
            return Err(ApiError::Transport {
                kind: "stream cut",
                url: url.to_string(),
                message: "the answer stream ended before `done: true`".into(),
            });
        }
        Ok(GenResponse {
            outputs: vec![self.text],
            usage: self.usage,
        })
    }
}
