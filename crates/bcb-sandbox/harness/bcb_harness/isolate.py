"""Isolation (child side): what a sample's process does to itself before any sample code
(session, death signal, cgroups, namespaces, its root, limits, the unprivileged user, no new
privileges, capabilities; Landlock (landlock.py) and a seccomp filter in degraded mode).
Every step is best effort, governed by the slot config, and the active set is reported once
by the supervisor's probe."""

import os
import signal

from . import cgroupfs, landlock
from .kernel import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWUTS,
    MS_PRIVATE,
    MS_REC,
    PR_CAPBSET_DROP,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    _check,
    libc,
    mount,
    prctl,
    unshare,
)
from .rootfs import build_root


# Unprivileged identity a sample runs as when the slot is host root (kernel overflow ids).
SANDBOX_UID = 65534
SANDBOX_GID = 65534


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


# Refused by the fallback's filter, by architecture: socket(), and the kernel keyring's calls
# (keyctl, add_key, request_key: not namespaced; Docker's default profile refuses them too).
DENIED_SYSCALLS = {"x86_64": (0xC000003E, (41, 248, 249, 250)), "aarch64": (0xC00000B7, (198, 217, 218, 219))}


def seccomp_no_sockets():
    """Degraded mode: socket() of any family fails with EACCES: no network, and no connecting
    to a pathname unix socket (Landlock does not check connect; a container may hold a
    runtime's or a bus's socket). socketpair() stays, for multiprocessing and asyncio. The
    keyring's calls fail alike, and every call of another ABI (i386 by int 0x80, x32's
    numbers): it would bypass this."""
    import ctypes
    import platform
    import struct

    arch, denied = DENIED_SYSCALLS[platform.machine()]
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | 13
    to_deny = 4 + len(denied) + 1  # the index of the last instruction

    def jump(i):
        return to_deny - (i + 1)

    prog = [(ld, 0, 0, 4), (jeq, 0, jump(1), arch), (ld, 0, 0, 0), (jge, jump(3), 0, 0x40000000)]
    prog += [(jeq, jump(4 + k), 0, nr) for k, nr in enumerate(denied)]
    prog += [(ret, 0, 0, allow), (ret, 0, 0, deny)]
    raw = b"".join(struct.pack("HBBI", *ins) for ins in prog)
    filt = ctypes.create_string_buffer(raw, len(raw))

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Prog(len(prog), ctypes.cast(filt, ctypes.c_void_p))
    _check(libc().prctl(22, 2, ctypes.byref(fprog), 0, 0), "seccomp")


def join_own_session_keyring():
    """A new, empty session keyring: the sample no longer possesses bcb's (or the container
    runtime's), whose keys it could otherwise list in /proc/keys and read. Refused where the
    keyring's calls are (Docker's default profile): nothing is possessed there either."""
    import ctypes
    import platform

    keyctl, join_session = {"x86_64": 250, "aarch64": 219}[platform.machine()], 1
    libc().syscall(ctypes.c_long(keyctl), ctypes.c_long(join_session), None)


def tasks_of_uid(uid):
    """Threads of every process whose real uid is `uid`, as RLIMIT_NPROC counts them (by
    /proc/PID/status: a process that is not dumpable shows root as its /proc owner)."""
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/status" % name) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue  # gone meanwhile
        if int(fields.get("Uid", "-1 ").split()[0]) == uid:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def isolate_child(cfg, base):
    """Runs in the forked child before any sample code. Returns the sample's base dir."""
    iso = cfg["isolation"]
    # Dumpable again (the supervisor is not: supervisor_out_of_reach), so /proc/self is the
    # sample's own, as for any process; it holds nothing of the supervisor's yet (forked before
    # its job's key existed). Its domain and uid decide who else may trace it.
    prctl(PR_SET_DUMPABLE, 1)
    os.setsid()
    join_own_session_keyring()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1 and not iso.get("pidns"):
        os._exit(70)  # supervisor already gone
    for path in cfg.get("cgroups") or []:
        cgroupfs.join(path)
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
            # The kernel counts every task of the uid (bcb's threads, the other slots and
            # samples where they share it, as in a container): the sample gets n beyond those.
            uid = SANDBOX_UID if iso.get("uid_switch") else os.getuid()
            n += tasks_of_uid(uid)
            # Never above the hard limit we were given (raising it is refused).
            hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
            if hard != resource.RLIM_INFINITY:
                n = min(n, hard)
            resource.setrlimit(resource.RLIMIT_NPROC, (n, n))
    if iso.get("uid_switch"):
        switch_to_sandbox_user(SANDBOX_UID, SANDBOX_GID)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if iso.get("dropcaps"):
        drop_capabilities()
    if iso.get("landlock"):
        landlock.restrict(cfg, base)
    if iso.get("seccomp_net"):
        seccomp_no_sockets()
    return base
