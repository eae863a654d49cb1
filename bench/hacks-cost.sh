#!/usr/bin/env bash
# What the reward-hack watch costs (issue 19): the full ground truth from an empty cache with
#   baseline  = a bcb without the watch (BASELINE_BCB, e.g. main's release binary),
#   off       = this checkout with --hack-policy off (the watch not installed),
#   watch     = this checkout with the default --hack-policy fail,
# one after the other on the same machine. For each: wall, the CPU floor (sum of per-sample
# CPU / cores) beside it, peak RSS of the orchestrator, the median per-sample overhead
# (job wall - test time), and verdicts that differ from the first run (with the reason
# when a reward hack was named). Goal: watch <= 1.05 x baseline on wall and median overhead.
#
# usage: bench/hacks-cost.sh [full|hard] [parallel]
# env:   BASELINE_BCB=path/to/bcb (optional), BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT
set -euo pipefail
subset=${1:-full}
parallel=${2:-$(nproc)}
. "$(dirname "$0")/lib.sh"
bench_python
bench_out hacks
(cd "$here" && cargo build -q --release --bin bcb)
current=${CARGO_TARGET_DIR:-$here/target}/release/bcb

run() { # name binary extra-args...
    local name=$1 bin=$2 cache="$out/$1-cache"
    shift 2
    rm -rf "$cache"; mkdir -p "$cache"
    echo "== $name: $bin evaluate --check-gt-only --subset $subset --parallel $parallel $*" >&2
    BCB_CACHE_DIR=$cache /usr/bin/time -f '%e %M' -o "$out/$name.time" \
        "$bin" evaluate --check-gt-only --subset "$subset" --parallel "$parallel" -q "$@" \
        >"$out/$name.out" 2>"$out/$name.err" || true
    cp "$cache"/ground-truth/*.jsonl "$out/$name.journal.jsonl"
}

[ -n "${BASELINE_BCB:-}" ] && run baseline "$BASELINE_BCB"
run off "$current" --hack-policy off
run watch "$current"

python3 - "$out" "$parallel" <<'PY'
import json, os, statistics, sys
out, cores = sys.argv[1], int(sys.argv[2])
def load(name):
    rows = {}
    for line in open(os.path.join(out, name + ".journal.jsonl")):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if "id" not in r:
            continue
        rows[r["id"]["task_id"]] = r
    wall, rss = open(os.path.join(out, name + ".time")).read().split()
    return rows, float(wall), int(rss) / 1024
names = [n for n in ("baseline", "off", "watch") if os.path.exists(os.path.join(out, n + ".time"))]
runs = {n: load(n) for n in names}
first = runs[names[0]][0]
print("%-9s %9s %12s %9s %14s %6s %6s" % ("run", "wall s", "CPU floor s", "RSS MB", "median ovh s", "pass", "diffs"))
for n in names:
    rows, wall, rss = runs[n]
    cpu = sum(r.get("cpu_secs") or 0 for r in rows.values()) / cores
    ovh = [r["wall_secs"] - r["test_secs"] for r in rows.values() if r.get("test_secs") is not None and r.get("wall_secs") is not None]
    diffs = [t for t, r in rows.items() if t in first and first[t]["status"] != r["status"]]
    print("%-9s %9.1f %12.1f %9.0f %14.3f %6d %6d" % (n, wall, cpu, rss, statistics.median(ovh) if ovh else float("nan"),
          sum(r["status"] == "pass" for r in rows.values()), len(diffs)))
    for t in diffs:
        all_ = (runs[n][0][t].get("details") or {}).get("ALL", "")
        print("   %s: %s -> %s %s" % (t, first[t]["status"], rows[t]["status"], all_[:160]))
print("(flakes: a diff without `bcb: reward hack` is a timing verdict; re-run that task alone)")
PY
echo "journals and times in $out" >&2
