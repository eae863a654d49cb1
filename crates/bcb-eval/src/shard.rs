//! Sharded runs: one shard runs the ground truth and the samples of its share of the tasks
//! and keeps everything in its own journal, whose header names the plan; `merge` joins the
//! journals of all shards into exactly what one run would have produced, refusing (naming the
//! file) a missing, duplicated or foreign shard.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use bcb_dataset::Dataset;
use bcb_execute::{JobId, Outcome, Program};
use sha2::Digest;

use crate::ground_truth::GroundTruth;
use crate::journal::{read_header, read_journal, shard_journal_path, JournalHeader, PlanInfo};
use crate::plan::{shard_tasks, Samples, Settings, Shard};

/// What one shard runs and where it keeps it.
#[derive(Debug, Clone)]
pub struct ShardPlan {
    pub shard: Shard,
    pub tasks: HashSet<String>,
    pub journal: PathBuf,
    pub header: JournalHeader,
}

/// The plan a set of shards shares.
pub fn plan_info(dataset: &Dataset, samples: &Samples, settings: &Settings) -> PlanInfo {
    PlanInfo {
        version: dataset.version.clone(),
        subset: dataset.subset.as_str().to_string(),
        dataset: dataset.md5.clone(),
        samples: samples.digest(),
        split: settings.split.as_str().to_string(),
        calibrated: settings.calibrated,
        settings: settings.verdict_key(),
    }
}

fn plan_key(plan: &PlanInfo, count: usize) -> String {
    let mut h = sha2::Sha256::new();
    h.update(serde_json::to_vec(plan).expect("plain data serializes"));
    h.update(count.to_string().as_bytes());
    hex::encode(&h.finalize()[..16])
}

impl ShardPlan {
    pub fn new(dataset: &Dataset, samples: &Samples, settings: &Settings, shard: Shard) -> Self {
        let plan = plan_info(dataset, samples, settings);
        let mut header = JournalHeader::new(&plan_key(&plan, shard.count));
        header.plan = Some(plan);
        header.shard = Some(shard.tag());
        ShardPlan {
            shard,
            tasks: shard_tasks(dataset, Some(samples), shard),
            journal: shard_journal_path(
                &bcb_samples::eval_results_path(&samples.path),
                shard.tag(),
            ),
            header,
        }
    }
}

/// Everything the shards of one plan produced.
pub struct Merged {
    pub plan: PlanInfo,
    pub ground_truth: GroundTruth,
    pub outcomes: HashMap<JobId, Outcome>,
    pub shards: Vec<PathBuf>,
}

