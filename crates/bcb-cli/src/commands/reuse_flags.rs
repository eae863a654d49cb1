//! What a command that runs samples may reuse instead of running them (`evaluate`, `serve`):
//! one flag group, and the verdict cache it opens.

use bcb_eval::{Settings, VerdictCache};

#[derive(clap::Args, Debug, Clone)]
pub struct ReuseArgs {
    /// Execute every sample, even one whose task and program another sample (of this run, or
    /// of any request a server took, in flight or finished) has already: by default such
    /// duplicates run once and share the verdict.
    #[arg(long)]
    pub no_dedup: bool,
    /// Neither use nor fill the verdict cache of earlier runs (`bcb cache stats`).
    #[arg(long)]
    pub no_cache: bool,
    /// Size bound of the verdict cache in MB; the least recently used runs' verdicts go first.
    #[arg(long, default_value_t = bcb_eval::verdict_cache::DEFAULT_MAX_MB)]
    pub cache_max_mb: u64,
}

impl ReuseArgs {
    /// The verdict cache for `settings` in the sandbox named by `sandbox_key`, unless
    /// `--no-cache`.
    pub fn verdict_cache(&self, settings: &Settings, sandbox_key: &str) -> Option<VerdictCache> {
        (!self.no_cache).then(|| {
            VerdictCache::open(
                &bcb_dataset::cache_dir(),
                settings,
                sandbox_key,
                self.cache_max_mb.saturating_mul(1024 * 1024),
            )
        })
    }
}
