//! What every remote backend shares: jobs go out in chunks, each chunk comes back as one
//! outcome (or [`ExecError`]) per job, and the [`Executor`] contract is kept, so the session's
//! journal, progress, retries, breaker and resume work as they do locally.
//!
//! A backend implements [`RemoteBackend::run_chunk`] only; how jobs reach it (today
//! [`Executor::run`]) is this module's business.

use std::collections::HashMap;
use std::time::Duration;

use bcb_executor::{ExecError, Executor, Job, JobId, OnDone, Outcome};

/// One result per job of a chunk.
pub type JobResults = Vec<(JobId, Result<Outcome, ExecError>)>;

/// Jobs per chunk unless `--remote-chunk` says otherwise (see the README, "Remote execution").
pub const DEFAULT_CHUNK: usize = 64;

/// A backend that evaluates jobs elsewhere, a chunk at a time.
pub trait RemoteBackend: Send + Sync {
    /// Short name for messages (`gradio`, `e2b`).
    fn name(&self) -> &'static str;

    /// Runs `jobs` (all with the same time limit) remotely: one result per job, in any order.
    /// A job left out counts as having got no verdict.
    fn run_chunk(&self, jobs: &[Job]) -> JobResults;

    /// Where the jobs go, for the start-up line.
    fn describe(&self) -> Vec<String>;
}

/// A [`RemoteBackend`] as an [`Executor`]: jobs grouped by time limit (the remote side takes
/// one per request), cut into chunks of `chunk`, sent one chunk at a time.
pub struct Chunked<B> {
    pub backend: B,
    pub chunk: usize,
}

impl<B: RemoteBackend> Chunked<B> {
    /// The chunks `jobs` are sent in: longest-first order kept within each time limit.
    pub fn chunks(&self, jobs: Vec<Job>) -> Vec<Vec<Job>> {
        let mut groups: Vec<(Duration, Vec<Job>)> = Vec::new();
        for job in jobs {
            match groups.iter_mut().find(|(t, _)| *t == job.time_limit) {
                Some((_, g)) => g.push(job),
                None => groups.push((job.time_limit, vec![job])),
            }
        }
        let size = self.chunk.max(1);
        groups
            .into_iter()
            .flat_map(|(_, g)| g.chunks(size).map(<[Job]>::to_vec).collect::<Vec<_>>())
            .collect()
    }
}

impl<B: RemoteBackend> Executor for Chunked<B> {
    fn name(&self) -> &'static str {
        self.backend.name()
    }

    fn run(&self, jobs: Vec<Job>, done: &OnDone) -> Result<(), ExecError> {
        // Remote evaluators run unittest suites only: a script job is refused, never sent.
        let (scripts, jobs): (Vec<Job>, Vec<Job>) =
            jobs.into_iter().partition(|j| j.script().is_some());
        for job in scripts {
            let refused = ExecError::fatal(
                format!("{}: script jobs run on the local backend only", self.backend.name()),
                "serve /run_code from a bcb using the local executor (`--executor pool` or `process`)",
            );
            if done(job, Err(refused)).is_break() {
                return Ok(());
            }
        }
        for chunk in self.chunks(jobs) {
            let mut results: HashMap<JobId, Result<Outcome, ExecError>> =
                self.backend.run_chunk(&chunk).into_iter().collect();
            let mut stop = false;
            // Every job of the chunk is reported (it was sent), even after a Break.
            for job in chunk {
                let result = results.remove(&job.id).unwrap_or_else(|| {
                    Err(ExecError::transient(format!(
                        "{}: the remote side returned no verdict for {}",
                        self.backend.name(),
                        job.id
                    )))
                });
                stop |= done(job, result).is_break();
            }
            if stop {
                break;
            }
        }
        Ok(())
    }

    fn describe(&self) -> Vec<String> {
        let mut d = self.backend.describe();
        d.push(format!("chunks of {} job(s)", self.chunk));
        d
    }
}

/// Every job of a chunk gets the same error (the request as a whole failed).
pub fn all_failed(jobs: &[Job], e: &ExecError) -> JobResults {
    jobs.iter()
        .map(|j| (j.id.clone(), Err(e.clone())))
        .collect()
}

/// A value cut to a readable length for error messages (the shared excerpt).
/// The blocking HTTP client of every remote backend: 20-s connect, `read_timeout` per
/// request, bcb's user agent.
pub(crate) fn http_client(read_timeout: Duration) -> Result<reqwest::blocking::Client, ExecError> {
    reqwest::blocking::Client::builder()
        .connect_timeout(Duration::from_secs(20))
        .timeout(read_timeout)
        .user_agent(concat!("bcb/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| {
            ExecError::fatal(
                format!("cannot build an HTTP client: {e}"),
                "this is a bug in bcb; please report it",
            )
        })
}

