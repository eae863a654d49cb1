//! Dedup across the submissions of a warm session. A program (its task and the verdict
//! cache's [`entry_key`]: the task's tests, the time limit, the program digest — the
//! execution key is the session's) is run by the first submission that needs it; a submission needing it while
//! it is queued or running waits for that run (its samples are answered from it); one needing
//! it after it finished gets the verdict at once if [`cacheable`] (the verdict cache's policy:
//! timeouts and kills are not reused). Finished verdicts are kept for the most recent
//! `capacity` programs (least recently used first out).
//!
//! A run belongs to no one submission: every submission waiting for it, its first one
//! included, is a [`Waiter`] answered by whichever thread gets the verdict. When the
//! submission running it stops without a verdict (cancelled), the run is handed over: that
//! thread runs it again for the waiters still there (see `warm.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bcb_execute::{ExecError, Job, Outcome};

use crate::event::Origin;
use crate::verdict_cache::{cacheable, entry_key};

/// Finished programs remembered by default (a verdict with its details is a few KB at most).
pub const DEFAULT_REMEMBERED: usize = 20_000;

/// A verdict of a warm session and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub outcome: Outcome,
    pub origin: Origin,
}

/// One answer of a submission: `(index in the submission, verdict or why none)`.
pub type SubmissionItem = (usize, Result<Verdict, ExecError>);

/// Where a submission's answers go, from whichever thread has one: a channel of the caller's
/// choice (std for a blocking reader, tokio for a server's task), so nobody polls for them.
/// The submission ends for its reader once every clone is dropped.
#[derive(Clone)]
pub(crate) struct Answers(Arc<dyn Fn(SubmissionItem) + Send + Sync>);

impl Answers {
    pub(crate) fn new(deliver: impl Fn(SubmissionItem) + Send + Sync + 'static) -> Answers {
        Answers(Arc::new(deliver))
    }

    pub(crate) fn send(&self, item: SubmissionItem) {
        (self.0)(item)
    }
}

/// A submission's samples that one run answers.
pub(crate) struct Waiter {
    /// The submission's jobs that get the run's verdict (`Program::Sample(i)`: index `i`).
    pub jobs: Vec<Job>,
    pub answers: Answers,
    /// Set when the submission is cancelled or dropped: nobody reads its answers.
    pub cancelled: Arc<AtomicBool>,
}

impl Waiter {
    fn live(&self) -> bool {
        !self.cancelled.load(Ordering::Relaxed)
    }
}

/// What a submission does about one of its programs.
pub(crate) enum Claim {
    /// Finished earlier in this session: its verdict (the waiter is not kept).
    Known(Outcome, Waiter),
    /// Queued or running for another submission: its samples are answered from that run.
    Waiting,
    /// Nobody has it: this submission runs it (and is its first waiter).
    Run,
}

enum Slot {
    Running(Vec<Waiter>),
    Done { outcome: Outcome, stamp: u64 },
}

#[derive(Default)]
struct State {
    slots: HashMap<String, Slot>,
    /// Finished slots by last use (oldest first), for eviction.
    by_use: BTreeMap<u64, String>,
    clock: u64,
}

/// Runs in flight and verdicts finished, across submissions. See the module docs.
pub(crate) struct SharedRuns {
    /// Off (`--no-dedup`): every claim runs, nothing is remembered.
    enabled: bool,
    capacity: usize,
    state: Mutex<State>,
}

/// The waiters a finished run answers, each with its samples' origins decided.
pub(crate) type Answered = Vec<(Waiter, Origin)>;

impl SharedRuns {
    pub fn new(enabled: bool, capacity: usize) -> SharedRuns {
        SharedRuns {
            enabled,
            capacity,
            state: Mutex::new(State::default()),
        }
    }

    /// The key of `job` (`group` keeps jobs of different submissions apart when disabled).
    pub fn key(&self, group: u64, job: &Job) -> String {
        if self.enabled {
            format!("{}/{}", job.id.task_id, entry_key(job))
        } else {
            format!(
                "{group}/{}/{:?}/{}",
                job.id.task_id, job.id.program, job.id.digest
            )
        }
    }

    /// Claims `key` for `waiter` (see [`Claim`]).
    pub fn claim(&self, key: &str, waiter: Waiter) -> Claim {
        let mut st = self.state.lock().unwrap();
        st.clock += 1;
        let now = st.clock;
        let State { slots, by_use, .. } = &mut *st;
        match slots.get_mut(key) {
            Some(Slot::Done { outcome, stamp }) => {
                by_use.remove(stamp);
                by_use.insert(now, key.to_string());
                *stamp = now;
                Claim::Known(outcome.clone(), waiter)
            }
            Some(Slot::Running(waiters)) => {
                waiters.push(waiter);
                Claim::Waiting
            }
            None => {
                slots.insert(key.to_string(), Slot::Running(vec![waiter]));
                Claim::Run
            }
        }
    }

