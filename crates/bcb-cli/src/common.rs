//! Pieces every command shares: dataset flags, logging, legacy flag spellings.

use bcb_envvars::EnvVars;
use std::ffi::OsString;
use std::path::PathBuf;

use bcb_dataset::{DatasetSpec, Subset};

/// Flags that choose the dataset; flattened into every command that needs tasks.
#[derive(clap::Args, Debug, Clone)]
pub struct DatasetArgs {
    /// Subset: `full` (1,140 tasks) or `hard` (148).
    #[arg(long, default_value = "full")]
    pub subset: Subset,
    /// Dataset version (v0.1.0_hf .. v0.1.5).
    #[arg(long, value_parser = bcb_dataset::parse_version, default_value = bcb_dataset::DEFAULT_VERSION)]
    pub version: String,
    /// A dataset file (JSONL or JSONL.gz) to use instead of the named version.
    #[arg(long, value_name = "PATH", env = EnvVars::BIGCODEBENCH_OVERRIDE_PATH)]
    pub dataset: Option<PathBuf>,
    /// Directory of files named like `bigcodebench[-hard]-{version}.jsonl.gz`.
    #[arg(long, value_name = "DIR", env = EnvVars::BCB_DATASET_DIR)]
    pub dataset_dir: Option<PathBuf>,
    /// Never download; use only local files and the cache.
    #[arg(long, env = EnvVars::BCB_OFFLINE, value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub offline: bool,
    /// Hugging Face hub address (for mirrors and tests).
    #[arg(
        long,
        env = EnvVars::HF_ENDPOINT,
        default_value = "https://huggingface.co",
        hide = true
    )]
    pub hub_endpoint: String,
}

impl DatasetArgs {
    pub fn spec(&self) -> DatasetSpec {
        let mut spec = DatasetSpec::new(self.subset, Some(&self.version));
        spec.path = self.dataset.clone();
        spec.dataset_dir = self.dataset_dir.clone();
        spec.offline = self.offline || spec.offline;
        spec.hub_endpoint = self.hub_endpoint.clone();
        spec
    }
}

/// The original's positional arguments (python-fire fills parameters in order), per command.
fn positional_names(command: &str) -> &'static [&'static str] {
    match command {
        "generate" => &["model", "split", "subset", "root"],
        "evaluate" => &["split", "subset", "samples"],
        "sanitize" | "syncheck" => &["samples"],
        _ => &[],
    }
}

/// How a long flag of ours takes its value.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// `--x` alone (clap `SetTrue`).
    Switch,
    /// `--x`, `--x true|false` (an optional boolean value).
    OptionalBool,
    /// `--x VALUE`.
    Value,
    /// `--x VALUE...` (several values, e.g. `--samples A.jsonl B.jsonl`).
    Values,
    /// `--x` alone, repeatable (counts).
    Count,
}

fn fire_bool(s: &str) -> Option<bool> {
    match s {
        "True" | "true" => Some(true),
        "False" | "false" => Some(false),
        _ => None,
    }
}

/// The long flags (and aliases) of `bcb <command>` and how each takes its value.
fn flag_kinds(command: &str) -> std::collections::HashMap<String, Kind> {
    use clap::CommandFactory;
    let root = crate::Cli::command();
    let mut kinds = std::collections::HashMap::new();
    let sub = root.find_subcommand(command);
    for arg in root
        .get_arguments()
        .chain(sub.into_iter().flat_map(|c| c.get_arguments()))
    {
        let Some(long) = arg.get_long() else { continue };
        // Our optional booleans are the only flags whose value may be left out.
        let optional_value = arg
            .get_num_args()
            .is_some_and(|r| r.min_values() == 0 && r.max_values() == 1);
        let kind = match arg.get_action() {
            _ if optional_value => Kind::OptionalBool,
            clap::ArgAction::SetTrue | clap::ArgAction::SetFalse => Kind::Switch,
            clap::ArgAction::Count => Kind::Count,
            a if a.takes_values() && arg.get_num_args().is_some_and(|r| r.max_values() > 1) => {
                Kind::Values
            }
            a if a.takes_values() => Kind::Value,
            _ => Kind::Switch,
        };
        for name in std::iter::once(long).chain(arg.get_all_aliases().unwrap_or_default()) {
            kinds.insert(name.to_string(), kind);
        }
    }
    kinds
}

