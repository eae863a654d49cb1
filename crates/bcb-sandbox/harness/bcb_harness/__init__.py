# bcb execution harness: this package and its entry beside it, `bcb_harness.py` (all embedded
# in the bcb binary, written to a private dir, run as `python -I bcb_harness.py [--zygote]`).
#
# One "slot": a supervisor process that reads jobs on fd 3 and writes events on fd 4
# (newline-delimited JSON), and forks one child per job. The child isolates itself as far
# as the host permits, then runs the sample with the verdict semantics of bigcodebench
# 0.2.5 (`unsafe_execute`/`untrusted_check`): program = code + "\n" + test, exec'd as module
# `__test__`, `TestCases` run under an itimer, failures + errors -> details.
#
# Used both as a long-lived pre-warmed pool slot (modules imported once, then forked) and as
# a one-shot cold process (nothing preloaded), so both paths share the same isolation. With
# `--zygote` it is the pool's zygote instead (`zygote.zygote_main`): it imports the preloads
# once and forks each warm slot, which then runs `slot.main` as a spawned slot would.
#
# Modules, one job each (imports only at the top, none in a function: the entry takes them
# out of sys.modules once loaded):
#   slot        the slot's main loop          zygote      the pool's zygote
#   supervisor  a job from bcb's side          child       a sample's process, fork to report
#   isolate     the child confining itself     rootfs      the sample's filesystem
#   runner      a unittest sample, verdict     script      a script job (program + stdin)
#   guard       upstream's kill guard, sink    recorder    the unittest result, tracebacks
#   integrity   snapshots, tamper check
#   audit       hack watch: channel, hook      watch       hack watch: probe, wrappers
#   account     hack watch: the judging        freezer     the freezer cgroup, its budget
#   reap        killing and reaping leftovers  clock       the frozen clock shared page
#   channel     fds 3/4, the log               kernel      libc calls, descriptors
#   cgroupfs    the cgroups' files, v1 or v2
#
# Wire protocol (Rust side: crates/bcb-sandbox/src/wire.rs; change both together):
#   fd 3, in:  {protocol, isolation, limits: {<Limits fields>, kill_grace_secs, memory_rlimit_mb?,
#               tmpfs_mb, freeze_budget_secs}, env, preload, cgroups, freezer, cgroup_home,
#               workroot, one_shot} -- once
#              {key, code, test, time_limit, expected, declared_skips, script?} -- one per job
#                 expected: the test code's `test*` methods of class TestCases (null: none
#                 readable, or a script); declared_skips: the tests it lets skip, ["*"]: any
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

# The wire protocol's version (`WIRE_VERSION` in wire.rs): a config of another version is
# refused before anything runs.
PROTOCOL = 2
