//! Prometheus text exposition (format 0.0.4) of the service's counters, written by hand: a few
//! counters, gauges and two histograms need no metrics library.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::backend::Stats;

/// Latency buckets in seconds (upper bounds; `+Inf` is implied).
const BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 240.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        for (i, le) in BUCKETS.iter().enumerate() {
            if secs <= *le {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum += secs;
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (i, le) in BUCKETS.iter().enumerate() {
            let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {}", self.counts[i]);
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum {}", self.sum);
        let _ = writeln!(out, "{name}_count {}", self.count);
    }
}

#[derive(Default)]
pub struct Metrics {
    request_latency: Mutex<Histogram>,
    sample_latency: Mutex<Histogram>,
    /// pass, fail, timeout, error (no verdict).
    verdicts: [AtomicU64; 4],
    requests: AtomicU64,
    rejected_busy: AtomicU64,
    cache_hits: AtomicU64,
    dedup_hits: AtomicU64,
    cancelled: AtomicU64,
}

pub enum VerdictKind {
    Pass = 0,
    Fail = 1,
    Timeout = 2,
    Error = 3,
}

impl Metrics {
    pub fn request(&self, secs: f64) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.request_latency.lock().unwrap().observe(secs);
    }

    pub fn sample(&self, secs: f64, kind: VerdictKind) {
        self.sample_latency.lock().unwrap().observe(secs);
        self.verdicts[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn busy(&self) {
        self.rejected_busy.fetch_add(1, Ordering::Relaxed);
    }

    pub fn cache_hit(&self) {
        self.cache_hits.fetch_add(1, Ordering::Relaxed);
    }

    pub fn dedup_hit(&self) {
        self.dedup_hits.fetch_add(1, Ordering::Relaxed);
    }

    pub fn cancelled(&self, n: usize) {
        self.cancelled.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The exposition text; `outstanding` is samples admitted and not yet answered.
    pub fn render(&self, stats: Option<Stats>, outstanding: usize, ready: bool) -> String {
        let mut out = String::new();
        let stats = stats.unwrap_or_default();
        let mut gauge = |name: &str, help: &str, v: f64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        };
        gauge(
            "bcb_ready",
            "1 once the ground truth is checked and the session is warm.",
            f64::from(u8::from(ready)),
        );
        gauge(
            "bcb_queue_depth",
            "Jobs waiting for a worker in the session.",
            stats.queued as f64,
        );
        gauge(
            "bcb_in_flight",
            "Jobs running in the session.",
            stats.in_flight as f64,
        );
        gauge(
            "bcb_outstanding_samples",
            "Samples admitted by the server and not yet answered (the bounded queue).",
            outstanding as f64,
        );
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP bcb_verdicts_total Samples answered, by status (error: no verdict).\n# TYPE bcb_verdicts_total counter"
        );
        for (i, s) in ["pass", "fail", "timeout", "error"].iter().enumerate() {
            let _ = writeln!(
                out,
                "bcb_verdicts_total{{status=\"{s}\"}} {}",
                load(&self.verdicts[i])
            );
        }
        let mut counter = |name: &str, help: &str, v: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}"
            );
        };
        counter(
            "bcb_requests_total",
            "Requests answered by the evaluation endpoints.",
            load(&self.requests),
        );
        counter(
            "bcb_rejected_busy_total",
            "Requests refused with 429 (queue full).",
            load(&self.rejected_busy),
        );
        counter(
            "bcb_cache_hits_total",
            "Verdicts served from the verdict cache.",
            load(&self.cache_hits).max(stats.cache_hits),
        );
        counter(
            "bcb_dedup_hits_total",
            "Verdicts shared with an identical program (dedup).",
            load(&self.dedup_hits).max(stats.dedup_hits),
        );
        counter(
            "bcb_cancelled_samples_total",
            "Samples whose client went away or whose deadline passed before they ran.",
            load(&self.cancelled),
        );
        self.request_latency.lock().unwrap().render(
            &mut out,
            "bcb_request_duration_seconds",
            "Time from request to last verdict.",
        );
        self.sample_latency.lock().unwrap().render(
            &mut out,
            "bcb_sample_duration_seconds",
            "Time from submission to a sample's verdict.",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_every_family() {
        let m = Metrics::default();
        m.request(0.02);
        m.sample(0.01, VerdictKind::Pass);
        m.busy();
        let text = m.render(None, 3, true);
        for needle in [
            "bcb_queue_depth 0",
            "bcb_outstanding_samples 3",
            "bcb_verdicts_total{status=\"pass\"} 1",
            "bcb_request_duration_seconds_bucket{le=\"0.025\"} 1",
            "bcb_request_duration_seconds_count 1",
            "bcb_rejected_busy_total 1",
        ] {
            assert!(text.contains(needle), "{needle} missing in\n{text}");
        }
    }
}
