//! `compare A B`: which tasks flipped, whether the difference is more than noise (exact
//! McNemar on the flips, paired bootstrap interval on the pass@1 difference).

use serde::Serialize;

use crate::classify::FailureClass;
use crate::stats::{self, Estimate};
use crate::summary::Report;

/// Significance level for the verdict line.
pub const ALPHA: f64 = 0.05;

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    /// Tasks both runs have.
    pub paired_tasks: usize,
    pub pass_at_1_a: f64,
    pub pass_at_1_b: f64,
    /// `pass@1(B) - pass@1(A)` over the paired tasks, with a paired bootstrap 95% interval.
    pub difference: Estimate,
    /// Solved by A, not by B (regressions when B is the newer run).
    pub a_only: Vec<Flip>,
    /// Solved by B, not by A.
    pub b_only: Vec<Flip>,
    pub both_solved: usize,
    pub neither_solved: usize,
    /// Exact two-sided McNemar p-value on `a_only` vs `b_only`.
    pub mcnemar_p: f64,
    /// True when the interval includes 0 or p >= ALPHA: the difference may be noise.
    pub noise: bool,
    pub seed: u64,
    pub resamples: usize,
}

/// A task solved by one run only, with the other run's failure class.
#[derive(Debug, Clone, Serialize)]
pub struct Flip {
    pub task_id: String,
    pub failed_as: Option<FailureClass>,
    /// A rerun changed a verdict of this task in either run: the flip may be noise.
    pub flaky: bool,
}

/// Compares models 0 (A) and 1 (B) of a report built from exactly those two runs.
pub fn compare(report: &Report, seed: u64, resamples: usize) -> Comparison {
    assert!(
        report.models.len() == 2,
        "compare needs a report of two runs"
    );
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    let (mut a_only, mut b_only) = (Vec::new(), Vec::new());
    let (mut both, mut neither) = (0, 0);
    for row in &report.tasks {
        let (Some(va), Some(vb)) = (&row.verdicts[0], &row.verdicts[1]) else {
            continue;
        };
        xs.push(va.passed as f64 / va.n.max(1) as f64);
        ys.push(vb.passed as f64 / vb.n.max(1) as f64);
        match (va.solved(), vb.solved()) {
            (true, true) => both += 1,
            (false, false) => neither += 1,
            (true, false) => a_only.push(Flip {
                task_id: row.task_id.clone(),
                failed_as: vb.class(),
                flaky: va.flaky || vb.flaky,
            }),
            (false, true) => b_only.push(Flip {
                task_id: row.task_id.clone(),
                failed_as: va.class(),
                flaky: va.flaky || vb.flaky,
            }),
        }
    }
    let n = xs.len().max(1) as f64;
    let difference = stats::paired_difference(&ys, &xs, seed, resamples);
    let mcnemar_p = stats::mcnemar_exact(a_only.len() as u64, b_only.len() as u64);
    Comparison {
        a: report.models[0].name.clone(),
        b: report.models[1].name.clone(),
        paired_tasks: xs.len(),
        pass_at_1_a: xs.iter().sum::<f64>() / n,
        pass_at_1_b: ys.iter().sum::<f64>() / n,
        noise: mcnemar_p >= ALPHA || (difference.low <= 0.0 && difference.high >= 0.0),
        difference,
        a_only,
        b_only,
        both_solved: both,
        neither_solved: neither,
        mcnemar_p,
        seed,
        resamples,
    }
}

impl Comparison {
    /// The terminal text of `bcb compare`.
    pub fn render_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let pct = |x: f64| format!("{:.1}", 100.0 * x);
        let _ = writeln!(s, "A: {}\nB: {}", self.a, self.b);
        let _ = writeln!(
            s,
            "paired tasks: {}   pass@1 A {}%   B {}%",
            self.paired_tasks,
            pct(self.pass_at_1_a),
            pct(self.pass_at_1_b)
        );
        let _ = writeln!(
            s,
            "B - A: {:+.1} points, 95% CI [{:+.1}, {:+.1}] (paired bootstrap, {} resamples, seed {})",
            100.0 * self.difference.value,
            100.0 * self.difference.low,
            100.0 * self.difference.high,
            self.resamples,
            self.seed
        );
        let _ = writeln!(
            s,
            "flips: {} solved only by A, {} only by B ({} both, {} neither); exact McNemar p = {}",
            self.a_only.len(),
            self.b_only.len(),
            self.both_solved,
            self.neither_solved,
            if self.mcnemar_p < 1e-4 {
                format!("{:.2e}", self.mcnemar_p)
            } else {
                format!("{:.4}", self.mcnemar_p)
            }
        );
        let verdict = if self.noise {
            "the difference is within noise (p >= 0.05 or the interval includes 0)"
        } else if self.difference.value > 0.0 {
            "B is better than A beyond noise"
        } else {
            "A is better than B beyond noise"
        };
        let _ = writeln!(s, "verdict: {verdict}");
        for (title, flips) in [
            ("only A solved", &self.a_only),
            ("only B solved", &self.b_only),
        ] {
            if flips.is_empty() {
                continue;
            }
            let _ = writeln!(s, "\n{title} ({}):", flips.len());
            for f in flips {
                let why = f.failed_as.map_or("", |c| c.label());
                let flaky = if f.flaky {
                    " (flaky: a rerun changed a verdict)"
                } else {
                    ""
                };
                let _ = writeln!(s, "  {:<18} other failed as: {why}{flaky}", f.task_id);
            }
        }
        s
    }
}
