#!/usr/bin/env bash
# Makes the original harness (bigcodebench 0.2.5, from PyPI) runnable in our eval env for
# side-by-side timing of its *local evaluator*, without its generation stack (vllm,
# transformers, datasets...). Those are imported at module level but never used by
# `evaluate --execution local --check_gt_only` with BIGCODEBENCH_OVERRIDE_PATH set, so they get
# one-line stand-ins. Nothing here is committed code of the original: it is installed at bench
# time into a scratch folder. Prints the folder to put on PYTHONPATH.
#
# usage: bench/original-overlay.sh [DIR]   (default ~/.cache/bcb/original-overlay)
set -euo pipefail
dir=${1:-$HOME/.cache/bcb/original-overlay}
py=${BCB_PYTHON:-$HOME/.cache/bcb/eval-env-py311/bin/python}
if [[ ! -f "$dir/.ready" ]]; then
  rm -rf "$dir"; mkdir -p "$dir"
  "$py" -m pip install --quiet --disable-pip-version-check --no-deps --target "$dir" \
    bigcodebench==0.2.5 appdirs fire termcolor tempdir wget multipledispatch pqdm \
    bounded-pool-executor rich markdown-it-py mdurl tree-sitter==0.25.2 tree-sitter-python==0.25.0 >&2
  for m in datasets gradio_client e2b httpx transformers; do mkdir -p "$dir/$m"; done
  echo 'def load_dataset(*a, **k): raise RuntimeError("stand-in: set BIGCODEBENCH_OVERRIDE_PATH")' >"$dir/datasets/__init__.py"
  printf 'class Client: pass\ndef handle_file(*a, **k): pass\n' >"$dir/gradio_client/__init__.py"
  echo 'class Sandbox: pass' >"$dir/e2b/__init__.py"
  echo 'class ReadTimeout(Exception): pass' >"$dir/httpx/__init__.py"
  echo 'class AutoTokenizer: pass' >"$dir/transformers/__init__.py"
  PYTHONPATH="$dir" "$py" -c 'import bigcodebench.evaluate' >&2
  touch "$dir/.ready"
fi
echo "$dir"
