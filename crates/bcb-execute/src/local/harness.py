# bcb execution harness (embedded in the bcb binary, written to a private dir, run as `python -I harness.py`).
#
# One "slot": a supervisor process that reads jobs on fd 3 and writes events on fd 4
# (newline-delimited JSON), and forks one child per job. The child isolates itself as far
# as the host permits, then runs the sample with the verdict semantics of bigcodebench
# 0.2.5 (`unsafe_execute`/`untrusted_check`): program = code + "\n" + test, exec'd as module
# `__test__`, `TestCases` run under an itimer, failures + errors -> details.
#
# Used both as a long-lived pre-warmed pool slot (modules imported once, then forked) and as
# a one-shot cold process (nothing preloaded), so both paths share the same isolation. With
# `--zygote` it is the pool's zygote instead (`zygote_main`): it imports the preloads once and
# forks each warm slot, which then runs `main` as a spawned slot would.
#
# Wire protocol (Rust side: src/local/wire.rs; change both together):
#   fd 3, in:  {isolation, limits: {<Limits fields>, kill_grace_secs, memory_rlimit_mb?,
#               tmpfs_mb, freeze_budget_secs}, env, preload, cgroups, workroot, one_shot} -- once
#              {key, code, test, time_limit, script?}                   -- one per job
#                 script: {stdin, files: {path: base64}, fetch_files, memory_mb?} runs `code`
#                 as a program (run_script) instead of a unittest suite; its report is
#                 {script: {end, execution_time, return_code, stdout, stderr, files}}
#              {op: "exit"}
#              {op: "freeze" | "thaw", key}     -- while job `key` runs: stop / resume the sample
#                 (its freezer cgroup, `freezer` in the config); frozen time extends both
#                 the in-sample alarm and the supervisor's deadline (ignored between jobs),
#                 by at most limits.freeze_budget_secs with credits: then it is thawed here
#              {op: "credit", key, secs}        -- job `key` waited `secs` for a core at the
#                 lowest CPU weight (an extra sample): its deadlines move as by frozen time
#   fd 4, out: {event: "ready", pid, preload_secs, preload_failed, forked}
#                 (forked: the slot came from the pool's zygote, `zygote_main`, warm)
#              {event: "started", key, pid}
#              {event: "result", key, wall_secs, cpu_secs, expected, signal | exit_code,
#               killed_at_deadline, oom_killed?, integrity?, report?, stages}
#                 (sent as soon as the report channel is closed by every holder, when a report
#                 came: the sample's exit is then cleaned up after the result; see run_job)
#              {event: "idle"}                 -- after each result (pool slots): cleaned up,
#                 the next sample process forked; a job sent earlier waits for this point
#   report (written by the sample's process on its private channel, untrusted):
#              {status, details, test_secs, ran, skipped, integrity?} or {harness_error}
#   isolation also carries uid_switch (host root: the sample drops to uid/gid 65534); the
#   config may carry ro_paths: [dir] (extra read-only binds into the sample's root).
#   The report line carries the nonce the supervisor wrote into the child's key pipe after
#   the fork (read by the child only after the tests); it is checked and dropped by the
#   supervisor, never sent to Rust.

import json
import os
import signal
import sys
import time

CTRL_IN = 3
CTRL_OUT = 4

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

# Unprivileged identity a sample runs as when the slot is host root (kernel overflow ids).
SANDBOX_UID = 65534
SANDBOX_GID = 65534

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

_libc = None

# Seconds the current sample has spent frozen, shared with it (an anonymous MAP_SHARED page
# made before the first fork): its alarm extends itself by what it finds here. Written by the
# supervisor only; a sample that overwrites it only moves its own alarm, never the
# supervisor's deadline.
FROZEN_CLOCK = None


def frozen_clock_read(clock):
    import struct

    return struct.unpack("d", clock[:8])[0] if clock is not None else 0.0


def frozen_clock_write(secs):
    import struct

    if FROZEN_CLOCK is not None:
        FROZEN_CLOCK[:8] = struct.pack("d", secs)


class LineReader:
    """Lines from the control fd without read-ahead surprises: `select` on the fd and the
    buffer here agree on what has arrived."""

    def __init__(self, fd):
        self.fd, self.buf, self.eof = fd, b"", False

    def fill(self):
        data = os.read(self.fd, 1 << 16)
        if not data:
            self.eof = True
        self.buf += data

    def take(self):
        """The next complete line, or None."""
        if b"\n" not in self.buf:
            return None
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def readline(self):
        while b"\n" not in self.buf and not self.eof:
            self.fill()
        line = self.take()
        if line is None:
            line, self.buf = self.buf, b""
            return line
        return line + b"\n"


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

    enc = lambda s: None if s is None else s.encode()
    _check(
        libc().mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
        "mount %s" % target,
    )


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def send(msg):
    write_all(CTRL_OUT, (json.dumps(msg) + "\n").encode())


def log(msg):
    try:
        os.write(2, ("bcb-harness: %s\n" % msg).encode())
    except OSError:
        pass


# ---------------------------------------------------------------------------
# Expected tests (trusted: computed from the dataset's test code before the sample runs)


def expected_tests(test_code):
    """Names of the `test*` methods defined on class TestCases, or None if not determinable."""
    import ast

    try:
        tree = ast.parse(test_code)
    except SyntaxError:
        return None
    names = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TestCases":
            names = []
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                    if item.name not in names:
                        names.append(item.name)
    return names


# ---------------------------------------------------------------------------
# Isolation (child side). Every step is best effort, governed by the slot config, and the
# active set is reported once by the supervisor's probe.


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


def umount2(target, flags):
    _check(libc().umount2(target.encode(), flags), "umount %s" % target)


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


def switch_to_sandbox_user(uid, gid):
    """Host root never runs a sample: drop to an unprivileged uid/gid (caps go with it)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    drop_bounding_set()
    os.setresuid(uid, uid, uid)
    # A uid change clears these; keep /proc/self readable like an ordinary process and the
    # death signal armed.
    prctl(PR_SET_DUMPABLE, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def loopback_up():
    import fcntl
    import socket
    import struct

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, 0x8913, ifr))[1]  # SIOCGIFFLAGS
        ifr = struct.pack("16sH14s", b"lo", flags | 0x1 | 0x40, b"")  # IFF_UP | IFF_RUNNING
        fcntl.ioctl(s, 0x8914, ifr)  # SIOCSIFFLAGS
    finally:
        s.close()


def drop_bounding_set():
    for cap in range(64):
        if libc().prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break


def drop_capabilities():
    import ctypes

    drop_bounding_set()

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    hdr = Header(0x20080522, 0)
    data = (Data * 2)()
    _check(libc().capset(ctypes.byref(hdr), ctypes.byref(data)), "capset")


def landlock(base):
    """Degraded mode: writes only under the sample's dir (+ the DEVICES, /dev/shm), no signals or
    abstract unix sockets outside the sandbox (ABI >= 6)."""
    import ctypes
    import struct

    sc = libc().syscall
    sc.restype = ctypes.c_long
    abi = sc(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        raise OSError("landlock unavailable")
    write_rights = 2 | 16 | 32 | 64 | 128 | 256 | 512 | 1024 | 2048 | 4096
    if abi >= 2:
        write_rights |= 8192
    if abi >= 3:
        write_rights |= 16384
    if abi >= 6:
        attr = struct.pack("QQQ", write_rights, 0, 1 | 2)
    elif abi >= 4:
        attr = struct.pack("QQ", write_rights, 0)
    else:
        attr = struct.pack("Q", write_rights)
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = sc(ctypes.c_long(444), buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    # Devices one by one (not all of /dev: /dev/kmsg, /dev/console stay closed for writing).
    file_write = 2 | (16384 if abi >= 3 else 0)
    rules = [(base, write_rights)] + [("/dev/" + d, file_write) for d in DEVICES if os.path.exists("/dev/" + d)]
    for d in ("/dev/shm", "/dev/pts"):
        if os.path.isdir(d):
            rules.append((d, write_rights if d == "/dev/shm" else file_write))
    for path, rights in rules:
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, pfd), 12)
        ret = sc(ctypes.c_long(445), ctypes.c_int(fd), ctypes.c_int(1), rule, ctypes.c_uint32(0))
        os.close(pfd)
        if ret != 0:
            raise OSError(ctypes.get_errno(), "landlock_add_rule %s" % path)
    if sc(ctypes.c_long(446), ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    os.close(fd)


def seccomp_no_inet():
    """Degraded mode: socket() for anything but AF_UNIX fails with EACCES (no network)."""
    import ctypes
    import platform
    import struct

    arch, nr = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}[platform.machine()]
    ld, jeq, ret = 0x20, 0x15, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | 13
    prog = [
        (ld, 0, 0, 4),  # arch
        (jeq, 0, 5, arch),
        (ld, 0, 0, 0),  # syscall nr
        (jeq, 0, 3, nr),
        (ld, 0, 0, 16),  # args[0] (low 32 bits)
        (jeq, 1, 0, 1),  # AF_UNIX
        (ret, 0, 0, deny),
        (ret, 0, 0, allow),
    ]
    raw = b"".join(struct.pack("HBBI", *ins) for ins in prog)
    filt = ctypes.create_string_buffer(raw, len(raw))

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Prog(len(prog), ctypes.cast(filt, ctypes.c_void_p))
    _check(libc().prctl(22, 2, ctypes.byref(fprog), 0, 0), "seccomp")


def isolate_child(cfg, base):
    """Runs in the forked child before any sample code. Returns the sample's base dir."""
    iso = cfg["isolation"]
    os.setsid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1 and not iso.get("pidns"):
        os._exit(70)  # supervisor already gone
    for path in cfg.get("cgroups") or []:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write("0")
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    flags = 0
    if iso.get("mountns"):
        flags |= CLONE_NEWNS
    if iso.get("netns"):
        flags |= CLONE_NEWNET
    if iso.get("ipcns"):
        flags |= CLONE_NEWIPC
    if iso.get("utsns"):
        flags |= CLONE_NEWUTS
    if flags:
        unshare(flags)
    size = "size=%dm,mode=1777" % max(64, int(cfg["limits"].get("tmpfs_mb") or 1024))
    if iso.get("mountns"):
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        build_root(cfg, cfg["workroot"], size)
        base = "/tmp"
    else:
        import tempfile

        base = tempfile.mkdtemp(prefix="s-", dir=base)
        if iso.get("uid_switch"):
            os.chown(base, SANDBOX_UID, SANDBOX_GID)
    if iso.get("netns"):
        loopback_up()
    if iso.get("utsns"):
        try:
            import socket

            socket.sethostname("sandbox")
        except OSError:
            pass
    if iso.get("nproc_rlimit"):
        import resource

        n = int(cfg["limits"].get("max_processes") or 0)
        if n:
            resource.setrlimit(resource.RLIMIT_NPROC, (n, n))
    if iso.get("uid_switch"):
        switch_to_sandbox_user(SANDBOX_UID, SANDBOX_GID)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if iso.get("dropcaps"):
        drop_capabilities()
    if iso.get("landlock"):
        landlock(base)
    if iso.get("seccomp_net"):
        seccomp_no_inet()
    return base


