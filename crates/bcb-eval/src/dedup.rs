//! Do each program once: jobs of the same task with the same program digest are one
//! execution whose verdict every duplicate gets. Such jobs are identical — the digest is of
//! the code as executed (calibration applied), the test and entry point are the task's, and
//! the time limit is per task — so the verdict is the same job's verdict, not a guess.
//! Every duplicate keeps its own [`JobId`] (its own journal record and result row).

use std::collections::HashMap;

use bcb_execute::{Job, JobId};

/// One job of a run: the samples file it belongs to (index) and the job itself.
#[derive(Debug, Clone)]
pub struct Member {
    pub file: usize,
    pub job: Job,
}

/// The jobs of a run grouped into executions: each execution (keyed by the [`JobId`] of the
/// job that represents it) stands for one or more members, the representative first.
#[derive(Debug, Default)]
pub struct Groups {
    /// What runs: one representative job per group, in first-seen order.
    pub runs: Vec<Job>,
    members: HashMap<JobId, Vec<Member>>,
}

impl Groups {
    /// Groups `jobs`. With `dedup`, the key is (task, program digest); without it, the job id
    /// (every sample runs, but the very same job listed by two files runs once, as one job
    /// id can only be in flight once).
    pub fn new(jobs: Vec<Member>, dedup: bool) -> Groups {
        let mut by_key: HashMap<(String, String, Option<JobId>), JobId> = HashMap::new();
        let mut groups = Groups::default();
        for m in jobs {
            let key = (
                m.job.id.task_id.clone(),
                m.job.id.digest.clone(),
                (!dedup).then(|| m.job.id.clone()),
            );
            match by_key.get(&key) {
                Some(rep) => groups
                    .members
                    .get_mut(rep)
                    .expect("a key maps to a group")
                    .push(m),
                None => {
                    by_key.insert(key, m.job.id.clone());
                    groups.runs.push(m.job.clone());
                    groups.members.insert(m.job.id.clone(), vec![m]);
                }
            }
        }
        groups
    }

    /// The members an execution of `rep` stands for (the representative first).
    pub fn members(&self, rep: &JobId) -> &[Member] {
        self.members.get(rep).map_or(&[], Vec::as_slice)
    }

    /// Jobs in all (executions plus duplicates).
    pub fn len(&self) -> usize {
        self.members.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bcb_execute::Program;
    use std::time::Duration;

    fn job(task: &str, i: usize, code: &str) -> Job {
        Job {
            id: JobId::new(task, Program::Sample(i), code),
            code: code.into(),
            test: "".into(),
            entry_point: "f".into(),
            time_limit: Duration::from_secs(1),
            kind: bcb_execute::JobKind::Unittest,
            expected_secs: None,
            expected_cpu_secs: None,
        }
    }

    #[test]
    fn same_task_and_program_run_once() {
        let jobs = vec![
            Member {
                file: 0,
                job: job("T/0", 0, "a"),
            },
            Member {
                file: 0,
                job: job("T/0", 1, "a"),
            },
            Member {
                file: 1,
                job: job("T/0", 0, "a"),
            },
            Member {
                file: 0,
                job: job("T/1", 0, "a"),
            },
        ];
        let g = Groups::new(jobs.clone(), true);
        assert_eq!(g.runs.len(), 2, "same code in another task is another job");
        assert_eq!(g.members(&g.runs[0].id).len(), 3);
        assert_eq!(g.len(), 4);
        let plain = Groups::new(jobs, false);
        assert_eq!(plain.runs.len(), 3, "only the identical job id is shared");
    }
}
