//! Code generation for BigCodeBench: one interface over vLLM (`vllm serve` started for the
//! run), the Hugging Face Inference API, OpenAI (and every compatible server), Anthropic,
//! Google Gemini, Mistral, Ollama and local GGUF models served by llama.cpp.
//!
//! Prompts, stop words and output file names follow the original harness (bigcodebench 0.2.5).
//! Unlike it, requests run concurrently under request/token rate limits, errors are retried
//! by class with exponential backoff and `Retry-After`, a run stops after a few connection
//! failures in a row, every sample is appended to a journal as soon as it arrives (so a
//! re-run generates only what is missing), and the final samples file is written at the end
//! in dataset order with Python's `json.dumps` formatting. Progress goes to a
//! [`Reporter`]; the library never prints.

pub mod error;
pub mod http;
pub mod local;
pub mod naming;
pub mod options;
pub mod progress;
pub mod prompt;
pub mod providers;
mod runner;
pub mod samples_file;
pub mod serve;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
mod unit;

pub use error::{ApiError, ErrorClass};
pub use options::{
    Backend, ConfigFile, GenerateOptions, LocalServerOptions, ModelConfig, Temperature, VllmOptions,
};
pub use progress::{Event, Reporter, Snapshot};
pub use runner::{run_codegen, run_codegen_with, Outcome};
pub use unit::{build_prompt, Failure};

/// Runs generation and returns the samples file, or an error if any task still lacks samples
/// (what `bcb evaluate` wants before it evaluates). The error carries the run's summary.
pub fn generate_samples(
    opts: &GenerateOptions,
    dataset: &bcb_dataset::Dataset,
) -> anyhow::Result<std::path::PathBuf> {
    generate_samples_with(opts, dataset, std::sync::Arc::new(progress::Quiet))
}

/// [`generate_samples`], telling `reporter` what happens.
pub fn generate_samples_with(
    opts: &GenerateOptions,
    dataset: &bcb_dataset::Dataset,
    reporter: std::sync::Arc<dyn Reporter>,
) -> anyhow::Result<std::path::PathBuf> {
    let outcome = run_codegen_with(opts, dataset, reporter)?;
    if !outcome.is_complete() {
        anyhow::bail!(
            "{}\ngeneration is incomplete ({} tasks miss samples); {} keeps what was generated",
            outcome.summary(),
            outcome.failures.len(),
            outcome.path.display()
        );
    }
    tracing::info!("{}", outcome.summary());
    Ok(outcome.path)
}
