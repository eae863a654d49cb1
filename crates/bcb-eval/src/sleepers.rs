//! Sleepers first: samples likely to wait until their time limit (process pools, servers,
//! waits without a timeout, long sleeps, endless loops) start first, so their 241 s overlap
//! useful work instead of holding the last cores of a run.
//!
//! The ranking is a cheap static score of the program ([`bcb_sanitize::blocking`]). It only
//! orders: a likely sleeper's expected time becomes its share of the time limit, and the plan
//! runs the longest first ([`crate::plan::longest_first`]). Within a run the executor also
//! learns: once a sample of a task times out, the task's queued samples move to the front.
//! And it remembers ([`History`]): a program that timed out in a resumed journal or in a
//! result file loaded by the same run starts as if it took its whole limit, another sample
//! of such a task as if it took half.

use std::collections::HashSet;

use bcb_execute::{program_digest, Job};
use bcb_sanitize::blocking::{self, Sign};

/// How strongly a sign predicts a wait until the limit (out of [`FULL`]).
fn weight(sign: Sign) -> u32 {
    match sign {
        Sign::ProcessPool | Sign::Server => 6,
        Sign::EndlessLoop => 4,
        Sign::Sleep | Sign::Wait => 2,
        Sign::Network | Sign::Input => 1,
    }
}

/// A score at which a sample is expected to take its whole limit.
const FULL: u32 = 10;

/// The program's sleeper score: the weights of the distinct signs it shows (0: none).
pub fn score(code: &str) -> u32 {
    let mut signs: Vec<Sign> = blocking::scan(code).into_iter().map(|b| b.sign).collect();
    signs.sort();
    signs.dedup();
    signs.into_iter().map(weight).sum()
}

/// The expected time used to order a sample: its task's test time (`base`), or its share
/// of the time limit if the program looks like it waits, whichever is longer.
pub fn expected_secs(code: &str, base: Option<f64>, time_limit: f64) -> Option<f64> {
    let s = score(code).min(FULL);
    if s == 0 {
        return base;
    }
    let guess = time_limit * f64::from(s) / f64::from(FULL);
    Some(base.map_or(guess, |b| b.max(guess)))
}

/// Tasks and programs that timed out before (journals, loaded result files).
#[derive(Debug, Default)]
pub struct History {
    tasks: HashSet<String>,
    /// (task, program digest)
    programs: HashSet<(String, String)>,
}

impl History {
    /// Records a timeout of the program with `digest` (as in its `JobId`) of `task_id`.
    pub fn timed_out(&mut self, task_id: &str, digest: &str) {
        self.tasks.insert(task_id.to_string());
        self.programs
            .insert((task_id.to_string(), digest.to_string()));
    }

    /// Records a timeout of `code` (the executed program, as in a result file).
    pub fn timed_out_code(&mut self, task_id: &str, code: &str) {
        self.timed_out(task_id, &program_digest(code));
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Raises the expected time of `jobs` that timed out before (their whole limit) or whose
    /// task did (half of it); reorder them with [`crate::plan::longest_first`] afterwards.
    pub fn apply(&self, jobs: &mut [Job]) {
        for job in jobs {
            let limit = job.time_limit.as_secs_f64();
            let share = if self
                .programs
                .contains(&(job.id.task_id.clone(), job.id.digest.clone()))
            {
                1.0
            } else if self.tasks.contains(&job.id.task_id) {
                0.5
            } else {
                continue;
            };
            let guess = limit * share;
            job.expected_secs = Some(job.expected_secs.map_or(guess, |e| e.max(guess)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_or_task_that_timed_out_before_starts_first() {
        use bcb_execute::{JobId, Program};
        use std::time::Duration;
        let job = |task: &str, i: usize, code: &str| Job {
            id: JobId::new(task, Program::Sample(i), code),
            code: code.into(),
            test: "".into(),
            entry_point: "task_func".into(),
            time_limit: Duration::from_secs(100),
            kind: bcb_execute::JobKind::Unittest,
            expected_secs: Some(1.0),
            expected_cpu_secs: None,
        };
        let mut jobs = vec![
            job("a", 0, "x = 1"),
            job("b", 0, "y = 1"),
            job("b", 1, "y = 2"),
        ];
        let mut h = History::default();
        h.timed_out_code("b", "y = 2");
        h.apply(&mut jobs);
        let e: Vec<_> = jobs.iter().map(|j| j.expected_secs.unwrap()).collect();
        assert_eq!(e, [1.0, 50.0, 100.0]);
    }

    #[test]
    fn a_pool_or_server_ranks_near_its_limit_and_plain_code_keeps_its_base() {
        let pool = "from multiprocessing import Pool\ndef task_func(x):\n    with Pool() as p:\n        return p.map(abs, x)\n";
        assert_eq!(expected_secs(pool, Some(1.0), 241.0), Some(241.0 * 0.6));
        let plain = "def task_func(x):\n    return sorted(x)\n";
        assert_eq!(expected_secs(plain, Some(1.0), 241.0), Some(1.0));
        assert_eq!(expected_secs(plain, None, 241.0), None);
        // a task that is slow anyway keeps its own time
        assert_eq!(expected_secs(pool, Some(200.0), 241.0), Some(200.0));
    }

    #[test]
    fn scores_add_distinct_signs_and_cap_at_the_limit() {
        let server = "import socket, time\ndef task_func():\n    s = socket.socket()\n    s.listen(1)\n    c, _ = s.accept()\n    time.sleep(5)\n";
        assert_eq!(score(server), 6 + 2);
        let all = "import socket, time, multiprocessing\nwhile True:\n    multiprocessing.Pool()\n    socket.socket().accept()\n";
        assert_eq!(score(all), 16);
        assert_eq!(expected_secs(all, None, 100.0), Some(100.0));
    }
}
