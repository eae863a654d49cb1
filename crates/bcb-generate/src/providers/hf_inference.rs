//! The Hugging Face Inference API's text generation, as the original's `hf-inference` backend
//! calls it (`InferenceClient(provider="hf-inference").text_generation`): the raw prompt text
//! (the chat user message, no chat template), greedy, one output per request.

use bcb_envvars::EnvVars;
use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, AUTHORIZATION};
use serde_json::{json, Value};

use super::{endpoint, join_url, protocol, GenRequest, GenResponse, Prompt, Provider, Sampling};
use crate::error::ApiError;
use crate::http::{secret_header, Http};
use crate::options::GenerateOptions;

/// Where `huggingface_hub` sends `provider="hf-inference"` requests.
pub const DEFAULT_BASE: &str = "https://router.huggingface.co/hf-inference";

/// The original reads `HF_INFERENCE_API_KEY`; `HF_TOKEN` is the hub's usual variable.
pub const KEY_NAMES: [&str; 2] = [EnvVars::HF_INFERENCE_API_KEY, EnvVars::HF_TOKEN];

pub struct HfInference {
    base: String,
    key: Option<String>,
    model: String,
    sampling: Sampling,
}

impl HfInference {
    pub fn new(
        opts: &GenerateOptions,
        sampling: Sampling,
        base_url: Option<&str>,
    ) -> anyhow::Result<Self> {
        let (base, key) = endpoint(
            base_url,
            DEFAULT_BASE,
            &KEY_NAMES,
            "HF_INFERENCE_API_KEY (or HF_TOKEN) is not set: export a Hugging Face token with Inference permission",
        )?;
        Ok(HfInference {
            base,
            key,
            model: opts.model.clone(),
            sampling,
        })
    }
}

impl Provider for HfInference {
    fn max_n(&self) -> u32 {
        // The API returns one text per request.
        1
    }

    fn request(&self, req: &GenRequest) -> (String, Value) {
        let prompt = match &req.prompt {
            Prompt::Chat { user, .. } => user.as_str(),
            Prompt::Raw(p) => p.as_str(),
        };
        let mut parameters = json!({
            "max_new_tokens": self.sampling.max_tokens,
            "return_full_text": false,
            "do_sample": !self.sampling.greedy,
        });
        // The original always sends do_sample=false; sampling runs get their temperature here.
        if !self.sampling.greedy {
            parameters["temperature"] = self.sampling.temperature_json();
            if let Some(p) = self.sampling.top_p {
                parameters["top_p"] = json!(p);
            }
        }
        if let Some(s) = self.sampling.seed {
            parameters["seed"] = json!(s);
        }
        let url = join_url(&self.base, &format!("models/{}", self.model));
        (url, json!({"inputs": prompt, "parameters": parameters}))
    }

    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(k) = &self.key {
            h.insert(AUTHORIZATION, secret_header(&format!("Bearer {k}")));
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
            // `[{"generated_text": ...}]` (or the bare object from some deployments).
            let item = match &v {
                Value::Array(a) => a.first().cloned().unwrap_or(Value::Null),
                other => other.clone(),
            };
            let text = item
                .get("generated_text")
                .and_then(Value::as_str)
                .ok_or_else(|| protocol(&url, "no `generated_text` in the answer"))?;
            Ok(GenResponse {
                outputs: vec![text.to_string()],
                usage: None,
            })
        })
    }
}
