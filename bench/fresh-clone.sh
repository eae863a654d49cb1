#!/usr/bin/env bash
# From a fresh clone to the README main command's first result, as a newcomer gets it:
#   git clone → bcb-pyenv setup --background (the eval env installs while bcb builds) →
#   cargo build --release → bcb evaluate --check-gt-only --subset hard (waits for the env).
# BENCH_SEQUENTIAL=1 runs the old order (build → env setup → evaluate) for comparison. Each
# step is timed (wall, and user+sys CPU beside it: on a shared machine the wall includes the
# wait for a core), with an empty target dir, an empty bcb cache (no ground truth cached) and a
# new eval env from empty uv/pip caches. Crates already in ~/.cargo are reused (a newcomer
# downloads them; set BENCH_CARGO_HOME=fresh to include the download). Run it on a quiet machine.
#
# usage: bench/fresh-clone.sh [REPO]    (default: this checkout's committed HEAD)
# env:   BCB_DATASET_DIR (default ../shared/bigcodebench: the build embeds the dataset from it),
#        BENCH_OUT (scratch folder), BENCH_CARGO_HOME=fresh (empty cargo home: crate downloads
#        included), BENCH_ENV=reuse (keep the existing eval env: the build and the run only).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
repo=${1:-$here}
bench_out fresh
export CARGO_TARGET_DIR=$out/target BCB_CACHE_DIR=$out/cache
if [[ "${BENCH_ENV:-}" != reuse ]]; then
    # A new eval env from empty uv and pip caches: every wheel downloaded, as a newcomer's is.
    export BCB_ENV_DIR=$out/eval-env UV_CACHE_DIR=$out/uv-cache PIP_NO_CACHE_DIR=1
    rm -rf "$BCB_ENV_DIR" "$BCB_ENV_DIR.lock" "$BCB_ENV_DIR.setup.log" "$UV_CACHE_DIR"
fi
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
clone_start=$(date +%s)
step clone git clone --quiet "$repo" "$out/bcb"
cd "$out/bcb"
bcb=$CARGO_TARGET_DIR/release/bcb
env_dir=${BCB_ENV_DIR:-$BCB_CACHE_DIR/eval-env-py311}
if [[ "${BENCH_SEQUENTIAL:-}" == 1 ]]; then
    step build cargo build --release --locked
    step env-setup "$bcb" env setup
else
    # The README's main command, split into its steps.
    step env-background cargo run --quiet --release --locked -p bcb-pyenv -- setup --background
    step build cargo build --release --locked
fi
step check-gt "$bcb" evaluate --check-gt-only --subset hard
if [[ -f "$env_dir/.bcb-env-lock" ]]; then
    # When the background install finished, counted from the clone's start.
    printf 'eval env ready %.0f s after the clone started\n' \
        "$(echo "$(stat -c %Y "$env_dir/.bcb-env-lock") - $clone_start" | bc -l)"
fi
ls -l "$bcb" | awk '{printf "binary: %.1f MB\n", $5 / 1e6}'
echo "cores: $(nproc); files in $out" >&2
