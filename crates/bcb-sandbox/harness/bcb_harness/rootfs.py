"""The sample's filesystem (with a mount namespace): a fresh tmpfs root built by allow-list
(the OS's programs and libraries, the interpreter's trees, parts of /etc, a minimal /dev, a
masked /proc and /sys), pivoted into and remounted read-only."""

import os
import sys

from .kernel import (
    MNT_DETACH,
    MS_BIND,
    MS_NOATIME,
    MS_NODEV,
    MS_NODIRATIME,
    MS_NOEXEC,
    MS_NOSUID,
    MS_RDONLY,
    MS_REC,
    MS_RELATIME,
    MS_REMOUNT,
    _check,
    libc,
    mount,
    umount2,
)


# A container's /proc and /sys: the masked and read-only paths of Docker's default spec
# (moby oci/defaults.go DefaultLinuxSpec: MaskedPaths, ReadonlyPaths; runc applies the same
# lists in libcontainer/rootfs_linux.go), plus /proc/kmsg and /proc/kallsyms.
MASKED_PATHS = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/kmsg",
    "/proc/kallsyms",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
    "/sys/kernel/debug",
    "/sys/kernel/security",
)
READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")

# The filesystem a sample sees, by allow-list: the OS's programs and libraries ...
ROOT_ALLOW = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# ... and the parts of /etc the interpreter and the tasks read (no shadow, ssh, sudoers,
# pip/npm credentials, machine-id).
ETC_ALLOW = (
    "passwd", "group", "hosts", "hostname", "resolv.conf", "nsswitch.conf", "host.conf",
    "gai.conf", "protocols", "services", "networks", "ethertypes", "rpc", "netconfig",
    "mime.types", "mailcap", "localtime", "timezone", "ssl", "ca-certificates",
    "ca-certificates.conf", "pki", "crypto-policies", "fonts", "ld.so.cache", "ld.so.conf",
    "ld.so.conf.d", "alternatives", "os-release", "lsb-release", "debian_version", "issue",
    "magic", "magic.mime", "locale.alias", "locale.gen", "locale.conf", "inputrc", "terminfo",
    "shells", "login.defs", "mtab", "xdg", "xml", "sgml", "papersize", "python3", "python3.11",
    "gitconfig", "wgetrc", "ImageMagick-6", "ImageMagick-7",
)
# Inside an allowed directory, still hidden.
ETC_MASKED = ("/etc/ssl/private",)
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
SANDBOX_MPLCONFIG = "/var/cache/bcb-mplconfig"


def remount_readonly(skip=()):
    """Bind-remount every mount read-only (except `skip`), keeping the flags the kernel may
    have locked."""
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            target = parts[4].replace("\\040", " ")
            opts = parts[5].split(",")
            mounts.append((target, opts))
    flagmap = {
        "nosuid": MS_NOSUID,
        "nodev": MS_NODEV,
        "noexec": MS_NOEXEC,
        "noatime": MS_NOATIME,
        "nodiratime": MS_NODIRATIME,
        "relatime": MS_RELATIME,
    }
    for target, opts in mounts:
        if target in skip or "ro" in opts:
            continue
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY
        for o in opts:
            flags |= flagmap.get(o, 0)
        try:
            mount(None, target, None, flags)
        except OSError:
            # Mounts hidden under others or already gone: nothing writable to protect there.
            pass


def pivot_root(new_root):
    """Makes `new_root` the root and detaches the old one (pivot_root(".", ".") idiom)."""
    import ctypes
    import platform

    nr = {"x86_64": 155, "aarch64": 41}[platform.machine()]
    os.chdir(new_root)
    sc = libc().syscall
    sc.restype = ctypes.c_long
    _check(sc(ctypes.c_long(nr), b".", b"."), "pivot_root")
    umount2(".", MNT_DETACH)
    os.chdir("/")


def _mountpoint(path, like):
    """Creates an empty file or dir at `path` to bind `like` onto."""
    if os.path.isdir(like):
        os.makedirs(path, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        if not os.path.exists(path):
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))


def _copy_or_bind(src, root, rec=True):
    """Reproduces `src` under `root`: the same symlink, or a bind mount of it."""
    dst = root + src
    if os.path.islink(src):
        os.makedirs(os.path.dirname(dst), mode=0o755, exist_ok=True)
        if not os.path.lexists(dst):
            os.symlink(os.readlink(src), dst)
        return True
    if not os.path.exists(src):
        return False
    _mountpoint(dst, src)
    mount(src, dst, None, MS_BIND | (MS_REC if rec else 0))
    return True


