//! Work queue shared by the local executors: jobs in the caller's order (longest expected
//! first), `workers` always busy, and more in flight whenever the CPUs sit idle (samples that
//! sleep or wait), so a run's wall approaches max(CPU floor, longest single sample).
//!
//! Overlap slots are admitted one at a time by [`Admission`], on a fresh measurement taken
//! after the previous admission had time to show up in it: when a quarter of a core of the
//! machine is idle, or when our own demand (runnable threads of this process's descendants:
//! slots, samples and their children) is half a core below `workers`, which other load on
//! the machine cannot fake. An overlap slot that finishes a sample goes on with the next while
//! what our samples asked of the CPUs over the last interval (their threads' time on a CPU or
//! waiting for one: `freeze::govern`) stayed within `workers` and half a core (it fills the
//! core of a hung sample): a thread pool's momentary runnable threads do not stop it (two
//! Keras samples count 4 to 5 of them at 1.4 cores), an extra left waiting for a core does. A
//! core that an admission would give to a new sample goes to the oldest frozen extra first
//! (thawed), so one frozen behind long primaries does not wait for minutes while newer extras,
//! starting at the default weight, take every core that frees. Always only while
//! `/proc/meminfo`'s MemAvailable covers one more sample, and never past `max_in_flight`.
//! A CPU-bound run therefore keeps `workers` samples running and rarely more.
//!
//! Samples admitted beyond `workers` never take a core from the others: they run at the
//! lowest CPU weight, their clocks credited with the time they wait for a core, or, without
//! a cpu cgroup, the governor (`freeze/`), run by the same sampler thread, freezes them
//! while our demand exceeds the cores and stops their clocks meanwhile. Roles follow running
//! samples: the first `workers` in flight are primary, and when one ends the oldest extra
//! takes its place.
//!
//! The queue learns from timeouts: when a sample of a task times out, the task's samples
//! still queued move to the front (they probably sleep too), so they overlap with each other
//! and with the rest of the run instead of starting together at its end. If that timeout
//! slept (its process tree used under a quarter of its wall time in CPU), the task's other
//! samples are admitted as sleepers: past `workers` without waiting for idle CPU (which
//! other load on the machine may never leave), still within memory and `max_in_flight`.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::freeze::{
    govern, promote_oldest, thaw_oldest, Pass, Role, Sampler, Seat, RERUN_HELD_OVER,
};
use crate::procfs::{cpu_jiffies, mem_available_mb, thread_state, Counted, ProcFiles};
use crate::targets::QUEUE;
use bcb_executor::intake::{JobSource, OnServed, Peek, Ticket};
use bcb_executor::SLEEPER_CPU_SHARE;
use bcb_executor::{ExecError, Job, Outcome, Remark, Status};

/// How often the idle-CPU sampler measures (10 jiffies per CPU at USER_HZ 100), and how
/// long a waiting overlap slot naps. Short, so an overlap slot can fill a core that a hung
/// sample leaves idle almost as well as a worker would.
const INTERVAL: Duration = Duration::from_millis(100);
/// Time a newly admitted sample gets to start working (a fork of a warm slot takes a few
/// ms) before an idle measurement counts again.
const SETTLE: Duration = Duration::from_millis(50);
/// Cores of our own demand below `workers` needed to admit one more sample.
const MIN_IDLE_CORES: f64 = 0.5;
/// Idle cores of the machine needed to admit one more sample: a quarter of a core is worth
/// filling, since an extra sample takes only what the others leave (`freeze/`).
const ADMIT_IDLE_CORES: f64 = 0.25;
/// Demand samples whose maximum counts (one per interval): a CPU-bound sample between two
/// tests or waiting on a read for a moment is not mistaken for a sleeper, and a sample
/// admitted within the window shows at once.
const DEMAND_WINDOW: usize = 3;
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

/// Moves the queued jobs of `task` to the front, keeping their order and everyone else's.
/// Returns how many moved.
#[cfg(test)]
pub(crate) fn promote_task(queue: &mut VecDeque<Job>, task: &str) -> usize {
    bcb_executor::intake::promote_task(queue, task, Job::task_id)
}

/// Threads of this process that started a slot ([`note_spawner`]), beside the main thread.
/// `/proc` lists a child under the thread that forked it (and a child of a thread that exits
/// under the main thread), so the demand walk starts from these rather than from every thread
/// of the process: a server has a thread per submission, and reading each one's `children`
/// every interval cost 1.9% of a core at 51 threads, 7.7% at 1,059 (1,024 requests waiting).
static SPAWNERS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// Records the calling thread as one that starts slot processes (see [`SPAWNERS`]).
pub(crate) fn note_spawner() {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    SPAWNERS.lock().unwrap().insert(tid as u32);
}