/// Rewrites the original's (python-fire) spellings into ours before clap parses them, for
/// every command: `--pass_k` → `--pass-k`; booleans as `--x`, `--nox`, `--x True|False`,
/// `--x=True|False` (`False` on a switch becomes its `--no-x` twin or is dropped, as the
/// default is already off); and positional arguments in the original's parameter order
/// (`bcb sanitize x.jsonl` → `--samples x.jsonl`). Unknown flags pass through for clap to
/// report.
pub fn normalize_legacy_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let args: Vec<OsString> = args.into_iter().collect();
    let command = args
        .iter()
        .skip(1)
        .find(|a| !a.to_string_lossy().starts_with('-'))
        .map(|a| a.to_string_lossy().to_string())
        .unwrap_or_default();
    let kinds = flag_kinds(&command);
    let positional = positional_names(&command);
    let mut next_positional = 0;
    let mut seen_command = false;
    let mut out: Vec<OsString> = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if out.is_empty() {
            out.push(arg.clone()); // the program name
            continue;
        }
        let Some(s) = arg.to_str() else {
            out.push(arg.clone());
            continue;
        };
        if s == "--" {
            out.extend(args[i - 1..].iter().cloned());
            break;
        }
        let Some(body) = s.strip_prefix("--") else {
            if !seen_command && !s.starts_with('-') {
                seen_command = true;
            } else if seen_command && !s.starts_with('-') && next_positional < positional.len() {
                out.push(OsString::from(format!("--{}", positional[next_positional])));
                next_positional += 1;
            }
            out.push(arg.clone());
            continue;
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n.replace('_', "-"), Some(v.to_string())),
            None => (body.replace('_', "-"), None),
        };
        // python-fire negation: `--nocalibrated` = `--calibrated=False`.
        let (name, negated) = match name.strip_prefix("no") {
            Some(rest) if !kinds.contains_key(&name) && !rest.is_empty() => {
                let rest = rest.trim_start_matches('-').to_string();
                if kinds.contains_key(&format!("no-{rest}")) {
                    (format!("no-{rest}"), false)
                } else if kinds.contains_key(&rest) {
                    (rest, true)
                } else {
                    (name, false)
                }
            }
            _ => (name, false),
        };
        let kind = kinds.get(&name).copied();
        match kind {
            Some(Kind::Switch) | Some(Kind::OptionalBool) => {
                // The value: inline, a following True/False, or implied.
                let mut value = match &inline {
                    Some(v) => fire_bool(v),
                    None => match args.get(i).and_then(|a| a.to_str()).and_then(fire_bool) {
                        Some(b) => {
                            i += 1;
                            Some(b)
                        }
                        None => None,
                    },
                };
                if inline.is_some() && value.is_none() {
                    // Not a boolean literal: leave it for clap to explain.
                    out.push(OsString::from(format!(
                        "--{name}={}",
                        inline.unwrap_or_default()
                    )));
                    continue;
                }
                if negated {
                    value = Some(!value.unwrap_or(true));
                }
                match (kind, value) {
                    (Some(Kind::OptionalBool), Some(b)) => {
                        out.push(OsString::from(format!("--{name}={b}")))
                    }
                    (_, None | Some(true)) => out.push(OsString::from(format!("--{name}"))),
                    (_, Some(false)) => {
                        // A switch set to False: its `--no-x` twin, its positive form, or nothing.
                        if kinds.get(&format!("no-{name}")) == Some(&Kind::Switch) {
                            out.push(OsString::from(format!("--no-{name}")));
                        } else if let Some(pos) = name.strip_prefix("no-") {
                            if kinds.get(pos) == Some(&Kind::Switch) {
                                out.push(OsString::from(format!("--{pos}")));
                            } else if kinds.get(pos) == Some(&Kind::OptionalBool) {
                                out.push(OsString::from(format!("--{pos}=true")));
                            }
                        }
                    }
                }
            }
            Some(Kind::Values) => {
                out.push(OsString::from(format!("--{name}")));
                out.extend(inline.map(OsString::from));
                // Its values (up to the next flag) are never positional arguments.
                while let Some(v) = args
                    .get(i)
                    .filter(|a| !a.to_string_lossy().starts_with('-'))
                {
                    out.push(v.clone());
                    i += 1;
                }
            }
            Some(Kind::Value) => {
                match inline {
                    Some(v) => out.push(OsString::from(format!("--{name}={v}"))),
                    None => {
                        out.push(OsString::from(format!("--{name}")));
                        // Its value is never a positional argument.
                        if let Some(v) = args.get(i) {
                            out.push(v.clone());
                            i += 1;
                        }
                    }
                }
            }
            // `--verbose True` (Fire) is one more `-v`; `False` is none.
            Some(Kind::Count) => match inline
                .as_deref()
                .or_else(|| args.get(i).and_then(|a| a.to_str()))
                .and_then(fire_bool)
            {
                Some(b) => {
                    if inline.is_none() {
                        i += 1;
                    }
                    if b {
                        out.push(OsString::from(format!("--{name}")));
                    }
                }
                None => out.push(arg.clone()),
            },
            None => match inline {
                Some(v) => out.push(OsString::from(format!("--{name}={v}"))),
                None => out.push(OsString::from(format!("--{name}"))),
            },
        }
    }
    out
}

