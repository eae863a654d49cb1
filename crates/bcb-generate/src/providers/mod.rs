//! One interface over every provider: a request is a prompt and a sample count, the answer
//! is the generated texts plus token usage when the server reports it.

mod anthropic;
mod google;
mod hf_inference;
mod mistral;
mod ollama;
mod openai;

use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, AUTHORIZATION};
use serde_json::Value;

use crate::error::ApiError;
use crate::http::{secret_header, Http};
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

impl Prompt {
    /// The user message and the partial answer to continue (a raw prompt has none).
    pub fn parts(&self) -> (&str, Option<&str>) {
        match self {
            Prompt::Chat { user, prefill } => (user, prefill.as_deref()),
            Prompt::Raw(p) => (p, None),
        }
    }

    /// The user message alone, for providers that send no prefill.
    pub fn text(&self) -> &str {
        self.parts().0
    }
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
    /// Most samples one request can ask for: one unless the API takes a count.
    fn max_n(&self) -> u32 {
        1
    }
    /// The URL and JSON body of a request (pure; tests compare it with the original's).
    fn request(&self, req: &GenRequest) -> (String, Value);
    /// Headers, including credentials (never logged).
    fn headers(&self) -> HeaderMap;
    /// Reads the provider's whole JSON answer to `req`, sent to `url`.
    fn parse(&self, url: &str, req: &GenRequest, answer: &Value) -> Result<GenResponse, ApiError>;
    /// Sends one request (no retries: the runner retries): by default one JSON POST whose
    /// answer [`Provider::parse`] reads.
    fn generate<'a>(
        &'a self,
        http: &'a Http,
        req: &'a GenRequest,
    ) -> BoxFuture<'a, Result<GenResponse, ApiError>> {
        Box::pin(async move {
            let (url, body) = self.request(req);
            let answer = http.post_json(&url, self.headers(), &body).await?;
            self.parse(&url, req, &answer)
        })
    }
}

/// Where a hosted provider lives and which environment variables hold its key.
pub(crate) struct Service {
    pub base: &'static str,
    pub keys: &'static [&'static str],
    /// The error when no key is set and the run talks to `base`.
    pub missing: &'static str,
}

/// What a hosted provider holds: its base URL, its key, the model and the sampling.
pub(crate) struct Hosted {
    pub base: String,
    pub key: Option<String>,
    pub model: String,
    pub sampling: Sampling,
}

impl Hosted {
    /// `base_url` overrides the service's address. The key (first set of `service.keys`) is
    /// required only against the service itself: a `--base-url` server may need none.
    pub fn new(
        opts: &GenerateOptions,
        sampling: Sampling,
        base_url: Option<&str>,
        service: &Service,
    ) -> anyhow::Result<Self> {
        let key = env_key(service.keys);
        let base = base_url.unwrap_or(service.base).to_string();
        if key.is_none() && base == service.base {
            anyhow::bail!("{}", service.missing);
        }
        Ok(Hosted {
            base,
            key,
            model: opts.model.clone(),
            sampling,
        })
    }

    /// `path` below the base URL.
    pub fn url(&self, path: &str) -> String {
        join_url(&self.base, path)
    }

    /// The key in a header of its own (`x-api-key`, `x-goog-api-key`), when there is one.
    pub fn key_header(&self, name: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(k) = &self.key {
            h.insert(name, secret_header(k));
        }
        h
    }

    /// The key as `Authorization: Bearer …`, when there is one.
    pub fn bearer(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(k) = &self.key {
            h.insert(AUTHORIZATION, secret_header(&format!("Bearer {k}")));
        }
        h
    }
}

/// An environment variable, empty treated as unset.
fn env_key(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty()))
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
    let hosted = |service: &Service| Hosted::new(opts, sampling.clone(), base_url, service);
    Ok(match opts.backend {
        Backend::OpenAi | Backend::LlamaCpp | Backend::Vllm => {
            Box::new(OpenAi::new(opts, hosted(&openai::SERVICE)?))
        }
        // The router's OpenAI-compatible endpoint (`…/v1`) serves chat models.
        Backend::HfInference
            if base_url.is_some_and(|u| u.trim_end_matches('/').ends_with("/v1")) =>
        {
            Box::new(OpenAi::new(opts, hosted(&openai::HF_ROUTER)?))
        }
        Backend::HfInference => Box::new(HfInference(hosted(&hf_inference::SERVICE)?)),
        Backend::Anthropic => Box::new(Anthropic::new(opts, hosted(&anthropic::SERVICE)?)),
        Backend::Google => Box::new(Google(hosted(&google::SERVICE)?)),
        Backend::Mistral => Box::new(Mistral(hosted(&mistral::SERVICE)?)),
        Backend::Ollama => Box::new(Ollama::new(opts, sampling, base_url)),
    })
}
