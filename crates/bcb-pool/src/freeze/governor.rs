//! The governor: every interval, measure each running sample, decide which extras to freeze
//! or thaw, and act; it also says what our samples asked of the CPUs (the admission reads it).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::sample::Freezable;
use super::seats::{Measured, Role, Running, Seat};
use super::weights::{Seen, PRIMARY_CPU_SHARES};
use super::FREEZE_CPU_SHARE;
use crate::procfs::{clock_ticks_per_sec, Counted, ProcFiles};

/// Intervals a core must have stayed free before a frozen sample is thawed.
pub(super) const THAW_WINDOW: usize = 3;
/// How long a primary not attached to its seat yet counts as starting (see
/// [`Pass::unmeasured_primaries`]): a cold slot's first sample attaches within it.
const STARTING: Duration = Duration::from_secs(1);
/// Demand over the cores (in cores) tolerated before an extra is frozen, and by which a
/// thaw may overshoot them: measurement noise of a 100-ms interval, not a share of a core
/// worth taking from a primary sample.
const DEMAND_SLACK: f64 = 0.15;
/// Idle cores of the machine, on average over the last [`THAW_WINDOW`] intervals, that thaw
/// a frozen shielded extra whatever our samples asked: at the lowest weight it takes only
/// what the others leave, and they left that much. A TensorFlow primary's thread pool asks
/// for a core (its threads wait for each other on a CPU) while using 0.6 of one; the rule
/// of demand alone kept a shielded extra frozen beside it for seconds while a fifth of the
/// machine idled.
const SHIELDED_THAW_IDLE: f64 = 0.2;

/// What the sampler keeps from one pass to the next: the machine's idle cores, and the
/// files it reads.
#[derive(Default)]
pub(crate) struct Sampler {
    pub(crate) idle: IdleWindow,
    pub(crate) files: ProcFiles,
}

/// What one pass of the governor measured.
#[derive(Debug, Default)]
pub(crate) struct Pass {
    /// What the running samples asked of the CPUs over the interval, in cores; `None` where
    /// samples run and none has a cgroup to measure (no freezer).
    pub(crate) asked: Option<f64>,
    /// The samples' processes it read, and their threads runnable now.
    pub(crate) counted: Counted,
    /// Primaries whose demand is not known yet (attached and measured once, or not attached
    /// and started within [`STARTING`]): they will want a core that neither the interval's
    /// idle nor `asked` shows taken.
    pub(crate) unmeasured_primaries: usize,
}

/// The machine's idle cores at the last [`THAW_WINDOW`] intervals since the last freeze or
/// thaw.
#[derive(Debug, Default)]
pub(crate) struct IdleWindow(VecDeque<f64>);

impl IdleWindow {
    /// One interval's idle cores (`None`: unmeasured, which starts the window over).
    pub(crate) fn push(&mut self, idle_cores: Option<f64>) {
        match idle_cores {
            Some(idle) => {
                self.0.push_back(idle);
                if self.0.len() > THAW_WINDOW {
                    self.0.pop_front();
                }
            }
            None => self.0.clear(),
        }
    }

    /// After the governor acted: a freeze or a thaw starts the window over. Only idle
    /// measured with an extra frozen says what it would fill, so a starved extra is not
    /// thawed by the idle of the intervals it starved in, nor a second one by the idle the
    /// first was thawed for.
    fn settle(&mut self, d: &Decision) {
        if !d.freeze.is_empty() || d.thaw.is_some() {
            self.0.clear();
        }
    }

    /// The mean over a full window; 0 until the window is full.
    fn mean(&self) -> f64 {
        if self.0.len() < THAW_WINDOW {
            return 0.0;
        }
        self.0.iter().sum::<f64>() / self.0.len() as f64
    }
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
/// busy: it will want a core). A shielded one thaws with half a core free of our demand, or
/// when the machine left [`SHIELDED_THAW_IDLE`] idle (`idle`: the mean over the window).
pub(crate) fn decide(views: &[View], cores: usize, idle: f64) -> Decision {
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
        recent + room <= cores + DEMAND_SLACK || (views[i].shielded && idle >= SHIELDED_THAW_IDLE)
    });
    d
}

