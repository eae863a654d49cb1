"""Replays bench/serve.sh's throughput run (the hard subset x K, C concurrent clients, one
sample per request, rows in dataset order) on a model of the server, to see what the order
of picking among queued one-sample requests costs, independent of the machine's load.

usage: python3 bench/serve_replay.py DATASET_DIR [JOURNAL] [K=4] [CLIENTS=64] [CORES=2] [MAX_IN_FLIGHT=10]
  JOURNAL: a ground-truth journal ($BCB_CACHE_DIR/ground-truth/*.jsonl) giving each task's
  job wall and CPU; tasks it lacks take the shipped prior (crates/bcb-eval/priors/gt-secs.tsv)
  as both (CPU-bound).

The model: a job whose CPU is at least a quarter of its wall holds one of CORES slots for its
wall; a sleeper holds an extra slot (up to MAX_IN_FLIGHT in flight), or a core slot if none
is free. Clients send the next row as soon as their previous answer came back. Policies:
  arrival   the queued request that came first (the engine's former round-robin between
            one-sample submissions);
  longest   the longest expected head first (prior seconds);
  least-cpu the head expected to use the least CPU first (the ground truth's CPU): sleepers
            and short samples first, so clients waiting on answers send their next rows.
Prints, per policy, the modelled wall, the CPU floor (sum of CPU / CORES), and the arrival
bound: the latest (time the row could be sent at the earliest + its wall), which no server
order beats while clients send in dataset order.
"""
import gzip
import heapq
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))


def priors():
    path = os.path.join(here, "..", "crates", "bcb-eval", "priors", "gt-secs.tsv")
    out = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        task, secs = line.split("\t")
        out[task] = float(secs)
    return out


def journal(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        if "id" in r and r.get("wall_secs") is not None:
            out[r["id"]["task_id"]] = (r["wall_secs"], r.get("cpu_secs") or r["wall_secs"])
    return out


def simulate(rows, clients, cores, max_in_flight, policy):
    """rows: [(expected, wall, cpu)] in send order. Returns (makespan, arrival bound)."""
    t, sent, done = 0.0, 0, 0
    queue = []  # (key, seq, row index)
    running = []  # heap of (end, kind)
    free_core, free_extra = cores, max_in_flight - cores
    send_time = {}

    def send(now):
        nonlocal sent
        if sent < len(rows):
            i = sent
            sent += 1
            send_time[i] = now
            key = {"arrival": i, "longest": -rows[i][0], "least-cpu": rows[i][2]}[policy]
            heapq.heappush(queue, (key, i))

    for _ in range(min(clients, len(rows))):
        send(0.0)
    while done < len(rows):
        while queue:
            _, i = queue[0]
            _, wall, cpu = rows[i]
            sleeper = cpu < 0.25 * wall
            if sleeper and free_extra > 0:
                free_extra -= 1
                kind = "extra"
            elif free_core > 0:
                free_core -= 1
                kind = "core"
            else:
                break
            heapq.heappop(queue)
            heapq.heappush(running, (t + wall, kind))
        end, kind = heapq.heappop(running)
        t = end
        if kind == "core":
            free_core += 1
        else:
            free_extra += 1
        done += 1
        send(t)  # that client's next request
    return t


def main():
    ds = sys.argv[1]
    jr = journal(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] != "-" else {}
    k, clients, cores, mif = (int(x) for x in (sys.argv[3:] + ["4", "64", "2", "10"][len(sys.argv[3:]):])[:4])
    pri = priors()
    tasks = [json.loads(l)["task_id"] for l in gzip.open(os.path.join(ds, "bigcodebench-hard-v0.1.4.jsonl.gz"), "rt")]
    rows = []
    for task in tasks:
        wall, cpu = jr.get(task, (pri.get(task, 1.0),) * 2)
        rows += [(pri.get(task, 1.0), wall, cpu)] * k
    floor = sum(r[2] for r in rows) / cores
    print(f"{len(rows)} jobs ({k} x {len(tasks)} tasks, {len(jr)} timed by the journal), "
          f"{clients} clients, {cores} cores, max in flight {mif}: CPU floor {floor:.1f} s")
    for policy in ("arrival", "longest", "least-cpu"):
        wall = simulate(rows, clients, cores, mif, policy)
        print(f"  {policy:8s} modelled wall {wall:7.1f} s = {wall / floor:.2f} x floor")
    # the bound: a row can be sent once `i - clients + 1` answers came back, which takes at
    # least the CPU of the cheapest such set of earlier rows over the cores
    bound = 0.0
    for i, (_, wall, _) in enumerate(rows):
        before = sorted(r[2] for r in rows[:i])[: max(0, i - clients + 1)]
        bound = max(bound, sum(before) / cores + wall)
    print(f"  arrival bound (clients send in dataset order) {bound:.1f} s = {bound / floor:.2f} x floor")


if __name__ == "__main__":
    main()
