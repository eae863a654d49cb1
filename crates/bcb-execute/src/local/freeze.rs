//! Extra samples never slow the `--parallel` ones.
//!
//! Every running sample holds a role: the first `workers` in flight are *primary*, the ones
//! the scheduler let in beyond them (while CPUs idled: samples that sleep or wait) are
//! *extra*.
//!
//! Where the slot has a cgroup v1 `cpu` group (root, with the freezer: the usual case), an
//! extra sample that computes runs at the lowest CPU weight (`cpu.shares` 2 against a
//! primary's 1024): the kernel gives it only what the primaries leave, with no measurement
//! in between, so it fills the fraction of a core a thread pool leaves as well as a whole
//! idle one. An extra starts at the default weight and drops to the lowest once it used a
//! quarter of a core over an interval (100 ms); it gets the default back once it goes quiet
//! (no thread runnable at two measurements). A sample that mostly sleeps so keeps the
//! default weight, and its brief wake-ups are served at once (at the lowest weight beside
//! busy primaries, a server thread can wait a second for a millisecond of CPU and miss its
//! test's fixed sleep).
//! What an extra loses waiting for a core is credited to its clock every interval (its
//! threads' wait over their wait plus run, from `/proc/TID/schedstat`): its supervisor moves
//! its kill deadline and the in-sample alarm by that time (`harness.py`, op `credit`), and
//! the slot's own watchdog here does the same, so a verdict does not depend on what ran
//! beside it. The kernel adds a wait to `schedstat` only once the thread gets its CPU, so
//! an extra at the lowest weight that stays runnable yet uses almost nothing is starved:
//! it gets the default weight back for one interval, and only if it is still runnable
//! after using its share of a core then (it computes, rather than finishing a burst a
//! waiting thread of its test needs in time) is it frozen when starved (its clock then
//! stops exactly), and thawed, oldest first, once half a core has stayed free
//! ([`next_weight`]) or when the scheduler would start a new sample beyond the workers (the
//! core goes to the oldest frozen one instead: [`thaw_oldest`]). Once quiet, it starts over
//! (probed again before any freeze). When it becomes primary, it gets the default weight back.
//!
//! Without a cpu group, the governor freezes instead (cgroup v1 freezer, through the slot's
//! supervisor): when an extra sample wakes up and what our samples ask of the CPUs (their
//! threads' time on a CPU or waiting for one over the last interval) exceeds the cores
//! (`min(workers, CPUs)`), it freezes extras, newest first, and thaws the oldest frozen one
//! once a whole core has stayed free for a few intervals. Asking is not enough to be frozen:
//! the sample must also have used CPU over the last interval ([`FREEZE_CPU_SHARE`] of a
//! core). A sleeper that wakes into a run queue the machine's other load keeps long asks
//! while it waits, yet takes nothing; frozen, it would wait until a core stays free (in a
//! CPU-bound run, until it becomes primary) and its sleep would stop overlapping the run.
//! A frozen sample's deadlines stop with it, as for credited time. A slot warming up for an
//! extra sample (seconds of imports, in the freezer cgroup only) is governed this way too.
//! A sample that sleeps asks for nothing, so it is never frozen and its sleep overlaps the
//! others as before.
//!
//! Roles belong to running samples, not to workers: when a primary sample ends while extras
//! run, the oldest extra becomes primary (thawed, never frozen again, at the default weight)
//! and the worker's next sample is the extra one.
//!
//! Where there is no freezer cgroup (no root, cgroup v2 without a delegated subtree), no
//! sample can be frozen, so by default none is admitted beyond `--parallel`
//! (`Base::admission`); an explicit `--max-in-flight` still overlaps, unguarded.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::sandbox::thaw_cgroup;

/// Intervals a core must have stayed free before a frozen sample is thawed.
const THAW_WINDOW: usize = 3;
/// Share of a core an extra sample must have used over the last interval to be frozen.
const FREEZE_CPU_SHARE: f64 = 0.25;
/// Demand over the cores (in cores) tolerated before an extra is frozen, and by which a
/// thaw may overshoot them: measurement noise of a 100-ms interval, not a share of a core
/// worth taking from a primary sample.
const DEMAND_SLACK: f64 = 0.15;
/// cgroup v1 `cpu.shares` of a primary sample (the kernel's default) and of an extra one
/// (the kernel's minimum: about 0.2% of a core against one primary that wants it).
const PRIMARY_CPU_SHARES: u32 = 1024;
const EXTRA_CPU_SHARES: u32 = 2;
/// Share of a core under which a shielded extra with runnable threads counts as starved.
const STARVED_CPU_SHARE: f64 = 0.05;
/// Most time a sample may be held, frozen or credited for waiting for a core: its deadlines
/// move by at most this, so a sample's wall never exceeds its time limit by more, whatever
/// the governor did or failed to do. Once spent, the sample is never frozen again and runs
/// at the default weight (it competes for the cores as a primary does). The supervisor holds
/// the same budget (`freeze_budget_secs` on the wire) and thaws the sample itself once it is
/// spent, so a governor that stopped, or lost track of a freeze, cannot leave one frozen.
pub(crate) const FREEZE_BUDGET: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// One of the `workers` samples that always run.
    Primary,
    /// Admitted beyond them; frozen whenever it would take a core from a primary one.
    Extra,
}

#[derive(Default)]
struct Clock {
    /// Time frozen (closed spells) and credited, at most [`FREEZE_BUDGET`].
    total: Duration,
    since: Option<Instant>,
    /// The sample ended: a late governor decision must not reach the slot's next sample.
    ended: bool,
    /// The sample is primary: a freeze the governor decided while it was still extra must
    /// not land (no rule ever thaws a primary, so it would stay frozen for good).
    primary: bool,
}

impl Clock {
    /// Frozen and credited time so far, the running spell included, uncapped.
    fn held(&self) -> Duration {
        self.total + self.since.map_or(Duration::ZERO, |s| s.elapsed())
    }

