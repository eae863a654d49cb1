use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use super::admission::{default_max_in_flight, Admission, Load};
use super::demand::{note_spawner, our_demand};
use super::queue::{promote_task, run_queue, slept};
use crate::freeze::{Role, Seat, RERUN_HELD_OVER};
use crate::procfs::{Counted, ProcFiles};
use bcb_executor::intake::OnServed;
use bcb_executor::{ExecError, Job, Outcome, Program, Remark, Status};

fn rule() -> Admission {
    Admission::new(2, 10, 8192)
}

fn load(in_flight: usize, idle: Option<f64>, mem: Option<u64>) -> Load {
    Load {
        in_flight,
        idle_cores: idle,
        mem_available_mb: mem,
        next_sleeps: false,
        demand: None,
        renewing: None,
    }
}

/// Runs `jobs` through [`run_queue`] with workers of no state of their own.
fn run_jobs(
    jobs: Vec<Job>,
    admission: Admission,
    step: &(dyn Fn(&mut (), &Job, &Seat) -> Result<Outcome, ExecError> + Sync),
    done: &OnServed,
) {
    let n = jobs.len();
    let source = bcb_executor::intake::VecSource::new(jobs);
    run_queue(&source, Some(n), admission, &|_, _| (), step, &|_| {}, done);
}

#[test]
fn overlap_when_our_own_demand_is_below_the_workers_whatever_else_loads_the_machine() {
    let ours = |demand| Load {
        demand: Some(demand),
        ..load(2, Some(0.0), Some(20_000))
    };
    assert!(
        rule().admits(&ours(1.0)),
        "a worker's sample hangs or sleeps"
    );
    assert!(rule().admits(&ours(1.5)));
    assert!(!rule().admits(&ours(2.0)), "both workers busy");
    assert!(!rule().admits(&ours(3.0)));
}

