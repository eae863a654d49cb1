//! What a generation run is asked to do, and the TOML config file of per-model settings.

use bcb_envvars::EnvVars;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use bcb_dataset::{Split, Subset};
use serde::Deserialize;

use crate::prompt::{DEFAULT_INSTRUCTION_PREFIX, DEFAULT_RESPONSE_PREFIX};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// OpenAI Chat Completions (or Completions with direct completion); any compatible server.
    OpenAi,
    Anthropic,
    Google,
    Mistral,
    /// Ollama's native API (`/api/chat`, `/api/generate`).
    Ollama,
    /// A llama.cpp server started for the run from a local GGUF file.
    LlamaCpp,
    /// `vllm serve` started for the run (the original's default backend), spoken to over its
    /// OpenAI API with the original's prompt shape.
    Vllm,
    /// The Hugging Face Inference API (text generation), as the original calls it.
    HfInference,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::OpenAi => "openai",
            Backend::Anthropic => "anthropic",
            Backend::Google => "google",
            Backend::Mistral => "mistral",
            Backend::Ollama => "ollama",
            Backend::LlamaCpp => "llamacpp",
            Backend::Vllm => "vllm",
            Backend::HfInference => "hf-inference",
        }
    }

    /// Simultaneous requests when nothing is configured.
    pub fn default_concurrency(self) -> usize {
        match self {
            Backend::OpenAi | Backend::Google | Backend::Mistral => 8,
            Backend::Anthropic => 4,
            Backend::Ollama => 1,
            Backend::LlamaCpp => 2,
            // vLLM batches continuously: many requests in flight keep it busy.
            Backend::Vllm => 32,
            Backend::HfInference => 4,
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "openai" => Backend::OpenAi,
            "anthropic" => Backend::Anthropic,
            "google" | "gemini" => Backend::Google,
            "mistral" => Backend::Mistral,
            "ollama" => Backend::Ollama,
            "llamacpp" | "llama.cpp" | "local" => Backend::LlamaCpp,
            "vllm" => Backend::Vllm,
            "hf-inference" | "hf_inference" => Backend::HfInference,
            "hf" => {
                return Err(
                    "backend `hf` runs transformers in-process, which bcb does not do: use --backend vllm \
                     (starts `vllm serve`), a .gguf file as --model (llama.cpp), or serve the model with TGI \
                     and pass --backend openai --base-url http://127.0.0.1:PORT/v1"
                        .to_string(),
                )
            }
            other => {
                return Err(format!(
                "unknown backend `{other}`: expected vllm, hf-inference, openai, anthropic, google, mistral, ollama or llamacpp"
            ))
            }
        })
    }
}

/// A temperature with the text Python's `str()` would print for it (used in file names).
#[derive(Debug, Clone, PartialEq)]
pub struct Temperature {
    pub value: f64,
    pub display: String,
}

impl Temperature {
    pub fn parse(literal: &str) -> Result<Self, String> {
        let display = crate::naming::python_number_str(literal)
            .ok_or_else(|| format!("temperature `{literal}` is not a number"))?;
        let value: f64 = literal
            .trim()
            .parse()
            .map_err(|_| format!("temperature `{literal}` is not a number"))?;
        if !(0.0..=2.0).contains(&value) {
            return Err(format!("temperature {value} is outside 0..=2"));
        }
        Ok(Temperature { value, display })
    }

    pub fn greedy() -> Self {
        Temperature {
            value: 0.0,
            display: "0".into(),
        }
    }
}

