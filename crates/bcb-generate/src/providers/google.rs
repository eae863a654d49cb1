//! Google Gemini `generateContent`, with the original's settings (candidate count, no
//! max tokens for "-thinking-" models, four safety categories off).

use bcb_envvars::EnvVars;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use super::{protocol, u64_at, GenRequest, GenResponse, Hosted, Provider, Service, Usage};
use crate::error::ApiError;

pub(super) const SERVICE: Service = Service {
    base: "https://generativelanguage.googleapis.com",
    keys: &[EnvVars::GOOGLE_API_KEY, EnvVars::GEMINI_API_KEY],
    missing: "GOOGLE_API_KEY is not set",
};

const SAFETY: [&str; 4] = [
    "HARM_CATEGORY_DANGEROUS_CONTENT",
    "HARM_CATEGORY_SEXUALLY_EXPLICIT",
    "HARM_CATEGORY_HATE_SPEECH",
    "HARM_CATEGORY_HARASSMENT",
];

pub struct Google(pub(super) Hosted);

impl Provider for Google {
    fn max_n(&self) -> u32 {
        8
    }

    fn request(&self, req: &GenRequest) -> (String, Value) {
        let text = req.prompt.text();
        let mut config = json!({
            "candidateCount": req.n,
            "temperature": self.0.sampling.temperature_json(),
        });
        if !self.0.model.contains("-thinking-") {
            config["maxOutputTokens"] = json!(self.0.sampling.max_tokens);
        }
        if let Some(p) = self.0.sampling.top_p {
            config["topP"] = json!(p);
        }
        if let Some(s) = self.0.sampling.seed {
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
        let model = self
            .0
            .model
            .strip_prefix("models/")
            .unwrap_or(&self.0.model);
        (
            self.0
                .url(&format!("v1beta/models/{model}:generateContent")),
            body,
        )
    }

    fn headers(&self) -> HeaderMap {
        self.0.key_header("x-goog-api-key")
    }

    fn parse(&self, url: &str, _: &GenRequest, v: &Value) -> Result<GenResponse, ApiError> {
        let cands = v
            .get("candidates")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                protocol(
                    url,
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
            input_tokens: u64_at(v, "/usageMetadata/promptTokenCount"),
            output_tokens: u64_at(v, "/usageMetadata/candidatesTokenCount"),
        });
        Ok(GenResponse { outputs, usage })
    }
}