    /// The run of `key` got `outcome`: its waiters, to answer (the first sample of the first
    /// waiter is the execution, every other one a duplicate). The verdict is remembered if the
    /// cache policy reuses it.
    pub fn finish(&self, key: &str, outcome: &Outcome) -> Answered {
        let mut st = self.state.lock().unwrap();
        let waiters = match st.slots.remove(key) {
            Some(Slot::Running(w)) => w,
            Some(done @ Slot::Done { .. }) => {
                st.slots.insert(key.to_string(), done);
                Vec::new()
            }
            None => Vec::new(),
        };
        if self.enabled && cacheable(outcome) {
            st.clock += 1;
            let stamp = st.clock;
            st.by_use.insert(stamp, key.to_string());
            st.slots.insert(
                key.to_string(),
                Slot::Done {
                    outcome: outcome.clone(),
                    stamp,
                },
            );
            while st.by_use.len() > self.capacity {
                let Some((_, old)) = st.by_use.pop_first() else {
                    break;
                };
                st.slots.remove(&old);
            }
        }
        waiters
            .into_iter()
            .enumerate()
            .map(|(i, w)| {
                let first = if i == 0 {
                    Origin::Executed
                } else {
                    Origin::Duplicate
                };
                (w, first)
            })
            .collect()
    }

    /// The run of `key` stopped without a verdict because its submission was cancelled.
    /// Cancelled waiters are dropped; `true` if others still wait (then the caller runs it
    /// again for them), `false` if none do (the slot is gone; a later claim runs it).
    pub fn hand_over(&self, key: &str) -> bool {
        let mut st = self.state.lock().unwrap();
        let Some(Slot::Running(waiters)) = st.slots.get_mut(key) else {
            return false;
        };
        waiters.retain(Waiter::live);
        if waiters.is_empty() {
            st.slots.remove(key);
            false
        } else {
            true
        }
    }

    /// The run of `key` got no verdict (the executor failed): its waiters, to tell why.
    pub fn fail(&self, key: &str) -> Vec<Waiter> {
        let mut st = self.state.lock().unwrap();
        match st.slots.remove(key) {
            Some(Slot::Running(w)) => w,
            Some(done) => {
                st.slots.insert(key.to_string(), done);
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    /// Finished verdicts remembered now.
    pub fn remembered(&self) -> usize {
        self.state.lock().unwrap().by_use.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bcb_execute::{Details, Status};

    use crate::test_support::job;

    fn waiter() -> (Waiter, Arc<AtomicBool>) {
        let cancelled = Arc::new(AtomicBool::new(false));
        let w = Waiter {
            jobs: vec![job("w")],
            answers: Answers::new(|_| {}),
            cancelled: cancelled.clone(),
        };
        (w, cancelled)
    }

    #[test]
    fn the_first_claim_runs_the_next_waits_and_a_later_one_knows() {
        let runs = SharedRuns::new(true, 10);
        let key = runs.key(1, &job("a"));
        assert!(matches!(runs.claim(&key, waiter().0), Claim::Run));
        assert!(matches!(runs.claim(&key, waiter().0), Claim::Waiting));
        let pass = Outcome::new(Status::Pass, Details::default());
        let answered = runs.finish(&key, &pass);
        let origins: Vec<Origin> = answered.iter().map(|a| a.1).collect();
        assert_eq!(origins, [Origin::Executed, Origin::Duplicate]);
        assert!(matches!(runs.claim(&key, waiter().0), Claim::Known(o, _) if o == pass));
    }

    #[test]
    fn a_timeout_is_not_remembered_and_the_oldest_goes_first() {
        let runs = SharedRuns::new(true, 2);
        let timeout = Outcome::new(Status::Timeout, Details::default());
        let key = runs.key(1, &job("slow"));
        runs.claim(&key, waiter().0);
        runs.finish(&key, &timeout);
        assert!(matches!(runs.claim(&key, waiter().0), Claim::Run));
        let pass = Outcome::new(Status::Pass, Details::default());
        for code in ["a", "b", "c"] {
            let k = runs.key(1, &job(code));
            runs.claim(&k, waiter().0);
            runs.finish(&k, &pass);
        }
        assert_eq!(runs.remembered(), 2);
        assert!(matches!(
            runs.claim(&runs.key(1, &job("a")), waiter().0),
            Claim::Run
        ));
    }

    #[test]
    fn a_cancelled_owner_hands_over_to_a_live_waiter_only() {
        let runs = SharedRuns::new(true, 10);
        let key = runs.key(1, &job("a"));
        let (owner, owner_cancelled) = waiter();
        runs.claim(&key, owner);
        owner_cancelled.store(true, Ordering::Relaxed);
        assert!(!runs.hand_over(&key), "nobody else waits: the slot goes");
        assert!(matches!(runs.claim(&key, waiter().0), Claim::Run));

        let key = runs.key(1, &job("b"));
        let (owner, owner_cancelled) = waiter();
        runs.claim(&key, owner);
        runs.claim(&key, waiter().0);
        owner_cancelled.store(true, Ordering::Relaxed);
        assert!(
            runs.hand_over(&key),
            "a live waiter is left: the run goes on"
        );
        let answered = runs.finish(&key, &Outcome::new(Status::Pass, Details::default()));
        assert_eq!(answered.len(), 1, "the cancelled owner is not answered");
        assert_eq!(
            answered[0].1,
            Origin::Executed,
            "the waiter's run is the execution"
        );
    }

    #[test]
    fn disabled_every_claim_runs() {
        let runs = SharedRuns::new(false, 10);
        let (a, b) = (runs.key(1, &job("a")), runs.key(2, &job("a")));
        assert!(matches!(runs.claim(&a, waiter().0), Claim::Run));
        assert!(matches!(runs.claim(&b, waiter().0), Claim::Run));
        runs.finish(&a, &Outcome::new(Status::Pass, Details::default()));
        assert_eq!(runs.remembered(), 0);
    }
}
