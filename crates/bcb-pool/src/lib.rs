//! The local executors and the scheduler they share: [`ProcessExecutor`] starts a fresh
//! sandboxed interpreter per sample; [`PoolExecutor`] keeps pre-warmed interpreters (forked
//! from a zygote) and forks one child per sample. Both run samples in `bcb-sandbox`'s
//! sandbox, admitted by one queue (`schedule`) whose governor (`freeze`) weighs, freezes and
//! thaws what overlaps the CPU-bound samples.

/// The [`bcb_executor::Executor`] methods both local executors share, for a type with a
/// `base` ([`process::Base`]) and an infallible `serve_upto(source, jobs, done)`: a batch is a
/// source that closes after its jobs, `serve` runs until the source closes, and the run's
/// header lists the sandbox's protections in force; `new` takes the host's isolation. The
/// tokens after the name are the type's other `Executor` methods.
macro_rules! local_executor {
    ($ty:ty, $name:literal, $($rest:tt)*) => {
        impl $ty {
            /// With the sandbox this host allows ([`bcb_sandbox::host_isolation`]).
            pub fn new(cfg: bcb_executor::ExecConfig) -> anyhow::Result<Self> {
                Self::with_isolation(cfg, bcb_sandbox::host_isolation())
            }
        }

        impl bcb_executor::Executor for $ty {
            fn name(&self) -> &'static str {
                $name
            }

            fn run(
                &self,
                jobs: Vec<bcb_executor::Job>,
                done: &bcb_executor::OnDone,
            ) -> Result<(), bcb_executor::ExecError> {
                let n = jobs.len();
                bcb_executor::intake::run_via_serve(jobs, done, |source, done| {
                    self.serve_upto(source, Some(n), done);
                    Ok(())
                })
            }

            /// Workers stay warm for as long as `source` stays open.
            fn serve(
                &self,
                source: &dyn bcb_executor::JobSource,
                done: &bcb_executor::OnServed,
            ) -> Result<(), bcb_executor::ExecError> {
                self.serve_upto(source, None, done);
                Ok(())
            }

            /// The platform first (`host (cgroup v1, namespaces, uid 0, Landlock ABI 7)`),
            /// then each protection in force.
            fn describe(&self) -> Vec<String> {
                let host = format!("host ({})", bcb_sandbox::Platform::of_host());
                std::iter::once(host)
                    .chain(self.base.iso.in_force(&self.base.cfg))
                    .collect()
            }

            $($rest)*
        }
    };
}

mod freeze;
mod pool;
mod process;
mod procfs;
mod route;
mod schedule;
mod slot;
mod targets;
mod zygote;

pub use pool::PoolExecutor;
pub use process::ProcessExecutor;
pub use procfs::process_tree_cpu_secs;
pub use schedule::default_max_in_flight;
