//! Mistral's chat API (OpenAI-shaped). Unlike the original, temperature is sent.

use bcb_envvars::EnvVars;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use super::openai::parse_choices;
use super::{GenRequest, GenResponse, Hosted, Provider, Service};
use crate::error::ApiError;

pub struct Mistral(pub(super) Hosted);

impl Provider for Mistral {
    fn request(&self, req: &GenRequest) -> (String, Value) {
        let user = req.prompt.text();
        let mut body = json!({
            "model": self.0.model,
            "messages": [{"role": "user", "content": user}],
            "max_tokens": self.0.sampling.max_tokens,
            "temperature": self.0.sampling.temperature_json(),
        });
        if let Some(p) = self.0.sampling.top_p {
            body["top_p"] = json!(p);
        }
        if let Some(s) = self.0.sampling.seed {
            body["random_seed"] = json!(s);
        }
        (self.0.url("chat/completions"), body)
    }

    fn headers(&self) -> HeaderMap {
        self.0.bearer()
    }

    fn parse(&self, url: &str, _: &GenRequest, v: &Value) -> Result<GenResponse, ApiError> {
        parse_choices(url, v, false)
    }
}

pub(super) const SERVICE: Service = Service {
    base: "https://api.mistral.ai/v1",
    keys: &[EnvVars::MISTRAL_API_KEY],
    missing: "MISTRAL_API_KEY is not set",
};