    fn spent(&self) -> bool {
        self.held() >= FREEZE_BUDGET
    }
}

/// A running sample that can be frozen: its freezer cgroup and its supervisor's control pipe.
pub(crate) struct Freezable {
    cgroup: PathBuf,
    /// The slot's cpu cgroup: where there is one, a busy extra sample runs at the lowest CPU
    /// weight, its clock credited with the time it waited for a core, and is frozen only
    /// when starved.
    cpu: Option<PathBuf>,
    /// The `cpu.shares` last written (0: none yet).
    shares: AtomicU32,
    /// Given the default weight back because it starved at the lowest: the next
    /// measurement tells whether it computes or only had a burst to finish.
    probing: AtomicBool,
    /// A probe showed it computes: starved at the lowest weight, it is frozen (until it
    /// goes quiet).
    computes: AtomicBool,
    /// The supervisor's control pipe; `None`: a slot warming up inside the cgroup, frozen
    /// directly (its supervisor is frozen with it).
    ctrl: Option<Arc<File>>,
    /// The job's key on the wire: the supervisor ignores ops for any other job.
    key: u64,
    clock: Mutex<Clock>,
}

impl Freezable {
    pub fn new(cgroup: PathBuf, cpu: Option<PathBuf>, ctrl: Arc<File>, key: u64) -> Freezable {
        Freezable {
            cgroup,
            cpu,
            shares: AtomicU32::new(0),
            probing: AtomicBool::new(false),
            computes: AtomicBool::new(false),
            ctrl: Some(ctrl),
            key,
            clock: Mutex::new(Clock::default()),
        }
    }

    /// A slot warming up inside `cgroup` (imports cost seconds of CPU): frozen directly.
    pub fn warming(cgroup: PathBuf) -> Freezable {
        Freezable {
            cgroup,
            cpu: None,
            shares: AtomicU32::new(0),
            probing: AtomicBool::new(false),
            computes: AtomicBool::new(false),
            ctrl: None,
            key: 0,
            clock: Mutex::new(Clock::default()),
        }
    }

    fn op(&self, op: &str) -> bool {
        self.send(&format!("{{\"op\":\"{op}\",\"key\":{}}}\n", self.key), op)
    }

    fn send(&self, line: &str, op: &str) -> bool {
        match &self.ctrl {
            // One short line: a single atomic pipe write, whoever else writes to the pipe.
            Some(ctrl) => (&**ctrl).write_all(line.as_bytes()).is_ok(),
            None => {
                let state = match op {
                    "freeze" => "FROZEN",
                    "thaw" => "THAWED",
                    _ => return false,
                };
                std::fs::write(self.cgroup.join("freezer.state"), state).is_ok()
            }
        }
    }

    /// Where the slot has a cpu cgroup: the sample's CPU weight (`cpu.shares`), written
    /// only when it changes.
    fn set_shares(&self, shares: u32) {
        if let Some(cpu) = &self.cpu {
            if self.shares.swap(shares, Ordering::Relaxed) != shares {
                let _ = std::fs::write(cpu.join("cpu.shares"), shares.to_string());
            }
        }
    }

    /// An extra sample's weight after a measurement (see [`next_weight`]); returns whether
    /// it is starved though it was shown to compute, and so is to be frozen.
    fn reweigh(&self, seen: Seen) -> bool {
        let before = Weighing {
            shares: self.shares.load(Ordering::Relaxed),
            probing: self.probing.load(Ordering::Relaxed),
            computes: self.computes.load(Ordering::Relaxed),
        };
        let (after, freeze) = next_weight(before, seen);
        self.probing.store(after.probing, Ordering::Relaxed);
        self.computes.store(after.computes, Ordering::Relaxed);
        self.set_shares(after.shares);
        freeze
    }

    /// Whether an extra sample here is weighed (and frozen only when starved) rather than
    /// frozen for our demand.
    fn shielded(&self) -> bool {
        self.cpu.is_some() && self.ctrl.is_some()
    }

    /// Time the extra sample waited for a core: its deadlines move by it, as they do by
    /// frozen time (the supervisor adds it to the same clock).
    fn credit(&self, lost: Duration) {
        let mut c = self.clock.lock().unwrap();
        let lost = lost.min(FREEZE_BUDGET.saturating_sub(c.total));
        if c.ended || c.primary || c.since.is_some() || lost.is_zero() {
            return;
        }
        let line = format!(
            "{{\"op\":\"credit\",\"key\":{},\"secs\":{:.6}}}\n",
            self.key,
            lost.as_secs_f64()
        );
        if self.send(&line, "credit") {
            c.total += lost;
        }
    }

    /// Freezes the sample unless it ended, became primary or spent its budget meanwhile
    /// (checked under the clock's lock, which those changes take too).
    fn freeze(&self) {
        let mut c = self.clock.lock().unwrap();
        if c.since.is_none() && !c.ended && !c.primary && !c.spent() && self.op("freeze") {
            c.since = Some(Instant::now());
        }
    }

    /// The sample is primary from now on: thawed, at the default weight, never frozen again.
    fn make_primary(&self) {
        let mut c = self.clock.lock().unwrap();
        c.primary = true;
        self.thaw_locked(&mut c);
        drop(c);
        self.set_shares(PRIMARY_CPU_SHARES);
    }

    /// Whether the sample has spent its [`FREEZE_BUDGET`] (it is then governed as a primary).
    fn spent(&self) -> bool {
        self.clock.lock().unwrap().spent()
    }

    /// Thaws the sample if it has been held for its whole budget (the supervisor does the
    /// same on its side; this keeps our clock and a warming slot, frozen directly, in step).
    pub fn expire(&self) {
        let mut c = self.clock.lock().unwrap();
        if c.since.is_some() && c.spent() {
            self.thaw_locked(&mut c);
        }
    }

