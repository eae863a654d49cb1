//! Sharded runs: one shard runs the ground truth and the samples of its share of the tasks
//! and keeps everything in its own journal, whose header names the plan; `merge` joins the
//! journals of all shards into exactly what one run would have produced, refusing (naming the
//! file) a missing, duplicated or foreign shard. Without samples a shard checks its share of
//! the ground truth; [`merge_ground_truth`] joins those into the ground-truth cache one
//! unsharded `--check-gt-only` run would have filled.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use bcb_dataset::Dataset;
use bcb_execute::{JobId, Outcome, Program};
use sha2::Digest;

use crate::ground_truth::{GroundTruth, GtCache};
use crate::journal::{
    read_header, read_journal, shard_journal_path, JournalHeader, JournalRecord, PlanInfo,
};
pub use crate::plan::shard_tasks;
use crate::plan::{Samples, Shard};
use crate::settings::Settings;

/// What one shard runs and where it keeps it.
#[derive(Debug, Clone)]
pub struct ShardPlan {
    pub shard: Shard,
    pub tasks: HashSet<String>,
    pub journal: PathBuf,
    pub header: JournalHeader,
}

/// `PlanInfo::samples` of a ground-truth-only shard.
pub const NO_SAMPLES: &str = "";

/// The plan a set of shards shares.
pub fn plan_info(dataset: &Dataset, samples: Option<&Samples>, settings: &Settings) -> PlanInfo {
    PlanInfo {
        version: dataset.version.clone(),
        subset: dataset.subset,
        dataset: dataset.md5.clone(),
        samples: samples.map_or(NO_SAMPLES.to_string(), Samples::digest),
        split: settings.split,
        calibrated: settings.calibrated,
        settings: settings.execution_key(),
        tamper: settings.tamper.as_str().to_string(),
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
        let journal =
            shard_journal_path(&bcb_samples::eval_results_path(&samples.path), shard.tag());
        Self::build(dataset, Some(samples), settings, shard, journal)
    }

    /// A shard of the ground truth alone (`--shard I/N` without samples): its journal sits
    /// next to the ground-truth cache it will be merged into (`{key}.jsonl.shard-I-of-N.jsonl`),
    /// so on a cluster every shard and the merge share one `BCB_CACHE_DIR`.
    pub fn ground_truth(
        dataset: &Dataset,
        settings: &Settings,
        shard: Shard,
        cache: &GtCache,
    ) -> Self {
        let journal = shard_journal_path(&cache.path, shard.tag());
        Self::build(dataset, None, settings, shard, journal)
    }

    fn build(
        dataset: &Dataset,
        samples: Option<&Samples>,
        settings: &Settings,
        shard: Shard,
        journal: PathBuf,
    ) -> Self {
        let plan = plan_info(dataset, samples, settings);
        let mut header = JournalHeader::new(&plan_key(&plan, shard.count));
        header.plan = Some(plan);
        header.shard = Some(shard.tag());
        ShardPlan {
            shard,
            tasks: shard_tasks(dataset, samples, shard),
            journal,
            header,
        }
    }

    /// No samples: this shard checks only its share of the ground truth.
    pub fn is_ground_truth_only(&self) -> bool {
        self.header
            .plan
            .as_ref()
            .is_some_and(|p| p.samples == NO_SAMPLES)
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
    shards_of(&bcb_samples::eval_results_path(samples))
}

/// The journals `{base}.shard-*.jsonl` beside `base`, sorted.
fn shards_of(results: &Path) -> Vec<PathBuf> {
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
    let headers = check_set(
        dataset,
        paths,
        |first_path, plan| {
            if plan.samples != samples.digest() {
                bail!(
                    "{}: made from other samples than {}{}",
                    first_path.display(),
                    samples.path.display(),
                    if plan.samples == NO_SAMPLES {
                        " (it is a ground-truth-only shard)\nhint: merge it with `bcb merge --check-gt-only`"
                    } else {
                        ""
                    }
                );
            }
            Ok(())
        },
        &samples.path.display().to_string(),
    )?;
    let (plan, count) = {
        let h = &headers[0].1;
        (
            h.plan.clone().expect("checked"),
            h.shard.expect("checked").count,
        )
    };
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

/// Reads the headers of `paths` and checks that they form one complete set of shards of one
/// plan on `dataset` (`check_plan` checks what the caller needs beyond that); errors name the
/// file. `what` names the set in the "missing" error.
fn check_set(
    dataset: &Dataset,
    paths: &[PathBuf],
    check_plan: impl Fn(&Path, &PlanInfo) -> anyhow::Result<()>,
    what: &str,
) -> anyhow::Result<Vec<(PathBuf, JournalHeader)>> {
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
    check_plan(first_path, &plan)?;
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
            what
        );
    }
    Ok(headers)
}

/// A merged ground truth: the records to store and the plan they were made under.
#[derive(Debug)]
pub struct MergedGroundTruth {
    pub plan: PlanInfo,
    pub records: Vec<JournalRecord>,
    pub shards: Vec<PathBuf>,
}

