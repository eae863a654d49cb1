"""The pool's zygote (`bcb_harness.py --zygote`): imports the preloads once, then forks
each warm slot on request."""

import gc
import json
import os
import signal
import time

from .channel import CTRL_IN, CTRL_OUT
from .kernel import PR_SET_DUMPABLE, PR_SET_PDEATHSIG, close_all_but, collapse_heap, prctl
from .reap import reap_all
from .slot import import_preloads, main


def zygote_main():
    """The pool's zygote: a warm interpreter that never runs a sample. It imports the
    preloads once, then forks each new slot on request, so a slot starts warm in milliseconds
    and shares the imported pages with the other slots instead of importing its own copy.

    fd 3 is a SOCK_SEQPACKET socket. In: {"preload": [...]} once, then one message per slot
    carrying its three descriptors (control in, events out, stderr). Out: {"event": "ready",
    ...} once, then per request {"pid": N} with a pidfd of the new slot, or {"error": ...}.
    The new slot goes on in `slot.main` as if started afresh: its config comes on its control
    pipe. The zygote exits when the socket closes; its slots die with it (PR_SET_PDEATHSIG)."""
    import select
    import socket

    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    prctl(PR_SET_DUMPABLE, 0)  # out of the samples' reach (each slot decides for itself)
    sock = socket.socket(fileno=CTRL_IN)
    t0 = time.time()
    failed = import_preloads(json.loads(sock.recv(1 << 20)).get("preload") or [])
    # The imports' garbage goes before the slots share the heap; what stays is frozen there
    # (see `slot.main`).
    gc.collect()
    gc.freeze()
    collapse_heap()
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
                main(forked_slot=True)
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
