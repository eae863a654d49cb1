//! Mistral's chat API (OpenAI-shaped). Unlike the original, temperature is sent.

use bcb_envvars::EnvVars;
use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, AUTHORIZATION};
use serde_json::{json, Value};

use super::openai::parse_choices;
use super::{endpoint, join_url, GenRequest, GenResponse, Prompt, Provider, Sampling};
use crate::error::ApiError;
use crate::http::{secret_header, Http};
use crate::options::GenerateOptions;

pub const DEFAULT_BASE: &str = "https://api.mistral.ai/v1";

pub struct Mistral {
    base: String,
    key: String,
    model: String,
    sampling: Sampling,
}

impl Mistral {
    pub fn new(
        opts: &GenerateOptions,
        sampling: Sampling,
        base_url: Option<&str>,
    ) -> anyhow::Result<Self> {
        let (base, key) = endpoint(
            base_url,
            DEFAULT_BASE,
            &[EnvVars::MISTRAL_API_KEY],
            "MISTRAL_API_KEY is not set",
        )?;
        let key = key.unwrap_or_default();
        Ok(Mistral {
            base,
            key,
            model: opts.model.clone(),
            sampling,
        })
    }
}

impl Provider for Mistral {
    fn max_n(&self) -> u32 {
        1
    }

    fn request(&self, req: &GenRequest) -> (String, Value) {
        let user = match &req.prompt {
            Prompt::Chat { user, .. } => user.as_str(),
            Prompt::Raw(p) => p.as_str(),
        };
        let mut body = json!({
            "model": self.model,
            "messages": [{"role": "user", "content": user}],
            "max_tokens": self.sampling.max_tokens,
            "temperature": self.sampling.temperature_json(),
        });
        if let Some(p) = self.sampling.top_p {
            body["top_p"] = json!(p);
        }
        if let Some(s) = self.sampling.seed {
            body["random_seed"] = json!(s);
        }
        (join_url(&self.base, "chat/completions"), body)
    }

    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        if !self.key.is_empty() {
            h.insert(
                AUTHORIZATION,
                secret_header(&format!("Bearer {}", self.key)),
            );
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
            parse_choices(&url, &v, false)
        })
    }
}
