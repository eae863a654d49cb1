//! `bcb plan`: sizes a cluster before it is paid for — the predicted wall time of a run split
//! into N shards on N machines of C cores, against the ideal, from the shipped timings or
//! measured ones (see `bcb_eval::cost`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use bcb_eval::cost::{predict, Timings};
use bcb_eval::Samples;

use crate::common::DatasetArgs;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// The samples file to plan for (without it: the ground truth alone, as
    /// `evaluate --check-gt-only --shard` runs it).
    #[arg(long)]
    pub samples: Option<PathBuf>,
    /// Only these tasks (as `bcb evaluate --ids`).
    #[arg(long, default_value = "")]
    pub ids: String,
    /// Machine counts (= shard counts) to predict for.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8")]
    pub machines: Vec<usize>,
    /// Cores (parallel jobs) per machine; default this machine's.
    #[arg(long, value_delimiter = ',')]
    pub cores: Vec<usize>,
    /// Journals with measured job times (a ground-truth cache file, shard journals,
    /// `.partial.jsonl`); jobs they lack use the shipped ground-truth timings.
    #[arg(long, value_name = "JOURNAL", num_args = 1..)]
    pub timings: Vec<PathBuf>,
    /// Seconds each job costs beyond its test time (fork, sandbox, report) where the time comes
    /// from the shipped timings, which hold test time only.
    #[arg(long, default_value_t = 0.1)]
    pub overhead: f64,
    /// Seconds each shard spends once before its first verdict (dataset, worker warm-up).
    #[arg(long, default_value_t = 3.0)]
    pub startup: f64,
}

const LEGEND: &str = "chain = the longest task (ground truth, then its longest sample); \
floor = start-up + max(Σ/(N·C), chain); balance = largest shard's expected time / (total / N) \
by the split's weights; best = the heaviest task's share, which no split beats";

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut ds = args.dataset.spec().load()?;
    let ids = bcb_dataset::parse_task_ids(&args.ids);
    if !ids.is_empty() {
        ds.retain_ids(&ids)?;
    }
    let samples = match &args.samples {
        Some(p) => Some(Samples::read(&ds, p, true)?),
        None => None,
    };
    let mut timings = Timings::shipped(args.overhead.max(0.0));
    for path in &args.timings {
        let n = timings.add_journal(path)?;
        eprintln!("{}: {n} measured job(s)", path.display());
    }
    // writeln! with `?`, not println!: `bcb plan | head` is no panic (main ignores EPIPE).
    let mut out = std::io::stdout().lock();
    let cores = match args.cores.is_empty() {
        true => vec![std::thread::available_parallelism().map_or(1, |n| n.get())],
        false => args.cores.clone(),
    };
    writeln!(
        out,
        "{} tasks ({} {}), {}; times: {}",
        ds.len(),
        ds.subset,
        ds.version,
        samples
            .as_ref()
            .map_or("ground truth only".to_string(), |s| format!(
                "ground truth + {} samples",
                s.len()
            )),
        match timings.measured() {
            0 => format!(
                "shipped ground-truth timings + {:.2}s per job",
                args.overhead
            ),
            n => format!(
                "{n} measured, the rest shipped + {:.2}s per job",
                args.overhead
            ),
        }
    )?;
    writeln!(
        out,
        "{:>8} {:>5} {:>11} {:>12} {:>9} {:>9} {:>8} {:>8} {:>8}  shards (s)",
        "machines",
        "cores",
        "predicted",
        "Σ/(N·C)",
        "chain",
        "floor",
        "vs floor",
        "balance",
        "best"
    )?;
    let mut unbalanced = Vec::new();
    for &c in &cores {
        for &n in &args.machines {
            let p = predict(&ds, samples.as_ref(), &timings, n, c, args.startup.max(0.0));
            let shards = if p.shard_walls.len() <= 8 {
                p.shard_walls
                    .iter()
                    .map(|w| format!("{w:.0}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            } else {
                format!("{} shards", p.shard_walls.len())
            };
            writeln!(
                out,
                "{:>8} {:>5} {:>10.1}s {:>11.1}s {:>8.1}s {:>8.1}s {:>7.2}x {:>8.3} {:>8.3}  {shards}",
                p.machines,
                p.cores,
                p.wall(),
                p.spread(),
                p.chain,
                p.floor(),
                p.wall() / p.floor().max(1e-9),
                p.balance,
                p.balance_bound,
            )?;
            if p.balance > 1.15 {
                unbalanced.push((n, p.balance <= p.balance_bound + 1e-9));
            }
        }
    }
    writeln!(out, "{LEGEND}")?;
    unbalanced.sort();
    unbalanced.dedup();
    for (n, optimal) in unbalanced {
        let why = match optimal {
            true => " because one task alone is; more shards cannot help",
            false => "",
        };
        writeln!(
            out,
            "note: N = {n}: the largest shard is over 15% above total / N{why}"
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
