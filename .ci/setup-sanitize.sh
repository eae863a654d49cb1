#!/usr/bin/env bash
# Creates the venv with the original sanitizer (bigcodebench 0.2.5, no deps) and the
# tree-sitter versions it runs on, for the differential test and bench/sanitize.sh.
# Idempotent and fast when already there. Prints the venv's python path on stdout.
# Usage: .ci/setup-sanitize.sh [VENV_DIR]   (default: $BCB_UPSTREAM_VENV or ~/.cache/bcb/upstream-sanitize)
set -euo pipefail
VENV="${1:-${BCB_UPSTREAM_VENV:-$HOME/.cache/bcb/upstream-sanitize}}"
# The original asks for tree_sitter>=0.22 and tree-sitter-python>=0.21; pin what resolves today
# so that our Rust side (tree-sitter-python 0.25.0 grammar) compares against the same grammar.
PINS=(bigcodebench==0.2.5 tree-sitter==0.25.2 tree-sitter-python==0.25.0)
STAMP="$VENV/.bcb-pins"
if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "${PINS[*]}" ]]; then
  echo "$VENV/bin/python"
  exit 0
fi
PY="${PYTHON:-python3}"
"$PY" -m venv "$VENV" >&2
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input --no-deps "${PINS[0]}" >&2
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input "${PINS[1]}" "${PINS[2]}" >&2
"$VENV/bin/python" - <<'PY' >&2
import importlib.util, pathlib, sys
import bigcodebench  # noqa: F401  (package files only; its deps are not installed)
PY
echo "${PINS[*]}" > "$STAMP"
echo "$VENV/bin/python"
