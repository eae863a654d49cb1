#!/usr/bin/env bash
# Installs maturin (the builder uv and ruff ship their wheels with) into its own venv, for the
# wheel test (crates/bcb-cli/tests/wheel.rs): it builds bcb's wheel, installs it into a fresh
# venv and runs the console scripts. Idempotent and fast when already there.
# Prints BCB_MATURIN=<path of the maturin executable>.
# Usage: .ci/setup-wheel.sh [VENV_DIR]   (default: ~/.cache/bcb/maturin)
set -euo pipefail
VENV="${1:-$HOME/.cache/bcb/maturin}"
PIN=maturin==1.16.0
STAMP="$VENV/.bcb-pins"
if [[ ! ( -x "$VENV/bin/maturin" && -f "$STAMP" && "$(cat "$STAMP")" == "$PIN" ) ]]; then
  PY="${PYTHON:-python3}"
  "$PY" -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input "$PIN" >&2
  echo "$PIN" > "$STAMP"
fi
echo "BCB_MATURIN=$VENV/bin/maturin"
