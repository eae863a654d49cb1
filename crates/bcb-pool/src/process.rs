//! Fresh interpreter per sample (the reference path; also the pool's cold path).

use bcb_envvars::EnvVars;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::freeze::Seat;
use crate::schedule::{default_max_in_flight, run_queue, Admission};
use crate::slot::{Slot, SlotSpec};
use bcb_executor::intake::{JobSource, OnServed};
use bcb_executor::{ExecConfig, ExecError, Job, Outcome};
use bcb_sandbox::cgroups::SlotCgroups;
use bcb_sandbox::isolation::Isolation;
use bcb_sandbox::launch::{sample_env, write_harness};
use bcb_sandbox::verdict_rules::{read_job_result, slot_failure, Reading};
use bcb_sandbox::workroot::WorkRoot;

/// What both executors share: config, probed isolation, environment, a private work root.
pub(crate) struct Base {
    pub cfg: ExecConfig,
    pub iso: Isolation,
    pub env: Vec<(String, String)>,
    root: WorkRoot,
    /// The harness's entry script, written into `root` (`python -I` runs it).
    harness: PathBuf,
}

fn mplconfig_dir() -> PathBuf {
    let cache = std::env::var_os(EnvVars::XDG_CACHE_HOME)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os(EnvVars::HOME).map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache
        .join("bcb")
        .join(format!("mplconfig-uid{}", unsafe { libc::geteuid() }))
}

impl Base {
    pub fn new(cfg: ExecConfig, iso: Isolation) -> Result<Base> {
        if !cfg.python.exists() {
            bail!(
                "evaluation Python {} does not exist (set BCB_PYTHON or --python)",
                cfg.python.display()
            );
        }
        // Samples running as the same uid without a PID namespace could otherwise read our
        // environment (secrets) through /proc/<pid>/environ.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
        let iso = iso.for_python(&cfg.python);
        let root = WorkRoot::create().context("cannot create a work directory")?;
        if iso.uid_switch && !iso.mountns {
            // Without a private root the sample (uid 65534) works in a dir under this one.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o711))?;
        }
        let mut mpl = mplconfig_dir();
        if std::fs::create_dir_all(&mpl).is_err() {
            // e.g. a user without a home: a per-run cache still beats one per sample
            mpl = root.path().join("mplconfig");
            std::fs::create_dir_all(&mpl)?;
        }
        static ANNOUNCED: std::sync::Once = std::sync::Once::new();
        ANNOUNCED.call_once(|| {
            tracing::info!("sample isolation: {}", iso.in_force(&cfg).join("; "));
        });
        let env = sample_env(&cfg.python, &mpl);
        warm_matplotlib_cache(&cfg.python, &env, &mpl)?;
        let harness = write_harness(root.path()).context("cannot write the execution harness")?;
        Ok(Base {
            cfg,
            iso,
            env,
            root,
            harness,
        })
    }

    /// Who may start a sample: `parallel` always, more while the CPUs idle. Samples beyond
    /// `parallel` are frozen whenever they would take a core from the others; where no
    /// freezer cgroup exists, none start by default (an explicit `--max-in-flight` still
    /// overlaps, unguarded).
    pub fn admission(&self) -> Admission {
        let max = match self.cfg.max_in_flight {
            0 if self.iso.cgroup_freezer.is_none() => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    tracing::info!(
                        "no freezer cgroup: no sample runs beyond --parallel (an explicit --max-in-flight overlaps without the guard)"
                    )
                });
                self.cfg.parallel
            }
            0 => default_max_in_flight(self.cfg.parallel),
            n => n,
        };
        Admission::new(self.cfg.parallel, max, self.cfg.limits.memory_mb)
    }

    /// The harness's entry script on disk (`python -I` runs it).
    pub fn harness(&self) -> PathBuf {
        self.harness.clone()
    }

    /// The private work root (a slot's own dir is under it).
    pub fn workroot(&self) -> PathBuf {
        self.root.path().to_path_buf()
    }

    /// The slot spec and cgroups for worker `w` (`tag` keeps pool and cold dirs apart).
    pub fn spec(
        &self,
        tag: &str,
        preload: &[&str],
        one_shot: bool,
    ) -> Result<(SlotSpec, SlotCgroups)> {
        let workroot = self.root.path().join(tag);
        std::fs::create_dir_all(&workroot)?;
        let cgroups = SlotCgroups::create(&self.iso.cgroup_roots(), &self.cfg, tag);
        let spec = SlotSpec {
            cfg: self.cfg.clone(),
            iso: self.iso.clone(),
            env: self.env.clone(),
            preload: preload.iter().map(|s| s.to_string()).collect(),
            cgroups: cgroups.dirs.clone(),
            freezer: cgroups.freezer.clone(),
            cpu: cgroups.cpu.clone(),
            workroot,
            one_shot,
            harness: self.harness(),
        };
        Ok((spec, cgroups))
    }
}

