"""Load driver for bench/serve.sh (standard library only).

latency URL DATASET_DIR N          concurrency 1: N requests of BigCodeBench/854's canonical
                                   solution, each varied by a comment (no cache or dedup hit);
                                   prints p50/p99 of request time, test time and overhead.
throughput URL DATASET_DIR K C OUT the hard subset's canonical solutions x K, one sample per
                                   request, C concurrent clients; writes OUT (JSONL verdicts in
                                   samples order) and prints wall, CPU floor, errors, lost.
                                   BENCH_IDS=a,b restricts the tasks (smoke runs).
waiting URL PID W SECS             W concurrent one-sample requests whose programs sleep (a few
                                   run, the rest queue), then W /run_code ones: the server
                                   process's own CPU (its children's not counted) and threads
                                   while they wait, per thread name.
"""
import concurrent.futures as cf
import gzip
import json
import os
import sys
import time
import urllib.error
import urllib.request


def tasks(ds, hard):
    name = "bigcodebench-hard-v0.1.4.jsonl.gz" if hard else "bigcodebench-v0.1.4.jsonl.gz"
    return [json.loads(l) for l in gzip.open(os.path.join(ds, name), "rt")]


def post(url, samples, timeout=900):
    body = json.dumps({"samples": samples}).encode()
    req = urllib.request.Request(url + "/v1/evaluate", data=body,
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as res:
        return json.loads(res.read())


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def latency(url, ds, n):
    t = next(t for t in tasks(ds, True) if t["task_id"] == "BigCodeBench/854")
    code = t["code_prompt"] + t["canonical_solution"]
    req, test, over = [], [], []
    for i in range(n):
        sample = {"task_id": t["task_id"], "solution": f"{code}\n# variant {i} {time.time()}\n"}
        t0 = time.perf_counter()
        r = post(url, [sample])["results"][0]
        dt = time.perf_counter() - t0
        assert r["status"] == "pass", r
        req.append(dt)
        test.append(r["test_secs"] or 0.0)
        over.append(dt - (r["test_secs"] or 0.0))
    ms = lambda x: f"{1000 * x:.1f} ms"
    print(f"latency n={n}: request p50 {ms(pct(req, 50))} p99 {ms(pct(req, 99))} | "
          f"test p50 {ms(pct(test, 50))} | overhead p50 {ms(pct(over, 50))} p99 {ms(pct(over, 99))}")


def throughput(url, ds, k, c, out):
    rows = []
    only = set(filter(None, os.environ.get("BENCH_IDS", "").split(",")))
    for t in tasks(ds, True):
        if only and t["task_id"] not in only:
            continue
        for i in range(k):
            rows.append({"task_id": t["task_id"], "solution": t["code_prompt"] + t["canonical_solution"]})
    results = [None] * len(rows)
    errors = []

    def one(i):
        for attempt in range(100):
            try:
                sent = time.perf_counter() - t0
                r = post(url, [rows[i]])["results"][0]
                r["sent"], r["answered"] = sent, time.perf_counter() - t0
                return i, r
            except urllib.error.HTTPError as e:
                if e.code in (429, 503):
                    time.sleep(float(e.headers.get("Retry-After") or 1))
                    continue
                return i, {"error": f"HTTP {e.code}: {e.read()[:300]!r}"}
        return i, {"error": "gave up"}

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(max_workers=c) as pool:
        for i, r in pool.map(one, range(len(rows))):
            results[i] = r
    wall = time.perf_counter() - t0
    cores = os.cpu_count() or 1
    cpu = sum((r or {}).get("cpu_secs") or 0.0 for r in results)
    errors = [r for r in results if r is None or "error" in r]
    with open(out, "w") as f:
        for row, r in zip(rows, results):
            # The verdict first (bench/serve.sh compares it), then when it was asked and answered.
            keep = {k: (r or {}).get(k) for k in ("status", "cpu_secs", "test_secs", "sent", "answered", "flags")}
            if keep["status"] != "pass":
                keep["details"] = (r or {}).get("details") or (r or {}).get("error")
            f.write(json.dumps({"task_id": row["task_id"], **keep}) + "\n")
    by = {}
    for r in results:
        if r and "status" in r:
            by[r["status"]] = by.get(r["status"], 0) + 1
    print(f"throughput: {len(rows)} jobs, {c} clients: wall {wall:.1f} s | CPU floor "
          f"(sum sample CPU {cpu:.1f} s / {cores} cores) {cpu / cores:.1f} s | ratio "
          f"{wall / max(cpu / cores, 1e-9):.2f} | errors {len(errors)} | verdicts {by}")
    # No schedule ends a job before its request came plus its own test time; clients send in
    # dataset order as answers come back, so a long sleeper sent late sets a bound of its own.
    late = max((r for r in results if r and r.get("test_secs")), key=lambda r: r["sent"] + r["test_secs"], default=None)
    if late:
        print(f"the clients' bound (latest sent + test time): {late['sent'] + late['test_secs']:.1f} s "
              f"({late['task_id']}, sent at {late['sent']:.1f} s, {late['test_secs']:.1f} s of test)")


def waiting(url, pid, w, secs):
    import threading

    def own_cpu():
        """CPU of the server process by thread name (its children are not counted), from
        schedstat's nanoseconds: tick accounting misses threads that wake for microseconds."""
        by = {}
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                name = open(f"/proc/{pid}/task/{tid}/comm").read().strip().rstrip("0123456789-")
                ns = int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            by[name] = by.get(name, 0.0) + ns / 1e9
        return by

    def send(path, body):
        req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        try:
            urllib.request.urlopen(req, timeout=3600).read()
        except Exception:
            pass  # the server is killed after the measurement

    sleep = "import time\ntime.sleep(3600)\n"
    kinds = {
        "/v1/evaluate": lambda i: {"samples": [{"task_id": "BigCodeBench/854", "solution": f"{sleep}# {i} {time.time()}\n"}]},
        "/run_code": lambda i: {"code": f"{sleep}# {i} {time.time()}", "language": "python", "run_timeout": 3600},
    }
    for path, body in kinds.items():
        for i in range(w):
            threading.Thread(target=send, args=(path, body(i)), daemon=True).start()
        time.sleep(5)  # all sent and queued
        before, t0 = own_cpu(), time.perf_counter()
        time.sleep(secs)
        after, dt = own_cpu(), time.perf_counter() - t0
        spent = {k: v - before.get(k, 0.0) for k, v in after.items()}
        total = sum(spent.values())
        top = ", ".join(f"{k} {v:.2f} s" for k, v in sorted(spent.items(), key=lambda kv: -kv[1])[:3] if v > 0)
        print(f"waiting: {w} more requests on {path} (all sent so far wait): the server's own CPU "
              f"{total:.2f} s over {dt:.1f} s ({100 * total / dt:.1f}% of a core; {top}), "
              f"{len(os.listdir(f'/proc/{pid}/task'))} threads")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "latency":
        latency(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "waiting":
        waiting(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    elif cmd == "throughput":
        throughput(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        sys.exit(__doc__)
