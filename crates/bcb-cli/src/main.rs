//! `bcb`: BigCodeBench generation, sanitizing and evaluation.

mod commands;
mod common;
mod generate_progress;

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Subcommand};

#[derive(clap::Parser)]
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
    #[command(subcommand)]
    Env(commands::env::Action),
    /// Generate samples with a model (OpenAI, Anthropic, Google, Mistral, Ollama, local).
    Generate(commands::generate::Args),
    /// Extract the code of each sample and keep what the entry point needs.
    Sanitize(commands::sanitize::Args),
    /// Report samples that are not valid Python.
    Syncheck(commands::syncheck::Args),
    /// Run samples against their tasks' unit tests and score them (pass@k).
    Evaluate(Box<commands::evaluate::Args>),
    /// The sandbox side of `evaluate --execution e2b`: run a file of jobs locally.
    #[command(hide = true)]
    ExecJobs(commands::exec_jobs::Args),
    /// Write failing samples, tests and tracebacks to a folder for reading.
    Inspect(commands::inspect::Args),
    /// Join the journals of `evaluate --shard I/N` runs into the files of one run.
    Merge(commands::merge::Args),
    /// Size a cluster: predicted wall time of N shards on N machines of C cores vs the ideal.
    Plan(commands::plan::Args),
    /// The verdict cache of `evaluate`: `stats`, `clean`.
    #[command(subcommand)]
    Cache(commands::cache::Action),
    /// Write a self-contained HTML report (or md/csv/json tables) for one or many result files.
    Report(commands::report::Args),
    /// Compare two result files: flipped tasks, McNemar test, bootstrap CI of the difference.
    Compare(commands::compare::Args),
    /// Leaderboard over a folder of result files: a table and the official results.json shape.
    Leaderboard(commands::leaderboard::Args),
    /// Serve verdicts over HTTP from one warm session (native API, SandboxFusion, OpenRLHF).
    Serve(Box<commands::serve::Args>),
}

fn main() -> ExitCode {
    let matches =
        Cli::command().get_matches_from(common::normalize_legacy_args(std::env::args_os()));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    common::init_logging(cli.verbose);
    // Not dumpable: a sample of our uid (a container without user namespaces) can neither
    // trace bcb nor read its memory or environment (API keys) through /proc. Its children
    // are dumpable again from their exec.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    // Whether a flag was typed (not defaulted): evaluate checks split/subset against the file.
    let typed = |command: &str, id: &str| {
        matches
            .subcommand_matches(command)
            .and_then(|m| m.value_source(id))
            == Some(ValueSource::CommandLine)
    };
    let result = match cli.command {
        Command::Dataset(a) => commands::dataset::run(a),
        Command::Env(a) => commands::env::run(a),
        Command::Generate(a) => commands::generate::run(a),
        Command::Sanitize(a) => commands::sanitize::run(a),
        Command::Syncheck(a) => commands::syncheck::run(a),
        Command::Evaluate(mut a) => {
            common::stop_on_interrupt();
            a.split_typed = typed("evaluate", "split");
            a.subset_typed = typed("evaluate", "subset");
            commands::evaluate::run(*a)
        }
        Command::Inspect(a) => commands::inspect::run(a),
        Command::ExecJobs(a) => {
            common::stop_on_interrupt();
            commands::exec_jobs::run(a)
        }
        Command::Merge(mut a) => {
            a.subset_typed = typed("merge", "subset");
            a.version_typed = typed("merge", "version");
            commands::merge::run(a)
        }
        Command::Plan(a) => commands::plan::run(a),
        Command::Cache(a) => commands::cache::run(a),
        Command::Report(a) => commands::report::run(a),
        Command::Compare(a) => commands::compare::run(a),
        Command::Leaderboard(a) => commands::leaderboard::run(a),
        Command::Serve(a) => commands::serve::run(*a),
    };
    match result {
        Ok(code) => code,
        // A closed stdout (`bcb dataset | head`) is not an error. SIGPIPE stays ignored (Rust's
        // default) because the executors write to worker pipes that may close under them.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // Not eprintln!: a panic would end the run with 101 instead of its error's code.
            common::say(&format!("error: {err:#}"));
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The README's flag table ("The original's 59 flags") against clap's definitions: every row
/// marked ✔ or ~ names flags that `bcb` accepts, the original's spelling (through the same
/// rewriting of legacy forms the binary does) and bcb's spellings and aliases alike.
#[cfg(test)]
mod readme_flag_table {
    use super::*;

    const README: &str = include_str!("../../../README.md");

    /// `(command, original flag, bcb cell, mark)` of each row.
    fn rows() -> Vec<(String, String, String, String)> {
        let start = README
            .find("## The original's 59 flags")
            .expect("the README has the flag table");
        let section = &README[start..];
        let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
        section[..end]
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| command"))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                (
                    cells[1].to_string(),
                    cells[2].trim_matches('`').to_string(),
                    cells[3].to_string(),
                    cells[4].to_string(),
                )
            })
            .collect()
    }

    /// Whether `bcb command flag` gets past clap's "unexpected argument" (a missing value or
    /// required flag is another error: the flag itself exists).
    fn accepted(command: &str, flag: &str) -> bool {
        let argv =
            common::normalize_legacy_args(["bcb", command, flag].map(std::ffi::OsString::from));
        match Cli::command().try_get_matches_from(argv) {
            Ok(_) => true,
            Err(e) => e.kind() != clap::error::ErrorKind::UnknownArgument,
        }
    }

    #[test]
    fn every_supported_row_names_flags_clap_accepts() {
        let rows = rows();
        assert_eq!(rows.len(), 59, "the heading says 59 flags");
        let mut problems = Vec::new();
        for (command, original, bcb, mark) in &rows {
            if !(mark == "✔" || mark == "~") {
                continue;
            }
            if !accepted(command, original) {
                problems.push(format!(
                    "{command} {original}: the original spelling is refused"
                ));
            }
            // bcb's spellings and aliases: each `--flag` in code spans of the bcb cell.
            for span in bcb.split('`').skip(1).step_by(2) {
                for flag in span.split_whitespace().filter(|w| w.starts_with("--")) {
                    if !accepted(command, flag) {
                        problems.push(format!("{command} {flag}: not a flag of bcb {command}"));
                    }
                }
            }
        }
        assert!(
            problems.is_empty(),
            "README flag table vs clap:\n{}",
            problems.join("\n")
        );
    }

    #[test]
    fn the_check_catches_a_flag_that_does_not_exist() {
        assert!(!accepted("evaluate", "--no-such-flag"));
        assert!(accepted("evaluate", "--pass_k"));
        assert!(accepted("generate", "--max-tokens"));
    }
}
