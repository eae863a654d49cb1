"""Isolation (child side): what a sample's process does to itself before any sample code
(session, death signal, cgroups, namespaces, its root, limits, the unprivileged user, no new
privileges, capabilities; Landlock and a seccomp filter in degraded mode). Every step is
best effort, governed by the slot config, and the active set is reported once by the
supervisor's probe."""

import os
import signal

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
from .rootfs import DEVICES, build_root


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
