//! `--execution`: which backend runs the jobs, and the flags only remote backends read.
use bcb_envvars::EnvVars;
use bcb_execute::{
    e2b::E2bOptions, gradio, remote::DEFAULT_CHUNK, ExecutorSpec, Limits, LocalKind,
};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum Execution {
    Local,
    Gradio,
    E2b,
}

#[derive(clap::Args, Debug, Clone)]
pub struct RemoteArgs {
    /// The Gradio evaluator Space for `--execution gradio` (`HF_TOKEN` is sent as a bearer token).
    #[arg(long, visible_alias = "gradio_endpoint", default_value = gradio::DEFAULT_ENDPOINT, value_name = "URL")]
    pub gradio_endpoint: String,
    /// The E2B sandbox template for `--execution e2b` (needs E2B_API_KEY).
    #[arg(
        long,
        visible_alias = "e2b_endpoint",
        default_value = "bigcodebench_evaluator",
        value_name = "TEMPLATE"
    )]
    pub e2b_endpoint: String,
    /// Tries of each remote HTTP step on connection errors and busy servers (backoff from 1 s).
    #[arg(long, default_value_t = 8)]
    pub remote_retries: usize,
    /// Jobs per remote request: a killed run loses at most one chunk in flight.
    #[arg(long, default_value_t = DEFAULT_CHUNK, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub remote_chunk: usize,
}

/// The backend `--execution` names; a setting a Space cannot be given is refused here.
pub fn spec(a: &super::evaluate::Args) -> anyhow::Result<ExecutorSpec> {
    let (r, d) = (&a.remote, Limits::default());
    match a.execution {
        Execution::Local => Ok(ExecutorSpec::Local(a.executor)),
        Execution::Gradio => {
            let why = "a Space applies upstream's 240 s base, its own sandbox and limits (it takes only --max-as-limit, --max-data-limit, --max-stack-limit, --min-time-limit, --parallel)";
            let changed = [
                ("--timeout", a.timeout != gradio::SPACE_BASE_TIMEOUT),
                ("--memory-limit", a.memory_limit != d.memory_mb),
                ("--max-processes", a.max_processes != d.max_processes),
                ("--output-cap", a.output_cap != d.output_cap_bytes),
                ("--kill-grace", a.kill_grace != d.kill_grace.as_secs_f64()),
                ("--tamper-policy", a.tamper_policy != Default::default()),
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
                (r.remote_retries, a.parallel, a.min_time_limit);
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
