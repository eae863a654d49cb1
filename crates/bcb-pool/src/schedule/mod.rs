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

mod admission;
mod demand;
mod queue;
#[cfg(test)]
mod tests;

pub use admission::default_max_in_flight;
pub(crate) use admission::Admission;
pub(crate) use demand::note_spawner;
pub(crate) use queue::run_queue;