# ---------------------------------------------------------------------------
# Upstream semantics (bigcodebench 0.2.5 eval/utils.py + eval/__init__.py), re-implemented.


class TimeoutException(Exception):
    pass


def make_sink_class():
    import io

    class CappedWriteOnlyStringIO(io.StringIO):
        """Like upstream's WriteOnlyStringIO (reads raise), but keeps at most `cap` chars."""

        cap = 65536

        def write(self, s):
            if not isinstance(s, str):
                return io.StringIO.write(self, s)  # raises TypeError like StringIO
            room = self.cap - self.tell()
            if room > 0:
                io.StringIO.write(self, s[:room])
            return len(s)

        def writelines(self, lines):
            for line in lines:
                self.write(line)

        def read(self, *args, **kwargs):
            raise IOError

        def readline(self, *args, **kwargs):
            raise IOError

        def readlines(self, *args, **kwargs):
            raise IOError

        def readable(self, *args, **kwargs):
            return False

    return CappedWriteOnlyStringIO


class Guard:
    """The process-level patches of upstream's safe_environment + swallow_io."""

    def __init__(self, sink):
        import subprocess

        self.subprocess = subprocess
        self.sink = sink
        self.child_pids = []

    def say(self, text):
        # upstream prints these messages; stdout is swallowed at that point
        print(text)

    def install_safe_environment(self, own_pidns=False):
        """Upstream's kill guard, as it is, except in a PID namespace of the sample's own:
        there every process it can name is its own (the supervisor and the host are outside),
        so its kills go through. Upstream refuses a kill of any process the sample did not
        start through `subprocess`, so `multiprocessing.Pool.terminate()` cannot signal its
        workers, and a worker left waiting on the pool's queue lock is joined forever
        (BigCodeBench/205 and /363 hang at random, more often on a busy machine)."""
        import subprocess

        g = self
        orig_kill = os.kill
        orig_killpg = os.killpg
        orig_system = os.system
        orig_call = subprocess.call
        orig_check_output = subprocess.check_output
        orig_run = subprocess.run
        orig_popen = subprocess.Popen
        orig_os_popen = os.popen
        me = os.getpid()
        my_pgid = os.getpgid(me)
        self.orig_kill = orig_kill

        def safe_kill(pid, sig):
            try:
                os.getpgid(pid)
                if own_pidns or pid == me or pid in g.child_pids:
                    orig_kill(pid, sig)
                else:
                    g.say("Prevented attempt to kill PID %s with signal %s" % (pid, sig))
            except ProcessLookupError:
                pass

        def safe_killpg(pgid, sig):
            if own_pidns or pgid == my_pgid or pgid in {os.getpgid(p) for p in g.child_pids}:
                orig_killpg(pgid, sig)
            else:
                g.say("Prevented attempt to kill PGID %s with signal %s" % (pgid, sig))

        def safe_system(command):
            g.say("Intercepted system command: %s" % (command,))
            if "kill" in command or "killall" in command:
                return 0
            return orig_system(command)

        def safe_call(command, *args, **kwargs):
            g.say("Intercepted subprocess call: %s" % (command,))
            if "kill" in command or "killall" in command:
                return 0
            return orig_call(command, *args, **kwargs)

        def safe_check_output(command, *args, **kwargs):
            g.say("Intercepted command: %s" % (command,))
            if "ps" in command:
                return b""
            return orig_check_output(command, *args, **kwargs)

        def safe_run(*args, **kwargs):
            g.say("Intercepted subprocess run command: %s" % (args,))
            if "kill" in args[0] or "killall" in args[0]:
                return subprocess.CompletedProcess(args, 0, b"", b"")
            return orig_run(*args, **kwargs)

        class SafePopen(orig_popen):
            def __init__(self, *args, **kwargs):
                g.say("Intercepted Popen command: %s" % (args,))
                kwargs["preexec_fn"] = os.setsid
                super().__init__(*args, **kwargs)
                g.child_pids.append(self.pid)

            def communicate(self, *args, **kwargs):
                try:
                    return super().communicate(*args, **kwargs)
                except subprocess.TimeoutExpired:
                    g.say("Timeout expired, intercepted and returning None")
                    return None, None

            def kill(self):
                g.say("Intercepted kill call for PID %s" % self.pid)
                safe_kill(self.pid, signal.SIGTERM)

            def terminate(self):
                g.say("Intercepted terminate call for PID %s" % self.pid)
                safe_kill(self.pid, signal.SIGTERM)

        def safe_os_popen(command):
            g.say("Intercepted os.popen command: %s" % (command,))
            if "kill" in command or "killall" in command:
                return orig_os_popen("echo Intercepted")
            return orig_os_popen(command)

        def safe_exec(*args, **kwargs):
            g.say("Intercepted exec command: %s" % (args,))

        os.kill = safe_kill
        os.killpg = safe_killpg
        os.system = safe_system
        subprocess.call = safe_call
        subprocess.check_output = safe_check_output
        subprocess.run = safe_run
        subprocess.Popen = SafePopen
        os.popen = safe_os_popen
        os.execv = safe_exec
        os.execvp = safe_exec
        os.execvpe = safe_exec

    def swallow_io(self):
        """Context manager: upstream's swallow_io (stdout/stderr/stdin + subprocess capture)."""
        import contextlib
        import subprocess

        sink = self.sink

        @contextlib.contextmanager
        def cm():
            saved = (sys.stdout, sys.stderr, sys.stdin)
            orig_popen = subprocess.Popen
            orig_run = subprocess.run

            def capturing(call):
                # Child output is captured (upstream behaviour) unless the caller asked
                # for capture_output itself.
                def patched(*args, **kwargs):
                    if kwargs.get("capture_output"):
                        kwargs.pop("stdout", None)
                        kwargs.pop("stderr", None)
                    else:
                        kwargs.setdefault("stdout", subprocess.PIPE)
                        kwargs.setdefault("stderr", subprocess.PIPE)
                    return call(*args, **kwargs)

                return patched

            popen_patch = capturing(orig_popen)
            run_patch = capturing(orig_run)

            sys.stdout = sink
            sys.stderr = sink
            sys.stdin = sink
            subprocess.Popen = popen_patch
            subprocess.run = run_patch
            try:
                yield
            finally:
                subprocess.Popen = orig_popen
                subprocess.run = orig_run
                sys.stdout, sys.stderr, sys.stdin = saved

        return cm()


def unittest_modules(unittest):
    """unittest's modules and core classes, captured before the sample runs (the integrity
    check then needs no import a sample's `__import__` hook could answer)."""
    import unittest.case
    import unittest.loader
    import unittest.result
    import unittest.suite

    mods = (unittest, unittest.case, unittest.loader, unittest.result, unittest.suite)
    classes = (
        unittest.TestCase,
        unittest.TestSuite,
        unittest.suite.BaseTestSuite,
        unittest.TestResult,
        unittest.TestLoader,
        unittest.case._Outcome,
    )
    return mods, classes


def unittest_snapshot(mods, classes):
    """Identity of every attribute of the given modules and classes, to detect patching."""
    snap = {}
    for mod in mods:
        for k, v in list(vars(mod).items()):
            snap[(mod.__name__, k)] = v
    for cls in classes:
        for k, v in list(vars(cls).items()):
            snap[(cls.__qualname__, k)] = v
            code = getattr(v, "__code__", None)
            if code is not None:
                snap[(cls.__qualname__, k + ".__code__")] = code
    return snap