def _mask(path):
    """Hides a file (bind /dev/null over it) or a directory (an empty read-only tmpfs)."""
    if os.path.isdir(path) and not os.path.islink(path):
        mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=555")
    elif os.path.exists(path):
        mount("/dev/null", path, None, MS_BIND)


def python_paths(cfg):
    """The interpreter's own trees (often under a home directory) and whatever else the slot
    must be able to read: bound alone, at the same paths."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    paths += [os.path.dirname(os.path.realpath(sys.executable))]
    paths += [p for p in sys.path if p and os.path.isdir(p)]
    paths += cfg.get("ro_paths") or []
    out = []
    for p in paths:
        for q in (os.path.abspath(p), os.path.realpath(p)):
            if os.path.isdir(q) and q not in out:
                out.append(q)
    return out


def build_root(cfg, new, tmpfs_opts):
    """The sample's filesystem, by allow-list, on a fresh tmpfs at `new`; then pivots into it.
    Home directories, /root, /run, /var, the output and the samples file are simply absent."""
    mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    # /tmp first: a Python tree or cache under the host's /tmp is then bound inside it.
    os.makedirs(new + "/tmp", mode=0o1777)
    mount("tmpfs", new + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_opts)
    covered = []
    for top in ROOT_ALLOW:
        if _copy_or_bind(top, new):
            covered.append(os.path.realpath(top))
    for p in sorted(python_paths(cfg), key=len):
        if any(p == c or p.startswith(c.rstrip("/") + "/") for c in covered):
            continue
        _copy_or_bind(p, new)
        covered.append(p)
    # bcb's matplotlib cache, wherever the host keeps it, at one fixed read-only path.
    mpl = (cfg.get("env") or {}).get("MPLCONFIGDIR")
    if mpl and os.path.isdir(mpl):
        _mountpoint(new + SANDBOX_MPLCONFIG, mpl)
        mount(mpl, new + SANDBOX_MPLCONFIG, None, MS_BIND)
    os.makedirs(new + "/etc", mode=0o755, exist_ok=True)
    for name in ETC_ALLOW:
        try:
            _copy_or_bind("/etc/" + name, new)
        except OSError:
            pass  # e.g. a dangling entry: the task simply does not see it
    for p in ETC_MASKED:
        if os.path.isdir(new + p):
            _mask(new + p)
    # A minimal /dev: the harmless character devices, a private shm and ptys.
    dev = new + "/dev"
    os.makedirs(dev, mode=0o755, exist_ok=True)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=755")
    for d in DEVICES:
        if os.path.exists("/dev/" + d):
            _mountpoint(dev + "/" + d, "/dev/" + d)
            mount("/dev/" + d, dev + "/" + d, None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"), ("ptmx", "pts/ptmx")):
        os.symlink(target, dev + "/" + name)
    os.makedirs(dev + "/pts", mode=0o755)
    try:
        mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
    except OSError:
        pass  # no ptys then; no task needs one
    os.makedirs(dev + "/shm", mode=0o1777)
    mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_opts)
    # /proc of the sample's own PID namespace (the host's where that is refused), masked.
    os.makedirs(new + "/proc", mode=0o555, exist_ok=True)
    fresh = False
    if cfg["isolation"].get("pidns"):
        try:
            mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            fresh = True
        except OSError:
            pass  # e.g. in a user namespace with a partly hidden /proc
    if not fresh:
        mount("/proc", new + "/proc", None, MS_BIND | MS_REC)
    os.makedirs(new + "/sys", mode=0o555, exist_ok=True)
    try:
        mount("sysfs", new + "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        try:
            mount("/sys", new + "/sys", None, MS_BIND | MS_REC)
        except OSError:
            pass  # no /sys at all
    for p in MASKED_PATHS:
        try:
            _mask(new + p)
        except OSError:
            pass  # absent on this kernel
    for p in READONLY_PATHS:
        if os.path.exists(new + p):
            mount(new + p, new + p, None, MS_BIND)
    pivot_root(new)
    remount_readonly(skip=("/tmp", "/dev/shm", "/dev/pts", "/proc"))
    # Fail closed: a writable kernel-settings tree would undo the rest.
    for p in ("/", "/proc/sys", "/usr"):
        if os.path.exists(p) and not os.statvfs(p).f_flag & os.ST_RDONLY:
            raise OSError("sandbox: %s is still writable" % p)
