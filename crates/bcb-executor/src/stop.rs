//! What an interrupt (Ctrl-C, SIGTERM, SIGHUP) does to running work. The binary catches the
//! signal and calls `bcb_execute::stop::request`, which marks it here: every local sample is
//! thawed and killed and every cgroup this process made is removed (a frozen sample takes no signal, so one left behind would stay
//! frozen for good), and a remote run that ends itself cleanly (E2B kills its sandbox) sees
//! [`requested`] and stops; the run's work folders go with it. A bcb killed by SIGKILL runs
//! none of this: the next bcb's isolation probe sweeps what it left
//! (the stale cgroup and work-root sweeps of `bcb_sandbox`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);
/// Remote runs in progress that stop themselves once [`requested`] (see [`GracefulStop`]).
static GRACEFUL: AtomicUsize = AtomicUsize::new(0);

/// What the caller does after the interrupt ([`after_stop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterStop {
    /// Nothing ends itself: exit now (every local sample is gone already).
    Exit,
    /// A remote run ends itself at its next message; a second interrupt should exit.
    Wait,
}

/// Whether an interrupt was requested.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Marks the interrupt as requested: remote runs that end themselves see [`requested`] from
/// now on. The caller (`bcb_execute::stop::request`) kills the local samples.
pub fn mark_requested() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// What the caller does now that the interrupt is marked: wait while a remote run that ends
/// itself is in progress, else exit.
pub fn after_stop() -> AfterStop {
    if GRACEFUL.load(Ordering::SeqCst) == 0 {
        AfterStop::Exit
    } else {
        AfterStop::Wait
    }
}

/// Held by a remote run that ends itself once [`requested`]: while one is held, an interrupt
/// waits for it instead of exiting at once.
pub struct GracefulStop(());

impl GracefulStop {
    pub fn register() -> GracefulStop {
        GRACEFUL.fetch_add(1, Ordering::SeqCst);
        GracefulStop(())
    }
}

impl Drop for GracefulStop {
    fn drop(&mut self) {
        GRACEFUL.fetch_sub(1, Ordering::SeqCst);
    }
}
