//! `bcb serve`: BigCodeBench verdicts over HTTP (see `bcb-serve`). The dataset is loaded once;
//! the server answers `/healthz` at once and `/readyz` once the warm session has checked the
//! ground truth; every request goes through that one session.

use bcb_envvars::EnvVars;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bcb_dataset::{DatasetSpec, Split, Subset};
use bcb_eval::{GtCache, GtMode, RetryPolicy, Settings, VerdictCache, WarmOptions, WarmSession};
use bcb_execute::local::env as pyenv;
use bcb_execute::{ExecConfig, ExecutorSpec, LocalKind};
use bcb_serve::{AppState, Catalog, ServeConfig};
use bcb_sinks::{JournalSink, ProgressMode, ProgressSink, VerdictCacheSink};

use crate::common::DatasetArgs;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on. Anything but loopback needs --token.
    #[arg(long, default_value = "127.0.0.1:8765")]
    pub listen: SocketAddr,
    /// Bearer token every request (but /healthz, /readyz) must carry.
    #[arg(long, env = EnvVars::BCB_SERVE_TOKEN, hide_env_values = true)]
    pub token: Option<String>,
    /// Default prompt split for /v1/tasks and /get_prompts.
    #[arg(long, default_value = "complete")]
    pub split: Split,
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Serve only these tasks: comma-separated ids (`BigCodeBench/1,2`).
    #[arg(long, value_name = "IDS", default_value = "")]
    pub ids: String,
    /// Local executor: `pool` (pre-warmed, sandboxed) or `process`.
    #[arg(long, default_value = "pool", env = EnvVars::BCB_EXECUTOR)]
    pub executor: LocalKind,
    /// Samples run at once (default: number of cores).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub parallel: i64,
    /// Most samples in flight at once (0 = twice `bcb evaluate`'s default:
    /// 2 × (parallel + max(parallel, 8))).
    #[arg(long, default_value_t = 0)]
    pub max_in_flight: usize,
    /// Calibrated verdicts unless a request says otherwise (upstream default).
    #[arg(long, value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true", default_value = "true")]
    pub calibrated: bool,
    #[command(flatten)]
    pub verdict: super::limit_flags::VerdictArgs,
    #[command(flatten)]
    pub reuse: super::reuse_flags::ReuseArgs,
    /// Samples admitted and not yet answered, over all requests; past it requests get 429.
    #[arg(long, default_value_t = 4096)]
    pub queue_limit: usize,
    /// Largest request body in MB (413 past it).
    #[arg(long, default_value_t = 16)]
    pub max_body_mb: usize,
    /// Per-request deadline in seconds (requests may ask for less with `limits.deadline_secs`).
    #[arg(long, default_value_t = 900.0)]
    pub request_timeout: f64,
    /// On SIGTERM, seconds to let admitted samples finish before closing anyway.
    #[arg(long, default_value_t = 600.0)]
    pub drain_timeout: f64,
    /// Python interpreter of the evaluation environment.
    #[arg(long, env = EnvVars::BCB_PYTHON)]
    pub python: Option<PathBuf>,
    /// Further attempts for jobs that got no verdict before the request fails with 503.
    #[arg(long, default_value_t = 2)]
    pub exec_retries: usize,
    /// The least sandbox to start with: a level (`none`, `basic`, `namespaces`, `full`) and/or
    /// protections as `bcb env check --json` names them, kebab-case (`basic,memory-cgroup`).
    /// Default: `none` on loopback, `basic` elsewhere. A required protection off: refused.
    #[arg(long, env = EnvVars::BCB_MIN_ISOLATION, value_name = "LEVEL,PROTECTION...")]
    pub min_isolation: Option<super::min_isolation::MinIsolation>,
    /// Check the flags, the listen address, the sandbox against --min-isolation and the
    /// dataset, then exit without serving.
    #[arg(long)]
    pub check: bool,
}

impl Args {
    /// Most samples in flight. A service's clients send many sleepers at once (461 and
    /// 1040 ×4 in the throughput bench: eight of `bcb evaluate`'s ten seats at 2 cores,
    /// asleep, while 1.4 cores were busy and 57 samples queued), so twice the batch default.
    fn max_in_flight(&self) -> usize {
        match self.max_in_flight {
            0 => 2 * bcb_execute::default_max_in_flight(self.parallel()),
            n => n,
        }
    }

