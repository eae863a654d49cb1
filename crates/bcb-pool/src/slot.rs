//! One harness process ("slot"): spawned with a clean environment, driven over fds 3/4.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::Child;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::freeze::{Freezable, Seat, FREEZE_BUDGET};
use crate::schedule::note_spawner;
use crate::zygote::{ForkedSlot, Zygote};
use bcb_executor::{ExecConfig, Job};
use bcb_sandbox::cgroups::{layout, thaw_cgroup};
use bcb_sandbox::isolation::Isolation;
use bcb_sandbox::launch::{drain_stderr, harness_command, stderr_text, READY_TIMEOUT};
use bcb_sandbox::verdict_rules::SlotFailure;
use bcb_sandbox::wire::{
    Control, ControlPipe, Event, JobRequest, ResultMsg, SlotConfig, WireLimits, WIRE_VERSION,
};

/// Everything a slot needs besides the job.
#[derive(Clone)]
pub(crate) struct SlotSpec {
    pub cfg: ExecConfig,
    pub iso: Isolation,
    pub env: Vec<(String, String)>,
    pub preload: Vec<String>,
    pub cgroups: Vec<PathBuf>,
    /// The freezer cgroup among `cgroups`: the sample can be frozen (see `freeze/`).
    pub freezer: Option<PathBuf>,
    /// The cpu cgroup among `cgroups`: the sample's CPU weight follows its role.
    pub cpu: Option<PathBuf>,
    pub workroot: PathBuf,
    pub one_shot: bool,
    /// The harness's entry script on disk (keeps `ps` readable).
    pub harness: PathBuf,
}

enum Incoming {
    Msg(Event),
    Closed,
}

pub(crate) struct Slot {
    process: SlotProcess,
    /// Shared with the governor, which writes freeze/thaw ops.
    ctrl: Arc<ControlPipe>,
    freezer: Option<PathBuf>,
    cpu: Option<PathBuf>,
    events: Receiver<Incoming>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
    pub jobs_done: usize,
    pub dead: bool,
    /// A result came and the slot's `idle` has not: it is still cleaning up after it.
    settling: bool,
    one_shot: bool,
}

/// A slot's process: one we spawned, or one the pool's zygote forked (its child, not ours:
/// a pidfd names it and the zygote reaps it).
enum SlotProcess {
    Spawned(Child),
    Forked(ForkedSlot),
}

impl SlotProcess {
    fn id(&self) -> i32 {
        match self {
            SlotProcess::Spawned(c) => c.id() as i32,
            SlotProcess::Forked(f) => f.pid,
        }
    }

    /// Kills the slot's process group and the slot, and waits for its exit.
    fn kill(&mut self) {
        let pid = self.id();
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        match self {
            SlotProcess::Spawned(c) => {
                let _ = c.kill();
                let _ = c.wait();
            }
            SlotProcess::Forked(f) => {
                f.kill();
                while !f.exited(Duration::from_secs(60)) {}
            }
        }
    }

    fn has_exited(&mut self) -> bool {
        match self {
            SlotProcess::Spawned(c) => matches!(c.try_wait(), Ok(Some(_))),
            SlotProcess::Forked(f) => f.exited(Duration::ZERO),
        }
    }
}

fn cloexec_pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("pipe2");
    }
    unsafe { Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))) }
}

/// Extra time past the supervisor's own kill deadline before the slot itself is killed.
const SLOT_SLACK: Duration = Duration::from_secs(15);

impl Slot {
    /// Spawns a slot; for an extra sample's `seat`, the slot warms up (seconds of imports)
    /// inside its freezer cgroup, so the governor can freeze the warm-up as it would the
    /// sample. The supervisor leaves the cgroup before it says it is ready.
    pub fn spawn_for(spec: &SlotSpec, seat: Option<&Seat>) -> Result<Slot> {
        note_spawner(); // where the demand walk finds the slot
        let warm_in = spec
            .freezer
            .as_ref()
            .filter(|_| seat.is_some_and(Seat::is_extra));
        let join = warm_in
            .map(|d| std::ffi::CString::new(layout().procs(d).as_os_str().as_encoded_bytes()))
            .transpose()?;
        let (job_r, job_w) = cloexec_pipe()?;
        let (ev_r, ev_w) = cloexec_pipe()?;
        let mut child = harness_command(
            &spec.cfg.python,
            &spec.harness,
            &spec.env,
            &spec.workroot,
            &[job_r.as_raw_fd(), ev_w.as_raw_fd()],
            join,
        )
        .spawn()
        .with_context(|| format!("cannot start {}", spec.cfg.python.display()))?;
        drop(job_r);
        drop(ev_w);
        let stderr_tail = drain_stderr(child.stderr.take());
        let process = SlotProcess::Spawned(child);
        Slot::start(spec, process, job_w, ev_r, stderr_tail, warm_in, seat)
    }

