//! `bcb cache`: the verdict cache of `bcb evaluate` (`$BCB_CACHE_DIR/verdicts`, by default
//! `~/.cache/bcb/verdicts`): how big it is, and emptying it.

use std::io::Write;
use std::process::ExitCode;

use bcb_eval::verdict_cache::{self, VerdictCache};

#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Environments, run segments, verdicts and bytes in the verdict cache.
    Stats,
    /// Remove every cached verdict (the ground-truth cache is kept).
    Clean,
}

pub fn run(action: Action) -> anyhow::Result<ExitCode> {
    let root = VerdictCache::root(&bcb_dataset::cache_dir());
    let mut out = std::io::stdout().lock();
    match action {
        Action::Stats => {
            let s = verdict_cache::stats(&root);
            writeln!(
                out,
                "{}: {} verdict(s) in {} segment(s), {} environment(s), {:.1} MB",
                root.display(),
                s.records,
                s.segments,
                s.environments,
                s.bytes as f64 / 1e6
            )?;
        }
        Action::Clean => {
            let s = verdict_cache::clean(&root)?;
            writeln!(
                out,
                "removed {} verdict(s) ({:.1} MB) from {}",
                s.records,
                s.bytes as f64 / 1e6,
                root.display()
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
