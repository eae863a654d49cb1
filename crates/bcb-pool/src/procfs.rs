//! What the scheduler reads from `/proc`: threads' run and wait times, processes' CPU ticks,
//! the machine's busy jiffies and available memory. Readers only; every decision is elsewhere.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bcb_sandbox::cgroups::layout;

/// Each thread's time on a CPU and time waiting for one (ns), by thread id.
pub(crate) type ThreadTimes = HashMap<u32, (u64, u64)>;

/// Files kept open at most: a sample with thousands of threads is read the slow way (open,
/// read, close) beyond this, and bcb keeps descriptors for its own work.
const MAX_KEPT: usize = 256;

/// The `/proc` files the sampler reads every interval, kept open between its passes and
/// read again from the start: opening one (a path walk through `/proc`, a new file, and
/// `read_to_string`'s `statx`) costs more than reading it, and a TensorFlow sample has 12
/// to 35 threads with two files each. A file that fails (its task is gone) is opened again
/// by path, since a new task may have taken the id; one not read in a whole pass is closed
/// at [`ProcFiles::end_pass`]. Not for a cgroup v1 `tasks` or `cgroup.procs`: an open one
/// keeps the pid list it loaded first for as long as it is read again within a second.
#[derive(Default)]
pub(crate) struct ProcFiles {
    kept: HashMap<String, Kept>,
    buf: Vec<u8>,
    pass: u64,
}

struct Kept {
    file: File,
    /// The last pass that read it.
    pass: u64,
}

impl ProcFiles {
    /// The whole file at `path` now, as text; `None` if it cannot be read.
    pub(crate) fn read(&mut self, path: String) -> Option<&str> {
        let Self { kept, buf, pass } = self;
        match kept.get_mut(&path) {
            Some(k) if read_from_start(&k.file, buf).is_ok() => k.pass = *pass,
            _ => {
                kept.remove(&path);
                let file = File::open(&path).ok()?;
                read_from_start(&file, buf).ok()?;
                if kept.len() < MAX_KEPT {
                    kept.insert(path, Kept { file, pass: *pass });
                }
            }
        }
        std::str::from_utf8(buf).ok()
    }

    /// Closes the files this pass did not read (a thread or a sample that ended).
    pub(crate) fn end_pass(&mut self) {
        let pass = self.pass;
        self.kept.retain(|_, k| k.pass == pass);
        self.pass += 1;
    }

    /// How many files are open.
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        self.kept.len()
    }
}

/// Reads `file` from offset 0 to its end into `buf` (`/proc` files are generated afresh at
/// a read from the start).
fn read_from_start(file: &File, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.clear();
    buf.resize(4096, 0);
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
        match file.read_at(&mut buf[len..], len as u64)? {
            0 => break,
            n => len += n,
        }
    }
    buf.truncate(len);
    Ok(())
}

/// Processes whose threads the governor's pass already counted, and how many of those
/// threads were runnable: the demand walk adds the count rather than read them again.
#[derive(Debug, Default)]
pub(crate) struct Counted {
    pub pids: HashSet<u32>,
    pub runnable: usize,
}

