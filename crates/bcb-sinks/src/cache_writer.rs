//! Records executed verdicts in the verdict cache: a batch run writes them as one segment when
//! it finishes (or is dropped); a long-lived session (`bcb serve`, [`VerdictCacheSink::live`])
//! appends each one as it arrives, so a killed server loses at most the last moments.

use bcb_eval::verdict_cache::VerdictCache;
use bcb_eval::{Event, Origin, Phase, Sink};

pub struct VerdictCacheSink<'a> {
    cache: &'a VerdictCache,
    live: bool,
}

impl<'a> VerdictCacheSink<'a> {
    /// Verdicts written as one segment when the run finishes.
    pub fn new(cache: &'a VerdictCache) -> Self {
        VerdictCacheSink { cache, live: false }
    }

    /// Verdicts appended as they arrive, to this process's own segment. A write that fails is
    /// a warning, not a stop: the verdict itself is sound, only its reuse is lost.
    pub fn live(cache: &'a VerdictCache) -> Self {
        VerdictCacheSink { cache, live: true }
    }

    fn append(&self) {
        if let Err(e) = self.cache.append_pending() {
            tracing::warn!("verdict cache not updated: {e:#}");
        }
    }
}

impl Sink for VerdictCacheSink<'_> {
    fn handle(&mut self, event: &Event) -> anyhow::Result<()> {
        match event {
            Event::JobDone {
                phase: Phase::Samples | Phase::Rerun,
                job,
                outcome,
                origin: Origin::Executed,
                ..
            } => {
                self.cache.record(job, outcome);
                if self.live {
                    self.append();
                }
            }
            Event::Finished(_) if !self.live => {
                let written = self.cache.flush()?;
                tracing::debug!("verdict cache: {written} new verdict(s) stored");
            }
            _ => {}
        }
        Ok(())
    }
}

impl Drop for VerdictCacheSink<'_> {
    fn drop(&mut self) {
        if self.live {
            self.append();
        } else if let Err(e) = self.cache.flush() {
            tracing::warn!("verdict cache not updated: {e:#}");
        }
    }
}
