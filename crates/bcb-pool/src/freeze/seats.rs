//! Seats and roles: what each worker runs, primary or extra, and the moves between them (the
//! oldest extra takes a finished primary's place; a core that frees thaws the oldest frozen
//! extra first).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::sample::Freezable;
use super::weights::PRIMARY_CPU_SHARES;
use crate::procfs::ThreadTimes;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// One of the `workers` samples that always run.
    Primary,
    /// Admitted beyond them; frozen whenever it would take a core from a primary one.
    Extra,
}

pub(super) struct Running {
    pub(super) role: Role,
    pub(super) started: Instant,
    /// Expected to sleep (its task's ground truth mostly waited, or a sample of the task
    /// timed out asleep): it never takes a primary's place when one ends.
    pub(super) sleeper: bool,
    pub(super) sample: Option<Arc<Freezable>>,
    /// Cores the sample asked for (see [`View::demand`]) at the last [`THAW_WINDOW`]
    /// measurements while thawed.
    pub(super) recent: VecDeque<f64>,
    /// The last measurement while thawed: when, the CPU ticks, and each thread's runnable
    /// time (none while frozen: a thawed sample starts a fresh baseline).
    pub(super) last: Option<Measured>,
    /// Time the job's sample processes so far were held (see [`Freezable::sample_held`]).
    pub(super) held: Duration,
}

/// A sample that ended: its role at the end, and how long it was held in all.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ended {
    pub role: Role,
    pub held: Duration,
}

pub(super) struct Measured {
    pub(super) at: Instant,
    pub(super) cpu_ticks: u64,
    pub(super) runnable_ns: ThreadTimes,
    /// Threads runnable at the measurement.
    pub(super) runnable: usize,
}

/// What one worker is running: shared by the worker (which starts and ends samples and
/// attaches their freeze control) and the governor.
#[derive(Default)]
pub(crate) struct Seat {
    pub(super) running: Mutex<Option<Running>>,
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
            held: Duration::ZERO,
        });
    }

    /// The running sample's role, if one runs.
    #[cfg(test)]
    pub fn role(&self) -> Option<Role> {
        self.running.lock().unwrap().as_ref().map(|r| r.role)
    }

    /// Ends the running sample; returns its role at the end and the time it was held.
    pub fn end(&self) -> Option<Ended> {
        let mut r = self.running.lock().unwrap().take()?;
        if let Some(f) = &r.sample {
            f.end();
            r.held += f.sample_held();
        }
        Some(Ended {
            role: r.role,
            held: r.held,
        })
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
                r.held += f.sample_held();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freeze::governor::{govern, Sampler};

    #[test]
    fn roles_follow_samples_the_oldest_extra_takes_a_finished_primarys_place() {
        let seats: Vec<Seat> = (0..4).map(|_| Seat::default()).collect();
        seats[0].begin(Role::Primary, false);
        seats[2].begin(Role::Extra, false);
        std::thread::sleep(Duration::from_millis(5));
        seats[3].begin(Role::Extra, false);
        assert_eq!(seats[0].end().map(|e| e.role), Some(Role::Primary));
        assert!(promote_oldest(&seats));
        let role = |i: usize| seats[i].running.lock().unwrap().as_ref().map(|r| r.role);
        assert_eq!(role(2), Some(Role::Primary), "the oldest extra");
        assert_eq!(role(3), Some(Role::Extra));
        // the worker that ran the finished primary now starts an extra
        seats[0].begin(Role::Extra, false);
        assert_eq!(seats[2].end().map(|e| e.role), Some(Role::Primary));
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
        assert_eq!(seats[0].end().map(|e| e.role), Some(Role::Primary));
        assert!(!promote_oldest(&seats), "the only extra sleeps");
        std::thread::sleep(Duration::from_millis(5));
        seats[2].begin(Role::Extra, false);
        seats[0].begin(Role::Primary, false);
        assert_eq!(seats[0].end().map(|e| e.role), Some(Role::Primary));
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
            govern(&seats, 2, &mut Sampler::default());
        }
        assert!(!sample.is_frozen(), "a primary is never frozen");
        assert_ne!(
            std::fs::read_to_string(dir.path().join("freezer.state"))
                .ok()
                .as_deref(),
            Some("FROZEN")
        );
    }
}
