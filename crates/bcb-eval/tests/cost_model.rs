//! The shard split and the cost model on the real dataset and a real model's answers: the
//! acceptance line "the largest shard's expected time is within 15% of total / N" for
//! N = 1..4, where one task alone does not exceed total / N, and the predictions' bounds.

use std::path::{Path, PathBuf};

use bcb_dataset::{Dataset, Subset};
use bcb_eval::cost::{predict, Timings};
use bcb_eval::Samples;

fn dataset(dir: &Path, subset: Subset) -> Dataset {
    let name = match subset {
        Subset::Full => "bigcodebench-v0.1.4.jsonl.gz",
        Subset::Hard => "bigcodebench-hard-v0.1.4.jsonl.gz",
    };
    Dataset::from_file(&dir.join(name), subset, "v0.1.4").unwrap()
}

fn hermes(dir: &Path) -> PathBuf {
    dir.join("../real-samples/NousResearch--Hermes-2-Theta-Llama-3-8B--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated.jsonl.gz")
}

#[test]
fn shards_of_full_ground_truth_and_real_samples_are_within_15_percent() {
    let Some(dir) = bcb_testkit::dataset_dir() else {
        return;
    };
    let full = dataset(&dir, Subset::Full);
    let samples = Samples::read(&full, &hermes(&dir), true).unwrap();
    let timings = Timings::shipped(0.1);
    for (what, s) in [("ground truth", None), ("real samples", Some(&samples))] {
        for n in 1..=4 {
            let p = predict(&full, s, &timings, n, 2, 0.0);
            assert!(
                p.balance <= 1.15,
                "{what}, N = {n}: largest shard {:.3} x total / N",
                p.balance
            );
            // No schedule beats the floor; list scheduling stays within 2x of it.
            assert!(p.wall() + 1e-6 >= p.floor(), "{what}, N = {n}");
            assert!(p.wall() <= 2.0 * p.floor(), "{what}, N = {n}");
        }
    }
}

#[test]
fn one_long_task_bounds_the_balance_of_the_hard_subset() {
    let Some(dir) = bcb_testkit::dataset_dir() else {
        return;
    };
    let hard = dataset(&dir, Subset::Hard);
    let p = predict(&hard, None, &Timings::shipped(0.0), 4, 2, 0.0);
    // BigCodeBench/461 (~156 s) alone is more than a quarter of the hard ground truth: the
    // split puts nothing else with it, which is the best any split can do.
    assert!(p.balance_bound > 1.15);
    assert!((p.balance - p.balance_bound).abs() < 1e-9, "{p:?}");
    assert!((p.wall() - p.longest).abs() < 1e-6, "{p:?}");
    assert_eq!(p.chain, p.longest, "no samples: the chain is one job");
}
