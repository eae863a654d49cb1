#!/usr/bin/env bash
# Full (or hard) ground truth from an empty cache with this checkout's `bcb`, and optionally
# with a baseline `bcb` binary (e.g. an older main) one after the other on the same machine:
# wall time, peak RSS of the orchestrator, verdict differences, where the longest tasks
# finished, and bcb's wall as a ratio of two floors:
#   test-time floor = max(longest test, sum of test wall / cores)
#   CPU floor       = sum of per-sample CPU (rusage of the sample's process tree) / cores,
#                     to each verdict (the journal's cpu_secs), and to each reap: with the
#                     CPU each sample's process used after its verdict, its exit (debug log
#                     lines of bcb_execute::stages, from builds that write them)
# and the median per-sample overhead (job wall - test time) where the journal records both;
# where the machine's core-seconds over each run went (/proc/stat before and after it): the
# samples to their verdicts, their exits, the rest of bcb's tree, idle, and the rest (kernel
# threads and anything else on the machine);
# and the CPU the floor does not count (the whole process tree's user+sys minus the samples':
# slot warm-ups, supervisors, bcb itself) with the floor no schedule can beat,
#   reachable floor = max(longest job wall, process tree CPU / cores).
# (For the overhead of an older checkout side by side use bench/execute.sh BASELINE_SRC=.)
# Its journal of a full run (current.journal.jsonl in its output folder) is what bench/gt-priors.sh
# regenerates the shipped ground-truth timings (crates/bcb-eval/priors/gt-secs.tsv) from.
#
# usage: bench/gt-floors.sh [full|hard] [parallel]
# env:   BASELINE_BCB=path/to/older/bcb (optional), BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT,
#        SKIP_IDS=205,363 (optional: leave these tasks out, e.g. the two whose random Pool
#        hang to the 240-s limit otherwise sets the wall of either run)
set -euo pipefail
subset=${1:-full}
parallel=${2:-$(nproc)}
. "$(dirname "$0")/lib.sh"
export BCB_ENV_DIR=${BCB_ENV_DIR:-$HOME/.cache/bcb/eval-env-py311}
bench_out gt
(cd "$here" && cargo build -q --release --bin bcb)
current=${CARGO_TARGET_DIR:-$here/target}/release/bcb

ids=()
if [ -n "${SKIP_IDS:-}" ]; then
    keep=$(python3 - "$BCB_DATASET_DIR" "$subset" "$SKIP_IDS" <<'PY'
import glob, gzip, json, os, sys
data, subset, skip = sys.argv[1], sys.argv[2], {f"BigCodeBench/{s.split('/')[-1]}" for s in sys.argv[3].split(",")}
name = "bigcodebench-hard-v0.1.4.jsonl.gz" if subset == "hard" else "bigcodebench-v0.1.4.jsonl.gz"
path = next(iter(glob.glob(os.path.join(data, "**", name), recursive=True)))
tasks = [json.loads(l)["task_id"] for l in gzip.open(path, "rt")]
print(",".join(t.split("/")[1] for t in tasks if t not in skip))
PY
)
    ids=(--ids "$keep")
fi

