//! An interrupted `bcb evaluate` leaves nothing behind: SIGTERM and Ctrl-C (SIGINT) thaw,
//! kill and remove every sample, cgroup and work folder the run made, even a sample frozen at
//! that moment (a frozen process takes no signal, not even SIGKILL); after SIGKILL, which no
//! handler sees, the next bcb start does the same. Before, SIGTERM ended bcb and left the
//! frozen sample and every `bcb-<pid>-*` cgroup folder, until someone thawed them by hand, and
//! every interrupted run left its `bcb-exec-*` work folder in the temp dir. SIGTERM does so too
//! when whoever read bcb's output is gone.

mod evalkit;

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

/// The v1 hierarchies bcb makes slot cgroups in (the cpu ones nest in our own cpu cgroup,
/// which for a test run as root is the root or a folder under it: both are walked).
fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("bcb-{pid}-");
    let mut found = Vec::new();
    let mut stack: Vec<PathBuf> = ["freezer", "memory", "pids", "cpu"]
        .iter()
        .map(|c| PathBuf::from("/sys/fs/cgroup").join(c))
        .collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if !path.is_dir() {
                continue;
            }
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(path);
            } else if path.components().count() < 8 {
                stack.push(path);
            }
        }
    }
    found
}

/// The run's work folders (`bcb-exec-<pid>-*` in the temp dir bcb inherits from us).
fn work_roots_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("bcb-exec-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

fn alive(pid: i32) -> bool {
    // A zombie counts as gone: it holds nothing and runs nothing.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

/// Starts `bcb evaluate` on one sample that sleeps for an hour, waits until it runs in the
/// worker's freezer cgroup, and freezes it there (as the governor would an extra sample).
/// Returns bcb, its freezer folder and the pids frozen in it.
fn start_and_freeze(
    env: &evalkit::Env,
    name: &str,
    stderr: Stdio,
) -> Option<(Child, PathBuf, Vec<i32>)> {
    let samples = env.path(&format!("{name}.jsonl"));
    // Held open by the sample from its import on: then it runs.
    let marker = evalkit::marker(name);
    let solution = format!(
        "import time\n{}def task_func(*args, **kwargs):\n    time.sleep(3600)\n",
        evalkit::hold_open(&marker)
    );
    evalkit::write_jsonl(
        &samples,
        &[json!({"task_id": "BigCodeBench/0", "solution": solution})],
    );
    let child = env
        .bcb()
        .args(["evaluate", "--split", "complete", "--subset", "full"])
        .args(["--ids", "0", "--no-gt", "--parallel", "1", "--samples"])
        .arg(&samples)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    // The sample runs once a process holds its marker (a slot forks the next sample's process
    // ahead: a member of a worker's cgroup alone does not say the job started), in one of the
    // run's freezer cgroups (a warm worker's, or a light one's: this sample imports only the
    // standard library).
    let ours = format!("/bcb-{}-", child.id());
    let mut found = None;
    bcb_testkit::wait_until(
        Duration::from_secs(120),
        "the sample to run in a freezer cgroup of the run",
        || {
            found = evalkit::holding_open(&marker)
                .into_iter()
                .find_map(|pid| freezer_of(pid).filter(|c| c.starts_with(&ours)));
            found.is_some()
        },
    );
    let freezer =
        PathBuf::from("/sys/fs/cgroup/freezer").join(found.expect("found").trim_start_matches('/'));
    std::fs::write(freezer.join("freezer.state"), "FROZEN").unwrap();
    let pids: Vec<i32> = std::fs::read_to_string(freezer.join("cgroup.procs"))
        .unwrap()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    assert!(!pids.is_empty());
    Some((child, freezer, pids))
}

/// The freezer cgroup of `pid` (`/bcb-…`, relative to the hierarchy's root).
fn freezer_of(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .ok()?
        .lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers
                .split(',')
                .any(|c| c == "freezer")
                .then(|| path.to_string())
        })
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// Thaws and kills what a failed assertion would leave behind (this test's own mess only).
struct Cleanup(Vec<PathBuf>, Vec<i32>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for dir in &self.0 {
            let _ = std::fs::write(dir.join("freezer.state"), "THAWED");
        }
        for &pid in &self.1 {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

fn needs_root_and_freezer() -> bool {
    let ok = unsafe { libc::geteuid() } == 0
        && std::path::Path::new("/sys/fs/cgroup/freezer/cgroup.procs").exists();
    if !ok {
        eprintln!("skipped: needs root and a cgroup v1 freezer");
    }
    ok
}

#[test]
fn sigterm_and_ctrl_c_thaw_kill_and_remove_every_sample_and_cgroup() {
    let Some(env) = evalkit::env() else { return };
    if !needs_root_and_freezer() {
        return;
    }
    // "closed": the reader of bcb's output is gone when the signal comes (a killed `podman
    // build`, a closed ssh session, `| head`). Before, the handler's `eprintln!` panicked on the
    // closed pipe, its thread died with it, and no SIGTERM ended the run.
    for (signal, name, closed) in [
        (libc::SIGTERM, "term", false),
        (libc::SIGINT, "int", false),
        (libc::SIGTERM, "closed", true),
    ] {
        let stderr = if closed {
            Stdio::piped()
        } else {
            Stdio::null()
        };
        let (mut bcb, freezer, pids) = start_and_freeze(&env, name, stderr).unwrap();
        let _cleanup = Cleanup(vec![freezer.clone()], pids.clone());
        drop(bcb.stderr.take());
        let bcb_pid = bcb.id();
        unsafe { libc::kill(bcb_pid as i32, signal) };
        let status = wait_exit(&mut bcb, Duration::from_secs(30));
        if status.is_none() {
            let _ = bcb.kill();
        }
        assert!(status.is_some(), "{name}: bcb did not end");
        assert_eq!(status.unwrap().code(), Some(130), "{name}: exit code");
        // The sample and everything of the run are gone at once, not at some later start.
        let deadline = Instant::now() + Duration::from_secs(5);
        while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let left: Vec<_> = pids.iter().filter(|&&p| alive(p)).collect();
        assert!(left.is_empty(), "{name}: sample processes left: {left:?}");
        assert_eq!(
            cgroups_of(bcb_pid),
            Vec::<PathBuf>::new(),
            "{name}: cgroups left"
        );
        assert_eq!(
            work_roots_of(bcb_pid),
            Vec::<PathBuf>::new(),
            "{name}: work folders left"
        );
    }
}

#[test]
fn after_sigkill_the_next_bcb_start_thaws_kills_and_removes_what_was_left() {
    let Some(env) = evalkit::env() else { return };
    if !needs_root_and_freezer() {
        return;
    }
    let (mut bcb, freezer, pids) = start_and_freeze(&env, "kill", Stdio::null()).unwrap();
    let _cleanup = Cleanup(vec![freezer.clone()], pids.clone());
    let bcb_pid = bcb.id();
    bcb.kill().unwrap(); // SIGKILL: no handler runs
    bcb.wait().unwrap();
    assert!(
        pids.iter().any(|&p| alive(p)),
        "the frozen sample outlives a bcb killed with SIGKILL"
    );
    assert!(!cgroups_of(bcb_pid).is_empty());
    assert!(!work_roots_of(bcb_pid).is_empty());
    // Any command that probes the sandbox sweeps on start.
    env.run(&["env", "check"]);
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<_> = pids.iter().filter(|&&p| alive(p)).collect();
    assert!(left.is_empty(), "sample processes left: {left:?}");
    assert_eq!(cgroups_of(bcb_pid), Vec::<PathBuf>::new(), "cgroups left");
    assert_eq!(
        work_roots_of(bcb_pid),
        Vec::<PathBuf>::new(),
        "work folders left"
    );
}