/// What a running sample did between two measurements.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Interval {
    secs: f64,
    /// Its threads' time on a CPU and waiting for one, in ns (a thread new since the first
    /// measurement counts from its start).
    ran_ns: u64,
    waited_ns: u64,
    /// CPU it used, reaped children included, in seconds.
    used: f64,
}

impl Interval {
    /// `None` when no time passed between the two.
    fn between(then: &Measured, now: &Measured, ticks_per_sec: f64) -> Option<Interval> {
        let secs = now.at.duration_since(then.at).as_secs_f64();
        if secs <= 0.0 {
            return None;
        }
        let (mut ran_ns, mut waited_ns) = (0u64, 0u64);
        for (tid, (run, wait)) in &now.runnable_ns {
            let (run0, wait0) = then.runnable_ns.get(tid).copied().unwrap_or_default();
            ran_ns += run.saturating_sub(run0);
            waited_ns += wait.saturating_sub(wait0);
        }
        let used = now.cpu_ticks.saturating_sub(then.cpu_ticks) as f64 / ticks_per_sec;
        Some(Interval {
            secs,
            ran_ns,
            waited_ns,
            used,
        })
    }

    /// Cores asked for: time on a CPU or waiting for one, or the CPU used if more.
    fn demand(&self) -> f64 {
        ((self.ran_ns + self.waited_ns) as f64 / 1e9).max(self.used) / self.secs
    }

    /// Used at least [`FREEZE_CPU_SHARE`] of a core.
    fn busy(&self) -> bool {
        self.used >= FREEZE_CPU_SHARE * self.secs
    }

    /// The share of the interval it wanted a core and had none (for a thread pool, the
    /// share of its threads' wanting): time lost, credited to a shielded extra's clock.
    fn lost(&self) -> Option<Duration> {
        (self.waited_ns > 0).then(|| {
            let share = self.waited_ns as f64 / (self.ran_ns + self.waited_ns) as f64;
            Duration::from_secs_f64(self.secs * share)
        })
    }
}

/// What the governor does to a sample it decided on: the seam between deciding and acting
/// (a sample's freezer, or a test's fake).
pub(crate) trait Governed {
    fn freeze(&self);
    fn thaw(&self);
}

/// The governor freezes and thaws a sample through its freezer.
impl Governed for std::sync::Arc<Freezable> {
    fn freeze(&self) {
        Freezable::freeze(self);
    }

    fn thaw(&self) {
        Freezable::thaw(self);
    }
}

/// Carries out `d` on the samples of `views` (`handles[i]`: the slot and sample of
/// `views[i]`), saying why in the log.
fn act<G: Governed>(d: &Decision, views: &[View], handles: &[(usize, G)], why: &Why) {
    for &i in &d.freeze {
        let (slot, sample) = &handles[i];
        if views[i].starved {
            tracing::debug!(
                "freezing the extra sample on slot {slot}: starved at the lowest weight"
            );
        } else {
            let cores = why.cores;
            tracing::debug!(
                "freezing the extra sample on slot {slot}: our demand exceeds {cores} cores"
            );
        }
        sample.freeze();
    }
    if let Some(i) = d.thaw {
        let (slot, sample) = &handles[i];
        let (asked, idle) = (why.asked, why.idle_cores);
        tracing::debug!(
            "thawing the extra sample on slot {slot}: {asked:.2} cores asked, {idle:.2} idle"
        );
        sample.thaw();
    }
}

/// What a decision was taken on, for the log.
struct Why {
    cores: usize,
    asked: f64,
    idle_cores: f64,
}

/// Reads a running sample that is not frozen, keeps the reading for the next pass and its
/// demand among the recent ones, and returns its demand over the interval since the last
/// reading (0 at the first), whether it was busy, and whether it starved at the lowest weight
/// (a shielded extra, reweighed and credited the time it waited for a core here).
fn measure(
    r: &mut Running,
    sample: &Freezable,
    role: Role,
    files: &mut ProcFiles,
    ticks_per_sec: f64,
    counted: &mut Counted,
) -> (f64, bool, bool) {
    let reading = sample.read(files);
    counted.pids.extend(reading.pids);
    counted.runnable += reading.runnable;
    let now = Measured {
        at: Instant::now(),
        cpu_ticks: reading.ticks,
        runnable_ns: reading.times,
        runnable: reading.runnable,
    };
    let (mut demand, mut busy, mut starved) = (0.0, false, false);
    if let Some(then) = &r.last {
        if let Some(interval) = Interval::between(then, &now, ticks_per_sec) {
            busy = interval.busy();
            demand = interval.demand();
            if role == Role::Extra && sample.shielded() {
                starved = sample.reweigh(Seen {
                    used: interval.used / interval.secs,
                    runnable: now.runnable > 0,
                    was_runnable: then.runnable > 0,
                });
                if let Some(lost) = interval.lost() {
                    sample.credit(lost);
                }
            }
        }
        r.recent.push_back(demand);
        if r.recent.len() > THAW_WINDOW {
            r.recent.pop_front();
        }
    }
    r.last = Some(now);
    (demand, busy, starved)
}

