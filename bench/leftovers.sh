#!/usr/bin/env bash
# A correct answer that leaves a process behind, beside a plain one (docs/scheduling.md,
# "Leftovers"): BigCodeBench/0's canonical solution twice at --parallel 2 (the floor: two
# plain copies), then once plain beside once with, at import, a fork whose child starts a
# session of its own, ignores SIGTERM and SIGHUP and execs `sleep` (under upstream's guard
# the exec returns). REPEATS times each, with a cold verdict cache; with BASELINE_BCB (an
# older main, say) the same runs go through it too, in the same loop, as the control.
# Prints each run's wall, the samples' CPU and the wall of the pair over the plain pair's.
# Then the mixed batch of tests/leftovers.rs through `bcb evaluate` (a dataset of twelve
# tasks whose test wants task_func() == 1, an answer each; a correct answer computes about
# 3 s): correct answers leaving
# sleeping, setsid, SIGTERM-ignoring, stopped and daemon-thread children among busy loops,
# fork bombs and a memory bomb, REPEATS times per binary: each answer's time from its start to
# its end on the queue (the queue's debug lines; a rerun's own), and how many samples started
# as extras and how many freezes the governor made.
#
# usage: bench/leftovers.sh [REPEATS=3]
# env:   PARTS ("pair batch": which of the two to run), BASELINE_BCB, BCB_BIN (default: this
#        checkout's release build), BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT
set -euo pipefail
repeats=${1:-3}
parts=" ${PARTS:-pair batch} "
. "$(dirname "$0")/lib.sh"
bench_setup leftovers
python3 - "$BCB_DATASET_DIR/bigcodebench-v0.1.4.jsonl.gz" "$out" <<'PY'
import gzip, json, sys
task = next(r for r in map(json.loads, gzip.open(sys.argv[1], "rt")) if r["task_id"] == "BigCodeBench/0")
plain = task["complete_prompt"] + task["canonical_solution"]
leaves = (
    "import os, signal\nif os.fork() == 0:\n    os.setsid()\n"
    "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n    signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
    '    os.execvp("sleep", ["sleep", "1000"])\n'
)
for name, rows in (("plain", [plain, plain + "\n# copy 2\n"]), ("leftover", [plain, leaves + plain])):
    with open("%s/%s.jsonl" % (sys.argv[2], name), "w") as f:
        for code in rows:
            f.write(json.dumps({"task_id": "BigCodeBench/0", "solution": code}) + "\n")