run() { # name binary
    local name=$1 bin=$2 cache="$out/$1-cache"
    rm -rf "$cache"; mkdir -p "$cache"
    echo "== $name: $bin evaluate --check-gt-only --subset $subset --parallel $parallel" >&2
    head -1 /proc/stat >"$out/$name.stat0"
    BCB_LOG=${BCB_LOG:-warn,bcb_execute::stages=debug} BCB_CACHE_DIR=$cache /usr/bin/time -f '%e %M %U %S' -o "$out/$name.time" \
        "$bin" evaluate --check-gt-only --subset "$subset" --parallel "$parallel" "${ids[@]}" -q \
        >"$out/$name.out" 2>"$out/$name.err" || true
    head -1 /proc/stat >"$out/$name.stat1"
    cp "$cache"/ground-truth/*.jsonl "$out/$name.journal.jsonl"
}

[ -n "${BASELINE_BCB:-}" ] && run baseline "$BASELINE_BCB"
run current "$current"

python3 - "$out" "$parallel" "$here/bench" <<'PY'
import json, os, sys
out, cores = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from journal import exit_cpu
def load(name):
    rows = []
    for line in open(os.path.join(out, name + ".journal.jsonl")):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if "bcb_journal" in r:
            continue
        if "id" in r:  # current journal: {id: {task_id}, status, test_secs, wall_secs, cpu_secs}
            rows.append((r["id"]["task_id"], r["status"], r.get("test_secs"), r.get("wall_secs"), r.get("cpu_secs")))
        else:          # older journal: {task_id, status, secs}
            rows.append((r["task_id"], r["status"], r.get("secs"), None, None))
    wall, rss, user, sys_ = open(os.path.join(out, name + ".time")).read().split()[-4:]
    return rows, float(wall), int(rss) / 1024, float(user) + float(sys_)
runs = {n: load(n) for n in ("baseline", "current") if os.path.exists(os.path.join(out, n + ".time"))}
cur_rows = runs["current"][0]
longest = sorted((r for r in cur_rows if r[2]), key=lambda r: -r[2])[:5]
for name, (rows, wall, rss, tree_cpu) in runs.items():
    order = {r[0]: i for i, r in enumerate(rows)}
    ok = sum(r[1] == "pass" for r in rows)
    over = sorted(r[3] - r[2] for r in rows if r[2] is not None and r[3] is not None)
    med = f"{over[len(over) // 2] * 1000:.0f} ms" if over else "n/a (journal has no job wall)"
    print(f"{name:9s} wall {wall:7.1f}s  peak RSS {rss:6.1f} MB  pass {ok}/{len(rows)}  "
          f"median per-sample overhead (job wall - test) {med}")
    outside = tree_cpu - sum(r[4] or 0.0 for r in rows)
    print(f"{'':9s} process tree CPU {tree_cpu:.1f}s, {outside:.1f}s of it outside the samples "
          f"({1000 * outside / max(len(rows), 1):.0f} ms a job)")
    print(f"{'':9s} longest tasks finished at position: " +
          ", ".join(f"{t[0].split('/')[1]}@{order.get(t[0], -1)}" for t in longest))
tests = [r[2] or 0.0 for r in cur_rows]
walls = [r[3] or 0.0 for r in cur_rows]
cpus = [r[4] or 0.0 for r in cur_rows]
test_floor = max(max(walls), sum(walls) / cores)
cpu_floor = sum(cpus) / cores
wall = runs["current"][1]
print(f"floors (current, {cores} cores): test-time {test_floor:.1f}s (longest {max(walls):.1f}s, "
      f"sum of job wall {sum(walls):.1f}s, of test time {sum(tests):.1f}s), CPU {cpu_floor:.1f}s (sum {sum(cpus):.1f}s)")
print(f"current wall / test-time floor {wall / test_floor:.2f}   wall / CPU floor {wall / cpu_floor:.2f}")
after = exit_cpu(os.path.join(out, "current.err"))
if after:
    reaped = max(max(walls), (sum(cpus) + sum(after)) / cores)
    print(f"samples' CPU to their reap {sum(cpus) + sum(after):.1f}s ({sum(after):.1f}s of it after "
          f"{len(after)} verdicts: their exits); wall / max(CPU floor to the reap, longest job) "
          f"{wall / reaped:.3f}")
tree = runs["current"][3]
reachable = max(max(walls), tree / cores)
def jiffies(name, end):  # the "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal
    return [int(x) for x in open(os.path.join(out, f"{name}.stat{end}")).read().split()[1:9]]
if os.path.exists(os.path.join(out, "current.stat1")):
    hz = os.sysconf("SC_CLK_TCK")
    d = [b - a for a, b in zip(jiffies("current", 0), jiffies("current", 1))]
    machine, idle = sum(d) / hz, (d[3] + d[4]) / hz
    exits = sum(after) if after else 0.0
    parts = [("samples to their verdicts", sum(cpus)), ("their exits after them", exits),
             ("the rest of bcb's tree", tree - sum(cpus) - exits), ("idle", idle),
             ("the rest (kernel threads, other processes)", machine - tree - idle)]
    print(f"the machine's {machine:.1f} core-seconds over the run: " +
          ", ".join(f"{label} {secs:.1f} ({100 * secs / machine:.1f}%)" for label, secs in parts))
print(f"process tree CPU {tree:.1f}s, samples {sum(cpus):.1f}s: {tree - sum(cpus):.1f}s not in the CPU floor "
      f"({1000 * (tree - sum(cpus)) / max(len(cur_rows), 1):.0f} ms a job); reachable floor {reachable:.1f}s "
      f"(CPU floor x {reachable / cpu_floor:.2f}); wall / reachable floor {wall / reachable:.2f}")
if "baseline" in runs:
    b = {r[0]: r[1] for r in runs["baseline"][0]}
    c = {r[0]: r[1] for r in cur_rows}
    diff = sorted(t for t in b.keys() | c.keys() if b.get(t) != c.get(t))
    bw = runs["baseline"][1]
    print(f"current vs baseline: wall {wall / bw:.3f}x, peak RSS {runs['current'][2] / runs['baseline'][2]:.3f}x; "
          f"verdicts differ on {len(diff)} task(s): {', '.join(f'{t} {b.get(t)}->{c.get(t)}' for t in diff) or 'none'}")
print(f"(files in {out})")
PY