/// A time between progress lines in seconds (`--progress-interval`): any positive finite
/// number, sub-second too; anything else is refused at parse time, never clamped in silence.
pub fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|e| format!("not a number of seconds: {e}"))?;
    match std::time::Duration::try_from_secs_f64(secs) {
        // Under a nanosecond it would be a zero interval: progress lines without end.
        Ok(interval) if !interval.is_zero() => Ok(interval),
        _ => Err("seconds must be a positive finite number".into()),
    }
}

/// Colour only for a terminal, and never with `NO_COLOR` set (https://no-color.org).
pub fn colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
        && std::env::var_os(EnvVars::NO_COLOR).is_none_or(|v| v.is_empty())
}

pub fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env(EnvVars::BCB_LOG)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour_on_stderr())
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// Writes a line to stderr, ignoring a closed one (the reader of our output gone, as a killed
/// `podman build` or ssh session leaves it), where `eprintln!` would panic.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Ctrl-C, SIGTERM and SIGHUP stop the run whole: every local sample is thawed and killed
/// and its cgroups removed (`bcb_execute::stop`), then bcb exits with 130. Each finished
/// verdict is already in the journal, so the same command resumes. A remote run that ends
/// itself (E2B kills its sandbox) is waited for; a second signal exits at once. `bcb serve`
/// drains on these signals instead (its own handler).
pub fn stop_on_interrupt() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static SEEN: AtomicBool = AtomicBool::new(false);
    let installed = ctrlc::set_handler(|| {
        if SEEN.swap(true, Ordering::SeqCst) {
            bcb_execute::stop::request();
            bcb_execute::stop::exiting();
            std::process::exit(130);
        }
        // A panic here would kill the handler's thread, after which no signal ends the run.
        say("bcb: interrupted: stopping every sample (what finished is in the journal; the same command resumes)");
        if bcb_execute::stop::request() == bcb_execute::stop::AfterStop::Exit {
            std::process::exit(130);
        }
    });
    if let Err(e) = installed {
        tracing::warn!("cannot catch interrupts ({e}): an interrupted run may leave samples behind until the next bcb starts");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_interval_takes_positive_finite_seconds_only() {
        use std::time::Duration;
        assert_eq!(parse_interval("0.1"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_interval("30"), Ok(Duration::from_secs(30)));
        for bad in ["0", "-1", "1e-300", "inf", "NaN", "1e400", "soon", ""] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }

    fn norm(args: &[&str]) -> Vec<String> {
        normalize_legacy_args(args.iter().map(OsString::from))
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect()
    }

    #[test]
    fn every_command_line_definition_is_valid() {
        // Flattened argument sets (ModelArgs into evaluate) must not clash.
        use clap::CommandFactory;
        crate::Cli::command().debug_assert();
    }

    #[test]
    fn legacy_spellings_are_rewritten() {
        assert_eq!(
            norm(&[
                "bcb",
                "evaluate",
                "--pass_k",
                "1,5",
                "--check_gt_only",
                "--max_as_limit=100",
                "--nocalibrated",
                "--samples",
                "x_y",
            ]),
            [
                "bcb",
                "evaluate",
                "--pass-k",
                "1,5",
                "--check-gt-only",
                "--max-as-limit=100",
                "--no-calibrated",
                "--samples",
                "x_y"
            ]
        );
    }

    #[test]
    fn fire_booleans_work_for_every_form() {
        let g = |extra: &[&str]| {
            let mut a = vec!["bcb", "generate"];
            a.extend_from_slice(extra);
            norm(&a)[2..].to_vec()
        };
        assert_eq!(g(&["--greedy=True"]), ["--greedy"]);
        assert_eq!(g(&["--greedy", "True"]), ["--greedy"]);
        assert_eq!(g(&["--greedy", "False"]), Vec::<String>::new());
        assert_eq!(g(&["--nogreedy"]), Vec::<String>::new());
        assert_eq!(g(&["--resume", "False"]), ["--no-resume"]);
        assert_eq!(g(&["--resume=False"]), ["--no-resume"]);
        assert_eq!(g(&["--noresume"]), ["--no-resume"]);
        assert_eq!(g(&["--resume", "True"]), ["--resume"]);
        assert_eq!(
            g(&["--skip_prefill", "--trust_remote_code=True"]),
            ["--skip-prefill", "--trust-remote-code"]
        );
        let e = |extra: &[&str]| {
            let mut a = vec!["bcb", "evaluate"];
            a.extend_from_slice(extra);
            norm(&a)[2..].to_vec()
        };
        assert_eq!(e(&["--no_gt", "True"]), ["--no-gt"]);
        assert_eq!(e(&["--no_gt=False"]), Vec::<String>::new());
        assert_eq!(e(&["--calibrated", "False"]), ["--calibrated=false"]);
        assert_eq!(e(&["--calibrated=True"]), ["--calibrated=true"]);
        assert_eq!(e(&["--nosave_pass_rate"]), ["--no-save-pass-rate"]);
        assert_eq!(e(&["--check_gt_only", "True"]), ["--check-gt-only"]);
        // A value that is not True/False stays for clap to reject with its own message.
        assert_eq!(e(&["--no_gt=maybe"]), ["--no-gt=maybe"]);
        assert_eq!(e(&["--verbose", "True"]), ["--verbose"]);
        assert_eq!(e(&["--verbose=False"]), Vec::<String>::new());
    }

    #[test]
    fn several_samples_files_are_values_not_positionals() {
        assert_eq!(
            norm(&[
                "bcb",
                "evaluate",
                "--samples",
                "a.jsonl",
                "b.jsonl",
                "--no_gt"
            ]),
            [
                "bcb",
                "evaluate",
                "--samples",
                "a.jsonl",
                "b.jsonl",
                "--no-gt"
            ]
        );
    }

    #[test]
    fn positional_arguments_take_the_original_parameter_order() {
        assert_eq!(
            norm(&["bcb", "sanitize", "x.jsonl", "--calibrate"]),
            ["bcb", "sanitize", "--samples", "x.jsonl", "--calibrate"]
        );
        assert_eq!(
            norm(&[
                "bcb",
                "evaluate",
                "instruct",
                "hard",
                "--samples",
                "s.jsonl"
            ]),
            [
                "bcb",
                "evaluate",
                "--split",
                "instruct",
                "--subset",
                "hard",
                "--samples",
                "s.jsonl"
            ]
        );
        // A flag's value is not taken for a positional argument.
        assert_eq!(
            norm(&[
                "bcb",
                "generate",
                "--backend",
                "openai",
                "gpt-4o",
                "instruct",
                "hard"
            ]),
            [
                "bcb",
                "generate",
                "--backend",
                "openai",
                "--model",
                "gpt-4o",
                "--split",
                "instruct",
                "--subset",
                "hard"
            ]
        );
    }
}
