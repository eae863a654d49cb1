//! OpenAI Chat Completions and (for direct completion) Completions; also every
//! OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp, LM Studio, Ollama's /v1).

use bcb_envvars::EnvVars;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use super::{protocol, u64_at, GenRequest, GenResponse, Hosted, Prompt, Provider, Service, Usage};
use crate::error::ApiError;
use crate::options::{Backend, GenerateOptions};
use crate::prompt::{direct_completion_stops, EOS, PREFILL_STOP};

pub(super) const SERVICE: Service = Service {
    base: "https://api.openai.com/v1",
    keys: &[EnvVars::OPENAI_API_KEY],
    missing: "OPENAI_API_KEY is not set: export it, or pass --base-url for a local OpenAI-compatible server",
};

/// The Hugging Face router's OpenAI-compatible endpoint, reached with a Hugging Face token.
pub(super) const HF_ROUTER: Service = Service {
    base: SERVICE.base,
    keys: &super::hf_inference::KEY_NAMES,
    missing: "HF_INFERENCE_API_KEY (or HF_TOKEN) is not set",
};

/// Names the original sends `reasoning_effort` for instead of sampling settings.
pub fn is_openai_reasoning_model(model: &str) -> bool {
    model.starts_with("o1-") || model.starts_with("o3-") || model.ends_with("-reasoner")
}

pub struct OpenAi {
    api: Hosted,
    reasoning_effort: Option<String>,
    reasoning_model: bool,
    max_n: u32,
    /// A vLLM-compatible server (not api.openai.com): a prefilled assistant turn is sent with
    /// `continue_final_message`, which vLLM and SGLang need to continue it.
    continues_prefill: bool,
    /// `--backend vllm`: the original's vLLM sampling (EOS stops, top_p 1.0 when greedy,
    /// special tokens kept, tabs as four spaces).
    vllm: bool,
}

impl OpenAi {
    pub(super) fn new(opts: &GenerateOptions, api: Hosted) -> Self {
        let reasoning_model = is_openai_reasoning_model(&opts.model);
        let reasoning_effort = opts
            .reasoning_effort
            .clone()
            .or_else(|| reasoning_model.then(|| "medium".to_string()));
        // The original asks o1/o3/deepseek models for one sample per request, in parallel.
        let one_per_request = opts.model.starts_with("o1-")
            || opts.model.starts_with("o3-")
            || opts.model.starts_with("deepseek");
        let max_n = if one_per_request {
            1
        } else if opts.backend == Backend::LlamaCpp {
            // llama.cpp serves `n` choices from its parallel slots.
            opts.concurrency.unwrap_or(2).max(1) as u32
        } else {
            128
        };
        OpenAi {
            continues_prefill: api.base != SERVICE.base,
            vllm: opts.backend == Backend::Vllm,
            api,
            reasoning_effort,
            reasoning_model,
            max_n,
        }
    }

    fn chat_body(&self, user: &str, prefill: Option<&str>, n: u32) -> Value {
        let mut messages = vec![json!({"role": "user", "content": user})];
        if let Some(p) = prefill {
            messages.push(json!({"role": "assistant", "content": p}));
        }
        let mut body = json!({"model": self.api.model, "messages": messages, "n": n});
        let obj = body.as_object_mut().expect("object");
        if self.vllm {
            obj.insert("top_p".into(), json!(self.vllm_top_p()));
            obj.insert("max_tokens".into(), json!(self.api.sampling.max_tokens));
            obj.insert("temperature".into(), self.api.sampling.temperature_json());
            obj.insert("skip_special_tokens".into(), json!(false));
        } else if self.reasoning_model {
            obj.insert("reasoning_effort".into(), json!(self.reasoning_effort));
        } else {
            obj.insert(
                "top_p".into(),
                json!(self.api.sampling.top_p.unwrap_or(0.95)),
            );
            obj.insert(
                "max_completion_tokens".into(),
                json!(self.api.sampling.max_tokens),
            );
            obj.insert("temperature".into(), self.api.sampling.temperature_json());
            if let Some(e) = &self.reasoning_effort {
                obj.insert("reasoning_effort".into(), json!(e));
            }
        }
        if prefill.is_some() {
            let stops: Vec<&str> = EOS.iter().copied().chain([PREFILL_STOP]).collect();
            obj.insert("stop".into(), json!(stops));
            if self.continues_prefill {
                // Continue the assistant turn instead of opening a new one after it.
                obj.insert("continue_final_message".into(), json!(true));
                obj.insert("add_generation_prompt".into(), json!(false));
            }
        } else if self.vllm {
            obj.insert("stop".into(), json!(EOS));
        }
        if let Some(seed) = self.api.sampling.seed {
            obj.insert("seed".into(), json!(seed));
        }
        body
    }