    fn thaw(&self) {
        let mut c = self.clock.lock().unwrap();
        self.thaw_locked(&mut c);
    }

    fn thaw_locked(&self, c: &mut Clock) {
        if let Some(since) = c.since.take() {
            c.total = (c.total + since.elapsed()).min(FREEZE_BUDGET);
            if !self.op("thaw") {
                thaw_cgroup(&self.cgroup); // the supervisor is gone: never leave it frozen
            }
        }
    }

    /// The sample is over: thawed if need be, and never frozen again (one lock: a freeze
    /// decided meanwhile cannot slip in between).
    pub fn end(&self) {
        let mut c = self.clock.lock().unwrap();
        self.thaw_locked(&mut c);
        c.ended = true;
    }

    fn is_frozen(&self) -> bool {
        self.clock.lock().unwrap().since.is_some()
    }

    /// Time spent frozen or credited so far, at most [`FREEZE_BUDGET`] (the slot's watchdog
    /// adds it to the deadline).
    pub fn frozen_for(&self) -> Duration {
        self.clock.lock().unwrap().held().min(FREEZE_BUDGET)
    }

    /// Each thread of the sample's cgroup (the sample and everything it started) with the
    /// time it has spent on a CPU and waiting for one (`/proc/TID/schedstat`, ns): integrated
    /// over an interval, what the sample asked of the cores, not a moment's run-queue count
    /// (a thread pool's momentary runnable threads overstate what it uses).
    /// Also how many of the threads are runnable now (on a CPU or waiting for one: the
    /// kernel adds a wait to `schedstat` only once the thread gets its CPU, so a thread
    /// starved at the lowest weight shows there late, and here at once).
    fn runnable_ns(&self) -> (ThreadTimes, usize) {
        let Ok(tasks) = std::fs::read_to_string(self.cgroup.join("tasks")) else {
            return (ThreadTimes::new(), 0);
        };
        let mut runnable = 0;
        let times = tasks
            .split_whitespace()
            .filter_map(|tid| {
                let stat = std::fs::read_to_string(format!("/proc/{tid}/stat")).ok()?;
                let state = stat.rsplit_once(')')?.1.trim_start().chars().next();
                runnable += usize::from(state == Some('R'));
                let sched = std::fs::read_to_string(format!("/proc/{tid}/schedstat")).ok()?;
                Some((tid.parse().ok()?, schedstat_ns(&sched)?))
            })
            .collect();
        (times, runnable)
    }

    /// CPU time (clock ticks) of the cgroup's processes with the children they reaped, so
    /// a short-lived child's time stays counted once its parent waited for it.
    fn cpu_ticks(&self) -> u64 {
        let Ok(procs) = std::fs::read_to_string(self.cgroup.join("cgroup.procs")) else {
            return 0;
        };
        procs
            .split_whitespace()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
            .map(|stat| process_ticks(&stat))
            .sum()
    }
}

/// An extra sample's CPU weight and what the governor learned of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Weighing {
    shares: u32,
    probing: bool,
    computes: bool,
}

/// What one measurement of a shielded extra sample showed.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Seen {
    /// Cores used over the interval (reaped children included).
    used: f64,
    /// Threads runnable at this measurement, and at the one before.
    runnable: bool,
    was_runnable: bool,
}

/// An extra sample's next weight, and whether it is to be frozen as starved.
///
/// It drops to the lowest weight once it used [`FREEZE_CPU_SHARE`] of a core at the
/// default one, and gets the default back once it went quiet (no thread runnable at two
/// measurements). A sample that mostly sleeps so keeps the default weight, and its
/// wake-ups are served at once.
///
/// Starved at the lowest weight (threads runnable at two measurements, almost no CPU),
/// it is not frozen at once: it gets the default weight back for one interval (a probe).
/// A test that starts a server thread, sleeps a second and connects (BigCodeBench/1040)
/// needs a few milliseconds of CPU for that thread within the second; at the lowest weight
/// beside busy primaries it can wait for them for seconds, and frozen, its main thread's
/// sleep runs out meanwhile (a freeze stops the sample, not the clocks it reads), so it
/// connects before the server listens: `ConnectionRefusedError` for a correct answer. Only
/// a sample that is still runnable after a probe in which it used its share of a core
/// computes, and from then on it is frozen when starved (its clock then stops exactly),
/// until it goes quiet: then it starts over (a server that computed at its start and was
/// frozen later missed its test's window all the same). A CPU-bound extra so takes at most
/// one more interval at the default weight from the primaries per quiet spell.
fn next_weight(w: Weighing, seen: Seen) -> (Weighing, bool) {
    let busy = seen.used >= FREEZE_CPU_SHARE;
    let mut next = w;
    match w.shares {
        PRIMARY_CPU_SHARES if w.probing => {
            if busy && seen.runnable {
                next = Weighing {
                    shares: EXTRA_CPU_SHARES,
                    probing: false,
                    computes: true,
                };
            } else if !seen.runnable {
                next.probing = false; // its burst is over: it waits, at the default weight
            }
        }
        PRIMARY_CPU_SHARES if busy => next.shares = EXTRA_CPU_SHARES,
        EXTRA_CPU_SHARES => {
            let quiet = !seen.runnable && !seen.was_runnable;
            let starved = seen.runnable && seen.was_runnable && seen.used < STARVED_CPU_SHARE;
            if quiet && !busy {
                // It starts over: what it computed before says nothing about its next wake-up
                // (a server that computed at its start, frozen when starved, misses its test's
                // fixed sleep as surely as one never probed).
                next = Weighing {
                    shares: PRIMARY_CPU_SHARES,
                    probing: false,
                    computes: false,
                };
            } else if starved && !w.computes {
                next.shares = PRIMARY_CPU_SHARES;
                next.probing = true;
            } else if starved {
                return (next, true);
            }
        }
        _ => {}
    }
    (next, false)
}

