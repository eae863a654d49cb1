//! The engine of `bcb serve`: bcb-eval's [`WarmSession`] (one warm executor, the ground truth
//! checked at start, dedup, the verdict cache, fair sharing between submissions) behind the
//! server's [`Verdicts`] trait. This file is the only place the server meets the session.

use std::sync::{Arc, RwLock};

use bcb_eval::{SessionError, WarmSession};

use crate::backend::{
    Deliver, DeliverScript, EngineContext, ScriptJob, ScriptRequest, Stats, Submission,
    SubmitError, SubmitOptions, SubmitSample, Verdicts,
};

pub struct WarmVerdicts {
    /// Taken out by [`Verdicts::close`] (closing consumes the session).
    session: RwLock<Option<WarmSession>>,
    context: EngineContext,
}

impl WarmVerdicts {
    pub fn new(session: WarmSession) -> WarmVerdicts {
        let context = EngineContext {
            gt: Arc::new(session.ground_truth().clone()),
            settings: Arc::new(session.settings().clone()),
        };
        WarmVerdicts {
            session: RwLock::new(Some(session)),
            context,
        }
    }
}

/// Holding the handle keeps the submission; dropping it cancels what has not started.
struct WarmSubmission {
    _handle: bcb_eval::SubmissionHandle,
}

impl Submission for WarmSubmission {}

struct WarmScript {
    _job: bcb_eval::ScriptSubmission,
}

impl ScriptJob for WarmScript {}

/// What a refused submission (of samples or a script) tells the client.
fn submit_error(e: SessionError) -> SubmitError {
    match e {
        SessionError::UnknownTasks(ids) => SubmitError::UnknownTasks(ids),
        SessionError::Closed => SubmitError::Closed,
        other => SubmitError::Other {
            message: other.to_string(),
            hint: "see the server's log".into(),
        },
    }
}

impl Verdicts for WarmVerdicts {
    fn submit(
        &self,
        samples: Vec<SubmitSample>,
        opts: SubmitOptions,
        deliver: Deliver,
    ) -> Result<Box<dyn Submission>, SubmitError> {
        let guard = self.session.read().unwrap();
        let session = guard.as_ref().ok_or(SubmitError::Closed)?;

        let sub = session
            .submit_with(samples, opts, move |(index, result)| deliver(index, result))
            .map_err(submit_error)?;
        Ok(Box::new(WarmSubmission { _handle: sub }))
    }

    fn run_script(
        &self,
        req: ScriptRequest,
        deliver: DeliverScript,
    ) -> Result<Box<dyn ScriptJob>, SubmitError> {
        let guard = self.session.read().unwrap();
        let session = guard.as_ref().ok_or(SubmitError::Closed)?;
        let sub = session.submit_script(req, deliver).map_err(submit_error)?;
        Ok(Box::new(WarmScript { _job: sub }))
    }

    fn stats(&self) -> Stats {
        let guard = self.session.read().unwrap();
        let Some(s) = guard.as_ref() else {
            return Stats::default();
        };
        let st = s.stats();
        Stats {
            queued: st.queued,
            in_flight: st.in_flight,
            cache_hits: st.cached,
            dedup_hits: st.deduplicated,
        }
    }

    fn context(&self) -> Option<EngineContext> {
        Some(self.context.clone())
    }

    fn close(&self) {
        let session = self.session.write().unwrap().take();
        if let Some(s) = session {
            s.close();
        }
    }
}
