#!/usr/bin/env bash
# From a fresh clone to the README main command's first result, as a newcomer gets it:
#   git clone → cargo build --release → bcb env setup → bcb evaluate --check-gt-only --subset hard
# each step timed (wall, and user+sys CPU beside it: on a shared machine the wall includes the
# wait for a core), with an empty target dir, an empty bcb cache (no ground truth cached) and a
# new eval env. Crates already in ~/.cargo are reused (a newcomer downloads them; set
# BENCH_CARGO_HOME=fresh to include the download). Run it on a quiet machine.
#
# usage: bench/fresh-clone.sh [REPO]    (default: this checkout's committed HEAD)
# env:   BCB_DATASET_DIR (default ../shared/bigcodebench: the build embeds the dataset from it),
#        BENCH_OUT (scratch folder), BENCH_CARGO_HOME=fresh (empty cargo home: crate downloads
#        included), BENCH_ENV=reuse (keep the existing eval env: the build and the run only).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
repo=${1:-$here}
export BCB_DATASET_DIR=${BCB_DATASET_DIR:-$here/../shared/bigcodebench}
out=${BENCH_OUT:-$(mktemp -d /tmp/bcb-bench-fresh.XXXXXX)}
mkdir -p "$out"
export CARGO_TARGET_DIR=$out/target BCB_CACHE_DIR=$out/cache
[[ "${BENCH_ENV:-}" == reuse ]] || export BCB_ENV_DIR=$out/eval-env
[[ "${BENCH_CARGO_HOME:-}" == fresh ]] && export CARGO_HOME=$out/cargo-home
rm -rf "$out/bcb" "$CARGO_TARGET_DIR" "$BCB_CACHE_DIR"

total_wall=0
step() { # label command...
    local label=$1
    shift
    echo "== $label: $*" >&2
    /usr/bin/time -f '%e %U %S %M' -o "$out/$label.time" "$@" >"$out/$label.out" 2>"$out/$label.err" ||
        { echo "$label failed; see $out/$label.err" >&2; tail -20 "$out/$label.err" >&2; exit 1; }
    read -r wall user sys rss <"$out/$label.time"
    total_wall=$(echo "$total_wall + $wall" | bc -l)
    printf '| %s | %.0f | %.0f | %.0f |\n' "$label" "$wall" "$(echo "$user + $sys" | bc -l)" "$total_wall"
}
printf '| step | wall s | CPU s (user+sys) | wall since clone s |\n|---|---:|---:|---:|\n'
step clone git clone --quiet "$repo" "$out/bcb"
cd "$out/bcb"
step build cargo build --release --locked
bcb=$CARGO_TARGET_DIR/release/bcb
step env-setup "$bcb" env setup
export BCB_PYTHON="$(tail -n 1 "$out/env-setup.out")"
step check-gt "$bcb" evaluate --check-gt-only --subset hard
ls -l "$bcb" | awk '{printf "binary: %.1f MB\n", $5 / 1e6}'
echo "cores: $(nproc); files in $out" >&2