/// The text at `key` of a backend's JSON answer `v`; a fatal error (`missing`, with a
/// shortened copy of the answer, and `hint`) when the answer has none.
pub(crate) fn text_field<'a>(
    v: &'a serde_json::Value,
    key: &str,
    missing: &str,
    hint: &str,
) -> Result<&'a str, ExecError> {
    v.get(key)
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| ExecError::fatal(format!("{missing}: {}", short(v)), hint))
}

pub(crate) fn short(v: &impl std::fmt::Display) -> String {
    bcb_http::excerpt(&v.to_string())
}

/// An error with its causes (the shared printer).
pub(crate) use bcb_http::error_chain;

/// Backoff for one HTTP step of a remote backend (`--remote-retries`).
#[derive(Debug, Clone, Copy)]
pub struct HttpRetry {
    /// Further tries after the first.
    pub retries: usize,
    pub first_delay: Duration,
    pub max_delay: Duration,
}

impl HttpRetry {
    /// Sends what `build` makes through the shared retry loop (`bcb-http`: backoff with
    /// jitter, `Retry-After` first): connection errors, 429 and 5xx are tried again; any other
    /// status comes back for the caller to read. After the last try: why, and how many tries.
    pub fn send(
        &self,
        what: &str,
        build: &dyn Fn() -> reqwest::blocking::RequestBuilder,
    ) -> Result<reqwest::blocking::Response, String> {
        let policy = bcb_http::RetryPolicy {
            retries: self.retries,
            first_delay: self.first_delay,
            max_delay: self.max_delay,
            ..bcb_http::RetryPolicy::new(self.retries)
        };
        let op = || {
            let sent = build().send();
            match sent {
                // 507 (disk full) will not clear by itself: the caller says so.
                Ok(r) if r.status().as_u16() == 507 => Ok(r),
                Ok(r) if r.status().is_server_error() || r.status().as_u16() == 429 => {
                    Err(bcb_http::check_blocking(what, Ok(r)).expect_err("an error status"))
                }
                other => other.map_err(|e| bcb_http::HttpError::from_reqwest(what, &e)),
            }
        };
        bcb_http::retry_blocking(&policy, op, |_| true, |_, _| {})
            .map_err(|f| format!("{what}: {} (gave up after {} tries)", f.error, f.attempts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bcb_executor::{Details, Program, Status};
    use std::ops::ControlFlow;
    use std::sync::Mutex;

    struct Echo(Mutex<Vec<usize>>);
    impl RemoteBackend for Echo {
        fn name(&self) -> &'static str {
            "echo"
        }
        fn run_chunk(&self, jobs: &[Job]) -> JobResults {
            self.0.lock().unwrap().push(jobs.len());
            jobs.iter()
                .map(|j| (j.id.clone(), Ok(Outcome::new(Status::Pass, Details::new()))))
                .collect()
        }
        fn describe(&self) -> Vec<String> {
            Vec::new()
        }
    }

    fn job(n: usize, secs: u64) -> Job {
        Job {
            time_limit: Duration::from_secs(secs),
            ..Job::for_test(&format!("BigCodeBench/{n}"), Program::Sample(0), "x", "")
        }
    }

    #[test]
    fn chunks_keep_one_time_limit_and_stop_after_a_break() {
        let ex = Chunked {
            backend: Echo(Mutex::default()),
            chunk: 2,
        };
        let jobs = vec![
            job(1, 241),
            job(2, 300),
            job(3, 241),
            job(4, 241),
            job(5, 241),
        ];
        let sizes: Vec<Vec<u64>> = ex
            .chunks(jobs.clone())
            .iter()
            .map(|c| c.iter().map(|j| j.time_limit.as_secs()).collect())
            .collect();
        assert_eq!(sizes, [vec![241, 241], vec![241, 241], vec![300]]);
        let seen = Mutex::new(0);
        ex.run(jobs, &|_, r| {
            assert!(r.is_ok());
            *seen.lock().unwrap() += 1;
            ControlFlow::Break(())
        })
        .unwrap();
        assert_eq!(
            *seen.lock().unwrap(),
            2,
            "the first chunk is reported whole"
        );
        assert_eq!(*ex.backend.0.lock().unwrap(), [2]);
    }
}
