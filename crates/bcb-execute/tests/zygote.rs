//! The pool's zygote: warm slots are forked from one interpreter that imported the preloads
//! once; their CPU time still counts in our process tree; a zygote that dies costs speed, not
//! verdicts.

mod common;

use std::collections::HashMap;
use std::sync::Mutex;

use bcb_execute::{Executor, Program, Status};
use common::*;

/// Burns about `secs` of CPU, then passes.
/// Imports numpy, so it runs in a warm slot (the standard library alone takes the light one).
fn spinner(secs: f64) -> String {
    format!(
        "import numpy\nimport time\ndef task_func():\n    end = time.process_time() + {secs}\n    while time.process_time() < end:\n        pass\n    return 1\n"
    )
}

fn children_cpu_secs() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

/// Direct children of this process whose command line ends in `--zygote`, and theirs.
fn zygote_and_slots() -> Option<(i32, Vec<i32>)> {
    let me = std::process::id() as i32;
    let mut parent = HashMap::new();
    let mut zygote = None;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let ppid: i32 = after.split(' ').nth(1).unwrap().parse().unwrap();
        parent.insert(pid, ppid);
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == me && cmdline.ends_with(b"--zygote\0") {
            zygote = Some(pid);
        }
    }
    let z = zygote?;
    let slots = parent
        .iter()
        .filter(|(_, p)| **p == z)
        .map(|(c, _)| *c)
        .collect();
    Some((z, slots))
}

fn has_child(pid: i32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|t| {
            let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            !kids.trim().is_empty()
        })
}

/// Whether `pid` sleeps (state `S`: here, blocked reading its next job).
fn asleep(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rfind(')').map(|i| stat[i + 2..].starts_with('S')))
        .unwrap_or(false)
}

fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rfind(')')
            .is_some_and(|i| stat[i + 2..].starts_with('Z')),
    }
}

/// Every warm slot of a run is forked by the zygote (no slot imports its own preloads), and
/// once the run is over, the CPU time of the slots and of their samples is in our children's
/// rusage: the zygote reaps its slots before it exits (without that, what a slot spent was
/// lost with it, and the benches' process-tree CPU under-counted).
#[test]
fn slots_are_forked_warm_and_their_cpu_counts_in_our_process_tree() {
    let Some(py) = python() else { return };
    let pool = pool_without_overlap(py, 2);
    let code = spinner(0.5);
    let jobs = (0..4)
        .map(|i| job(i, "spin", &code, ONE_TEST, 30.0))
        .collect();
    let before = children_cpu_secs();
    let out = run_on(&pool, jobs);
    let after = children_cpu_secs();
    for (key, o) in &out {
        assert_eq!(o.status, Status::Pass, "sample {key}: {o:?}");
    }
    assert_eq!(pool.slots_started(), 2);
    assert_eq!(pool.slots_forked(), 2, "a slot imported its own preloads");
    let samples: f64 = out.values().map(|o| o.cpu_secs.unwrap_or(0.0)).sum();
    assert!(samples >= 1.8, "the spinners used {samples:.2} s of CPU");
    assert!(
        after - before >= samples,
        "our children's CPU grew by {:.2} s, the samples alone used {samples:.2} s",
        after - before
    );
}

/// A sample that computes in a thread that has ended by its verdict still reports that CPU:
/// the verdict is read before the sample exits, when the ended thread is gone from /proc's
/// task list (counting live threads alone, this sample reported 0.036 s).
#[test]
fn a_sample_that_computed_in_an_ended_thread_reports_that_cpu() {
    let Some(py) = python() else { return };
    let pool = pool_without_overlap(py, 1);
    let code = "import numpy\nimport threading\nimport time\ndef spin():\n    end = time.process_time() + 1.0\n    while time.process_time() < end:\n        pass\ndef task_func():\n    t = threading.Thread(target=spin)\n    t.start()\n    t.join()\n    return 1\n";
    let out = run_on(&pool, vec![job(0, "thread", code, ONE_TEST, 30.0)]);
    let o = &out[&0];
    assert_eq!(o.status, Status::Pass, "{o:?}");
    let cpu = o.cpu_secs.expect("a sample's CPU");
    assert!(
        cpu >= 0.9,
        "the thread spun 1 s, the sample reported {cpu:.3} s"
    );
}

