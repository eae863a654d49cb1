//! `bcb inspect`: lay out every task with a non-passing sample for reading — the original's
//! files (ground_truth.py, test_case.py, completion_{i}.py, complete_{i}_execution_trace.txt)
//! plus a `README.md` index listing each task's verdicts and first error, then a terminal
//! summary by failure class. Defaults as the original's: `--subset hard`, `--split` required.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use bcb_dataset::Split;
use bcb_eval::{EvalResults, SampleResult};
use bcb_report::results::RunResults;
use bcb_report::summary::{task_infos, Report, ReportOptions};
use serde_json::Value;

use crate::common::DatasetArgs;

#[derive(clap::Args, Debug)]
// The original inspects the hard subset unless told otherwise.
#[command(mut_arg("subset", |a| a.default_value("hard")))]
pub struct Args {
    /// An `*_eval_results.json` (plain or .gz) written by `bcb evaluate` or the original harness.
    #[arg(long)]
    pub eval_results: PathBuf,
    /// Split the samples answered (picks the prompt written to ground_truth.py).
    #[arg(long)]
    pub split: Split,
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Folder to write into; results go to `{save_path}/{results file name without .json}/`.
    #[arg(long, default_value = "inspect")]
    pub save_path: PathBuf,
    /// Remove that folder first.
    #[arg(long)]
    pub in_place: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let results = load_results(&args.eval_results)?;
    let ds = args.dataset.spec().load()?;
    if let Some(warning) = subset_mismatch(&args, &results, &ds) {
        eprintln!("warning: {warning}");
    }
    let name = args
        .eval_results
        .file_name()
        .map(|s| s.to_string_lossy().replace(".gz", "").replace(".json", ""))
        .unwrap_or_else(|| "eval_results".into());
    let root = args.save_path.join(name);
    if args.in_place && root.exists() {
        std::fs::remove_dir_all(&root)
            .with_context(|| format!("cannot remove {}", root.display()))?;
    }
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;

    let mut index = String::new();
    writeln!(
        index,
        "# Failing tasks in {}\n",
        args.eval_results.display()
    )?;
    writeln!(index, "| task | passed | statuses | first error |")?;
    writeln!(index, "|---|---|---|---|")?;
    let (mut tasks_written, mut total_tasks, mut passed_tasks) = (0, 0, 0);
    for (task_id, list) in &results.eval {
        let Some(task) = ds.get(task_id) else {
            continue;
        };
        total_tasks += 1;
        let status = |r: &SampleResult| r.status.as_str().to_string();
        if list.iter().all(|r| r.status.is_pass()) {
            passed_tasks += 1;
            continue;
        }
        let dir = root.join(task_id);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        write(
            &dir.join("ground_truth.py"),
            &format!("{}\n\n{}", task.prompt(args.split), task.canonical_solution),
        )?;
        write(&dir.join("test_case.py"), &task.test)?;
        let mut first_error = String::new();
        for (i, r) in list.iter().enumerate() {
            write(&dir.join(format!("completion_{i}.py")), &r.solution)?;
            let mut trace = String::new();
            {
                for (test, tb) in r.details.iter() {
                    trace.push_str(&format!("Test Case: {test}\n\n{tb}{}\n", "=".repeat(50)));
                    if first_error.is_empty() {
                        let last = tb
                            .lines()
                            .rev()
                            .find(|l| !l.trim().is_empty())
                            .unwrap_or("")
                            .trim();
                        first_error = format!("{test}: {last}");
                    }
                }
            }
            write(
                &dir.join(format!("complete_{i}_execution_trace.txt")),
                &trace,
            )?;
        }
        let passed = list.iter().filter(|r| r.status.is_pass()).count();
        let statuses: Vec<String> = list.iter().map(status).collect();
        let first_error: String = first_error.replace('|', "\\|").chars().take(140).collect();
        writeln!(
            index,
            "| [{task_id}]({task_id}/) | {passed}/{} | {} | {first_error} |",
            list.len(),
            statuses.join(" "),
        )?;
        tasks_written += 1;
    }
    writeln!(index, "\n{passed_tasks} of {total_tasks} tasks passed every sample; {tasks_written} listed above.")?;
    write(&root.join("README.md"), &index)?;
    println!(
        "{tasks_written} tasks with failures written to {}",
        root.display()
    );
    // The summary by failure class, over the tasks of the chosen subset.
    let mut run = RunResults::load(&args.eval_results)?;
    run.tasks.retain(|(t, _)| ds.contains(t));
    let report = Report::build(
        std::slice::from_ref(&run),
        &task_infos(&ds, args.split),
        &ReportOptions {
            ks: vec![1],
            ..ReportOptions::default()
        },
    );
    print!("{}", bcb_report::tables::render_class_summary(&report));
    Ok(ExitCode::SUCCESS)
}

/// Plain or `.gz` (as in ../shared/real-samples), by the one reader.
fn load_results(path: &Path) -> anyhow::Result<EvalResults> {
    EvalResults::load(path)
}

/// The original silently inspects only the tasks of `--subset`; say so when the results file
/// was made on another subset (by its pass@k file, or by tasks outside the subset).
fn subset_mismatch(
    args: &Args,
    results: &EvalResults,
    ds: &bcb_dataset::Dataset,
) -> Option<String> {
    let chosen = args.dataset.subset.as_str();
    let outside = results.eval.keys().filter(|t| !ds.contains(t)).count();
    let recorded = bcb_report::results::pass_at_k_path(&args.eval_results)
        .filter(|p| p.exists())
        .and_then(|p| bcb_report::results::read_json(&p).ok())
        .and_then(|v| v.get("subset").and_then(Value::as_str).map(str::to_string));
    match recorded {
        Some(r) if r != chosen => Some(format!(
            "{} was evaluated on the {r} subset but --subset is {chosen}; {outside} of its {} tasks are skipped (pass --subset {r})",
            args.eval_results.display(),
            results.eval.len()
        )),
        _ if outside > 0 => Some(format!(
            "{outside} of the {} tasks in {} are not in the {chosen} subset and are skipped (pass --subset full to inspect them)",
            results.eval.len(),
            args.eval_results.display()
        )),
        _ => None,
    }
}

fn write(path: &Path, content: &str) -> anyhow::Result<()> {
    std::fs::write(path, content).with_context(|| format!("cannot write {}", path.display()))
}
