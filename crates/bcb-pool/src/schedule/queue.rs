//! The work queue's workers: each asks [`Queue::admit`] for a job, runs it on its seat and
//! hands the outcome to [`Queue::finish`]; one sampler thread measures idle cores and our
//! demand and runs the governor's pass.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::admission::{Admission, Load};
use super::demand::our_demand;
use crate::freeze::{
    govern, promote_oldest, thaw_oldest, Pass, Role, Sampler, Seat, RERUN_HELD_OVER,
};
use crate::procfs::{cpu_jiffies, mem_available_mb};
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
/// Demand samples whose maximum counts (one per interval): a CPU-bound sample between two
/// tests or waiting on a read for a moment is not mistaken for a sleeper, and a sample
/// admitted within the window shows at once.
const DEMAND_WINDOW: usize = 3;

/// Moves the queued jobs of `task` to the front, keeping their order and everyone else's.
/// Returns how many moved.
#[cfg(test)]
pub(super) fn promote_task(queue: &mut VecDeque<Job>, task: &str) -> usize {
    bcb_executor::intake::promote_task(queue, task, Job::task_id)
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

/// Whether `outcome` is a timeout spent mostly waiting rather than computing. Not a process
/// bomb ended at its limit: its own process's CPU misses its children's spinning.
pub(super) fn slept(outcome: &Outcome) -> bool {
    outcome.status == Status::Timeout
        && outcome.remark != Some(Remark::KilledAtProcessLimit)
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
                    let mut worker = QueueWorker {
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
struct QueueWorker {
    index: usize,
    /// Set when this overlap slot just finished a sample: it may go on (see `Load::renewing`).
    just_finished: bool,
}

impl QueueWorker {
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
    fn take(&self, worker: &mut QueueWorker) -> Option<Taken> {
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
    fn admit(&self, worker: &mut QueueWorker) -> Admit {
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
            Peek::Ready(next) => next.task_id,
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
        worker: &mut QueueWorker,
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
