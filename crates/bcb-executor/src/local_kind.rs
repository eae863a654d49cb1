//! Which local backend runs the samples: a value the CLI parses, the spec names and a remote
//! E2B sandbox is told to use.

use std::fmt;
use std::str::FromStr;

/// How the local backend runs each sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LocalKind {
    /// Pre-warmed interpreters that fork one sandboxed child per sample.
    #[default]
    Pool,
    /// A fresh interpreter per sample (same sandbox).
    Process,
}

impl FromStr for LocalKind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s {
            "pool" => Ok(LocalKind::Pool),
            "process" => Ok(LocalKind::Process),
            other => anyhow::bail!("unknown executor `{other}`: expected `pool` or `process`"),
        }
    }
}

impl fmt::Display for LocalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LocalKind::Pool => "pool",
            LocalKind::Process => "process",
        })
    }
}
