"""Landlock, where the sample has no mount namespace of its own (a container under its
runtime's default seccomp profile, a host without user namespaces): the same allow-list the
mount namespace builds (rootfs), as access rights instead of bind mounts. Reads and execution
only in the OS's trees, the interpreter's, the allowed parts of /etc, /proc and /sys; writes
only in the sample's own directory and the harmless devices; no signal or abstract unix
socket outside the sample's domain (ABI >= 6). Processes outside the domain (bcb, the
supervisor, other samples) cannot be traced, nor their /proc/PID/{mem,maps,environ} read."""

import ctypes
import os
import struct

from .kernel import libc
from .rootfs import DEVICES, ETC_ALLOW, ROOT_ALLOW, python_paths


EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1, 2, 4, 8
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 16, 32, 64, 128, 256
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 512, 1024, 2048, 4096
REFER, TRUNCATE = 8192, 16384  # ABI 2, ABI 3
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2  # ABI 6

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
RULE_PATH_BENEATH = 1

READ = EXECUTE | READ_FILE | READ_DIR
# The rights a rule on a file (not a directory) may carry.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE
# Kernel trees the tasks read (cpu counts, meminfo, their own /proc/self); another process's
# mem, maps and environ stay closed by the domain's ptrace scoping.
KERNEL_READ = ("/proc", "/sys")


def abi():
    """This kernel's Landlock ABI version (0: none)."""
    sc = libc().syscall
    sc.restype = ctypes.c_long
    return max(0, sc(ctypes.c_long(CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(1)))


def signals_confined(iso):
    """Whether the kernel keeps every signal of the sample inside its own processes: a PID
    namespace of its own, or Landlock's signal scope (ABI >= 6). Upstream's kill guard then
    lets its kills through (`Guard.install_safe_environment`): without them
    `multiprocessing.Pool.terminate()` cannot end its workers, and a worker left on the pool's
    queue lock is joined forever (BigCodeBench/205 and 363 hung so without namespaces)."""
    return bool(iso.get("pidns")) or (bool(iso.get("landlock")) and abi() >= 6)


def handled_rights(version):
    """Every filesystem right this ABI knows, reads included: what is not granted is denied."""
    rights = READ | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG
    rights |= MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    return rights


def allow_list(cfg, base, handled):
    """(path, rights) the sample is granted: its directory whole, the rest read-only or, for
    devices, read and write."""
    rules = [(base, handled)]
    mpl = (cfg.get("env") or {}).get("MPLCONFIGDIR")
    readable = list(ROOT_ALLOW) + python_paths(cfg) + list(KERNEL_READ) + ([mpl] if mpl else [])
    rules += [(p, READ) for p in readable]
    rules += [("/etc/" + name, READ) for name in ETC_ALLOW]
    rules += [("/dev/" + d, READ_FILE | WRITE_FILE | TRUNCATE) for d in DEVICES]
    rules += [("/dev/shm", handled), ("/dev/pts", READ_FILE | WRITE_FILE)]
    return rules


def restrict(cfg, base):
    """Confines this process and everything it starts to `allow_list` (needs no_new_privs)."""
    version = abi()
    if version < 1:
        raise OSError("landlock unavailable")
    sc = libc().syscall
    sc.restype = ctypes.c_long
    handled = handled_rights(version)
    if version >= 6:
        attr = struct.pack("QQQ", handled, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    elif version >= 4:
        attr = struct.pack("QQ", handled, 0)
    else:
        attr = struct.pack("Q", handled)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = sc(ctypes.c_long(CREATE_RULESET), buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for path, rights in allow_list(cfg, base, handled):
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                if path == base:
                    raise
                continue  # absent here, or closed to this uid anyway
            try:
                if not os.path.isdir(path):
                    rights &= FILE_RIGHTS
                rule = ctypes.create_string_buffer(struct.pack("=Qi", rights & handled, pfd), 12)
                ret = sc(ctypes.c_long(ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), rule, ctypes.c_uint32(0))
            finally:
                os.close(pfd)
            if ret != 0:
                raise OSError(ctypes.get_errno(), "landlock_add_rule %s" % path)
        if sc(ctypes.c_long(RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
