//! Anthropic Messages API. Extended thinking only when a budget is asked for (the original
//! always sent one, even 0).

use bcb_envvars::EnvVars;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};

use super::{protocol, u64_at, GenRequest, GenResponse, Hosted, Provider, Service, Usage};
use crate::error::ApiError;
use crate::options::GenerateOptions;
use crate::prompt::{EOS, PREFILL_STOP};

// ANTHROPIC_KEY is what the original reads; ANTHROPIC_API_KEY is what its README says.
pub(super) const SERVICE: Service = Service {
    base: "https://api.anthropic.com",
    keys: &[EnvVars::ANTHROPIC_API_KEY, EnvVars::ANTHROPIC_KEY],
    missing: "ANTHROPIC_API_KEY (or ANTHROPIC_KEY) is not set",
};
const API_VERSION: &str = "2023-06-01";

pub struct Anthropic {
    api: Hosted,
    thinking_budget: u32,
    beta: String,
}

impl Anthropic {
    pub(super) fn new(opts: &GenerateOptions, api: Hosted) -> Self {
        Anthropic {
            api,
            thinking_budget: opts.reasoning_budget,
            beta: opts.reasoning_beta.clone(),
        }
    }
}

impl Provider for Anthropic {
    fn request(&self, req: &GenRequest) -> (String, Value) {
        let (user, prefill) = req.prompt.parts();
        let mut messages = vec![json!({"role": "user", "content": user})];
        if let Some(p) = prefill {
            messages.push(json!({"role": "assistant", "content": p}));
        }
        let mut stops: Vec<&str> = EOS.to_vec();
        if prefill.is_some() {
            stops.push(PREFILL_STOP);
        }
        let mut body = json!({
            "model": self.api.model,
            "messages": messages,
            "max_tokens": self.api.sampling.max_tokens,
            "stop_sequences": stops,
        });
        if self.thinking_budget > 0 {
            // Thinking requires the default temperature; the original drops it too.
            body["thinking"] = json!({"type": "enabled", "budget_tokens": self.thinking_budget});
        } else {
            body["temperature"] = self.api.sampling.temperature_json();
            if let Some(p) = self.api.sampling.top_p {
                body["top_p"] = json!(p);
            }
        }
        (self.api.url("v1/messages"), body)
    }

    fn headers(&self) -> HeaderMap {
        let mut h = self.api.key_header("x-api-key");
        h.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if self.thinking_budget > 0 && !self.beta.is_empty() {
            if let Ok(v) = HeaderValue::from_str(&self.beta) {
                h.insert("anthropic-beta", v);
            }
        }
        h
    }

    fn parse(&self, url: &str, _: &GenRequest, v: &Value) -> Result<GenResponse, ApiError> {
        let blocks = v
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| protocol(url, "no `content` array in the answer"))?;
        // Thinking blocks are left out, as the original keeps only text deltas.
        let text: String = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        let usage = v.get("usage").map(|_| Usage {
            input_tokens: u64_at(v, "/usage/input_tokens"),
            output_tokens: u64_at(v, "/usage/output_tokens"),
        });
        Ok(GenResponse {
            outputs: vec![text],
            usage,
        })
    }
}
