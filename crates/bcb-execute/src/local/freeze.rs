//! Extra samples never slow the `--parallel` ones.
//!
//! Every running sample holds a role: the first `workers` in flight are *primary*, the ones
//! the scheduler let in beyond them (while CPUs idled: samples that sleep or wait) are
//! *extra*. When an extra sample wakes up and our runnable demand exceeds the cores
//! (`min(workers, CPUs)`), the governor freezes it (cgroup v1 freezer, through its slot's
//! supervisor), newest first, and thaws the oldest frozen one once a core has stayed free
//! for a few intervals. Runnable is not enough to be frozen: the sample must also have used
//! CPU over the last interval ([`FREEZE_CPU_SHARE`] of a core). A sleeper that wakes into a
//! run queue the machine's other load keeps long shows runnable while it waits, yet takes
//! nothing from anyone; frozen, it would wait until a core stays free (in a CPU-bound run,
//! until it becomes primary) and its sleep would stop overlapping the run.
//! A frozen sample's deadlines stop with it: its supervisor moves its
//! kill deadline and the in-sample alarm by the time it spent frozen (`harness.py`), and the
//! slot's own watchdog here does the same. A sample that sleeps is never runnable, so it is
//! never frozen and its sleep overlaps the others as before.
//!
//! Roles belong to running samples, not to workers: when a primary sample ends while extras
//! run, the oldest extra becomes primary (thawed, never frozen again) and the worker's next
//! sample is the extra one.
//!
//! Where there is no freezer cgroup (no root, cgroup v2 without a delegated subtree), no
//! sample can be frozen, so by default none is admitted beyond `--parallel`
//! (`Base::admission`); an explicit `--max-in-flight` still overlaps, unguarded.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::sandbox::thaw_cgroup;

/// Intervals a core must have stayed free before a frozen sample is thawed.
const THAW_WINDOW: usize = 3;
/// Share of a core an extra sample must have used over the last interval to be frozen.
const FREEZE_CPU_SHARE: f64 = 0.25;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// One of the `workers` samples that always run.
    Primary,
    /// Admitted beyond them; frozen whenever it would take a core from a primary one.
    Extra,
}

#[derive(Default)]
struct Clock {
    total: Duration,
    since: Option<Instant>,
    /// The sample ended: a late governor decision must not reach the slot's next sample.
    ended: bool,
}

/// A running sample that can be frozen: its freezer cgroup and its supervisor's control pipe.
pub(crate) struct Freezable {
    cgroup: PathBuf,
    /// The supervisor's control pipe; `None`: a slot warming up inside the cgroup, frozen
    /// directly (its supervisor is frozen with it).
    ctrl: Option<Arc<File>>,
    /// The job's key on the wire: the supervisor ignores ops for any other job.
    key: u64,
    clock: Mutex<Clock>,
}

impl Freezable {
    pub fn new(cgroup: PathBuf, ctrl: Arc<File>, key: u64) -> Freezable {
        Freezable {
            cgroup,
            ctrl: Some(ctrl),
            key,
            clock: Mutex::new(Clock::default()),
        }
    }

    /// A slot warming up inside `cgroup` (imports cost seconds of CPU): frozen directly.
    pub fn warming(cgroup: PathBuf) -> Freezable {
        Freezable {
            cgroup,
            ctrl: None,
            key: 0,
            clock: Mutex::new(Clock::default()),
        }
    }

    fn op(&self, op: &str) -> bool {
        match &self.ctrl {
            // One short line: a single atomic pipe write, whoever else writes to the pipe.
            Some(ctrl) => (&**ctrl)
                .write_all(format!("{{\"op\":\"{op}\",\"key\":{}}}\n", self.key).as_bytes())
                .is_ok(),
            None => {
                let state = if op == "freeze" { "FROZEN" } else { "THAWED" };
                std::fs::write(self.cgroup.join("freezer.state"), state).is_ok()
            }
        }
    }

    fn freeze(&self) {
        let mut c = self.clock.lock().unwrap();
        if c.since.is_none() && !c.ended && self.op("freeze") {
            c.since = Some(Instant::now());
        }
    }

