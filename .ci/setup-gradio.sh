#!/usr/bin/env bash
# Installs real Gradio servers for the remote-execution tests: one venv with the last Gradio 5
# (5.50) and one with Gradio 6, each also holding the original client (bigcodebench 0.2.5, no
# deps, plus the few modules its `evaluate` imports) so the original's `--execution gradio` can be
# pointed at bcb's Space. Idempotent and fast when already installed. Prints the env vars tests read.
# Usage: .ci/setup-gradio.sh   (venvs under ${BCB_GRADIO_DIR:-$HOME/.cache/bcb})
set -euo pipefail
BASE="${BCB_GRADIO_DIR:-$HOME/.cache/bcb}"
PY="${PYTHON:-python3}"
# Versions pinned so CI is reproducible; bump GRADIO6 with space/requirements.txt.
GRADIO5="gradio==5.50.0"
GRADIO6="gradio==6.31.0"
# What the original's evaluate.py imports at module level (through generate.py it imports
# transformers (without torch), datasets and pqdm; its other deps are for generation only).
ORIG_CLIENT=(bigcodebench==0.2.5)
ORIG_DEPS=("e2b<=1.11.1" transformers datasets pqdm termcolor appdirs tempdir wget fire tree-sitter==0.25.2 tree-sitter-python==0.25.0)

install() { # venv-dir gradio-pin
  local venv="$1" pin="$2" stamp="$1/.bcb-pins"
  local want="$pin ${ORIG_CLIENT[*]} ${ORIG_DEPS[*]}"
  if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  "$PY" -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input "$pin" "${ORIG_DEPS[@]}" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input --no-deps "${ORIG_CLIENT[@]}" >&2
  "$venv/bin/python" -c 'import gradio, bigcodebench.evaluate' >&2
  echo "$want" > "$stamp"
}

install "$BASE/gradio5" "$GRADIO5"
install "$BASE/gradio6" "$GRADIO6"
echo "BCB_GRADIO5_PYTHON=$BASE/gradio5/bin/python"
echo "BCB_GRADIO6_PYTHON=$BASE/gradio6/bin/python"
