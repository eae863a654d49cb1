"""bcb's BigCodeBench evaluator: a Gradio app with the upstream Space's interface.

Same 13 inputs and two JSON outputs as `bigcode/bigcodebench-evaluator`, published as
`/predict` on Gradio 5 and 6 alike, so the original's `--execution gradio --gradio_endpoint URL`,
OpenCompass, HELM and `bcb evaluate --execution gradio` call it unchanged. Each request runs
`bcb evaluate --execution local` (pre-warmed, sandboxed workers) on the uploaded file.

Settings (environment):
  BCB_BIN                 the bcb binary (default: `bcb` on PATH)
  BCB_PYTHON, BCB_DATASET_DIR, BCB_OFFLINE   passed through to bcb (eval env, dataset)
  BCB_SPACE_CONCURRENCY   jobs at once (default 1: each job already uses every core)
  BCB_SPACE_MAX_UPLOAD    upload size limit (default 200mb)
  BCB_SPACE_PRELOAD       subsets whose ground truth is checked at start (default "full,hard";
                          "" for none). Jobs wait until it is done, then reuse it.
  GRADIO_SERVER_NAME, GRADIO_SERVER_PORT   where to listen (Gradio's own variables)
There is no restart timer: a job in flight is never killed by the app.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading

import gradio as gr

BCB = os.environ.get("BCB_BIN", "bcb")
CORES = os.cpu_count() or 1
CONCURRENCY = max(1, int(os.environ.get("BCB_SPACE_CONCURRENCY", "1")))
MAX_UPLOAD = os.environ.get("BCB_SPACE_MAX_UPLOAD", "200mb")
PRELOAD = [s for s in os.environ.get("BCB_SPACE_PRELOAD", "full,hard").split(",") if s.strip()]

_preloaded = threading.Event()


def _bcb(args, cwd=None):
    """Runs bcb; a failure becomes a Gradio error the client sees (never a verdict)."""
    proc = subprocess.run([BCB, *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise gr.Error(f"bcb {args[0]} failed (exit {proc.returncode}):\n{tail}", duration=None)
    return proc.stdout


def _preload():
    """Ground truth of the default settings, so the first job does not pay for it."""
    try:
        for subset in PRELOAD:
            print(f"preloading ground truth: {subset}", flush=True)
            try:
                _bcb(["evaluate", "--execution", "local", "--subset", subset.strip(), "--check-gt-only", "--quiet"])
            except gr.Error as e:
                print(f"ground-truth preload of {subset} failed: {e}", flush=True)
    finally:
        _preloaded.set()


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
    _preloaded.wait()
    # Upstream's Space takes bare numbers and prepends the prefix; full ids work too. The
    # original's CLI (Fire) turns `13,15` into a tuple, which arrives as "(13, 15)".
    ids = [f"BigCodeBench/{n}" for n in re.findall(r"\d+", str(selective_evaluate or ""))]
    parallel = int(parallel)
    if parallel < 1:
        parallel = max(1, CORES // CONCURRENCY)
    args = [
        "evaluate", "--execution", "local", "--quiet",
        "--split", split, "--subset", subset,
        "--pass-k", str(pass_k).replace(" ", ""),
        "--parallel", str(parallel),
        "--min-time-limit", str(float(min_time_limit)),
        "--max-as-limit", str(int(max_as_limit)),
        "--max-data-limit", str(int(max_data_limit)),
        "--max-stack-limit", str(int(max_stack_limit)),
        "--calibrated", "true" if calibrated else "false",
        "--ids", ",".join(ids),
    ]
    if no_gt:
        args.append("--no-gt")
    if check_gt_only:
        # bcb writes the ground-truth summary as a file: nothing is parsed from its console.
        work = tempfile.mkdtemp(prefix="bcb-gt-")
        try:
            summary = os.path.join(work, "gt.json")
            _bcb(args + ["--check-gt-only", "--gt-summary", summary])
            with open(summary) as f:
                gt = json.load(f)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return {}, {"gt_pass_rate": gt["gt_pass_rate"], "failed_tasks": gt["failed_tasks"]}
    if samples is None:
        raise gr.Error("no samples file was uploaded")
    # A fresh directory per job: the uploaded name decides `model` and the result files'
    # names, and concurrent jobs must not see each other's files.
    work = tempfile.mkdtemp(prefix="bcb-job-")
    try:
        name = os.path.basename(samples)
        if not name.endswith(".jsonl"):
            raise gr.Error(f"samples file {name!r} must end in .jsonl")
        path = os.path.join(work, name)
        shutil.copyfile(samples, path)
        _bcb(args + ["--samples", path])
        stem = path[: -len(".jsonl")]
        with open(stem + "_eval_results.json") as f:
            results = json.load(f)
        with open(stem + "_pass_at_k.json") as f:
            pass_at_k = json.load(f)
        return results, pass_at_k
    finally:
        shutil.rmtree(work, ignore_errors=True)


demo = gr.Interface(
    fn=predict,
    inputs=[
        gr.Dropdown(["complete", "instruct"], label="BigCodeBench Split", value="complete"),
        gr.Dropdown(["full", "hard"], label="BigCodeBench Subset", value="hard"),
        gr.File(label="Samples Path (.jsonl)", type="filepath"),
        gr.Textbox(label="Pass k Values (comma-separated)", value="1,5,10"),
        gr.Slider(-1, 4 * CORES, step=1, label="Parallel Workers", value=-1),
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
# One job per `BCB_SPACE_CONCURRENCY` slot; the rest wait in the queue.
demo.queue(default_concurrency_limit=CONCURRENCY)

if __name__ == "__main__":
    threading.Thread(target=_preload, daemon=True).start()
    demo.launch(max_file_size=MAX_UPLOAD, show_error=True)
