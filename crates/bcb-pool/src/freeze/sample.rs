//! A running sample the governor may freeze: its freezer cgroup, its supervisor's control
//! pipe, its CPU weight, and the clock of the time it was held (frozen or credited), within
//! [`FREEZE_BUDGET`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::weights::{next_weight, Seen, Weighing, PRIMARY_CPU_SHARES};
use super::FREEZE_BUDGET;
use crate::procfs::{read_cgroup, CgroupReading, ProcFiles};
use bcb_sandbox::cgroups::{layout, thaw_cgroup};
use bcb_sandbox::wire::{Control, ControlPipe};

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

    pub(super) fn spent(&self) -> bool {
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
    ctrl: Option<Arc<ControlPipe>>,
    /// The job's key on the wire: the supervisor ignores ops for any other job.
    key: u64,
    clock: Mutex<Clock>,
}

impl Freezable {
    pub fn new(
        cgroup: PathBuf,
        cpu: Option<PathBuf>,
        ctrl: Arc<ControlPipe>,
        key: u64,
    ) -> Freezable {
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

    /// Sends `op` to the supervisor, or (a warming slot, no supervisor to ask) writes the
    /// freezer state itself; false when it could not be delivered.
    pub(super) fn send(&self, op: Control) -> bool {
        match &self.ctrl {
            Some(ctrl) => ctrl.try_write_line(op.line().as_bytes()),
            None => {
                let frozen = match op {
                    Control::Freeze { .. } => true,
                    Control::Thaw { .. } => false,
                    _ => return false,
                };
                layout().set_frozen(&self.cgroup, frozen).is_ok()
            }
        }
    }

    /// Where the slot has a cpu cgroup: the sample's CPU weight (v1 shares), written only
    /// when it changes.
    pub(super) fn set_shares(&self, shares: u32) {
        if let Some(cpu) = &self.cpu {
            if self.shares.swap(shares, Ordering::Relaxed) != shares {
                let _ = layout().set_cpu_shares(cpu, shares);
            }
        }
    }

    /// An extra sample's weight after a measurement (see [`next_weight`]); returns whether
    /// it is starved though it was shown to compute, and so is to be frozen.
    pub(super) fn reweigh(&self, seen: Seen) -> bool {
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
    pub(super) fn shielded(&self) -> bool {
        self.cpu.is_some() && self.ctrl.is_some()
    }

    /// Time the extra sample waited for a core: its deadlines move by it, as they do by
    /// frozen time (the supervisor adds it to the same clock).
    pub(crate) fn credit(&self, lost: Duration) {
        let mut c = self.clock.lock().unwrap();
        let lost = lost.min(FREEZE_BUDGET.saturating_sub(c.total));
        if c.ended || c.primary || c.since.is_some() || lost.is_zero() {
            return;
        }
        let credit = Control::Credit {
            key: self.key,
            secs: lost.as_secs_f64(),
        };
        if self.send(credit) {
            c.total += lost;
        }
    }

    /// Freezes the sample unless it ended, became primary or spent its budget meanwhile
    /// (checked under the clock's lock, which those changes take too).
    pub(super) fn freeze(&self) {
        let mut c = self.clock.lock().unwrap();
        if c.since.is_none()
            && !c.ended
            && !c.primary
            && !c.spent()
            && self.send(Control::Freeze { key: self.key })
        {
            c.since = Some(Instant::now());
        }
    }

    /// The sample is primary from now on: thawed, at the default weight, never frozen again.
    pub(super) fn make_primary(&self) {
        let mut c = self.clock.lock().unwrap();
        c.primary = true;
        self.thaw_locked(&mut c);
        drop(c);
        self.set_shares(PRIMARY_CPU_SHARES);
    }

    /// Whether the sample has spent its [`FREEZE_BUDGET`] (it is then governed as a primary).
    pub(super) fn spent(&self) -> bool {
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

    pub(super) fn thaw(&self) {
        let mut c = self.clock.lock().unwrap();
        self.thaw_locked(&mut c);
    }

    fn thaw_locked(&self, c: &mut Clock) {
        if let Some(since) = c.since.take() {
            c.total = (c.total + since.elapsed()).min(FREEZE_BUDGET);
            if !self.send(Control::Thaw { key: self.key }) {
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

    pub(super) fn is_frozen(&self) -> bool {
        self.clock.lock().unwrap().since.is_some()
    }

    /// Time spent frozen or credited so far, at most [`FREEZE_BUDGET`] (the slot's watchdog
    /// adds it to the deadline).
    pub fn frozen_for(&self) -> Duration {
        self.clock.lock().unwrap().held().min(FREEZE_BUDGET)
    }

    /// Time a sample (not a slot warming up, which times nothing of its own) was held, frozen
    /// or credited: what a clock it reads itself saw pass beyond its own work.
    pub fn sample_held(&self) -> Duration {
        match self.ctrl {
            Some(_) => self.frozen_for(),
            None => Duration::ZERO,
        }
    }

    /// The sample's threads, their run and wait times and CPU ticks ([`read_cgroup`]).
    pub(super) fn read(&self, files: &mut ProcFiles) -> CgroupReading {
        read_cgroup(files, &self.cgroup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freeze::governor::{govern, Sampler};
    use crate::freeze::seats::{Role, Seat};

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
        govern(&seats, 2, &mut Sampler::default());
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
            Arc::new(ControlPipe::new(std::fs::File::from(
                std::os::fd::OwnedFd::from(w),
            ))),
            0,
        );
        f.freeze();
        assert!(!f.is_frozen(), "a freeze nobody received does not count");
        assert_eq!(f.frozen_for(), Duration::ZERO);
    }
}
