//! Pre-warmed pool: one long-lived interpreter per worker, one sandboxed fork per sample.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::freeze::Seat;
use crate::process::{run_cold, setup_failure, Base};
use crate::route::{route, stdlib_modules, Route};
use crate::schedule::run_queue;
use crate::slot::{Slot, SlotSpec};
use crate::targets::STAGES;
use crate::zygote::Zygote;
use bcb_executor::intake::{JobSource, OnServed};
use bcb_executor::{ExecConfig, ExecError, Job, Outcome, Remark};
use bcb_sandbox::cgroups::SlotCgroups;
use bcb_sandbox::isolation::Isolation;
use bcb_sandbox::launch::{LIGHT_PRELOAD, PRELOAD};
use bcb_sandbox::verdict_rules::{read_job_result, slot_failure, Reading};

/// Fresh slot after this many samples (bounds any slow drift in the supervisor).
const RECYCLE_AFTER: usize = 400;

pub struct PoolExecutor {
    base: Base,
    /// Warm interpreters started so far (a warm executor starts them once, not per run).
    slots_started: AtomicUsize,
    /// Of those, the ones the zygote forked (the others imported their preloads themselves).
    slots_forked: AtomicUsize,
    /// Light interpreters started so far ([`Route::Light`]), apart from the warm ones.
    light_slots_started: AtomicUsize,
    /// Warm every worker as serving starts ([`Executor::warm_every_worker`]).
    warm_every: AtomicBool,
    /// Workers of the serving loop still warming up ([`Executor::wait_warm`]).
    warming: WarmGate,
    /// The eval interpreter's standard-library modules: which jobs the light slot takes.
    stdlib: OnceLock<HashSet<String>>,
}

/// Counts the workers of [`Executor::serve`] still warming up, for whoever waits on them.
#[derive(Default)]
struct WarmGate {
    /// `None` until serving began.
    pending: Mutex<Option<usize>>,
    changed: Condvar,
}

impl WarmGate {
    fn expect(&self, workers: usize) {
        *self.pending.lock().unwrap() = Some(workers);
        self.changed.notify_all();
    }

    fn one_warm(&self) {
        if let Some(n) = self.pending.lock().unwrap().as_mut() {
            *n = n.saturating_sub(1);
        }
        self.changed.notify_all();
    }

    fn wait(&self, within: Duration) -> bool {
        let pending = self.pending.lock().unwrap();
        let (pending, _) = self
            .changed
            .wait_timeout_while(pending, within, |p| p.is_none_or(|n| n > 0))
            .unwrap();
        *pending == Some(0)
    }
}

impl PoolExecutor {
    /// With an explicit isolation level (e.g. [`Isolation::degraded`]).
    pub fn with_isolation(cfg: ExecConfig, iso: Isolation) -> Result<Self> {
        Ok(PoolExecutor {
            base: Base::new(cfg, iso)?,
            slots_started: AtomicUsize::new(0),
            slots_forked: AtomicUsize::new(0),
            light_slots_started: AtomicUsize::new(0),
            warm_every: AtomicBool::new(false),
            warming: WarmGate::default(),
            stdlib: OnceLock::new(),
        })
    }

    /// Warm interpreters started so far: first use, recycling after many samples, and
    /// replacing a dead one. Serving over time ([`Executor::serve`]) keeps them; each
    /// [`Executor::run`] starts its own.
    pub fn slots_started(&self) -> usize {
        self.slots_started.load(Ordering::Relaxed)
    }

    fn stdlib_modules(&self) -> &HashSet<String> {
        self.stdlib
            .get_or_init(|| stdlib_modules(&self.base.cfg.python))
    }

    /// Of [`Self::slots_started`], those forked warm by the session's zygote.
    pub fn slots_forked(&self) -> usize {
        self.slots_forked.load(Ordering::Relaxed)
    }

    /// Light interpreters (no preloads, for jobs of the standard library alone) started so far.
    pub fn light_slots_started(&self) -> usize {
        self.light_slots_started.load(Ordering::Relaxed)
    }

    /// A light slot: started afresh, with nothing of the zygote's to share.
    fn spawn_light_slot(&self, spec: &SlotSpec, seat: Option<&Seat>) -> Result<Slot> {
        self.light_slots_started.fetch_add(1, Ordering::Relaxed);
        Slot::spawn_for(spec, seat)
    }