/// Time on a CPU and time waiting for one (ns), from a `/proc/TID/schedstat` line.
fn schedstat_ns(line: &str) -> Option<(u64, u64)> {
    let mut f = line.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// utime + stime + cutime + cstime of one `/proc/PID/stat` line (0 if unreadable).
fn process_ticks(stat: &str) -> u64 {
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    // after the command: state is field 3, utime..cstime are fields 14..17
    rest.split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|x| x.parse::<u64>().ok())
        .sum()
}

fn clock_ticks_per_sec() -> f64 {
    // SAFETY: sysconf only reads a constant of the system.
    match unsafe { libc::sysconf(libc::_SC_CLK_TCK) } {
        t if t > 0 => t as f64,
        _ => 100.0,
    }
}

struct Running {
    role: Role,
    started: Instant,
    /// Expected to sleep (its task's ground truth mostly waited, or a sample of the task
    /// timed out asleep): it never takes a primary's place when one ends.
    sleeper: bool,
    sample: Option<Arc<Freezable>>,
    /// Cores the sample asked for (see [`View::demand`]) at the last [`THAW_WINDOW`]
    /// measurements while thawed.
    recent: VecDeque<f64>,
    /// The last measurement while thawed: when, the CPU ticks, and each thread's runnable
    /// time (none while frozen: a thawed sample starts a fresh baseline).
    last: Option<Measured>,
}

/// Each thread's time on a CPU and time waiting for one (ns), by thread id.
type ThreadTimes = HashMap<u32, (u64, u64)>;

struct Measured {
    at: Instant,
    cpu_ticks: u64,
    runnable_ns: ThreadTimes,
    /// Threads runnable at the measurement.
    runnable: usize,
}

/// What one worker is running: shared by the worker (which starts and ends samples and
/// attaches their freeze control) and the governor.
#[derive(Default)]
pub(crate) struct Seat {
    running: Mutex<Option<Running>>,
}

impl Seat {
    pub fn begin(&self, role: Role, sleeper: bool) {
        *self.running.lock().unwrap() = Some(Running {
            role,
            started: Instant::now(),
            sleeper,
            sample: None,
            recent: VecDeque::new(),
            last: None,
        });
    }

    /// The running sample's role, if one runs.
    #[cfg(test)]
    pub fn role(&self) -> Option<Role> {
        self.running.lock().unwrap().as_ref().map(|r| r.role)
    }

    /// Ends the running sample; returns its role at the end.
    pub fn end(&self) -> Option<Role> {
        let r = self.running.lock().unwrap().take()?;
        if let Some(f) = &r.sample {
            f.end();
        }
        Some(r.role)
    }

    /// The executor's handle on the running sample, for as long as its slot runs it.
    /// A sample that is already extra starts thawed; the governor decides from there.
    pub fn attach(&self, sample: Arc<Freezable>) {
        if let Some(r) = self.running.lock().unwrap().as_mut() {
            // An extra one too starts at the default weight: it has not shown what it does.
            sample.set_shares(PRIMARY_CPU_SHARES);
            if r.role == Role::Primary {
                sample.make_primary();
            }
            r.sample = Some(sample);
        }
    }

    /// Whether the running sample is extra (its slot's warm-up may then be frozen too).
    pub fn is_extra(&self) -> bool {
        self.running
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|r| r.role == Role::Extra)
    }

    pub fn detach(&self) {
        if let Some(r) = self.running.lock().unwrap().as_mut() {
            if let Some(f) = r.sample.take() {
                f.end();
            }
        }
    }
}

/// Thaws the oldest frozen extra sample (it keeps its role and weight; the governor may
/// freeze it again). Returns whether one was frozen.
pub(crate) fn thaw_oldest(seats: &[Seat]) -> bool {
    let mut oldest: Option<(Instant, Arc<Freezable>)> = None;
    for seat in seats {
        let r = seat.running.lock().unwrap();
        let Some(r) = r.as_ref().filter(|r| r.role == Role::Extra) else {
            continue;
        };
        if let Some(f) = r.sample.as_ref().filter(|f| f.is_frozen()) {
            if oldest.as_ref().is_none_or(|(t, _)| r.started < *t) {
                oldest = Some((r.started, f.clone()));
            }
        }
    }
    oldest.map(|(_, f)| f.thaw()).is_some()
}

/// Makes the oldest running extra sample primary (thawed for good). Returns whether one was.
pub(crate) fn promote_oldest(seats: &[Seat]) -> bool {
    let mut oldest: Option<(Instant, &Seat)> = None;
    for seat in seats {
        let r = seat.running.lock().unwrap();
        if let Some(r) = r.as_ref().filter(|r| r.role == Role::Extra && !r.sleeper) {
            if oldest.is_none_or(|(t, _)| r.started < t) {
                oldest = Some((r.started, seat));
            }
        }
    }
    let Some((_, seat)) = oldest else {
        return false;
    };
    if let Some(r) = seat.running.lock().unwrap().as_mut() {
        r.role = Role::Primary;
        if let Some(f) = &r.sample {
            f.make_primary();
        }
    }
    true
}

/// One measurement of a running sample, for [`decide`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct View {
    pub role: Role,
    pub started: Instant,
    pub frozen: bool,
    /// Cores the sample asked for over the last interval: its threads' time on a CPU or
    /// waiting for one, per second of wall (or the CPU it used, reaped children included,
    /// if more). 0 while frozen, and for the first measurement of a sample.
    pub demand: f64,
    /// The most it asked for over the last few measurements; a whole core for a sample
    /// seen fewer times (just started or just thawed, it has not shown what it does yet).
    pub recent: f64,
    /// Asked for [`FREEZE_CPU_SHARE`] of a core at this measurement and the one before: a
    /// sample that only starts up (a fork, its imports) and then sleeps is not frozen for
    /// that moment.
    pub sustained: bool,
    /// Used at least [`FREEZE_CPU_SHARE`] of a core since the last measurement (a sample
    /// that only waited for a core takes nothing from anyone).
    pub busy: bool,
    /// Runs at the lowest CPU weight while extra: it cannot take a core from a primary
    /// sample, so it is frozen only when starved (its clock is credited otherwise).
    pub shielded: bool,
    /// A shielded extra at the lowest weight that had threads runnable at this measurement
    /// and the one before yet used almost no CPU, and was shown to compute when given the
    /// default weight ([`next_weight`]): the others keep the cores. Frozen, its clock stops
    /// exactly, where a credit would come only once it got a core again.
    pub starved: bool,
}

