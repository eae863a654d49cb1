#!/usr/bin/env bash
# `bcb serve` acceptance numbers (issue 18), for a quiet machine:
#   1. latency at concurrency 1: BigCodeBench/854's canonical solution, varied so no cache
#      answers, N requests over loopback: p50/p99 request time and overhead (request - test
#      time), beside one `bcb evaluate` invocation per sample (wall each, 10 runs).
#   waiting (PARTS=waiting, not in the default): W concurrent requests whose samples sleep,
#      then W /run_code ones: the server process's own CPU and threads while they wait (a
#      request waiting for its verdict should cost nothing).
#   2. throughput: the hard subset's canonical solutions x4 (592 jobs), dedup and cache off,
#      64 concurrent clients one sample per request: wall vs the CPU floor (sum of sample CPU /
#      cores), errors, verdicts equal to `bcb evaluate`'s on the same rows, peak RSS of the
#      server's process tree, and the CPU of that tree (under /usr/bin/time: what the floor
#      leaves out) and of the load client.
# usage: bench/serve.sh [N latency requests, default 200] [parallel, default nproc]
# env:   BCB_BIN (default: cargo build --release), BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT,
#        CLIENTS (64), COPIES (4), PORT (18765), WAITING (512),
#        PARTS ("latency throughput compare": any of them, and waiting; compare runs the
#        throughput rows through bcb evaluate and compares the verdicts),
#        SERVE_FLAGS (more `bcb serve` flags for the throughput server, e.g. --max-in-flight 16)
set -euo pipefail
n=${1:-200}
parallel=${2:-$(nproc)}
clients=${CLIENTS:-64}
copies=${COPIES:-4}
parts=${PARTS:-latency throughput compare}
port=${PORT:-18765}
. "$(dirname "$0")/lib.sh"
bench_setup serve
bcb=$BCB_BIN
py=$BCB_PYTHON
url=http://127.0.0.1:$port
# The ground truth is cached once for both servers and the evaluate runs.
export BCB_CACHE_DIR=$out/cache

serve() { # extra flags...
    # Under /usr/bin/time: the CPU of the server's whole process tree (what it reaped), to
    # set beside the samples' own CPU (the floor counts only theirs).
    /usr/bin/time -f '%e %U %S' -o "$out/serve.time" \
        "$bcb" serve --listen 127.0.0.1:$port --subset hard --parallel "$parallel" "$@" 2>"$out/serve.log" &
    pid=$!
    local began=$SECONDS
    until curl -fs "$url/readyz" >/dev/null 2>&1; do
        kill -0 $pid 2>/dev/null || { cat "$out/serve.log"; exit 1; }
        sleep 0.5
    done
    # Ready means the ground truth loaded (cached above) and every slot warm.
    ready_secs=$((SECONDS - began))
}
stop() { pkill -TERM -P $pid; wait $pid || true; } # bcb, the child of time
# Ends the run here unless PARTS names $1.
only_if() { [[ " $parts " == *" $1 "* ]] || { echo "results in $out" >&2; exit 0; }; }

echo "== ground truth of the hard subset (cached for every run below)" >&2
"$bcb" evaluate --check-gt-only --subset hard --parallel "$parallel" -q

if [[ " $parts " == *" latency "* ]]; then
echo "== 1. latency, concurrency 1 ($n requests)" >&2
serve
"$py" "$here/bench/serve_load.py" latency "$url" "$BCB_DATASET_DIR" "$n" | tee "$out/latency.txt"
stop
echo "-- one bcb evaluate per sample (10 runs, --no-cache):" >&2
"$py" - "$BCB_DATASET_DIR" "$out" <<'PY'
import gzip, json, os, sys
ds, out = sys.argv[1], sys.argv[2]
t = next(json.loads(l) for l in gzip.open(ds + "/bigcodebench-hard-v0.1.4.jsonl.gz", "rt") if '"BigCodeBench/854"' in l)
for i in range(10):
    with open(f"{out}/one-{i}--bigcodebench-hard-complete--x.jsonl", "w") as f:
        f.write(json.dumps({"task_id": t["task_id"], "solution": t["code_prompt"] + t["canonical_solution"] + f"\n# {i}\n"}) + "\n")
PY
for i in $(seq 0 9); do
    /usr/bin/time -f '%e' -a -o "$out/evaluate-walls" "$bcb" evaluate --samples "$out/one-$i--bigcodebench-hard-complete--x.jsonl" --ids BigCodeBench/854 --no-cache --parallel "$parallel" -q >/dev/null
