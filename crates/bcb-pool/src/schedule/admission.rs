//! Whether one more sample may start now: the rule for samples beyond the always-busy
//! workers, on the machine's idle cores, our own demand, memory and `max_in_flight`.

use crate::procfs::mem_available_mb;

/// Cores of our own demand below `workers` needed to admit one more sample.
const MIN_IDLE_CORES: f64 = 0.5;
/// Idle cores of the machine needed to admit one more sample: a quarter of a core is worth
/// filling, since an extra sample takes only what the others leave (`freeze/`).
const ADMIT_IDLE_CORES: f64 = 0.25;
/// Memory kept free for everything else on the machine, on top of the per-sample estimate.
const MEMORY_RESERVE_MB: u64 = 512;
/// Per-sample memory estimate when the limits give none.
const DEFAULT_SAMPLE_MB: u64 = 1024;

/// Most samples in flight when the caller does not say: `parallel` busy plus as many again,
/// at least 8 (a sweep's sleepers of one task usually fit), memory permitting.
pub fn default_max_in_flight(parallel: usize) -> usize {
    let parallel = parallel.max(1);
    parallel + parallel.max(8)
}

/// The admission rule for samples beyond the always-busy `workers`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Admission {
    pub workers: usize,
    pub max_in_flight: usize,
    /// Memory one more sample is expected to need (the memory limit, capped at 1 GiB:
    /// a sleeper uses far less, and MemAvailable is measured again before each admission).
    pub per_sample_mb: u64,
}

/// What the machine looks like when an overlap slot asks to start a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Load {
    pub in_flight: usize,
    /// Idle cores over the last interval; `None` until an interval that began after the
    /// last admission settled has been measured.
    pub idle_cores: Option<f64>,
    /// Our runnable threads, the most of the last intervals (`None` as for `idle_cores`,
    /// or where /proc has no `children` lists).
    pub demand: Option<f64>,
    /// The asking slot just finished a sample, and this is what our samples asked of the
    /// CPUs with it running, in cores (fresh or not; see `freeze::govern`; our runnable
    /// threads where no sample has a cgroup to measure): it may go on while that stayed
    /// within `workers` and half a core.
    pub renewing: Option<f64>,
    /// MemAvailable in MB; `None` where /proc/meminfo is unreadable.
    pub mem_available_mb: Option<u64>,
    /// The next job's task already had a sample time out asleep.
    pub next_sleeps: bool,
}

impl Admission {
    pub fn new(workers: usize, max_in_flight: usize, memory_limit_mb: u64) -> Admission {
        let workers = workers.max(1);
        let per_sample_mb = match memory_limit_mb {
            0 => DEFAULT_SAMPLE_MB,
            mb => mb.min(DEFAULT_SAMPLE_MB),
        };
        Admission {
            workers,
            max_in_flight: max_in_flight.max(workers),
            per_sample_mb,
        }
    }

    /// Whether one more sample may start now.
    pub fn admits(&self, load: &Load) -> bool {
        if load.in_flight < self.workers {
            return true;
        }
        if load.in_flight >= self.max_in_flight {
            return false;
        }
        let workers = self.workers as f64;
        let renew = load.renewing.is_some_and(|d| d <= workers + MIN_IDLE_CORES);
        let idle = load.idle_cores.is_some_and(|i| i >= ADMIT_IDLE_CORES);
        let below_budget = load.demand.is_some_and(|d| d <= workers - MIN_IDLE_CORES);
        if !(load.next_sleeps || renew || idle || below_budget) {
            return false; // busy, or no fresh measurement yet (the last admission may not show)
        }
        match load.mem_available_mb {
            Some(mb) => mb >= self.per_sample_mb + MEMORY_RESERVE_MB,
            // Without /proc/meminfo, stay within the old fixed bound of 2 × workers.
            None => load.in_flight < 2 * self.workers,
        }
    }

    /// Whether the machine has the memory for one more warm slot now (the rule samples
    /// beyond `workers` are admitted by; unknown memory counts as room).
    pub(crate) fn room_for_one_more(&self) -> bool {
        mem_available_mb().is_none_or(|mb| mb >= self.per_sample_mb + MEMORY_RESERVE_MB)
    }

    /// Overlap slots worth starting threads for.
    pub(crate) fn extra_slots(&self, jobs: usize) -> usize {
        (self.max_in_flight - self.workers).min(jobs.saturating_sub(self.workers))
    }
}