/// Runnable threads among this process's descendants (pool slots, samples, their children),
/// found through /proc's `children` lists from the main thread and the slot spawners; `None`
/// where the kernel has no such lists. The processes of the samples the governor measured in
/// this pass (`counted`) are not read again: their runnable threads are added as counted.
fn our_demand(files: &mut ProcFiles, counted: &Counted) -> Option<usize> {
    let me = std::process::id();
    let mut spawners = SPAWNERS.lock().unwrap().clone();
    spawners.insert(me); // once, if it spawned too
    let mut stack = Vec::new();
    let pids = |list: &str| -> Vec<u32> {
        list.split_whitespace()
            .filter_map(|c| c.parse().ok())
            .collect()
    };
    for tid in spawners {
        match files.read(format!("/proc/{me}/task/{tid}/children")) {
            Some(kids) => stack.extend(pids(kids)),
            None if tid == me => return None,
            None => {
                SPAWNERS.lock().unwrap().remove(&tid); // the thread ended
            }
        }
    }
    let mut runnable = counted.runnable;
    while let Some(pid) = stack.pop() {
        if counted.pids.contains(&pid) {
            continue; // a sample's process, with its children in its cgroup: counted
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue; // gone meanwhile
        };
        for task in tasks.flatten() {
            let dir = format!("/proc/{pid}/task/{}", task.file_name().to_string_lossy());
            if let Some(kids) = files.read(format!("{dir}/children")) {
                stack.extend(pids(kids));
            }
            let state = files.read(format!("{dir}/stat")).and_then(thread_state);
            runnable += usize::from(state == Some('R'));
        }
    }
    Some(runnable)
}

/// The last measurement, over the interval that began at `since`.
#[derive(Clone, Copy)]
struct IdleSample {
    since: Instant,
    idle_cores: f64,
    /// Our runnable threads, the most of the last [`DEMAND_WINDOW`] intervals.
    demand: Option<f64>,
    /// What the running samples asked of the CPUs over the interval, in cores (`None`
    /// where samples run and none has a cgroup to measure).
    asked: Option<f64>,
    /// Primaries the pass could not measure yet (see `freeze::Pass`), and when it began:
    /// a primary started after that is not in it at all.
    unmeasured_primaries: usize,
    passed: Instant,
}

struct Shared {
    in_flight: usize,
    /// Running samples whose role is primary (at most `workers`).
    primaries: usize,
    last_admission: Option<Instant>,
    /// Tasks with a sample that timed out asleep.
    sleepy: HashSet<String>,
    /// Which overlap slots run a sample. A slot asks only while every lower one is busy,
    /// so already warm slots are reused before another one warms up.
    extra_busy: Vec<bool>,
    /// Samples held past [`RERUN_HELD_OVER`] that did not pass, waiting for a primary role
    /// to run again in: they go before the queue, and before an extra's promotion.
    reruns: VecDeque<Rerun>,
    /// When primary roles were last taken (the last second's): a measurement whose pass
    /// came before a primary started shows that primary's core idle, so admission counts
    /// each such start as a core taken (see [`Shared::unseen_primaries`]).
    primary_starts: VecDeque<Instant>,
}

impl Shared {
    /// A sample takes a primary role.
    fn take_primary(&mut self) {
        self.primaries += 1;
        let now = Instant::now();
        while self
            .primary_starts
            .front()
            .is_some_and(|t| now.duration_since(*t) > Duration::from_secs(1))
        {
            self.primary_starts.pop_front();
        }
        self.primary_starts.push_back(now);
    }

    /// Primaries whose core a measurement does not show taken: those its pass found still
    /// starting (not measured yet), and those started after the pass. Without this, an
    /// extra started on the measurement of the moment two primaries were being forked computed
    /// beside them at the lowest weight, starved and frozen for seconds.
    fn unseen_primaries(&self, m: &IdleSample) -> f64 {
        let started = self
            .primary_starts
            .iter()
            .filter(|t| **t >= m.passed)
            .count();
        (started + m.unmeasured_primaries) as f64
    }

    /// A sample starts on a worker (`extra_slot`: its index among the overlap slots, if one).
    fn start(&mut self, extra_slot: Option<usize>) {
        self.in_flight += 1;
        if let Some(e) = extra_slot {
            self.extra_busy[e] = true;
        }
    }
}

/// A job to run again never held.
struct Rerun {
    ticket: Ticket,
    job: Job,
    first: HeldRun,
}

/// What a held run of a sample gave: its status and the time it was held.
#[derive(Clone, Copy)]
struct HeldRun {
    status: Status,
    held: Duration,
}

