#!/usr/bin/env bash
# A real-answer sweep with few duplicate programs against its CPU floor: bench/make-sweep.py
# with --max-dup (default 0.05: at most 5% of the samples repeat a program of their task, as
# real checkpoints sampled at temperature do), n per task on the hard subset, evaluated with a
# cold verdict cache and no ground truth (the limits are then 241 s for every task, as with
# it). Prints, per binary:
#   wall, and the CPU floor = sum of per-sample CPU (rusage of each sample's tree) / parallel,
#   wall / floor (goal: <= 1.1), the longest sample, the tail after the last non-timeout
#   verdict, and where the timeouts started (seconds into the run, and their rank in it).
# Journal lines are stamped as they arrive (the journal is deleted when a run ends).
#
# usage: bench/sweep-floor.sh [n, default 10] [parallel, default nproc]
# env:   MAX_DUP (default 0.05), SUBSET (hard), BASELINE_BCB=path/to/other/bcb (run first,
#        same file, e.g. main's), BCB_BIN (default: cargo build --release), BCB_PYTHON,
#        BCB_DATASET_DIR, BENCH_OUT, BENCH_IDS=1,2,3 (samples for those tasks only: a quick
#        check of the script, or a slice as bench/slice.sh makes), ORIGINAL=1 (then the original
#        harness, bigcodebench 0.2.5, on the same file with --no_gt: wall, CPU, peak RSS and
#        verdict agreement). Run it on an otherwise idle machine.
set -euo pipefail
n=${1:-10}
parallel=${2:-$(nproc)}
. "$(dirname "$0")/lib.sh"
bench_setup floor
subset=${SUBSET:-hard}
file="sweep--main--bigcodebench-$subset-complete--bench-0-$n-sanitized_calibrated.jsonl"
# BENCH_IDS as full task ids (`1,2` → `BigCodeBench/1,BigCodeBench/2`).
full_ids=$(tr ',' '\n' <<<"${BENCH_IDS:-}" | sed -E '/^$/d; s#^([0-9]+)$#BigCodeBench/\1#' | paste -sd, -)
python3 "$here/bench/make-sweep.py" "$out/$file" --n "$n" --subset "$subset" \
    --max-dup "${MAX_DUP:-0.05}" --shared "$BCB_DATASET_DIR/.." ${full_ids:+--ids "$full_ids"} >&2

run() { # name binary
    local name=$1 bin=$2 dir="$out/$1"
    rm -rf "$dir"; mkdir -p "$dir"; cp "$out/$file" "$dir/"
    echo "== $name: $bin evaluate --no-gt --parallel $parallel (cold cache)" >&2
    local ids=()
    [[ -n "${BENCH_IDS:-}" ]] && ids=(--ids "$BENCH_IDS")
    BCB_CACHE_DIR=$dir/cache /usr/bin/time -f '%e %M' -o "$dir/time" \
        "$bin" evaluate --samples "$dir/$file" --no-gt --parallel "$parallel" -q "${ids[@]}" \
        >"$dir/out" 2>"$dir/err" &
    local pid=$!
    python3 "$here/bench/journal.py" stamp "$dir" "$pid" >"$dir/stamped.jsonl"
    wait "$pid" || true
}

[[ -n "${BASELINE_BCB:-}" ]] && run baseline "$BASELINE_BCB"
run current "$BCB_BIN"

if [[ "${ORIGINAL:-}" == 1 ]]; then
    overlay=$("$here/bench/original-overlay.sh")
    dir=$out/original
    rm -rf "$dir"; mkdir -p "$dir"; cp "$out/$file" "$dir/"
    suffix=""
    [[ $subset == hard ]] && suffix=-hard
    gunzip -c "$BCB_DATASET_DIR/bigcodebench$suffix-v0.1.4.jsonl.gz" >"$dir/ds.jsonl"
    echo "== original: bigcodebench.evaluate --no_gt --parallel $parallel" >&2
    (cd "$dir" && /usr/bin/time -f '%e %M %U %S' -o "$dir/time" env \
        BIGCODEBENCH_OVERRIDE_PATH="$dir/ds.jsonl" PYTHONPATH="$overlay" "$BCB_PYTHON" -c \
        'import sys; from bigcodebench.evaluate import main; sys.argv[0] = "bigcodebench.evaluate"; main()' \
        --split complete --subset "$subset" --samples "$file" --execution local --no_gt \
        --parallel "$parallel" ${full_ids:+--selective_evaluate "$full_ids"} >"$dir/out" 2>"$dir/err") ||
        { echo "the original failed; see $dir/err" >&2; tail -5 "$dir/err" >&2; }
fi

FILE=$file PYTHONPATH="$here/bench" python3 - "$out" "$parallel" <<'PY'
import json, os, sys
from journal import stamped_runs
out, cores = sys.argv[1], int(sys.argv[2])
for name, d, rows, wall, rss in stamped_runs(out):
    if not rows:
        print(f"{name:9s} no verdicts seen (see {d}/err)")
        continue
    floor = sum(r["cpu"] for r in rows) / cores
    longest = max(rows, key=lambda r: r["wall"])
    last = max(r["t"] for r in rows)
    done = [r["t"] for r in rows if r["status"] != "timeout"]
    tail = last - (max(done) if done else 0.0)
    starts = sorted(r["t"] - r["wall"] for r in rows)
    timeouts = sorted((r["t"] - r["wall"], r["task_id"]) for r in rows if r["status"] == "timeout")
    rank = lambda s: sum(1 for x in starts if x <= s)
    print(f"{name:9s} wall {wall:7.1f}s  CPU floor {floor:7.1f}s (sum {floor * cores:.0f}s / {cores})  "
          f"wall/floor {wall / floor:.2f} (goal <= 1.10)  peak RSS {rss / 1024:.0f} MB  samples run {len(rows)}")
    print(f"{'':9s} longest sample {longest['wall']:.1f}s ({longest['task_id']}); tail after the last "
          f"non-timeout verdict {tail:.1f}s; timeouts {len(timeouts)} started at " +
          ", ".join(f"{s:.0f}s (#{rank(s)}, {t.split('/')[1]})" for s, t in timeouts))
results = lambda name: os.path.join(out, name, os.environ["FILE"].replace(".jsonl", "_eval_results.json"))
statuses = lambda name: {(t, i): r["status"] for t, rows in json.load(open(results(name)))["eval"].items()
                         for i, r in enumerate(rows)}
if os.path.exists(results("original")):
    wall, rss, user, sys_ = map(float, open(os.path.join(out, "original", "time")).read().split("\n")[-2].split())
    cur = os.path.join(out, "current", "time")
    cur_wall = float(open(cur).read().split("\n")[-2].split()[0]) if os.path.exists(cur) else None
    print(f"original  wall {wall:7.1f}s  CPU {user + sys_:.0f}s  peak RSS {rss / 1024:.0f} MB (largest process)"
          + (f"  bcb is {wall / cur_wall:.2f}x faster" if cur_wall else ""))
    if os.path.exists(results("current")):
        orig, ours = statuses("original"), statuses("current")
        same = sum(1 for k in ours if orig.get(k) == ours[k])
        print(f"{'':9s} verdicts equal to bcb's: {same}/{len(ours)}"
              + (f"; differ: {sorted(k for k in ours if orig.get(k) != ours[k])[:10]}" if same < len(ours) else ""))
print(f"(files in {out})")
PY
