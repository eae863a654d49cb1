//! The execution limits every command that runs samples takes (`evaluate`, `serve`, the hidden
//! `exec-jobs`): one flag group, one mapping to [`Limits`]; and with the time limits and the
//! tamper and hack policies, everything that decides a verdict besides the task
//! ([`VerdictArgs`], `evaluate` and `serve`).

use std::time::Duration;

use bcb_dataset::Split;
use bcb_envvars::EnvVars;
use bcb_eval::Settings;
use bcb_execute::Limits;

#[derive(clap::Args, Debug, Clone)]
pub struct LimitArgs {
    /// Address-space limit per sample in MB (RLIMIT_AS; 0 = none).
    #[arg(long, default_value_t = 30 * 1024)]
    pub max_as_limit: u64,
    /// Data-segment limit per sample in MB (RLIMIT_DATA; 0 = none).
    #[arg(long, default_value_t = 30 * 1024)]
    pub max_data_limit: u64,
    /// Stack limit per sample in MB (RLIMIT_STACK; 0 = none).
    #[arg(long, default_value_t = 10)]
    pub max_stack_limit: u64,
    /// Memory cap per sample in MB, enforced by a cgroup where available (0 = none).
    #[arg(long, default_value_t = Limits::default().memory_mb)]
    pub memory_limit: u64,
    /// Processes/threads per sample (0 = none).
    #[arg(long, default_value_t = Limits::default().max_processes)]
    pub max_processes: u64,
    /// Seconds after the time limit before a sample's processes are killed.
    #[arg(long, default_value_t = Limits::default().kill_grace.as_secs_f64())]
    pub kill_grace: f64,
    /// Bytes of each sample's stdout/stderr kept (the rest is drained and dropped).
    #[arg(long, default_value_t = Limits::default().output_cap_bytes)]
    pub output_cap: usize,
}

/// Everything of a run that may change a verdict besides the task and the environment: the
/// flags of `evaluate` and `serve` behind [`Settings`].
#[derive(clap::Args, Debug, Clone)]
pub struct VerdictArgs {
    /// Lower bound of the per-sample limit in seconds (upstream `--min_time_limit`).
    #[arg(long, default_value_t = 1.0)]
    pub min_time_limit: f64,
    /// Base per-sample limit in seconds; the limit is max(this, min-time-limit, GT time) + 1.
    #[arg(long, env = EnvVars::BIGCODEBENCH_TIMEOUT_PER_TASK, default_value_t = bcb_eval::DEFAULT_BASE_TIMEOUT)]
    pub timeout: f64,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// What a sample the tamper scan flags gets: `refuse` (not run; `fail` with the findings as
    /// its details), `warn` (run, findings logged) or `off` (no scan).
    #[arg(long, default_value = "refuse")]
    pub tamper_policy: bcb_sanitize::tamper::TamperPolicy,
    /// What a reward hack the harness's run-time watch detects gets: `fail` (the pass becomes
    /// `fail`, details `bcb: reward hack: ...`), `flag` (the tests' verdict, flagged) or `off`
    /// (no watch).
    #[arg(long, default_value = "fail")]
    pub hack_policy: bcb_execute::HackPolicy,
}

impl VerdictArgs {
    /// The run's settings for `split`, calibrated or not, in the environment `runtime`.
    pub fn settings(&self, split: Split, calibrated: bool, runtime: String) -> Settings {
        Settings {
            split,
            calibrated,
            min_time_limit: self.min_time_limit,
            base_timeout: self.timeout,
            limits: self.limits.limits(),
            runtime,
            tamper: self.tamper_policy,
            hacks: self.hack_policy,
        }
    }
}

impl LimitArgs {
    pub fn limits(&self) -> Limits {
        Limits {
            max_as_mb: self.max_as_limit,
            max_data_mb: self.max_data_limit,
            max_stack_mb: self.max_stack_limit,
            memory_mb: self.memory_limit,
            max_processes: self.max_processes,
            output_cap_bytes: self.output_cap,
            kill_grace: Duration::from_secs_f64(self.kill_grace.max(0.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::{Cli, Command};

    /// `bcb serve` takes every limit `bcb evaluate` does, with the same defaults, and runs
    /// its samples under them (the warm session's settings are built from the same group).
    #[test]
    fn serve_and_evaluate_take_the_same_limits() {
        let limits = |args: &[&str]| match Cli::try_parse_from(args).unwrap().command {
            Command::Serve(a) => a.verdict.limits.limits(),
            Command::Evaluate(a) => a.verdict.limits.limits(),
            _ => unreachable!(),
        };
        assert_eq!(limits(&["bcb", "serve"]), limits(&["bcb", "evaluate"]));
        let set = [
            "--max-as-limit",
            "2048",
            "--max-data-limit",
            "1024",
            "--max-stack-limit",
            "8",
            "--max-processes",
            "32",
            "--output-cap",
            "1000",
        ];
        let served = limits(&[&["bcb", "serve"][..], &set].concat());
        assert_eq!(served, limits(&[&["bcb", "evaluate"][..], &set].concat()));
        assert_eq!(
            (served.max_as_mb, served.max_data_mb, served.max_stack_mb),
            (2048, 1024, 8)
        );
        assert_eq!((served.max_processes, served.output_cap_bytes), (32, 1000));
    }
}
