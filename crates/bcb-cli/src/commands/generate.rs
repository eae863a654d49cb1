//! `bcb generate`: samples from a model for every task (or a range), resumable.

use bcb_envvars::EnvVars;
#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use bcb_dataset::Split;
use bcb_generate::{Backend, ConfigFile, GenerateOptions, Temperature};

use crate::common::DatasetArgs;
use crate::generate_progress::{mode, CliReporter};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Prompt flavour: `complete` (docstring) or `instruct` (natural language).
    #[arg(long)]
    pub split: Split,
    #[command(flatten)]
    pub model: Box<ModelArgs>,
    /// Seconds between progress lines when stderr is not a terminal.
    #[arg(long, value_name = "SECS", default_value = "15", value_parser = crate::common::parse_interval)]
    pub progress_interval: Duration,
}

/// The model and sampling flags; `bcb evaluate` flattens these to generate before evaluating.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ModelArgs {
    /// API model name, a section of --config, or a local `.gguf` file (served by llama.cpp).
    #[arg(long)]
    pub model: Option<String>,
    /// vllm (starts `vllm serve`), hf-inference, openai, anthropic, google, mistral, ollama or
    /// llamacpp (default: openai, or llamacpp for a .gguf; the original's default is vllm).
    #[arg(long)]
    pub backend: Option<String>,
    /// Address of an OpenAI-compatible (…/v1), Anthropic, Gemini, Mistral or Ollama server.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// TOML file with `[defaults]` and `[models.NAME]` parameter sets; flags override it.
    #[arg(long, value_name = "FILE", env = EnvVars::BCB_GENERATE_CONFIG)]
    pub config: Option<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "bcb_results")]
    pub root: PathBuf,
    /// Model revision; only used in the file name, as in the original.
    #[arg(long, default_value = "main")]
    pub revision: String,
    /// Samples per task.
    #[arg(long)]
    pub n_samples: Option<u32>,
    /// Sampling temperature (0 with one sample = greedy).
    #[arg(long)]
    pub temperature: Option<String>,
    /// Nucleus sampling (default: 0.95 for OpenAI chat as in the original, else the server's).
    #[arg(long)]
    pub top_p: Option<f64>,
    /// Most new tokens per sample.
    #[arg(long, alias = "max-new-tokens")]
    pub max_tokens: Option<u32>,
    /// Sampling seed, for servers that take one.
    #[arg(long)]
    pub seed: Option<u64>,
    /// One sample per task at temperature 0.
    #[arg(long)]
    pub greedy: bool,
    /// OpenAI `reasoning_effort` (low, medium, high); default medium for o1-/o3-/-reasoner models.
    #[arg(long)]
    pub reasoning_effort: Option<String>,
    /// Anthropic extended-thinking token budget (0 = off).
    #[arg(long)]
    pub reasoning_budget: Option<u32>,
    /// Anthropic beta header sent with thinking.
    #[arg(long)]
    pub reasoning_beta: Option<String>,
    /// Text before the task in the user message.
    #[arg(long)]
    pub instruction_prefix: Option<String>,
    /// Text that starts the answer when prefilling.
    #[arg(long)]
    pub response_prefix: Option<String>,
    /// Base models: send the raw prompt to a completion endpoint (complete split only).
    #[arg(long)]
    pub direct_completion: bool,
    /// Strip leading/trailing newlines from the task prompt.
    #[arg(long)]
    pub strip_newlines: bool,
    /// Prefill the answer with the response prefix and an open python fence (Anthropic,
    /// OpenAI-compatible local servers, Ollama).
    #[arg(long)]
    pub prefill: bool,
    /// Add `--skip_prefill` to the file name, as the original does.
    #[arg(long)]
    pub skip_prefill: bool,
    /// Start over: delete the samples file first.
    #[arg(long)]
    pub no_resume: bool,
    /// Kept for compatibility: resuming is the default.
    #[arg(long, hide = true)]
    pub resume: bool,
    /// Only tasks lo..hi (dataset order, hi exclusive), e.g. `0-10`.
    #[arg(long, value_name = "LO-HI")]
    pub id_range: Option<String>,
    /// Simultaneous requests (default by backend: openai 8, anthropic 4, ollama 1, llamacpp 2).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Requests per minute at most.
    #[arg(long)]
    pub rpm: Option<u32>,
    /// Tokens per minute at most (prompt estimate + max tokens, reserved before each request).
    #[arg(long)]
    pub tpm: Option<u32>,
    /// Retries of one request on 429, 5xx, timeouts and dropped connections.
    #[arg(long)]
    pub max_retries: Option<usize>,
    /// Seconds before a request is abandoned (and retried).
    #[arg(long)]
    pub request_timeout: Option<f64>,
    /// USD per million input tokens (for the running cost).
    #[arg(long)]
    pub price_input: Option<f64>,
    /// USD per million output tokens.
    #[arg(long)]
    pub price_output: Option<f64>,
    /// Python with `xllamacpp` for local .gguf models.
    #[arg(long, env = EnvVars::BCB_LLM_PYTHON, value_name = "PYTHON")]
    pub llm_python: Option<PathBuf>,
    /// Context tokens per slot of the local server.
    #[arg(long, default_value_t = 4096)]
    pub llm_ctx: u32,
    /// CPU threads of the local server.
    #[arg(long, default_value_t = 1)]
    pub llm_threads: u32,
    /// Jinja chat template for a GGUF without one (`gemma` for the built-in Gemma template).
    #[arg(long, value_name = "FILE|gemma")]
    pub chat_template: Option<String>,
    /// vllm: tensor-parallel GPUs (`VLLM_N_GPUS` overrides it, as in the original).
    #[arg(long, default_value_t = 1)]
    pub tp: u32,
    /// vllm: context length of the served model.
    #[arg(long, default_value_t = 12800)]
    pub max_model_len: u32,
    /// vllm: a LoRA adapter (hub id or path) served as `lora`; added to the file name.
    #[arg(long, value_name = "ADAPTER")]
    pub lora_path: Option<String>,
    /// vllm: trust the model repository's custom code.
    #[arg(long)]
    pub trust_remote_code: bool,
    /// vllm: tokenizer to use instead of the model's.
    #[arg(long)]
    pub tokenizer_name: Option<String>,
    /// vllm: accepted for compatibility; `vllm serve` has no legacy-tokenizer switch.
    #[arg(long)]
    pub tokenizer_legacy: bool,
    /// vllm: the `vllm` executable (default: `vllm` on PATH).
    #[arg(long, env = EnvVars::BCB_VLLM_BIN, value_name = "PATH")]
    pub vllm_bin: Option<PathBuf>,
    /// vllm: seconds to wait for `vllm serve` to become ready (download and load included).
    #[arg(long, default_value_t = 1800)]
    pub vllm_startup_timeout: u64,
    /// vllm: one more `vllm serve` argument (repeat for several), e.g. `--vllm-arg=--enforce-eager`.
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub vllm_arg: Vec<String>,
    /// Stop the run after this many connection failures in a row, across tasks (0 = never).
    #[arg(long, default_value_t = 6)]
    pub max_connection_failures: u32,
    /// Keep `<think>…</think>` blocks when extracting code (default: removed, as by `bcb sanitize`).
    #[arg(long)]
    pub keep_think: bool,
    /// Accepted for compatibility; samples are always written one by one.
    #[arg(long, hide = true)]
    pub bs: Option<usize>,
    /// Do not fsync each sample (benchmarks).
    #[arg(long, hide = true)]
    pub no_fsync: bool,
    /// No progress bar or progress lines (first and last lines only).
    #[arg(long)]
    pub no_progress: bool,
}

