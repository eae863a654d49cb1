//! `--samples` as files, and the split and subset their names give.

use std::path::PathBuf;

use anyhow::{bail, Context};
use bcb_dataset::{Split, Subset};
use bcb_eval::Samples;

use super::evaluate_flags::Args;

/// `(subset, split)` named by an upstream samples file name (`…--bigcodebench-hard-instruct--…`).
fn labels_from_name(path: &std::path::Path) -> Option<(Subset, Split)> {
    let (subset, split) = bcb_samples::labels(path)?;
    Some((subset, split?))
}

pub(super) fn expand_samples(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let entries: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        let task_dirs = entries.iter().any(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("BigCodeBench_"))
        });
        let mut files: Vec<PathBuf> = entries
            .into_iter()
            .filter(|p| p.is_file() && bcb_samples::is_samples_file_name(p))
            .collect();
        if task_dirs || files.is_empty() {
            out.push(path.clone());
            continue;
        }
        files.sort();
        out.extend(files);
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = out
        .iter()
        .find(|p| !seen.insert(p.canonicalize().unwrap_or((*p).clone())))
    {
        bail!(
            "--samples: {} is given twice\nhint: name each samples file once",
            dup.display()
        );
    }
    Ok(out)
}

impl Args {
    /// The dataset, narrowed to `--ids` when given.
    pub(super) fn load_dataset(&self) -> anyhow::Result<bcb_dataset::Dataset> {
        let mut ds = self.dataset.spec().load()?;
        let ids = bcb_dataset::parse_task_ids(&self.ids);
        if !ids.is_empty() {
            ds.retain_ids(&ids)?;
        }
        Ok(ds)
    }

    /// The samples to evaluate: `--samples` (each file), or generated first with `--model`
    /// (as the original does, for the selected tasks only); checked before anything runs.
    pub(super) fn samples(
        &self,
        ds: &bcb_dataset::Dataset,
        calibrated: bool,
    ) -> anyhow::Result<Vec<Samples>> {
        if self.check_gt_only {
            return Ok(Vec::new());
        }
        let paths = match (self.samples.is_empty(), &self.generation.model) {
            (false, _) => self.samples.clone(),
            (true, Some(_)) => {
                let opts = self.generation.options(self.split, ds.subset)?;
                let reporter = self.generation.reporter(self.progress_interval);
                let path = bcb_generate::generate_samples_with(&opts, ds, reporter)?;
                eprintln!("samples: {}", path.display());
                vec![path]
            }
            // A shard without samples checks its share of the ground truth (a cluster job).
            (true, None) if self.shard.is_some() => return Ok(Vec::new()),
            (true, None) => bail!("--samples is required (or --model to generate them first, or --check-gt-only to check the ground truth)"),
        };
        paths
            .iter()
            .map(|path| {
                if path.is_file() && !path.to_string_lossy().ends_with(".jsonl") {
                    bail!(
                        "samples file {} must end in .jsonl (or be a directory)",
                        path.display()
                    )
                }
                Samples::read(ds, path, calibrated)
            })
            .collect()
    }

