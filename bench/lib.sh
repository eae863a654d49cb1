# What every bench script sets up first; each sources it: . "$(dirname "$0")/lib.sh"
# It sets `here` (the checkout) and exports BCB_DATASET_DIR (default: ../shared/bigcodebench).

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BCB_DATASET_DIR=${BCB_DATASET_DIR:-$here/../shared/bigcodebench}

# bench_python: exports BCB_PYTHON (default: the eval env `bcb env setup` makes). A run with
# its own BCB_CACHE_DIR must name its eval env: it is not found in that cache.
bench_python() {
    export BCB_PYTHON=${BCB_PYTHON:-$HOME/.cache/bcb/eval-env-py311/bin/python}
}

# bench_out NAME: sets `out` to $BENCH_OUT, else a new /tmp/bcb-bench-NAME.XXXXXX, and
# creates it.
bench_out() {
    out=${BENCH_OUT:-$(mktemp -d "/tmp/bcb-bench-$1.XXXXXX")}
    mkdir -p "$out"
}

# bench_bcb_bin: keeps $BCB_BIN, else builds this checkout's release bcb and sets BCB_BIN to it.
bench_bcb_bin() {
    if [[ -z "${BCB_BIN:-}" ]]; then
        (cd "$here" && cargo build -q --release --bin bcb)
        BCB_BIN=${CARGO_TARGET_DIR:-$here/target}/release/bcb
    fi
}

# bench_setup NAME: bench_python, bench_out NAME and bench_bcb_bin, for a script that runs a
# bcb (BCB_BIN or this checkout's) in the eval env and writes to an output folder.
bench_setup() {
    bench_python
    bench_out "$1"
    bench_bcb_bin
}

# bench_bcb_env: keeps $BCB, else builds this checkout's release bcb and sets BCB to it; then
# exports BCB_PYTHON, else the eval env `$BCB env setup` makes or finds (resolved before the
# runs, which each get a fresh BCB_CACHE_DIR where it would not be found).
bench_bcb_env() {
    if [[ -z "${BCB:-}" ]]; then
        (cd "$here" && cargo build --release --quiet --bin bcb)
        BCB="$here/target/release/bcb"
    fi
    BCB_PYTHON="${BCB_PYTHON:-$("$BCB" env setup | tail -n 1)}"
    export BCB_PYTHON
}
