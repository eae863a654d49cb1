//! `bcb-pyenv setup [--background] [--env-dir DIR] [--base-python PY] [--force] [--no-nltk]`:
//! `bcb env setup` in a binary that builds in seconds, so the README's main command can start
//! the eval env's install (minutes of downloads) before the rest of bcb compiles. Flags are
//! parsed by hand: clap would add most of this crate's build time.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use bcb_pyenv::SetupRequest;
use bcb_pyenv::{default_env_dir, env_python, report_lines, setup_with_data, spawn_background};

const USAGE: &str = "usage: bcb-pyenv setup [--background] [--env-dir DIR] [--base-python PYTHON] [--force] [--no-nltk]";

#[derive(Debug)]
struct Args {
    background: bool,
    req: SetupRequest,
}

fn parse(mut it: impl Iterator<Item = OsString>) -> Result<Args, String> {
    if it.next().as_deref() != Some("setup".as_ref()) {
        return Err(USAGE.into());
    }
    let mut background = false;
    let mut req = SetupRequest {
        dir: default_env_dir(),
        base_python: PathBuf::from("python3.11"),
        force: false,
        nltk: true,
    };
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .map(PathBuf::from)
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.to_str() {
            Some("--background") => background = true,
            Some("--force") => req.force = true,
            Some("--no-nltk") => req.nltk = false,
            Some("--env-dir") => req.dir = value("--env-dir")?,
            Some("--base-python") => req.base_python = value("--base-python")?,
            Some("-h" | "--help") => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument {arg:?}\n{USAGE}")),
        }
    }
    Ok(Args { background, req })
}

#[allow(clippy::print_stderr)]
fn main() -> ExitCode {
    let args = match parse(std::env::args_os().skip(1)) {
        Ok(a) => a,
        Err(text) => {
            eprintln!("{text}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[allow(clippy::print_stderr, clippy::print_stdout)]
fn run(args: &Args) -> anyhow::Result<()> {
    let req = &args.req;
    if args.background {
        let started = spawn_background(req, &std::env::current_exe()?, &["setup"])?;
        eprintln!("{}", started.describe(&req.dir));
        return Ok(());
    }
    let report = setup_with_data(req, &mut |s| eprintln!("{s}"))?;
    for line in report_lines(&req.dir, &report) {
        eprintln!("{line}");
    }
    println!("{}", env_python(&req.dir).display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Result<Args, String> {
        parse(v.iter().map(OsString::from))
    }

    #[test]
    fn flags_parse_and_mistakes_name_the_argument() {
        let a = args(&["setup", "--background", "--env-dir", "/e", "--no-nltk"]).unwrap();
        assert!(a.background && !a.req.nltk && !a.req.force);
        assert_eq!(a.req.dir, PathBuf::from("/e"));
        assert!(args(&["setup", "--bogus"]).unwrap_err().contains("--bogus"));
        assert!(args(&["setup", "--env-dir"])
            .unwrap_err()
            .contains("needs a value"));
        assert!(args(&["install"]).unwrap_err().starts_with("usage:"));
    }
}
