//! The engine: ONE executor serving a fair queue of submissions for as long as the engine is
//! open, so its workers stay warm between phases and between submitters.
//!
//! A group is one submitter (a batch phase, or one client's submission with its retries);
//! [`Engine::enqueue`] adds a pass of jobs to a group and returns a [`Pass`] that yields each
//! job's result as it finishes and ends when every job of the pass was delivered or dropped
//! (cancelled, or the executor stopped). Groups take turns in rounds: each group with queued
//! jobs gets one job a round, and a group that arrives joins the current round, so one group
//! of 1,000 jobs does not starve a later one of 1. Within a round, a task that timed out
//! meanwhile goes before all; then, on the costly lanes ([`Engine::with_costly_lanes`]: while
//! fewer jobs run that were picked there), the head expected to use the most CPU, so a sample
//! that needs a core for a minute starts as it comes instead of last, where it alone would
//! make the run's tail; elsewhere the cheap heads (a known sleeper's first,
//! [`Job::expected_to_sleep`], then the least CPU; see [`expected_cpu`]), so a server fed many
//! one-sample submissions answers its sleepers and short samples early and its clients keep
//! sending, and after them the costliest. Within a group, jobs keep the order given (longest
//! first).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bcb_execute::intake::{promote_task, Bell};
use bcb_execute::{ExecError, Executor, Job, JobSource, Outcome, Peek, Ticket};

/// One job's result, for the pass that enqueued it.
pub(crate) struct Delivery {
    /// Index of the job in its pass.
    pub index: usize,
    pub job: Job,
    pub result: Result<Outcome, ExecError>,
}

/// Where a job's result goes.
struct Route {
    index: usize,
    tx: Sender<Delivery>,
}

struct Entry {
    ticket: Ticket,
    job: Job,
    route: Route,
}

#[derive(Default)]
struct State {
    /// Queued jobs of each group; a group with none has no entry.
    queues: HashMap<u64, VecDeque<Entry>>,
    /// The round in which each group may get its next job (kept until it is forgotten, so
    /// a group that empties and comes back does not get a second job in one round).
    next_round: HashMap<u64, u64>,
    /// The round of the last job handed out: groups joining now take their turn in it.
    round: u64,
    /// Tasks that had a sample time out while their jobs were queued: their heads go first
    /// within a round (they probably wait too). Cleared whenever the queue runs dry.
    hurried: HashSet<String>,
    /// Per job in flight: its group, where its result goes, and whether it was picked for a
    /// costly lane.
    in_flight: HashMap<Ticket, (u64, Route, bool)>,
    /// How many jobs in flight may have been picked costliest first (0: none are).
    costly_lanes: usize,
    /// Per group: (errors in a row with no verdict between, the limit that trips it).
    breakers: HashMap<u64, (usize, usize)>,
    cancelled: HashSet<u64>,
    next_ticket: u64,
    next_group: u64,
    closed: bool,
    /// The executor returned (with this error, if any): nothing runs any more.
    stopped: Option<Option<ExecError>>,
}

impl State {
    fn queued(&self) -> usize {
        self.queues.values().map(VecDeque::len).sum()
    }

    /// The group whose head goes next, and whether it goes on a costly lane: the earliest
    /// round first; within it a hurried task's head; then, while a costly lane is free, the
    /// head expected to use the most CPU, else a cheap head (a known sleeper's first, then
    /// the least CPU), else the costliest; then the oldest (smallest ticket).
    fn next_group(&self) -> Option<(u64, bool)> {
        let costly = self.in_flight.values().filter(|(.., c)| *c).count() < self.costly_lanes;
        self.queues
            .iter()
            .filter_map(|(g, q)| q.front().map(|head| (*g, head)))
            .min_by(|(ga, a), (gb, b)| {
                let round = |g: &u64| self.next_round.get(g).copied().unwrap_or(0);
                let hurried = |e: &Entry| self.hurried.contains(e.job.task_id());
                let cpu = |e: &Entry| expected_cpu(&e.job);
                let sleeps = |e: &Entry| e.job.expected_to_sleep();
                let cheap = |e: &Entry| cpu(e) <= CHEAP_CPU_SECS;
                let by_cpu = if costly {
                    cpu(b).total_cmp(&cpu(a))
                } else if cheap(a) && cheap(b) {
                    sleeps(b).cmp(&sleeps(a)).then(cpu(a).total_cmp(&cpu(b)))
                } else {
                    // Cheap ones first; among costly ones the costliest (the longest first
                    // makes the shortest tail).
                    cheap(b).cmp(&cheap(a)).then(cpu(b).total_cmp(&cpu(a)))
                };
                round(ga)
                    .cmp(&round(gb))
                    .then_with(|| hurried(b).cmp(&hurried(a)))
                    .then(by_cpu)
                    .then_with(|| a.ticket.cmp(&b.ticket))
            })
            .map(|(g, _)| (g, costly))
    }
}