impl HeldRun {
    /// The rerun's outcome, saying what came before it.
    fn mark(self, outcome: &mut Result<Outcome, ExecError>) {
        if let Ok(o) = outcome {
            o.remark = Some(Remark::RerunUnheld {
                held_ms: self.held.as_millis() as u64,
                first: self.status,
                then: o.remark.take().map(Box::new),
            });
        }
    }
}

/// Whether `outcome` is a timeout spent mostly waiting rather than computing.
fn slept(outcome: &Outcome) -> bool {
    outcome.status == Status::Timeout
        && outcome
            .cpu_secs
            .is_some_and(|cpu| cpu < SLEEPER_CPU_SHARE * outcome.wall_secs)
}

/// Runs what `source` hands out until it closes (`jobs`: how many it will hand out at most,
/// when known, so a short batch starts no more workers than it has jobs); each worker builds
/// its state with `make(index, primary)` and turns jobs into outcomes with `step`. Workers
/// live as long as the source stays open: a warm source keeps them between submissions.
/// Each running sample is attached to its [`Seat`] so the governor can freeze it.
/// `max_in_flight` bounds primary plus overlap slots. `settle` runs after each outcome is
/// delivered, before the worker asks for its next job.
pub(crate) fn run_queue<W>(
    source: &dyn JobSource,
    jobs: Option<usize>,
    admission: Admission,
    make: &(dyn Fn(usize, bool) -> W + Sync),
    step: &(dyn Fn(&mut W, &Job, &Seat) -> Result<Outcome, ExecError> + Sync),
    settle: &(dyn Fn(&mut W) + Sync),
    done: &OnServed,
) {
    let n = jobs.unwrap_or(usize::MAX);
    let workers = admission.workers.min(n.max(1));
    let extra = admission.extra_slots(n);
    let seats: Vec<Seat> = (0..workers + extra).map(|_| Seat::default()).collect();
    let cores = std::thread::available_parallelism()
        .map_or(workers, |c| c.get())
        .min(workers);
    let queue = Queue {
        source,
        admission,
        workers,
        seats: &seats,
        shared: Mutex::new(Shared {
            in_flight: 0,
            primaries: 0,
            last_admission: None,
            sleepy: HashSet::new(),
            extra_busy: vec![false; extra],
            reruns: VecDeque::new(),
            primary_starts: VecDeque::new(),
        }),
        idle: Mutex::new(None),
    };
    let finished = AtomicBool::new(false);
    std::thread::scope(|scope| {
        if extra > 0 {
            scope.spawn(|| queue.measure_until(&finished, cores));
        }
        let handles: Vec<_> = (0..workers + extra)
            .map(|index| {
                let queue = &queue;
                scope.spawn(move || {
                    let mut state = make(index, index < workers);
                    let mut worker = Worker {
                        index,
                        just_finished: false,
                    };
                    while let Some(Taken { ticket, job, rerun }) = queue.take(&mut worker) {
                        let outcome = step(&mut state, &job, &queue.seats[index]);
                        if let Some((ticket, job, outcome)) =
                            queue.finish(&mut worker, ticket, job, outcome, rerun)
                        {
                            done(ticket, job, outcome);
                        }
                        settle(&mut state);
                    }
                })
            })
            .collect();
        for h in handles {
            let _ = h.join();
        }
        finished.store(true, Ordering::Relaxed);
    });
}

/// What the workers of one [`run_queue`] share: the source, the admission rule, every seat
/// and the counts behind the admission's decisions.
struct Queue<'a> {
    source: &'a dyn JobSource,
    admission: Admission,
    workers: usize,
    seats: &'a [Seat],
    shared: Mutex<Shared>,
    /// The sampler's last measurement of idle cores and our demand.
    idle: Mutex<Option<IdleSample>>,
}

/// One worker of a [`Queue`]: index below `workers` for a primary, above for an overlap slot.
struct Worker {
    index: usize,
    /// Set when this overlap slot just finished a sample: it may go on (see `Load::renewing`).
    just_finished: bool,
}

impl Worker {
    fn primary(&self, queue: &Queue) -> bool {
        self.index < queue.workers
    }

    /// Its index among the overlap slots, if it is one.
    fn extra_slot(&self, queue: &Queue) -> Option<usize> {
        self.index.checked_sub(queue.workers)
    }
}

/// A job a worker runs next.
struct Taken {
    ticket: Ticket,
    job: Job,
    /// Set when this is a held sample's rerun.
    rerun: Option<HeldRun>,
}

/// What the admission says to a worker that asks for a job.
enum Admit {
    Run(Box<Taken>),
    /// Nothing for this worker now: ask again after [`INTERVAL`].
    Poll,
    /// The source has nothing queued: wait for it (at most [`INTERVAL`]).
    WaitForSource,
    /// The source is closed and nothing may still want a rerun.
    Stop,
}

