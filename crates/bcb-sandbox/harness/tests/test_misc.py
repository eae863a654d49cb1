"""The small pure parts: script paths and limits, the report encoder, the job pipe, a clone's
stop, the reaper's readings, descriptors, preloads, the interpreter's paths, the fallback's
task count and Landlock allow-list."""

import json
import os
import resource
import subprocess
import sys
import time

from conftest import run_forked

from bcb_harness import child, isolate, kernel, landlock, reap, rootfs, script, slot


def test_a_script_file_path_must_stay_in_its_directory(tmp_path):
    work = str(tmp_path)
    os.symlink("/etc", tmp_path / "etc")
    assert script.inside(work, "a/b.txt") == os.path.join(work, "a/b.txt")
    for rel in ("../x", "/etc/passwd", "a/../../x", "etc/passwd", ".", ""):
        assert script.inside(work, rel) is None, rel


def test_a_scripts_memory_cap_lowers_the_slots_limits_and_never_raises_them():
    cfg = {"limits": {"max_as_mb": 4096, "max_data_mb": 4096, "max_stack_mb": 10}}
    assert script.script_limits(cfg, {}) == (4096, 4096, 10)
    assert script.script_limits(cfg, {"memory_mb": 512}) == (512, 512, 10)
    assert script.script_limits(cfg, {"memory_mb": 9000}) == (4096, 4096, 10)
    cfg["limits"]["memory_rlimit_mb"] = 1024
    assert script.script_limits(cfg, {"memory_mb": 2048}) == (1024, 1024, 10)
    none = {"limits": {"max_as_mb": 0, "max_data_mb": 0, "max_stack_mb": 0}}
    assert script.script_limits(none, {"memory_mb": 256}) == (256, 256, 0)


def test_the_report_encoder_writes_what_json_dumps_writes_and_ignores_later_patches(monkeypatch):
    encode = child.make_report_encoder()
    report = {"status": "pass", "details": {"test_é": "Traceback\n\t\"x\""}, "test_secs": 0.5, "ran": ["a"], "skipped": 0, "integrity": None}
    assert encode(report) == json.dumps(report)
    monkeypatch.setattr(json, "dumps", lambda *a, **k: "forged")
    assert json.loads(encode(report)) == report
    try:
        encode({"x": object()})
        raise AssertionError("an object is not JSON")
    except TypeError:
        pass


def test_the_job_is_read_from_its_pipe_to_the_end(fds):
    r, w = fds.pipe()
    os.write(w, json.dumps({"key": 1, "code": "x = 1"}).encode())
    fds.close(w)
    assert child.read_job(r) == {"key": 1, "code": "x = 1"}
    fds.opened.remove(r)  # read_job closed it
    try:
        os.fstat(r)
        raise AssertionError("the job fd is closed")
    except OSError:
        pass


def test_a_clone_of_the_sample_ends_at_the_stop_and_the_sample_goes_on():
    stop = child.make_clone_stop()
    stop()  # the sample's own process: nothing happens

    def clone():
        stop()
        return 5  # never reached

    assert run_forked(clone) == 0


def test_oom_kills_are_read_from_the_memory_cgroup(tmp_path):
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    assert reap.cgroup_oom_kills({"cgroups": [str(tmp_path / "none"), str(tmp_path)]}) == 3
    assert reap.cgroup_oom_kills({"cgroups": [str(tmp_path / "none")]}) is None
    assert reap.cgroup_oom_kills({}) is None


def test_a_cgroup_member_outside_our_pid_namespace_or_ourselves_is_never_killed(tmp_path):
    # A slot's parent left in the sample's cgroup reads as pid 0 to a supervisor in a PID
    # namespace of its own: kill(0) would end the supervisor's own group.
    (tmp_path / "cgroup.procs").write_text("0\n%d\n" % os.getpid())
    t0 = time.time()
    reap.kill_cgroups([str(tmp_path)])
    assert time.time() - t0 < 1.0, "nothing there to wait for"


def test_oom_kills_are_read_from_a_v2_cgroup(tmp_path):
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\noom_group_kill 0\n")
    assert reap.cgroup_oom_kills({"cgroups": [str(tmp_path)]}) == 2


def test_refused_forks_are_read_from_the_pids_cgroup(tmp_path):
    (tmp_path / "pids.events").write_text("max 1234\n")
    assert reap.process_limit_hits({"cgroups": [str(tmp_path / "none"), str(tmp_path)]}) == 1234
    assert reap.process_limit_hits({"cgroups": [str(tmp_path / "none")]}) is None
    assert reap.process_limit_hits({}) is None


def test_a_live_childs_cpu_and_descendants_are_read_from_proc():
    p = subprocess.Popen([sys.executable, "-c", "import time; sum(range(10**6)); time.sleep(30)"])
    try:
        assert p.pid in reap.list_descendants(os.getpid())
        cpu = reap.live_cpu(p.pid)
        assert isinstance(cpu, float) and cpu >= 0.0
    finally:
        p.kill()
        p.wait()
    assert reap.live_cpu(p.pid) is None


def test_a_random_fd_is_free_and_avoids_the_given_numbers():
    top = max(64, min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 4096))
    avoid = set(range(10, top - 1))
    assert kernel.random_fd(avoid) == top - 1
    for _ in range(20):
        fd = kernel.random_fd({0, 1, 2})
        assert 10 <= fd < top
        try:
            os.fstat(fd)
            raise AssertionError("fd %d is open" % fd)
        except OSError:
            pass


def test_a_preload_that_fails_is_named_with_its_error():
    assert slot.import_preloads(["json", "bcb_no_such_module", "os.path"]) == ["bcb_no_such_module (ModuleNotFoundError)"]


def test_the_interpreters_trees_and_extra_paths_are_bound_once(tmp_path):
    paths = rootfs.python_paths({"ro_paths": [str(tmp_path), str(tmp_path / "missing")]})
    assert str(tmp_path) in paths and str(tmp_path / "missing") not in paths
    assert os.path.realpath(sys.prefix) in paths
    assert len(paths) == len(set(paths)) and all(os.path.isdir(p) for p in paths)


def test_the_uids_tasks_are_counted_with_their_threads():
    import threading

    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        assert isolate.tasks_of_uid(os.getuid()) >= 4
        assert isolate.tasks_of_uid(2**31 - 7) == 0
    finally:
        stop.set()
        for t in threads:
            t.join()


def test_landlocks_allow_list_reads_the_interpreter_and_writes_only_the_sample_dir(tmp_path):
    handled = landlock.handled_rights(3)
    rules = dict(landlock.allow_list({"env": {"MPLCONFIGDIR": "/mpl"}}, str(tmp_path), handled))
    assert rules[str(tmp_path)] == handled
    assert rules[sys.prefix] == landlock.READ
    assert rules["/mpl"] == landlock.READ and rules["/proc"] == landlock.READ
    assert rules["/etc/ssl"] == landlock.READ
    writable = [p for p, r in rules.items() if r & landlock.WRITE_FILE]
    assert sorted(writable) == sorted([str(tmp_path), "/dev/shm", "/dev/pts"] + ["/dev/" + d for d in rootfs.DEVICES])
    assert not any(p.startswith(os.path.expanduser("~/.cache/bcb/datasets")) for p in rules)