/// A job expected to use at most this much CPU is cheap: outside the costly lanes the cheap
/// go first (least first), since one delays a costlier job by little and its answer brings its
/// client's next request; the costly follow costliest first.
const CHEAP_CPU_SECS: f64 = 2.0;

/// What a job is expected to take of a core: the ground truth's CPU time, else its expected
/// test time (as if CPU-bound), else nothing known (0: it goes early and is measured).
///
/// The cheap least first across submitters, because the clients of a server wait for answers
/// before they send more: a sample that sleeps (BigCodeBench/461: 156 s of wall, 1.4 s of
/// CPU) or ends quickly is answered early and its client's next samples come while the cores
/// are busy, instead of the cores idling at the end behind a sleeper that came last.
fn expected_cpu(job: &Job) -> f64 {
    job.expected_cpu_secs.or(job.expected_secs).unwrap_or(0.0)
}

impl State {
    /// Drops `group`'s queued jobs; returns how many.
    fn drop_queue(&mut self, group: u64) -> usize {
        self.queues.remove(&group).map_or(0, |q| q.len())
    }
}

/// Counts for metrics, at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Jobs waiting for a slot (all submissions).
    pub queued: usize,
    /// Jobs running now.
    pub in_flight: usize,
    /// Submissions with queued jobs.
    pub waiting_groups: usize,
}

/// The shared queue and routing table; the executor pulls from it as a [`JobSource`].
#[derive(Default)]
pub(crate) struct Engine {
    state: Mutex<State>,
    bell: Bell,
}

/// A pass of jobs in flight: iterate to get each job's result as it finishes; the iterator
/// ends once every job was delivered or dropped.
pub(crate) struct Pass {
    pub rx: Receiver<Delivery>,
}

impl Engine {
    #[cfg(test)]
    pub fn new() -> Arc<Engine> {
        Arc::new(Engine::default())
    }

    /// An engine where up to `lanes` jobs in flight are picked costliest first (see the
    /// module docs); the rest least first.
    pub fn with_costly_lanes(lanes: usize) -> Arc<Engine> {
        let engine = Engine::default();
        engine.state.lock().unwrap().costly_lanes = lanes;
        Arc::new(engine)
    }

