#!/usr/bin/env bash
# `bcb serve` /run_code numbers (issue 18), for a quiet machine: verl's request shape (one
# stdin -> stdout program per test case), N requests at concurrency 1 and then C clients:
# request p50/p99, the program's own execution_time p50, the overhead (request - execution
# time), requests/s; beside the same program run directly as `python prog.py < input`
# (no sandbox, no server) N times.
# usage: bench/run-code.sh [N requests, default 200] [C clients, default 16] [parallel, default nproc]
# env:   BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT
set -euo pipefail
n=${1:-200}
clients=${2:-16}
parallel=${3:-$(nproc)}
. "$(dirname "$0")/lib.sh"
bench_python
bench_out run-code
(cd "$here" && cargo build -q --release --bin bcb)
bcb=${CARGO_TARGET_DIR:-$here/target}/release/bcb
export BCB_CACHE_DIR=$out/cache
# One small task: the ground-truth check at start is not what is measured. A free port: the
# address is read back from the server's own log (never another server's).
"$bcb" serve --listen 127.0.0.1:0 --ids BigCodeBench/0 --parallel "$parallel" 2>"$out/serve.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
until url=$(grep -o 'listening on http://[0-9.:]*' "$out/serve.log" | cut -d' ' -f3) && [[ -n $url ]]; do
    kill -0 $pid 2>/dev/null || { cat "$out/serve.log"; exit 1; }
    sleep 0.2
done
until curl -fs "$url/readyz" >/dev/null 2>&1; do
    kill -0 $pid 2>/dev/null || { cat "$out/serve.log"; exit 1; }
    sleep 0.5
done
"$BCB_PYTHON" - "$url" "$n" "$clients" "$out" <<'PY'
import concurrent.futures as cf, json, statistics, subprocess, sys, time
import requests
url, n, clients, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
code = "import sys\nn = int(input())\nxs = list(map(int, sys.stdin.read().split()))\nprint(sum(xs) * n)\n"
def body(i):
    return {"compile_timeout": 10, "run_timeout": 10, "code": code, "stdin": "%d\n1 2 3 %d\n" % (i, i),
            "memory_limit_MB": 1024, "language": "python", "files": {}, "fetch_files": []}
def one(i, session):
    t = time.perf_counter()
    r = session.post(url + "/run_code", json=body(i), timeout=60)
    secs = time.perf_counter() - t
    v = r.json()
    if r.status_code != 200 or v.get("status") != "Success" or v["run_result"]["stdout"] != "%d\n" % ((6 + i) * i):
        print("unexpected:", r.status_code, v, file=sys.stderr)
    ok = r.status_code == 200 and v["status"] == "Success" and v["run_result"]["stdout"] == "%d\n" % ((6 + i) * i)
    return secs, v["run_result"]["execution_time"] if ok else None, ok
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]
def report(name, rows, wall):
    lat = [r[0] for r in rows]
    ex = [r[1] for r in rows if r[1] is not None]
    over = [r[0] - r[1] for r in rows if r[1] is not None]
    res = {"requests": len(rows), "errors": sum(not r[2] for r in rows), "wall_s": round(wall, 2),
           "req_per_s": round(len(rows) / wall, 1), "p50_ms": round(pct(lat, 50) * 1e3, 1),
           "p99_ms": round(pct(lat, 99) * 1e3, 1), "exec_p50_ms": round(pct(ex, 50) * 1e3, 1),
           "overhead_p50_ms": round(pct(over, 50) * 1e3, 1), "overhead_p99_ms": round(pct(over, 99) * 1e3, 1)}
    print(name, json.dumps(res))
    return res
s = requests.Session()
one(0, s)  # warm the pool's slots
t = time.perf_counter(); seq = [one(i, s) for i in range(n)]; seq_wall = time.perf_counter() - t
with cf.ThreadPoolExecutor(clients) as ex:
    sessions = [requests.Session() for _ in range(clients)]
    t = time.perf_counter()
    conc = list(ex.map(lambda i: one(i, sessions[i % clients]), range(n)))
    conc_wall = time.perf_counter() - t
open(out + "/prog.py", "w").write(code)
direct = []
for i in range(min(n, 50)):
    t = time.perf_counter()
    subprocess.run([sys.executable, out + "/prog.py"], input=b"%d\n1 2 3\n" % i, capture_output=True, check=True)
    direct.append(time.perf_counter() - t)
res = {"concurrency_1": report("concurrency 1:", seq, seq_wall),
       "concurrency_%d" % clients: report("concurrency %d:" % clients, conc, conc_wall),
       "direct_python_p50_ms": round(pct(direct, 50) * 1e3, 1)}
print("direct `python prog.py` p50 ms:", res["direct_python_p50_ms"])
json.dump(res, open(out + "/run-code.json", "w"), indent=1)
PY
echo "results in $out/run-code.json"
