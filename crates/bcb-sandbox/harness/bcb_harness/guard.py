"""Upstream semantics (bigcodebench 0.2.5 eval/utils.py + eval/__init__.py), re-implemented:
the process-level patches of its safe_environment (the kill guard) and swallow_io, and the
write-only output sink."""

import os
import signal
import sys


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
        """Upstream's kill guard, as it is, except where the kernel confines the sample's
        signals (`own_pidns`: a PID namespace of its own, or Landlock's signal scope): there
        every process it can signal is its own (the supervisor and the host are outside), so
        its kills go through. Upstream refuses a kill of any process the sample did not
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