# Builtins the harness itself relies on while running and checking the tests.
WATCHED_BUILTINS = (
    "__build_class__", "__import__", "exec", "compile", "getattr", "setattr", "isinstance",
    "len", "id", "vars", "type", "str", "dict", "list", "sorted", "set", "print", "open",
)
# Modules whose attributes the harness uses after the sample started.
WATCHED_MODULES = ("json", "json.encoder", "os", "posix", "sys", "signal", "time", "builtins", "traceback")


def harness_snapshot(harness_globals):
    """Identity of the harness's own functions (and their code), the builtins and modules it
    relies on, and which module objects sys.modules hands out for them."""
    import builtins

    snap = {}
    for k, v in list(harness_globals.items()):
        if callable(v):
            snap[("harness", k)] = v
            code = getattr(v, "__code__", None)
            if code is not None:
                snap[("harness", k + ".__code__")] = code
    for k in WATCHED_BUILTINS:
        snap[("builtins", k)] = getattr(builtins, k, None)
    for name in WATCHED_MODULES:
        mod = sys.modules.get(name)
        snap[("sys.modules", name)] = mod
        if mod is not None:
            for k, v in list(vars(mod).items()):
                if callable(v):
                    snap[(name, k)] = v
    for name in [n for n in sys.modules if n == "unittest" or n.startswith("unittest.")]:
        snap[("sys.modules", name)] = sys.modules[name]
    return snap


def foreign_tests(test_class, names, first_test_line):
    """Expected test methods not defined by the dataset's test code (a sample's class hook
    or a later rewrite replaced them): their code must come from `__test__.py`, below the
    sample's own lines."""
    bad = []
    for n in names or ():
        fn = vars(test_class).get(n)
        for _ in range(16):  # through decorators (mock.patch, skip...) to the defined function
            code = getattr(fn, "__code__", None)
            if code is not None and code.co_filename == "__test__.py":
                break
            fn = getattr(fn, "__wrapped__", None)
        if code is None or code.co_filename != "__test__.py" or code.co_firstlineno < first_test_line:
            bad.append("TestCases.%s" % n)
    return bad


def snapshot_diff(a, b):
    # Added names are fine (lazy submodule imports add attributes); changed or removed are not.
    missing = object()
    changed = sorted(k for k in a if a[k] is not b.get(k, missing))
    return ["%s.%s" % k for k in changed]


def make_recorder_class(unittest, emit=None, codes=None):
    exc_info_to_string = unittest.TestResult._exc_info_to_string
    base_init = unittest.TestResult.__init__
    base_sub = unittest.TestResult.addSubTest
    splice = splice_tracebacks

    def formatted(self, err, test):
        if codes:
            splice(err[1], codes)
            err = (err[0], err[1], err[1].__traceback__ if err[1] is not None else err[2])
        return exc_info_to_string(self, err, test)

    class Recorder(unittest.TestResult):
        """A unittest.TestResult that also notes which tests reported an outcome (and, with
        the hack watch on, says each outcome on the account channel as it happens)."""

        def __init__(self):
            base_init(self)
            self._bcb_outcomes = []

        def _note(self, test, outcome):
            try:
                name = test.id().split(".")[-1]
            except Exception:
                name = "?"
            self._bcb_outcomes.append(name)
            if emit is not None:
                emit({"acct": "outcome", "t": name, "o": outcome})

        def addSuccess(self, test):
            self._note(test, "success")

        def addFailure(self, test, err):
            self._note(test, "failure")
            self.failures.append((test, formatted(self, err, test)))
            self._mirrorOutput = True

        def addError(self, test, err):
            self._note(test, "error")
            self.errors.append((test, formatted(self, err, test)))
            self._mirrorOutput = True

        def addSkip(self, test, reason):
            self._note(test, "skip")
            self.skipped.append((test, reason))

        def addExpectedFailure(self, test, err):
            self._note(test, "xfail")
            self.expectedFailures.append((test, formatted(self, err, test)))

        def addUnexpectedSuccess(self, test):
            self._note(test, "xpass")
            self.unexpectedSuccesses.append(test)

        def addSubTest(self, test, subtest, err):
            if err is not None and emit is not None:
                try:
                    name = test.id().split(".")[-1]
                except Exception:
                    name = "?"
                emit({"acct": "outcome", "t": name, "o": "subfailure"})
            if err is not None and codes:
                splice(err[1], codes)
                err = (err[0], err[1], err[1].__traceback__)
            base_sub(self, test, subtest, err)

    return Recorder


MAX_TRACE = 1 << 20
TRACE_HEADER = "Traceback (most recent call last):\n"


def clip_traceback(trace, cap=MAX_TRACE):
    """A traceback of at most about `cap` characters that keeps what a reader (and bcb's
    failure classifier) looks for: the last traceback's header, its last frame and its
    exception line, with as much of the message as fits. An indented marker says how much
    went, so the first unindented line after the header stays the exception line."""
    if len(trace) <= cap:
        return trace
    start = trace.rfind(TRACE_HEADER)
    if start < 0:
        return "[bcb: traceback truncated, %d characters dropped]\n" % (len(trace) - cap) + trace[-cap:]
    pos = frame = start + len(TRACE_HEADER)
    while pos < len(trace):
        end = trace.find("\n", pos)
        end = len(trace) if end < 0 else end + 1
        line = trace[pos:end]
        if line.strip() and not line[0].isspace():
            break  # the exception line
        if line.startswith("  File "):
            frame = pos
        pos = end
    kept = trace[frame : frame + cap]
    tail = "\n[bcb: traceback truncated]" if frame + cap < len(trace) else ""
    dropped = len(trace) - len(kept)
    return TRACE_HEADER + "  [bcb: traceback truncated, %d characters dropped]\n" % dropped + kept + tail


# ---------------------------------------------------------------------------
# Reward hacks (cfg["hacks"]): what a sample did to win the verdict instead of the task.
#
# In the sample's process, everything below reports on the account channel (the report pipe,
# one JSON line per fact, written as it happens, so nothing the sample does later unwrites
# it): an audit hook (PEP 578: cannot be removed from Python) that notes trace hooks, frame
# and heap walks and ctypes access to the interpreter made by the sample's own code; each
# test method's return or exception and each outcome the result recorder hears; values
# returned by `task_func` that agree with anything. The supervisor (`judge_account`) then
# reads that account beside the report.

# Audited events that give a sample the interpreter's frames, heap or trace machinery.
HACK_EVENTS = frozenset(
    (
        "sys.settrace", "sys.setprofile", "sys._getframe", "sys._current_frames",
        "object.__getattr__", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
        "ctypes.dlsym", "ctypes.PyObj_FromPtr",
    )
)
FRAME_ATTRS = frozenset(("tb_frame", "gi_frame", "cr_frame", "ag_frame"))
# Library helpers that only hand the caller's frames back: the caller decides.
FRAME_HELPERS = ("/inspect.py", "/traceback.py")
# unittest's names for "skip" and "expect failure" (what test code may declare).
SKIP_NAMES = frozenset(("skip", "skipIf", "skipUnless", "skipTest", "SkipTest", "expectedFailure", "_ShouldStop"))
# Comparison surfaces of the libraries the tests compare with.
COMPARE_MODULES = ("numpy.testing", "numpy.testing._private.utils", "pandas.testing", "pandas._testing", "pandas._testing.asserters", "math", "operator", "numpy", "pandas")
COMPARE_CLASSES = (("pandas", "DataFrame"), ("pandas", "Series"), ("pandas", "Index"))
COMPARE_METHODS = (("__eq__", True), ("__ne__", False), ("equals", True))


def declared_skips(test_code):
    """Test methods the test code itself lets skip or expect failure (decorators or calls
    in the method); "*" when the class, a fixture or a helper does."""
    import ast

    try:
        tree = ast.parse(test_code)
    except SyntaxError:
        return ["*"]

    def mentions(node):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in SKIP_NAMES:
                return True
            if isinstance(n, ast.Attribute) and n.attr in SKIP_NAMES:
                return True
        return False

    out = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "TestCases":
            if any(mentions(d) for d in node.decorator_list):
                return ["*"]
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and mentions(item):
                    if item.name.startswith("test"):
                        out.append(item.name)
                    else:
                        return ["*"]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and mentions(node):
            return ["*"]  # a module-level helper or fixture of the test code
    return out


def make_emitter(encode, write, fd):
    """The account channel: one JSON line per fact, straight to the report pipe."""

    def emit(obj):
        try:
            line = (encode(obj) + "\n").encode()
            while line:
                line = line[write(fd, line) :]
        except Exception:
            pass  # a closed or replaced channel leaves the report missing too

    return emit


def make_origin(first_test_line):
    """Who made a call, from the frame that made it: `(line, built_at_run_time)` when it is
    the sample's own code (lines of `__test__.py` above the test code, or code the sample
    compiled at run time: `codes`, filled by the audit hook's `exec` events), None for the
    test code, the harness or a library."""
    codes = set()

    def origin(f, helpers):
        runtime = False
        while f is not None:
            code = f.f_code
            name = code.co_filename
            if name == "__test__.py":
                line = f.f_lineno
                if line < first_test_line:
                    return (line, runtime)
                break
            if code in codes:
                runtime = True
            elif not (helpers and name.endswith(FRAME_HELPERS)):
                break  # the harness or a library (reached from code the sample compiled?)
            f = f.f_back
        return (None, True) if runtime else None

    def sample_code(fn):
        """The line of a function the sample wrote (0 when compiled at run time), else None."""
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None or type(code).__name__ != "code":
            return None
        if code.co_filename == "__test__.py":
            return code.co_firstlineno if code.co_firstlineno < first_test_line else None
        return 0 if code in codes else None

    return origin, sample_code, codes


