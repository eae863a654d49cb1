#!/usr/bin/env bash
# Installs kubernetes-validate (PyPI; it bundles the Kubernetes OpenAPI schemas of every
# release it knows, so it validates offline) into its own venv, for the manifests test
# (crates/bcb-cli/tests/k8s_manifests.rs). Idempotent and fast when already there.
# Prints BCB_K8S_VALIDATE=<path of the kubernetes-validate executable>.
# Usage: .ci/setup-k8s-validate.sh [VENV_DIR]   (default: ~/.cache/bcb/k8s-validate)
set -euo pipefail
VENV="${1:-$HOME/.cache/bcb/k8s-validate}"
PIN=kubernetes-validate==1.37.0
STAMP="$VENV/.bcb-pins"
if [[ ! ( -x "$VENV/bin/kubernetes-validate" && -f "$STAMP" && "$(cat "$STAMP")" == "$PIN" ) ]]; then
  PY="${PYTHON:-python3}"
  "$PY" -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-input "$PIN" >&2
  "$VENV/bin/kubernetes-validate" --version >&2
  echo "$PIN" > "$STAMP"
fi
echo "BCB_K8S_VALIDATE=$VENV/bin/kubernetes-validate"