    /// A slot forked warm by the pool's zygote (its preloads are the zygote's: `spec`'s own
    /// list only names them again). Nothing to warm up, so no seat to freeze it in.
    pub fn fork_from(zygote: &Zygote, spec: &SlotSpec) -> Result<Slot> {
        let (job_r, job_w) = cloexec_pipe()?;
        let (ev_r, ev_w) = cloexec_pipe()?;
        let (err_r, err_w) = cloexec_pipe()?;
        let forked = zygote.fork(job_r.as_fd(), ev_w.as_fd(), err_w.as_fd())?;
        drop((job_r, ev_w, err_w));
        let stderr_tail = drain_stderr(Some(File::from(err_r)));
        let process = SlotProcess::Forked(forked);
        Slot::start(spec, process, job_w, ev_r, stderr_tail, None, None)
    }

    /// Sends the slot its config and waits until it is ready.
    fn start(
        spec: &SlotSpec,
        process: SlotProcess,
        job_w: OwnedFd,
        ev_r: OwnedFd,
        stderr_tail: Arc<Mutex<VecDeque<u8>>>,
        warm_in: Option<&PathBuf>,
        seat: Option<&Seat>,
    ) -> Result<Slot> {
        let (tx, rx) = mpsc::channel();
        let ev_file = File::from(ev_r);
        std::thread::spawn(move || {
            let reader = BufReader::new(ev_file);
            for line in reader.split(b'\n') {
                let Ok(line) = line else { break };
                match serde_json::from_slice::<Event>(&line) {
                    Ok(ev) => {
                        if tx.send(Incoming::Msg(ev)).is_err() {
                            return;
                        }
                    }
                    Err(e) => tracing::debug!(
                        "unreadable harness event ({e}): {}",
                        String::from_utf8_lossy(&line)
                    ),
                }
            }
            let _ = tx.send(Incoming::Closed);
        });
        let mut slot = Slot {
            process,
            ctrl: Arc::new(ControlPipe::new(File::from(job_w))),
            freezer: spec.freezer.clone(),
            cpu: spec.cpu.clone(),
            events: rx,
            stderr_tail,
            jobs_done: 0,
            dead: false,
            settling: false,
            one_shot: spec.one_shot,
        };
        let limits = &spec.cfg.limits;
        let config = SlotConfig {
            protocol: WIRE_VERSION,
            isolation: &spec.iso,
            limits: WireLimits {
                limits,
                kill_grace_secs: limits.kill_grace.as_secs_f64(),
                memory_rlimit_mb: (spec.iso.cgroup_memory.is_none() && limits.memory_mb > 0)
                    .then_some(limits.memory_mb),
                tmpfs_mb: if limits.memory_mb > 0 {
                    limits.memory_mb
                } else {
                    1024
                },
                freeze_budget_secs: FREEZE_BUDGET.as_secs_f64(),
            },
            env: spec
                .env
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
            preload: &spec.preload,
            cgroups: &spec.cgroups,
            freezer: spec.freezer.as_deref(),
            cgroup_home: spec.freezer.as_deref().map(|f| layout().supervisor_home(f)),
            workroot: &spec.workroot,
            one_shot: spec.one_shot,
            hacks: spec.cfg.hacks.watches(),
        };
        slot.send(&config)?;
        let warming = warm_in.map(|d| Arc::new(Freezable::warming(d.clone())));
        if let (Some(w), Some(seat)) = (&warming, seat) {
            seat.attach(w.clone());
        }
        let ready = slot.wait_ready(warming.as_deref());
        if let Some(seat) = seat.filter(|_| warming.is_some()) {
            seat.detach();
        }
        match ready {
            Ok(Incoming::Msg(Event::Ready {
                preload_failed,
                forked,
            })) => {
                if !preload_failed.is_empty() {
                    tracing::debug!("slot preload failures: {preload_failed:?}");
                }
                tracing::debug!(forked, "slot {} ready", slot.process.id());
                Ok(slot)
            }
            _ => {
                let tail = slot.stderr();
                slot.kill();
                bail!("execution harness did not start: {tail}")
            }
        }
    }

    /// The first event, within [`READY_TIMEOUT`] plus any time the warm-up spent frozen.
    fn wait_ready(&self, warming: Option<&Freezable>) -> Result<Incoming, RecvTimeoutError> {
        let start = Instant::now();
        loop {
            let frozen = warming.map_or(Duration::ZERO, Freezable::frozen_for);
            let left = (READY_TIMEOUT + frozen).saturating_sub(start.elapsed());
            match self.events.recv_timeout(left) {
                Err(RecvTimeoutError::Timeout)
                    if READY_TIMEOUT + warming.map_or(Duration::ZERO, Freezable::frozen_for)
                        > start.elapsed() => {}
                other => return other,
            }
        }
    }

    fn send<T: Serialize>(&mut self, v: &T) -> Result<()> {
        let mut line = serde_json::to_vec(v)?;
        line.push(b'\n');
        self.ctrl
            .write_line(&line)
            .context("harness control pipe")?;
        Ok(())
    }

    pub fn stderr(&self) -> String {
        stderr_text(&self.stderr_tail)
    }