def make_audit_hook(emit, origin, codes, getframe, get_ident):
    busy = set()
    seen = set()

    def keep(code):
        stack = [code]
        while stack and len(codes) < 4096:
            c = stack.pop()
            codes.add(c)
            stack.extend(k for k in c.co_consts if type(k) is type(c))

    def hook(event, args):
        if event not in HACK_EVENTS:
            if event == "exec" and args and type(args[0]).__name__ == "code":
                me = get_ident()
                if me in busy:
                    return
                busy.add(me)
                try:
                    if origin(getframe(1), False) is not None:
                        keep(args[0])  # code the sample compiled: its frames are the sample's
                finally:
                    busy.discard(me)
            return
        what = event
        if event == "object.__getattr__":
            if len(args) < 2 or args[1] not in FRAME_ATTRS:
                return
            what = "%s.%s" % (type(args[0]).__name__, args[1])
        elif event == "ctypes.dlsym":
            name = args[1] if len(args) > 1 else None
            if not isinstance(name, str) or not name.startswith(("Py", "_Py")):
                return
            what = "ctypes symbol %s" % name
        me = get_ident()
        if me in busy:
            return
        busy.add(me)
        try:
            who = origin(getframe(1), event in ("sys._getframe", "sys._current_frames"))
            if who is None:
                return
            key = (what, who[0])
            if key in seen or len(seen) >= 16:
                return
            seen.add(key)
            emit({"acct": "hack", "class": "tracing", "evidence": what, "line": who[0], "runtime": who[1]})
        finally:
            busy.discard(me)

    return hook


def make_probe(emit, sample_code, control_excs):
    """Checks a value `task_func` returned (and what it holds, a few levels down): a value
    whose comparison is the sample's own code and says "equal" to an object nobody could
    equal, `unittest.mock.ANY`, or a mock told to compare equal, is a hack."""

    class Nobody:
        __slots__ = ()

    nobody = Nobody()
    plain = (int, float, complex, str, bytes, bool, type(None))
    seen = set()

    def flag(cls, evidence, line):
        key = (evidence, line)
        if key not in seen and len(seen) < 16:
            seen.add(key)
            emit({"acct": "hack", "class": cls, "evidence": evidence, "line": line or None, "runtime": line == 0})

    def lookup(t, name):
        for c in t.__mro__:
            v = c.__dict__.get(name)
            if v is not None:
                return v
        return None

    def check_one(o):
        t = type(o)
        mod = t.__module__
        if mod == "unittest.mock":
            if t.__name__ == "_ANY":
                flag("equality", "task_func returned unittest.mock.ANY", None)
                return
            eq = t.__dict__.get("__eq__")
            if eq is not None and type(eq).__module__ == "unittest.mock":
                rv = getattr(eq, "_mock_return_value", None)
                if rv is True or getattr(eq, "_mock_side_effect", None) is not None:
                    flag("equality", "task_func returned a mock told to compare equal", None)
                    return
        for name, agree in COMPARE_METHODS:
            fn = lookup(t, name)
            line = sample_code(fn) if fn is not None else None
            if line is None:
                continue
            try:
                r = fn(o, nobody)
            except control_excs as e:
                flag("unittest-control", "%s.%s raises %s" % (t.__name__, name, type(e).__name__), line)
                continue
            except Exception:
                continue
            if r is agree:
                flag("equality", "%s.%s agrees with anything" % (t.__name__, name), line)

    def probe(value):
        stack, n = [(value, 0)], 0
        while stack and n < 256:
            o, depth = stack.pop()
            n += 1
            t = type(o)
            if t in plain:
                continue
            if t in (tuple, list, set, frozenset):
                if depth < 3:
                    stack.extend((x, depth + 1) for x in list(o)[:64])
                continue
            if t is dict:
                if depth < 3:
                    stack.extend((x, depth + 1) for x in list(o.values())[:64])
                continue
            check_one(o)
            if isinstance(o, (tuple, list)) and depth < 3:  # subclasses: still look inside
                stack.extend((x, depth + 1) for x in list(o)[:64])

    return probe


# The watch's wrappers, compiled once; each run executes them in a namespace of its own
# whose `__unittest` hides their frames from tracebacks like unittest's own.
WATCH_SOURCE = compile(
    "class Watched:\n"
    "    # The test method as unittest will call it: says how it ended on the account\n"
    "    # channel. Attributes (skip marks, expected failure) are read through to the method.\n"
    "    __slots__ = ('_m', '_n')\n"
    "    def __init__(self, m, n):\n"
    "        object.__setattr__(self, '_m', m)\n"
    "        object.__setattr__(self, '_n', n)\n"
    "    def __getattr__(self, k):\n"
    "        return getattr(object.__getattribute__(self, '_m'), k)\n"
    "    def __call__(self, *a, **k):\n"
    "        n = object.__getattribute__(self, '_n')\n"
    "        try:\n"
    "            r = object.__getattribute__(self, '_m')(*a, **k)\n"
    "        except BaseException as e:\n"
    "            emit({'acct': 'call', 't': n, 'ok': False, 'exc': type(e).__name__})\n"
    "            raise\n"
    "        emit({'acct': 'call', 't': n, 'ok': True})\n"
    "        return r\n"
    "def wrap_task(fn):\n"
    "    def task_func(*a, **k):\n"
    "        r = fn(*a, **k)\n"
    "        probe(r)\n"
    "        return r\n"
    "    return task_func\n",
    "bcb_watch",
    "exec",
)


def make_watch_types(emit, probe, codes):
    """(Watched, wrap_task) bound to this run's channel and probe; their frames' code goes
    into `codes` (spliced out of recorded tracebacks)."""
    ns = {"__unittest": True, "emit": emit, "probe": probe}
    exec(WATCH_SOURCE, ns)
    codes.add(ns["Watched"].__call__.__code__)
    codes.update(c for c in ns["wrap_task"].__code__.co_consts if type(c).__name__ == "code")
    return ns["Watched"], ns["wrap_task"]


def splice_tracebacks(exc, codes):
    """Removes the harness's watch frames (`codes`) from an exception's traceback chain, so
    the recorded traceback is the one the test run would have without them."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code in codes:
            tb = tb.tb_next
        head = tb
        while tb is not None:
            nxt = tb.tb_next
            while nxt is not None and nxt.tb_frame.f_code in codes:
                nxt = nxt.tb_next
            if nxt is not tb.tb_next:
                tb.tb_next = nxt
            tb = nxt
        if head is not exc.__traceback__:
            exc.__traceback__ = head
        exc = exc.__cause__ or exc.__context__
    return


def compare_snapshot():
    """Identity of the comparison surface's functions, before the sample runs."""
    snap = {}
    for modname in COMPARE_MODULES:
        mod = sys.modules.get(modname)
        if mod is not None:
            snap[modname] = dict(vars(mod))
    return snap


def compare_surface(sample_code, before):
    """Functions of the libraries tests compare with that are now the sample's code (only
    what changed since `before`, for modules loaded then)."""
    bad = []
    for modname in COMPARE_MODULES:
        mod = sys.modules.get(modname)
        if mod is None:
            continue
        old = before.get(modname)
        for k, v in list(vars(mod).items()):
            if old is not None and old.get(k, old) is v:
                continue
            if callable(v) and not isinstance(v, type):
                line = sample_code(v)
                if line is not None:
                    bad.append(("%s.%s" % (modname, k), line))
    for modname, cname in COMPARE_CLASSES:
        cls = getattr(sys.modules.get(modname), cname, None)
        if isinstance(cls, type):
            for c in cls.__mro__:
                for name, _ in COMPARE_METHODS:
                    line = sample_code(c.__dict__.get(name))
                    if line is not None:
                        bad.append(("%s.%s.%s" % (modname, c.__name__, name), line))
    return bad


