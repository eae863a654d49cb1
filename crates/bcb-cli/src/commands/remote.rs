//! `bcb evaluate --execution gradio|e2b`: the whole samples file is evaluated elsewhere; this
//! writes the same two files, with the same names and schema, a local run writes. It never
//! falls back to local execution (that would change the environment behind the verdicts).

use bcb_envvars::EnvVars;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::bail;
use bcb_eval::{Event, RunReport, Sink};
use bcb_remote::e2b::{E2bClient, E2bOptions};
use bcb_remote::gradio::{GradioClient, GradioOptions, DEFAULT_ENDPOINT};
use bcb_remote::{Progress, RemoteEvaluator, RemoteRequest, RemoteResult};
use bcb_samples::{eval_results_path, pass_at_k_path};
use bcb_sinks::{EvalResultsFile, PassAtKFile};

use super::evaluate::Args;

/// Which remote evaluator `--execution` named.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Backend {
    Gradio,
    E2b,
}

/// Flags only remote runs read (flattened into `bcb evaluate`).
#[derive(clap::Args, Debug, Clone)]
pub struct RemoteArgs {
    /// The Gradio evaluator Space for `--execution gradio`.
    #[arg(long, visible_alias = "gradio_endpoint", default_value = DEFAULT_ENDPOINT, value_name = "URL")]
    pub gradio_endpoint: String,
    /// The E2B sandbox template for `--execution e2b` (needs E2B_API_KEY).
    #[arg(
        long,
        visible_alias = "e2b_endpoint",
        default_value = "bigcodebench_evaluator",
        value_name = "TEMPLATE"
    )]
    pub e2b_endpoint: String,
    /// Tries of each remote HTTP step on connection errors and busy servers (backoff from 1 s).
    #[arg(long, default_value_t = 8)]
    pub remote_retries: usize,
}

