//! `bcb env setup` / `bcb env check`: the Python environment the tasks run in.

use bcb_envvars::EnvVars;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::Context;

use crate::common::DatasetArgs;
use bcb_execute::local::env as pyenv;

#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Create the venv with every library the tasks import (idempotent).
    Setup(SetupArgs),
    /// Import every library the dataset names and report what is missing.
    Check(CheckArgs),
}

#[derive(clap::Args, Debug)]
pub struct SetupArgs {
    /// Where to create the env (default: ~/.cache/bcb/eval-env-py311, or $BCB_ENV_DIR).
    #[arg(long)]
    pub env_dir: Option<PathBuf>,
    /// The CPython 3.11 to build the venv from.
    #[arg(long, default_value = "python3.11")]
    pub base_python: PathBuf,
    /// Reinstall even if the env is current.
    #[arg(long)]
    pub force: bool,
    /// Do not try to download NLTK data.
    #[arg(long)]
    pub no_nltk: bool,
    /// Install detached (output to `{env}.setup.log`) and return at once; whatever needs the
    /// interpreter meanwhile waits for the install.
    #[arg(long)]
    pub background: bool,
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,
    /// Interpreter to audit (default: $BCB_PYTHON, else the managed env).
    #[arg(long, env = EnvVars::BCB_PYTHON)]
    pub python: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(action: Action) -> anyhow::Result<ExitCode> {
    match action {
        Action::Setup(a) => setup(a),
        Action::Check(a) => check(a),
    }
}

fn setup(args: SetupArgs) -> anyhow::Result<ExitCode> {
    let req = pyenv::SetupRequest {
        dir: args.env_dir.unwrap_or_else(pyenv::default_env_dir),
        base_python: args.base_python,
        force: args.force,
        nltk: !args.no_nltk,
    };
    if args.background {
        let started = pyenv::spawn_background(&req, &std::env::current_exe()?, &["env", "setup"])?;
        eprintln!("{}", started.describe(&req.dir));
        return Ok(ExitCode::SUCCESS);
    }
    let report = pyenv::setup_with_data(&req, &mut |s| eprintln!("{s}"))?;
    for line in pyenv::report_lines(&req.dir, &report) {
        eprintln!("{line}");
    }
    println!("{}", pyenv::env_python(&req.dir).display());
    Ok(ExitCode::SUCCESS)
}

/// Import each library in one interpreter, isolating failures per library.
const IMPORT_PROBE: &str = r#"
import importlib, json, sys, os, warnings
warnings.filterwarnings("ignore")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("MPLBACKEND", "Agg")
out = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
        out[name] = None
    except BaseException as e:
        out[name] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
nltk_missing = []
try:
    import nltk
    for res in ["corpora/stopwords", "tokenizers/punkt", "sentiment/vader_lexicon", "corpora/words",
                "taggers/averaged_perceptron_tagger", "corpora/wordnet", "corpora/brown"]:
        try:
            nltk.data.find(res)
        except LookupError:
            nltk_missing.append(res.split("/")[1])
except Exception:
    pass
print(json.dumps({"imports": out, "nltk_missing": nltk_missing, "python": sys.version.split()[0]}))
"#;

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let python = pyenv::resolve_python(args.python.as_deref())?;
    let ds = args.dataset.spec().load()?;
    let mut libs: Vec<String> = ds.library_counts().into_iter().map(|(l, _)| l).collect();
    libs.sort();
    eprintln!(
        "importing {} libraries with {} ...",
        libs.len(),
        python.display()
    );
    let out = Command::new(&python)
        .arg("-c")
        .arg(IMPORT_PROBE)
        .args(&libs)
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: serde_json::Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .with_context(|| {
            format!(
                "the import probe crashed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
    let failed: BTreeMap<String, String> = report["imports"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|e| (k.clone(), e.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let nltk_missing: Vec<String> = report["nltk_missing"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let affected = |pred: &dyn Fn(&bcb_dataset::Task) -> bool| -> Vec<String> {
        ds.tasks()
            .iter()
            .filter(|t| pred(t))
            .map(|t| t.task_id.clone())
            .collect()
    };
    let nltk_tasks = if nltk_missing.is_empty() {
        Vec::new()
    } else {
        affected(&|t| {
            let text = format!("{}{}{}", t.complete_prompt, t.canonical_solution, t.test);
            t.lib_names().iter().any(|l| l == "nltk" || l == "textblob")
                && (text.contains("nltk") || text.contains("TextBlob"))
        })
    };
    let exec_cfg = bcb_execute::ExecConfig {
        python: python.clone(),
        parallel: 1,
        max_in_flight: 0,
        limits: bcb_execute::Limits::default(),
        hacks: Default::default(),
    };
    // Every protection, in force or not, with the fallback named where it is not.
    let protections = bcb_execute::host_isolation().protections(&exec_cfg);
    let platform = bcb_execute::Platform::of_host();
    if args.json {
        let j = serde_json::json!({
            "python": python, "python_version": report["python"],
            "libraries": libs.len(), "failed_imports": failed,
            "nltk_missing": nltk_missing, "tasks_needing_missing_nltk_data": nltk_tasks,
            "platform": platform, "protections": protections,
        });
        println!("{}", serde_json::to_string_pretty(&j)?);
    } else {
        println!(
            "python        {} ({})",
            python.display(),
            report["python"].as_str().unwrap_or("?")
        );
        println!(
            "libraries     {} named by the dataset, {} import",
            libs.len(),
            libs.len() - failed.len()
        );
        for (lib, err) in &failed {
            let tasks = affected(&|t| t.lib_names().contains(lib));
            println!("  missing {lib}: {err} ({} tasks)", tasks.len());
        }
        if nltk_missing.is_empty() {
            println!("nltk data     present");
        } else {
            println!(
                "nltk data     missing: {} (run `bcb env setup` with network); {} tasks may fail: {}",
                nltk_missing.join(", "),
                nltk_tasks.len(),
                nltk_tasks.join(", ")
            );
        }
        println!("platform      {platform}");
        if let Some(base) = &platform.cgroup_subtree {
            println!("  cgroups in   {}", base.display());
        }
        if let Some(refused) = &platform.cgroup_subtree_refused {
            println!("  no cgroup subtree bcb may write: {refused}");
            println!(
                "  hint: run bcb in a delegated scope, `systemd-run --user --scope -p Delegate=yes bcb …`; without one rlimits stand in for the memory and pids cgroups and no sample is frozen (docs/sandbox.md)"
            );
        }
        let active = protections.iter().filter(|p| p.active).count();
        println!(
            "sandbox       {active} of {} protections active",
            protections.len()
        );
        let width = protections
            .iter()
            .map(|p| p.kind.name().len())
            .max()
            .unwrap_or(0);
        for p in &protections {
            let mark = if p.active { "on " } else { "off" };
            println!("  {mark} {:width$}  {}", p.kind.name(), p.detail);
        }
    }
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