/// What the governor does this interval, as indices into the views.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Decision {
    pub freeze: Vec<usize>,
    pub thaw: Option<usize>,
}

/// Freeze running extras that are not shielded (see [`View::shielded`]), newest first, until
/// what our samples ask of the CPUs fits the `cores` (within [`DEMAND_SLACK`]); or, when a
/// whole core has stayed free over the window, thaw the oldest frozen extra (it was frozen
/// busy: it will want a core).
pub(crate) fn decide(views: &[View], cores: usize) -> Decision {
    let mut d = Decision::default();
    let cores = cores as f64;
    let mut extras: Vec<usize> = (0..views.len())
        .filter(|&i| views[i].role == Role::Extra)
        .collect();
    extras.sort_by_key(|&i| views[i].started);
    let mut total: f64 = views.iter().filter(|v| !v.frozen).map(|v| v.demand).sum();
    for &i in extras.iter().rev() {
        if total <= cores + DEMAND_SLACK {
            break;
        }
        let v = &views[i];
        if !v.frozen && !v.shielded && v.sustained && v.busy {
            d.freeze.push(i);
            total -= v.demand;
        }
    }
    d.freeze.extend(
        extras
            .iter()
            .copied()
            .filter(|&i| views[i].starved && !views[i].frozen),
    );
    if !d.freeze.is_empty() {
        return d;
    }
    let recent: f64 = views
        .iter()
        .filter(|v| !v.frozen)
        .map(|v| v.recent.max(v.demand))
        .sum();
    // A shielded extra takes only what the others leave: half a core free is worth it.
    d.thaw = extras.into_iter().find(|&i| views[i].frozen).filter(|&i| {
        let room = if views[i].shielded { 0.5 } else { 1.0 };
        recent + room <= cores + DEMAND_SLACK
    });
    d
}