/// Everything a run needs besides the tasks. Build with [`GenerateOptions::new`] and adjust.
/// Holds no credentials: keys are read from the environment by the providers.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// API model name (or a GGUF path for [`Backend::LlamaCpp`]).
    pub model: String,
    /// Name used in the output file (defaults to `model`; a GGUF's file stem).
    pub model_label: String,
    pub backend: Backend,
    pub base_url: Option<String>,
    pub split: Split,
    pub subset: Subset,
    pub root: PathBuf,
    pub revision: String,
    pub n_samples: u32,
    pub temperature: Temperature,
    pub top_p: Option<f64>,
    pub max_tokens: u32,
    pub seed: Option<u64>,
    pub greedy: bool,
    /// Sent as `reasoning_effort` (OpenAI); `None` = only for names the original treats as reasoning models.
    pub reasoning_effort: Option<String>,
    /// Anthropic extended thinking budget; 0 = off.
    pub reasoning_budget: u32,
    pub reasoning_beta: String,
    pub instruction_prefix: String,
    pub response_prefix: String,
    pub direct_completion: bool,
    pub strip_newlines: bool,
    /// Only changes the file name, as in the original (API backends never prefill there).
    pub skip_prefill: bool,
    /// Send the response prefix as a partial assistant turn (servers that continue it).
    pub prefill: bool,
    pub resume: bool,
    /// `lo..hi` over the dataset order, as `--id-range lo-hi`.
    pub id_range: Option<(usize, usize)>,
    /// Only these task ids (in dataset order).
    pub task_ids: Option<Vec<String>>,
    pub concurrency: Option<usize>,
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u32>,
    pub max_retries: usize,
    pub request_timeout: Duration,
    /// fsync each appended sample (off only for benchmarks).
    pub durable: bool,
    /// USD per million input / output tokens, for the cost shown while running.
    pub price_input: Option<f64>,
    pub price_output: Option<f64>,
    pub local: LocalServerOptions,
    pub vllm: VllmOptions,
    /// Stop the run after this many connection failures in a row, across tasks (0 = never).
    pub max_connection_failures: u32,
    /// Remove `<think>…</think>` blocks before extracting code (the one rule that
    /// `bcb sanitize` follows too).
    pub strip_think: bool,
}

/// How `--backend vllm` starts `vllm serve` (the original's vLLM arguments).
#[derive(Debug, Clone)]
pub struct VllmOptions {
    /// The `vllm` executable (default: `vllm` on PATH).
    pub bin: PathBuf,
    /// `--tensor-parallel-size` (the original: `--tp`, overridden by `VLLM_N_GPUS`).
    pub tp: u32,
    pub max_model_len: u32,
    pub lora_path: Option<String>,
    pub trust_remote_code: bool,
    pub tokenizer_name: Option<String>,
    /// Accepted for compatibility: `vllm serve` has no switch for the slow "legacy" tokenizer.
    pub tokenizer_legacy: bool,
    /// Seconds to wait for the server to answer `/health` (downloads and loading included).
    pub startup_timeout: Duration,
    /// More `vllm serve` arguments, passed as given.
    pub extra_args: Vec<String>,
}

