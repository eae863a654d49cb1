//! `bcb syncheck`: the original's `bigcodebench.syncheck` report (missing tasks, samples that
//! are empty or do not parse), with the line, column and message of every syntax error, and
//! with `--safety` the risky operations of every sample (`bcb_sanitize::safety`).

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use bcb_samples::SampleBody;
use bcb_sanitize::PythonVersion;

use crate::common::DatasetArgs;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Differences from the original: `--nsample_check N` flags tasks with \
FEWER than N samples (the original's test is inverted and flags tasks with more); every \
invalid sample is listed with line, column and message (what the original's --verbose \
traceback shows; --verbose is accepted); samples of tasks not in the dataset are reported \
instead of crashing. Exit status is 0 unless --fail-on-invalid is given and a sample is \
empty or invalid (status 1)."
)]
pub struct Args {
    /// Samples: a JSONL file (optionally .gz) or a directory `{task_id with _}/{k}.py`.
    #[arg(long)]
    pub samples: PathBuf,
    /// Expected samples per task: report tasks that have fewer.
    #[arg(long, value_name = "N")]
    pub nsample_check: Option<usize>,
    /// Whose `ast.parse` decides what is valid Python: 3.10, 3.11 (default), 3.12 or 3.13.
    #[arg(long, default_value = "3.11")]
    pub python_version: PythonVersion,
    /// Exit with status 1 when a sample is empty or not valid Python.
    #[arg(long)]
    pub fail_on_invalid: bool,
    /// Only these tasks: comma-separated ids (`BigCodeBench/1,BigCodeBench/2` or `1,2`).
    #[arg(long, value_name = "IDS")]
    pub ids: Option<String>,
    /// List every missing task (by default at most 20 are listed, then a count).
    #[arg(long)]
    pub list_missing: bool,
    /// Also report each sample's risky operations (shell, subprocess, network to other hosts,
    /// deletes, writes outside the cwd, environment and credential access, tamper-scan
    /// findings) with a count per rule. Information for reviewers: verdicts are not changed.
    #[arg(long)]
    pub safety: bool,
    /// `text` (the original's report) or `json` (with --safety: only the safety report, as JSON).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub dataset: DatasetArgs,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// Missing tasks listed one by one before the rest are only counted.
const MISSING_LISTED: usize = 20;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // The samples first: a wrong path is reported before any dataset download.
    let samples = bcb_samples::read_samples(&args.samples)?;
    let ds = args.dataset.spec().load()?;
    let wanted: Option<std::collections::HashSet<String>> = args
        .ids
        .as_deref()
        .map(|l| bcb_dataset::parse_task_ids(l).into_iter().collect());
    if let Some(w) = &wanted {
        let unknown: Vec<&String> = w.iter().filter(|id| !ds.contains(id)).collect();
        anyhow::ensure!(
            unknown.is_empty(),
            "--ids names tasks that are not in the {} {} dataset: {}",
            ds.subset,
            ds.version,
            unknown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let selected = |id: &str| wanted.as_ref().is_none_or(|w| w.contains(id));
    let samples_str = args.samples.to_string_lossy().to_string();
    anyhow::ensure!(
        args.format == Format::Text || args.safety,
        "--format json is the safety report's format\nhint: add --safety, or drop --format"
    );
    // As JSON, stdout carries the safety report only.
    let mut out: Box<dyn Write> = match args.format {
        Format::Text => Box::new(std::io::stdout().lock()),
        Format::Json => Box::new(std::io::sink()),
    };

    writeln!(out, "Dataset: BigCodeBench ({} {})", ds.subset, ds.version)?;
    // task_id -> [(identifier, code)] in input order.
    let mut by_task: HashMap<&str, Vec<(String, String)>> = HashMap::new();
    let mut unknown = 0usize;
    for (index, smp) in samples.iter().enumerate() {
        let ident = match smp.origin.line {
            Some(_) => format!("{} (line {} in {samples_str})", smp.task_id, index + 1),
            None => smp.origin.path.to_string_lossy().to_string(),
        };
        if !selected(&smp.task_id) {
            continue;
        }
        let Some(task) = ds.get(&smp.task_id) else {
            writeln!(
                out,
                " ⚠️ {ident}: task {} is not in the dataset",
                smp.task_id
            )?;
            unknown += 1;
            continue;
        };
        let code = match &smp.body {
            SampleBody::Solution(s) => s.clone(),
            // The original's syncheck joins without a newline (sanitize adds one).
            SampleBody::Completion(c) => format!("{}{}", task.complete_prompt, c),
        };
        by_task
            .entry(&task.task_id)
            .or_default()
            .push((ident, code));
    }

    writeln!(out, "==============================")?;
    writeln!(out, " ::: Checking completeness... ")?;
    writeln!(out, " ::::: All tasks complete?    ")?;
    let tasks: Vec<&bcb_dataset::Task> =
        ds.tasks().iter().filter(|t| selected(&t.task_id)).collect();
    let ntask = tasks.len();
    let mut ndone = 0;
    let mut nmissing = 0;
    for task in &tasks {
        let Some(list) = by_task.get(task.task_id.as_str()) else {
            nmissing += 1;
            if args.list_missing || nmissing <= MISSING_LISTED {
                writeln!(out, " ⚠️ {} is missing!", task.task_id)?;
            }
            continue;
        };
        match args.nsample_check {
            Some(n) if list.len() < n => writeln!(
                out,
                " ⚠️ {} only has {} samples! But {n} are expected.",
                task.task_id,
                list.len()
            )?,
            _ => ndone += 1,
        }
    }
    if nmissing > MISSING_LISTED && !args.list_missing {
        writeln!(
            out,
            " ⚠️ ... and {} more missing ({nmissing}/{ntask} tasks have no sample; --list-missing lists all, --ids checks only some)",
            nmissing - MISSING_LISTED
        )?;
    }
    if args.nsample_check.is_some() {
        if ndone != ntask {
            writeln!(out, " ::::: ⚠️ {}/{ntask} tasks incomplete!", ntask - ndone)?;
        } else {
            writeln!(out, " ::::: All {ntask} tasks complete!")?;
        }
    }

    writeln!(out, "==============================")?;
    writeln!(out, " ::: Checking compilation...  ")?;
    writeln!(out, " ::::: All code compilable?   ")?;
    let (mut ncode, mut nempty, mut ninvalid) = (0usize, 0usize, 0usize);
    for task in &tasks {
        let Some(list) = by_task.get(task.task_id.as_str()) else {
            continue;
        };
        for (ident, code) in list {
            ncode += 1;
            if bcb_sanitize::py_strip(code).is_empty() {
                writeln!(out, " ⚠️ {ident} is empty!")?;
                nempty += 1;
            } else if let Some(err) = bcb_sanitize::syntax_error(code, args.python_version) {
                writeln!(out, " ⚠️ {ident} is not compilable! {err}")?;
                ninvalid += 1;
            }
        }
    }
    let nwrong = nempty + ninvalid;
    if nwrong != 0 {
        writeln!(
            out,
            " ::::: ⚠️ {nwrong}/{ncode} code are not compilable! ({nempty} empty, {ninvalid} syntax errors, Python {} grammar)",
            args.python_version
        )?;
    } else {
        writeln!(out, " ::::: All {ncode} code are compilable!")?;
    }
    if unknown > 0 {
        writeln!(
            out,
            " ::::: ⚠️ {unknown} samples name tasks that are not in the dataset"
        )?;
    }
    if args.safety {
        safety_report(&tasks, &by_task, args.format, &mut out)?;
    }
    Ok(if args.fail_on_invalid && nwrong > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Every selected sample's risky operations: one line per finding and a count per rule (text),
/// or the same as one JSON object on stdout.
fn safety_report(
    tasks: &[&bcb_dataset::Task],
    by_task: &HashMap<&str, Vec<(String, String)>>,
    format: Format,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    use bcb_sanitize::safety;
    let mut per_rule: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    let (mut nsamples, mut nflagged) = (0usize, 0usize);
    let mut findings = Vec::new();
    writeln!(out, "==============================")?;
    writeln!(
        out,
        " ::: Checking safety (information only; verdicts are not changed)"
    )?;
    for task in tasks {
        let Some(list) = by_task.get(task.task_id.as_str()) else {
            continue;
        };
        let libs = task.lib_names();
        for (index, (ident, code)) in list.iter().enumerate() {
            nsamples += 1;
            let found = safety::scan_for_task(code, &libs);
            nflagged += usize::from(!found.is_empty());
            for f in found {
                *per_rule.entry(f.rule).or_default() += 1;
                writeln!(
                    out,
                    " ⚠️ {ident} sample {index}: line {}: {}: {}",
                    f.line, f.rule, f.text
                )?;
                findings.push(serde_json::json!({
                    "task_id": task.task_id, "sample": index, "line": f.line,
                    "rule": f.rule, "snippet": f.text,
                }));
            }
        }
    }
    let summary: Vec<String> = per_rule.iter().map(|(r, n)| format!("{r} {n}")).collect();
    if nflagged == 0 {
        writeln!(out, " ::::: No risky operation in {nsamples} samples")?;
    } else {
        writeln!(
            out,
            " ::::: {nflagged}/{nsamples} samples with risky operations; findings per rule: {}",
            summary.join(", ")
        )?;
    }
    if format == Format::Json {
        let report = serde_json::json!({
            "samples": nsamples,
            "flagged_samples": nflagged,
            "per_rule": per_rule,
            "findings": findings,
        });
        let mut stdout = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut stdout, &report)?;
        writeln!(stdout)?;
    }
    Ok(())
}
