//! `--execution` → the backend (`ExecutorSpec`): every setting carried, or refused here.
use bcb_envvars::EnvVars;
use bcb_execute::{e2b::E2bOptions, gradio, ExecutorSpec, Limits, LocalKind};

use super::evaluate_flags::{Args, Execution};

/// The backend `--execution` names; a setting a Space cannot be given is refused here.
pub fn spec(a: &Args) -> anyhow::Result<ExecutorSpec> {
    let (r, d) = (&a.remote, Limits::default());
    match a.execution {
        Execution::Local => Ok(ExecutorSpec::Local(a.executor)),
        Execution::Gradio => {
            let why = "a Space applies upstream's 240 s base, its own sandbox and limits (it takes only --max-as-limit, --max-data-limit, --max-stack-limit, --min-time-limit, --parallel)";
            let changed = [
                ("--timeout", a.verdict.timeout != gradio::SPACE_BASE_TIMEOUT),
                (
                    "--memory-limit",
                    a.verdict.limits.memory_limit != d.memory_mb,
                ),
                (
                    "--max-processes",
                    a.verdict.limits.max_processes != d.max_processes,
                ),
                (
                    "--output-cap",
                    a.verdict.limits.output_cap != d.output_cap_bytes,
                ),
                (
                    "--kill-grace",
                    a.verdict.limits.kill_grace != d.kill_grace.as_secs_f64(),
                ),
                (
                    "--tamper-policy",
                    a.verdict.tamper_policy != Default::default(),
                ),
                ("--hack-policy", a.verdict.hack_policy != Default::default()),
                ("--executor", a.executor != LocalKind::Pool),
                ("--max-in-flight", a.max_in_flight != 0),
                ("--dataset", a.dataset.dataset.is_some()),
                (
                    "--version",
                    a.dataset.version != bcb_dataset::DEFAULT_VERSION,
                ),
            ];
            if let Some((flag, _)) = changed.iter().find(|(_, c)| *c) {
                anyhow::bail!("{flag} cannot be carried to a Gradio Space: {why}\nhint: drop {flag}, or use --execution e2b (runs bcb itself with every setting) or local");
            }
            let mut opts = gradio::GradioOptions::new(&r.gradio_endpoint);
            opts.token = std::env::var(EnvVars::HF_TOKEN)
                .ok()
                .filter(|t| !t.is_empty());
            (opts.retries, opts.parallel, opts.min_time_limit) =
                (r.remote_retries, a.parallel, a.verdict.min_time_limit);
            (opts.split, opts.subset) = (a.split.as_str().into(), a.dataset.subset.as_str().into());
            Ok(ExecutorSpec::Gradio {
                opts,
                chunk: r.remote_chunk,
            })
        }
        Execution::E2b => {
            let mut opts = E2bOptions::from_env(&r.e2b_endpoint)
                .map_err(|e| anyhow::anyhow!("{e}\nhint: {}", e.hint().unwrap_or("")))?;
            (opts.retries, opts.parallel, opts.executor) =
                (r.remote_retries, a.parallel, a.executor);
            Ok(ExecutorSpec::E2b {
                opts,
                chunk: r.remote_chunk,
            })
        }
    }
}
