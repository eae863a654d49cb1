//! The Python evaluation environment (crate `bcb-pyenv`), plus the key verdict caches use for it.

use std::path::Path;

pub use bcb_pyenv::*;

/// Identifies the environment verdicts come from, for cache keys: the lock of the managed env
/// (or the interpreter's path when another one is used) and the harness that drives it.
pub fn runtime_key(python: &Path) -> String {
    let env = if python == env_python(&default_env_dir()) && is_current(&default_env_dir()) {
        format!("lock:{}", lock_digest())
    } else {
        format!("python:{}", python.display())
    };
    format!("{env} harness:{}", crate::launch::harness_digest())
}