done
sort -n "$out/evaluate-walls" | awk '{a[NR]=$1} END {printf "bcb evaluate per sample: p50 %.0f ms, max %.0f ms (n=%d)\n", 1000*a[int((NR+1)/2)], 1000*a[NR], NR}' | tee -a "$out/latency.txt"
fi
if [[ " $parts " == *" waiting "* ]]; then
echo "== waiting: ${WAITING:-512} requests a kind, their samples asleep" >&2
serve
"$py" "$here/bench/serve_load.py" waiting "$url" "$(pgrep -P $pid)" "${WAITING:-512}" 10 | tee "$out/waiting.txt"
pkill -KILL -P $pid; wait $pid || true # a drain would wait for the sleepers
fi
only_if throughput

echo "== 2. throughput: hard canonical x$copies, $clients clients, --no-dedup --no-cache" >&2
# shellcheck disable=SC2086 # SERVE_FLAGS is a list of flags
serve --no-dedup --no-cache ${SERVE_FLAGS:-}
# Sampled once a second by one process (bench/tree_rss.py): a sampler that forks per
# descendant takes the cores the samples are measured on.
"$py" "$here/bench/tree_rss.py" $pid "$out/peak-rss-kb" 2>"$out/tree_rss.err" &
watcher=$!
head -1 /proc/stat >"$out/stat.before"
/usr/bin/time -f '%e %U %S' -o "$out/client.time" \
    "$py" "$here/bench/serve_load.py" throughput "$url" "$BCB_DATASET_DIR" "$copies" "$clients" "$out/served.jsonl" | tee "$out/throughput.txt"
head -1 /proc/stat >"$out/stat.after"
stop
wait $watcher
echo "bcb serve was ready ${ready_secs} s after it started (to the second; its slots' warm-up is in this, not in the load)" | tee -a "$out/throughput.txt"
echo "peak RSS of bcb serve and its workers (summed over processes: a page shared copy-on-write counts in each): $(( $(cat "$out/peak-rss-kb") / 1024 )) MB; $(cat "$out/tree_rss.err")" | tee -a "$out/throughput.txt"
"$py" - "$out" "$parallel" "$clients" <<'PY' | tee -a "$out/throughput.txt"
import json, os, sys
out, cores, clients = sys.argv[1], int(sys.argv[2]), sys.argv[3]
wall, user, sys_ = map(float, open(out + "/serve.time").read().split()[-3:])
rows = [json.loads(l) for l in open(out + "/served.jsonl")]
samples = sum(r.get("cpu_secs") or 0.0 for r in rows)
tree = user + sys_
print(f"bcb serve's process tree: {tree:.1f} s of CPU over {wall:.1f} s (its start included), "
      f"samples {samples:.1f} s: {tree - samples:.1f} s not in the CPU floor "
      f"({1000 * (tree - samples) / len(rows):.0f} ms a job); tree CPU / cores {tree / cores:.1f} s")
cw, cu, cs = map(float, open(out + "/client.time").read().split()[-3:])
print(f"the load client ({clients} threads, urllib): {cu + cs:.1f} s of CPU")
# What the whole machine did meanwhile (user+nice+system+irq+softirq): CPU beside the
# server's tree here is something else competing with the samples.
before, after = ([int(x) for x in open(f"{out}/stat.{w}").read().split()[1:8]] for w in ("before", "after"))
busy = sum(after[i] - before[i] for i in (0, 1, 2, 5, 6)) / os.sysconf("SC_CLK_TCK")
print(f"the machine during the load: {busy:.1f} core-s busy ({busy / cw:.2f} of {cores} cores over {cw:.1f} s)")
PY
only_if compare
echo "-- the same rows through bcb evaluate (verdicts compared)" >&2
"$py" - "$BCB_DATASET_DIR" "$copies" >"$out/rows--bigcodebench-hard-complete--x.jsonl" <<'PY'
import gzip, json, sys
for l in gzip.open(sys.argv[1] + "/bigcodebench-hard-v0.1.4.jsonl.gz", "rt"):
    t = json.loads(l)
    for _ in range(int(sys.argv[2])):
        print(json.dumps({"task_id": t["task_id"], "solution": t["code_prompt"] + t["canonical_solution"]}))
PY
/usr/bin/time -f '%e s wall, %M KB peak RSS (bcb evaluate)' "$bcb" evaluate --samples "$out/rows--bigcodebench-hard-complete--x.jsonl" --no-dedup --no-cache --parallel "$parallel" -q
"$py" - "$out" <<'PY'
import json, sys
out = sys.argv[1]
served = [json.loads(l) for l in open(out + "/served.jsonl")]
ev = json.load(open(out + "/rows--bigcodebench-hard-complete--x_eval_results.json"))["eval"]
seen, diff = {}, []
for r in served:
    i = seen.get(r["task_id"], 0); seen[r["task_id"]] = i + 1
    want = ev[r["task_id"]][i]["status"]
    if r["status"] != want:
        diff.append((r["task_id"], i, r["status"], want))
print(f"verdicts equal to bcb evaluate's: {len(served) - len(diff)}/{len(served)}; differing: {diff[:10]}")
PY
echo "results in $out" >&2
