//! The Hugging Face Inference API's text generation, as the original's `hf-inference` backend
//! calls it (`InferenceClient(provider="hf-inference").text_generation`): the raw prompt text
//! (the chat user message, no chat template), greedy, one output per request.

use bcb_envvars::EnvVars;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use super::{protocol, GenRequest, GenResponse, Hosted, Provider, Service};
use crate::error::ApiError;

/// The original reads `HF_INFERENCE_API_KEY`; `HF_TOKEN` is the hub's usual variable.
pub const KEY_NAMES: [&str; 2] = [EnvVars::HF_INFERENCE_API_KEY, EnvVars::HF_TOKEN];

pub struct HfInference(pub(super) Hosted);

impl Provider for HfInference {
    fn request(&self, req: &GenRequest) -> (String, Value) {
        let prompt = req.prompt.text();
        let mut parameters = json!({
            "max_new_tokens": self.0.sampling.max_tokens,
            "return_full_text": false,
            "do_sample": !self.0.sampling.greedy,
        });
        // The original always sends do_sample=false; sampling runs get their temperature here.
        if !self.0.sampling.greedy {
            parameters["temperature"] = self.0.sampling.temperature_json();
            if let Some(p) = self.0.sampling.top_p {
                parameters["top_p"] = json!(p);
            }
        }
        if let Some(s) = self.0.sampling.seed {
            parameters["seed"] = json!(s);
        }
        let url = self.0.url(&format!("models/{}", self.0.model));
        (url, json!({"inputs": prompt, "parameters": parameters}))
    }

    fn headers(&self) -> HeaderMap {
        self.0.bearer()
    }

    fn parse(&self, url: &str, _: &GenRequest, v: &Value) -> Result<GenResponse, ApiError> {
        // `[{"generated_text": ...}]` (or the bare object from some deployments).
        let item = match v {
            Value::Array(a) => a.first().unwrap_or(&Value::Null),
            other => other,
        };
        let text = item
            .get("generated_text")
            .and_then(Value::as_str)
            .ok_or_else(|| protocol(url, "no `generated_text` in the answer"))?;
        Ok(GenResponse {
            outputs: vec![text.to_string()],
            usage: None,
        })
    }
}

/// Where `huggingface_hub` sends `provider="hf-inference"` requests.
pub(super) const SERVICE: Service = Service {
    base: "https://router.huggingface.co/hf-inference",
    keys: &KEY_NAMES,
    missing: "HF_INFERENCE_API_KEY (or HF_TOKEN) is not set: export a Hugging Face token with Inference permission",
};
