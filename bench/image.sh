#!/usr/bin/env bash
# bcb's container image (docs/container.md), for a quiet machine with podman and mmdebstrap:
#   1. the binaries: `cargo build --profile PROFILE` of bcb and bcb-pyenv (skipped with BIN=DIR);
#   2. a cold build: image/build.sh --no-cache (the mmdebstrap base built and imported again,
#      every layer rebuilt; the host's uv cache still mounted, as it is on a machine that
#      installed the eval env), with the ground truth of GT;
#   3. cached rebuilds: the same inputs again (every layer cached), then after a change to bcb
#      alone (its binary with one byte appended: the bcb layer and those after it are rebuilt,
#      the env's layer stays cached);
#   4. the image's size (`podman image inspect`);
#   5. `bcb serve --subset hard --parallel 2` in a container, RUNS times: seconds from
#      `podman run` to the first 200 on /readyz (the ground truth baked in: found at start), and
#      the first and second requests' latency: one sample (BigCodeBench/19's canonical solution
#      as a new program each time, so no cache answers) on /v1/evaluate.
# Each step prints one `== ` line with its numbers.
# usage: bench/image.sh   env: PROFILE (dist), BIN (a directory holding built bcb and
#        bcb-pyenv), GT ("hard"; "full hard" is the published image's), RUNS (3),
#        BENCH_OUT (scratch folder), PORT (18865), BCB_DATASET_DIR (for the sample's code)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-dist}
gt=${GT:-hard}
runs=${RUNS:-3}
port=${PORT:-18865}
out=${BENCH_OUT:-$(mktemp -d /tmp/bcb-bench-image.XXXXXX)}
export BCB_DATASET_DIR=${BCB_DATASET_DIR:-$PWD/../shared/bigcodebench}
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/image/containers.conf}"
tag=localhost/bcb-bench:image
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

bin=${BIN:-}
if [[ -z "$bin" ]]; then
  t=$(now)
  cargo build --profile "$profile" --locked -p bcb-cli -p bcb-pyenv --bin bcb --bin bcb-pyenv
  bin="target/$([[ "$profile" == dev ]] && echo debug || echo "$profile")"
  echo "== cargo build --profile $profile: $(since "$t") s"
fi
cp "$bin/bcb" "$bin/bcb-pyenv" "$out/"

build() { # label, extra build.sh flags...
  local label=$1 t
  shift
  t=$(now)
  image/build.sh --base mmdebstrap --gt "$gt" --tag "$tag" --bin "$out" "$@" >/dev/null 2>"$out/build-$label.log"
  echo "== build, $label: $(since "$t") s"
}
build cold --no-cache
build cached
printf '\0' >>"$out/bcb"
build "after a change to bcb"
echo "== size: $(podman image inspect --format '{{.Size}}' "$tag") bytes"

# One request body: the canonical solution of a quick hard task, with a comment making it a
# program no cache has seen.
sample() { # n
  python3 - "$1" <<'EOF'
import gzip, json, os, sys, time
path = os.path.join(os.environ["BCB_DATASET_DIR"], "bigcodebench-hard-v0.1.4.jsonl.gz")
task = next(t for t in map(json.loads, gzip.open(path, "rt")) if t["task_id"] == "BigCodeBench/19")
code = task["complete_prompt"] + task["canonical_solution"] + f"\n# {sys.argv[1]} {time.time()}\n"
print(json.dumps({"samples": [{"task_id": task["task_id"], "solution": code}]}))
EOF
}
request() { # n → seconds
  local t
  sample "$1" >"$out/body.json"
  t=$(now)
  curl -sf -H 'authorization: Bearer bench' -H 'content-type: application/json' \
    --data @"$out/body.json" "http://127.0.0.1:$port/v1/evaluate" >"$out/answer.json"
  since "$t"
}
for i in $(seq "$runs"); do
  podman rm -f bcb-bench-serve >/dev/null 2>&1 || true
  t=$(now)
  podman run -d --security-opt "seccomp=$PWD/examples/k8s/seccomp/bcb-sandbox.json" --name bcb-bench-serve -p "127.0.0.1:$port:8765" -e BCB_SERVE_TOKEN=bench "$tag" \
    bcb serve --listen 0.0.0.0:8765 --subset hard --parallel 2 >/dev/null
  until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do
    if awk -v s="$(since "$t")" 'BEGIN { exit !(s > 300) }'; then
      podman logs bcb-bench-serve >&2
      echo "error: not ready after 300 s" >&2
      exit 1
    fi
    sleep 0.1
  done
  ready=$(since "$t")
  first=$(request "$i-1")
  second=$(request "$i-2")
  status=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["status"])' "$out/answer.json")
  echo "== serve run $i: ready $ready s after podman run; first request $first s, second $second s ($status)"
  podman logs bcb-bench-serve >"$out/serve-$i.log" 2>&1
  podman rm -f bcb-bench-serve >/dev/null
done
echo "logs in $out"