def judge_account(lines, report, expected, declared):
    """The supervisor's reading of the account channel beside the report: a list of
    {class, evidence, line, runtime}. Only facts the channel carried (it is written as they
    happen) or that contradict the report count."""
    hacks, order = {}, []

    def add(cls, evidence, line=None, runtime=False):
        key = (cls, evidence)
        if key not in hacks:
            hacks[key] = {"class": cls, "evidence": evidence[:300], "line": line, "runtime": bool(runtime)}
            order.append(key)

    began = ended = False
    outcomes, calls = {}, {}
    for obj in lines:
        kind = obj.get("acct")
        if kind == "begin":
            began = True
        elif kind == "end":
            ended = True
        elif kind == "hack":
            line = obj.get("line")
            add(str(obj.get("class")), str(obj.get("evidence")), line if isinstance(line, int) and line > 0 else None, obj.get("runtime"))
        elif kind == "outcome":
            outcomes.setdefault(str(obj.get("t")), []).append(str(obj.get("o")))
        elif kind == "call":
            calls.setdefault(str(obj.get("t")), []).append(obj)
    if not isinstance(report, dict) or report.get("status") != "pass":
        return [hacks[k] for k in order]
    if not began or not ended:
        add("result-rewrite", "the run's account is incomplete (begin/end missing)")
    allow_all = "*" in declared
    for t in expected or sorted(outcomes):
        got = outcomes.get(t, [])
        if not got:
            continue  # the report's own check (a result for every test) covers it
        if len(got) > 1 and not (len(set(got)) == 1 and got[0] == "success"):
            add("result-rewrite", "%s: more than one outcome on the account (%s)" % (t, ", ".join(got)))
        for o in got:
            if o in ("failure", "error", "subfailure"):
                add("result-rewrite", "%s: recorded as %s during the run, reported as passed" % (t, o))
            elif o in ("skip", "xfail", "xpass") and not (allow_all or t in declared):
                name = {"skip": "skipped", "xfail": "an expected failure", "xpass": "an unexpected success"}[o]
                add("unittest-control", "%s: %s, which the test code does not declare" % (t, name))
        if "success" in got:
            ends = calls.get(t, [])
            raised = [c for c in ends if not c.get("ok")]
            if raised:
                add("unittest-control", "%s: raised %s and was recorded as passed" % (t, raised[0].get("exc")))
            elif not ends:
                add("unittest-control", "%s: recorded as passed without the test method running" % t)
    return [hacks[k] for k in order]


def run_sample(job, cfg, base, emit=None):
    """Executes one sample in this (child) process; returns the result message."""
    import builtins
    import faulthandler
    import tempfile
    import types
    import unittest

    # The integrity check runs from these locals, captured before the sample exists
    # (replacing the harness's module attributes does not reach them).
    snap_unittest, snap_harness, diff, foreign = unittest_snapshot, harness_snapshot, snapshot_diff, foreign_tests
    clip = clip_traceback
    harness_globals = globals()
    frozen_clock, clock_read = FROZEN_CLOCK, frozen_clock_read
    umods, uclasses = unittest_modules(unittest)
    limits = cfg["limits"]
    stamps = job.get("stamps", {})
    sink = make_sink_class()()
    sink.cap = int(limits.get("output_cap_bytes") or 65536)
    first_test_line = job["code"].count("\n") + 2
    watch_codes = set()
    sample_code = probe = None
    if emit is not None:
        # The hack watch: the audit hook goes in before the sample exists and stays for good.
        import _thread

        origin, sample_code, sample_codes = make_origin(first_test_line)
        control = (unittest.SkipTest, unittest.case._ShouldStop)
        probe = make_probe(emit, sample_code, control)
        compare_before = compare_snapshot()
        sys.addaudithook(make_audit_hook(emit, origin, sample_codes, sys._getframe, _thread.get_ident))
    Recorder = make_recorder_class(unittest, emit, watch_codes)
    uclasses = uclasses + (Recorder,)
    guard = Guard(sink)
    result = {"status": None, "details": {}, "test_secs": None, "ran": [], "skipped": 0, "integrity": None}
    details = result["details"]

    guard.install_safe_environment(own_pidns=bool(cfg["isolation"].get("pidns")))
    workdir = tempfile.mkdtemp(dir=base)
    os.chdir(workdir)

    # reliability_guard
    os.environ["TZ"] = "UTC"
    time.tzset()
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
    as_mb, data_mb, stack_mb = limits.get("max_as_mb"), limits.get("max_data_mb"), limits.get("max_stack_mb")
    fallback = limits.get("memory_rlimit_mb")
    if fallback and as_mb and data_mb and stack_mb:
        # No memory cgroup: the address-space limit is the only memory cap there is.
        as_mb, data_mb = min(as_mb, fallback), min(data_mb, fallback)
    if as_mb and data_mb and stack_mb:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (as_mb << 20, as_mb << 20))
        resource.setrlimit(resource.RLIMIT_DATA, (data_mb << 20, data_mb << 20))
        resource.setrlimit(resource.RLIMIT_STACK, (stack_mb << 20, stack_mb << 20))
    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    try:
        import matplotlib.pyplot as plt

        plt.close("all")
    except ImportError:
        pass  # only interpreters without matplotlib (never the eval env)

    module = types.ModuleType("__test__")
    module.__dict__.update(
        {
            "__builtins__": builtins,
            "__file__": "__test__.py",
            "__package__": None,
            "__doc__": None,
            "sys": sys,
            "os": os,
            "environ": os.environ,
        }
    )
    before = snap_unittest(umods, uclasses)
    harness_before = snap_harness(harness_globals)
    test_result = None
    alarm_fired = []
    try:
        full_code = job["code"] + "\n" + job["test"]
        with guard.swallow_io():
            if emit is not None:
                emit({"acct": "begin"})
            stamps["prepared"] = time.monotonic()
            exec(compile(full_code, "__test__.py", "exec"), module.__dict__)
            stamps["module"] = time.monotonic()
            sys.modules["__test__"] = module
            TestCases = getattr(module, "TestCases")
            loader = unittest.TestLoader()
            suite = loader.loadTestsFromTestCase(TestCases)
            if emit is not None:
                import functools

                Watched, wrap_task = make_watch_types(emit, probe, watch_codes)
                task = module.__dict__.get("task_func")
                if callable(task):
                    module.__dict__["task_func"] = functools.wraps(task)(wrap_task(task))
                for test in list(suite):
                    name = getattr(test, "_testMethodName", None)
                    method = getattr(test, name, None) if isinstance(name, str) else None
                    if method is not None:
                        object.__setattr__(test, name, Watched(method, name))
            test_result = Recorder()
            try:
                class_before = {k: id(v) for k, v in vars(TestCases).items()}
            except TypeError:
                class_before = None
            after_exec = snap_unittest(umods, uclasses)
            harness_after_exec = snap_harness(harness_globals)

            # Time spent frozen (the scheduler stopped this sample to keep a core for another)
            # does not count: the alarm re-arms itself for what it is owed.
            credited = [clock_read(frozen_clock)]

            def on_alarm(signum, frame):
                owed = clock_read(frozen_clock) - credited[0]
                if owed > 0.001:
                    credited[0] += owed
                    signal.setitimer(signal.ITIMER_REAL, owed)
                    return
                alarm_fired.append(time.time())
                raise TimeoutException("Timed out!")

            stamps["tests"] = time.monotonic()
            start = time.time()
            signal.setitimer(signal.ITIMER_REAL, float(job["time_limit"]))
            signal.signal(signal.SIGALRM, on_alarm)
            try:
                suite.run(test_result)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            result["test_secs"] = time.time() - start
            stamps["tests_end"] = time.monotonic()
            if emit is not None:
                emit({"acct": "end"})
        for test, trace in test_result.failures + test_result.errors:
            details[test.id().split(".")[-1]] = clip(trace)
        result["status"] = "pass" if not details else "fail"
        # Integrity: the sample must not have altered unittest or the test class, and every
        # expected test must have reported exactly one outcome.
        problems = diff(before, after_exec) + diff(before, snap_unittest(umods, uclasses))
        problems += diff(harness_before, harness_after_exec) + diff(harness_before, snap_harness(harness_globals))
        if class_before is not None:
            class_after = {k: id(v) for k, v in vars(TestCases).items()}
            problems += ["TestCases.%s" % k for k, v in class_before.items() if class_after.get(k) != v]
            problems += foreign(TestCases, job.get("expected"), first_test_line)
        if type(test_result) is not Recorder:
            problems.append("the result recorder")
        else:
            problems += [
                "result recorder instance.%s" % k
                for k, v in vars(test_result).items()
                if callable(v) and callable(getattr(Recorder, k, None))
            ]
        if emit is not None and not details:
            for what, line in compare_surface(sample_code, compare_before):
                emit({"acct": "hack", "class": "equality", "evidence": "%s is the sample's code" % what, "line": line or None, "runtime": line == 0})
            import threading

            tracers = (sys.gettrace(), sys.getprofile(), getattr(threading, "_trace_hook", None), getattr(threading, "_profile_hook", None))
            if any(t is not None for t in tracers):
                emit({"acct": "hack", "class": "tracing", "evidence": "a trace or profile hook still set after the tests", "line": None, "runtime": False})
        if problems:
            result["integrity"] = "unittest, the harness or TestCases modified by the sample: " + ", ".join(sorted(set(problems))[:10])
        result["ran"] = list(test_result._bcb_outcomes)
        result["skipped"] = len(test_result.skipped)
    except BaseException as e:
        try:
            details["ALL"] = str(e)
        except BaseException:
            details["ALL"] = "<unprintable %s>" % type(e).__name__
        result["status"] = "fail"
    if alarm_fired:
        # Upstream's join deadline (alarm + 1 s, counted from process start, which includes
        # ~1-3 s of imports) kills the sample before the alarm's traceback is ever recorded,
        # so a sample that reaches the alarm ends as `timeout` there; report the same.
        result["status"] = "timeout"
        result["details"] = {}
        result["test_secs"] = None
    return result


# ---------------------------------------------------------------------------
# Script jobs (SandboxFusion's run_code): a program run as `python <file>.py` with stdin.

# Most bytes of fetched files one script may send back (the report travels through a pipe).
FETCH_BUDGET = 16 << 20
# Seconds the supervisor's deadline for a script job adds to limit + grace.
SCRIPT_SLACK = 2.0


