//! Google Gemini `generateContent`, with the original's settings (candidate count, no
//! max tokens for "-thinking-" models, four safety categories off).

use bcb_envvars::EnvVars;
use futures::future::BoxFuture;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use super::{
    endpoint, join_url, protocol, u64_at, GenRequest, GenResponse, Prompt, Provider, Sampling,
    Usage,
};
use crate::error::ApiError;
use crate::http::{secret_header, Http};
use crate::options::GenerateOptions;

pub const DEFAULT_BASE: &str = "https://generativelanguage.googleapis.com";
const SAFETY: [&str; 4] = [
    "HARM_CATEGORY_DANGEROUS_CONTENT",
    "HARM_CATEGORY_SEXUALLY_EXPLICIT",
    "HARM_CATEGORY_HATE_SPEECH",
    "HARM_CATEGORY_HARASSMENT",
];

pub struct Google {
    base: String,
    key: Option<String>,
    model: String,
    sampling: Sampling,
}

impl Google {
    pub fn new(
        opts: &GenerateOptions,
        sampling: Sampling,
        base_url: Option<&str>,
    ) -> anyhow::Result<Self> {
        let (base, key) = endpoint(
            base_url,
            DEFAULT_BASE,
            &[EnvVars::GOOGLE_API_KEY, EnvVars::GEMINI_API_KEY],
            "GOOGLE_API_KEY is not set",
        )?;
        Ok(Google {
            base,
            key,
            model: opts.model.clone(),
            sampling,
        })
    }
}

impl Provider for Google {
    fn max_n(&self) -> u32 {
        8
    }

    fn request(&self, req: &GenRequest) -> (String, Value) {
        let text = match &req.prompt {
            Prompt::Chat { user, .. } => user.as_str(),
            Prompt::Raw(p) => p.as_str(),
        };
        let mut config = json!({
            "candidateCount": req.n,
            "temperature": self.sampling.temperature_json(),
        });
        if !self.model.contains("-thinking-") {
            config["maxOutputTokens"] = json!(self.sampling.max_tokens);
        }
        if let Some(p) = self.sampling.top_p {
            config["topP"] = json!(p);
        }
        if let Some(s) = self.sampling.seed {
            config["seed"] = json!(s);
        }
        let safety: Vec<Value> = SAFETY
            .iter()
            .map(|c| json!({"category": c, "threshold": "BLOCK_NONE"}))
            .collect();
        let body = json!({
            "contents": [{"role": "user", "parts": [{"text": text}]}],
            "generationConfig": config,
            "safetySettings": safety,
        });
        let model = self.model.strip_prefix("models/").unwrap_or(&self.model);
        (
            join_url(
                &self.base,
                &format!("v1beta/models/{model}:generateContent"),
            ),
            body,
        )
    }

    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(k) = &self.key {
            h.insert("x-goog-api-key", secret_header(k));
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
            let cands = v
                .get("candidates")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    protocol(
                        &url,
                        format!(
                            "no candidates (prompt feedback: {})",
                            v.get("promptFeedback").cloned().unwrap_or(Value::Null)
                        ),
                    )
                })?;
            // A blocked candidate has no parts: an empty sample, as in the original.
            let outputs = cands
                .iter()
                .map(|c| {
                    c.pointer("/content/parts")
                        .and_then(Value::as_array)
                        .map(|parts| {
                            parts
                                .iter()
                                .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
                                .filter_map(|p| p.get("text").and_then(Value::as_str))
                                .collect::<String>()
                        })
                        .unwrap_or_default()
                })
                .collect();
            let usage = v.get("usageMetadata").map(|_| Usage {
                input_tokens: u64_at(&v, "/usageMetadata/promptTokenCount"),
                output_tokens: u64_at(&v, "/usageMetadata/candidatesTokenCount"),
            });
            Ok(GenResponse { outputs, usage })
        })
    }
}