impl Default for VllmOptions {
    fn default() -> Self {
        VllmOptions {
            bin: PathBuf::from("vllm"),
            tp: 1,
            max_model_len: 12800,
            lora_path: None,
            trust_remote_code: false,
            tokenizer_name: None,
            tokenizer_legacy: false,
            startup_timeout: Duration::from_secs(1800),
            extra_args: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct LocalServerOptions {
    /// Python with `xllamacpp` installed.
    pub python: PathBuf,
    pub n_ctx: u32,
    pub threads: u32,
    /// Jinja chat template file for GGUFs that carry none.
    pub chat_template: Option<PathBuf>,
    /// Use a built-in Gemma template (the test model has none).
    pub gemma_template: bool,
}

impl Default for LocalServerOptions {
    fn default() -> Self {
        LocalServerOptions {
            python: std::env::var_os(EnvVars::BCB_LLM_PYTHON)
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("python3")),
            n_ctx: 4096,
            threads: 1,
            chat_template: None,
            gemma_template: false,
        }
    }
}

impl GenerateOptions {
    pub fn new(model: &str, backend: Backend, split: Split, subset: Subset) -> Self {
        GenerateOptions {
            model: model.to_string(),
            model_label: model.to_string(),
            backend,
            base_url: None,
            split,
            subset,
            root: PathBuf::from("bcb_results"),
            revision: "main".into(),
            n_samples: 1,
            temperature: Temperature::greedy(),
            top_p: None,
            max_tokens: 1280,
            seed: None,
            greedy: false,
            reasoning_effort: None,
            reasoning_budget: 0,
            reasoning_beta: "output-128k-2025-02-19".into(),
            instruction_prefix: DEFAULT_INSTRUCTION_PREFIX.into(),
            response_prefix: DEFAULT_RESPONSE_PREFIX.into(),
            direct_completion: false,
            strip_newlines: false,
            skip_prefill: false,
            prefill: false,
            resume: true,
            id_range: None,
            task_ids: None,
            concurrency: None,
            requests_per_minute: None,
            tokens_per_minute: None,
            max_retries: 8,
            request_timeout: Duration::from_secs(600),
            durable: true,
            price_input: None,
            price_output: None,
            local: LocalServerOptions::default(),
            vllm: VllmOptions::default(),
            max_connection_failures: 6,
            strip_think: true,
        }
    }

    /// The original's greedy rule: `--greedy`, or temperature 0 with one sample, means
    /// temperature 0 (printed `0`) and n = 1. Sampling needs a positive temperature.
    pub fn normalize(&mut self) -> anyhow::Result<()> {
        if self.greedy || (self.temperature.value == 0.0 && self.n_samples == 1) {
            self.greedy = true;
            self.temperature = Temperature::greedy();
            self.n_samples = 1;
        } else if self.temperature.value <= 0.0 {
            anyhow::bail!(
                "sampling {} samples per task needs a temperature above 0 (or use --greedy for one sample)",
                self.n_samples
            );
        }
        if self.backend == Backend::Vllm {
            // The original's vLLM prompt: the answer is prefilled unless --skip_prefill.
            self.prefill = !self.skip_prefill && !self.direct_completion;
        }
        if self.n_samples == 0 {
            anyhow::bail!("--n-samples must be at least 1");
        }
        if self.direct_completion && self.split == Split::Instruct {
            anyhow::bail!("direct completion (base models) works only with --split complete: instruct prompts are not code to continue");
        }
        if self.direct_completion
            && matches!(
                self.backend,
                Backend::Anthropic | Backend::Google | Backend::Mistral
            )
        {
            anyhow::bail!("the {} backend serves chat models only: --direct-completion needs an OpenAI-compatible, Ollama or local server", self.backend);
        }
        if self.prefill && matches!(self.backend, Backend::Google | Backend::Mistral) {
            anyhow::bail!(
                "the {} backend cannot continue a prefilled answer (--prefill)",
                self.backend
            );
        }
        Ok(())
    }

    /// The output file, named as the original names it.
    pub fn target_path(&self) -> PathBuf {
        let effort = self.reasoning_effort.as_deref().unwrap_or("medium");
        crate::naming::samples_path(&crate::naming::NameParts {
            root: &self.root,
            model: &self.model_label,
            backend: self.backend.as_str(),
            revision: &self.revision,
            subset: self.subset,
            split: self.split,
            temperature: &self.temperature.display,
            n_samples: self.n_samples,
            reasoning_effort: effort,
            reasoning_budget: self.reasoning_budget,
            reasoning_beta: &self.reasoning_beta,
            skip_prefill: self.skip_prefill,
            lora_path: self.vllm.lora_path.as_deref(),
        })
    }
}

/// One named parameter set in the config file (`[models.NAME]`). Every field is optional;
/// flags given on the command line win.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The API model name when the section name is an alias (e.g. `[models.gpt4o-hot]`).
    pub model: Option<String>,
    pub backend: Option<String>,
    pub base_url: Option<String>,
    pub temperature: Option<toml::Value>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    pub n_samples: Option<u32>,
    pub seed: Option<u64>,
    pub greedy: Option<bool>,
    pub reasoning_effort: Option<String>,
    pub reasoning_budget: Option<u32>,
    pub reasoning_beta: Option<String>,
    pub instruction_prefix: Option<String>,
    pub response_prefix: Option<String>,
    pub direct_completion: Option<bool>,
    pub prefill: Option<bool>,
    pub concurrency: Option<usize>,
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u32>,
    pub max_retries: Option<usize>,
    pub request_timeout: Option<f64>,
    pub price_input: Option<f64>,
    pub price_output: Option<f64>,
}

impl ModelConfig {
    pub fn temperature(&self) -> Result<Option<Temperature>, String> {
        match &self.temperature {
            None => Ok(None),
            Some(toml::Value::Integer(i)) => Temperature::parse(&i.to_string()).map(Some),
            Some(toml::Value::Float(f)) => {
                let t = Temperature {
                    value: *f,
                    display: bcb_pyjson::float_repr(*f),
                };
                Ok(Some(t))
            }
            Some(other) => Err(format!("temperature must be a number, found {other}")),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Applied to every model, under the model's own section.
    #[serde(default)]
    pub defaults: ModelConfig,
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
}

impl ConfigFile {
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read config file {}: {e}", path.display()))?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> anyhow::Result<Self> {
        toml::from_str(text).map_err(|e| {
            let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
            anyhow::anyhow!("{}:{line}:{col}: {}", path.display(), e.message())
        })
    }

    /// The merged settings for `model`: `[defaults]` overlaid by `[models.<model>]`.
    pub fn for_model(&self, model: &str) -> ModelConfig {
        let mut merged = self.defaults.clone();
        if let Some(m) = self.models.get(model) {
            overlay(&mut merged, m);
        }
        merged
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

fn overlay(base: &mut ModelConfig, top: &ModelConfig) {
    macro_rules! take {
        ($($f:ident),*) => { $( if top.$f.is_some() { base.$f = top.$f.clone(); } )* };
    }
    take!(
        model,
        backend,
        base_url,
        temperature,
        top_p,
        max_tokens,
        n_samples,
        seed,
        greedy,
        reasoning_effort,
        reasoning_budget,
        reasoning_beta,
        instruction_prefix,
        response_prefix,
        direct_completion,
        prefill,
        concurrency,
        requests_per_minute,
        tokens_per_minute,
        max_retries,
        request_timeout,
        price_input,
        price_output
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_sections_merge_and_errors_name_the_line() {
        let text = r#"
[defaults]
max_tokens = 512
concurrency = 3

[models."gpt-4o"]
temperature = 0.2
n_samples = 5

[models.hot]
model = "gpt-4o"
temperature = 1
"#;
        let cfg = ConfigFile::parse(text, Path::new("c.toml")).unwrap();
        let m = cfg.for_model("gpt-4o");
        assert_eq!(m.max_tokens, Some(512));
        assert_eq!(m.concurrency, Some(3));
        assert_eq!(m.temperature().unwrap().unwrap().display, "0.2");
        let hot = cfg.for_model("hot");
        assert_eq!(hot.model.as_deref(), Some("gpt-4o"));
        assert_eq!(hot.temperature().unwrap().unwrap().display, "1");
        let err = ConfigFile::parse("[models.x]\ntemprature = 1\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("c.toml:2:"), "{err}");
        assert!(err.contains("temprature"), "{err}");
    }

    #[test]
    fn greedy_rule() {
        let mut o = GenerateOptions::new("m", Backend::OpenAi, Split::Complete, Subset::Full);
        o.temperature = Temperature::parse("0.0").unwrap();
        o.normalize().unwrap();
        assert!(o.greedy);
        assert_eq!(o.temperature.display, "0");
        o.n_samples = 3;
        o.greedy = false;
        assert!(o.normalize().is_err());
        o.temperature = Temperature::parse("0.8").unwrap();
        o.normalize().unwrap();
        assert_eq!(o.n_samples, 3);
    }
}
