//! Code generation for BigCodeBench: one interface over OpenAI (and every compatible server),
//! Anthropic, Google Gemini, Mistral, Ollama and local GGUF models served by llama.cpp.
//!
//! Prompts, stop words and output file names follow the original harness (bigcodebench 0.2.5).
//! Unlike it, requests run concurrently under request/token rate limits, errors are retried
//! by class with exponential backoff and `Retry-After`, and every sample is appended to the
//! output file as soon as it arrives, so a re-run generates only what is missing.

pub mod error;
pub mod http;
pub mod local;
pub mod naming;
pub mod options;
pub mod prompt;
pub mod providers;
mod runner;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;

pub use error::{ApiError, ErrorClass};
pub use options::{
    Backend, ConfigFile, GenerateOptions, LocalServerOptions, ModelConfig, Temperature,
};
pub use runner::{build_prompt, run_codegen, Failure, Outcome};

/// Runs generation and returns the samples file, or an error if any task still lacks samples
/// (what `bcb evaluate` wants before it evaluates).
pub fn generate_samples(
    opts: &GenerateOptions,
    dataset: &bcb_dataset::Dataset,
) -> anyhow::Result<std::path::PathBuf> {
    let outcome = run_codegen(opts, dataset)?;
    eprintln!("{}", outcome.summary());
    if !outcome.is_complete() {
        anyhow::bail!(
            "generation is incomplete ({} tasks miss samples); {} keeps what was generated",
            outcome.failures.len(),
            outcome.path.display()
        );
    }
    Ok(outcome.path)
}
