//! Which of a pool worker's interpreters runs a job, read from the modules its program and
//! tests import: a cold process for the frameworks that must not be preloaded, the light slot
//! for a job that imports only the standard library (its sample's fork and exit skip the warm
//! slot's ~200 MB of preloads: about 2 ms against 10 or more), the warm slot for the rest.
//! A module the scan misses is imported by the sample itself: slower, never another verdict.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};

use bcb_executor::Job;

/// Where a job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// A fresh interpreter (tensorflow, torch, ...: huge, thread pools at import).
    Cold,
    /// The light slot: nothing but the standard library is imported.
    Light,
    /// The warm slot, with the pool's preloads.
    Warm,
}

/// Frameworks never preloaded and never run in a warm interpreter.
const COLD: &[&str] = &["tensorflow", "torch", "keras", "jax"];

/// The top-level module of every `import a.b, c as d` / `from a.b import x` statement of
/// `src` (indented ones and `;`-separated ones too; a relative import names none).
fn imported_modules(src: &str) -> impl Iterator<Item = &str> {
    src.lines()
        .flat_map(|line| line.split(';'))
        .flat_map(|statement| {
            let s = statement.trim_start();
            let names = if let Some(rest) = s.strip_prefix("import ") {
                rest
            } else if let Some(rest) = s.strip_prefix("from ") {
                rest.split_whitespace().next().unwrap_or("")
            } else {
                ""
            };
            names.split(',').filter_map(|part| {
                let top = part.split_whitespace().next()?.split('.').next()?;
                (!top.is_empty()).then_some(top)
            })
        })
}

/// The route of `job`; `stdlib` holds the eval interpreter's standard-library module names
/// (empty when unknown: then nothing takes the light slot).
pub(crate) fn route(job: &Job, stdlib: &HashSet<String>) -> Route {
    let mut light = !stdlib.is_empty();
    for module in imported_modules(&job.code).chain(imported_modules(&job.test)) {
        if COLD.contains(&module) {
            return Route::Cold;
        }
        light = light && stdlib.contains(module);
    }
    if light {
        Route::Light
    } else {
        Route::Warm
    }
}

/// The standard library's module names as `python` knows them (`sys.stdlib_module_names`,
/// Python 3.10 and later); empty when it cannot tell.
pub(crate) fn stdlib_modules(python: &Path) -> HashSet<String> {
    let out = Command::new(python)
        .args([
            "-I",
            "-c",
            "import sys; print('\\n'.join(sys.stdlib_module_names))",
        ])
        .env_clear()
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect(),
        _ => {
            tracing::debug!(
                "{}: no sys.stdlib_module_names: no light slot",
                python.display()
            );
            HashSet::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bcb_executor::Program;

    fn job(code: &str, test: &str) -> Job {
        Job::for_test("BigCodeBench/0", Program::GroundTruth, code, test)
    }

    fn stdlib() -> HashSet<String> {
        ["os", "re", "unittest", "json", "collections"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn modules_of_every_import_form() {
        let src = "import os, re as r\nfrom collections.abc import Mapping\n  import numpy.linalg as la\nfrom . import x\nimport json; import pandas\n# imports nothing\n";
        let mods: Vec<&str> = imported_modules(src).collect();
        assert_eq!(mods, ["os", "re", "collections", "numpy", "json", "pandas"]);
    }

    #[test]
    fn routes() {
        let test = "import unittest\nclass TestCases(unittest.TestCase): pass\n";
        let std = stdlib();
        assert_eq!(route(&job("import os, re\n", test), &std), Route::Light);
        assert_eq!(
            route(&job("import os\nimport pandas as pd\n", test), &std),
            Route::Warm
        );
        // A test that imports a third-party module takes the warm slot too.
        assert_eq!(
            route(&job("import os\n", "import numpy\nimport unittest\n"), &std),
            Route::Warm
        );
        assert_eq!(
            route(
                &job("import os\nfrom tensorflow import keras\n", test),
                &std
            ),
            Route::Cold
        );
        assert_eq!(
            route(&job("import json\n", test), &HashSet::new()),
            Route::Warm
        );
    }
}
