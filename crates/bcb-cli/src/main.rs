//! `bcb`: BigCodeBench generation, sanitizing and evaluation.

mod commands;
mod common;
mod pyenv;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "bcb",
    version,
    about = "BigCodeBench harness: generate, sanitize, evaluate and inspect code samples"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// More log output (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Subcommand)]
enum Command {
    /// Show a dataset: counts, version, checksums, libraries.
    Dataset(commands::dataset::Args),
    /// Create or audit the Python evaluation environment.
    Env(commands::env::Args),
    /// Generate samples with a model (OpenAI, Anthropic, Google, Mistral, Ollama, local).
    Generate(commands::generate::Args),
    /// Extract the code of each sample and keep what the entry point needs.
    Sanitize(commands::sanitize::Args),
    /// Report samples that are not valid Python.
    Syncheck(commands::syncheck::Args),
    /// Run samples against their tasks' unit tests and score them (pass@k).
    Evaluate(Box<commands::evaluate::Args>),
    /// Write failing samples, tests and tracebacks to a folder for reading.
    Inspect(commands::inspect::Args),
}

fn main() -> ExitCode {
    // Die quietly on a closed pipe (`bcb dataset | head`) like other Unix tools, instead of
    // panicking inside println!.
    // SAFETY: setting a signal disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse_from(common::normalize_legacy_args(std::env::args_os()));
    common::init_logging(cli.verbose);
    let result = match cli.command {
        Command::Dataset(a) => commands::dataset::run(a),
        Command::Env(a) => commands::env::run(a),
        Command::Generate(a) => commands::generate::run(a),
        Command::Sanitize(a) => commands::sanitize::run(a),
        Command::Syncheck(a) => commands::syncheck::run(a),
        Command::Evaluate(a) => commands::evaluate::run(*a),
        Command::Inspect(a) => commands::inspect::run(a),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
