//! One interface over every provider: a request is a prompt and a sample count, the answer
//! is the generated texts plus token usage when the server reports it.

mod anthropic;
mod google;
mod hf_inference;
mod mistral;
mod ollama;
mod openai;

use futures::future::BoxFuture;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::ApiError;
use crate::http::Http;
use crate::options::{Backend, GenerateOptions, Temperature};

pub use anthropic::Anthropic;
pub use google::Google;
pub use hf_inference::HfInference;
pub use mistral::Mistral;
pub use ollama::Ollama;
pub use openai::{is_openai_reasoning_model, OpenAi};

/// What to send: a chat user message (optionally with a partial assistant answer to
/// continue), or a raw prompt for direct completion.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    Chat {
        user: String,
        prefill: Option<String>,
    },
    Raw(String),
}

#[derive(Debug, Clone)]
pub struct GenRequest {
    pub prompt: Prompt,
    /// Samples wanted from this request (at most [`Provider::max_n`]).
    pub n: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone)]
pub struct GenResponse {
    pub outputs: Vec<String>,
    pub usage: Option<Usage>,
}

/// Settings every provider maps onto its own request fields.
#[derive(Debug, Clone)]
pub struct Sampling {
    pub temperature: Temperature,
    pub top_p: Option<f64>,
    pub max_tokens: u32,
    pub seed: Option<u64>,
    pub greedy: bool,
}

impl Sampling {
    /// The temperature as the original's JSON carries it: an integer `0` when greedy.
    pub fn temperature_json(&self) -> Value {
        match self.temperature.display.parse::<i64>() {
            Ok(i) => Value::from(i),
            Err(_) => Value::from(self.temperature.value),
        }
    }
}

pub trait Provider: Send + Sync {
    /// Most samples one request can ask for.
    fn max_n(&self) -> u32;
    /// The URL and JSON body of a request (pure; tests compare it with the original's).
    fn request(&self, req: &GenRequest) -> (String, Value);
    /// Headers, including credentials (never logged).
    fn headers(&self) -> HeaderMap;
    /// Sends one request (no retries: the runner retries).
    fn generate<'a>(
        &'a self,
        http: &'a Http,
        req: &'a GenRequest,
    ) -> BoxFuture<'a, Result<GenResponse, ApiError>>;
}

/// An environment variable, empty treated as unset.
pub(crate) fn env_key(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty()))
}

/// The base URL and API key of a hosted provider. The key (first set of `key_names`) is
/// required only against the provider's own service: a `--base-url` server may need none.
pub(crate) fn endpoint(
    base_url: Option<&str>,
    default_base: &str,
    key_names: &[&str],
    missing: &str,
) -> anyhow::Result<(String, Option<String>)> {
    let key = env_key(key_names);
    let base = base_url.unwrap_or(default_base).to_string();
    if key.is_none() && base == default_base {
        anyhow::bail!("{missing}");
    }
    Ok((base, key))
}

pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

pub(crate) fn protocol(url: &str, message: impl Into<String>) -> ApiError {
    ApiError::Protocol {
        url: url.to_string(),
        message: message.into(),
    }
}

pub(crate) fn u64_at(v: &Value, ptr: &str) -> u64 {
    v.pointer(ptr).and_then(Value::as_u64).unwrap_or(0)
}

/// Builds the provider for `opts`; `base_url` overrides the backend's default address.
pub fn make_provider(
    opts: &GenerateOptions,
    base_url: Option<&str>,
) -> anyhow::Result<Box<dyn Provider>> {
    let sampling = Sampling {
        temperature: opts.temperature.clone(),
        top_p: opts.top_p,
        max_tokens: opts.max_tokens,
        seed: opts.seed,
        greedy: opts.greedy,
    };
    Ok(match opts.backend {
        Backend::OpenAi | Backend::LlamaCpp | Backend::Vllm => {
            Box::new(OpenAi::new(opts, sampling, base_url)?)
        }
        // The router's OpenAI-compatible endpoint (`…/v1`) serves chat models.
        Backend::HfInference
            if base_url.is_some_and(|u| u.trim_end_matches('/').ends_with("/v1")) =>
        {
            Box::new(OpenAi::new(opts, sampling, base_url)?)
        }
        Backend::HfInference => Box::new(HfInference::new(opts, sampling, base_url)?),
        Backend::Anthropic => Box::new(Anthropic::new(opts, sampling, base_url)?),
        Backend::Google => Box::new(Google::new(opts, sampling, base_url)?),
        Backend::Mistral => Box::new(Mistral::new(opts, sampling, base_url)?),
        Backend::Ollama => Box::new(Ollama::new(opts, sampling, base_url)),
    })
}