impl ModelArgs {
    /// Flags over the config file over defaults.
    pub fn options(
        &self,
        split: Split,
        subset: bcb_dataset::Subset,
    ) -> anyhow::Result<GenerateOptions> {
        let model = self
            .model
            .clone()
            .context("--model is required to generate samples")?;
        let cfg = match &self.config {
            Some(p) => ConfigFile::load(p)?.for_model(&model),
            None => Default::default(),
        };
        let api_model = cfg.model.clone().unwrap_or_else(|| model.clone());
        let is_gguf = api_model.to_ascii_lowercase().ends_with(".gguf");
        let backend: Backend = match self.backend.as_deref().or(cfg.backend.as_deref()) {
            Some(b) => b.parse().map_err(anyhow::Error::msg)?,
            None if is_gguf => Backend::LlamaCpp,
            None => Backend::OpenAi,
        };
        let mut o = GenerateOptions::new(&api_model, backend, split, subset);
        if backend == Backend::LlamaCpp {
            // The file stem names the model in the output file and on the server.
            o.model_label = std::path::Path::new(&api_model)
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or(api_model.clone());
        }
        o.base_url = self.base_url.clone().or(cfg.base_url.clone());
        o.root = self.root.clone();
        o.revision = self.revision.clone();
        o.n_samples = self.n_samples.or(cfg.n_samples).unwrap_or(1);
        o.temperature = match &self.temperature {
            Some(t) => Temperature::parse(t).map_err(anyhow::Error::msg)?,
            None => cfg
                .temperature()
                .map_err(anyhow::Error::msg)?
                .unwrap_or_else(Temperature::greedy),
        };
        o.top_p = self.top_p.or(cfg.top_p);
        o.max_tokens = self.max_tokens.or(cfg.max_tokens).unwrap_or(1280);
        o.seed = self.seed.or(cfg.seed);
        o.greedy = self.greedy || cfg.greedy.unwrap_or(false);
        o.reasoning_effort = self
            .reasoning_effort
            .clone()
            .or(cfg.reasoning_effort.clone());
        o.reasoning_budget = self.reasoning_budget.or(cfg.reasoning_budget).unwrap_or(0);
        if let Some(b) = self.reasoning_beta.clone().or(cfg.reasoning_beta.clone()) {
            o.reasoning_beta = b;
        }
        if let Some(p) = self
            .instruction_prefix
            .clone()
            .or(cfg.instruction_prefix.clone())
        {
            o.instruction_prefix = p;
        }
        if let Some(p) = self.response_prefix.clone().or(cfg.response_prefix.clone()) {
            o.response_prefix = p;
        }
        o.direct_completion = self.direct_completion || cfg.direct_completion.unwrap_or(false);
        o.prefill = self.prefill || cfg.prefill.unwrap_or(false);
        o.strip_newlines = self.strip_newlines;
        o.skip_prefill = self.skip_prefill;
        o.resume = !self.no_resume;
        o.id_range = self.id_range.as_deref().map(parse_id_range).transpose()?;
        o.concurrency = self.concurrency.or(cfg.concurrency);
        o.requests_per_minute = self.rpm.or(cfg.requests_per_minute);
        o.tokens_per_minute = self.tpm.or(cfg.tokens_per_minute);
        if let Some(r) = self.max_retries.or(cfg.max_retries) {
            o.max_retries = r;
        }
        if let Some(t) = self.request_timeout.or(cfg.request_timeout) {
            anyhow::ensure!(t > 0.0, "--request-timeout must be positive");
            o.request_timeout = Duration::from_secs_f64(t);
        }
        o.price_input = self.price_input.or(cfg.price_input);
        o.price_output = self.price_output.or(cfg.price_output);
        o.durable = !self.no_fsync;
        o.max_connection_failures = self.max_connection_failures;
        o.strip_think = !self.keep_think;
        o.vllm.tp = self.tp;
        o.vllm.max_model_len = self.max_model_len;
        o.vllm.lora_path = self.lora_path.clone();
        o.vllm.trust_remote_code = self.trust_remote_code;
        o.vllm.tokenizer_name = self.tokenizer_name.clone();
        o.vllm.tokenizer_legacy = self.tokenizer_legacy;
        if let Some(b) = &self.vllm_bin {
            o.vllm.bin = b.clone();
        }
        o.vllm.startup_timeout = Duration::from_secs(self.vllm_startup_timeout);
        o.vllm.extra_args = self.vllm_arg.clone();
        if let Some(p) = &self.llm_python {
            o.local.python = p.clone();
        }
        o.local.n_ctx = self.llm_ctx;
        o.local.threads = self.llm_threads;
        match self.chat_template.as_deref() {
            Some("gemma") => o.local.gemma_template = true,
            Some(f) => o.local.chat_template = Some(PathBuf::from(f)),
            None => {}
        }
        Ok(o)
    }
}