    fn parallel(&self) -> usize {
        match usize::try_from(self.parallel) {
            Ok(n) if n > 0 => n,
            _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    fn config(&self) -> ServeConfig {
        let mut cfg = ServeConfig::new(self.listen);
        cfg.token = self.token.clone().filter(|t| !t.is_empty());
        cfg.max_body_bytes = self.max_body_mb.saturating_mul(1024 * 1024);
        cfg.queue_limit = self.queue_limit.max(1);
        cfg.request_timeout = Duration::from_secs_f64(self.request_timeout.max(1.0));
        cfg.drain_timeout = Duration::from_secs_f64(self.drain_timeout.max(0.0));
        cfg.calibrated = self.calibrated;
        cfg
    }

    /// Refuses a sandbox weaker than --min-isolation (its default follows --listen); returns
    /// the minimum it met.
    fn check_isolation(&self) -> anyhow::Result<super::min_isolation::MinIsolation> {
        let min = self
            .min_isolation
            .clone()
            .unwrap_or_else(|| super::min_isolation::MinIsolation::default_for(self.listen));
        if !min.required().is_empty() {
            let python = pyenv::resolve_python(self.python.as_deref())?;
            let protections = bcb_execute::host_isolation().protections(&self.exec_config(python));
            min.enforce(self.listen, &protections)?;
        }
        Ok(min)
    }

    fn exec_config(&self, python: PathBuf) -> ExecConfig {
        ExecConfig {
            python,
            parallel: self.parallel(),
            max_in_flight: self.max_in_flight(),
            limits: self.verdict.limits.limits(),
            hacks: self.verdict.hack_policy,
        }
    }

    fn settings(&self, python: &std::path::Path) -> Settings {
        self.verdict
            .settings(self.split, self.calibrated, pyenv::runtime_key(python))
    }

    /// The session's dataset (narrowed to --ids) and, for the full set, the hard subset's
    /// ids so requests for `subset: hard` are checked against them.
    fn catalog(&self) -> anyhow::Result<Catalog> {
        let mut ds = self.dataset.spec().load()?;
        let ids = bcb_dataset::parse_task_ids(&self.ids);
        if !ids.is_empty() {
            ds.retain_ids(&ids)?;
        }
        let hard = match ds.subset {
            Subset::Hard => None,
            Subset::Full if self.dataset.dataset.is_some() => None,
            Subset::Full => {
                let mut spec: DatasetSpec = self.dataset.spec();
                spec.subset = Subset::Hard;
                match spec.load() {
                    Ok(h) => Some(h),
                    Err(e) => {
                        tracing::warn!("hard subset not loaded ({e}): requests for subset hard will be refused");
                        None
                    }
                }
            }
        };
        Ok(Catalog::new(ds, hard.as_ref(), self.split))
    }
}

/// Progress lines of the start-up ground-truth check only; requests are not a run to report.
struct UntilReady {
    progress: Option<ProgressSink>,
}

impl bcb_eval::Sink for UntilReady {
    fn handle(&mut self, event: &bcb_eval::Event) -> anyhow::Result<()> {
        if let Some(p) = self.progress.as_mut() {
            p.handle(event)?;
        }
        if matches!(event, bcb_eval::Event::GroundTruthReady { .. }) {
            self.progress = None;
        }
        Ok(())
    }
}

/// Starts the warm session (ground truth first) and hands it to the server when ready.
fn start_session(args: &Args, state: &AppState) -> anyhow::Result<bcb_serve::warm::WarmVerdicts> {
    let python = pyenv::resolve_python(args.python.as_deref())?;
    let settings = args.settings(&python);
    let ds = Arc::new(state.catalog.dataset().clone());
    let spec = ExecutorSpec::Local(args.executor);
    let exec_config = args.exec_config(python);
    let sandbox_key = bcb_execute::sandbox_key(&exec_config);
    let executor: Arc<dyn bcb_execute::Executor> = Arc::from(
        spec.build(exec_config)
            .with_context(|| format!("cannot start the {spec} executor"))?,
    );
    let gt_cache = GtCache::new(&bcb_dataset::cache_dir(), &ds, &settings);
    let cache = args
        .reuse
        .verdict_cache(&settings, &sandbox_key)
        .map(Arc::new);
    let mut sinks: Vec<Box<dyn bcb_eval::Sink + Send>> = vec![
        Box::new(JournalSink::new(
            &gt_cache.path,
            gt_cache.header(),
            &[bcb_eval::Phase::GroundTruth],
            false,
        )),
        Box::new(UntilReady {
            progress: Some(ProgressSink::new(ProgressMode::Auto {
                interval: Duration::from_secs(30),
            })),
        }),
    ];
    if let Some(cache) = &cache {
        // The server lives until it exits: the sink may borrow the cache for that long.
        let cache: &'static VerdictCache = Box::leak(Box::new(cache.clone()));
        sinks.push(Box::new(VerdictCacheSink::live(cache)));
    }
    let session = WarmSession::start(
        ds,
        executor,
        settings,
        &gt_cache,
        sinks,
        WarmOptions {
            gt: GtMode::Use,
            retry: RetryPolicy {
                retries: args.exec_retries,
                ..Default::default()
            },
            dedup: !args.reuse.no_dedup,
            cache,
            // Half the workers (none of one): the other half keeps answering the cheap
            // samples (and so the clients sending), the costly half starts the minute-long
            // ones as they come.
            costly_lanes: args.parallel() / 2,
            ..Default::default()
        },
    )?;
    Ok(bcb_serve::warm::WarmVerdicts::new(session))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cfg = args.config();
    cfg.check()?;
    let min = args.check_isolation()?;
    let catalog = Arc::new(args.catalog()?);
    if args.check {
        println!(
            "ok: {} tasks of {} {}, listen {}{}, isolation at least {min}",
            catalog.dataset().len(),
            catalog.subset(),
            catalog.version(),
            cfg.listen,
            if cfg.token.is_some() {
                " (token set)"
            } else {
                ""
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let state = AppState::new(cfg.clone(), catalog);
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(cfg.listen))
        .with_context(|| format!("cannot listen on {}", cfg.listen))?;
    eprintln!(
        "bcb serve: listening on http://{} ({} tasks of {} {}); ready after the ground-truth check and the warm-up (GET /readyz)",
        listener.local_addr()?,
        state.catalog.dataset().len(),
        state.catalog.subset(),
        state.catalog.version()
    );
    let starter = {
        let state = state.clone();
        std::thread::Builder::new()
            .name("bcb-serve-start".into())
            .spawn(move || match start_session(&args, &state) {
                Ok(engine) => {
                    state.set_ready(Arc::new(engine));
                    eprintln!("bcb serve: ready");
                }
                Err(e) => {
                    eprintln!("error: the evaluation session failed to start: {e:#}");
                    state.set_failed(format!("{e:#}"));
                }
            })?
    };
    let result = runtime.block_on(bcb_serve::serve(
        listener,
        state.clone(),
        bcb_serve::shutdown_signal(state.clone()),
    ));
    drop(starter);
    result?;
    eprintln!("bcb serve: stopped");
    Ok(ExitCode::SUCCESS)
}