    /// No silent mislabelling: split and subset come from the samples files' names when they
    /// follow the original's naming; a typed flag that contradicts a name is an error, and so
    /// are files named for different splits or subsets (one run has one dataset and split).
    pub(super) fn reconcile_labels(&mut self) -> anyhow::Result<()> {
        if self.samples.is_empty() {
            return Ok(());
        }
        let mut named: Option<(&std::path::Path, Subset, Split)> = None;
        for path in &self.samples {
            let Some((subset, split)) = labels_from_name(path) else {
                // The original requires both; guessing would write a wrong `split` silently.
                let missing: Vec<&str> = [
                    ("--split", self.split_typed),
                    ("--subset", self.subset_typed),
                ]
                .into_iter()
                .filter_map(|(flag, typed)| (!typed).then_some(flag))
                .collect();
                if !missing.is_empty() {
                    bail!(
                        "{}: the name does not say which split and subset the samples answer, and {} {} not given\nhint: add --split complete|instruct --subset full|hard, or name the file as the original does (`…--bigcodebench-[hard-]{{complete|instruct}}--…`)",
                        path.display(),
                        missing.join(" and "),
                        if missing.len() == 1 { "was" } else { "were" }
                    );
                }
                continue;
            };
            if let Some((first, s0, p0)) = named {
                if (s0, p0) != (subset, split) {
                    bail!(
                        "{} is named for {subset}-{} but {} for {s0}-{}: one run evaluates one subset and split\nhint: evaluate them in separate runs",
                        path.display(),
                        split.as_str(),
                        first.display(),
                        p0.as_str()
                    );
                }
            } else {
                named = Some((path, subset, split));
            }
        }
        let Some((path, subset, split)) = named else {
            return Ok(());
        };
        if self.split_typed && self.split != split {
            bail!("{} is named for split `{}` but --split {} was given\nhint: drop --split (the name decides) or rename the file", path.display(), split.as_str(), self.split.as_str());
        }
        if self.subset_typed && self.dataset.subset != subset {
            bail!("{} is named for subset `{subset}` but --subset {} was given\nhint: drop --subset (the name decides) or rename the file", path.display(), self.dataset.subset);
        }
        self.split = split;
        self.dataset.subset = subset;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::evaluate::Args;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn args(samples: &str, split: Option<&str>, subset: Option<&str>) -> Args {
        let mut argv = vec!["bcb", "--samples", samples];
        argv.extend(split.iter().flat_map(|s| ["--split", s]));
        argv.extend(subset.iter().flat_map(|s| ["--subset", s]));
        let mut a = Cli::parse_from(argv).args;
        a.split_typed = split.is_some();
        a.subset_typed = subset.is_some();
        a
    }

    #[test]
    fn a_directory_of_samples_files_is_those_files_and_the_upstream_layout_is_itself() {
        let dir = tempfile::tempdir().unwrap();
        let sweeps = dir.path().join("sweeps");
        std::fs::create_dir(&sweeps).unwrap();
        for name in [
            "b.jsonl",
            "a.jsonl",
            "a.jsonl.gz",
            "a_eval_results.json",
            "b_eval_results.json.partial.jsonl",
            "b_eval_results.json.shard-1-of-2.jsonl",
            "c.jsonl.partial.jsonl",
            "notes.txt",
        ] {
            std::fs::write(sweeps.join(name), "").unwrap();
        }
        assert_eq!(
            expand_samples(std::slice::from_ref(&sweeps)).unwrap(),
            [sweeps.join("a.jsonl"), sweeps.join("b.jsonl")]
        );
        let upstream = dir.path().join("upstream");
        std::fs::create_dir_all(upstream.join("BigCodeBench_0")).unwrap();
        std::fs::write(upstream.join("stray.jsonl"), "").unwrap();
        let given = [upstream];
        assert_eq!(expand_samples(&given).unwrap(), given);
        let twice = [sweeps.join("b.jsonl"), sweeps.clone()];
        let err = expand_samples(&twice).unwrap_err().to_string();
        assert!(err.contains("is given twice"), "{err}");
    }

    #[test]
    fn split_and_subset_come_from_an_upstream_file_name() {
        let name = "r/m--main--bigcodebench-hard-instruct--vllm-0-1-sanitized_calibrated.jsonl";
        let mut a = args(name, None, None);
        a.reconcile_labels().unwrap();
        assert_eq!((a.split, a.dataset.subset), (Split::Instruct, Subset::Hard));
        let mut a = args("m--bigcodebench-hard-complete.jsonl", None, None);
        a.reconcile_labels().unwrap();
        assert_eq!((a.split, a.dataset.subset), (Split::Complete, Subset::Hard));
        let mut a = args(name, Some("instruct"), Some("hard"));
        a.reconcile_labels().unwrap();
        let err = args(name, Some("complete"), None)
            .reconcile_labels()
            .unwrap_err();
        assert!(
            err.to_string().contains("named for split `instruct`"),
            "{err}"
        );
        let err = args(name, None, Some("full"))
            .reconcile_labels()
            .unwrap_err();
        assert!(err.to_string().contains("named for subset `hard`"), "{err}");
        // Names without labels need both flags, as the original does.
        let mut a = args("x.jsonl", Some("instruct"), Some("hard"));
        a.reconcile_labels().unwrap();
        assert_eq!((a.split, a.dataset.subset), (Split::Instruct, Subset::Hard));
        let err = args("x.jsonl", Some("instruct"), None)
            .reconcile_labels()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--subset was not given") && err.contains("hint:"),
            "{err}"
        );
        let err = args("x.jsonl", None, None).reconcile_labels().unwrap_err();
        assert!(
            err.to_string()
                .contains("--split and --subset were not given"),
            "{err}"
        );
    }
}
