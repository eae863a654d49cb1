//! The cost model: how long a run takes split into N shards on N machines of C cores each, so
//! a user can size a cluster before paying for one. It reuses the shard split itself
//! ([`shard_tasks`]) and simulates each machine as the local executor runs: the ground-truth
//! phase, then the samples phase, each on C slots taking jobs longest first, every job to the
//! first free slot. Job times come from the shipped ground-truth timings or from journals of
//! earlier runs (ground-truth cache, shard or samples journals), which measured them.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::Path;

use anyhow::bail;
use bcb_dataset::Dataset;
use bcb_execute::{JobId, Program};

use crate::journal::{read_header, read_journal};
use crate::plan::{shard_loads, shard_tasks, task_weights, Samples, Shard};
use crate::priors;

/// Seconds per job: measured ones where a journal has them, else the shipped priors.
#[derive(Debug, Default, Clone)]
pub struct Timings {
    /// Ground-truth job wall time by task.
    ground_truth: HashMap<String, f64>,
    /// Sample job wall time by job.
    samples: HashMap<JobId, f64>,
    /// Added to every time that comes from the priors (they hold test time only; a job also
    /// pays for its fork, sandbox and report).
    pub prior_overhead: f64,
}

impl Timings {
    /// Only the shipped priors, plus `overhead` seconds per job.
    pub fn shipped(overhead: f64) -> Timings {
        Timings {
            prior_overhead: overhead,
            ..Timings::default()
        }
    }

    /// Adds the job wall times of a bcb journal (any kind: its records are keyed by job).
    /// Returns how many records it took.
    pub fn add_journal(&mut self, path: &Path) -> anyhow::Result<usize> {
        let Some(header) = read_header(path) else {
            bail!(
                "{}: not a bcb journal (no header line)\nhint: pass a file of ~/.cache/bcb/ground-truth/ or an `*_eval_results.json.shard-*.jsonl` / `.partial.jsonl`",
                path.display()
            );
        };
        let records = read_journal(path, &header.key);
        for r in &records {
            match r.id.program {
                Program::GroundTruth => {
                    self.ground_truth
                        .insert(r.id.task_id.clone(), r.outcome.wall_secs);
                }
                Program::Sample(_) => {
                    self.samples.insert(r.id.clone(), r.outcome.wall_secs);
                }
            }
        }
        Ok(records.len())
    }

    pub fn measured(&self) -> usize {
        self.ground_truth.len() + self.samples.len()
    }

    fn prior(&self, task_id: &str) -> f64 {
        priors::expected_secs(task_id).unwrap_or(1.0) + self.prior_overhead
    }

    fn ground_truth_secs(&self, task_id: &str) -> f64 {
        self.ground_truth
            .get(task_id)
            .copied()
            .unwrap_or_else(|| self.prior(task_id))
    }

    /// A sample without a measurement is taken to cost what its task's ground truth costs.
    fn sample_secs(&self, id: &JobId) -> f64 {
        self.samples
            .get(id)
            .copied()
            .unwrap_or_else(|| self.ground_truth_secs(&id.task_id))
    }
}

/// The prediction for one shape of cluster.
#[derive(Debug, Clone)]
pub struct Prediction {
    pub machines: usize,
    pub cores: usize,
    /// Predicted wall time of each shard (machine), ground truth then samples.
    pub shard_walls: Vec<f64>,
    /// Sum of every job's time.
    pub total: f64,
    /// The longest single job.
    pub longest: f64,
    /// The longest chain a task imposes: its ground truth, then its longest sample (whose
    /// time limit needs the ground truth's time). No cluster finishes before it.
    pub chain: f64,
    /// Paid once per shard before its first verdict.
    pub startup: f64,
    /// Largest shard's expected cost (the split's own weights) over total / N.
    pub balance: f64,
    /// The best `balance` any split can reach: the heaviest task alone may exceed total / N.
    pub balance_bound: f64,
}

impl Prediction {
    /// The slowest machine decides.
    pub fn wall(&self) -> f64 {
        self.shard_walls.iter().copied().fold(0.0, f64::max)
    }

    /// Perfect spreading: Σ time / (N·C).
    pub fn spread(&self) -> f64 {
        self.total / (self.machines * self.cores) as f64
    }

