//! Our own demand on the CPUs: the runnable threads among this process's descendants, found
//! from the threads that start slot processes.

use std::collections::BTreeSet;
use std::sync::Mutex;

use crate::procfs::{thread_state, Counted, ProcFiles};

/// Threads of this process that started a slot ([`note_spawner`]), beside the main thread.
/// `/proc` lists a child under the thread that forked it (and a child of a thread that exits
/// under the main thread), so the demand walk starts from these rather than from every thread
/// of the process: a server has a thread per submission, and reading each one's `children`
/// every interval cost 1.9% of a core at 51 threads, 7.7% at 1,059 (1,024 requests waiting).
static SPAWNERS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// Records the calling thread as one that starts slot processes (see [`SPAWNERS`]).
pub(crate) fn note_spawner() {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    SPAWNERS.lock().unwrap().insert(tid as u32);
}

/// Runnable threads among this process's descendants (pool slots, samples, their children),
/// found through /proc's `children` lists from the main thread and the slot spawners; `None`
/// where the kernel has no such lists. The processes of the samples the governor measured in
/// this pass (`counted`) are not read again: their runnable threads are added as counted.
pub(super) fn our_demand(files: &mut ProcFiles, counted: &Counted) -> Option<usize> {
    let me = std::process::id();
    let mut spawners = SPAWNERS.lock().unwrap().clone();
    spawners.insert(me); // once, if it spawned too
    let mut stack = Vec::new();
    let pids = |list: &str| -> Vec<u32> {
        list.split_whitespace()
            .filter_map(|c| c.parse().ok())
            .collect()
    };
    for tid in spawners {
        match files.read(format!("/proc/{me}/task/{tid}/children")) {
            Some(kids) => stack.extend(pids(kids)),
            None if tid == me => return None,
            None => {
                SPAWNERS.lock().unwrap().remove(&tid); // the thread ended
            }
        }
    }
    let mut runnable = counted.runnable;
    while let Some(pid) = stack.pop() {
        if counted.pids.contains(&pid) {
            continue; // a sample's process, with its children in its cgroup: counted
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue; // gone meanwhile
        };
        for task in tasks.flatten() {
            let dir = format!("/proc/{pid}/task/{}", task.file_name().to_string_lossy());
            if let Some(kids) = files.read(format!("{dir}/children")) {
                stack.extend(pids(kids));
            }
            let state = files.read(format!("{dir}/stat")).and_then(thread_state);
            runnable += usize::from(state == Some('R'));
        }
    }
    Some(runnable)
}