/// The zygote killed after the first verdict: its slots die with it, and the next sample
/// gets a slot started afresh, and its verdict, instead of failing on the dead one.
#[test]
fn a_dead_zygote_leaves_the_next_sample_a_fresh_slot() {
    let Some(py) = python() else { return };
    let pool = pool_without_overlap(py, 1);
    let code = "import numpy\ndef task_func():\n    return 1\n";
    let jobs = vec![
        job(0, "first", code, ONE_TEST, 30.0),
        job(1, "second", code, ONE_TEST, 30.0),
    ];
    let out = Mutex::new(HashMap::new());
    let killed = Mutex::new(None);
    pool.run(jobs, &|job, o| {
        let Program::Sample(key) = job.id.program else {
            unreachable!()
        };
        if key == 0 {
            let (zygote, slots) = zygote_and_slots().expect("a zygote among our children");
            assert!(!slots.is_empty(), "the zygote has no slot");
            // Killed once the slot is idle again (it has forked its next sample process and
            // said so): only a check before the next job can then notice it is gone. Between
            // its fork and its read of the next job a slot does nothing that sleeps, so
            // asleep with a child is past "said so".
            bcb_testkit::wait_until(
                std::time::Duration::from_secs(10),
                "the slot to fork ahead and wait for its next job",
                || slots.iter().all(|p| has_child(*p) && asleep(*p)),
            );
            unsafe { libc::kill(zygote, libc::SIGKILL) };
            let t0 = std::time::Instant::now();
            while !slots.iter().all(|p| gone(*p)) {
                assert!(t0.elapsed().as_secs() < 10, "slots outlived their zygote");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            *killed.lock().unwrap() = Some(slots.len());
        }
        out.lock()
            .unwrap()
            .insert(key, o.map_err(|e| e.to_string()));
        std::ops::ControlFlow::Continue(())
    })
    .expect("run");
    assert_eq!(killed.into_inner().unwrap(), Some(1));
    let out = out.into_inner().unwrap();
    for key in [0, 1] {
        let o = out[&key]
            .as_ref()
            .unwrap_or_else(|e| panic!("sample {key}: {e}"));
        assert_eq!(o.status, Status::Pass, "sample {key}: {o:?}");
    }
    assert_eq!(
        pool.slots_started(),
        2,
        "the second sample needed a new slot"
    );
    assert_eq!(
        pool.slots_forked(),
        1,
        "the new slot cannot come from a dead zygote"
    );
}

/// kB of a process's anonymous memory on transparent huge pages.
fn anon_huge_kb(pid: i32) -> u64 {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap();
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The zygote moves its preloaded heap onto huge pages (`MADV_COLLAPSE`), so each fork of a
/// warm slot's sample copies one page-table entry per collapsed 2 MB where it copied 512, and
/// its exit frees as few.
/// Without the collapse the heap sits on small pages (AnonHugePages 0 where THP is
/// `madvise`-only, as on this project's machines).
#[test]
fn the_zygotes_preloaded_heap_sits_on_huge_pages() {
    let Some(py) = python() else { return };
    let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
    if thp.as_deref().map_or(true, |s| s.contains("[never]")) {
        eprintln!("skipped: this kernel has transparent huge pages off");
        return;
    }
    // MADV_COLLAPSE came with Linux 6.1.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut version = release
        .split(['.', '-'])
        .map(|x| x.parse::<u32>().unwrap_or(0));
    if (version.next().unwrap_or(0), version.next().unwrap_or(0)) < (6, 1) {
        eprintln!("skipped: Linux {release} has no MADV_COLLAPSE");
        return;
    }
    let pool = pool_without_overlap(py, 1);
    let code = "import numpy\ndef task_func():\n    return 1\n";
    let huge = Mutex::new(None);
    pool.run(vec![job(0, "one", code, ONE_TEST, 30.0)], &|_, o| {
        assert_eq!(o.unwrap().status, Status::Pass);
        let (zygote, _) = zygote_and_slots().expect("a zygote among our children");
        *huge.lock().unwrap() = Some(anon_huge_kb(zygote));
        std::ops::ControlFlow::Continue(())
    })
    .expect("run");
    let kb = huge.into_inner().unwrap().unwrap();
    assert!(
        kb >= 16 << 10,
        "the zygote's heap has {kb} kB on huge pages"
    );
}
