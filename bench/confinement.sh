#!/usr/bin/env bash
# bcb's sandbox inside container confinements, measured: for each confinement, `bcb env check
# --json` (which protection is on) and every test of the sandbox's hostile-sample, escape and
# reward-hack suites (crates/bcb-execute/tests/{adversarial,escapes,reward_hacks}.rs), each test
# run alone, inside a podman container. Prints two Markdown tables: protection × confinement
# (on/off) and attack × confinement (contained or not), and leaves every log in OUT.
#
# Confinements (CONFS to choose, space-separated):
#   podman          rootful podman's defaults (its seccomp profile and capabilities, root)
#   docker-seccomp  Docker's default seccomp profile (bench/seccomp/docker-default.json, from
#                   moby's source) and Docker's default capabilities, root
#   user-1000       podman's defaults as a non-root user (--user 1000)
#   privileged      --privileged (every capability, no seccomp, writable cgroups), root
#   k8s-restricted  what a Kubernetes pod gets with RuntimeDefault and Pod Security
#                   "restricted": uid 1000, no capability, no_new_privs, Docker's seccomp
#   k8s-bcb         the same with examples/k8s/seccomp/bcb-sandbox.json (the manifests' choice)
#
# The root file system: Debian 12 by mmdebstrap (cached in $CACHE), with the host's test
# binaries, bcb, the eval env and the dataset mounted read-only at their host paths (same
# glibc). Needs root, podman, runc, mmdebstrap. Every test and check runs under `timeout`.
# The attacks run only inside the containers (their controls run the sandbox off).
#
# Usage: [CONFS=...] [ONLY=REGEX] bench/confinement.sh [OUT]   (default ../bench-out/confinement)
# ONLY='^$' runs `bcb env check` alone in each: the protection table without the attacks.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
OUT="${1:-$REPO/../bench-out/confinement}"
CACHE="${CACHE:-$REPO/../cache}"
CONFS="${CONFS:-podman docker-seccomp user-1000 privileged k8s-restricted k8s-bcb}"
PY="${BCB_PYTHON:-$HOME/.cache/bcb/eval-env-py311/bin/python}"
DATA="${BCB_DATASET_DIR:-$(cd .. && pwd)/shared/bigcodebench}"
TEST_TIMEOUT="${TEST_TIMEOUT:-1200}"
mkdir -p "$OUT" "$CACHE"
OUT="$(cd "$OUT" && pwd)"
say() { echo "[$(date +%T)] $*" >&2; }

# The eval env and the interpreter it was made from (pyvenv.cfg `home`), mounted as they are.
VENV="$(cd "$(dirname "$PY")/.." && pwd)"
BASE_PY="$(sed -n 's/^home = //p' "$VENV/pyvenv.cfg")"
BASE_PY="$(cd "$BASE_PY/.." && pwd)"

say "building bcb and the test binaries"
cargo build -q -p bcb-cli --bin bcb
BCB="$REPO/target/debug/bcb"
declare -A BINS=()
while read -r name exe; do BINS[$name]="$exe"; done < <(
  cargo test -q -p bcb-execute --test adversarial --test escapes --test reward_hacks --no-run \
    --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"], m["executable"])')
(( ${#BINS[@]} == 3 )) || { echo "error: test binaries not found" >&2; exit 1; }

IMAGE=localhost/bcb-confine:bookworm
if ! podman image exists "$IMAGE"; then
  if [[ ! -f "$CACHE/bookworm-base.tar" ]]; then
    say "mmdebstrap: Debian 12 minbase with python3.11"
    mmdebstrap --variant=minbase --include=python3.11 bookworm "$CACHE/bookworm-base.tar" >&2
  fi
  podman import -q "$CACHE/bookworm-base.tar" localhost/bcb-confine-base:bookworm >/dev/null
  # /root traversable (the eval env is mounted under it), a uid 1000 user, and python3 (the
  # suites re-run themselves as `nobody` with the system Python).
  ctr="$(podman run -d --runtime runc --cgroup-manager cgroupfs --network none \
    --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
    localhost/bcb-confine-base:bookworm sh -c \
    'chmod 0755 /root && useradd -u 1000 -m user && ln -sf python3.11 /usr/bin/python3')"
  podman wait "$ctr" >/dev/null
  podman commit -q "$ctr" "$IMAGE" >/dev/null
  podman rm "$ctr" >/dev/null
fi

COMMON=(--rm --runtime runc --cgroup-manager cgroupfs --ulimit nofile=1024:1024
  --ulimit nproc=4096:4096 --network none
  -v "$BCB:/usr/local/bin/bcb:ro" -v "$VENV:$VENV:ro" -v "$BASE_PY:$BASE_PY:ro"
  -v "$DATA:$DATA:ro" -v "$REPO/crates/bcb-execute/tests:$REPO/crates/bcb-execute/tests:ro"
  -e "BCB_PYTHON=$VENV/bin/python" -e "BCB_DATASET_DIR=$DATA" -e BCB_OFFLINE=1
  -e BCB_CACHE_DIR=/tmp/bcb-cache -e BCB_ESCAPE_VISIBLE_DIR=/var/tmp/bcb-escape)
for name in "${!BINS[@]}"; do COMMON+=(-v "${BINS[$name]}:${BINS[$name]}:ro"); done
DOCKER_CAPS=(--cap-add AUDIT_WRITE,MKNOD,NET_RAW)  # Docker's defaults that podman's lack
RESTRICTED=(--user 1000:1000 --cap-drop all --security-opt no-new-privileges)
flags() {
  case "$1" in
    podman) ;;
    docker-seccomp) echo --security-opt "seccomp=$REPO/bench/seccomp/docker-default.json" "${DOCKER_CAPS[@]}" ;;
    user-1000) echo --user 1000:1000 ;;
    privileged) echo --privileged ;;
    k8s-restricted) echo "${RESTRICTED[@]}" --security-opt "seccomp=$REPO/bench/seccomp/docker-default.json" ;;
    k8s-bcb) echo "${RESTRICTED[@]}" --security-opt "seccomp=$REPO/examples/k8s/seccomp/bcb-sandbox.json" ;;
    *) echo "error: unknown confinement $1" >&2; exit 2 ;;
  esac
}

for conf in $CONFS; do
  dir="$OUT/$conf"
  mkdir -p "$dir"
  # ONLY (a regex of test names) re-runs those and keeps the other results (the tables take
  # each test's last run).
  [[ -n "${ONLY:-}" ]] || : >"$dir/results.txt"
  # shellcheck disable=SC2046 # flags() prints words
  run=(podman run "${COMMON[@]}" $(flags "$conf") "$IMAGE")
  say "$conf: bcb env check"
  timeout 300 "${run[@]}" bcb env check --json --subset hard >"$dir/env-check.json" 2>"$dir/env-check.err" || true
  for name in adversarial escapes reward_hacks; do
    exe="${BINS[$name]}"
    for t in $("$exe" --list 2>/dev/null | sed -n 's/: test$//p' | grep -E "${ONLY:-.}"); do
      say "$conf: $name::$t"
      rc=0
      start=$(date +%s)
      timeout "$TEST_TIMEOUT" "${run[@]}" "$exe" --exact "$t" --nocapture --test-threads 1 \
        >"$dir/$name--$t.log" 2>&1 || rc=$?
      echo "$name $t $rc $(( $(date +%s) - start ))" >>"$dir/results.txt"
    done
  done
done

python3 "$REPO/bench/confinement_tables.py" "$OUT" $CONFS