/// The shard journals next to `samples`' results file (`*.shard-I-of-N.jsonl`).
pub fn find_shards(samples: &Path) -> Vec<PathBuf> {
    let results = bcb_samples::eval_results_path(samples);
    let (Some(dir), Some(name)) = (results.parent(), results.file_name()) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{}.shard-", name.to_string_lossy());
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        n.starts_with(&prefix) && n.ends_with(".jsonl")
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// Joins shard journals made for `samples` on `dataset`. Refuses, naming the file, a shard
/// made for another plan (dataset, samples or settings), a duplicated index, a missing index,
/// or a shard that does not hold every job of its tasks.
pub fn merge(dataset: &Dataset, samples: &Samples, paths: &[PathBuf]) -> anyhow::Result<Merged> {
    if paths.is_empty() {
        bail!(
            "no shard journals found for {} (expected {}.shard-I-of-N.jsonl)\nhint: run `bcb evaluate --shard I/N` for every I first, into the same directory",
            samples.path.display(),
            bcb_samples::eval_results_path(&samples.path).display()
        );
    }
    let mut headers: Vec<(PathBuf, JournalHeader)> = Vec::new();
    for p in paths {
        let h = read_header(p).with_context(|| {
            format!("{}: not a bcb shard journal (no header line)", p.display())
        })?;
        if h.shard.is_none() || h.plan.is_none() {
            bail!(
                "{}: not a shard journal (no shard or plan in its header)",
                p.display()
            );
        }
        headers.push((p.clone(), h));
    }
    let (first_path, first) = &headers[0];
    let plan = first.plan.clone().expect("checked above");
    let count = first.shard.expect("checked above").count;
    if plan.dataset != dataset.md5 || plan.version != dataset.version {
        bail!(
            "{}: made with dataset {} {} (md5 {}), not {} {} (md5 {})\nhint: pass the same --version/--subset/--dataset as the shards",
            first_path.display(), plan.subset, plan.version, plan.dataset, dataset.subset, dataset.version, dataset.md5
        );
    }
    if plan.samples != samples.digest() {
        bail!(
            "{}: made from other samples than {}",
            first_path.display(),
            samples.path.display()
        );
    }
    let mut seen: HashMap<usize, &Path> = HashMap::new();
    for (p, h) in &headers {
        let tag = h.shard.expect("checked above");
        if h.plan.as_ref() != Some(&plan) || tag.count != count || h.key != first.key {
            let differs = h
                .plan
                .as_ref()
                .map(|other| plan_differences(&plan, other))
                .unwrap_or_default();
            let differs = if tag.count != count {
                format!("{count} shards vs {}", tag.count)
            } else {
                differs
            };
            bail!(
                "{}: made with other settings than {} ({differs})\nhint: re-run that shard with the same flags",
                p.display(), first_path.display()
            );
        }
        if let Some(other) = seen.insert(tag.index, p) {
            bail!(
                "{} and {}: both are shard {}/{count}",
                other.display(),
                p.display(),
                tag.index
            );
        }
    }
    let missing: Vec<String> = (1..=count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        bail!(
            "shard(s) {} of {} are missing\nhint: run `bcb evaluate --shard I/{count}` for them, then merge again",
            missing.join(", "),
            samples.path.display()
        );
    }
    let mut ground_truth = GroundTruth::none();
    let mut outcomes = HashMap::new();
    for (p, h) in &headers {
        let tag = h.shard.expect("checked above");
        let tasks = shard_tasks(
            dataset,
            Some(samples),
            Shard {
                index: tag.index - 1,
                count,
            },
        );
        for r in read_journal(p, &h.key) {
            match r.id.program {
                Program::GroundTruth => ground_truth.insert(&r.id.task_id, r.outcome),
                Program::Sample(_) => {
                    outcomes.insert(r.id, r.outcome);
                }
            }
        }
        let unfinished = samples
            .programs
            .iter()
            .filter(|s| tasks.contains(&s.id.task_id) && !outcomes.contains_key(&s.id))
            .count();
        if unfinished > 0 {
            bail!(
                "{}: shard {}/{count} is incomplete ({unfinished} sample(s) without a verdict)\nhint: run `bcb evaluate --shard {}/{count}` again; it resumes",
                p.display(), tag.index, tag.index
            );
        }
    }
    Ok(Merged {
        plan,
        ground_truth,
        outcomes,
        shards: paths.to_vec(),
    })
}

/// `field: a vs b` for each field two plans disagree on.
fn plan_differences(a: &PlanInfo, b: &PlanInfo) -> String {
    let fields = [
        ("version", a.version.clone(), b.version.clone()),
        ("subset", a.subset.clone(), b.subset.clone()),
        ("dataset", a.dataset.clone(), b.dataset.clone()),
        ("samples", a.samples.clone(), b.samples.clone()),
        ("split", a.split.clone(), b.split.clone()),
        (
            "calibrated",
            a.calibrated.to_string(),
            b.calibrated.to_string(),
        ),
        ("settings", a.settings.clone(), b.settings.clone()),
    ];
    fields
        .into_iter()
        .filter(|(_, x, y)| x != y)
        .map(|(name, x, y)| format!("{name}: `{x}` vs `{y}`"))
        .collect::<Vec<_>>()
        .join("; ")
}
