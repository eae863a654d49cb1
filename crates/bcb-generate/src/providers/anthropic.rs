//! Anthropic Messages API. Extended thinking only when a budget is asked for (the original
//! always sent one, even 0).

use bcb_envvars::EnvVars;
use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};

use super::{
    endpoint, join_url, protocol, u64_at, GenRequest, GenResponse, Prompt, Provider, Sampling,
    Usage,
};
use crate::error::ApiError;
use crate::http::{secret_header, Http};
use crate::options::GenerateOptions;
use crate::prompt::{EOS, PREFILL_STOP};

pub const DEFAULT_BASE: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

pub struct Anthropic {
    base: String,
    key: Option<String>,
    model: String,
    sampling: Sampling,
    thinking_budget: u32,
    beta: String,
}

impl Anthropic {
    pub fn new(
        opts: &GenerateOptions,
        sampling: Sampling,
        base_url: Option<&str>,
    ) -> anyhow::Result<Self> {
        // ANTHROPIC_KEY is what the original reads; ANTHROPIC_API_KEY is what its README says.
        let (base, key) = endpoint(
            base_url,
            DEFAULT_BASE,
            &[EnvVars::ANTHROPIC_API_KEY, EnvVars::ANTHROPIC_KEY],
            "ANTHROPIC_API_KEY (or ANTHROPIC_KEY) is not set",
        )?;
        Ok(Anthropic {
            base,
            key,
            model: opts.model.clone(),
            sampling,
            thinking_budget: opts.reasoning_budget,
            beta: opts.reasoning_beta.clone(),
        })
    }
}

impl Provider for Anthropic {
    fn max_n(&self) -> u32 {
        1
    }

    fn request(&self, req: &GenRequest) -> (String, Value) {
        let (user, prefill) = match &req.prompt {
            Prompt::Chat { user, prefill } => (user.as_str(), prefill.as_deref()),
            Prompt::Raw(p) => (p.as_str(), None),
        };
        let mut messages = vec![json!({"role": "user", "content": user})];
        if let Some(p) = prefill {
            messages.push(json!({"role": "assistant", "content": p}));
        }
        let mut stops: Vec<&str> = EOS.to_vec();
        if prefill.is_some() {
            stops.push(PREFILL_STOP);
        }
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "max_tokens": self.sampling.max_tokens,
            "stop_sequences": stops,
        });
        if self.thinking_budget > 0 {
            // Thinking requires the default temperature; the original drops it too.
            body["thinking"] = json!({"type": "enabled", "budget_tokens": self.thinking_budget});
        } else {
            body["temperature"] = self.sampling.temperature_json();
            if let Some(p) = self.sampling.top_p {
                body["top_p"] = json!(p);
            }
        }
        (join_url(&self.base, "v1/messages"), body)
    }

    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(k) = &self.key {
            h.insert("x-api-key", secret_header(k));
        }
        h.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if self.thinking_budget > 0 && !self.beta.is_empty() {
            if let Ok(v) = HeaderValue::from_str(&self.beta) {
                h.insert("anthropic-beta", v);
            }
        }
        h
    }

    fn generate<'a>(
        &'a self,
        http: &'a Http,
        req: &'a GenRequest,
    ) -> BoxFuture<'a, Result<GenResponse, ApiError>> {
        Box::pin(async move {
            let (url, body) = self.request(req);
            let v = http.post_json(&url, self.headers(), &body).await?;
            let blocks = v
                .get("content")
                .and_then(Value::as_array)
                .ok_or_else(|| protocol(&url, "no `content` array in the answer"))?;
            // Thinking blocks are left out, as the original keeps only text deltas.
            let text: String = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            let usage = v.get("usage").map(|_| Usage {
                input_tokens: u64_at(&v, "/usage/input_tokens"),
                output_tokens: u64_at(&v, "/usage/output_tokens"),
            });
            Ok(GenResponse {
                outputs: vec![text],
                usage,
            })
        })
    }
}