fn parse_id_range(s: &str) -> anyhow::Result<(usize, usize)> {
    let (lo, hi) = s
        .split_once('-')
        .with_context(|| format!("--id-range `{s}`: expected LO-HI, e.g. 0-10"))?;
    let lo: usize = lo
        .trim()
        .parse()
        .with_context(|| format!("--id-range `{s}`: bad low end"))?;
    let hi: usize = hi
        .trim()
        .parse()
        .with_context(|| format!("--id-range `{s}`: bad high end"))?;
    anyhow::ensure!(
        lo < hi,
        "--id-range `{s}`: the low end must be below the high end"
    );
    Ok((lo, hi))
}

impl ModelArgs {
    /// The progress display for this run: a bar on a terminal, plain lines in a log.
    pub fn reporter(&self, interval: Duration) -> std::sync::Arc<CliReporter> {
        CliReporter::new(mode(self.no_progress, interval))
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let opts = args.model.options(args.split, args.dataset.subset)?;
    let ds = args.dataset.spec().load()?;
    let outcome =
        bcb_generate::run_codegen_with(&opts, &ds, args.model.reporter(args.progress_interval))?;
    eprintln!("{}", outcome.summary());
    println!("{}", outcome.path.display());
    Ok(if outcome.is_complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        model: ModelArgs,
    }

    #[test]
    fn config_sets_are_selected_by_model_and_flags_override_them() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("models.toml");
        std::fs::write(
            &cfg,
            "[defaults]\nmax_tokens = 512\n\n[models.gpt4o-hot]\nmodel = \"gpt-4o\"\ntemperature = 0.8\nn_samples = 5\ntop_p = 0.9\n",
        )
        .unwrap();
        let parse = |extra: &[&str]| {
            let mut argv = vec![
                "x",
                "--model",
                "gpt4o-hot",
                "--config",
                cfg.to_str().unwrap(),
            ];
            argv.extend_from_slice(extra);
            Cli::parse_from(argv)
                .model
                .options(Split::Instruct, bcb_dataset::Subset::Hard)
                .unwrap()
        };
        let o = parse(&[]);
        assert_eq!(o.model, "gpt-4o");
        assert_eq!((o.n_samples, o.max_tokens, o.top_p), (5, 512, Some(0.9)));
        assert_eq!(
            o.target_path(),
            Path::new("bcb_results/gpt-4o--main--bigcodebench-hard-instruct--openai-0.8-5-sanitized_calibrated.jsonl")
        );
        let o = parse(&[
            "--temperature",
            "1.0",
            "--max-new-tokens",
            "64",
            "--n-samples",
            "2",
        ]);
        assert_eq!(
            (o.temperature.display.as_str(), o.max_tokens, o.n_samples),
            ("1.0", 64, 2)
        );
        let o = parse(&["--id-range", "3-7", "--backend", "anthropic", "--no-resume"]);
        assert_eq!(
            (o.id_range, o.backend, o.resume),
            (Some((3, 7)), Backend::Anthropic, false)
        );
        let bad = Cli::parse_from(["x", "--model", "m", "--id-range", "7-3"])
            .model
            .options(Split::Instruct, bcb_dataset::Subset::Hard);
        assert!(bad.unwrap_err().to_string().contains("low end"));
    }

    #[test]
    fn a_gguf_path_selects_the_local_server_and_names_the_file_by_its_stem() {
        let o = Cli::parse_from(["x", "--model", "/m/gemma-3-270m.gguf"])
            .model
            .options(Split::Complete, bcb_dataset::Subset::Full)
            .unwrap();
        assert_eq!(o.backend, Backend::LlamaCpp);
        assert_eq!(o.model_label, "gemma-3-270m");
        assert!(o.target_path().ends_with(
            "gemma-3-270m--main--bigcodebench-complete--llamacpp-0-1-sanitized_calibrated.jsonl"
        ));
    }
}