impl MergedGroundTruth {
    pub fn ground_truth(&self) -> GroundTruth {
        GroundTruth::from_records(self.records.iter().cloned())
    }
}

/// The ground-truth-only shard journals in `cache_dir` (made for the dataset of content
/// digest `dataset_md5`, if given), of one plan. Several plans there (other settings, another
/// dataset or Python env) are refused, listing them.
pub fn find_ground_truth_shards(
    cache_dir: &Path,
    dataset_md5: Option<&str>,
) -> anyhow::Result<Vec<PathBuf>> {
    let dir = cache_dir.join("ground-truth");
    let mut by_key: HashMap<String, Vec<PathBuf>> = HashMap::new();
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if !(name.contains(".jsonl.shard-") && name.ends_with(".jsonl")) {
            continue;
        }
        let Some(h) = read_header(&path) else {
            continue;
        };
        if h.plan
            .as_ref()
            .is_some_and(|p| p.samples == NO_SAMPLES && dataset_md5.is_none_or(|m| p.dataset == m))
        {
            by_key.entry(h.key.clone()).or_default().push(path);
        }
    }
    let mut sets: Vec<Vec<PathBuf>> = by_key.into_values().collect();
    for set in &mut sets {
        set.sort();
    }
    match sets.len() {
        0 => bail!(
            "no ground-truth shard journals{} in {}\nhint: run `bcb evaluate --check-gt-only --shard I/N` for every I first, with the same BCB_CACHE_DIR and dataset flags",
            if dataset_md5.is_some() { " for this dataset" } else { "" },
            dir.display()
        ),
        1 => Ok(sets.pop().expect("one")),
        _ => {
            sets.sort();
            let listed: Vec<String> = sets.iter().map(|s| format!("  {} ...", s[0].display())).collect();
            bail!(
                "{}: ground-truth shards of {} different runs (other settings or counts):\n{}\nhint: pass --subset/--version, or the journals of one run (`bcb merge --check-gt-only FILES...`), or delete the stale ones",
                dir.display(), sets.len(), listed.join("\n")
            )
        }
    }
}

/// Joins ground-truth-only shard journals made on `dataset`, refusing (naming the file) a
/// shard of samples, of another plan, a duplicated or missing index, or a shard without a
/// verdict for each of its tasks.
pub fn merge_ground_truth(
    dataset: &Dataset,
    paths: &[PathBuf],
) -> anyhow::Result<MergedGroundTruth> {
    if paths.is_empty() {
        bail!("no ground-truth shard journals given\nhint: run `bcb evaluate --check-gt-only --shard I/N` for every I first");
    }
    let headers = check_set(
        dataset,
        paths,
        |first_path, plan| {
            if plan.samples != NO_SAMPLES {
                bail!(
                "{}: a shard of a samples file, not of the ground truth alone\nhint: merge it with `bcb merge --samples FILE`",
                first_path.display()
            );
            }
            Ok(())
        },
        "the ground truth",
    )?;
    let plan = headers[0].1.plan.clone().expect("checked");
    let mut records = Vec::new();
    for (p, h) in &headers {
        let tag = h.shard.expect("checked");
        let tasks = shard_tasks(
            dataset,
            None,
            Shard {
                index: tag.index - 1,
                count: tag.count,
            },
        );
        let mine: HashMap<String, JournalRecord> = read_journal(p, &h.key)
            .into_iter()
            .filter(|r| r.id.program == Program::GroundTruth && tasks.contains(&r.id.task_id))
            .map(|r| (r.id.task_id.clone(), r))
            .collect();
        let unfinished = tasks.len() - mine.len();
        if unfinished > 0 {
            bail!(
                "{}: shard {}/{} is incomplete ({unfinished} task(s) without a verdict)\nhint: run `bcb evaluate --check-gt-only --shard {}/{}` again; it resumes",
                p.display(), tag.index, tag.count, tag.index, tag.count
            );
        }
        records.extend(mine.into_values());
    }
    // Dataset order, as one run's cache would list them (its order is otherwise finish order).
    records.sort_by_key(|r| dataset.position(&r.id.task_id).unwrap_or(usize::MAX));
    Ok(MergedGroundTruth {
        plan,
        records,
        shards: paths.to_vec(),
    })
}

/// `field: a vs b` for each field two plans disagree on.
fn plan_differences(a: &PlanInfo, b: &PlanInfo) -> String {
    let fields = [
        ("version", a.version.clone(), b.version.clone()),
        ("subset", a.subset.to_string(), b.subset.to_string()),
        ("dataset", a.dataset.clone(), b.dataset.clone()),
        ("samples", a.samples.clone(), b.samples.clone()),
        ("split", a.split.to_string(), b.split.to_string()),
        (
            "calibrated",
            a.calibrated.to_string(),
            b.calibrated.to_string(),
        ),
        ("settings", a.settings.clone(), b.settings.clone()),
        ("tamper policy", a.tamper.clone(), b.tamper.clone()),
    ];
    fields
        .into_iter()
        .filter(|(_, x, y)| x != y)
        .map(|(name, x, y)| format!("{name}: `{x}` vs `{y}`"))
        .collect::<Vec<_>>()
        .join("; ")
}
