//! What travels to and from the sandbox: a JSONL file of jobs in, a JSONL file of one result
//! per job out (`bcb exec-jobs` writes each as it finishes). The same bcb on both sides.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::JobResults;
use bcb_executor::{ExecError, Executor, Job, JobId, Outcome};

/// A [`Job`] as a line.
#[derive(Debug, Serialize, Deserialize)]
struct JobLine {
    id: JobId,
    code: String,
    test: String,
    entry_point: String,
    time_limit_secs: f64,
    expected_secs: Option<f64>,
}

/// One job's result as a line: an outcome, or why there is none.
#[derive(Debug, Serialize, Deserialize)]
struct ResultLine {
    id: JobId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
}

/// The jobs file of a chunk.
pub fn jobs_file(jobs: &[Job]) -> Vec<u8> {
    let mut out = Vec::new();
    for j in jobs {
        let line = JobLine {
            id: j.id.clone(),
            code: j.code.to_string(),
            test: j.test.to_string(),
            entry_point: j.entry_point.clone(),
            time_limit_secs: j.time_limit.as_secs_f64(),
            expected_secs: j.expected_secs,
        };
        serde_json::to_writer(&mut out, &line).expect("jobs serialize");
        out.push(b'\n');
    }
    out
}

/// The results file the sandbox wrote → a result per job it names.
pub fn read_results(bytes: &[u8]) -> Result<JobResults, String> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            let r: ResultLine =
                serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1))?;
            let result = match (r.outcome, r.error, r.hint) {
                (Some(o), _, _) => Ok(o),
                (None, Some(e), Some(h)) => Err(ExecError::fatal(e, h)),
                (None, e, None) => Err(ExecError::transient(
                    e.unwrap_or_else(|| "no outcome".into()),
                )),
                (None, None, Some(h)) => Err(ExecError::fatal("no outcome", h)),
            };
            Ok((r.id, result))
        })
        .collect()
}

/// The sandbox side (`bcb exec-jobs`): runs the jobs in `jobs` with `executor`, appending a
/// result line to `out` as each finishes. Returns how many results were written.
pub fn run_jobs_file(executor: &dyn Executor, jobs: &Path, out: &Path) -> anyhow::Result<usize> {
    let text = std::fs::read_to_string(jobs)?;
    let jobs = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let j: JobLine = serde_json::from_str(l)?;
            Ok(Job {
                id: j.id,
                code: j.code.into(),
                test: j.test.into(),
                entry_point: j.entry_point,
                time_limit: Duration::from_secs_f64(j.time_limit_secs),
                kind: bcb_executor::JobKind::Unittest,
                expected_secs: j.expected_secs,
                expected_cpu_secs: None,
            })
        })
        .collect::<anyhow::Result<Vec<Job>>>()?;
    let file = Mutex::new((std::fs::File::create(out)?, 0usize, None::<std::io::Error>));
    executor.run(jobs, &|job, result| {
        let line = match result {
            Ok(o) => ResultLine {
                id: job.id,
                outcome: Some(o),
                error: None,
                hint: None,
            },
            Err(e) => ResultLine {
                id: job.id,
                outcome: None,
                hint: e.hint().map(str::to_string),
                error: Some(e.to_string()),
            },
        };
        let mut f = file.lock().unwrap();
        let mut bytes = serde_json::to_vec(&line).expect("results serialize");
        bytes.push(b'\n');
        match f.0.write_all(&bytes) {
            Ok(()) => f.1 += 1,
            Err(e) => {
                f.2 = Some(e);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    })?;
    let (mut f, n, err) = file.into_inner().unwrap();
    if let Some(e) = err {
        return Err(e.into());
    }
    f.flush()?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bcb_executor::{Details, Program, Status};

    #[test]
    fn results_round_trip_with_errors() {
        let id = JobId::new("BigCodeBench/1", Program::Sample(0), "x");
        let lines = [
            ResultLine {
                id: id.clone(),
                outcome: Some(Outcome::new(Status::Pass, Details::new())),
                error: None,
                hint: None,
            },
            ResultLine {
                id: id.clone(),
                outcome: None,
                error: Some("harness died".into()),
                hint: None,
            },
        ];
        let text: String = lines
            .iter()
            .map(|l| serde_json::to_string(l).unwrap() + "\n")
            .collect();
        let back = read_results(text.as_bytes()).unwrap();
        assert!(back[0].1.as_ref().unwrap().status.is_pass());
        assert!(back[1].1.as_ref().unwrap_err().is_transient());
    }
}
