//! The steps every sample takes before it may run, shared by batch runs (`session`) and the
//! warm session (`warm`): the tamper scan refuses, dedup groups equal programs into one
//! execution, the verdict cache answers executions earlier runs know. What is left runs.
//! Nothing is emitted here: each caller tells its sinks in its own phase order.

use bcb_dataset::Dataset;
use bcb_execute::{Details, Job, Outcome, Status};
use bcb_sanitize::tamper::TamperPolicy;

use crate::dedup::{Groups, Member};
use crate::plan::tamper_refusal;
use crate::verdict_cache::VerdictCache;

pub(crate) struct Triage {
    /// Refused by the tamper scan: each gets this verdict without running.
    pub refused: Vec<(Member, Outcome)>,
    /// The others, grouped into executions (`groups.runs`, each with its members).
    pub groups: Groups,
    /// Executions the verdict cache answers.
    pub cached: Vec<(Job, Outcome)>,
    /// Executions no earlier run knows: to run (a warm session first asks its other
    /// submissions, see `shared_runs`).
    pub unknown: Vec<Job>,
}

/// Sorts `jobs` into refused, cached and unknown executions (see [`Triage`]).
pub(crate) fn triage(
    dataset: &Dataset,
    tamper: TamperPolicy,
    jobs: Vec<Member>,
    dedup: bool,
    cache: Option<&VerdictCache>,
) -> Triage {
    let mut refused = Vec::new();
    let mut work = Vec::with_capacity(jobs.len());
    for m in jobs {
        match tamper_refusal(dataset, &m.job, tamper) {
            Some(text) => refused.push((m, Outcome::new(Status::Fail, Details::all(text)))),
            None => work.push(m),
        }
    }
    let groups = Groups::new(work, dedup);
    let mut cached = Vec::new();
    let mut unknown = Vec::new();
    for job in &groups.runs {
        match cache.and_then(|c| c.get(job)) {
            Some(outcome) => cached.push((job.clone(), outcome.clone())),
            None => unknown.push(job.clone()),
        }
    }
    Triage {
        refused,
        groups,
        cached,
        unknown,
    }
}