/// One governor step over every seat: measure, decide, act. Returns what the running
/// samples asked of the CPUs over the interval, in cores (their threads' time on a CPU or
/// waiting for one; a sample measured for the first time counts nothing yet): a thread pool
/// that keeps many threads runnable for moments asks only for the time it uses, and an extra
/// left waiting for a core asks for the whole interval. `None` where samples run and none has
/// a cgroup to measure (no freezer); one between its start and its attachment counts nothing.
pub(crate) fn govern(seats: &[Seat], cores: usize) -> Option<f64> {
    let ticks_per_sec = clock_ticks_per_sec();
    let mut views = Vec::new();
    let mut handles = Vec::new();
    let (mut running, mut attached) = (false, false);
    for seat in seats {
        let mut r = seat.running.lock().unwrap();
        let Some(r) = r.as_mut() else { continue };
        running = true;
        let Some(sample) = r.sample.clone() else {
            continue;
        };
        attached = true;
        sample.expire();
        // An extra that spent its budget is governed as a primary: never frozen again, at
        // the default weight.
        let role = if sample.spent() {
            sample.set_shares(PRIMARY_CPU_SHARES);
            Role::Primary
        } else {
            r.role
        };
        let frozen = sample.is_frozen();
        let (mut demand, mut busy, mut starved) = (0.0, false, false);
        if frozen {
            r.last = None;
        } else {
            let (times, runnable) = sample.runnable_ns();
            let now = Measured {
                at: Instant::now(),
                cpu_ticks: sample.cpu_ticks(),
                runnable_ns: times,
                runnable,
            };
            if let Some(then) = &r.last {
                let secs = now.at.duration_since(then.at).as_secs_f64();
                if secs > 0.0 {
                    // A thread new since the last measurement counts from its start.
                    let (mut ran, mut waited) = (0u64, 0u64);
                    for (tid, (run, wait)) in &now.runnable_ns {
                        let (run0, wait0) = then.runnable_ns.get(tid).copied().unwrap_or_default();
                        ran += run.saturating_sub(run0);
                        waited += wait.saturating_sub(wait0);
                    }
                    let used = now.cpu_ticks.saturating_sub(then.cpu_ticks) as f64 / ticks_per_sec;
                    busy = used >= FREEZE_CPU_SHARE * secs;
                    demand = ((ran + waited) as f64 / 1e9).max(used) / secs;
                    if role == Role::Extra && sample.shielded() {
                        starved = sample.reweigh(Seen {
                            used: used / secs,
                            runnable: now.runnable > 0,
                            was_runnable: then.runnable > 0,
                        });
                        if waited > 0 {
                            // The share of the interval it wanted a core and had none (for
                            // a thread pool, the share of its threads' wanting): time lost.
                            let lost = secs * waited as f64 / (ran + waited) as f64;
                            sample.credit(Duration::from_secs_f64(lost));
                        }
                    }
                }
                r.recent.push_back(demand);
                if r.recent.len() > THAW_WINDOW {
                    r.recent.pop_front();
                }
            }
            r.last = Some(now);
        }
        let n = r.recent.len();
        let sustained =
            !frozen && n >= 2 && r.recent.iter().skip(n - 2).all(|&x| x >= FREEZE_CPU_SHARE);
        views.push(View {
            role,
            started: r.started,
            frozen,
            demand,
            sustained,
            busy,
            starved,
            shielded: sample.shielded(),
            recent: if n < THAW_WINDOW {
                1.0
            } else {
                r.recent.iter().copied().fold(0.0, f64::max)
            },
        });
        handles.push(sample);
    }
    let asked = views.iter().map(|v| v.demand).sum();
    let d = decide(&views, cores);
    for i in d.freeze {
        tracing::debug!("freezing an extra sample: our demand exceeds {cores} cores");
        handles[i].freeze();
    }
    if let Some(i) = d.thaw {
        tracing::debug!("thawing an extra sample: a core stayed free");
        handles[i].thaw();
    }
    (attached || !running).then_some(asked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(role: Role, age: u64, frozen: bool, demand: f64, recent: f64) -> View {
        View {
            role,
            started: Instant::now() - Duration::from_secs(100 - age),
            frozen,
            demand,
            recent,
            sustained: demand > 0.0,
            busy: demand > 0.0,
            starved: false,
            shielded: false,
        }
    }

    #[test]
    fn a_runnable_extra_that_used_no_cpu_is_not_frozen() {
        // A sleeper woke into a run queue that other load keeps long: it waits for a core
        // (runnable) but takes nothing; the busy one beside it is frozen.
        let mut views = [
            view(Role::Primary, 0, false, 1.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 2, false, 1.0, 1.0),
            view(Role::Extra, 3, false, 1.0, 1.0),
        ];
        views[3].busy = false;
        assert_eq!(decide(&views, 2).freeze, [2]);
    }

    /// What `measure` grows by over half a second for a sleeping and a spinning process,
    /// each alone in a fake cgroup folder (its pid in `cgroup.procs` and `tasks`).
    fn asleep_and_spinning(measure: impl Fn(&Freezable) -> u64) -> (u64, u64) {
        use std::process::Command;
        let grown = |pid: u32| {
            let dir = tempfile::tempdir().unwrap();
            for file in ["cgroup.procs", "tasks"] {
                std::fs::write(dir.path().join(file), format!("{pid}\n")).unwrap();
            }
            let f = Freezable::warming(dir.path().to_path_buf());
            let before = measure(&f);
            std::thread::sleep(Duration::from_millis(500));
            measure(&f) - before
        };
        let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
        let mut spinner = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let seen = (grown(sleeper.id()), grown(spinner.id()));
        for child in [&mut sleeper, &mut spinner] {
            let _ = child.kill();
            let _ = child.wait();
        }
        seen
    }

    #[test]
    fn cpu_ticks_count_a_spinning_process_and_not_a_sleeping_one() {
        let (asleep, spinning) = asleep_and_spinning(Freezable::cpu_ticks);
        assert_eq!(asleep, 0);
        assert!(spinning > 0, "a spinning process uses CPU ticks");
        let stat = "42 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 100 20 3 4 0 0";
        assert_eq!(process_ticks(stat), 127);
    }

    #[test]
    fn the_governor_tells_what_the_samples_asked_of_the_cpus_in_cores() {
        use std::process::Command;
        let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
        let mut spinner = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let seats = [Seat::default(), Seat::default()];
        let dirs: Vec<_> = [sleeper.id(), spinner.id()]
            .iter()
            .zip(&seats)
            .map(|(pid, seat)| {
                let dir = tempfile::tempdir().unwrap();
                for file in ["cgroup.procs", "tasks"] {
                    std::fs::write(dir.path().join(file), format!("{pid}\n")).unwrap();
                }
                seat.begin(Role::Primary, false);
                seat.attach(Arc::new(Freezable::warming(dir.path().to_path_buf())));
                dir
            })
            .collect();
        let first = govern(&seats, 2);
        std::thread::sleep(Duration::from_millis(300));
        let asked = govern(&seats, 2).unwrap();
        for child in [&mut sleeper, &mut spinner] {
            let _ = child.kill();
            let _ = child.wait();
        }
        drop(dirs);
        let bare = [Seat::default()];
        bare[0].begin(Role::Primary, false);
        assert_eq!(
            govern(&bare, 2),
            None,
            "a sample without a cgroup is not measured"
        );
        assert_eq!(
            first,
            Some(0.0),
            "nothing is known of a sample at its first measurement"
        );
        // The spinner on a CPU or waiting for one all along, however loaded the machine.
        assert!(
            (0.8..1.2).contains(&asked),
            "one spinner asks for a core: {asked}"
        );
    }

    #[test]
    fn runnable_time_counts_a_spinning_thread_and_not_a_sleeping_one() {
        let (asleep, spinning) = asleep_and_spinning(|f| {
            f.runnable_ns()
                .0
                .values()
                .map(|(run, wait)| run + wait)
                .sum()
        });
        assert!(
            asleep < 10_000_000,
            "a sleeper asks for nothing: {asleep} ns"
        );
        // on a CPU or waiting for one the whole time, however loaded the machine
        assert!(
            spinning > 400_000_000,
            "a spinner asks for a core: {spinning} ns"
        );
        assert_eq!(schedstat_ns("1500 250 7\n"), Some((1500, 250)));
        assert_eq!(schedstat_ns("garbage"), None);
    }

    #[test]
    fn a_thread_pool_using_less_than_a_core_leaves_room_for_a_frozen_extra() {
        // A TensorFlow sample's threads: often two or three runnable at a moment, yet under
        // a core of use over an interval. A whole core is free: the frozen extra thaws.
        let views = [
            view(Role::Primary, 0, false, 0.0, 0.0), // sleeps
            view(Role::Primary, 1, false, 0.8, 0.95),
            view(Role::Extra, 2, true, 0.0, 1.0),
        ];
        assert_eq!(decide(&views, 2).thaw, Some(2));
        // a little more than that, and thawing would take from the primary
        let views = [
            view(Role::Primary, 0, false, 0.0, 0.0),
            view(Role::Primary, 1, false, 1.3, 1.3),
            view(Role::Extra, 2, true, 0.0, 1.0),
        ];
        assert_eq!(decide(&views, 2), Decision::default());
    }

    #[test]
    fn a_shielded_extra_is_frozen_only_when_starved_and_thaws_with_half_a_core_free() {
        let shielded = |age, frozen, demand, recent, starved| View {
            shielded: true,
            starved,
            ..view(Role::Extra, age, frozen, demand, recent)
        };
        // Busy primaries and a busy extra at the lowest weight beside them: it takes only
        // what they leave, so it is not frozen for the demand...
        let views = [
            view(Role::Primary, 0, false, 1.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            shielded(2, false, 1.0, 1.0, false),
        ];
        assert_eq!(decide(&views, 2), Decision::default());
        // ...but once it gets nothing at all, its clock must stop exactly: frozen.
        let views = [
            view(Role::Primary, 0, false, 1.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            shielded(2, false, 0.0, 1.0, true),
        ];
        assert_eq!(decide(&views, 2).freeze, [2]);
        // A thread pool leaves 0.6 of a core: enough for it, not for an unshielded one.
        let views = [
            view(Role::Primary, 0, false, 0.0, 0.0),
            view(Role::Primary, 1, false, 1.4, 1.4),
            shielded(2, true, 0.0, 1.0, false),
        ];
        assert_eq!(decide(&views, 2).thaw, Some(2));
        let views = [
            view(Role::Primary, 0, false, 0.0, 0.0),
            view(Role::Primary, 1, false, 1.4, 1.4),
            view(Role::Extra, 2, true, 0.0, 1.0),
        ];
        assert_eq!(decide(&views, 2), Decision::default());
    }

    #[test]
    fn a_starved_extra_gets_one_probe_at_the_default_weight_before_it_is_frozen() {
        let at = |shares, probing, computes| Weighing {
            shares,
            probing,
            computes,
        };
        let seen = |used, runnable, was_runnable| Seen {
            used,
            runnable,
            was_runnable,
        };
        let (low, default) = (EXTRA_CPU_SHARES, PRIMARY_CPU_SHARES);
        // A burst at the default weight: the lowest.
        let w = at(default, false, false);
        assert_eq!(
            next_weight(w, seen(0.4, true, true)),
            (at(low, false, false), false)
        );
        // Starved there: the default weight back, not frozen.
        let w = at(low, false, false);
        let probe = at(default, true, false);
        assert_eq!(next_weight(w, seen(0.0, true, true)), (probe, false));
        // A server thread that only had its start to finish waits again: it stays at the
        // default weight and is never frozen for that starvation.
        assert_eq!(
            next_weight(probe, seen(0.1, false, true)),
            (at(default, false, false), false)
        );
        // Still waiting for a core even at the default weight: the probe goes on.
        assert_eq!(next_weight(probe, seen(0.01, true, true)), (probe, false));
        // It took its share and wants more: it computes, so the lowest weight again...
        let computes = at(low, false, true);
        assert_eq!(next_weight(probe, seen(0.3, true, true)), (computes, false));
        // ...and starved from then on, it is frozen (its clock stops exactly).
        assert_eq!(
            next_weight(computes, seen(0.0, true, true)),
            (computes, true)
        );
        // Quiet at the lowest weight: the default again, and it starts over (starved later,
        // it is probed again before it may be frozen).
        assert_eq!(
            next_weight(computes, seen(0.0, false, false)),
            (at(default, false, false), false)
        );
        // Runnable at one measurement only: neither quiet nor starved.
        assert_eq!(next_weight(w, seen(0.0, true, false)), (w, false));
    }

    #[test]
    fn a_moment_of_cpu_is_not_frozen() {
        let mut views = [
            view(Role::Primary, 0, false, 1.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 2, false, 1.0, 1.0),
        ];
        views[2].sustained = false; // starting up, say
        assert_eq!(decide(&views, 2), Decision::default());
    }

    #[test]
    fn a_waking_extra_is_frozen_when_the_primaries_use_the_cores() {
        let views = [
            view(Role::Primary, 0, false, 1.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 2, false, 0.0, 0.0), // asleep: left alone
            view(Role::Extra, 3, false, 1.0, 1.0),
            view(Role::Extra, 4, false, 4.0, 4.0),
        ];
        let d = decide(&views, 2);
        assert_eq!(d.freeze, [4, 3], "newest first, every runnable extra");
        assert_eq!(d.thaw, None);
    }

    #[test]
    fn extras_run_on_cores_the_primaries_leave_free() {
        let views = [
            view(Role::Primary, 0, false, 0.0, 0.0), // sleeps
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 2, false, 1.0, 1.0),
        ];
        assert_eq!(decide(&views, 2), Decision::default());
        // a primary wakes: the extra gives its core back
        let views = [
            view(Role::Primary, 0, false, 1.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 2, false, 1.0, 1.0),
        ];
        assert_eq!(decide(&views, 2).freeze, [2]);
    }

    #[test]
    fn the_oldest_frozen_extra_thaws_once_a_core_stayed_free() {
        let views = [
            view(Role::Primary, 0, false, 0.0, 0.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 3, true, 0.0, 1.0),
            view(Role::Extra, 2, true, 0.0, 1.0),
        ];
        assert_eq!(decide(&views, 2).thaw, Some(3));
        // the idle primary was busy a moment ago: wait
        let views = [
            view(Role::Primary, 0, false, 0.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 2, true, 0.0, 1.0),
        ];
        assert_eq!(decide(&views, 2), Decision::default());
    }

    #[test]
    fn primaries_are_never_frozen_even_when_they_alone_oversubscribe() {
        let views = [
            view(Role::Primary, 0, false, 8.0, 8.0),
            view(Role::Primary, 1, false, 8.0, 8.0),
        ];
        assert_eq!(decide(&views, 2), Decision::default());
    }

    #[test]
    fn roles_follow_samples_the_oldest_extra_takes_a_finished_primarys_place() {
        let seats: Vec<Seat> = (0..4).map(|_| Seat::default()).collect();
        seats[0].begin(Role::Primary, false);
        seats[2].begin(Role::Extra, false);
        std::thread::sleep(Duration::from_millis(5));
        seats[3].begin(Role::Extra, false);
        assert_eq!(seats[0].end(), Some(Role::Primary));
        assert!(promote_oldest(&seats));
        let role = |i: usize| seats[i].running.lock().unwrap().as_ref().map(|r| r.role);
        assert_eq!(role(2), Some(Role::Primary), "the oldest extra");
        assert_eq!(role(3), Some(Role::Extra));
        // the worker that ran the finished primary now starts an extra
        seats[0].begin(Role::Extra, false);
        assert_eq!(seats[2].end(), Some(Role::Primary));
        assert!(promote_oldest(&seats));
        assert_eq!(role(3), Some(Role::Primary));
        assert_eq!(role(0), Some(Role::Extra));
    }

    #[test]
    fn a_core_that_frees_thaws_the_oldest_frozen_extra_first() {
        let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let seats: Vec<Seat> = (0..3).map(|_| Seat::default()).collect();
        let samples: Vec<Arc<Freezable>> = dirs
            .iter()
            .map(|d| Arc::new(Freezable::warming(d.path().to_path_buf())))
            .collect();
        for (i, role) in [Role::Primary, Role::Extra, Role::Extra]
            .into_iter()
            .enumerate()
        {
            seats[i].begin(role, false);
            seats[i].attach(samples[i].clone());
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!thaw_oldest(&seats), "nothing is frozen");
        samples[2].freeze();
        samples[1].freeze();
        assert!(thaw_oldest(&seats));
        assert!(!samples[1].is_frozen(), "the older extra first");
        assert!(samples[2].is_frozen());
        assert!(thaw_oldest(&seats));
        assert!(!samples[2].is_frozen());
        assert!(!thaw_oldest(&seats));
    }

    #[test]
    fn a_sleeper_never_takes_a_finished_primarys_place() {
        let seats: Vec<Seat> = (0..3).map(|_| Seat::default()).collect();
        seats[0].begin(Role::Primary, false);
        seats[1].begin(Role::Extra, true);
        assert_eq!(seats[0].end(), Some(Role::Primary));
        assert!(!promote_oldest(&seats), "the only extra sleeps");
        std::thread::sleep(Duration::from_millis(5));
        seats[2].begin(Role::Extra, false);
        seats[0].begin(Role::Primary, false);
        assert_eq!(seats[0].end(), Some(Role::Primary));
        assert!(promote_oldest(&seats));
        let role = |i: usize| seats[i].running.lock().unwrap().as_ref().map(|r| r.role);
        assert_eq!(
            role(1),
            Some(Role::Extra),
            "the older extra, a sleeper, stays extra"
        );
        assert_eq!(role(2), Some(Role::Primary));
    }

    /// The hang of a full ground truth's last job: the governor decided to freeze an extra
    /// (starved, say), a primary ended meanwhile and the extra was promoted, then the freeze
    /// landed. No rule thaws a primary, its deadlines move with the frozen time, and with
    /// nothing else running the run never ended. The freeze now checks the role under the
    /// clock's lock; before, this sample stayed frozen through every later step.
    #[test]
    fn a_freeze_decided_before_a_promotion_never_lands_on_the_new_primary() {
        let dir = tempfile::tempdir().unwrap();
        let seats: Vec<Seat> = (0..2).map(|_| Seat::default()).collect();
        let sample = Arc::new(Freezable::warming(dir.path().to_path_buf()));
        seats[1].begin(Role::Extra, false);
        seats[1].attach(sample.clone());
        // The governor's decision, taken on a view where the sample was extra...
        let late_freeze = sample.clone();
        // ...a primary ends and the extra takes its place...
        assert!(promote_oldest(&seats));
        // ...and then the governor acts.
        late_freeze.freeze();
        for _ in 0..3 {
            govern(&seats, 2);
        }
        assert!(!sample.is_frozen(), "a primary is never frozen");
        assert_ne!(
            std::fs::read_to_string(dir.path().join("freezer.state"))
                .ok()
                .as_deref(),
            Some("FROZEN")
        );
    }

    /// A sample is held (frozen or credited) for at most [`FREEZE_BUDGET`]: its deadline
    /// moves by no more, and once spent it is thawed, never frozen again, and governed as a
    /// primary (the default weight).
    #[test]
    fn a_sample_is_held_for_at_most_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        let seats = [Seat::default()];
        let sample = Arc::new(Freezable::warming(dir.path().to_path_buf()));
        seats[0].begin(Role::Extra, false);
        seats[0].attach(sample.clone());
        sample.freeze();
        assert!(sample.is_frozen());
        // As if frozen for longer than the budget, with no governor step in between.
        sample.clock.lock().unwrap().since = Some(Instant::now() - FREEZE_BUDGET * 2);
        assert_eq!(sample.frozen_for(), FREEZE_BUDGET, "the credit is capped");
        govern(&seats, 2);
        assert!(!sample.is_frozen(), "thawed once its budget is spent");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("freezer.state")).unwrap(),
            "THAWED"
        );
        sample.freeze();
        assert!(!sample.is_frozen(), "never frozen again");
        assert_eq!(sample.frozen_for(), FREEZE_BUDGET);
    }

    #[test]
    fn a_freeze_the_supervisor_never_got_does_not_count() {
        let dir = tempfile::tempdir().unwrap();
        let (r, w) = std::io::pipe().unwrap();
        drop(r); // the supervisor is gone: writes fail
        let f = Freezable::new(
            dir.path().to_path_buf(),
            None,
            Arc::new(File::from(std::os::fd::OwnedFd::from(w))),
            0,
        );
        f.freeze();
        assert!(!f.is_frozen(), "a freeze nobody received does not count");
        assert_eq!(f.frozen_for(), Duration::ZERO);
    }
}
