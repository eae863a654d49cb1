"""What the harness asks of the kernel beyond the `os` module: libc calls (prctl, unshare,
setns, mount, umount2, madvise) with their constants, and descriptor housekeeping (numbers a
sample cannot predict, closing all but a few)."""

import os


CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

MNT_DETACH = 2
PR_SET_DUMPABLE = 4

MADV_COLLAPSE = 25


_libc = None


def libc():
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(ret, what):
    if ret != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def prctl(option, arg2=0):
    import ctypes

    _check(
        libc().prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)),
        "prctl(%d)" % option,
    )


def unshare(flags):
    _check(libc().unshare(flags), "unshare(%#x)" % flags)


def setns(fd, nstype):
    _check(libc().setns(fd, nstype), "setns")


def mount(src, target, fstype, flags, data=None):
    import ctypes

    def enc(s):
        return None if s is None else s.encode()

    _check(
        libc().mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
        "mount %s" % target,
    )


def umount2(target, flags):
    _check(libc().umount2(target.encode(), flags), "umount %s" % target)


def collapse_heap():
    """Moves the process's anonymous heap (malloc's and the large private mappings the
    preloads made) onto transparent huge pages, where aligned ranges of it exist: a fork then
    copies one page-table entry per huge page (2 MB on x86-64, where it copied 512), and the
    child's exit frees as few (bench/README.md has the cost saved). A copy-on-write fault in a
    child still copies one small page (the kernel splits the huge mapping first).
    `MADV_COLLAPSE` is used alone, without `MADV_HUGEPAGE`: the mappings keep small pages for
    what a sample allocates later. Best effort: a kernel without it (before 6.1) or with THP
    off leaves the heap as it was."""
    import ctypes

    madvise = libc().madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    try:
        # The PMD's size: 2 MB on x86-64, 512 MB on arm64 with 64 KB pages.
        with open("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size") as f:
            huge = int(f.read())
        with open("/proc/self/maps") as f:
            maps = f.read().splitlines()
    except (OSError, ValueError):
        return  # no THP here
    for line in maps:
        fields = line.split()
        if fields[1] != "rw-p" or (len(fields) > 5 and fields[5] != "[heap]"):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        start = -(-start // huge) * huge
        end = end // huge * huge
        if end > start:
            madvise(start, end - start, MADV_COLLAPSE)  # fails harmlessly where unpopulated


def random_fd(avoid):
    """A free descriptor number the sample cannot predict (below the soft RLIMIT_NOFILE)."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    top = max(64, min(soft if soft > 0 else 1024, 4096))
    while True:
        fd = 10 + int.from_bytes(os.urandom(2), "little") % (top - 10)
        if fd in avoid:
            continue
        try:
            os.fstat(fd)
        except OSError:
            return fd


def close_all_but(keep):
    """Closes every descriptor except `keep` (inherited, the slot's control pipes, its PID
    namespace fd, whatever a preloaded module opened)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the listing's own fd, already gone