impl Queue<'_> {
    /// The sampler: every [`INTERVAL`] until `finished`, the machine's idle cores, the
    /// governor's pass over the seats (which reads them), then our demand for the admission.
    fn measure_until(&self, finished: &AtomicBool, cores: usize) {
        let mut last = cpu_jiffies();
        let mut since = Instant::now();
        let mut demands: VecDeque<usize> = VecDeque::new();
        let mut sampler = Sampler::default();
        while !finished.load(Ordering::Relaxed) {
            std::thread::sleep(INTERVAL);
            let now = cpu_jiffies();
            let idle_cores = match (last, now) {
                (Some((b0, t0, _)), Some((b1, t1, cpus))) if t1 > t0 => {
                    let busy = (b1 - b0) as f64 / (t1 - t0) as f64;
                    Some((1.0 - busy).max(0.0) * cpus as f64)
                }
                _ => None,
            };
            sampler.idle.push(idle_cores);
            let passed = Instant::now();
            let Pass {
                asked,
                counted,
                unmeasured_primaries,
            } = govern(self.seats, cores, &mut sampler);
            let demand = our_demand(&mut sampler.files, &counted).map(|d| {
                demands.push_back(d);
                if demands.len() > DEMAND_WINDOW {
                    demands.pop_front();
                }
                demands.iter().copied().max().unwrap_or(0) as f64
            });
            sampler.files.end_pass();
            if let Some(idle_cores) = idle_cores {
                *self.idle.lock().unwrap() = Some(IdleSample {
                    since,
                    idle_cores,
                    demand,
                    asked,
                    unmeasured_primaries,
                    passed,
                });
            }
            last = now;
            since = Instant::now();
        }
    }

    /// The next job for `worker`, waiting as long as the admission says; `None` once the
    /// source is closed and no sample may still want a rerun.
    fn take(&self, worker: &mut Worker) -> Option<Taken> {
        loop {
            match self.admit(worker) {
                Admit::Run(taken) => return Some(*taken),
                Admit::Stop => return None,
                Admit::Poll => std::thread::sleep(INTERVAL),
                Admit::WaitForSource => self.source.wait(INTERVAL),
            }
        }
    }

    /// One decision for `worker`: a waiting rerun first, whenever a primary role is free;
    /// else the source's next job, if this worker may run it.
    fn admit(&self, worker: &mut Worker) -> Admit {
        let (w, workers, seats) = (worker.index, self.workers, self.seats);
        let primary = worker.primary(self);
        let mut s = self.shared.lock().unwrap();
        if s.primaries < workers && !s.reruns.is_empty() {
            let Rerun { ticket, job, first } = s.reruns.pop_front().expect("a rerun waits");
            s.start(worker.extra_slot(self));
            s.take_primary();
            seats[w].begin(Role::Primary, false);
            tracing::debug!(target: QUEUE, "{} starts again on slot {w}, unheld", job.id);
            return Admit::Run(Box::new(Taken {
                ticket,
                job,
                rerun: Some(first),
            }));
        }
        let front = match self.source.peek() {
            Peek::Ready(task) => task,
            // A sample still running may yet want its rerun.
            Peek::Closed if s.in_flight == 0 && s.reruns.is_empty() => return Admit::Stop,
            Peek::Closed => return Admit::Poll,
            Peek::Idle => return Admit::WaitForSource,
        };
        let next_sleeps = s.sleepy.contains(&front);
        let my_turn =
            primary || worker.just_finished || s.extra_busy[..w - workers].iter().all(|b| *b);
        // A primary role is free: this sample always runs (a primary worker's role may have
        // gone to an extra sample that outlived its own).
        let role_free = s.primaries < workers;
        let asks = primary || my_turn;
        let measured = *self.idle.lock().unwrap();
        let fresh = measured.filter(|m| s.last_admission.is_none_or(|t| m.since >= t + SETTLE));
        let load = Load {
            in_flight: s.in_flight,
            idle_cores: fresh.map(|m| m.idle_cores - s.unseen_primaries(&m)),
            demand: fresh.and_then(|m| m.demand.map(|d| d + s.unseen_primaries(&m))),
            renewing: measured
                .filter(|_| worker.just_finished)
                .and_then(|m| m.asked.or(m.demand)),
            mem_available_mb: if asks && !role_free {
                mem_available_mb()
            } else {
                None
            },
            next_sleeps,
        };
        let renew = load.renewing.is_some();
        worker.just_finished = false;
        let admitted = asks && (role_free || self.admission.admits(&load));
        if !admitted {
            return Admit::Poll;
        }
        if !role_free && !next_sleeps && thaw_oldest(seats) {
            // The core that frees goes to the oldest frozen extra, not to a new sample (which
            // would start at the default weight and take it, while the frozen one waits behind
            // long primaries for minutes); the next admission waits for a fresh measurement.
            s.last_admission = Some(Instant::now());
            return Admit::Poll;
        }
        // The source may have lost the job meanwhile (a cancel).
        let Some((ticket, job)) = self.source.pull() else {
            return Admit::Poll;
        };
        s.start(worker.extra_slot(self));
        // A sample expected to sleep runs beside the primaries rather than as one, where there
        // are extra slots to run beside: a primary role held by a sleeper (BigCodeBench/461:
        // 156 s of wall, about 1 s of CPU) leaves its core to whatever the admission of extras
        // manages to start, and only those.
        let sleeper = !s.extra_busy.is_empty() && (next_sleeps || job.expected_to_sleep());
        let role = if role_free && !sleeper {
            s.take_primary();
            Role::Primary
        } else {
            if !sleeper && !renew {
                s.last_admission = Some(Instant::now());
            }
            Role::Extra
        };
        seats[w].begin(role, sleeper);
        let kind = if sleeper { " (a sleeper)" } else { "" };
        tracing::debug!(target: QUEUE, "{} starts on slot {w} as {role:?}{kind}", job.id);
        Admit::Run(Box::new(Taken {
            ticket,
            job,
            rerun: None,
        }))
    }

    /// The bookkeeping after `worker` ran `job`: roles, overlap slots and what the queue
    /// learns. Returns what to deliver, or `None` when a held sample's failure sends the job
    /// to run again instead.
    fn finish(
        &self,
        worker: &mut Worker,
        ticket: Ticket,
        job: Job,
        mut outcome: Result<Outcome, ExecError>,
        rerun: Option<HeldRun>,
    ) -> Option<(Ticket, Job, Result<Outcome, ExecError>)> {
        tracing::debug!(target: QUEUE, "{} ends on slot {}", job.id, worker.index);
        let mut s = self.shared.lock().unwrap();
        s.in_flight -= 1;
        let ended = self.seats[worker.index].end();
        let held = ended.map_or(Duration::ZERO, |e| e.held);
        // A held sample's failure is no verdict (see `RERUN_HELD_OVER`); a rerun is never
        // held, so it runs once more at most.
        let again = rerun.is_none()
            && held > RERUN_HELD_OVER
            && outcome.as_ref().is_ok_and(|o| o.status != Status::Pass);
        if ended.is_some_and(|e| e.role == Role::Primary) {
            s.primaries -= 1;
            // A waiting rerun takes the role rather than the oldest extra.
            if s.reruns.is_empty() && !again && promote_oldest(self.seats) {
                s.take_primary(); // a frozen one thaws: its core is not in the last measurement
            }
        }
        if let Some(e) = worker.extra_slot(self) {
            s.extra_busy[e] = false;
            // Only an extra's slot goes on with the next sample (`Load::renewing`): a sample
            // that ended primary left its core to the primary role, which the next queued
            // sample takes; going on beside it too started a CPU-bound answer as an extra
            // beside two busy primaries, where it was starved and frozen for seconds.
            worker.just_finished = ended.is_some_and(|e| e.role == Role::Extra);
        }
        if again {
            let status = outcome.as_ref().map_or(Status::Fail, |o| o.status);
            tracing::debug!(
                "{} ended {status} held {:.1} s: it runs again, never held",
                job.id,
                held.as_secs_f64()
            );
            s.reruns.push_back(Rerun {
                ticket,
                job,
                first: HeldRun { status, held },
            });
            return None;
        }
        if let Some(first) = rerun {
            first.mark(&mut outcome);
        }
        if let Some(o) = outcome
            .as_ref()
            .ok()
            .filter(|o| o.status == Status::Timeout)
        {
            if slept(o) {
                s.sleepy.insert(job.task_id().to_string());
            }
            let moved = self.source.promote(job.task_id());
            if moved > 0 {
                tracing::debug!(
                    "{} timed out: its {moved} queued sample(s) move to the front",
                    job.id
                );
            }
        }
        Some((ticket, job, outcome))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bcb_executor::Program;

    fn rule() -> Admission {
        Admission::new(2, 10, 8192)
    }

    fn load(in_flight: usize, idle: Option<f64>, mem: Option<u64>) -> Load {
        Load {
            in_flight,
            idle_cores: idle,
            mem_available_mb: mem,
            next_sleeps: false,
            demand: None,
            renewing: None,
        }
    }

    /// Runs `jobs` through [`run_queue`] with workers of no state of their own.
    fn run_jobs(
        jobs: Vec<Job>,
        admission: Admission,
        step: &(dyn Fn(&mut (), &Job, &Seat) -> Result<Outcome, ExecError> + Sync),
        done: &OnServed,
    ) {
        let n = jobs.len();
        let source = bcb_executor::intake::VecSource::new(jobs);
        run_queue(&source, Some(n), admission, &|_, _| (), step, &|_| {}, done);
    }

    #[test]
    fn overlap_when_our_own_demand_is_below_the_workers_whatever_else_loads_the_machine() {
        let ours = |demand| Load {
            demand: Some(demand),
            ..load(2, Some(0.0), Some(20_000))
        };
        assert!(
            rule().admits(&ours(1.0)),
            "a worker's sample hangs or sleeps"
        );
        assert!(rule().admits(&ours(1.5)));
        assert!(!rule().admits(&ours(2.0)), "both workers busy");
        assert!(!rule().admits(&ours(3.0)));
    }

    #[test]
    fn our_demand_counts_a_busy_child_and_not_a_sleeping_one() {
        use std::process::Command;
        // One set of kept files throughout, as the sampler keeps it.
        let mut files = ProcFiles::default();
        let none = Counted::default();
        let Some(_) = our_demand(&mut files, &none) else {
            return; // a kernel without /proc/PID/task/TID/children
        };
        note_spawner(); // as `Slot::spawn_for` does
        let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let asleep: Vec<usize> = (0..5)
            .filter_map(|_| our_demand(&mut files, &none))
            .collect();
        let mut busy = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let mut seen = 0;
        for _ in 0..50 {
            seen = seen.max(our_demand(&mut files, &none).unwrap_or(0));
            std::thread::sleep(Duration::from_millis(10));
        }
        // The governor counted the busy child (as a sample's process) with no thread
        // runnable: the walk takes its word and does not read it again.
        let counted = Counted {
            pids: [busy.id()].into(),
            runnable: 0,
        };
        let skipped = (0..20)
            .filter_map(|_| our_demand(&mut files, &counted))
            .max();
        for child in [&mut sleeper, &mut busy] {
            let _ = child.kill();
            let _ = child.wait();
        }
        assert_eq!(asleep, [0; 5], "a sleeping child is no demand");
        assert!(seen >= 1, "a spinning child is runnable");
        assert_eq!(skipped, Some(0), "a counted process is not walked again");
    }

    #[test]
    fn an_overlap_slot_goes_on_while_our_demand_stayed_within_the_workers() {
        let renewing = |demand| Load {
            renewing: Some(demand),
            ..load(2, None, Some(20_000))
        };
        assert!(
            rule().admits(&renewing(2.0)),
            "it filled a hung worker's core"
        );
        assert!(rule().admits(&renewing(2.5)));
        assert!(
            !rule().admits(&renewing(3.0)),
            "it oversubscribed: back to waiting"
        );
        assert!(!rule().admits(&Load {
            renewing: Some(2.0),
            ..load(10, None, Some(20_000))
        }));
    }

    #[test]
    fn a_known_sleeper_needs_no_idle_cpu_but_memory_and_room() {
        let sleeper = |in_flight, mem| Load {
            next_sleeps: true,
            ..load(in_flight, None, Some(mem))
        };
        assert!(rule().admits(&sleeper(5, 20_000)));
        assert!(!rule().admits(&sleeper(10, 20_000)), "max in flight");
        assert!(!rule().admits(&sleeper(5, 1000)), "memory");
    }

    #[test]
    fn a_timeout_slept_when_its_cpu_time_is_small() {
        let timeout = |cpu: Option<f64>| Outcome {
            wall_secs: 10.0,
            cpu_secs: cpu,
            ..Outcome::new(Status::Timeout, Default::default())
        };
        assert!(slept(&timeout(Some(0.2))));
        assert!(!slept(&timeout(Some(9.0))), "a CPU hog");
        assert!(!slept(&timeout(None)), "unmeasured");
        let fail = Outcome {
            cpu_secs: Some(0.0),
            ..timeout(None)
        };
        assert!(!slept(&Outcome {
            status: Status::Fail,
            ..fail
        }));
    }

    #[test]
    fn workers_always_run_whatever_the_load() {
        assert!(rule().admits(&load(0, None, None)));
        assert!(rule().admits(&load(1, Some(0.0), Some(0))));
    }

    #[test]
    fn overlap_needs_a_fresh_measure_of_a_quarter_of_an_idle_core() {
        let r = rule();
        assert!(
            !r.admits(&load(2, None, Some(20_000))),
            "no fresh measurement"
        );
        assert!(!r.admits(&load(2, Some(0.2), Some(20_000))), "CPUs busy");
        assert!(r.admits(&load(2, Some(0.5), Some(20_000))));
        assert!(r.admits(&load(9, Some(1.8), Some(20_000))));
    }

    #[test]
    fn overlap_stops_at_max_in_flight() {
        assert!(!rule().admits(&load(10, Some(2.0), Some(20_000))));
        // max_in_flight below workers means just the workers
        let r = Admission::new(4, 1, 0);
        assert_eq!(r.max_in_flight, 4);
        assert!(!r.admits(&load(4, Some(4.0), Some(20_000))));
    }

    #[test]
    fn overlap_is_bounded_by_available_memory() {
        let r = rule(); // 8 GiB limit: the estimate is capped at 1 GiB
        assert_eq!(r.per_sample_mb, 1024);
        assert!(!r.admits(&load(2, Some(2.0), Some(1024 + 511))));
        assert!(r.admits(&load(2, Some(2.0), Some(1024 + 512))));
        // a small memory limit is its own estimate
        assert_eq!(Admission::new(2, 10, 300).per_sample_mb, 300);
        assert_eq!(Admission::new(2, 10, 0).per_sample_mb, 1024);
    }

    #[test]
    fn without_meminfo_overlap_keeps_the_old_bound_of_twice_the_workers() {
        assert!(rule().admits(&load(3, Some(2.0), None)));
        assert!(!rule().admits(&load(4, Some(2.0), None)));
    }

    #[test]
    fn default_max_in_flight_leaves_room_for_a_sweeps_sleepers() {
        assert_eq!(default_max_in_flight(0), 9);
        assert_eq!(default_max_in_flight(2), 10);
        assert_eq!(default_max_in_flight(16), 32);
    }

    fn job(task: &str, i: usize) -> Job {
        Job::for_test(task, Program::Sample(i), "", "")
    }

    fn order(q: &VecDeque<Job>) -> Vec<String> {
        q.iter()
            .map(|j| match j.id.program {
                Program::Sample(i) => format!("{}/{i}", j.task_id()),
                Program::GroundTruth => j.task_id().to_string(),
            })
            .collect()
    }

    #[test]
    fn a_timeout_moves_the_tasks_queued_samples_to_the_front_in_order() {
        let mut q: VecDeque<Job> = [("a", 0), ("b", 0), ("a", 1), ("c", 0), ("b", 1), ("b", 2)]
            .into_iter()
            .map(|(t, i)| job(t, i))
            .collect();
        assert_eq!(promote_task(&mut q, "b"), 3);
        assert_eq!(order(&q), ["b/0", "b/1", "b/2", "a/0", "a/1", "c/0"]);
        assert_eq!(promote_task(&mut q, "z"), 0);
        assert_eq!(order(&q), ["b/0", "b/1", "b/2", "a/0", "a/1", "c/0"]);
    }

    /// One worker and one overlap slot; the first job's ground truth slept (100 s of test,
    /// half a second of CPU). It runs beside the primary, and the others run as the primary
    /// meanwhile, instead of waiting for the admission of extras to find the core idle.
    #[test]
    fn a_known_sleeper_runs_beside_the_primary_and_leaves_it_to_the_others() {
        let sleeper = Job {
            expected_secs: Some(100.0),
            expected_cpu_secs: Some(0.5),
            ..job("sleeper", 0)
        };
        let mut jobs = vec![sleeper];
        jobs.extend((0..3).map(|i| job("fast", i)));
        let roles = Mutex::new(Vec::new());
        let fast_done = (Mutex::new(0), std::sync::Condvar::new());
        let step = |_: &mut (), j: &Job, seat: &Seat| -> Result<Outcome, ExecError> {
            roles
                .lock()
                .unwrap()
                .push((j.task_id().to_string(), seat.role()));
            if j.task_id() == "sleeper" {
                let (n, cv) = &fast_done;
                let n = n.lock().unwrap();
                let _ = cv.wait_timeout_while(n, Duration::from_secs(20), |n| *n < 3);
            } else {
                *fast_done.0.lock().unwrap() += 1;
                fast_done.1.notify_all();
            }
            Ok(Outcome::new(Status::Pass, Default::default()))
        };
        run_jobs(jobs, Admission::new(1, 2, 0), &step, &|_, _, _| {});
        let roles = roles.into_inner().unwrap();
        assert_eq!(roles.len(), 4);
        for (task, role) in roles {
            let want = if task == "sleeper" {
                Role::Extra
            } else {
                Role::Primary
            };
            assert_eq!(role, Some(want), "{task}");
        }
    }

    /// One worker and one overlap slot. A known sleeper runs as the extra; held (credited) for
    /// over a second, it fails, and runs again as the primary once the role frees, where it
    /// passes: that verdict is reported, once, with what came before. A sample that failed
    /// unheld is not run again, and a rerun that fails is final.
    #[test]
    fn a_held_sample_that_failed_runs_again_as_a_primary_and_only_that_verdict_counts() {
        use crate::freeze::Freezable;
        use bcb_sandbox::wire::ControlPipe;
        let sleeper = |task: &str| Job {
            expected_secs: Some(100.0),
            expected_cpu_secs: Some(0.5),
            ..job(task, 0)
        };
        let jobs = vec![sleeper("held"), job("fails", 0), sleeper("held-twice")];
        let (_supervisor, ctrl) = std::io::pipe().unwrap();
        let ctrl = std::sync::Arc::new(ControlPipe::new(std::fs::File::from(
            std::os::fd::OwnedFd::from(ctrl),
        )));
        let cgroup = tempfile::tempdir().unwrap();
        let runs = Mutex::new(Vec::new());
        let step = |_: &mut (), j: &Job, seat: &Seat| -> Result<Outcome, ExecError> {
            let role = seat.role().expect("a running seat");
            runs.lock().unwrap().push((j.task_id().to_string(), role));
            let held = role == Role::Extra && j.task_id().starts_with("held");
            if held {
                let f = std::sync::Arc::new(Freezable::new(
                    cgroup.path().to_path_buf(),
                    None,
                    ctrl.clone(),
                    0,
                ));
                seat.attach(f.clone());
                // It waited that long for a core at the lowest weight.
                f.credit(RERUN_HELD_OVER + Duration::from_millis(200));
                seat.detach();
            }
            let pass = j.task_id() == "held" && !held;
            let status = if pass { Status::Pass } else { Status::Fail };
            Ok(Outcome::new(status, Default::default()))
        };
        let done = Mutex::new(Vec::new());
        run_jobs(jobs, Admission::new(1, 2, 0), &step, &|_,
                                                         j: Job,
                                                         o: Result<
            Outcome,
            ExecError,
        >| {
            done.lock()
                .unwrap()
                .push((j.task_id().to_string(), o.unwrap()));
        });
        let mut runs = runs.into_inner().unwrap();
        runs.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then((a.1 == Role::Primary).cmp(&(b.1 == Role::Primary)))
        });
        assert_eq!(
            runs,
            [
                ("fails".to_string(), Role::Primary),
                ("held".to_string(), Role::Extra),
                ("held".to_string(), Role::Primary),
                ("held-twice".to_string(), Role::Extra),
                ("held-twice".to_string(), Role::Primary),
            ]
        );
        let mut done = done.into_inner().unwrap();
        done.sort_by(|a, b| a.0.cmp(&b.0));
        let verdicts: Vec<(&str, Status, Option<&str>)> = done
            .iter()
            .map(|(t, o)| (t.as_str(), o.status, o.remark.as_ref().map(Remark::kind)))
            .collect();
        assert_eq!(
            verdicts,
            [
                ("fails", Status::Fail, None),
                ("held", Status::Pass, Some("rerun_unheld")),
                ("held-twice", Status::Fail, Some("rerun_unheld")),
            ]
        );
        let Some(Remark::RerunUnheld { held_ms, first, .. }) = &done[1].1.remark else {
            unreachable!()
        };
        assert_eq!(*first, Status::Fail);
        assert!(*held_ms >= RERUN_HELD_OVER.as_millis() as u64, "{held_ms}");
    }

    #[test]
    fn queue_runs_every_job_once_and_promotes_a_timed_out_task() {
        // Task "slow" times out on its first sample: its other samples run before "fast"'s.
        let mut jobs = vec![job("slow", 0)];
        jobs.extend((0..4).map(|i| job("fast", i)));
        jobs.extend((1..4).map(|i| job("slow", i)));
        let seen = Mutex::new(Vec::new());
        let step = |_: &mut (), j: &Job, _: &Seat| -> Result<Outcome, ExecError> {
            let status = if j.task_id() == "slow" {
                Status::Timeout
            } else {
                Status::Pass
            };
            Ok(Outcome::new(status, Default::default()))
        };
        let done = |_t, j: Job, _o: Result<Outcome, ExecError>| {
            seen.lock().unwrap().push(j);
        };
        run_jobs(jobs, Admission::new(1, 1, 0), &step, &done);
        let seen: VecDeque<Job> = seen.into_inner().unwrap().into();
        assert_eq!(
            order(&seen),
            ["slow/0", "slow/1", "slow/2", "slow/3", "fast/0", "fast/1", "fast/2", "fast/3"]
        );
    }
}
