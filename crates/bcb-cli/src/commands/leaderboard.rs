//! `bcb leaderboard DIR`: every result file under DIR -> a table (markdown or CSV) and the
//! official leaderboard's `results.json` / `results-hard.json`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use bcb_report::leaderboard::{render_csv, render_markdown, results_json, scan};
use serde_json::{Map, Value};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Md,
    Csv,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Folder searched (recursively) for `*_eval_results.json[.gz]`.
    pub dir: PathBuf,
    /// Table format on standard output.
    #[arg(long, value_enum, default_value = "md")]
    pub format: Format,
    /// Where `results.json` (full set) and `results-hard.json` (hard subset) are written.
    /// Default: DIR.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// JSON `{display name: {link, open-data, prompted, moe, size, act_param, date,
    /// prefill}}` overriding what is inferred (link from the Hugging Face id, size from a
    /// `-8B` in the name, date of the evaluation, prefill unless `--skip_prefill`; open-data
    /// "None", prompted true and moe false unless given).
    #[arg(long, value_name = "FILE")]
    pub meta: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let entries = scan(&args.dir)?;
    if entries.is_empty() {
        anyhow::bail!(
            "no *_eval_results.json under {}; run `bcb evaluate` first or point at its output folder",
            args.dir.display()
        );
    }
    let meta: Map<String, Value> = match &args.meta {
        None => Map::new(),
        Some(p) => serde_json::from_str(
            &std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?,
        )
        .with_context(|| format!("{} is not a JSON object of model -> fields", p.display()))?,
    };
    let out_dir = args.output_dir.clone().unwrap_or_else(|| args.dir.clone());
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let mut written = Vec::new();
    for (subset, file) in [("full", "results.json"), ("hard", "results-hard.json")] {
        let json = results_json(&entries, subset, &meta);
        if json.is_empty() {
            continue;
        }
        let path = out_dir.join(file);
        let bytes = bcb_pyjson::to_pretty(&Value::Object(json))?;
        bcb_pyjson::write_atomic(&path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    match args.format {
        Format::Md => print!("{}", render_markdown(&entries)),
        Format::Csv => print!("{}", render_csv(&entries)),
    }
    for p in written {
        eprintln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}