    /// A new submitter: its own turn in each round.
    pub fn group(&self) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.next_group += 1;
        s.next_group
    }

    /// Queues `jobs` (in their order) for `group`. A closed or stopped engine, or a
    /// cancelled group, takes nothing: the pass ends at once with nothing delivered.
    ///
    /// The breaker: a fatal error, or `breaker` errors in a row with no verdict between
    /// (the executor is broken, not a job), drops the group's queued jobs at once — decided
    /// on the executor's thread as it reports, so no further job of the group starts.
    pub fn enqueue(&self, group: u64, jobs: Vec<Job>, breaker: usize) -> Pass {
        let (tx, rx) = channel();
        let len = jobs.len();
        {
            let mut s = self.state.lock().unwrap();
            if !(s.closed || s.stopped.is_some() || s.cancelled.contains(&group)) && len > 0 {
                let mut entries = Vec::with_capacity(len);
                for (index, job) in jobs.into_iter().enumerate() {
                    s.next_ticket += 1;
                    entries.push(Entry {
                        ticket: Ticket(s.next_ticket),
                        job,
                        route: Route {
                            index,
                            tx: tx.clone(),
                        },
                    });
                }
                s.breakers.insert(group, (0, breaker.max(1)));
                let round = s.round;
                let next = s.next_round.entry(group).or_insert(round);
                *next = (*next).max(round);
                s.queues.entry(group).or_default().extend(entries);
            }
        }
        drop(tx);
        self.bell.ring();
        Pass { rx }
    }

    /// Drops `group`'s queued jobs (running ones finish and are delivered); returns how many.
    pub fn cancel_queued(&self, group: u64) -> usize {
        self.state.lock().unwrap().drop_queue(group)
    }

    /// Cancels `group` for good: queued jobs are dropped and later passes take nothing.
    pub fn cancel(&self, group: u64) -> usize {
        self.state.lock().unwrap().cancelled.insert(group);
        self.cancel_queued(group)
    }

    pub fn is_cancelled(&self, group: u64) -> bool {
        self.state.lock().unwrap().cancelled.contains(&group)
    }

    /// Forgets a finished group (its id is never reused).
    pub fn forget(&self, group: u64) {
        let mut s = self.state.lock().unwrap();
        s.cancelled.remove(&group);
        s.breakers.remove(&group);
        s.next_round.remove(&group);
        s.queues.remove(&group);
    }

    /// No new work: the executor returns once the queue is drained and running jobs finished.
    pub fn close(&self) {
        self.state.lock().unwrap().closed = true;
        self.bell.ring();
    }

    /// Drops every queued job and closes: running jobs finish, nothing else starts.
    pub fn abort(&self) {
        let mut s = self.state.lock().unwrap();
        s.queues.clear();
        s.closed = true;
        drop(s);
        self.bell.ring();
    }

    /// Runs `f` with `executor` serving a fresh engine on a scoped thread; afterwards the
    /// engine is closed (aborted if `f` failed) and the executor has returned.
    pub fn scoped<R, E>(
        executor: &dyn Executor,
        f: impl FnOnce(&Engine) -> Result<R, E>,
    ) -> Result<R, E> {
        let engine = Engine::default();
        std::thread::scope(|s| {
            let server = s.spawn(|| engine.serve(executor));
            let result = f(&engine);
            match &result {
                Ok(_) => engine.close(),
                Err(_) => engine.abort(),
            }
            if let Ok(Err(e)) = server.join() {
                tracing::debug!("executor stopped: {e}");
            }
            result
        })
    }

    /// Whether new passes are taken (not closed, the executor still serving).
    pub fn accepting(&self) -> bool {
        let s = self.state.lock().unwrap();
        !s.closed && s.stopped.is_none()
    }

    /// Why the executor stopped, once it did (`Some(None)`: it returned without error).
    pub fn stopped(&self) -> Option<Option<ExecError>> {
        self.state.lock().unwrap().stopped.clone()
    }

    pub fn stats(&self) -> EngineStats {
        let s = self.state.lock().unwrap();
        EngineStats {
            queued: s.queued(),
            in_flight: s.in_flight.len(),
            waiting_groups: s.queues.len(),
        }
    }

    /// Runs `executor` on this engine's queue until [`Engine::close`] (then drained); call it
    /// on the thread that owns the executor's lifetime. Afterwards every pass still waiting
    /// ends (its undelivered jobs count as unreported).
    pub fn serve(&self, executor: &dyn Executor) -> Result<(), ExecError> {
        // The executor starts (and warms its workers) with the first job, not before: a run
        // that finds everything journaled or cached starts nothing.
        if self.first_job_or_close() {
            self.serve_at_once(executor)
        } else {
            Ok(())
        }
    }

    /// [`Engine::serve`] for a service: the executor starts (and warms its workers) now, not
    /// with the first job, so the first request does not wait on imports.
    pub fn serve_at_once(&self, executor: &dyn Executor) -> Result<(), ExecError> {
        let result = executor.serve(self, &|ticket, job, result| {
            self.deliver(ticket, job, result)
        });
        let mut s = self.state.lock().unwrap();
        s.stopped = Some(result.as_ref().err().cloned());
        s.queues.clear();
        s.in_flight.clear();
        drop(s);
        result
    }

    /// Waits for the first job (true) or the engine's close with none (false: stopped).
    fn first_job_or_close(&self) -> bool {
        loop {
            let s = self.state.lock().unwrap();
            if !s.queues.is_empty() {
                return true;
            }
            if s.closed {
                drop(s);
                self.state.lock().unwrap().stopped = Some(None);
                return false;
            }
            drop(s);
            self.bell.wait(Duration::from_secs(1));
        }
    }

    fn deliver(&self, ticket: Ticket, job: Job, result: Result<Outcome, ExecError>) {
        let route = {
            let mut s = self.state.lock().unwrap();
            let route = s.in_flight.remove(&ticket);
            if let Some((group, ..)) = &route {
                let group = *group;
                if let Some((errors, limit)) = s.breakers.get_mut(&group) {
                    let trip = match &result {
                        Ok(_) => {
                            *errors = 0;
                            false
                        }
                        Err(e) => {
                            *errors += 1;
                            !e.is_transient() || *errors >= *limit
                        }
                    };
                    if trip {
                        s.drop_queue(group);
                    }
                }
            }
            route
        };
        if let Some((_, route, _)) = route {
            // A pass nobody listens to any more (its submitter went away) drops it.
            let _ = route.tx.send(Delivery {
                index: route.index,
                job,
                result,
            });
        }
    }
}

