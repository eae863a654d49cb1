//! `bcb dataset`: what a dataset is and where it came from.

use std::io::Write;
use std::process::ExitCode;

use crate::common::DatasetArgs;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// How many libraries to list (0 = all).
    #[arg(long, default_value_t = 20)]
    pub top: usize,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let spec = args.dataset.spec();
    let source = spec.resolve()?;
    let ds = spec.load()?;
    let file_sha256 = bcb_dataset::file_sha256(&ds.path)?;
    let libs = ds.library_counts();
    if args.json {
        let out = serde_json::json!({
            "subset": ds.subset.as_str(),
            "version": ds.version,
            "tasks": ds.len(),
            "source": source.describe(),
            "path": ds.path,
            "file_sha256": file_sha256,
            "content_sha256": ds.sha256,
            "content_md5": ds.md5,
            "libraries": libs.iter().map(|(l, n)| serde_json::json!({"name": l, "tasks": n})).collect::<Vec<_>>(),
        });
        writeln!(std::io::stdout(), "{}", serde_json::to_string_pretty(&out)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut w = std::io::stdout().lock();
    writeln!(w, "subset          {}", ds.subset)?;
    writeln!(w, "version         {}", ds.version)?;
    writeln!(w, "tasks           {}", ds.len())?;
    writeln!(w, "source          {}", source.describe())?;
    writeln!(w, "file sha256     {file_sha256}")?;
    writeln!(w, "content sha256  {}", ds.sha256)?;
    writeln!(w, "content md5     {}", ds.md5)?;
    writeln!(w, "libraries       {} distinct", libs.len())?;
    let shown = if args.top == 0 {
        libs.len()
    } else {
        args.top.min(libs.len())
    };
    for (lib, n) in &libs[..shown] {
        writeln!(w, "  {n:>5}  {lib}")?;
    }
    if shown < libs.len() {
        writeln!(w, "  ... {} more (--top 0 lists all)", libs.len() - shown)?;
    }
    Ok(ExitCode::SUCCESS)
}
