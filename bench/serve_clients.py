"""Each known client of a code reward against `bcb serve`, with that client's own retry rule
(reimplemented from its published source, not imported), for bench/serve-clients.sh.

usage: serve_clients.py URL DATASET_DIR CONCURRENCY REQUESTS [CLIENT ...]

CLIENT (default all):
  verl      POST /run_code per test case, as verl's sandbox_fusion reward does
            (verl/utils/reward_score/sandbox_fusion/utils.py): read timeout compile_timeout +
            run_timeout + 10 s; retried on 504 only, three tries, 1 s then 2 s apart; any other
            HTTP error, a timeout or a bad body is an "api_error", scored as a failed case.
  fusion    POST /submit, as the `sandbox-fusion` 0.3.7 client's `submit` does (client.py):
            any non-200 or exception retried, five attempts, tenacity's
            wait_exponential_jitter() between them (1, 2, 4, 8 s plus up to 1 s); no read
            timeout; then `submit_safe` scores the answer rejected.
  openrlhf  POST /openrlhf, as OpenRLHF's remote reward model does (remote_rm_utils.py): any
            error retried, five tries, 1 s apart, a 180-s read timeout; then it raises.
  native    POST /v1/evaluate with examples/rl/bcb_client.py (bcb's own client: 429 and 503
            retried after Retry-After, eight retries).

Each client sends REQUESTS answers, CONCURRENCY at a time (verl's semaphore, the client's
thread pool), half of them right and half wrong, each varied by a comment so that no verdict
comes from the cache or dedup, and prints one line: sent (HTTP requests), retried, answered,
wrong rewards (an answer whose reward is not the program's), lost (no answer after the
client's retries: verl and submit_safe score those 0, so for a right answer they are wrong
rewards too), p50/p99 latency of an answer (retries included).
"""
import concurrent.futures as cf
import gzip
import json
import os
import random
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "rl"))
from serve_load import pct  # noqa: E402  (bench/serve_load.py)

# Fast hard tasks (their tests take milliseconds); BENCH_IDS=a,b overrides.
TASKS = os.environ.get("BENCH_IDS", "BigCodeBench/592,BigCodeBench/720,BigCodeBench/800,"
                       "BigCodeBench/854,BigCodeBench/313,BigCodeBench/765").split(",")
WRONG_BODY = "    return None\n"


class Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.sent = 0
        self.retried = 0

    def attempt(self, n):
        with self.lock:
            self.sent += 1
            self.retried += int(n > 0)


class Failed(Exception):
    """The client gave up: no reward from the server."""


def http(url, payload, timeout):
    """(status, parsed JSON or None); raises on a connection error or a timeout."""
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as e:
        e.read()
        return e.code, None


def verl(url, case, counter):
    """verl's call_sandbox_api + its reading of the answer: 1.0 when stdout matches."""
    compile_timeout = run_timeout = 10
    payload = {"compile_timeout": compile_timeout, "run_timeout": run_timeout,
               "code": case["code"], "stdin": case["stdin"], "memory_limit_MB": 1024,
               "language": "python", "files": {}, "fetch_files": []}
    for attempt in range(3):
        counter.attempt(attempt)
        try:
            status, body = http(url + "/run_code", payload, compile_timeout + run_timeout + 10)
        except Exception as e:  # a timeout or a refused connection: no retry in verl
            raise Failed(f"api_error: {e}")
        if status == 504:
            if attempt < 2:
                time.sleep(attempt + 1)
            continue
        if status != 200 or body is None:
            raise Failed(f"api_error: HTTP {status}")
        if body.get("status") == "SandboxError":
            raise Failed("sandbox_error")
        rr = body.get("run_result") or {}
        ok = (body.get("status") == "Success" and rr.get("status") == "Finished"
              and (rr.get("stdout") or "").rstrip("\n") == case["expected"].rstrip("\n"))
        return float(ok)
    raise Failed("api_error: 504 three times")


def fusion(url, case, counter):
    """The sandbox-fusion client's submit: accepted -> 1.0."""
    payload = {"dataset": "bigcodebench", "id": case["task_id"], "completion": case["text"],
               "config": {}}
    for attempt in range(5):
        counter.attempt(attempt)
        try:
            status, body = http(url + "/submit", payload, None)
            if status == 200 and body is not None:
                return float(bool(body["accepted"]))
        except Exception:
            pass
        if attempt < 4:
            time.sleep(min(2.0 ** attempt, 60.0) + random.uniform(0, 1))
    raise Failed("submit gave up after 5 attempts")


