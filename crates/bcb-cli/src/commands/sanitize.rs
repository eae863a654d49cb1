//! `bcb sanitize`: the original's `bigcodebench.sanitize` with the same output files and bytes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use bcb_samples::{Sample, SampleBody};
use bcb_sanitize::{AnswerText, Options, PythonVersion};

use crate::common::DatasetArgs;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Output: X.jsonl -> X-sanitized.jsonl (X-sanitized-calibrated.jsonl with \
--calibrate), a directory D -> D-sanitized[-calibrated]/, each written like the original \
(only task_id and solution, Python's json.dumps formatting). Samples of tasks that are not in \
the dataset are dropped, as the original does."
)]
pub struct Args {
    /// Samples: a JSONL file (optionally .gz) or a directory `{task_id with _}/{k}.py`.
    #[arg(long)]
    pub samples: PathBuf,
    /// Overwrite the samples instead of writing a `-sanitized` copy.
    #[arg(long)]
    pub inplace: bool,
    /// Only this task (the output then holds only its samples, like the original).
    #[arg(long, value_name = "TASK_ID")]
    pub debug_task: Option<String>,
    /// Put the task's prompt in front of a body-only answer: "```python\n    " becomes
    /// "```python\n{complete_prompt}    " before sanitizing.
    #[arg(long)]
    pub calibrate: bool,
    /// Worker threads (the original's default is 32; capped at the number of CPUs).
    #[arg(long, default_value_t = 32)]
    pub parallel: usize,
    /// Whose `ast.parse` decides what is valid Python: 3.10, 3.11 (default) 3.12 or 3.13.
    #[arg(long, default_value = "3.11")]
    pub python_version: PythonVersion,
    /// Keep `<think>…</think>` blocks when extracting code. By default they are removed, by
    /// the same rule as `bcb generate` (the original removes nothing, so code inside a
    /// reasoning block could be picked as the answer).
    #[arg(long)]
    pub keep_think: bool,
    /// Kept for compatibility: removing `<think>` blocks is the default now.
    #[arg(long, hide = true)]
    pub strip_think: bool,
    /// Not in the original: also write `raw_solution` (the input's, else the unsanitized code).
    #[arg(long)]
    pub keep_raw_solution: bool,
    #[command(flatten)]
    pub dataset: DatasetArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // The samples first: a wrong path is reported before any dataset download.
    let samples_str = args.samples.to_string_lossy().to_string();
    let is_folder = args.samples.is_dir();
    let target = target_path(&args.samples, args.inplace, args.calibrate, is_folder)?;
    let target_str = target.to_string_lossy().to_string();
    let samples = bcb_samples::read_samples(&args.samples)?;
    let ds = args.dataset.spec().load()?;
    let opts = Options {
        python_version: args.python_version,
        strip_think: !args.keep_think,
    };

