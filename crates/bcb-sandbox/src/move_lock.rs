//! The kernel's lock for moving a process into a cgroup. Every sample moves itself into its
//! slot's cgroups before it is handed its job, and by default the kernel guards such a
//! move with one machine-wide lock whose writer first waits for an RCU grace period once
//! the lock has been quiet for a moment: milliseconds of sleep for a move made every few tens
//! of milliseconds, on every sample's way to its tests (bench/README.md, "A sample's move
//! into its cgroups"). The `favordynmods` mount option, the kernel's own remedy for
//! workloads that move processes often, makes that move take the thread group's own lock
//! instead; from Linux 6.18 the kernel keeps that mode once any hierarchy asked for it (it
//! cannot be turned off until the next boot). bcb asks once per process, when it first makes
//! a slot's cgroups, by mounting a controller-less named v1 hierarchy with the option for a
//! moment. Before 6.18 the option lasts only while such a hierarchy is mounted, so bcb leaves
//! the kernel as it is there.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU32, Ordering};

/// What [`favor_dynamic_moves`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveLock {
    /// The kernel accepted `favordynmods`: moves now take the thread group's own lock.
    PerThreadGroup,
    /// `BCB_CGROUP_FAVORDYNMODS=0`: left as it was.
    LeftByRequest,
    /// A kernel before 6.18, where the mode would not outlast the mount.
    KernelTooOld,
    /// The mount (or its folder) was refused, with its errno: no root, or a kernel without
    /// the option.
    Refused(i32),
}

/// The first kernel that keeps the per-thread-group lock once asked for.
const PERSISTENT_SINCE: (u32, u32) = (6, 18);

/// Asks the kernel once per process, when bcb first makes a slot's cgroups (not when it
/// only probes the host: `bcb env check` changes nothing), unless
/// `BCB_CGROUP_FAVORDYNMODS=0`.
pub fn favor_dynamic_moves_once() {
    static ASKED: std::sync::Once = std::sync::Once::new();
    ASKED.call_once(|| {
        let requested =
            std::env::var(bcb_envvars::EnvVars::BCB_CGROUP_FAVORDYNMODS).as_deref() != Ok("0");
        let lock = favor_dynamic_moves(requested);
        tracing::debug!("the kernel's lock for moves between cgroups: {lock:?}");
    });
}

/// Asks the kernel, once, to move processes between cgroups under the thread group's own
/// lock (module docs). Leaves no mount, folder or hierarchy behind.
pub fn favor_dynamic_moves(requested: bool) -> MoveLock {
    if !requested {
        return MoveLock::LeftByRequest;
    }
    if kernel_release().is_none_or(|v| v < PERSISTENT_SINCE) {
        return MoveLock::KernelTooOld;
    }
    let dir = match tempfile::Builder::new().prefix("bcb-cgroup-").tempdir() {
        Ok(dir) => dir,
        Err(e) => return MoveLock::Refused(e.raw_os_error().unwrap_or(libc::EIO)),
    };
    let target = CString::new(dir.path().as_os_str().as_bytes()).expect("no NUL in a temp path");
    // A hierarchy of a name of its own and no controller: it groups nothing, and the kernel
    // destroys it once unmounted (tens of milliseconds later, so each call takes a new name).
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let options = CString::new(format!(
        "none,name=bcb-{}-{},favordynmods",
        std::process::id(),
        CALLS.fetch_add(1, Ordering::Relaxed)
    ))
    .expect("no NUL");
    let mounted = unsafe {
        libc::mount(
            c"cgroup".as_ptr(),
            target.as_ptr(),
            c"cgroup".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            options.as_ptr().cast(),
        )
    };
    if mounted != 0 {
        return MoveLock::Refused(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    if unsafe { libc::umount2(target.as_ptr(), 0) } != 0 {
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
    MoveLock::PerThreadGroup
}

/// The running kernel's major and minor version (`uname -r`).
fn kernel_release() -> Option<(u32, u32)> {
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut uts) } != 0 {
        return None;
    }
    let release = unsafe { std::ffi::CStr::from_ptr(uts.release.as_ptr()) }.to_string_lossy();
    parse_release(&release)
}

fn parse_release(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_read_as_major_and_minor() {
        assert_eq!(parse_release("6.18.44-fc-v1272"), Some((6, 18)));
        assert_eq!(parse_release("5.15.0-91-generic"), Some((5, 15)));
        assert_eq!(parse_release("6.8"), Some((6, 8)));
        assert_eq!(parse_release("garbage"), None);
        assert!(parse_release("6.8.0").unwrap() < PERSISTENT_SINCE);
    }

    #[test]
    fn asked_not_to_it_leaves_the_kernel_alone() {
        assert_eq!(favor_dynamic_moves(false), MoveLock::LeftByRequest);
    }

    /// As root on a 6.18+ kernel with cgroup v1: the kernel takes the option, and nothing of
    /// the momentary mount stays (no mount, no hierarchy in our cgroup list). Without root or
    /// on an older kernel it is never taken; bcb only asks where it made v1 cgroups, so a host
    /// without them is not checked.
    #[test]
    fn the_momentary_hierarchy_leaves_nothing_behind() {
        let root = unsafe { libc::geteuid() } == 0;
        let v1 = std::path::Path::new("/sys/fs/cgroup/freezer/cgroup.procs").exists();
        let recent = kernel_release().is_some_and(|v| v >= PERSISTENT_SINCE);
        if !(root && recent) {
            assert_ne!(favor_dynamic_moves(true), MoveLock::PerThreadGroup);
            return;
        }
        if !v1 {
            return;
        }
        let got = favor_dynamic_moves(true);
        assert_eq!(got, MoveLock::PerThreadGroup);
        let name = format!("name=bcb-{}-", std::process::id());
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(!mounts.contains(&name), "the mount is gone");
        // The kernel destroys an unmounted hierarchy after a grace period, not at once.
        let listed = || {
            std::fs::read_to_string("/proc/self/cgroup")
                .unwrap()
                .contains(&name)
        };
        let since = std::time::Instant::now();
        while listed() && since.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!listed(), "the hierarchy is gone");
        // Asking again (another bcb on the same boot) works as well.
        assert_eq!(favor_dynamic_moves(true), MoveLock::PerThreadGroup);
    }
}