/// A task's state letter (`R`, `S`, `D`, `Z`, ...), the first field after the command's
/// closing parenthesis in a `/proc/PID/stat` line.
pub(crate) fn thread_state(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// One reading of a sample's cgroup (the sample and everything it started).
#[derive(Debug, Default)]
pub(crate) struct CgroupReading {
    /// Each thread with the time it has spent on a CPU and waiting for one
    /// (`/proc/TID/schedstat`, ns): integrated over an interval, what the sample asked of the
    /// cores, not a moment's run-queue count (a thread pool's momentary runnable threads
    /// overstate what it uses).
    pub times: ThreadTimes,
    /// Threads runnable now (on a CPU or waiting for one: the kernel adds a wait to
    /// `schedstat` only once the thread gets its CPU, so a thread starved at the lowest
    /// weight shows there late, and here at once).
    pub runnable: usize,
    /// CPU time (clock ticks) of the cgroup's processes with the children they reaped, so a
    /// short-lived child's time stays counted once its parent waited for it.
    pub ticks: u64,
    /// The cgroup's processes.
    pub pids: Vec<u32>,
}

/// Reads the cgroup's threads and processes. A process's `/proc/PID/stat` is its main
/// thread's too (state of the main thread, times of the whole process), so each is read
/// once. The pid lists are opened afresh each time (see [`ProcFiles`]).
pub(crate) fn read_cgroup(files: &mut ProcFiles, cgroup: &Path) -> CgroupReading {
    let list = |file: PathBuf| -> Vec<u32> {
        std::fs::read_to_string(file)
            .map(|l| {
                l.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut reading = CgroupReading {
        pids: list(layout().procs(cgroup)),
        ..CgroupReading::default()
    };
    for tid in list(layout().threads(cgroup)) {
        let Some(stat) = files.read(format!("/proc/{tid}/stat")) else {
            continue; // ended meanwhile
        };
        reading.runnable += usize::from(thread_state(stat) == Some('R'));
        if reading.pids.contains(&tid) {
            reading.ticks += process_ticks(stat);
        }
        if let Some(ns) = files
            .read(format!("/proc/{tid}/schedstat"))
            .and_then(schedstat_ns)
        {
            reading.times.insert(tid, ns);
        }
    }
    reading
}

/// Time on a CPU and time waiting for one (ns), from a `/proc/TID/schedstat` line.
pub(crate) fn schedstat_ns(line: &str) -> Option<(u64, u64)> {
    let mut f = line.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// utime + stime + cutime + cstime of one `/proc/PID/stat` line (0 if unreadable).
pub(crate) fn process_ticks(stat: &str) -> u64 {
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    // after the command: state is field 3, utime..cstime are fields 14..17
    rest.split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|x| x.parse::<u64>().ok())
        .sum()
}

/// CPU seconds of this process and every descendant alive now, with what each waited for
/// (`cutime`/`cstime`: slots count the samples they reaped, bcb the slots it reaped). The
/// difference of two readings is what the whole tree used in between. `None` without /proc.
pub fn process_tree_cpu_secs() -> Option<f64> {
    let mut ticks = 0;
    let mut stack = vec![std::process::id()];
    let mut seen = HashSet::new();
    let mut read_any = false;
    while let Some(pid) = stack.pop() {
        if !seen.insert(pid) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        read_any = true;
        ticks += process_ticks(&stat);
        // Children are listed per thread.
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
                stack.extend(
                    list.split_whitespace()
                        .filter_map(|c| c.parse::<u32>().ok()),
                );
            }
        }
    }
    read_any.then(|| ticks as f64 / clock_ticks_per_sec())
}

pub(crate) fn clock_ticks_per_sec() -> f64 {
    // SAFETY: sysconf only reads a constant of the system.
    match unsafe { libc::sysconf(libc::_SC_CLK_TCK) } {
        t if t > 0 => t as f64,
        _ => 100.0,
    }
}

/// Busy and total jiffies over all CPUs, and the number of CPUs, from /proc/stat.
pub(crate) fn cpu_jiffies() -> Option<(u64, u64, usize)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let mut lines = stat.lines();
    let v: Vec<u64> = lines
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let cpus = lines
        .take_while(|l| l.starts_with("cpu"))
        .filter(|l| l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    let total: u64 = v.iter().sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    Some((total - idle, total, cpus.max(1)))
}

pub(crate) fn mem_available_mb() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// What `measure` grows by over half a second for a sleeping and a spinning process,
    /// each alone in a fake cgroup folder (its pid in `cgroup.procs` and `tasks`).
    fn asleep_and_spinning(mut measure: impl FnMut(&Path) -> u64) -> (u64, u64) {
        use std::process::Command;
        let mut grown = |pid: u32| {
            let dir = tempfile::tempdir().unwrap();
            for file in ["cgroup.procs", "tasks"] {
                std::fs::write(dir.path().join(file), format!("{pid}\n")).unwrap();
            }
            let before = measure(dir.path());
            std::thread::sleep(Duration::from_millis(500));
            measure(dir.path()) - before
        };
        let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
        let mut spinner = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let seen = (grown(sleeper.id()), grown(spinner.id()));
        for child in [&mut sleeper, &mut spinner] {
            let _ = child.kill();
            let _ = child.wait();
        }
        seen
    }

    #[test]
    fn cpu_ticks_count_a_spinning_process_and_not_a_sleeping_one() {
        // One set of kept files for every measurement: a kept file reads fresh each time.
        let mut files = ProcFiles::default();
        let (asleep, spinning) = asleep_and_spinning(|dir| read_cgroup(&mut files, dir).ticks);
        assert_eq!(asleep, 0);
        assert!(spinning > 0, "a spinning process uses CPU ticks");
        let stat = "42 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 100 20 3 4 0 0";
        assert_eq!(process_ticks(stat), 127);
    }

    #[test]
    fn the_process_tree_counts_a_child_alive_and_after_its_reap() {
        let before = process_tree_cpu_secs().expect("/proc");
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let spun = |child: &std::process::Child| {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap();
            process_ticks(&stat) as f64 / clock_ticks_per_sec()
        };
        while spun(&child) < 0.3 {
            std::thread::sleep(Duration::from_millis(20));
        }
        let alive = process_tree_cpu_secs().unwrap() - before;
        assert!(alive >= 0.3, "a live child's CPU: {alive:.2} s");
        child.kill().unwrap();
        child.wait().unwrap();
        let reaped = process_tree_cpu_secs().unwrap() - before;
        assert!(
            reaped >= alive,
            "a reaped child's CPU stays counted: {reaped:.2} s"
        );
    }

    #[test]
    fn runnable_time_counts_a_spinning_thread_and_not_a_sleeping_one() {
        let mut files = ProcFiles::default();
        let (asleep, spinning) = asleep_and_spinning(|dir| {
            read_cgroup(&mut files, dir)
                .times
                .values()
                .map(|(run, wait)| run + wait)
                .sum()
        });
        assert!(
            asleep < 10_000_000,
            "a sleeper asks for nothing: {asleep} ns"
        );
        // on a CPU or waiting for one the whole time, however loaded the machine
        assert!(
            spinning > 400_000_000,
            "a spinner asks for a core: {spinning} ns"
        );
        assert_eq!(schedstat_ns("1500 250 7\n"), Some((1500, 250)));
        assert_eq!(schedstat_ns("garbage"), None);
    }

    #[test]
    fn a_kept_file_of_a_task_that_ended_reads_nothing_and_unread_files_close() {
        use std::process::Command;
        let mut files = ProcFiles::default();
        let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
        let path = format!("/proc/{}/stat", sleeper.id());
        assert!(files
            .read(path.clone())
            .is_some_and(|s| s.contains("(sleep)")));
        assert_eq!(files.kept(), 1);
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        assert_eq!(files.read(path), None, "the task is gone, its file with it");
        assert_eq!(files.kept(), 0);
        assert!(files.read("/proc/self/stat".into()).is_some());
        files.end_pass();
        assert_eq!(files.kept(), 1, "read in the pass that ended: kept");
        files.end_pass();
        assert_eq!(files.kept(), 0, "unread for a whole pass: closed");
    }
}