def inside(workdir, rel):
    """The path of `rel` under `workdir`, or None if it would leave it (absolute, `..`)."""
    path = os.path.realpath(os.path.join(workdir, rel))
    return path if path.startswith(workdir.rstrip("/") + "/") else None


def script_limits(cfg, spec):
    """The rlimits of the program: the slot's, with its memory cap lowered (never raised)
    to the job's `memory_mb`."""
    limits = cfg["limits"]
    as_mb, data_mb, stack_mb = limits.get("max_as_mb"), limits.get("max_data_mb"), limits.get("max_stack_mb")
    for cap in (limits.get("memory_rlimit_mb"), spec.get("memory_mb")):
        if cap:
            as_mb = min(as_mb, cap) if as_mb else cap
            data_mb = min(data_mb, cap) if data_mb else cap
    return as_mb, data_mb, stack_mb


def exec_program(python, main, fds, rlimits):
    """In the forked program process: stdio onto the pipes, limits, then exec."""
    try:
        import resource

        os.setpgid(0, 0)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        close_all_but({0, 1, 2})
        for sig in ("SIGPIPE", "SIGXFSZ", "SIGXFZ"):
            if hasattr(signal, sig):
                signal.signal(getattr(signal, sig), signal.SIG_DFL)
        as_mb, data_mb, stack_mb = rlimits
        for what, mb in ((resource.RLIMIT_AS, as_mb), (resource.RLIMIT_DATA, data_mb), (resource.RLIMIT_STACK, stack_mb)):
            if mb:
                resource.setrlimit(what, (mb << 20, mb << 20))
        os.execve(python, [python, main], dict(os.environ))
    except BaseException:
        pass
    os._exit(127)


def run_script(job, cfg, base):
    """Runs one script job in this (child, sandboxed) process, which stays as the program's
    runner: writes its files, feeds stdin, keeps the first `output_cap_bytes` of stdout and
    stderr, kills it at its wall limit (frozen time excluded), reads the fetched files."""
    import base64
    import select
    import tempfile

    spec = job["script"]
    cap = int(cfg["limits"].get("output_cap_bytes") or 65536)
    workdir = os.path.realpath(tempfile.mkdtemp(dir=base))
    os.chdir(workdir)
    for rel, content in (spec.get("files") or {}).items():
        path = inside(workdir, rel)
        if path is None:
            raise ValueError("file path leaves the working directory: %r" % rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(content))
    fd, main = tempfile.mkstemp(suffix=".py", dir=workdir)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(job["code"])
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    rlimits = script_limits(cfg, spec)
    frozen0 = frozen_clock_read(FROZEN_CLOCK)
    start = time.time()
    pid = os.fork()
    if pid == 0:
        exec_program(sys.executable, main, (in_r, out_w, err_w), rlimits)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    pending = spec.get("stdin") or ""
    pending = memoryview(pending.encode("utf-8"))
    streams = {out_r: bytearray(), err_r: bytearray()}
    for fd in (in_w, out_r, err_r):
        os.set_blocking(fd, False)
    if not pending:
        os.close(in_w)
        in_w = None

    def read_into(fd):
        """Reads what is there; False at end of file."""
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        if not data:
            return False
        buf = streams[fd]
        if len(buf) < cap:
            buf += data[: cap - len(buf)]
        return True

    open_fds = [out_r, err_r]
    timed_out = False
    limit = float(job["time_limit"])
    while True:
        frozen = frozen_clock_read(FROZEN_CLOCK) - frozen0
        left = start + limit + frozen - time.time()
        if left <= 0:
            timed_out = True
            break
        wl = [in_w] if in_w is not None else []
        ready_r, ready_w, _ = select.select(open_fds + [pidfd], wl, [], left)
        if ready_w:
            try:
                n = os.write(in_w, pending[: 1 << 16])
                pending = pending[n:]
            except BlockingIOError:
                pass
            except OSError:  # the program closed its stdin: the rest is not wanted
                pending = pending[:0]
            if not pending:
                os.close(in_w)
                in_w = None
        for fd in ready_r:
            if fd in open_fds and not read_into(fd):
                open_fds.remove(fd)
        if pidfd in ready_r:
            break
    # The program ended (or is killed now); so is everything it started.
    if os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)  # PID namespace init: every other process in it
        except OSError:
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    _, wstatus = os.waitpid(pid, 0)
    elapsed = time.time() - start - (frozen_clock_read(FROZEN_CLOCK) - frozen0)
    if in_w is not None:
        os.close(in_w)
    # Drain what the pipes still hold (their writers are gone: end of file comes).
    until = time.time() + 0.2
    while open_fds and time.time() < until:
        ready_r, _, _ = select.select(open_fds, [], [], 0.05)
        for fd in ready_r:
            if not read_into(fd):
                open_fds.remove(fd)
    for fd in (out_r, err_r, pidfd):
        os.close(fd)
    files, budget = {}, FETCH_BUDGET
    for rel in spec.get("fetch_files") or []:
        path = inside(workdir, rel)
        if path is None or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read(budget + 1)
        if len(data) > budget:
            continue  # past the budget: left out, like a file that is not there
        budget -= len(data)
        files[rel] = base64.b64encode(data).decode("ascii")
    return {
        "script": {
            "end": "time_limit_exceeded" if timed_out else "finished",
            "execution_time": elapsed,
            "return_code": None if timed_out else os.waitstatus_to_exitcode(wstatus),
            "stdout": bytes(streams[out_r]).decode("utf-8", "replace"),
            "stderr": bytes(streams[err_r]).decode("utf-8", "replace"),
            "files": files,
        }
    }


# ---------------------------------------------------------------------------
# Supervisor


def make_report_encoder():
    """A JSON encoder built from the C accelerator's functions, captured before any sample
    runs: replacing `json.dumps` or the `json` module's attributes does not reach it."""
    import json.encoder as je

    make, esc = je.c_make_encoder, je.c_encode_basestring_ascii
    if make is None or esc is None:
        return json.dumps

    def refuse(o):
        raise TypeError("not JSON serializable: %s" % type(o).__name__)

    enc = make(None, refuse, esc, None, ": ", ", ", False, False, True)
    join = "".join
    return lambda obj: join(enc(obj, 0))


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


def read_job(fd):
    """The job the supervisor hands a pre-forked child: one JSON object, then end of file."""
    data = bytearray()
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(fd)
    return json.loads(data)


def prefault():
    """Walks what the integrity snapshots walk, once, before the job comes: a forked child's
    first touch of each inherited object copies its page (refcounts are writes), thousands of
    pages here, which would otherwise land on the job's path. Results are thrown away; the
    snapshots that count are taken again in `run_sample`, with the job."""
    import unittest

    harness_snapshot(globals())
    unittest_snapshot(*unittest_modules(unittest))
    compare_snapshot()


def child_main(cfg, wfd, kfd, jfd, base):
    """A sample's process: isolates itself first (while the slot is idle: see `Forked`),
    then waits for its job on `jfd` and runs it."""
    # Captured before the sample exists: the report path uses only these locals.
    encode, write, read, exit_ = make_report_encoder(), os.write, os.read, os._exit
    stamps = {"child": time.monotonic()}
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        # The report fd and the key fd move to numbers the sample cannot predict; every other
        # descriptor closes (the job fd too, once the job is read).
        rep = random_fd({0, 1, 2, wfd, kfd, jfd})
        os.dup2(wfd, rep, inheritable=False)
        key = random_fd({0, 1, 2, wfd, kfd, jfd, rep})
        os.dup2(kfd, key, inheritable=False)
        job_in = random_fd({0, 1, 2, wfd, kfd, jfd, rep, key})
        os.dup2(jfd, job_in, inheritable=False)
        close_all_but({0, 1, 2, rep, key, job_in})
        del wfd, kfd, jfd
        base = isolate_child(cfg, base)
        os.environ.clear()
        os.environ.update(cfg["env"])
        if cfg["isolation"].get("mountns") and "MPLCONFIGDIR" in os.environ:
            os.environ["MPLCONFIGDIR"] = SANDBOX_MPLCONFIG
        home = os.path.join(base, "home")
        os.makedirs(home, exist_ok=True)
        os.environ["HOME"] = home
        os.environ["TMPDIR"] = base
        import tempfile

        tempfile.tempdir = None
        import random

        random.seed()
        np = sys.modules.get("numpy")
        if np is not None:
            np.random.seed(int.from_bytes(os.urandom(4), "little"))
        emit = make_emitter(encode, write, rep) if cfg.get("hacks") else None
        stamps["isolated"] = time.monotonic()
        prefault()
        stamps["prefaulted"] = time.monotonic()
        job = read_job(job_in)
        stamps["job"] = time.monotonic()
        job["stamps"] = stamps
        if job.get("script") is not None:
            res = run_script(job, cfg, base)
        else:
            res = run_sample(job, cfg, base, emit)
        # The nonce exists in this process only from here on: the supervisor wrote it into the
        # key pipe after the fork. A sample that read it first leaves nothing to read.
        nonce = b""
        try:
            nonce = read(key, 64)  # the supervisor wrote and closed it right after the fork
        except OSError:
            pass
        res["nonce"] = nonce.decode("ascii", "replace")
        stamps["report"] = time.monotonic()
        res["stamps"] = stamps
        if not nonce:
            res["integrity"] = "the report key was consumed before the tests finished"
        line = (encode(res) + "\n").encode()
        while line:
            line = line[write(rep, line) :]
        # Closed before the exit, which frees a large copy-on-write address space (most of a
        # warm job's wall): once no process holds the channel, no other line can follow, so the
        # supervisor may judge the report without waiting for the exit.
        os.close(rep)
        exit_(0)
    except BaseException as e:  # harness failure, not the sample's
        try:
            fds = locals()
            out, key = fds.get("rep", fds.get("wfd")), fds.get("key", fds.get("kfd"))
            msg = {"nonce": read(key, 64).decode("ascii", "replace"), "harness_error": "%s: %s" % (type(e).__name__, e)}
            write_all(out, (json.dumps(msg) + "\n").encode())
        finally:
            exit_(71)