    /// What no schedule can beat: start-up, then the larger of the spread and the longest
    /// chain.
    pub fn floor(&self) -> f64 {
        self.startup + self.spread().max(self.chain)
    }
}

/// Predicts the wall time of `dataset` (and `samples`, if any) split into `machines` shards
/// of `cores` slots each; every shard also pays `startup` seconds once (loading the dataset,
/// warming the executor's workers).
pub fn predict(
    dataset: &Dataset,
    samples: Option<&Samples>,
    timings: &Timings,
    machines: usize,
    cores: usize,
    startup: f64,
) -> Prediction {
    let machines = machines.max(1);
    let cores = cores.max(1);
    let mut walls = Vec::with_capacity(machines);
    let (mut total, mut longest) = (0.0f64, 0.0f64);
    let mut longest_sample: HashMap<&str, f64> = HashMap::new();
    for index in 0..machines {
        let tasks = shard_tasks(
            dataset,
            samples,
            Shard {
                index,
                count: machines,
            },
        );
        let gt: Vec<f64> = dataset
            .tasks()
            .iter()
            .filter(|t| tasks.contains(&t.task_id))
            .map(|t| timings.ground_truth_secs(&t.task_id))
            .collect();
        let sample_times: Vec<f64> = samples
            .map(|s| s.programs.as_slice())
            .unwrap_or_default()
            .iter()
            .filter(|p| tasks.contains(&p.id.task_id))
            .map(|p| {
                let t = timings.sample_secs(&p.id);
                let l = longest_sample.entry(p.id.task_id.as_str()).or_default();
                *l = l.max(t);
                t
            })
            .collect();
        for &t in gt.iter().chain(&sample_times) {
            total += t;
            longest = longest.max(t);
        }
        // The samples phase starts when the ground truth is done (it sets their limits).
        walls.push(startup + makespan(gt, cores) + makespan(sample_times, cores));
    }
    let chain = dataset
        .tasks()
        .iter()
        .map(|t| {
            timings.ground_truth_secs(&t.task_id)
                + longest_sample
                    .get(t.task_id.as_str())
                    .copied()
                    .unwrap_or(0.0)
        })
        .fold(0.0, f64::max);
    let loads = shard_loads(dataset, samples, machines);
    let sum: f64 = loads.iter().sum();
    let heaviest = task_weights(dataset, samples).first().map_or(0.0, |w| w.0);
    let (balance, balance_bound) = if sum > 0.0 {
        let even = sum / machines as f64;
        (
            loads.iter().copied().fold(0.0, f64::max) / even,
            (heaviest / even).max(1.0),
        )
    } else {
        (1.0, 1.0)
    };
    Prediction {
        machines,
        cores,
        shard_walls: walls,
        total,
        longest,
        chain,
        startup,
        balance,
        balance_bound,
    }
}

/// Wall time of `jobs` on `slots`, longest first, each to the slot that frees first (the
/// local executor's order; ties do not matter for the total).
pub fn makespan(mut jobs: Vec<f64>, slots: usize) -> f64 {
    jobs.sort_by(|a, b| b.total_cmp(a));
    // Min-heap of slot finish times, in whole microseconds so they order totally.
    let mut free: BinaryHeap<Reverse<u64>> = (0..slots.max(1)).map(|_| Reverse(0)).collect();
    let mut end = 0u64;
    for secs in jobs {
        let Reverse(start) = free.pop().expect("at least one slot");
        let done = start + (secs.max(0.0) * 1e6) as u64;
        end = end.max(done);
        free.push(Reverse(done));
    }
    end as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makespan_is_longest_first_list_scheduling() {
        assert_eq!(makespan(vec![], 2), 0.0);
        assert_eq!(makespan(vec![3.0, 1.0, 2.0], 1), 6.0);
        // 5 | 4+1, 3+2 on 3 slots -> 5.
        assert_eq!(makespan(vec![1.0, 2.0, 3.0, 4.0, 5.0], 3), 5.0);
        // The longest job bounds it from below.
        assert_eq!(makespan(vec![10.0, 1.0, 1.0], 8), 10.0);
    }
}