    /// The original's vLLM top_p: 1.0 when greedy, else 0.95, unless one is asked for.
    fn vllm_top_p(&self) -> f64 {
        let s = &self.api.sampling;
        s.top_p.unwrap_or(if s.greedy { 1.0 } else { 0.95 })
    }

    /// Like the original's vLLM path for base models: top_p 0.95 when sampling, EOS + extra stops.
    fn completion_body(&self, prompt: &str, n: u32) -> Value {
        let mut body = json!({
            "model": self.api.model,
            "prompt": prompt,
            "n": n,
            "max_tokens": self.api.sampling.max_tokens,
            "temperature": self.api.sampling.temperature_json(),
            "top_p": self.vllm_top_p(),
            "stop": direct_completion_stops(),
        });
        if let Some(seed) = self.api.sampling.seed {
            body["seed"] = json!(seed);
        }
        body
    }
}

impl Provider for OpenAi {
    fn max_n(&self) -> u32 {
        self.max_n
    }

    fn request(&self, req: &GenRequest) -> (String, Value) {
        match &req.prompt {
            Prompt::Chat { user, prefill } => (
                self.api.url("chat/completions"),
                self.chat_body(user, prefill.as_deref(), req.n),
            ),
            Prompt::Raw(p) => (self.api.url("completions"), self.completion_body(p, req.n)),
        }
    }

    fn headers(&self) -> HeaderMap {
        self.api.bearer()
    }

    fn parse(&self, url: &str, req: &GenRequest, v: &Value) -> Result<GenResponse, ApiError> {
        let raw = matches!(req.prompt, Prompt::Raw(_));
        let mut resp = parse_choices(url, v, raw)?;
        if self.vllm {
            // The original's vLLM decoder turns tabs into four spaces in every output.
            for o in &mut resp.outputs {
                *o = o.replace('\t', "    ");
            }
        }
        Ok(resp)
    }
}

/// `choices[].message.content` (chat) or `choices[].text` (completions), in index order.
pub(crate) fn parse_choices(url: &str, v: &Value, raw: bool) -> Result<GenResponse, ApiError> {
    let choices = v
        .get("choices")
        .and_then(Value::as_array)
        .ok_or_else(|| protocol(url, "no `choices` array in the answer"))?;
    let mut indexed: Vec<(u64, String)> = Vec::with_capacity(choices.len());
    for (i, c) in choices.iter().enumerate() {
        let text = if raw {
            // vLLM path of the original: tabs become four spaces.
            c.get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .replace('\t', "    ")
        } else {
            c.pointer("/message/content")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let idx = c.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
        indexed.push((idx, text));
    }
    indexed.sort_by_key(|(i, _)| *i);
    let usage = v.get("usage").filter(|u| u.is_object()).map(|_| Usage {
        input_tokens: u64_at(v, "/usage/prompt_tokens"),
        output_tokens: u64_at(v, "/usage/completion_tokens"),
    });
    Ok(GenResponse {
        outputs: indexed.into_iter().map(|(_, t)| t).collect(),
        usage,
    })
}