impl JobSource for Engine {
    fn peek(&self) -> Peek {
        let s = self.state.lock().unwrap();
        let front = s
            .next_group()
            .and_then(|(g, _)| s.queues.get(&g))
            .and_then(|q| q.front());
        match front {
            Some(e) => Peek::Ready(e.job.id.clone()),
            None if s.closed => Peek::Closed,
            None => Peek::Idle,
        }
    }

    fn pull(&self) -> Option<(Ticket, Job)> {
        let mut s = self.state.lock().unwrap();
        let (group, costly) = s.next_group()?;
        let queue = s.queues.get_mut(&group)?;
        let entry = queue.pop_front()?;
        if queue.is_empty() {
            s.queues.remove(&group);
        }
        // This group's next job waits for the next round, after every other group's.
        let round = s.next_round.get(&group).copied().unwrap_or(s.round);
        s.round = round;
        s.next_round.insert(group, round + 1);
        if s.queues.is_empty() {
            s.hurried.clear();
        }
        s.in_flight
            .insert(entry.ticket, (group, entry.route, costly));
        Some((entry.ticket, entry.job))
    }

    fn promote(&self, task: &str) -> usize {
        let mut s = self.state.lock().unwrap();
        let moved = s
            .queues
            .values_mut()
            .map(|q| promote_task(q, task, |e| e.job.task_id()))
            .sum();
        if moved > 0 {
            s.hurried.insert(task.to_string());
        }
        moved
    }