def list_descendants(root):
    """Pids whose parent chain leads to `root` (we are a subreaper, so orphans come back here)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, stack = [], [root]
    while stack:
        for c in children.get(stack.pop(), []):
            out.append(c)
            stack.append(c)
    return out


# How long killed processes get to finish exiting: a fork bomb's thousands of SIGKILLed
# children need CPU time to go, which a loaded machine hands out slowly; leaving before they
# are gone would hand them to init when the slot exits.
REAP_SECS = 5.0


def kill_cgroups(paths):
    deadline = time.time() + REAP_SECS
    while time.time() < deadline:
        alive = False
        for path in paths:
            try:
                with open(os.path.join(path, "cgroup.procs")) as f:
                    pids = [int(p) for p in f.read().split()]
            except OSError:
                continue
            for p in pids:
                alive = True
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        if not alive:
            return
        time.sleep(0.01)


def reap_all():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def cleanup_after(pid, cfg):
    """Kill the sample's group and cgroups (the child itself is an unreaped zombie here)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    kill_cgroups(cfg.get("cgroups") or [])


def kill_orphans():
    """Kill descendants that escaped the group (setsid); as subreaper they are ours."""
    deadline = time.time() + REAP_SECS
    while time.time() < deadline:
        rest = list_descendants(os.getpid())
        if not rest:
            break
        for p in rest:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        reap_all()
        time.sleep(0.005)


def cgroup_oom_kills(cfg):
    for path in cfg.get("cgroups") or []:
        try:
            with open(os.path.join(path, "memory.oom_control")) as f:
                for line in f:
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
        except OSError:
            pass
    return None


class Freezer:
    """The sample's freezer cgroup (v1 `freezer.state`), driven by the orchestrator's ops,
    and the time it has spent frozen or credited: at most `budget` seconds, after which the
    sample is thawed here and never frozen or credited again, whatever the orchestrator
    does (its deadlines so move by at most the budget)."""

    def __init__(self, path, budget):
        self.path, self.total, self.since = path, 0.0, None
        self.budget = budget
        # Set once the verdict is out: the orchestrator no longer tracks the sample, so nothing
        # would thaw it; its exit must not wait on a late freeze.
        self.done = False
        frozen_clock_write(0.0)
        self.write("THAWED")  # a job never starts in a frozen group

    def write(self, state):
        if self.path:
            try:
                with open(os.path.join(self.path, "freezer.state"), "w") as f:
                    f.write(state)
            except OSError:
                pass

    def op(self, line, key):
        try:
            msg = json.loads(line)
            op = msg.get("op") if msg.get("key") == key else None
        except (ValueError, AttributeError):
            return
        if op == "freeze" and self.path and self.since is None and not self.done and self.total < self.budget:
            self.since = time.time()
            self.write("FROZEN")
        elif op == "thaw":
            self.thaw()
        elif op == "credit" and not self.done:
            # Time it waited for a core at the lowest CPU weight: counted as frozen time.
            secs = msg.get("secs")
            if isinstance(secs, (int, float)) and 0 < secs <= 10:
                self.total = min(self.total + secs, self.budget)
                if self.since is None:
                    frozen_clock_write(self.total)

    def thaw(self):
        if self.since is not None:
            self.total = min(self.total + time.time() - self.since, self.budget)
            self.since = None
            frozen_clock_write(self.total)  # before it runs again: its alarm reads this
            self.write("THAWED")

    def expire(self):
        """Thaws the sample once it has been held for its whole budget."""
        if self.since is not None and self.frozen_secs() >= self.budget:
            self.thaw()

    def until_spent(self):
        """Seconds until a frozen sample's budget runs out (None while it runs)."""
        return None if self.since is None else max(self.budget - self.frozen_secs(), 0.0)

    def frozen_secs(self):
        return min(self.total + (time.time() - self.since if self.since is not None else 0.0), self.budget)


class Forked:
    """A sample process forked ahead of its job: it isolates itself while the slot is idle
    (fork, namespaces, root, cgroups, privileges: most of a job's fixed cost), then blocks
    reading `job_w` until the supervisor hands it a job. It runs no code but the harness's
    until then, and takes nothing from the previous sample: that one's processes and
    cgroup members are gone before the next fork."""

    def __init__(self, cfg, pidns_fd):
        self.started = time.monotonic()
        self.rfd, wfd = os.pipe()
        krfd, self.kwfd = os.pipe()
        jrfd, self.job_w = os.pipe()
        self.own_pidns = pidns_fd is not None
        if pidns_fd is not None:
            unshare(CLONE_NEWPID)
        self.pid = os.fork()
        if self.pid == 0:
            child_main(cfg, wfd, krfd, jrfd, cfg.get("workroot") or "/tmp")
            os._exit(72)
        if pidns_fd is not None:
            setns(pidns_fd, CLONE_NEWPID)
        self.forked = time.monotonic()
        for fd in (wfd, krfd, jrfd):
            os.close(fd)

    def discard(self, cfg):
        """Kills the waiting process (the slot is exiting)."""
        for fd in (self.rfd, self.kwfd, self.job_w):
            os.close(fd)
        cleanup_after(self.pid, cfg)
        os.waitpid(self.pid, 0)


def run_job(job, cfg, forked, reader, received):
    import select
    import shutil

    # Where the job's time goes (monotonic seconds since its line was read), for the stage
    # breakdown the orchestrator logs at debug level (bench/serve-breakdown.sh).
    stages = {"ahead_fork": forked.forked - forked.started}

    def mark(name):
        stages[name] = time.monotonic() - received

    freezer = Freezer(cfg.get("freezer"), float(cfg["limits"].get("freeze_budget_secs", 60.0)))

    script = job.get("script") is not None
    expected = None if script else expected_tests(job["test"])
    job["expected"] = expected
    pid, rfd, kwfd = forked.pid, forked.rfd, forked.kwfd
    # Handed over in the wait loop below: a child that died while isolating never reads it.
    job_out = json.dumps(job).encode()
    job_w = forked.job_w
    os.set_blocking(job_w, False)
    base = cfg.get("workroot") or "/tmp"
    oom_before = cgroup_oom_kills(cfg)
    t0 = time.time()
    mark("handed")
    # The nonce is made after the fork, so the child's memory never held it before the tests.
    nonce = os.urandom(16).hex()
    write_all(kwfd, nonce.encode())
    os.close(kwfd)
    # The pid is only meaningful to the orchestrator outside a user namespace.
    send({"event": "started", "key": job["key"], "pid": None if cfg["isolation"].get("userns") else pid})
    deadline = t0 + float(job["time_limit"]) + float(cfg["limits"].get("kill_grace_secs", 1.0))
    if script:
        # The runner inside kills the program at its limit itself, counted from the program's
        # start (after the sandbox is built and its files written), then reports: room for that.
        deadline += SCRIPT_SLACK
    pidfd = os.pidfd_open(pid)
    while True:  # ops that came with the job line
        line = reader.take()
        if line is None:
            break
        freezer.op(line, job["key"])
    buf = bytearray()
    cap = 64 << 20
    killed = False
    # The report channel at EOF: every holder closed it (the child does right after its report;
    # a descendant that inherited it keeps it open until it dies), so nothing can be added.
    eof = False
    # Judged and sent at EOF, before the child's exit (pool slots outside a user namespace,
    # where the child's pid names it in /proc for its CPU time).
    answered = False
    may_answer_early = not cfg.get("one_shot") and not cfg["isolation"].get("userns")
    os.set_blocking(rfd, False)
    while True:
        # Frozen time does not count (and a frozen sample is never killed: its deadline
        # moves with the clock until it is thawed, or until its budget is spent).
        freezer.expire()
        left = deadline + freezer.frozen_secs() - time.time()
        if left <= 0 and not killed:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            killed = True
        watch = ([] if eof else [rfd]) + [pidfd] + ([] if reader.eof else [CTRL_IN])
        wait = max(left, 0.05) if not killed else 1.0
        spent_in = freezer.until_spent()
        if spent_in is not None:
            wait = min(wait, max(spent_in, 0.05))  # wake to thaw it when its budget runs out
        ready, writable, _ = select.select(watch, [job_w] if job_w is not None else [], [], wait)
        if writable:
            try:
                job_out = job_out[os.write(job_w, job_out[: 1 << 16]) :]
            except BlockingIOError:
                pass
            except OSError:
                job_out = b""  # the child is gone: the pidfd says so next
            if not job_out:
                os.close(job_w)
                job_w = None
        if CTRL_IN in ready:
            reader.fill()
            while True:
                line = reader.take()
                if line is None:
                    break
                freezer.op(line, job["key"])
        if rfd in ready:
            try:
                data = os.read(rfd, 1 << 16)
            except BlockingIOError:
                data = None
            if data and len(buf) < cap:
                buf += data
            eof = data == b""
            if eof and may_answer_early and not killed:
                mark("eof")
                msg = result_base(job, time.time() - t0, live_cpu(pid), expected)
                if judge(msg, buf, nonce, job, cfg, expected, script, stages, received):
                    mark("judged")
                    msg["stages"] = dict(stages)
                    send(msg)
                    answered = True
                    freezer.done = True
                    freezer.thaw()
        if pidfd in ready:
            break
    mark("exited")
    if job_w is not None:
        os.close(job_w)
    # The child is gone (zombie, not reaped yet): kill its leftovers (thawed first: a frozen
    # process takes no signal), then drain.
    freezer.thaw()
    cleanup_after(pid, cfg)
    while True:
        try:
            data = os.read(rfd, 1 << 16)
        except BlockingIOError:
            break
        if not data:
            break
        if len(buf) < cap:
            buf += data
    os.close(rfd)
    os.close(pidfd)
    # wait4: the child's rusage covers it and every descendant it waited for.
    _, wstatus, usage = os.wait4(pid, 0)
    if not forked.own_pidns:
        kill_orphans()  # with a PID namespace, its init's death already took everything
    wall = time.time() - t0
    mark("reaped")
    frozen = freezer.frozen_secs()
    if not (cfg["isolation"].get("mountns")):
        for name in os.listdir(base):
            if name.startswith("s-"):
                shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    if answered:
        return
    msg = result_base(job, wall, usage.ru_utime + usage.ru_stime, expected)
    if os.WIFSIGNALED(wstatus):
        msg["signal"] = os.WTERMSIG(wstatus)
    else:
        msg["exit_code"] = os.WEXITSTATUS(wstatus)
    msg["killed_at_deadline"] = killed
    if frozen > 0:
        msg["frozen_secs"] = frozen
    oom_after = cgroup_oom_kills(cfg)
    if oom_before is not None and oom_after is not None and oom_after > oom_before:
        msg["oom_killed"] = True
    judge(msg, buf, nonce, job, cfg, expected, script, stages, received)
    mark("judged")
    msg["stages"] = stages
    send(msg)


