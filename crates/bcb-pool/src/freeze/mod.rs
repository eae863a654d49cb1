//! Extra samples never slow the `--parallel` ones.
//!
//! Every running sample holds a role: the first `workers` in flight are *primary*, the ones
//! the scheduler let in beyond them (while CPUs idled: samples that sleep or wait) are
//! *extra*.
//!
//! Where the slot has a `cpu` group (with the freezer: the usual case; v1 or v2), an
//! extra sample that computes runs at the lowest CPU weight (`cpu.shares` 16 against a
//! primary's 1024): the kernel gives it little more than what the primaries leave, with no
//! measurement in between, so it fills the fraction of a core a thread pool leaves as well as a whole
//! idle one. An extra starts at the default weight and drops to the lowest once it used a
//! quarter of a core over an interval (100 ms); it gets the default back once it goes quiet
//! (no thread runnable at two measurements). A sample that mostly sleeps so keeps the
//! default weight, and its brief wake-ups are served at once (at the lowest weight beside
//! busy primaries, a server thread can wait a second for a millisecond of CPU and miss its
//! test's fixed sleep).
//! What an extra loses waiting for a core is credited to its clock every interval (its
//! threads' wait over their wait plus run, from `/proc/TID/schedstat`): its supervisor moves
//! its kill deadline and the in-sample alarm by that time (the harness's `freezer.py`, op `credit`), and
//! the slot's own watchdog here does the same, so a verdict does not depend on what ran
//! beside it. The kernel adds a wait to `schedstat` only once the thread gets its CPU, so
//! an extra at the lowest weight that stays runnable yet uses almost nothing is starved:
//! it gets the default weight back for one interval, and only if it is still runnable
//! after using its share of a core then (it computes, rather than finishing a burst a
//! waiting thread of its test needs in time) is it frozen when starved (its clock then
//! stops exactly), and thawed, oldest first, once half a core has stayed free of our demand
//! or the machine left a fifth of a core idle over the window ([`next_weight`],
//! [`governor::decide`]) or when the scheduler would start a new sample beyond the workers (the
//! core goes to the oldest frozen one instead: [`thaw_oldest`]). Once quiet, it starts over
//! (probed again before any freeze). When it becomes primary, it gets the default weight back.
//!
//! Without a cpu group, the governor freezes instead (the freezer cgroup, through the slot's
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
//!
//! In rooms: [`sample`] (a freezable sample: cgroup control and its clock), [`weights`] (an
//! extra's CPU weight), [`seats`] (roles and the moves between them), [`governor`] (measure,
//! decide, act); `/proc` is read in `local::procfs`.

mod governor;
mod sample;
mod seats;
mod weights;

pub(crate) use governor::{govern, Pass, Sampler};
pub(crate) use sample::Freezable;
pub(crate) use seats::{promote_oldest, thaw_oldest, Role, Seat};

use std::time::Duration;

/// Share of a core an extra sample must have used over the last interval to be frozen.
const FREEZE_CPU_SHARE: f64 = 0.25;
/// Most time a sample may be held, frozen or credited for waiting for a core: its deadlines
/// move by at most this, so a sample's wall never exceeds its time limit by more, whatever
/// the governor did or failed to do. Once spent, the sample is never frozen again and runs
/// at the default weight (it competes for the cores as a primary does). The supervisor holds
/// the same budget (`freeze_budget_secs` on the wire) and thaws the sample itself once it is
/// spent, so a governor that stopped, or lost track of a freeze, cannot leave one frozen.
pub(crate) const FREEZE_BUDGET: Duration = Duration::from_secs(60);

/// Held (frozen or credited) for this long, a sample that did not pass runs again as a
/// primary, never held, and that run's verdict counts: its deadlines moved by the time held,
/// but a clock it reads itself did not (BigCodeBench/821 times five 1-s sleeps against
/// 0.5 s of slack). Below it, a hold is no more than a primary's own waits for a core on a
/// busy machine (821 passed credited 0.2 s beside a CPU-bound load).
pub(crate) const RERUN_HELD_OVER: Duration = Duration::from_secs(1);