    fn wait(&self, timeout: Duration) {
        self.bell.wait(timeout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bcb_execute::{JobId, Program};

    fn job(task: &str, i: usize) -> Job {
        Job {
            id: JobId::new(task, Program::Sample(i), task),
            code: "".into(),
            test: "".into(),
            entry_point: "task_func".into(),
            time_limit: Duration::from_secs(1),
            kind: bcb_execute::JobKind::Unittest,
            expected_secs: None,
            expected_cpu_secs: None,
        }
    }

    fn pulled(e: &Engine, n: usize) -> Vec<String> {
        (0..n)
            .filter_map(|_| e.pull())
            .map(|(_, j)| j.id.to_string())
            .collect()
    }

    #[test]
    fn groups_take_turns_and_a_later_single_job_is_not_starved() {
        let e = Engine::new();
        let (a, b) = (e.group(), e.group());
        let _pa = e.enqueue(a, (0..1000).map(|i| job("BigCodeBench/1", i)).collect(), 4);
        assert_eq!(pulled(&e, 2).len(), 2);
        let _pb = e.enqueue(b, vec![job("BigCodeBench/2", 0)], 4);
        let next = pulled(&e, 2);
        assert!(
            next.iter().any(|j| j.starts_with("BigCodeBench/2")),
            "{next:?}"
        );
        assert_eq!(e.stats().in_flight, 4);
    }

    fn timed(task: &str, i: usize, secs: f64) -> Job {
        Job {
            expected_secs: Some(secs),
            ..job(task, i)
        }
    }

    #[test]
    fn among_many_one_job_groups_the_cheap_go_first_least_first_then_the_costliest() {
        let e = Engine::new();
        // (task, expected wall, expected CPU): a known sleeper like BigCodeBench/461 goes
        // first (its wait overlaps the rest); without a CPU measure the wall stands in.
        let jobs = [
            ("cpu-bound", Some(72.0), Some(51.0)),
            ("sleeper", Some(156.0), Some(1.4)),
            ("short", Some(0.5), Some(0.4)),
            ("wall-only", Some(3.0), None),
            ("unknown", None, None),
        ];
        let _passes: Vec<Pass> = jobs
            .iter()
            .map(|(t, wall, cpu)| {
                let j = Job {
                    expected_secs: *wall,
                    expected_cpu_secs: *cpu,
                    ..job(t, 0)
                };
                e.enqueue(e.group(), vec![j], 4)
            })
            .collect();
        assert!(
            matches!(e.peek(), Peek::Ready(id) if id.task_id == "sleeper"),
            "peek agrees with pull"
        );
        let order: Vec<String> = (0..5)
            .filter_map(|_| e.pull())
            .map(|(_, j)| j.task_id().to_string())
            .collect();
        assert_eq!(
            order,
            ["sleeper", "unknown", "short", "cpu-bound", "wall-only"]
        );
    }

    #[test]
    fn a_costly_lane_starts_the_costliest_job_while_the_others_take_the_cheapest() {
        let e = Engine::with_costly_lanes(1);
        let cpu_job = |t: &str, cpu: f64| Job {
            expected_cpu_secs: Some(cpu),
            ..job(t, 0)
        };
        let _passes: Vec<Pass> = [("a", 1.0), ("b", 50.0), ("c", 0.5), ("d", 12.0), ("e", 2.0)]
            .iter()
            .map(|(t, cpu)| e.enqueue(e.group(), vec![cpu_job(t, *cpu)], 4))
            .collect();
        let pull = || e.pull().unwrap();
        let (costliest, j) = pull();
        assert_eq!(j.task_id(), "b", "the lane is free: the costliest goes");
        let (_, j) = pull();
        assert_eq!(j.task_id(), "c", "the lane is taken: the cheapest goes");
        let (cheap, j) = pull();
        assert_eq!(j.task_id(), "a");
        e.deliver(cheap, j, Err(ExecError::transient("x")));
        assert!(
            matches!(e.peek(), Peek::Ready(id) if id.task_id == "e"),
            "a cheap job's end frees no lane"
        );
        e.deliver(costliest, job("b", 0), Err(ExecError::transient("x")));
        assert!(
            matches!(e.peek(), Peek::Ready(id) if id.task_id == "d"),
            "the costly job's end frees its lane"
        );
    }

    #[test]
    fn a_short_one_job_group_waits_one_round_at_most_behind_long_groups() {
        let e = Engine::new();
        let (a, b) = (e.group(), e.group());
        let _pa = e.enqueue(a, (0..100).map(|i| timed("long", i, 200.0)).collect(), 4);
        let _pb = e.enqueue(
            b,
            (0..100).map(|i| timed("long", 100 + i, 100.0)).collect(),
            4,
        );
        assert_eq!(pulled(&e, 5).len(), 5);
        let c = e.group();
        let _pc = e.enqueue(c, vec![timed("short", 0, 0.1)], 4);
        let next: Vec<String> = (0..3)
            .filter_map(|_| e.pull())
            .map(|(_, j)| j.task_id().to_string())
            .collect();
        assert!(next.contains(&"short".to_string()), "{next:?}");
        // and the two big groups still alternate: one job each a round
        let rest: Vec<f64> = (0..6)
            .filter_map(|_| e.pull())
            .map(|(_, j)| j.expected_secs.unwrap())
            .collect();
        assert!(rest.windows(2).all(|w| w[0] != w[1]), "{rest:?}");
    }

    #[test]
    fn a_group_that_empties_and_comes_back_does_not_get_two_jobs_in_a_round() {
        let e = Engine::new();
        let (a, b) = (e.group(), e.group());
        let _pb = e.enqueue(b, (0..10).map(|i| timed("b", i, 50.0)).collect(), 4);
        let _pa = e.enqueue(a, vec![timed("a", 0, 1.0)], 4);
        let task = |e: &Engine| e.pull().map(|(_, j)| j.task_id().to_string());
        assert_eq!(task(&e).as_deref(), Some("a"), "the cheaper head");
        let _pa2 = e.enqueue(a, vec![timed("a", 1, 1.0)], 4);
        assert_eq!(task(&e).as_deref(), Some("b"), "a had its job this round");
        assert_eq!(task(&e).as_deref(), Some("a"));
        assert_eq!(task(&e).as_deref(), Some("b"));
    }

    #[test]
    fn a_timed_out_tasks_head_goes_first_within_its_round() {
        let e = Engine::new();
        let _p: Vec<Pass> = [("a", 100.0), ("b", 1.0), ("c", 50.0)]
            .iter()
            .map(|(t, s)| e.enqueue(e.group(), vec![timed(t, 0, *s)], 4))
            .collect();
        assert_eq!(e.promote("a"), 1);
        let order: Vec<String> = (0..3)
            .filter_map(|_| e.pull())
            .map(|(_, j)| j.task_id().to_string())
            .collect();
        assert_eq!(order, ["a", "b", "c"]);
    }

    #[test]
    fn a_cancelled_group_loses_its_queue_and_its_pass_ends() {
        let e = Engine::new();
        let g = e.group();
        let pass = e.enqueue(g, vec![job("t", 0), job("t", 1), job("t", 2)], 4);
        let (t, j) = e.pull().unwrap();
        assert_eq!(e.cancel(g), 2);
        assert_eq!(e.peek(), Peek::Idle);
        e.deliver(
            t,
            j,
            Ok(Outcome::new(bcb_execute::Status::Pass, Default::default())),
        );
        let got: Vec<usize> = pass.rx.iter().map(|d| d.index).collect();
        assert_eq!(got, [0], "the running job is delivered, then the pass ends");
        assert_eq!(e.enqueue(g, vec![job("t", 3)], 4).rx.iter().count(), 0);
        e.close();
        assert_eq!(e.peek(), Peek::Closed);
    }
}