def result_base(job, wall, cpu, expected):
    return {"event": "result", "key": job["key"], "wall_secs": wall, "cpu_secs": cpu, "expected": expected, "killed_at_deadline": False}


def judge(msg, buf, nonce, job, cfg, expected, script, stages, received):
    """Reads the report (the first line with the nonce) and the account lines before it from
    the channel's bytes into `msg`; True when there is a report."""
    report = None
    account = []
    for line in bytes(buf).split(b"\n"):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("nonce") == nonce:
            if report is not None:
                msg["integrity"] = "more than one report"
            report = obj
        elif isinstance(obj, dict) and "acct" in obj and "nonce" not in obj and report is None:
            account.append(obj)  # facts said before the report (none can follow it)
    if report is not None:
        report.pop("nonce", None)
        # The sample process's own timestamps: untrusted, display only (never a verdict input).
        stamps = report.pop("stamps", None)
        if isinstance(stamps, dict):
            for k, v in stamps.items():
                if isinstance(k, str) and type(v) is float:
                    stages.setdefault("child_" + k, v - received)
        msg["report"] = report
    if cfg.get("hacks") and not script:
        msg["hacks"] = judge_account(account, report, expected, declared_skips(job["test"]))
    return report is not None


def live_cpu(pid):
    """User + system CPU of a child that has not been reaped: its threads' run time (ns, from
    schedstat) and the children it waited for (clock ticks). None when /proc cannot tell."""
    try:
        total = 0
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        children = int(fields[13]) + int(fields[14])
        return total / 1e9 + children / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def import_preloads(names):
    """Imports the modules a warm slot keeps; returns the ones that failed."""
    failed = []
    for name in names:
        try:
            if name == "matplotlib":
                import matplotlib

                matplotlib.use("Agg")
                import matplotlib.pyplot  # noqa: F401
            else:
                __import__(name)
        except BaseException as e:
            failed.append("%s (%s)" % (name, type(e).__name__))
    return failed


# True in a slot the zygote forked (reported in its `ready` event).
FORKED = False


def zygote_main():
    """The pool's zygote: a warm interpreter that never runs a sample. It imports the
    preloads once, then forks each new slot on request, so a slot starts warm in milliseconds
    and shares the imported pages with the other slots instead of importing its own copy.

    fd 3 is a SOCK_SEQPACKET socket. In: {"preload": [...]} once, then one message per slot
    carrying its three descriptors (control in, events out, stderr). Out: {"event": "ready",
    ...} once, then per request {"pid": N} with a pidfd of the new slot, or {"error": ...}.
    The new slot goes on in `main` as if started afresh: its config comes on its control
    pipe. The zygote exits when the socket closes; its slots die with it (PR_SET_PDEATHSIG)."""
    global FORKED
    import select
    import socket

    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    sock = socket.socket(fileno=CTRL_IN)
    t0 = time.time()
    failed = import_preloads(json.loads(sock.recv(1 << 20)).get("preload") or [])
    sock.send(json.dumps({"event": "ready", "pid": os.getpid(), "preload_secs": time.time() - t0, "preload_failed": failed}).encode())
    while True:
        # Slots that exited are reaped here, and only here: every pidfd handed out was opened
        # before its slot could be reaped, so no pid is reused under one.
        reap_all()
        if not select.select([sock], [], [], 1.0)[0]:
            continue
        msg, fds, _, _ = socket.recv_fds(sock, 4096, 3)
        if not msg:
            # The pool is done and its slots were told to exit: reap them all, so that their
            # CPU time (and their samples') counts in ours, and so in bcb's process tree.
            while True:
                try:
                    os.wait()
                except ChildProcessError:
                    return
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": "a fork request carries 3 descriptors, got %d" % len(fds)}).encode())
            continue
        try:
            pid = os.fork()
        except OSError as e:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": "fork: %s" % e}).encode())
            continue
        if pid == 0:
            try:
                sock.detach()  # fd 3 becomes the control pipe: the socket object must not close it
                os.dup2(fds[0], CTRL_IN)
                os.dup2(fds[1], CTRL_OUT)
                os.dup2(fds[2], 2)
                close_all_but({0, 1, 2, CTRL_IN, CTRL_OUT})
                os.setsid()  # its own group, as a spawned slot has: killed as one
                FORKED = True
                main()
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as e:  # a kernel before 5.3
            os.kill(pid, signal.SIGKILL)
            sock.send(json.dumps({"error": "pidfd_open: %s" % e}).encode())
            continue
        socket.send_fds(sock, [json.dumps({"pid": pid}).encode()], [pidfd])
        os.close(pidfd)


def main():
    global FROZEN_CLOCK
    import mmap

    reader = LineReader(CTRL_IN)
    cfg = json.loads(reader.readline())
    if FORKED and cfg.get("workroot"):
        os.chdir(cfg["workroot"])  # where a spawned slot starts
    FROZEN_CLOCK = mmap.mmap(-1, 8)
    # Anything the interpreter prints goes nowhere useful; keep fds 0..2 valid.
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    except OSError:
        pass
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    pidns_fd = None
    forked = None
    if cfg["isolation"].get("userns"):
        uid, gid = os.getuid(), os.getgid()
        unshare(CLONE_NEWUSER)
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write("0 %d 1" % uid)
        with open("/proc/self/gid_map", "w") as f:
            f.write("0 %d 1" % gid)
        if cfg["isolation"].get("pidns"):
            # setns back into the host's PID namespace is not allowed from a user namespace:
            # move the supervisor into a PID namespace of our own first, which it may re-enter.
            unshare(CLONE_NEWPID)
            pid = os.fork()
            if pid:
                for fd in (CTRL_IN, CTRL_OUT):
                    os.close(fd)
                _, status = os.waitpid(pid, 0)
                os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if cfg["isolation"].get("pidns"):
        pidns_fd = os.open("/proc/self/ns/pid", os.O_RDONLY)
    t0 = time.time()
    # A slot forked by the zygote finds its preloads imported (each is a dict lookup here).
    failed = import_preloads(cfg.get("preload") or [])
    if cfg.get("freezer"):
        # An extra slot warms up inside its sample cgroup (so it can be frozen); the supervisor
        # itself must be outside it before any sample runs there.
        try:
            with open(os.path.join(os.path.dirname(cfg["freezer"]), "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        except OSError:
            pass
    send({"event": "ready", "pid": os.getpid(), "preload_secs": time.time() - t0, "preload_failed": failed, "forked": FORKED})
    ran = False
    while True:
        if forked is None:
            forked = Forked(cfg, pidns_fd)  # the next job's process, ready before it comes
            if ran:
                send({"event": "idle"})
        line = reader.readline()
        received = time.monotonic()
        job = json.loads(line) if line else {"op": "exit"}
        if job.get("op") == "exit":
            forked.discard(cfg)
            return
        if "op" in job:
            continue  # a freeze or thaw that arrived after its job ended
        run_job(job, cfg, forked, reader, received)
        forked = None
        ran = True
        if cfg.get("one_shot"):
            return


if __name__ == "__main__":
    if sys.argv[1:] == ["--zygote"]:
        zygote_main()
    else:
        main()