    /// A warm slot: forked by the zygote, or (without one, or when it failed) started afresh.
    fn spawn_slot(
        &self,
        spec: &SlotSpec,
        seat: Option<&Seat>,
        zygote: Option<&Zygote>,
    ) -> Result<Slot> {
        self.slots_started.fetch_add(1, Ordering::Relaxed);
        if let Some(z) = zygote {
            match Slot::fork_from(z, spec) {
                Ok(slot) => {
                    self.slots_forked.fetch_add(1, Ordering::Relaxed);
                    return Ok(slot);
                }
                Err(e) => {
                    static SAID: std::sync::Once = std::sync::Once::new();
                    SAID.call_once(|| {
                        tracing::warn!(
                            "the pool's zygote failed ({e:#}): slots import their own preloads"
                        );
                    });
                }
            }
        }
        Slot::spawn_for(spec, seat)
    }

    /// The session's zygote, importing the preloads while the workers start.
    fn zygote(&self) -> Option<Zygote> {
        let (python, env) = (&self.base.cfg.python, &self.base.env);
        let preload: Vec<String> = PRELOAD.iter().map(|s| s.to_string()).collect();
        Zygote::spawn(
            python,
            &self.base.harness(),
            env,
            &self.base.workroot(),
            &preload,
        )
        .inspect_err(|e| tracing::warn!("the pool's zygote did not start: {e:#}"))
        .ok()
    }
}

struct Worker {
    warm: SlotSpec,
    cold: SlotSpec,
    light: SlotSpec,
    slot: Option<Slot>,
    /// Started on the first job that imports only the standard library ([`Route::Light`]).
    light_slot: Option<Slot>,
    _cgroups: SlotCgroups,
    /// The light slot's own, for the same reason as the cold path's.
    _light_cgroups: SlotCgroups,
    /// The cold path's own: its cleanup kills everything in its cgroups, and the warm slot's
    /// next sample process waits in the warm ones meanwhile (forked ahead).
    _cold_cgroups: SlotCgroups,
}

impl PoolExecutor {
    /// A worker; its slot warms up now when `warm_now` (so the first sample does not wait
    /// on imports), else on first use.
    fn worker(&self, w: usize, warm_now: bool, zygote: Option<&Zygote>) -> Result<Worker> {
        let (warm, cgroups) = self.base.spec(&format!("w{w}"), PRELOAD, false)?;
        let (cold, cold_cgroups) = self.base.spec(&format!("w{w}-cold"), &[], true)?;
        let (light, light_cgroups) =
            self.base
                .spec(&format!("w{w}-light"), LIGHT_PRELOAD, false)?;
        let started = |slot: Result<Slot>| {
            slot.inspect_err(|e| tracing::warn!("pool slot failed to start: {e:#}"))
                .ok()
        };
        let slot = warm_now
            .then(|| started(self.spawn_slot(&warm, None, zygote)))
            .flatten();
        // A service's first light job should not wait for an interpreter either.
        let light_now = warm_now && self.warm_every.load(Ordering::Relaxed);
        let light_slot = light_now
            .then(|| started(self.spawn_light_slot(&light, None)))
            .flatten();
        Ok(Worker {
            warm,
            cold,
            light,
            slot,
            light_slot,
            _cgroups: cgroups,
            _light_cgroups: light_cgroups,
            _cold_cgroups: cold_cgroups,
        })
    }

