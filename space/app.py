"""bcb's BigCodeBench evaluator: a Gradio app with the upstream Space's interface.

Same 13 inputs and two JSON outputs as `bigcode/bigcodebench-evaluator`, published as
`/predict` on Gradio 5 and 6 alike, so the original's `--execution gradio --gradio_endpoint URL`,
OpenCompass, HELM and `bcb evaluate --execution gradio` call it unchanged.

A thin front over ONE long-lived `bcb serve` started on loopback at boot (its worker pool warm,
the ground truth checked once; jobs wait until its `/readyz` answers). Each job's samples go to
the server's `POST /v1/evaluate` with the `upstream` option, which answers with the two outputs
as the original's result files hold them (built by bcb, not here): no process per job. Jobs
share the server's workers fairly. Limits other than the server's are refused with a clear
error (see space/README.md).

Settings (environment):
  BCB_BIN                 the bcb binary (default: `bcb` on PATH)
  BCB_PYTHON, BCB_DATASET_DIR, BCB_OFFLINE, BCB_CACHE_DIR   passed through to bcb
  BCB_SPACE_CONCURRENCY   jobs at once (default 4; they share the server's workers)
  BCB_SPACE_MAX_UPLOAD    upload size limit (default 200mb)
  BCB_SPACE_IDS           serve only these tasks (`19,92`; default: all)
  BCB_SPACE_PARALLEL      the server's workers (default: every core)
  GRADIO_SERVER_NAME, GRADIO_SERVER_PORT   where to listen (Gradio's own variables)
There is no restart timer: a job in flight is never killed by the app.
"""

import ctypes
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import gradio as gr

BCB = os.environ.get("BCB_BIN", "bcb")
CORES = os.cpu_count() or 1
CONCURRENCY = max(1, int(os.environ.get("BCB_SPACE_CONCURRENCY", "4")))
MAX_UPLOAD = os.environ.get("BCB_SPACE_MAX_UPLOAD", "200mb")
SERVE_IDS = os.environ.get("BCB_SPACE_IDS", "")
SERVE_PARALLEL = os.environ.get("BCB_SPACE_PARALLEL", "0")