    // Work items keep input order; `None` = dropped (unknown task or other debug task).
    let ntotal = samples.len();
    let threads = args.parallel.clamp(
        1,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    let chunk = ntotal.div_ceil(threads).max(1);
    let results: Vec<Option<Done>> = std::thread::scope(|s| {
        let handles: Vec<_> = samples
            .chunks(chunk)
            .enumerate()
            .map(|(c, part)| {
                let (ds, opts, args) = (&ds, &opts, &args);
                s.spawn(move || {
                    part.iter()
                        .enumerate()
                        .map(|(k, smp)| process(smp, c * chunk + k, ds, opts, args))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("sanitize worker panicked"))
            .collect()
    });

    let mut out = std::io::stdout().lock();
    let mut kept = Vec::new();
    for (smp, done) in samples.iter().zip(results) {
        let Some(done) = done else { continue };
        if done.changed {
            let ident = identifier(smp, done.index, &samples_str);
            if is_folder {
                writeln!(
                    out,
                    "Sanitized: {ident} -> {}",
                    ident.replace(&samples_str, &target_str)
                )?;
            } else {
                writeln!(out, "Sanitized: {ident}")?;
            }
        }
        kept.push(done);
    }
    if is_folder {
        write_directory(&target, &kept)?;
    } else {
        write_jsonl(&target, &kept, args.keep_raw_solution)?;
    }
    let nsan = kept.len();
    if nsan > 0 {
        writeln!(out, "Sanitized {nsan} out of {ntotal} files.")?;
    } else {
        writeln!(out, "All files seems valid -- no files are sanitized.")?;
    }
    writeln!(out, "Check the sanitized files at {target_str}")?;
    Ok(ExitCode::SUCCESS)
}

struct Done {
    index: usize,
    task_id: String,
    solution: String,
    raw: String,
    changed: bool,
}

fn process(
    smp: &Sample,
    index: usize,
    ds: &bcb_dataset::Dataset,
    opts: &Options,
    args: &Args,
) -> Option<Done> {
    let task = ds.get(&smp.task_id)?;
    if args.debug_task.as_ref().is_some_and(|d| *d != smp.task_id) {
        return None;
    }
    let calibrated;
    let text = match &smp.body {
        SampleBody::Solution(s) if args.calibrate => {
            calibrated = s.replace(
                "```python\n    ",
                &format!("```python\n{}    ", task.complete_prompt),
            );
            AnswerText::Solution(&calibrated)
        }
        SampleBody::Solution(s) => AnswerText::Solution(s),
        SampleBody::Completion(c) => AnswerText::Completion(c),
    };
    let read = bcb_sanitize::read_answer(text, &task.complete_prompt, &task.entry_point, opts);
    Some(Done {
        index,
        task_id: smp.task_id.clone(),
        changed: read.code != read.source,
        solution: read.code,
        raw: smp.raw_solution.clone().unwrap_or(read.source),
    })
}

/// The original's `_identifier`: `"{task_id} (line {k} in {samples})"` with `k` counting
/// records (blank lines skipped), or the `.py` path for a directory.
fn identifier(smp: &Sample, index: usize, samples: &str) -> String {
    match smp.origin.line {
        Some(_) => format!("{} (line {} in {samples})", smp.task_id, index + 1),
        None => smp.origin.path.to_string_lossy().to_string(),
    }
}

/// Output path as the original names it: in the *file name*, every `.jsonl` becomes
/// `-sanitized.jsonl` (so `x.jsonl.gz` -> `x-sanitized.jsonl.gz`); a directory gets a suffix.
fn target_path(
    samples: &Path,
    inplace: bool,
    calibrate: bool,
    is_folder: bool,
) -> anyhow::Result<PathBuf> {
    if inplace {
        return Ok(samples.to_path_buf());
    }
    let name = samples
        .file_name()
        .with_context(|| format!("{}: not a file or directory name", samples.display()))?
        .to_string_lossy()
        .to_string();
    let Some(new_name) = bcb_samples::sanitized_name(&name, calibrate, is_folder) else {
        // The original would silently write over its input here.
        anyhow::bail!(
            "{}: the file name has no `.jsonl`, so the output would overwrite the input; \
             rename it or pass --inplace",
            samples.display()
        );
    };
    Ok(samples.with_file_name(new_name))
}

fn write_jsonl(target: &Path, rows: &[Done], keep_raw: bool) -> anyhow::Result<()> {
    // One `json.dumps` line per row, keys in the original's order.
    #[derive(serde::Serialize)]
    struct Row<'a> {
        task_id: &'a str,
        solution: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        raw_solution: Option<&'a str>,
    }
    let rows: Vec<Row> = rows
        .iter()
        .map(|r| Row {
            task_id: &r.task_id,
            solution: &r.solution,
            raw_solution: keep_raw.then_some(r.raw.as_str()),
        })
        .collect();
    bcb_samples::write_samples(target, &rows)
        .with_context(|| format!("cannot write {}", target.display()))
}

fn write_directory(target: &Path, rows: &[Done]) -> anyhow::Result<()> {
    let mut counters: std::collections::HashMap<String, usize> = Default::default();
    for r in rows {
        let task_dir = target.join(r.task_id.replace('/', "_"));
        std::fs::create_dir_all(&task_dir)
            .with_context(|| format!("cannot create {}", task_dir.display()))?;
        let k = counters.entry(r.task_id.replace('/', "_")).or_insert(0);
        let file = task_dir.join(format!("{k}.py"));
        std::fs::write(&file, &r.solution)
            .with_context(|| format!("cannot write {}", file.display()))?;
        *k += 1;
    }
    std::fs::create_dir_all(target).with_context(|| format!("cannot create {}", target.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names_like_the_original() {
        let t = |p: &str, cal| target_path(Path::new(p), false, cal, false).unwrap();
        assert_eq!(t("r/a.jsonl", false), Path::new("r/a-sanitized.jsonl"));
        assert_eq!(
            t("r/a.jsonl", true),
            Path::new("r/a-sanitized-calibrated.jsonl")
        );
        assert_eq!(t("a.jsonl.gz", false), Path::new("a-sanitized.jsonl.gz"));
        assert!(target_path(Path::new("a.json"), false, false, false).is_err());
        assert_eq!(
            target_path(Path::new("r/d"), false, true, true).unwrap(),
            Path::new("r/d-sanitized-calibrated")
        );
    }
}
