"""Driver for bench/serve-agreement.sh (standard library only).

prepare REAL DS OUT      the hard-subset rows of each model's real samples file in REAL, as
                         OUT/<model>--bigcodebench-hard-complete--real.jsonl (task_id, solution)
serve URL OUT            posts each prepared file's rows as one /v1/evaluate request; writes
                         OUT/<model>.served.json (the results, request order)
compare REAL OUT         every verdict: served vs `bcb evaluate`'s (OUT/*_eval_results.json) vs
                         the official result file in REAL; prints agreement counts and every
                         disagreement with both sides' details
"""
import glob
import gzip
import json
import os
import sys
import time
import urllib.request

STEM = "--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated"


def models(real):
    return sorted(os.path.basename(p)[: -len(STEM + ".jsonl.gz")]
                  for p in glob.glob(os.path.join(real, f"*{STEM}.jsonl.gz")))


def prepared(out, model):
    return os.path.join(out, f"{model}--bigcodebench-hard-complete--real.jsonl")


def prepare(real, ds, out):
    hard = {json.loads(l)["task_id"] for l in gzip.open(os.path.join(ds, "bigcodebench-hard-v0.1.4.jsonl.gz"), "rt")}
    for m in models(real):
        rows = [json.loads(l) for l in gzip.open(os.path.join(real, m + STEM + ".jsonl.gz"), "rt")]
        rows = [{"task_id": r["task_id"], "solution": r["solution"]} for r in rows if r["task_id"] in hard]
        with open(prepared(out, m), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        print(f"{m}: {len(rows)} hard rows", file=sys.stderr)


def serve(url, out):
    for path in sorted(glob.glob(os.path.join(out, "*--real.jsonl"))):
        rows = [json.loads(l) for l in open(path)]
        body = json.dumps({"samples": rows, "subset": "hard"}).encode()
        req = urllib.request.Request(url + "/v1/evaluate", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        t0 = time.time()
        with urllib.request.urlopen(req, timeout=None) as res:
            answer = json.loads(res.read())
        name = os.path.basename(path).split("--bigcodebench-")[0]
        with open(os.path.join(out, name + ".served.json"), "w") as f:
            json.dump(answer, f)
        print(f"{name}: {len(rows)} samples served in {time.time() - t0:.0f} s: {answer['summary']}", file=sys.stderr)


def short(details):
    if not details:
        return "-"
    k, v = next(iter(details.items()))
    last = [l for l in str(v).strip().splitlines() if l.strip()][-1:] or [""]
    return f"{k}: {last[0][:140]}"


def compare(real, out):
    total = {"rows": 0, "served=evaluate": 0, "served=official": 0, "evaluate=official": 0}
    for m in models(real):
        served = json.load(open(os.path.join(out, m + ".served.json")))["results"]
        local = json.load(open(prepared(out, m)[: -len(".jsonl")] + "_eval_results.json"))["eval"]
        official = json.load(gzip.open(os.path.join(real, m + STEM + "_eval_results.json.gz"), "rt"))["eval"]
        # Tasks whose canonical solution failed here (environment, or a timeout under load).
        gt_failed = set(json.load(open(prepared(out, m)[: -len(".jsonl")] + "_pass_at_k.json"))["failed_tasks"])
        agree = {"served=evaluate": 0, "served=official": 0, "evaluate=official": 0}
        diffs = []
        for r in served:
            tid = r["task_id"]
            l, o = local[tid][0], official[tid][0]
            agree["served=evaluate"] += r["status"] == l["status"]
            agree["served=official"] += r["status"] == o["status"]
            agree["evaluate=official"] += l["status"] == o["status"]
            if len({r["status"], l["status"], o["status"]}) > 1:
                diffs.append((tid, r, l, o))
        n = len(served)
        total["rows"] += n
        for k, v in agree.items():
            total[k] += v
        print(f"== {m}: {n} rows; " + ", ".join(f"{k} {v}/{n}" for k, v in agree.items()))
        for tid, r, l, o in diffs:
            gt = " (its ground truth failed here)" if tid in gt_failed else ""
            print(f"  {tid}{gt}: served {r['status']} {r['flags']} | evaluate {l['status']} | official {o['status']}")
            wall = "-" if r["test_secs"] is None else f"{r['test_secs']:.0f} s"
            cpu = "-" if r["cpu_secs"] is None else f"{r['cpu_secs']:.0f} s"
            print(f"      served run: test wall {wall}, CPU {cpu}")
            print(f"      served:   {short(r['details'])}")
            if r["details"] != l["details"]:
                print(f"      evaluate: {short(l['details'])}")
            print(f"      official: {short(o['details'])}")
    n = total.pop("rows")
    print("== all: " + ", ".join(f"{k} {v}/{n}" for k, v in total.items()))


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"prepare": prepare, "serve": serve, "compare": compare}[cmd](*args)
