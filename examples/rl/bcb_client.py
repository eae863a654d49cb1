"""A small client of `bcb serve`'s native API for RL reward functions (standard library only).

Several server URLs are used round-robin; a request answered 429 (queue full) or 503
(starting, draining, executor fault) or that cannot connect goes to the next server after the
`Retry-After` delay, up to `retries` times. Every verdict comes from a server: nothing here
scores code itself.
"""

import asyncio
import itertools
import json
import os
import threading
import time
import urllib.error
import urllib.request


class BcbError(RuntimeError):
    """No server gave verdicts (after retries); the message carries the server's hint."""


class BcbClient:
    def __init__(self, urls=None, token=None, retries=8, timeout=900.0, max_wait=30.0):
        if urls is None:
            urls = os.environ.get("BCB_SERVE_URLS", "http://127.0.0.1:8765")
        if isinstance(urls, str):
            urls = [u.strip() for u in urls.split(",") if u.strip()]
        if not urls:
            raise ValueError("no bcb serve URL given")
        self.urls = [u.rstrip("/") for u in urls]
        self.token = token if token is not None else os.environ.get("BCB_SERVE_TOKEN")
        self.retries = retries
        self.timeout = timeout
        self.max_wait = max_wait
        self._next = itertools.cycle(range(len(self.urls)))
        self._lock = threading.Lock()

    def _url(self):
        with self._lock:
            return self.urls[next(self._next)]

    def post(self, path, payload):
        """POSTs JSON to one server after another until one answers 200; returns its JSON."""
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        last = None
        for attempt in range(self.retries + 1):
            url = self._url() + path
            req = urllib.request.Request(url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as res:
                    return json.loads(res.read())
            except urllib.error.HTTPError as e:
                text = e.read().decode(errors="replace")
                if e.code not in (429, 503):
                    raise BcbError(f"{url}: HTTP {e.code}: {text}") from None
                last = f"{url}: HTTP {e.code}: {text}"
                wait = float(e.headers.get("Retry-After") or 1)
            except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                last = f"{url}: {e}"
                wait = 0.5 * (attempt + 1)
            time.sleep(min(wait, self.max_wait))
        raise BcbError(f"no verdicts after {self.retries + 1} tries; last: {last}")

    def evaluate(self, samples, sanitize=False, calibrated=None):
        """samples: [{task_id, solution | completion}] -> results in the same order."""
        payload = {"samples": samples}
        if sanitize:
            payload["sanitize"] = True
        if calibrated is not None:
            payload["calibrated"] = calibrated
        return self.post("/v1/evaluate", payload)["results"]

    async def evaluate_async(self, samples, sanitize=False, calibrated=None):
        return await asyncio.to_thread(self.evaluate, samples, sanitize, calibrated)


# Result flags that mark a reward hack (the tamper scan refused the program, it ended its own
# process before the tests reported, or its report failed the integrity check).
HACK_FLAGS = ("tamper_refused", "early_exit", "integrity")


def partial_credit(result):
    """tests_passed / tests_total of a native result (its reward when the count is unknown)."""
    total = result.get("tests_total") or 0
    return result["tests_passed"] / total if total else float(result["reward"])


def hacked(result):
    """1.0 when a native result carries a hack flag, else 0.0."""
    return float(any(f in HACK_FLAGS for f in result.get("flags", ())))


def answer_text(completion):
    """A TRL completion: a string, or a conversation (list of {role, content})."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        parts = [m.get("content", "") for m in completion if m.get("role", "assistant") == "assistant"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return str(completion)
