//! Script jobs on a warm session: one arbitrary program (SandboxFusion's `run_code`) run as a
//! [`JobKind::Script`] job by the session's ONE engine and executor, so it shares the workers
//! fairly with sample submissions and gets the same sandbox. Unlike samples, a script is never
//! tamper-scanned (there is no test to tamper with), deduplicated or looked up in or recorded to
//! the verdict cache and the sinks: the same code with another stdin, or randomness, gives
//! another result, and its result is the client's, not a verdict.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bcb_execute::{ExecError, Job, JobId, JobKind, Outcome, Program, ScriptInput};

use crate::engine::Engine;
use crate::error::SessionError;
use crate::event::Phase;
use crate::runner::Runner;
use crate::warm::WarmSession;

/// The task id script jobs carry (they belong to no task of the dataset).
pub const SCRIPT_TASK_ID: &str = "bcb/run_code";

/// One program to run.
#[derive(Debug, Clone)]
pub struct ScriptRequest {
    pub code: String,
    pub input: ScriptInput,
    /// Its wall limit.
    pub run_timeout: Duration,
}

/// A script in flight; its result goes to the `deliver` given to
/// [`WarmSession::submit_script`]. Dropping it cancels the job if it has not started.
pub struct ScriptSubmission {
    group: u64,
    finished: Arc<AtomicBool>,
    engine: Arc<Engine>,
}

impl Drop for ScriptSubmission {
    fn drop(&mut self) {
        if !self.finished.load(Ordering::Relaxed) {
            self.engine.cancel(self.group);
        }
    }
}

impl WarmSession {
    /// Queues one script job (its own turn in the round-robin) and returns at once. Its memory
    /// cap is the request's when lower than the session's limit, else the session's.
    /// `deliver` gets its result (or the error that left it without one) from the thread that
    /// has it; it is dropped uncalled if the job never ran (cancelled, or the session closed).
    pub fn submit_script(
        &self,
        req: ScriptRequest,
        deliver: impl FnOnce(Result<Outcome, ExecError>) + Send + 'static,
    ) -> Result<ScriptSubmission, SessionError> {
        let engine = self.engine().clone();
        if !engine.accepting() {
            return Err(SessionError::Closed);
        }
        let mut input = req.input;
        let server_cap = self.settings().limits.memory_mb;
        input.memory_mb = match (input.memory_mb, server_cap) {
            (Some(mb), 0) => Some(mb),
            (Some(mb), cap) => Some(mb.min(cap)),
            (None, _) => None,
        };
        let job = Job {
            id: JobId::new(SCRIPT_TASK_ID, Program::Sample(0), &req.code),
            code: req.code.into(),
            test: "".into(),
            entry_point: String::new(),
            time_limit: req.run_timeout,
            expected_secs: Some(req.run_timeout.as_secs_f64()),
            expected_cpu_secs: None,
            kind: JobKind::Script(Arc::new(input)),
        };
        let group = engine.group();
        let finished = Arc::new(AtomicBool::new(false));
        let mut deliver = Some(deliver);
        let retry = self.retry_policy();
        let worker = {
            let (engine, finished) = (engine.clone(), finished.clone());
            std::thread::Builder::new()
                .name(format!("bcb-script-{group}"))
                .spawn(move || {
                    let runner = Runner {
                        engine: &engine,
                        group,
                        retry,
                    };
                    // No sinks: a script's result is never journaled or cached.
                    let result =
                        runner.run_jobs(Phase::Samples, vec![job], &|_| Ok(()), &mut |_, o| {
                            if let Some(deliver) = deliver.take() {
                                deliver(Ok(o.clone()));
                            }
                            Ok(())
                        });
                    if let (Err(SessionError::NoVerdict { error, .. }), Some(deliver)) =
                        (result, deliver.take())
                    {
                        deliver(Err(error));
                    }
                    engine.forget(group);
                    finished.store(true, Ordering::Relaxed);
                })
        };
        if let Err(e) = worker {
            engine.forget(group);
            return Err(SessionError::Sink(e.into()));
        }
        Ok(ScriptSubmission {
            group,
            finished,
            engine,
        })
    }
}