    fn step(
        &self,
        w: &mut Worker,
        job: &Job,
        seat: &Seat,
        zygote: Option<&Zygote>,
    ) -> Result<Outcome, ExecError> {
        let route = route(job, self.stdlib_modules());
        let (spec, held) = match route {
            Route::Cold => return run_cold(&w.cold, job, seat),
            Route::Light => (&w.light, &mut w.light_slot),
            Route::Warm => (&w.warm, &mut w.slot),
        };
        let start = Instant::now();
        if held
            .as_mut()
            .is_some_and(|s| !s.is_alive() || s.jobs_done >= RECYCLE_AFTER)
        {
            *held = None;
        }
        if held.is_none() {
            let spawned = if route == Route::Light {
                self.spawn_light_slot(spec, Some(seat))
            } else {
                self.spawn_slot(spec, Some(seat), zygote)
            };
            match spawned {
                Ok(s) => *held = Some(s),
                Err(e) => {
                    tracing::warn!("pool slot failed to start ({e:#}); using a cold process");
                    return run_cold(&w.cold, job, seat);
                }
            }
        }
        let slot = held.as_mut().expect("slot present");
        let sent = Instant::now();
        match slot.run(job, seat) {
            Ok(msg) => {
                log_stages(&msg, sent.elapsed());
                match read_job_result(job, &msg, start.elapsed().as_secs_f64(), spec.cfg.hacks) {
                    Reading::Done(o) => Ok(o),
                    Reading::Abnormal(first) => {
                        let mut o = run_cold(&w.cold, job, seat)?;
                        let after = first.remark.unwrap_or(Remark::Other {
                            text: "an abnormal reading".into(),
                        });
                        o.remark = Some(Remark::RetriedCold {
                            after: Box::new(after),
                            then: o.remark.take().map(Box::new),
                        });
                        o.wall_secs = start.elapsed().as_secs_f64();
                        Ok(o)
                    }
                }
            }
            Err(f) => {
                *held = None;
                slot_failure(&f, start.elapsed().as_secs_f64())
            }
        }
    }
}

/// One debug line per warm job: the slot round trip and the harness's stage timestamps, in ms
/// (read by bench/serve-breakdown.sh).
fn log_stages(msg: &bcb_sandbox::wire::ResultMsg, round_trip: std::time::Duration) {
    if !tracing::enabled!(target: STAGES, tracing::Level::DEBUG) {
        return;
    }
    let mut ms: std::collections::BTreeMap<&str, f64> = msg
        .stages
        .iter()
        .map(|(k, v)| (k.as_str(), (v * 1e4).round() / 10.0))
        .collect();
    ms.insert(
        "round_trip",
        (round_trip.as_secs_f64() * 1e4).round() / 10.0,
    );
    tracing::debug!(target: STAGES, "stages {}", serde_json::to_string(&ms).unwrap_or_default());
}

impl PoolExecutor {
    /// Runs what `source` hands out (`jobs` of them, when known) until it closes.
    fn serve_upto(&self, source: &dyn JobSource, jobs: Option<usize>, done: &OnServed) {
        let admission = self.base.admission();
        // A batch warms its extra (overlap) slots on first use: many runs never need them.
        // A service warms them all before it is ready (memory permitting): its first burst
        // would otherwise pay seconds of imports per slot while clients wait.
        let warm_every = jobs.is_none() && self.warm_every.load(Ordering::Relaxed);
        if warm_every {
            let extra = admission.extra_slots(usize::MAX);
            self.warming.expect(admission.workers + extra);
        }
        // Declared before the workers: it outlives every slot it forks.
        let zygote = self.zygote();
        let zygote = zygote.as_ref();
        // Asked once, while the zygote imports, before any job needs it.
        self.stdlib_modules();
        let make = |w: usize, primary: bool| {
            let warm_now = primary || (warm_every && admission.room_for_one_more());
            let worker = self.worker(w, warm_now, zygote);
            if warm_every {
                self.warming.one_warm();
            }
            worker
        };
        let step = |state: &mut Result<Worker>, job: &Job, seat: &Seat| match state {
            Ok(w) => self.step(w, job, seat, zygote),
            Err(e) => setup_failure(e),
        };
        // After each verdict is out, the slot finishes its cleanup before asking for more.
        let settle = |state: &mut Result<Worker>| {
            if let Ok(w) = state {
                for held in [&mut w.slot, &mut w.light_slot] {
                    if held.as_mut().is_some_and(|s| !s.settle()) {
                        *held = None;
                    }
                }
            }
        };
        run_queue(source, jobs, admission, &make, &step, &settle, done);
    }
}

local_executor! {
    PoolExecutor,
    "pool",
    fn warm_every_worker(&self) {
        self.warm_every.store(true, Ordering::Relaxed);
    }

    fn wait_warm(&self, within: Duration) -> bool {
        !self.warm_every.load(Ordering::Relaxed) || self.warming.wait(within)
    }
}