def openrlhf(url, case, counter):
    """OpenRLHF's request_api_wrapper: rewards[0]."""
    payload = {"query": [case["prompt"] + case["text"]], "prompts": [case["prompt"]],
               "labels": [case["task_id"]]}
    for attempt in range(5):
        counter.attempt(attempt)
        try:
            status, body = http(url + "/openrlhf", payload, 180)
            if status == 200 and body is not None:
                return float(body["rewards"][0])
        except Exception:
            pass
        time.sleep(1)
    raise Failed("OpenRLHF gave up after 5 tries")


def native(url, case, counter):
    """bcb's own client (examples/rl/bcb_client.py), each HTTP request counted."""
    from bcb_client import BcbClient, BcbError

    class Counted(BcbClient):
        def _url(self):
            counter.attempt(self.tries)
            self.tries += 1
            return super()._url()

    client = Counted(urls=[url])
    client.tries = 0
    try:
        r = client.evaluate([{"task_id": case["task_id"], "solution": case["text"]}],
                            sanitize=True)
    except BcbError as e:
        raise Failed(str(e))
    return float(r[0]["reward"])


CLIENTS = {"verl": verl, "fusion": fusion, "openrlhf": openrlhf, "native": native}


def cases(ds, kind, n):
    """n answers, alternately right and wrong, each a distinct program."""
    rows = {}
    for line in gzip.open(os.path.join(ds, "bigcodebench-hard-v0.1.4.jsonl.gz"), "rt"):
        t = json.loads(line)
        if t["task_id"] in TASKS:
            rows[t["task_id"]] = t
    out = []
    for i in range(n):
        right = i % 2 == 0
        tag = f"# bench {i} {time.time()}\n"
        if kind == "verl":
            # A test case: reverse the input line, with about 0.1 s of work first.
            work = "sum(range(2_000_000))\n"
            body = "print(s[::-1])" if right else "print(s)"
            code = f"{tag}s = input()\n{work}{body}\n"
            out.append({"code": code, "stdin": f"abc{i}\n", "expected": f"abc{i}"[::-1],
                        "want": float(right)})
            continue
        t = rows[TASKS[i // 2 % len(TASKS)]]
        cont = (t["canonical_solution"] if right else WRONG_BODY) + tag
        if kind == "openrlhf":
            # A completion-style policy: the response continues the prompt.
            out.append({"task_id": t["task_id"], "prompt": t["complete_prompt"], "text": cont,
                        "want": float(right)})
        else:
            # A chat answer for the native client; a continuation for SandboxFusion's submit.
            text = cont if kind == "fusion" else (
                f"Here it is:\n```python\n{t['code_prompt']}{cont}```\n")
            out.append({"task_id": t["task_id"], "text": text, "want": float(right)})
    return out


def run(url, ds, kind, concurrency, n):
    counter = Counter()
    lat, wrong, lost, answered = [], 0, 0, 0
    errors = {}

    def one(case):
        t0 = time.perf_counter()
        try:
            reward = CLIENTS[kind](url, case, counter)
        except Failed as e:
            return None, time.perf_counter() - t0, str(e)
        return reward, time.perf_counter() - t0, None

    with cf.ThreadPoolExecutor(concurrency) as pool:
        for case, (reward, dt, err) in zip(
                batch := cases(ds, kind, n), pool.map(one, batch)):
            if err is not None:
                lost += 1
                errors[err] = errors.get(err, 0) + 1
                continue
            answered += 1
            lat.append(dt)
            wrong += int(reward != case["want"])
    p = (lambda q: f"{pct(lat, q):.2f}") if lat else (lambda q: "-")
    print(f"{kind:9s} concurrency {concurrency:4d}: sent {counter.sent:5d} retried "
          f"{counter.retried:4d} answered {answered:5d} wrong {wrong:3d} lost {lost:3d} "
          f"p50 {p(50)} s p99 {p(99)} s" + (f"  lost as: {errors}" if errors else ""),
          flush=True)
    return wrong + lost


def main():
    url, ds, concurrency, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    kinds = sys.argv[5:] or list(CLIENTS)
    bad = sum(run(url.rstrip("/"), ds, k, concurrency, n) for k in kinds)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