pub fn run(args: &Args, backend: Backend) -> anyhow::Result<ExitCode> {
    if args.shard.is_some() {
        bail!("--shard splits a local run; a remote evaluator takes the whole samples file\nhint: drop --shard, or use --execution local on each machine");
    }
    let req = request(args)?;
    let results_path = req.samples.as_deref().map(eval_results_path);
    if let Some(results_path) = results_path.as_ref().filter(|p| p.is_file() && !args.force) {
        // Nothing finished is lost: an earlier run's results stay, and nothing is sent again.
        println!(
            "{} exists from an earlier run; nothing sent to the remote evaluator (pass --force to evaluate again; the old file is kept as .bak)",
            results_path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let evaluator: Box<dyn RemoteEvaluator> = match backend {
        Backend::Gradio => {
            let mut opts = GradioOptions::new(&args.remote.gradio_endpoint);
            opts.token = std::env::var(EnvVars::HF_TOKEN)
                .ok()
                .filter(|t| !t.is_empty());
            opts.retries = args.remote.remote_retries;
            Box::new(GradioClient::new(opts).map_err(exec_error)?)
        }
        Backend::E2b => {
            let opts = E2bOptions::from_env(&args.remote.e2b_endpoint).map_err(exec_error)?;
            let cancel = opts.cancel.clone();
            // Ctrl-C stops the run at the next message from the sandbox, which is then killed.
            if let Err(e) = ctrlc::set_handler(move || cancel.store(true, Ordering::SeqCst)) {
                tracing::warn!("cannot catch Ctrl-C ({e}); an interrupted run may leave its sandbox alive until it times out");
            }
            Box::new(E2bClient::new(opts).map_err(exec_error)?)
        }
    };
    let mut reporter = Reporter::new(args.quiet);
    let started = Instant::now();
    let out = evaluator
        .evaluate(&req, &mut |p| reporter.show(p))
        .map_err(exec_error)?;
    reporter.done();
    tracing::info!("remote evaluation took {:.1?}", started.elapsed());
    write_files(args, &req, out, results_path)
}

fn request(args: &Args) -> anyhow::Result<RemoteRequest> {
    let samples = match (&args.samples, args.check_gt_only) {
        // A ground-truth check runs no samples: none is uploaded.
        (_, true) => None,
        (Some(p), _) if p.is_file() && p.to_string_lossy().ends_with(".jsonl") => Some(p.clone()),
        (Some(p), _) if p.is_dir() => bail!(
            "--samples {}: a remote evaluator takes a JSONL file, not a directory\nhint: pack the samples into one .jsonl file ({{task_id, solution}} per line)",
            p.display()
        ),
        (Some(p), _) => bail!(
            "--samples {}: not a .jsonl file\nhint: pass the samples JSONL file to upload",
            p.display()
        ),
        (None, false) => bail!("--samples FILE.jsonl is required with a remote --execution\nhint: generate first (`bcb generate ...`), then evaluate its file"),
    };
    Ok(RemoteRequest {
        samples,
        split: args.split.as_str().to_string(),
        subset: args.dataset.subset.as_str().to_string(),
        pass_k: args.pass_k.clone(),
        parallel: args.parallel,
        min_time_limit: args.min_time_limit,
        max_as_limit: args.max_as_limit,
        max_data_limit: args.max_data_limit,
        max_stack_limit: args.max_stack_limit,
        calibrated: args.calibrated && !args.no_calibrated,
        check_gt_only: args.check_gt_only,
        no_gt: args.no_gt,
        task_ids: bcb_dataset::parse_task_ids(&args.ids),
    })
}

/// Writes the two files through the same sinks a local run uses, then the summary.
fn write_files(
    args: &Args,
    req: &RemoteRequest,
    out: RemoteResult,
    results_path: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let title = format!(
        "BigCodeBench-{} ({})",
        capitalize(&req.split),
        capitalize(&req.subset)
    );
    let p = &out.pass_at_k;
    let mut summary = vec![title];
    if req.no_gt {
        summary.push("Groundtruth is not checked".into());
    } else {
        summary.push(format!("Groundtruth pass rate: {:.3}", p.gt_pass_rate));
        if p.gt_pass_rate <= 0.99 {
            summary.push("Please be cautious!".into());
        }
        if !p.failed_tasks.is_empty() {
            summary.push(format!(
                "Failed tasks ({}): {}",
                p.failed_tasks.len(),
                p.failed_tasks.join(", ")
            ));
        }
    }
    let (Some(results), Some(samples), Some(results_path)) =
        (out.results, &req.samples, results_path)
    else {
        println!("{}", summary.join("\n"));
        return Ok(ExitCode::SUCCESS);
    };
    for (k, v) in &p.values {
        summary.push(format!("pass@{k}:\t{v:.3}"));
    }
    let save_pass_rate = args.save_pass_rate && !args.no_save_pass_rate;
    let report = RunReport {
        samples_path: samples.clone(),
        pass_at_k_path: pass_at_k_path(&results_path),
        results_path,
        results,
        pass_at_k: out.pass_at_k,
        executed: 0,
        resumed: 0,
        loaded_existing: false,
        shard: None,
    };
    let event = Event::Finished(&report);
    EvalResultsFile::new(args.force).handle(&event)?;
    summary.push(format!("results: {}", report.results_path.display()));
    if save_pass_rate {
        PassAtKFile.handle(&event)?;
        summary.push(format!("pass@k:  {}", report.pass_at_k_path.display()));
    }
    println!("{}", summary.join("\n"));
    Ok(ExitCode::SUCCESS)
}

/// An infrastructure failure, with what to do next.
fn exec_error(e: bcb_execute::ExecError) -> anyhow::Error {
    match e.hint() {
        Some(hint) => anyhow::anyhow!("{e}\nhint: {hint}"),
        None => anyhow::anyhow!("{e}"),
    }
    .context("remote evaluation failed (nothing was written; no verdict was recorded)")
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Progress on stderr: connection, upload, then a waiting line refreshed in place on a
/// terminal (every heartbeat) or written every 30 s in logs.
struct Reporter {
    quiet: bool,
    tty: bool,
    last_line: Option<Instant>,
}

impl Reporter {
    fn new(quiet: bool) -> Self {
        Reporter {
            quiet,
            tty: std::io::stderr().is_terminal(),
            last_line: None,
        }
    }

    fn show(&mut self, p: Progress) {
        let mut err = std::io::stderr();
        // Retries and resubmissions are always told, even with --quiet.
        let line = match p {
            Progress::Retrying { why, delay } => {
                format!("remote: {why}; retrying in {:.0?}", delay)
            }
            Progress::Resubmitted { why } => {
                format!("remote: the job was lost ({why}); resubmitting it once")
            }
            _ if self.quiet => return,
            Progress::Connected { description } => format!("remote: {description}"),
            Progress::Uploaded { bytes } => {
                format!("remote: uploaded the samples ({bytes} bytes); waiting for the result")
            }
            Progress::Output { line } => line,
            Progress::Waiting {
                elapsed,
                heartbeats,
                status,
            } => {
                let text = format!(
                    "remote: {status}, {} elapsed, {heartbeats} heartbeats",
                    clock(elapsed)
                );
                if self.tty {
                    let _ = write!(err, "\r\x1b[2K{text}");
                    let _ = err.flush();
                    self.last_line = Some(Instant::now());
                    return;
                }
                let due = self
                    .last_line
                    .is_none_or(|t| t.elapsed() >= Duration::from_secs(30));
                if !due {
                    return;
                }
                self.last_line = Some(Instant::now());
                text
            }
        };
        if self.tty && self.last_line.is_some() {
            let _ = write!(err, "\r\x1b[2K");
        }
        let _ = writeln!(err, "{line}");
    }

    fn done(&mut self) {
        if self.tty && self.last_line.is_some() && !self.quiet {
            let _ = writeln!(std::io::stderr());
        }
    }
}

fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}
