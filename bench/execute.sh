#!/usr/bin/env bash
# Ground truth through both executors (and the original evaluator where installed):
# wall, CPU, samples/s, orchestrator peak RSS, floor, per-sample overhead, verdict diffs.
#
# usage: bench/execute.sh [hard|full] [parallel]
# env:   BCB_PYTHON (eval interpreter), BCB_DATASET_DIR (dataset dir),
#        BENCH_EXECUTORS ("pool process"), BENCH_OUT (results dir),
#        BENCH_ORIGINAL=1 to also time the original's `bigcodebench.evaluate --check_gt_only`
#        (installed into a scratch overlay by bench/original-overlay.sh),
#        BASELINE_SRC=path/to/an/older/checkout: build its `execute_gt` example (into
#        $BENCH_OUT/baseline-target, the checkout is only read) and run it first, side by side.
set -euo pipefail
subset=${1:-hard}
parallel=${2:-$(nproc)}
. "$(dirname "$0")/lib.sh"
bench_python
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
bench_out execute
(cd "$here" && cargo build -q --release -p bcb-execute --example execute_gt)
bin=$CARGO_TARGET_DIR/release/examples/execute_gt

if [ -n "${BASELINE_SRC:-}" ]; then
    (cd "$BASELINE_SRC" && CARGO_TARGET_DIR=$out/baseline-target \
        cargo build -q --release -p bcb-execute --example execute_gt)
    base_bin=$out/baseline-target/release/examples/execute_gt
fi

for ex in ${BENCH_EXECUTORS:-pool process}; do
    if [ -n "${base_bin:-}" ]; then
        echo "== baseline $ex, $subset, parallel $parallel" >&2
        "$base_bin" "$ex" "$subset" "$parallel" >"$out/baseline-$ex.jsonl" 2>"$out/baseline-$ex.log"
        grep '^SUMMARY ' "$out/baseline-$ex.log" | sed 's/^SUMMARY //' >"$out/baseline-$ex.summary.json"
        cat "$out/baseline-$ex.summary.json" >&2
    fi
    echo "== $ex, $subset, parallel $parallel" >&2
    "$bin" "$ex" "$subset" "$parallel" >"$out/$ex.jsonl" 2>"$out/$ex.log"
    grep '^SUMMARY ' "$out/$ex.log" | sed 's/^SUMMARY //' >"$out/$ex.summary.json"
    cat "$out/$ex.summary.json" >&2
done

if [ "${BENCH_ORIGINAL:-0}" = 1 ]; then
    echo "== original bigcodebench.evaluate --check_gt_only" >&2
    overlay=$("$here/bench/original-overlay.sh")
    ds=$BCB_DATASET_DIR/bigcodebench$([ "$subset" = hard ] && echo -hard)-v0.1.4.jsonl.gz
    tmp=$(mktemp -d); gunzip -c "$ds" >"$tmp/ds.jsonl"; echo '{}' >"$tmp/s.jsonl"
    start=$(date +%s.%N)
    (cd "$tmp" && BIGCODEBENCH_OVERRIDE_PATH=$tmp/ds.jsonl PYTHONPATH=$overlay "$BCB_PYTHON" -c \
        'import sys; from bigcodebench.evaluate import main; sys.argv[0] = "bigcodebench.evaluate"; main()' \
        --split complete --subset "$subset" --samples s.jsonl --execution local \
        --check_gt_only --parallel "$parallel" </dev/null >"$out/original.log" 2>&1) || true
    end=$(date +%s.%N)
    echo "{\"executor\":\"original\",\"wall_secs\":$(echo "$end - $start" | bc)}" >"$out/original.summary.json"
    cat "$out/original.summary.json" >&2
fi

"$BCB_PYTHON" - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
S = {}
for name in ("baseline-pool", "pool", "baseline-process", "process", "original"):
    p = os.path.join(out, name + ".summary.json")
    if os.path.exists(p) and os.path.getsize(p):
        S[name] = json.load(open(p))
for name, s in S.items():
    if name == "original":
        print(f"original: wall {s['wall_secs']:.1f}s")
        continue
    print(f"{name:8s} pass {s['pass']}/{s['tasks']}  wall {s['wall_secs']:.1f}s  "
          f"cpu {s['cpu_secs_self'] + s['cpu_secs_children']:.1f}s  {s['samples_per_sec']:.2f} samples/s  "
          f"peak RSS (orchestrator) {s['peak_rss_mb_self']:.1f} MB  floor {s['floor_secs']:.1f}s  "
          f"wall/floor {s['wall_secs'] / s['floor_secs']:.2f}  median overhead {s['median_overhead_secs'] * 1000:.0f} ms")
for ex in ("pool", "process"):
    b, c = S.get("baseline-" + ex), S.get(ex)
    if b and c:
        print(f"{ex} current vs baseline: wall {c['wall_secs'] / b['wall_secs']:.3f}x, "
              f"median overhead {c['median_overhead_secs'] * 1000:.0f} vs {b['median_overhead_secs'] * 1000:.0f} ms "
              f"({c['median_overhead_secs'] / b['median_overhead_secs']:.2f}x), "
              f"orchestrator peak RSS {c['peak_rss_mb_self'] / b['peak_rss_mb_self']:.3f}x, "
              f"pass {c['pass']} vs {b['pass']}")
if "pool" in S and "process" in S:
    a, b = S["pool"], S["process"]
    print(f"process/pool: wall {b['wall_secs'] / a['wall_secs']:.2f}x, "
          f"median overhead {b['median_overhead_secs'] / a['median_overhead_secs']:.1f}x")
    if "original" in S:
        print(f"original/pool wall: {S['original']['wall_secs'] / a['wall_secs']:.2f}x")
    load = lambda n: {r["task_id"]: r for r in map(json.loads, open(os.path.join(out, n + ".jsonl")))}
    pa, pr = load("pool"), load("process")
    diff = [t for t in pa if t in pr and pa[t]["status"] != pr[t]["status"]]
    print(f"verdict differences pool vs process: {len(diff)}")
    for t in sorted(diff, key=lambda t: int(t.split("/")[-1])):
        print(f"  {t}: pool={pa[t]['status']} ({pa[t]['note']}) process={pr[t]['status']} ({pr[t]['note']})")
    fails = sorted((t for t in pa if pa[t]["status"] != "pass"), key=lambda t: int(t.split("/")[-1]))
    print("pool non-pass:", " ".join(t.split("/")[-1] for t in fails))
print("results in", out)
PY