    fn thaw(&self) {
        let mut c = self.clock.lock().unwrap();
        self.thaw_locked(&mut c);
    }

    fn thaw_locked(&self, c: &mut Clock) {
        if let Some(since) = c.since.take() {
            c.total += since.elapsed();
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

    /// Time spent frozen so far (the slot's watchdog adds it to the deadline).
    pub fn frozen_for(&self) -> Duration {
        let c = self.clock.lock().unwrap();
        c.total + c.since.map_or(Duration::ZERO, |s| s.elapsed())
    }

    /// Runnable threads in the sample's cgroup (the sample and everything it started).
    fn runnable(&self) -> usize {
        let Ok(tasks) = std::fs::read_to_string(self.cgroup.join("tasks")) else {
            return 0;
        };
        tasks
            .split_whitespace()
            .filter(|tid| {
                std::fs::read_to_string(format!("/proc/{tid}/stat")).is_ok_and(|stat| {
                    stat.rsplit_once(')')
                        .and_then(|(_, rest)| rest.trim_start().chars().next())
                        == Some('R')
                })
            })
            .count()
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
    sample: Option<Arc<Freezable>>,
    /// Runnable threads at the last [`THAW_WINDOW`] measurements.
    recent: VecDeque<usize>,
    /// The sample's CPU ticks at the last measurement while thawed (none while frozen:
    /// a thawed sample starts a fresh baseline).
    last_cpu: Option<(Instant, u64)>,
}

/// What one worker is running: shared by the worker (which starts and ends samples and
/// attaches their freeze control) and the governor.
#[derive(Default)]
pub(crate) struct Seat {
    running: Mutex<Option<Running>>,
}

impl Seat {
    pub fn begin(&self, role: Role) {
        *self.running.lock().unwrap() = Some(Running {
            role,
            started: Instant::now(),
            sample: None,
            recent: VecDeque::new(),
            last_cpu: None,
        });
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

/// Makes the oldest running extra sample primary (thawed for good). Returns whether one was.
pub(crate) fn promote_oldest(seats: &[Seat]) -> bool {
    let mut oldest: Option<(Instant, &Seat)> = None;
    for seat in seats {
        let r = seat.running.lock().unwrap();
        if let Some(r) = r.as_ref().filter(|r| r.role == Role::Extra) {
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
            f.thaw();
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
    /// Runnable threads now (0 while frozen).
    pub runnable: usize,
    /// The most runnable threads over the last few measurements.
    pub recent: usize,
    /// Runnable at this measurement and the one before: a sample that only starts up (a
    /// fork, its imports) and then sleeps is not frozen for that moment.
    pub sustained: bool,
    /// Used at least [`FREEZE_CPU_SHARE`] of a core since the last measurement.
    pub busy: bool,
}

/// What the governor does this interval, as indices into the views.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Decision {
    pub freeze: Vec<usize>,
    pub thaw: Option<usize>,
}

/// Freeze running extras, newest first, until our runnable demand fits the `cores`; or, when
/// a core has stayed free over the window, thaw the oldest frozen extra.
pub(crate) fn decide(views: &[View], cores: usize) -> Decision {
    let mut d = Decision::default();
    let mut extras: Vec<usize> = (0..views.len())
        .filter(|&i| views[i].role == Role::Extra)
        .collect();
    extras.sort_by_key(|&i| views[i].started);
    let primary_now: usize = views
        .iter()
        .filter(|v| v.role == Role::Primary)
        .map(|v| v.runnable)
        .sum();
    let mut total = primary_now
        + extras
            .iter()
            .filter(|&&i| !views[i].frozen)
            .map(|&i| views[i].runnable)
            .sum::<usize>();
    for &i in extras.iter().rev() {
        if total <= cores {
            break;
        }
        let v = &views[i];
        if !v.frozen && v.runnable > 0 && v.sustained && v.busy {
            d.freeze.push(i);
            total -= v.runnable;
        }
    }
    if !d.freeze.is_empty() {
        return d;
    }
    let recent: usize = views
        .iter()
        .filter(|v| !v.frozen)
        .map(|v| v.recent.max(v.runnable))
        .sum();
    if recent < cores {
        d.thaw = extras.into_iter().find(|&i| views[i].frozen);
    }
    d
}

/// One governor step over every seat: measure, decide, act.
pub(crate) fn govern(seats: &[Seat], cores: usize) {
    let mut views = Vec::new();
    let mut handles = Vec::new();
    for seat in seats {
        let mut r = seat.running.lock().unwrap();
        let Some(r) = r.as_mut() else { continue };
        let Some(sample) = r.sample.clone() else {
            continue;
        };
        let frozen = sample.is_frozen();
        let runnable = if frozen { 0 } else { sample.runnable() };
        let mut busy = false;
        if frozen {
            r.last_cpu = None;
        } else {
            r.recent.push_back(runnable);
            if r.recent.len() > THAW_WINDOW {
                r.recent.pop_front();
            }
            // Only extras can be frozen: only their CPU is worth measuring.
            if r.role == Role::Extra {
                let now = (Instant::now(), sample.cpu_ticks());
                if let Some((then, ticks)) = r.last_cpu {
                    let secs = now.0.duration_since(then).as_secs_f64();
                    let used = now.1.saturating_sub(ticks) as f64 / clock_ticks_per_sec();
                    busy = secs > 0.0 && used >= FREEZE_CPU_SHARE * secs;
                }
                r.last_cpu = Some(now);
            }
        }
        let n = r.recent.len();
        let sustained = !frozen && n >= 2 && r.recent.iter().skip(n - 2).all(|&x| x > 0);
        views.push(View {
            role: r.role,
            started: r.started,
            frozen,
            runnable,
            sustained,
            busy,
            // A sample seen fewer times than the window counts as busy: just started, or
            // just thawed, it has not shown what it does yet.
            recent: if r.recent.len() < THAW_WINDOW {
                1
            } else {
                r.recent.iter().copied().max().unwrap_or(0)
            },
        });
        handles.push(sample);
    }
    let d = decide(&views, cores);
    for i in d.freeze {
        tracing::debug!("freezing an extra sample: our demand exceeds {cores} cores");
        handles[i].freeze();
    }
    if let Some(i) = d.thaw {
        tracing::debug!("thawing an extra sample: a core stayed free");
        handles[i].thaw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(role: Role, age: u64, frozen: bool, runnable: usize, recent: usize) -> View {
        View {
            role,
            started: Instant::now() - Duration::from_secs(100 - age),
            frozen,
            runnable,
            recent,
            sustained: runnable > 0,
            busy: runnable > 0,
        }
    }

    #[test]
    fn a_runnable_extra_that_used_no_cpu_is_not_frozen() {
        // A sleeper woke into a run queue that other load keeps long: it waits for a core
        // (runnable) but takes nothing; the busy one beside it is frozen.
        let mut views = [
            view(Role::Primary, 0, false, 1, 1),
            view(Role::Primary, 1, false, 1, 1),
            view(Role::Extra, 2, false, 1, 1),
            view(Role::Extra, 3, false, 1, 1),
        ];
        views[3].busy = false;
        assert_eq!(decide(&views, 2).freeze, [2]);
    }

    #[test]
    fn cpu_ticks_count_a_spinning_process_and_not_a_sleeping_one() {
        use std::process::Command;
        let ticks = |pid: u32| {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("cgroup.procs"), format!("{pid}\n")).unwrap();
            let f = Freezable::warming(dir.path().to_path_buf());
            let before = f.cpu_ticks();
            std::thread::sleep(Duration::from_millis(500));
            f.cpu_ticks() - before
        };
        let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
        let mut spinner = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let (asleep, spinning) = (ticks(sleeper.id()), ticks(spinner.id()));
        for child in [&mut sleeper, &mut spinner] {
            let _ = child.kill();
            let _ = child.wait();
        }
        assert_eq!(asleep, 0);
        assert!(spinning > 0, "a spinning process uses CPU ticks");
        let stat = "42 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 100 20 3 4 0 0";
        assert_eq!(process_ticks(stat), 127);
    }

    #[test]
    fn a_moment_of_cpu_is_not_frozen() {
        let mut views = [
            view(Role::Primary, 0, false, 1, 1),
            view(Role::Primary, 1, false, 1, 1),
            view(Role::Extra, 2, false, 1, 1),
        ];
        views[2].sustained = false; // starting up, say
        assert_eq!(decide(&views, 2), Decision::default());
    }

    #[test]
    fn a_waking_extra_is_frozen_when_the_primaries_use_the_cores() {
        let views = [
            view(Role::Primary, 0, false, 1, 1),
            view(Role::Primary, 1, false, 1, 1),
            view(Role::Extra, 2, false, 0, 0), // asleep: left alone
            view(Role::Extra, 3, false, 1, 1),
            view(Role::Extra, 4, false, 4, 4),
        ];
        let d = decide(&views, 2);
        assert_eq!(d.freeze, [4, 3], "newest first, every runnable extra");
        assert_eq!(d.thaw, None);
    }

    #[test]
    fn extras_run_on_cores_the_primaries_leave_free() {
        let views = [
            view(Role::Primary, 0, false, 0, 0), // sleeps
            view(Role::Primary, 1, false, 1, 1),
            view(Role::Extra, 2, false, 1, 1),
        ];
        assert_eq!(decide(&views, 2), Decision::default());
        // a primary wakes: the extra gives its core back
        let views = [
            view(Role::Primary, 0, false, 1, 1),
            view(Role::Primary, 1, false, 1, 1),
            view(Role::Extra, 2, false, 1, 1),
        ];
        assert_eq!(decide(&views, 2).freeze, [2]);
    }

    #[test]
    fn the_oldest_frozen_extra_thaws_once_a_core_stayed_free() {
        let views = [
            view(Role::Primary, 0, false, 0, 0),
            view(Role::Primary, 1, false, 1, 1),
            view(Role::Extra, 3, true, 0, 1),
            view(Role::Extra, 2, true, 0, 1),
        ];
        assert_eq!(decide(&views, 2).thaw, Some(3));
        // the idle primary was busy a moment ago: wait
        let views = [
            view(Role::Primary, 0, false, 0, 1),
            view(Role::Primary, 1, false, 1, 1),
            view(Role::Extra, 2, true, 0, 1),
        ];
        assert_eq!(decide(&views, 2), Decision::default());
    }

    #[test]
    fn primaries_are_never_frozen_even_when_they_alone_oversubscribe() {
        let views = [
            view(Role::Primary, 0, false, 8, 8),
            view(Role::Primary, 1, false, 8, 8),
        ];
        assert_eq!(decide(&views, 2), Decision::default());
    }

    #[test]
    fn roles_follow_samples_the_oldest_extra_takes_a_finished_primarys_place() {
        let seats: Vec<Seat> = (0..4).map(|_| Seat::default()).collect();
        seats[0].begin(Role::Primary);
        seats[2].begin(Role::Extra);
        std::thread::sleep(Duration::from_millis(5));
        seats[3].begin(Role::Extra);
        assert_eq!(seats[0].end(), Some(Role::Primary));
        assert!(promote_oldest(&seats));
        let role = |i: usize| seats[i].running.lock().unwrap().as_ref().map(|r| r.role);
        assert_eq!(role(2), Some(Role::Primary), "the oldest extra");
        assert_eq!(role(3), Some(Role::Extra));
        // the worker that ran the finished primary now starts an extra
        seats[0].begin(Role::Extra);
        assert_eq!(seats[2].end(), Some(Role::Primary));
        assert!(promote_oldest(&seats));
        assert_eq!(role(3), Some(Role::Primary));
        assert_eq!(role(0), Some(Role::Extra));
    }

    #[test]
    fn a_freeze_the_supervisor_never_got_does_not_count() {
        let dir = tempfile::tempdir().unwrap();
        let (r, w) = std::io::pipe().unwrap();
        drop(r); // the supervisor is gone: writes fail
        let f = Freezable::new(
            dir.path().to_path_buf(),
            Arc::new(File::from(std::os::fd::OwnedFd::from(w))),
            0,
        );
        f.freeze();
        assert!(!f.is_frozen(), "a freeze nobody received does not count");
        assert_eq!(f.frozen_for(), Duration::ZERO);
    }
}