/// Matplotlib builds its font cache on first import (seconds); do it once, outside the
/// sandbox, so sandboxed samples find it read-only.
fn warm_matplotlib_cache(python: &Path, env: &[(String, String)], dir: &Path) -> Result<()> {
    let has_cache = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("fontlist"))
        })
        .unwrap_or(false);
    if has_cache {
        return Ok(());
    }
    let status = Command::new(python)
        .args(["-I", "-c", "import matplotlib.pyplot"])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .with_context(|| format!("cannot run {}", python.display()))?;
    if !status.success() {
        tracing::warn!("`import matplotlib.pyplot` failed in {}", python.display());
    }
    Ok(())
}

/// Runs one job in a fresh harness process.
pub(crate) fn run_cold(spec: &SlotSpec, job: &Job, seat: &Seat) -> Result<Outcome, ExecError> {
    let start = Instant::now();
    let mut slot =
        Slot::spawn_for(spec, Some(seat)).map_err(|e| ExecError::transient(format!("{e:#}")))?;
    let out = match slot.run(job, seat) {
        Ok(msg) => {
            match read_job_result(job, &msg, start.elapsed().as_secs_f64(), spec.cfg.hacks) {
                Reading::Done(o) | Reading::Abnormal(o) => o,
            }
        }
        Err(f) => slot_failure(&f, start.elapsed().as_secs_f64())?,
    };
    drop(slot);
    Ok(Outcome {
        wall_secs: start.elapsed().as_secs_f64(),
        ..out
    })
}

/// One fresh Python process per sample, at most `parallel` at once.
pub struct ProcessExecutor {
    base: Base,
}

impl ProcessExecutor {
    /// With an explicit isolation level (e.g. [`Isolation::degraded`]).
    pub fn with_isolation(cfg: ExecConfig, iso: Isolation) -> Result<Self> {
        Ok(ProcessExecutor {
            base: Base::new(cfg, iso)?,
        })
    }

    /// Runs what `source` hands out (`jobs` of them, when known) until it closes.
    fn serve_upto(&self, source: &dyn JobSource, jobs: Option<usize>, done: &OnServed) {
        let make = |w: usize, _primary: bool| self.base.spec(&format!("p{w}"), &[], true);
        let step = |state: &mut Result<(SlotSpec, SlotCgroups)>, job: &Job, seat: &Seat| match state
        {
            Ok((spec, _)) => run_cold(spec, job, seat),
            Err(e) => setup_failure(e),
        };
        run_queue(
            source,
            jobs,
            self.base.admission(),
            &make,
            &step,
            &|_| {},
            done,
        );
    }
}

local_executor!(ProcessExecutor, "process",);

/// A worker that could not be set up (work directory, cgroups): no job can run there.
pub(crate) fn setup_failure(e: &anyhow::Error) -> Result<Outcome, ExecError> {
    Err(ExecError::fatal(
        format!("cannot set up a local worker: {e:#}"),
        "check that the temporary directory is writable and `bcb env check` passes",
    ))
}