PY
bins=("bcb=$BCB_BIN")
[[ -n "${BASELINE_BCB:-}" ]] && bins+=("baseline=$BASELINE_BCB")
echo "machine: $(nproc) cores; BigCodeBench/0 at --parallel 2; floor: the plain pair's wall"
for i in $(seq "$repeats"); do
    [[ $parts == *" pair "* ]] || break
    for entry in "${bins[@]}"; do
        name=${entry%%=*} bin=${entry#*=}
        walls=()
        for kind in plain leftover; do
            dir=$out/$name-$i-$kind
            mkdir -p "$dir"
            cp "$out/$kind.jsonl" "$dir/s.jsonl"
            "$bin" evaluate --split complete --subset full --ids 0 --no-gt --no-cache --parallel 2 \
                --samples "$dir/s.jsonl" >"$dir/out" 2>"$dir/err"
            summary=$(grep -oE 'wall [0-9.]+s; .*of CPU [0-9.]+s' "$dir/err" | head -1)
            walls+=("$(grep -oE '^wall [0-9.]+' <<<"$summary" | cut -d' ' -f2)")
            echo "run $i $name $kind: $summary; $(grep -oE 'pass@1:.*' "$dir/out" | tr '\t' ' ')"
        done
        echo "run $i $name: leftover pair / plain pair = $(python3 -c "print('%.2f' % (${walls[1]} / ${walls[0]}))")x"
    done
done

python3 - "$BCB_DATASET_DIR/bigcodebench-v0.1.4.jsonl.gz" "$out" <<'PY'
import gzip, json, sys
task = next(r for r in map(json.loads, gzip.open(sys.argv[1], "rt")) if r["task_id"] == "BigCodeBench/0")
work = "def task_func():\n    n = 0\n    for i in range(100_000_000):\n        n += i\n    return 1\n"
task.update(test="import unittest\nclass TestCases(unittest.TestCase):\n    def test_it(self):\n        self.assertEqual(task_func(), 1)\n",
            canonical_solution=work, code_prompt="def task_func():\n", complete_prompt="def task_func():\n", libs="[]")
# One task per answer, as in the test: the queue learns from a timeout by task, and a fork
# bomb's timeout (its children's CPU is not in its process's rusage) reads as a sleep.
with open(sys.argv[2] + "/work-task.jsonl", "w") as f:
    for k in range(12):
        f.write(json.dumps(dict(task, task_id="BigCodeBench/%d" % k)) + "\n")
fork_exec = ("import os, signal\nif os.fork() == 0:\n    os.setsid()\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
             "    signal.signal(signal.SIGHUP, signal.SIG_IGN)\n    os.execvp(\"sleep\", [\"sleep\", \"987654\"])\n")
busy = "def task_func():\n    while True:\n        pass\n"
bomb = "import os\ndef task_func():\n    while True:\n        try:\n            os.fork()\n        except OSError:\n            pass\n"
batch = [
    ("busy-loop", busy), ("fork-bomb", bomb), ("plain", work), ("fork-exec-at-import", fork_exec + work),
    ("memory-bomb", "def task_func():\n    hog = []\n    while True:\n        hog.append(b'x' * (1 << 26))\n"),
    ("sleeping-child-new-session", "import subprocess\n_left = subprocess.Popen(['sh', '-c', \"trap '' TERM HUP; exec sleep 987654\"])\n" + work),
    ("busy-loop-again", busy + "# again\n"),
    ("forked-sleeper-ignoring-sigterm", "import os, signal, time\nif os.fork() == 0:\n    os.setsid()\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n    signal.signal(signal.SIGHUP, signal.SIG_IGN)\n    time.sleep(987654)\n    os._exit(0)\n" + work),
    ("fork-bomb-again", bomb + "# again\n"),
    ("daemon-thread-child", "import subprocess, threading\nthreading.Thread(target=lambda: subprocess.Popen(['sleep', '987654']), daemon=True).start()\n" + work),
    ("stopped-child", "import os, signal\nif os.fork() == 0:\n    signal.raise_signal(signal.SIGSTOP)\n    os._exit(0)\n" + work),
    ("plain-again", work + "# again\n"),
]
with open(sys.argv[2] + "/batch.jsonl", "w") as f:
    for k, (_, code) in enumerate(batch):
        f.write(json.dumps({"task_id": "BigCodeBench/%d" % k, "solution": code}) + "\n")
json.dump([name for name, _ in batch], open(sys.argv[2] + "/batch-names.json", "w"))
PY
echo "mixed batch: seconds from start to end on the queue per answer (BIGCODEBENCH_TIMEOUT_PER_TASK=4)"
for i in $(seq "$repeats"); do
    [[ $parts == *" batch "* ]] || break
    for entry in "${bins[@]}"; do
        name=${entry%%=*} bin=${entry#*=}
        dir=$out/$name-$i-batch
        mkdir -p "$dir"
        cp "$out/batch.jsonl" "$dir/s.jsonl"
        BCB_LOG=bcb_execute=debug,bcb_pool=debug BIGCODEBENCH_TIMEOUT_PER_TASK=4 "$bin" evaluate --dataset "$out/work-task.jsonl" \
            --split complete --subset full --no-gt --no-cache --parallel 2 --tamper-policy off \
            --samples "$dir/s.jsonl" >"$dir/out" 2>"$dir/err" || true
        python3 - "$dir/err" "$out/batch-names.json" "run $i $name" <<'PY'
import datetime, json, re, sys
names = json.load(open(sys.argv[2]))
start, took, again = {}, {}, set()
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"(\S+Z) DEBUG BigCodeBench/(\d+) sample \d+ (starts again|starts|ends)", line)
    if not m:
        continue
    at = datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
    k = int(m.group(2))
    if m.group(3) == "ends":
        took[k] = at - start[k]
    else:
        start[k] = at  # a rerun's start: the run that counts
        if m.group(3) == "starts again":
            again.add(k)
text = open(sys.argv[1], errors="replace").read()
extras, freezes = len(re.findall(r"starts on slot \d+ as Extra", text)), text.count("freezing the extra")
print("%s: %s; started as extras %d, freezes %d" % (sys.argv[3], ", ".join(
    "%s %.1f%s" % (names[k], took[k], " (rerun)" if k in again else "") for k in sorted(took)), extras, freezes))
PY
    done
done
