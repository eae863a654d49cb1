#!/usr/bin/env bash
# Ground truth through bcb's evaluator Space (space/app.py under a real Gradio server on
# loopback) vs the same check run locally, one after the other, each from an empty cache:
# wall time and ground-truth pass rate side by side.
#
# usage: bench/remote-gradio.sh [hard|full] [gradio-python]
# env:   BCB (default: target/debug/bcb), BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT,
#        BCB_GRADIO6_PYTHON (default gradio python; `.ci/setup-gradio.sh` prints it)
set -euo pipefail
subset=${1:-hard}
. "$(dirname "$0")/lib.sh"
gpy=${2:-${BCB_GRADIO6_PYTHON:-$HOME/.cache/bcb/gradio6/bin/python}}
bcb=${BCB:-$here/target/debug/bcb}
bench_python
export BCB_OFFLINE=1
out=${BENCH_OUT:-$(mktemp -d /tmp/bcb-bench-remote.XXXXXX)}
mkdir -p "$out"/local-cache "$out"/space-cache "$out"/gradio-tmp
port=$("$gpy" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# The Space's own server checks the ground truth of the tasks it serves at boot (the subset's
# here); that is not timed: the timing starts once it is ready.
ids=
if [ "$subset" = hard ]; then
  ids=$(paste -sd, "$BCB_DATASET_DIR/hard_task_ids.txt")
fi
BCB_BIN=$bcb BCB_CACHE_DIR=$out/space-cache BCB_SPACE_IDS=$ids GRADIO_SERVER_NAME=127.0.0.1 \
  GRADIO_SERVER_PORT=$port GRADIO_ANALYTICS_ENABLED=False GRADIO_TEMP_DIR=$out/gradio-tmp \
  setsid "$gpy" "$here/space/app.py" >"$out/space.log" 2>&1 &
space=$!
trap 'kill -- -$space 2>/dev/null || true' EXIT
until grep -q "Running on local URL" "$out/space.log"; do sleep 0.5; done
until grep -q "^bcb serve: ready" "$out/space.log"; do sleep 1; done
version=$("$gpy" -c 'import gradio; print(gradio.__version__)')

timed() { # name, command...
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$out/$name.out" 2>"$out/$name.err"
  t1=$(date +%s.%N)
  printf '%-28s wall %7.1f s   %s\n' "$name" "$(echo "$t1 - $t0" | bc)" \
    "$(grep -m1 'Groundtruth pass rate' "$out/$name.out" || true)"
}
echo "ground truth, subset $subset, $(nproc) cores, Gradio $version; files in $out"
BCB_CACHE_DIR=$out/local-cache timed "local" "$bcb" evaluate --check-gt-only --subset "$subset" -q
timed "through the Space" "$bcb" evaluate --execution gradio --gradio-endpoint "http://127.0.0.1:$port" \
  --check-gt-only --subset "$subset"