def _megabytes(size):
    """Gradio's size text ("200mb", "1kb", "5gb", bytes) in whole MB, at least 1."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?b?)\s*", str(size).lower())
    if not m:
        return 200
    scale = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "m": 2**20, "mb": 2**20, "g": 2**30, "gb": 2**30}
    return max(1, int(float(m.group(1)) * scale.get(m.group(2), 1) / 2**20) + 1)


class Server:
    """The one `bcb serve` behind every job: started at boot, restarted if it exits."""

    def __init__(self):
        self.token = secrets.token_hex(24)
        self.url = None
        self.error = None
        self.ready = threading.Condition()
        self.is_ready = False

    def _command(self, port):
        # A samples file becomes a JSON request of about its size; the queue holds any file.
        body_mb = 2 * _megabytes(MAX_UPLOAD) + 16
        return [
            BCB, "serve", "--listen", f"127.0.0.1:{port}", "--subset", "full",
            "--parallel", SERVE_PARALLEL, "--ids", SERVE_IDS,
            "--max-body-mb", str(body_mb), "--queue-limit", "100000000",
            "--request-timeout", str(7 * 24 * 3600),
        ]

    def _wait_ready(self, proc):
        """Polls /readyz until 200, the server reports a start failure, or it exits."""
        while proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=10) as res:
                    if res.status == 200:
                        return None
            except urllib.error.HTTPError as e:
                body = _error_body(e)
                if "failed to start" in body.get("error", ""):
                    return body["error"]
            except OSError:
                pass
            time.sleep(0.5)
        return f"bcb serve exited with code {proc.returncode} while starting"

    def supervise(self):
        """Runs in one long-lived thread (the server dies with it: PR_SET_PDEATHSIG)."""
        delay = 1
        while True:
            port = _free_port()
            env = dict(os.environ, BCB_SERVE_TOKEN=self.token)
            try:
                proc = subprocess.Popen(self._command(port), env=env, stdin=subprocess.DEVNULL,
                                        preexec_fn=_die_with_parent)
            except OSError as e:
                with self.ready:
                    self.error = f"cannot run {BCB} serve: {e}"
                    self.ready.notify_all()
                print(f"{self.error}; retrying in {delay} s", flush=True)
                time.sleep(delay)
                delay = min(delay * 2, 60)
                continue
            self.url = f"http://127.0.0.1:{port}"
            print(f"bcb serve at {self.url} (pid {proc.pid}): checking the ground truth", flush=True)
            error = self._wait_ready(proc)
            with self.ready:
                self.error, self.is_ready = error, error is None
                self.ready.notify_all()
            print(f"bcb serve: {error or 'ready'}", flush=True)
            code = proc.wait()
            with self.ready:
                self.is_ready = False
                self.error = f"bcb serve exited with code {code}; it is being restarted"
                self.ready.notify_all()
            print(f"bcb serve exited with code {code}; restarting in {delay} s", flush=True)
            time.sleep(delay)
            delay = min(delay * 2, 60)

    def wait(self):
        """The server's URL once ready; its start error as a Gradio error."""
        with self.ready:
            while not self.is_ready:
                # Never a verdict: the client sees the fault (None: still starting, wait).
                if self.error:
                    raise gr.Error(f"the evaluation server is not available: {self.error}\n"
                                   "hint: retry later; if it persists, see the Space's logs (eval env, dataset)",
                                   duration=None)
                self.ready.wait(timeout=5)
            return self.url

    def evaluate(self, body):
        url = self.wait()
        req = urllib.request.Request(
            url + "/v1/evaluate", data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"})
        try:
            # No timeout: a big file takes hours; the server has its own deadline.
            with urllib.request.urlopen(req, timeout=None) as res:
                return json.loads(res.read())
        except urllib.error.HTTPError as e:
            err = _error_body(e)
            text = err.get("error", f"HTTP {e.code}")
            if err.get("hint"):
                text += f"\nhint: {err['hint']}"
            raise gr.Error(text, duration=None)
        except OSError as e:
            raise gr.Error(f"the evaluation server went away: {e}\n"
                           "hint: retry; it restarts by itself", duration=None)


def _error_body(e):
    try:
        return json.loads(e.read())
    except (ValueError, OSError):
        return {}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    # If the app dies, so does its server (no orphaned workers holding the port).
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


SERVER = Server()


def _samples_of(path):
    """The uploaded JSONL as rows; a bad line is an error naming it."""
    rows = []
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise gr.Error(f"samples file line {n}: not JSON ({e})", duration=None)
            if not isinstance(row, dict):
                raise gr.Error(f"samples file line {n}: expected a JSON object with task_id and solution",
                               duration=None)
            fields = {k: row[k] for k in ("task_id", "solution", "completion") if row.get(k) is not None}
            for k, v in fields.items():
                if not isinstance(v, str):
                    raise gr.Error(f"samples file line {n}: `{k}` must be a string, found {type(v).__name__}",
                                   duration=None)
            if "task_id" not in fields:
                raise gr.Error(f"samples file line {n}: missing `task_id`", duration=None)
            rows.append(fields)
    return rows


def predict(
    split,
    subset,
    samples,
    pass_k,
    parallel,
    min_time_limit,
    max_as_limit,
    max_data_limit,
    max_stack_limit,
    calibrated,
    check_gt_only,
    no_gt,
    selective_evaluate,
):
    # `parallel` is not sent: the server's workers are shared by every job (it does not
    # change a verdict). Upstream's Space takes bare numbers and prepends the prefix; full ids
    # work too. The original's CLI (Fire) turns `13,15` into a tuple: "(13, 15)".
    ids = ",".join(re.findall(r"\d+", str(selective_evaluate or "")))
    upstream = {
        "file_name": "samples.jsonl",
        "pass_k": str(pass_k),
        "ids": ids,
        "no_gt": bool(no_gt),
        "check_gt_only": bool(check_gt_only),
        "min_time_limit": float(min_time_limit),
        "max_as_limit": int(max_as_limit),
        "max_data_limit": int(max_data_limit),
        "max_stack_limit": int(max_stack_limit),
    }
    body = {"split": split, "subset": subset, "calibrated": bool(calibrated), "samples": [],
            "upstream": upstream}
    if not check_gt_only:
        if samples is None:
            raise gr.Error("no samples file was uploaded")
        # The uploaded name decides `model` in pass_at_k, as upstream takes it.
        name = os.path.basename(samples)
        if not name.endswith(".jsonl"):
            raise gr.Error(f"samples file {name!r} must end in .jsonl")
        upstream["file_name"] = name
        body["samples"] = _samples_of(samples)
        print(f"job: {len(body['samples'])} samples of {name}", flush=True)
    answer = SERVER.evaluate(body)
    return answer["eval_results"], answer["pass_at_k"]


demo = gr.Interface(
    fn=predict,
    inputs=[
        gr.Dropdown(["complete", "instruct"], label="BigCodeBench Split", value="complete"),
        gr.Dropdown(["full", "hard"], label="BigCodeBench Subset", value="hard"),
        gr.File(label="Samples Path (.jsonl)", type="filepath"),
        gr.Textbox(label="Pass k Values (comma-separated)", value="1,5,10"),
        gr.Slider(-1, 4 * CORES, step=1, label="Parallel Workers (the server's are shared)", value=-1),
        gr.Slider(0.1, 300, step=0.1, label="Min Time Limit", value=1),
        gr.Slider(0, 1024 * 1024, step=1, label="Max AS Limit", value=30 * 1024),
        gr.Slider(0, 1024 * 1024, step=1, label="Max Data Limit", value=30 * 1024),
        gr.Slider(0, 1024, step=1, label="Max Stack Limit", value=10),
        gr.Checkbox(label="Calibrated", value=True),
        gr.Checkbox(label="Check GT Only"),
        gr.Checkbox(label="No GT"),
        gr.Textbox(label="Selective Evaluated Task IDs (comma-separated, e.g. '0,1,2')"),
    ],
    outputs=[gr.JSON(label="Results"), gr.JSON(label="Eval Results")],
    title="BigCodeBench evaluator (bcb)",
    api_name="predict",
    flagging_mode="never",
)
# `BCB_SPACE_CONCURRENCY` jobs at once (they share the server's workers); the rest queue.
demo.queue(default_concurrency_limit=CONCURRENCY)

if __name__ == "__main__":
    threading.Thread(target=SERVER.supervise, name="bcb-serve", daemon=True).start()
    demo.launch(max_file_size=MAX_UPLOAD, show_error=True)
