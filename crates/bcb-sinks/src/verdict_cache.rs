//! Feeds the verdict cache: every sample verdict executed in this run (reruns included, so a
//! verdict that changes is left out) is noted, and the cache writes its new segment (and
//! evicts) when the first report is out, after every rerun — or when the sink is dropped, so
//! a run stopped by an error still keeps what it executed.

use bcb_eval::{Event, Origin, Phase, Sink, VerdictCache};

pub struct VerdictCacheSink<'a> {
    cache: &'a VerdictCache,
}

impl<'a> VerdictCacheSink<'a> {
    pub fn new(cache: &'a VerdictCache) -> Self {
        VerdictCacheSink { cache }
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
            } => self.cache.record(job, outcome),
            Event::Finished(_) => {
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
        if let Err(e) = self.cache.flush() {
            tracing::warn!("verdict cache not updated: {e:#}");
        }
    }
}
