#!/usr/bin/env bash
# Where one `bcb serve` request's time goes (issue 18), at concurrency 1: BigCodeBench/854's
# canonical solution, varied so no cache answers, N requests over loopback. Prints the
# client's p50/p99 request time, the p50 of each stage inside the pool slot (from the
# harness's timestamps, logged at BCB_LOG=bcb_execute::stages=debug), and the CPU time the
# server's whole process tree (bcb, slots, samples) spent per request, which other load on
# the machine does not change much.
# usage: bench/serve-breakdown.sh [N requests, default 100] [parallel, default 2] [profile, default release]
# env:   BCB_BIN (default: this checkout's build), BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT,
#        PORT (18766)
set -euo pipefail
n=${1:-100}
parallel=${2:-2}
profile=${3:-release}
port=${PORT:-18766}
. "$(dirname "$0")/lib.sh"
bench_python
bench_out breakdown
flag=--release
dir=release
if [ "$profile" = dev ]; then flag=; dir=debug; fi
if [[ -z "${BCB_BIN:-}" ]]; then
    (cd "$here" && cargo build -q $flag --bin bcb)
    bcb=${CARGO_TARGET_DIR:-$here/target}/$dir/bcb
else
    bcb=$BCB_BIN
fi
url=http://127.0.0.1:$port
export BCB_CACHE_DIR=$out/cache
BCB_LOG=info,bcb_execute::stages=debug "$bcb" serve --listen 127.0.0.1:$port --subset hard \
    --ids BigCodeBench/854 --parallel "$parallel" 2>"$out/serve.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
until curl -fs "$url/readyz" >/dev/null 2>&1; do
    kill -0 $pid 2>/dev/null || { cat "$out/serve.log"; exit 1; }
    sleep 0.5
done
# A few requests first: every slot has run a sample before the measured ones.
"$BCB_PYTHON" "$here/bench/serve_load.py" latency "$url" "$BCB_DATASET_DIR" 5 >/dev/null
: >"$out/serve.log.measured"
start_line=$(wc -l <"$out/serve.log")
cpu() { # jiffies of the server, its threads, its slots and the samples they reaped
    local p total=0
    for p in $pid $(pgrep -d' ' -P $pid) $(for c in $(pgrep -P $pid); do pgrep -d' ' -P $c; done); do
        total=$((total + $(awk '{print $14+$15+$16+$17}' /proc/$p/stat 2>/dev/null || echo 0)))
    done
    echo $total
}
c0=$(cpu)
"$BCB_PYTHON" "$here/bench/serve_load.py" latency "$url" "$BCB_DATASET_DIR" "$n" | tee "$out/latency.txt"
c1=$(cpu)
tail -n +"$((start_line + 1))" "$out/serve.log" >"$out/serve.log.measured"
"$BCB_PYTHON" - "$out/serve.log.measured" "$(( (c1 - c0) * 1000 / $(getconf CLK_TCK) ))" "$n" <<'PY'
import json, re, statistics, sys
log, cpu_ms, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [json.loads(m.group(1)) for m in (re.search(r"stages (\{.*\})", l) for l in open(log)) if m]
if not rows:
    sys.exit("no stage lines in the log (BCB_LOG=bcb_execute::stages=debug)")
# Consecutive stages in the order a job passes them, each row's time between two marks; the
# sample process is forked and isolated ahead, while the slot is idle (negative offsets).
order = ["handed", "child_job", "child_prepared", "child_module", "child_tests",
         "child_tests_end", "child_report", "eof", "exited", "reaped", "judged", "round_trip"]
label = {"handed": "job line read -> handed to the child", "child_job": "child reads the job",
         "child_prepared": "sample setup (watch, guard, rlimits)", "child_module": "compile + exec of the module",
         "child_tests": "test loading, watch wrapping", "child_tests_end": "tests",
         "child_report": "integrity checks, nonce", "eof": "report -> report pipe closed",
         "exited": "report -> exit seen (answered at the exit)",
         "reaped": "cleanup (kill, reap)", "judged": "account, result message", "round_trip": "-> Rust (pipe, parse)"}
p50 = lambda xs: statistics.median(xs) if xs else float("nan")
p90 = lambda xs: sorted(xs)[int(0.9 * (len(xs) - 1))] if xs else float("nan")
print(f"ahead of the job, while the slot is idle (p50 over {len(rows)} jobs, ms):")
ahead = [("fork (parent side)", [r["ahead_fork"] * 1 for r in rows if "ahead_fork" in r]),
         ("isolation (namespaces, root, caps)", [r["child_isolated"] - r["child_child"] for r in rows if "child_isolated" in r and "child_child" in r]),
         ("prefault (first touch of the snapshots)", [r["child_prefaulted"] - r["child_isolated"] for r in rows if "child_prefaulted" in r and "child_isolated" in r])]
for name, ds in ahead:
    print(f"  {name:<40} {p50(ds):7.2f}   p90 {p90(ds):7.2f}")
print(f"on the request's path (p50 over {len(rows)} jobs, ms):")
total = 0.0
for i, k in enumerate(order):
    ds = []
    for r in rows:
        if k not in r:
            continue
        prev = max([r[p] for p in order[:i] if p in r] + [0.0])
        ds.append(r[k] - prev)
    if ds:
        total += p50(ds)
        print(f"  {label[k]:<40} {p50(ds):7.2f}   p90 {p90(ds):7.2f}")
print(f"  {'sum of p50s':<40} {total:7.2f}")
print(f"  {'slot round trip p50':<40} {statistics.median(r['round_trip'] for r in rows):7.2f}")
print(f"CPU of the server's process tree: {cpu_ms / n:.1f} ms per request ({cpu_ms} ms over {n})")
PY
echo "results in $out" >&2
