//! Ending whatever this process runs on an interrupt (Ctrl-C, SIGTERM, SIGHUP): the flag and
//! the remote runs' [`GracefulStop`] are the contract's (`bcb_executor::stop`); the local
//! samples and their cgroups and work folders are the sandbox's, torn down here.

pub use bcb_executor::stop::{requested, AfterStop, GracefulStop};

/// Stops everything this process runs: local samples are thawed, killed and their cgroups
/// removed now; remote runs are told through [`requested`].
pub fn request() -> AfterStop {
    bcb_executor::stop::mark_requested();
    bcb_sandbox::teardown();
    let after = bcb_executor::stop::after_stop();
    if after == AfterStop::Exit {
        exiting();
    }
    after
}

/// Removes what the process would on a normal end (its work folders): called just before
/// `exit`, after which no destructor runs.
pub fn exiting() {
    bcb_sandbox::remove_work_roots();
}
