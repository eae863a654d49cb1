#!/usr/bin/env bash
# Installs the real clients the `bcb serve` tests drive: SandboxFusion's `sandbox-fusion` client
# (pinned) in a venv of its own, plus `requests` for the RL examples (examples/rl). Idempotent
# and fast when already installed. Prints the env var the tests read.
# Usage: .ci/setup-serve.sh   (venv under ${BCB_SERVE_DIR:-$HOME/.cache/bcb}/serve-client)
set -euo pipefail
BASE="${BCB_SERVE_DIR:-$HOME/.cache/bcb}"
PY="${PYTHON:-python3}"
VENV="$BASE/serve-client"
PINS=(sandbox-fusion==0.3.7 requests)
want="${PINS[*]}"
stamp="$VENV/.bcb-pins"
if ! [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  "$PY" -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input "${PINS[@]}" >&2
  "$VENV/bin/python" -c 'import sandbox_fusion, requests' >&2
  echo "$want" > "$stamp"
fi
echo "BCB_SERVE_CLIENT_PYTHON=$VENV/bin/python"
