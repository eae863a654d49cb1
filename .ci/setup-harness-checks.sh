#!/usr/bin/env bash
# Installs ruff and pytest (PyPI, pinned) into a venv of their own, for the checks of the
# sandbox's Python harness (crates/bcb-sandbox/tests/harness_python.rs: `ruff check` and its
# unit tests, crates/bcb-sandbox/harness/tests/). The venv is made from python3.11, the
# version the eval env (and so the harness) runs on; the eval env itself stays as its lock
# says. Idempotent and fast when already there.
# Prints BCB_RUFF=<ruff executable> and BCB_PYTEST_PYTHON=<the venv's python, with pytest>.
# Usage: .ci/setup-harness-checks.sh [VENV_DIR]   (default: ~/.cache/bcb/harness-checks)
set -euo pipefail
VENV="${1:-$HOME/.cache/bcb/harness-checks}"
PINS=(ruff==0.17.6 pytest==9.2.0)
STAMP="$VENV/.bcb-pins"
if [[ ! ( -x "$VENV/bin/ruff" && -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "${PINS[*]}" ) ]]; then
  PY="${PYTHON:-python3.11}"
  "$PY" -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input "${PINS[@]}" >&2
  "$VENV/bin/ruff" --version >&2
  "$VENV/bin/python" -m pytest --version >&2
  echo "${PINS[*]}" > "$STAMP"
fi
echo "BCB_RUFF=$VENV/bin/ruff"
echo "BCB_PYTEST_PYTHON=$VENV/bin/python"