#[test]
fn our_demand_counts_a_busy_child_and_not_a_sleeping_one() {
    use std::process::Command;
    // One set of kept files throughout, as the sampler keeps it.
    let mut files = ProcFiles::default();
    let none = Counted::default();
    let Some(_) = our_demand(&mut files, &none) else {
        return; // a kernel without /proc/PID/task/TID/children
    };
    note_spawner(); // as `Slot::spawn_for` does
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let asleep: Vec<usize> = (0..5)
        .filter_map(|_| our_demand(&mut files, &none))
        .collect();
    let mut busy = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let mut seen = 0;
    for _ in 0..50 {
        seen = seen.max(our_demand(&mut files, &none).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(10));
    }
    // The governor counted the busy child (as a sample's process) with no thread
    // runnable: the walk takes its word and does not read it again.
    let counted = Counted {
        pids: [busy.id()].into(),
        runnable: 0,
    };
    let skipped = (0..20)
        .filter_map(|_| our_demand(&mut files, &counted))
        .max();
    for child in [&mut sleeper, &mut busy] {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert_eq!(asleep, [0; 5], "a sleeping child is no demand");
    assert!(seen >= 1, "a spinning child is runnable");
    assert_eq!(skipped, Some(0), "a counted process is not walked again");
}

#[test]
fn an_overlap_slot_goes_on_while_our_demand_stayed_within_the_workers() {
    let renewing = |demand| Load {
        renewing: Some(demand),
        ..load(2, None, Some(20_000))
    };
    assert!(
        rule().admits(&renewing(2.0)),
        "it filled a hung worker's core"
    );
    assert!(rule().admits(&renewing(2.5)));
    assert!(
        !rule().admits(&renewing(3.0)),
        "it oversubscribed: back to waiting"
    );
    assert!(!rule().admits(&Load {
        renewing: Some(2.0),
        ..load(10, None, Some(20_000))
    }));
}

#[test]
fn a_known_sleeper_needs_no_idle_cpu_but_memory_and_room() {
    let sleeper = |in_flight, mem| Load {
        next_sleeps: true,
        ..load(in_flight, None, Some(mem))
    };
    assert!(rule().admits(&sleeper(5, 20_000)));
    assert!(!rule().admits(&sleeper(10, 20_000)), "max in flight");
    assert!(!rule().admits(&sleeper(5, 1000)), "memory");
}

#[test]
fn a_timeout_slept_when_its_cpu_time_is_small() {
    let timeout = |cpu: Option<f64>| Outcome {
        wall_secs: 10.0,
        cpu_secs: cpu,
        ..Outcome::new(Status::Timeout, Default::default())
    };
    assert!(slept(&timeout(Some(0.2))));
    assert!(!slept(&timeout(Some(9.0))), "a CPU hog");
    assert!(!slept(&timeout(None)), "unmeasured");
    // A process bomb's own process computes little: its children spin.
    assert!(!slept(&Outcome {
        remark: Some(Remark::KilledAtProcessLimit),
        ..timeout(Some(0.02))
    }));
    let fail = Outcome {
        cpu_secs: Some(0.0),
        ..timeout(None)
    };
    assert!(!slept(&Outcome {
        status: Status::Fail,
        ..fail
    }));
}

#[test]
fn workers_always_run_whatever_the_load() {
    assert!(rule().admits(&load(0, None, None)));
    assert!(rule().admits(&load(1, Some(0.0), Some(0))));
}

#[test]
fn overlap_needs_a_fresh_measure_of_a_quarter_of_an_idle_core() {
    let r = rule();
    assert!(
        !r.admits(&load(2, None, Some(20_000))),
        "no fresh measurement"
    );
    assert!(!r.admits(&load(2, Some(0.2), Some(20_000))), "CPUs busy");
    assert!(r.admits(&load(2, Some(0.5), Some(20_000))));
    assert!(r.admits(&load(9, Some(1.8), Some(20_000))));
}

#[test]
fn overlap_stops_at_max_in_flight() {
    assert!(!rule().admits(&load(10, Some(2.0), Some(20_000))));
    // max_in_flight below workers means just the workers
    let r = Admission::new(4, 1, 0);
    assert_eq!(r.max_in_flight, 4);
    assert!(!r.admits(&load(4, Some(4.0), Some(20_000))));
}

#[test]
fn overlap_is_bounded_by_available_memory() {
    let r = rule(); // 8 GiB limit: the estimate is capped at 1 GiB
    assert_eq!(r.per_sample_mb, 1024);
    assert!(!r.admits(&load(2, Some(2.0), Some(1024 + 511))));
    assert!(r.admits(&load(2, Some(2.0), Some(1024 + 512))));
    // a small memory limit is its own estimate
    assert_eq!(Admission::new(2, 10, 300).per_sample_mb, 300);
    assert_eq!(Admission::new(2, 10, 0).per_sample_mb, 1024);
}

#[test]
fn without_meminfo_overlap_keeps_the_old_bound_of_twice_the_workers() {
    assert!(rule().admits(&load(3, Some(2.0), None)));
    assert!(!rule().admits(&load(4, Some(2.0), None)));
}

#[test]
fn default_max_in_flight_leaves_room_for_a_sweeps_sleepers() {
    assert_eq!(default_max_in_flight(0), 9);
    assert_eq!(default_max_in_flight(2), 10);
    assert_eq!(default_max_in_flight(16), 32);
}

fn job(task: &str, i: usize) -> Job {
    Job::for_test(task, Program::Sample(i), "", "")
}

fn order(q: &VecDeque<Job>) -> Vec<String> {
    q.iter()
        .map(|j| match j.id.program {
            Program::Sample(i) => format!("{}/{i}", j.task_id()),
            Program::GroundTruth => j.task_id().to_string(),
        })
        .collect()
}

#[test]
fn a_timeout_moves_the_tasks_queued_samples_to_the_front_in_order() {
    let mut q: VecDeque<Job> = [("a", 0), ("b", 0), ("a", 1), ("c", 0), ("b", 1), ("b", 2)]
        .into_iter()
        .map(|(t, i)| job(t, i))
        .collect();
    assert_eq!(promote_task(&mut q, "b"), 3);
    assert_eq!(order(&q), ["b/0", "b/1", "b/2", "a/0", "a/1", "c/0"]);
    assert_eq!(promote_task(&mut q, "z"), 0);
    assert_eq!(order(&q), ["b/0", "b/1", "b/2", "a/0", "a/1", "c/0"]);
}

/// One worker and one overlap slot; the first job's ground truth slept (100 s of test,
/// half a second of CPU). It runs beside the primary, and the others run as the primary
/// meanwhile, instead of waiting for the admission of extras to find the core idle.
#[test]
fn a_known_sleeper_runs_beside_the_primary_and_leaves_it_to_the_others() {
    let sleeper = Job {
        expected_secs: Some(100.0),
        expected_cpu_secs: Some(0.5),
        ..job("sleeper", 0)
    };
    let mut jobs = vec![sleeper];
    jobs.extend((0..3).map(|i| job("fast", i)));
    let roles = Mutex::new(Vec::new());
    let fast_done = (Mutex::new(0), std::sync::Condvar::new());
    let step = |_: &mut (), j: &Job, seat: &Seat| -> Result<Outcome, ExecError> {
        roles
            .lock()
            .unwrap()
            .push((j.task_id().to_string(), seat.role()));
        if j.task_id() == "sleeper" {
            let (n, cv) = &fast_done;
            let n = n.lock().unwrap();
            let _ = cv.wait_timeout_while(n, Duration::from_secs(20), |n| *n < 3);
        } else {
            *fast_done.0.lock().unwrap() += 1;
            fast_done.1.notify_all();
        }
        Ok(Outcome::new(Status::Pass, Default::default()))
    };
    run_jobs(jobs, Admission::new(1, 2, 0), &step, &|_, _, _| {});
    let roles = roles.into_inner().unwrap();
    assert_eq!(roles.len(), 4);
    for (task, role) in roles {
        let want = if task == "sleeper" {
            Role::Extra
        } else {
            Role::Primary
        };
        assert_eq!(role, Some(want), "{task}");
    }
}

/// One worker and one overlap slot. A known sleeper runs as the extra; held (credited) for
/// over a second, it fails, and runs again as the primary once the role frees, where it
/// passes: that verdict is reported, once, with what came before. A sample that failed
/// unheld is not run again, and a rerun that fails is final.
#[test]
fn a_held_sample_that_failed_runs_again_as_a_primary_and_only_that_verdict_counts() {
    use crate::freeze::Freezable;
    use bcb_sandbox::wire::ControlPipe;
    let sleeper = |task: &str| Job {
        expected_secs: Some(100.0),
        expected_cpu_secs: Some(0.5),
        ..job(task, 0)
    };
    let jobs = vec![sleeper("held"), job("fails", 0), sleeper("held-twice")];
    let (_supervisor, ctrl) = std::io::pipe().unwrap();
    let ctrl = std::sync::Arc::new(ControlPipe::new(std::fs::File::from(
        std::os::fd::OwnedFd::from(ctrl),
    )));
    let cgroup = tempfile::tempdir().unwrap();
    let runs = Mutex::new(Vec::new());
    let step = |_: &mut (), j: &Job, seat: &Seat| -> Result<Outcome, ExecError> {
        let role = seat.role().expect("a running seat");
        runs.lock().unwrap().push((j.task_id().to_string(), role));
        let held = role == Role::Extra && j.task_id().starts_with("held");
        if held {
            let f = std::sync::Arc::new(Freezable::new(
                cgroup.path().to_path_buf(),
                None,
                ctrl.clone(),
                0,
            ));
            seat.attach(f.clone());
            // It waited that long for a core at the lowest weight.
            f.credit(RERUN_HELD_OVER + Duration::from_millis(200));
            seat.detach();
        }
        let pass = j.task_id() == "held" && !held;
        let status = if pass { Status::Pass } else { Status::Fail };
        Ok(Outcome::new(status, Default::default()))
    };
    let done = Mutex::new(Vec::new());
    run_jobs(jobs, Admission::new(1, 2, 0), &step, &|_,
                                                     j: Job,
                                                     o: Result<
        Outcome,
        ExecError,
    >| {
        done.lock()
            .unwrap()
            .push((j.task_id().to_string(), o.unwrap()));
    });
    let mut runs = runs.into_inner().unwrap();
    runs.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then((a.1 == Role::Primary).cmp(&(b.1 == Role::Primary)))
    });
    assert_eq!(
        runs,
        [
            ("fails".to_string(), Role::Primary),
            ("held".to_string(), Role::Extra),
            ("held".to_string(), Role::Primary),
            ("held-twice".to_string(), Role::Extra),
            ("held-twice".to_string(), Role::Primary),
        ]
    );
    let mut done = done.into_inner().unwrap();
    done.sort_by(|a, b| a.0.cmp(&b.0));
    let verdicts: Vec<(&str, Status, Option<&str>)> = done
        .iter()
        .map(|(t, o)| (t.as_str(), o.status, o.remark.as_ref().map(Remark::kind)))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("fails", Status::Fail, None),
            ("held", Status::Pass, Some("rerun_unheld")),
            ("held-twice", Status::Fail, Some("rerun_unheld")),
        ]
    );
    let Some(Remark::RerunUnheld { held_ms, first, .. }) = &done[1].1.remark else {
        unreachable!()
    };
    assert_eq!(*first, Status::Fail);
    assert!(*held_ms >= RERUN_HELD_OVER.as_millis() as u64, "{held_ms}");
}

#[test]
fn queue_runs_every_job_once_and_promotes_a_timed_out_task() {
    // Task "slow" times out on its first sample: its other samples run before "fast"'s.
    let mut jobs = vec![job("slow", 0)];
    jobs.extend((0..4).map(|i| job("fast", i)));
    jobs.extend((1..4).map(|i| job("slow", i)));
    let seen = Mutex::new(Vec::new());
    let step = |_: &mut (), j: &Job, _: &Seat| -> Result<Outcome, ExecError> {
        let status = if j.task_id() == "slow" {
            Status::Timeout
        } else {
            Status::Pass
        };
        Ok(Outcome::new(status, Default::default()))
    };
    let done = |_t, j: Job, _o: Result<Outcome, ExecError>| {
        seen.lock().unwrap().push(j);
    };
    run_jobs(jobs, Admission::new(1, 1, 0), &step, &done);
    let seen: VecDeque<Job> = seen.into_inner().unwrap().into();
    assert_eq!(
        order(&seen),
        ["slow/0", "slow/1", "slow/2", "slow/3", "fast/0", "fast/1", "fast/2", "fast/3"]
    );
}