    /// False once the slot's process is gone (it died between jobs, or its zygote did): the
    /// next job then goes to a new slot rather than fail on this one.
    pub fn is_alive(&mut self) -> bool {
        if !self.dead && self.process.has_exited() {
            self.dead = true;
        }
        !self.dead
    }

    /// Kills the slot's whole process group and reaps it.
    pub fn kill(&mut self) {
        self.process.kill();
        if let Some(dir) = &self.freezer {
            thaw_cgroup(dir); // a frozen sample takes no signal: let its kill land
        }
        self.dead = true;
    }

    /// Runs one job; `Err` means the slot itself is unusable (it has been killed). The
    /// sample is attached to `seat` while it runs, so the governor can freeze it.
    pub fn run(&mut self, job: &Job, seat: &Seat) -> Result<ResultMsg, SlotFailure> {
        let sample = self.freezer.clone().map(|dir| {
            Arc::new(Freezable::new(
                dir,
                self.cpu.clone(),
                self.ctrl.clone(),
                self.jobs_done as u64,
            ))
        });
        if let Some(s) = &sample {
            seat.attach(s.clone());
        }
        let out = self.run_attached(job, sample.as_deref());
        seat.detach();
        out
    }

    fn run_attached(
        &mut self,
        job: &Job,
        sample: Option<&Freezable>,
    ) -> Result<ResultMsg, SlotFailure> {
        let frozen = || sample.map_or(Duration::ZERO, Freezable::frozen_for);
        let start = Instant::now();
        self.send(&JobRequest::new(self.jobs_done as u64, job))
            .map_err(|e| {
                self.kill();
                SlotFailure {
                    message: e.to_string(),
                    timed_out: false,
                }
            })?;
        let limit = job.time_limit + SLOT_SLACK + Duration::from_secs(5);
        let mut sample_pid: Option<i32> = None;
        loop {
            // Time the sample spent frozen does not count against it.
            let left = (limit + frozen()).saturating_sub(start.elapsed());
            match self.events.recv_timeout(left) {
                Ok(Incoming::Msg(Event::Started { pid })) => sample_pid = pid,
                Ok(Incoming::Msg(Event::Result(m))) => {
                    self.jobs_done += 1;
                    // A one-shot harness exits after its job instead of saying it is idle.
                    self.settling = !self.one_shot;
                    return Ok(*m);
                }
                Ok(Incoming::Msg(Event::Ready { .. } | Event::Idle { .. })) => {}
                Ok(Incoming::Closed) | Err(RecvTimeoutError::Disconnected) => {
                    if let Some(p) = sample_pid {
                        unsafe { libc::kill(p, libc::SIGKILL) };
                    }
                    let tail = self.stderr();
                    self.kill();
                    return Err(SlotFailure {
                        message: format!("sandbox supervisor died during the sample {tail}"),
                        timed_out: false,
                    });
                }
                Err(RecvTimeoutError::Timeout) if (limit + frozen()) > start.elapsed() => {}
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(p) = sample_pid {
                        unsafe { libc::kill(p, libc::SIGKILL) };
                    }
                    self.kill();
                    return Err(SlotFailure {
                        message: "sandbox supervisor unresponsive past the time limit".into(),
                        timed_out: true,
                    });
                }
            }
        }
    }
}

impl Slot {
    /// Waits until the slot is ready for its next job. A result can come before the sample's
    /// exit is cleaned up (see the harness's `supervisor.py`, `run_job`); a worker that took another job meanwhile
    /// would make it wait behind that cleanup while another slot sat idle. False when the slot
    /// died or hung (it has been killed).
    pub fn settle(&mut self) -> bool {
        if self.dead {
            return false;
        }
        if !self.settling {
            return true; // nothing ran here since the last idle (a cold-path job, say)
        }
        loop {
            match self.events.recv_timeout(SETTLE_TIMEOUT) {
                Ok(Incoming::Msg(Event::Idle {
                    cpu_after_verdict_secs,
                })) => {
                    if let Some(secs) = cpu_after_verdict_secs {
                        // Summed by bench/gt-floors.sh: the samples' CPU to their reap.
                        tracing::debug!(
                            target: crate::targets::STAGES,
                            "after the verdict: {secs:.4} s of CPU"
                        );
                    }
                    self.settling = false;
                    return true;
                }
                Ok(Incoming::Msg(_)) => {}
                Ok(Incoming::Closed) | Err(_) => {
                    tracing::debug!("pool slot did not become idle: {}", self.stderr());
                    self.kill();
                    return false;
                }
            }
        }
    }
}

/// A slot's cleanup after a result: killing leftovers takes at most a few seconds (the harness's
/// `reap.py`, `REAP_SECS`), forking the next process far less.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.dead {
            let _ = self.send(&Control::Exit);
            // Give it a moment to exit cleanly, then make sure.
            let deadline = Instant::now() + Duration::from_millis(500);
            while Instant::now() < deadline {
                if self.process.has_exited() {
                    self.dead = true;
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            self.kill();
        }
    }
}