/// One governor step over every seat: measure, decide, act. Returns what the running
/// samples asked of the CPUs over the interval, in cores (their threads' time on a CPU or
/// waiting for one; a sample measured for the first time counts nothing yet): a thread pool
/// that keeps many threads runnable for moments asks only for the time it uses, and an extra
/// left waiting for a core asks for the whole interval. `None` where samples run and none has
/// a cgroup to measure (no freezer); one between its start and its attachment counts nothing.
/// `sampler.idle` holds the machine's idle cores of the last intervals; a freeze or a thaw
/// starts it over.
pub(crate) fn govern(seats: &[Seat], cores: usize, sampler: &mut Sampler) -> Pass {
    let Sampler { idle, files } = sampler;
    let ticks_per_sec = clock_ticks_per_sec();
    let mut counted = Counted::default();
    let mut views = Vec::new();
    let mut handles = Vec::new();
    let (mut running, mut attached) = (false, false);
    let mut unmeasured_primaries = 0;
    for (slot, seat) in seats.iter().enumerate() {
        let mut r = seat.running.lock().unwrap();
        let Some(r) = r.as_mut() else { continue };
        running = true;
        let Some(sample) = r.sample.clone() else {
            // Starting: its slot attaches it within moments where there are cgroups to
            // measure; where there are none it never is, and its core shows in the idle.
            let starting = r.started.elapsed() < STARTING;
            unmeasured_primaries += usize::from(r.role == Role::Primary && starting);
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
        let (demand, busy, starved) = if frozen {
            r.last = None;
            (0.0, false, false)
        } else {
            measure(r, &sample, role, files, ticks_per_sec, &mut counted)
        };
        let n = r.recent.len();
        unmeasured_primaries += usize::from(role == Role::Primary && n == 0);
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
        handles.push((slot, sample));
    }
    let asked = views.iter().map(|v| v.demand).sum();
    let idle_cores = idle.mean();
    let d = decide(&views, cores, idle_cores);
    idle.settle(&d);
    let why = Why {
        cores,
        asked,
        idle_cores,
    };
    act(&d, &views, &handles, &why);
    Pass {
        asked: (attached || !running).then_some(asked),
        counted,
        unmeasured_primaries,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freeze::sample::Freezable;
    use std::sync::Arc;

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

    /// A sample that records what the governor did to it.
    #[derive(Default)]
    struct FakeSample(std::sync::Mutex<Vec<&'static str>>);

    impl Governed for FakeSample {
        fn freeze(&self) {
            self.0.lock().unwrap().push("freeze");
        }
        fn thaw(&self) {
            self.0.lock().unwrap().push("thaw");
        }
    }

    #[test]
    fn the_governor_acts_on_exactly_the_samples_it_decided_on() {
        let views = [
            view(Role::Primary, 0, false, 1.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 2, true, 0.0, 1.0),
            view(Role::Extra, 3, false, 1.0, 1.0),
        ];
        let handles: Vec<(usize, FakeSample)> = (0..views.len())
            .map(|i| (i, FakeSample::default()))
            .collect();
        let d = decide(&views, 2, 0.0);
        let why = Why {
            cores: 2,
            asked: 3.0,
            idle_cores: 0.0,
        };
        act(&d, &views, &handles, &why);
        let did: Vec<Vec<&str>> = handles
            .iter()
            .map(|(_, s)| s.0.lock().unwrap().clone())
            .collect();
        assert_eq!(did, [vec![], vec![], vec![], vec!["freeze"]]);
        let thaw = Decision {
            freeze: vec![],
            thaw: Some(2),
        };
        act(&thaw, &views, &handles, &why);
        assert_eq!(*handles[2].1 .0.lock().unwrap(), ["thaw"]);
    }

    #[test]
    fn an_interval_asks_for_its_threads_time_and_credits_their_wait() {
        let at = Instant::now();
        let then = Measured {
            at,
            cpu_ticks: 100,
            runnable_ns: [(1, (1_000_000_000, 0))].into(),
            runnable: 1,
        };
        // Thread 1 ran 0.3 s and waited 0.1 s; thread 2, new, ran 0.1 s and waited 0.3 s.
        let now = Measured {
            at: at + Duration::from_millis(500),
            cpu_ticks: 140,
            runnable_ns: [
                (1, (1_300_000_000, 100_000_000)),
                (2, (100_000_000, 300_000_000)),
            ]
            .into(),
            runnable: 2,
        };
        let i = Interval::between(&then, &now, 100.0).unwrap();
        assert!(
            (i.demand() - 1.6).abs() < 1e-9,
            "0.8 s asked in 0.5 s: {i:?}"
        );
        assert!(i.busy(), "0.4 s of CPU in 0.5 s");
        let lost = i.lost().unwrap().as_secs_f64();
        assert!(
            (lost - 0.25).abs() < 1e-9,
            "half its wanting waited: {lost}"
        );
        assert_eq!(
            Interval::between(&now, &then, 100.0),
            None,
            "no time passed"
        );
        let idle = Measured {
            at: now.at + Duration::from_millis(500),
            cpu_ticks: 140,
            runnable_ns: now.runnable_ns.clone(),
            runnable: 0,
        };
        let i = Interval::between(&now, &idle, 100.0).unwrap();
        assert_eq!((i.demand(), i.busy(), i.lost()), (0.0, false, None));
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
        assert_eq!(decide(&views, 2, 0.0).freeze, [2]);
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
        // One sampler for both passes, as the sampler thread keeps it: the second reads
        // through the files the first kept open.
        let mut sampler = Sampler::default();
        let first = govern(&seats, 2, &mut sampler).asked;
        // A second: the kernel adds a wait to schedstat only once the thread gets its CPU, so a
        // spinner queued at the reading (a loaded CI machine) shows that wait short; over 300 ms
        // it read 0.79 of a core once.
        std::thread::sleep(Duration::from_secs(1));
        let pass = govern(&seats, 2, &mut sampler);
        let asked = pass.asked.unwrap();
        for child in [&mut sleeper, &mut spinner] {
            let _ = child.kill();
            let _ = child.wait();
        }
        drop(dirs);
        let bare = [Seat::default()];
        bare[0].begin(Role::Primary, false);
        assert_eq!(
            govern(&bare, 2, &mut Sampler::default()).asked,
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
        // What the demand walk then skips: both processes, one of them runnable.
        assert_eq!(pass.counted.pids, [sleeper.id(), spinner.id()].into());
        assert_eq!(
            pass.counted.runnable, 1,
            "the spinner runs, the sleeper sleeps"
        );
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
        assert_eq!(decide(&views, 2, 0.0).thaw, Some(2));
        // a little more than that, and thawing would take from the primary
        let views = [
            view(Role::Primary, 0, false, 0.0, 0.0),
            view(Role::Primary, 1, false, 1.3, 1.3),
            view(Role::Extra, 2, true, 0.0, 1.0),
        ];
        assert_eq!(decide(&views, 2, 0.0), Decision::default());
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
        assert_eq!(decide(&views, 2, 0.0), Decision::default());
        // ...but once it gets nothing at all, its clock must stop exactly: frozen.
        let views = [
            view(Role::Primary, 0, false, 1.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            shielded(2, false, 0.0, 1.0, true),
        ];
        assert_eq!(decide(&views, 2, 0.0).freeze, [2]);
        // A thread pool leaves 0.6 of a core: enough for it, not for an unshielded one.
        let views = [
            view(Role::Primary, 0, false, 0.0, 0.0),
            view(Role::Primary, 1, false, 1.4, 1.4),
            shielded(2, true, 0.0, 1.0, false),
        ];
        assert_eq!(decide(&views, 2, 0.0).thaw, Some(2));
        let views = [
            view(Role::Primary, 0, false, 0.0, 0.0),
            view(Role::Primary, 1, false, 1.4, 1.4),
            view(Role::Extra, 2, true, 0.0, 1.0),
        ];
        assert_eq!(decide(&views, 2, 0.0), Decision::default());
    }

    #[test]
    fn a_frozen_shielded_extra_thaws_when_the_machine_idles_beside_primaries_that_ask_for_the_cores(
    ) {
        // BigCodeBench/417 (a TensorFlow primary: its threads ask for a core, it uses 0.65)
        // beside 102 (a core): 289, frozen as starved at the lowest weight, stayed frozen
        // 7 s while a fifth of the machine idled, by the rule of demand alone.
        let shielded_frozen = View {
            shielded: true,
            ..view(Role::Extra, 2, true, 0.0, 1.0)
        };
        let views = [
            view(Role::Primary, 0, false, 1.0, 1.1),
            view(Role::Primary, 1, false, 1.0, 1.0),
            shielded_frozen,
        ];
        assert_eq!(decide(&views, 2, 0.0), Decision::default());
        assert_eq!(decide(&views, 2, 0.3).thaw, Some(2));
        // An unshielded extra would take its share from the primaries: not for idle alone.
        let views = [views[0], views[1], view(Role::Extra, 2, true, 0.0, 1.0)];
        assert_eq!(decide(&views, 2, 0.3), Decision::default());
    }

    #[test]
    fn the_idle_window_counts_only_full_windows_since_the_last_freeze_or_thaw() {
        let mut w = IdleWindow::default();
        w.push(Some(0.6));
        w.push(Some(0.6));
        assert_eq!(w.mean(), 0.0, "not a full window yet");
        w.push(Some(0.3));
        assert!((w.mean() - 0.5).abs() < 1e-9);
        w.push(Some(0.0));
        assert!((w.mean() - 0.3).abs() < 1e-9, "the oldest interval leaves");
        w.push(None);
        assert_eq!(w.mean(), 0.0, "an unmeasured interval starts it over");
        let full = |w: &mut IdleWindow| (0..THAW_WINDOW).for_each(|_| w.push(Some(0.5)));
        full(&mut w);
        w.settle(&Decision::default());
        assert!((w.mean() - 0.5).abs() < 1e-9, "nothing acted: it stays");
        w.settle(&Decision {
            freeze: vec![2],
            thaw: None,
        });
        assert_eq!(w.mean(), 0.0, "a freeze starts it over");
        full(&mut w);
        w.settle(&Decision {
            freeze: vec![],
            thaw: Some(2),
        });
        assert_eq!(w.mean(), 0.0, "a thaw starts it over");
    }

    #[test]
    fn a_moment_of_cpu_is_not_frozen() {
        let mut views = [
            view(Role::Primary, 0, false, 1.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 2, false, 1.0, 1.0),
        ];
        views[2].sustained = false; // starting up, say
        assert_eq!(decide(&views, 2, 0.0), Decision::default());
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
        let d = decide(&views, 2, 0.0);
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
        assert_eq!(decide(&views, 2, 0.0), Decision::default());
        // a primary wakes: the extra gives its core back
        let views = [
            view(Role::Primary, 0, false, 1.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 2, false, 1.0, 1.0),
        ];
        assert_eq!(decide(&views, 2, 0.0).freeze, [2]);
    }

    #[test]
    fn the_oldest_frozen_extra_thaws_once_a_core_stayed_free() {
        let views = [
            view(Role::Primary, 0, false, 0.0, 0.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 3, true, 0.0, 1.0),
            view(Role::Extra, 2, true, 0.0, 1.0),
        ];
        assert_eq!(decide(&views, 2, 0.0).thaw, Some(3));
        // the idle primary was busy a moment ago: wait
        let views = [
            view(Role::Primary, 0, false, 0.0, 1.0),
            view(Role::Primary, 1, false, 1.0, 1.0),
            view(Role::Extra, 2, true, 0.0, 1.0),
        ];
        assert_eq!(decide(&views, 2, 0.0), Decision::default());
    }

    #[test]
    fn primaries_are_never_frozen_even_when_they_alone_oversubscribe() {
        let views = [
            view(Role::Primary, 0, false, 8.0, 8.0),
            view(Role::Primary, 1, false, 8.0, 8.0),
        ];
        assert_eq!(decide(&views, 2, 0.0), Decision::default());
    }
}
