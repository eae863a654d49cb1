#!/usr/bin/env bash
# The verdict census: the full ground truth K times and the real answers in
# ../shared/real-samples P times, each from an empty cache with the default admission, while
# another evaluation runs beside it; then every (task, program) whose verdict differed between
# runs, with the original harness's own repeat of those programs beside it (ORIGINAL_REPEATS).
# After each run it checks that nothing of it is left: no `bcb-<pid>-*` cgroup, no process.
# Each run's wall is printed beside its floor, max(sum of sample CPU / cores, longest job), the
# same floor with each sample's CPU counted to its reap (its exit after the verdict too), and
# the machine's floor, which counts the load's CPU during the run too.
#
# usage: bench/repeat.sh [K=3] [P=2] [parallel=nproc]
# env:   LOAD=eval (default: a `bcb evaluate --check-gt-only --subset hard` loop beside the
#        runs), cpu (one busy loop per core) or none; IDS=1,2,3 (a slice instead of every
#        task); ORIGINAL_REPEATS=3 (0: skip the original); BCB_BIN (default: this checkout's
#        release build); BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT
set -euo pipefail
read -r k passes parallel <<<"${1:-3} ${2:-2} ${3:-$(nproc)}"
. "$(dirname "$0")/lib.sh"
export DATASET=$BCB_DATASET_DIR/bigcodebench-v0.1.4.jsonl.gz
samples_dir=${BCB_REAL_SAMPLES_DIR:-$here/../shared/real-samples}
out=${BENCH_OUT:-$(mktemp -d /tmp/bcb-census.XXXXXX)}
mkdir -p "$out"
echo "$parallel" >"$out/cores"
bench_bcb_bin
bcb=$BCB_BIN
BCB_PYTHON=${BCB_PYTHON:-$("$bcb" env setup | tail -n 1)}
export BCB_PYTHON
ids=()
[ -n "${IDS:-}" ] && ids=(--ids "$IDS")

# The load beside the runs, stopped on exit.
load_pids=()
trap 'for p in "${load_pids[@]}"; do kill -- -"$p" 2>/dev/null || true; done' EXIT
case ${LOAD:-eval} in
eval)
    setsid bash -c "while :; do BCB_CACHE_DIR=$out/load-cache '$bcb' evaluate --check-gt-only --subset hard -q >/dev/null 2>&1; rm -rf $out/load-cache; done" &
    load_pids+=($!) ;;
cpu)
    for _ in $(seq "$(nproc)"); do setsid bash -c 'while :; do :; done' & load_pids+=($!); done ;;
none) ;;
esac

# What a finished run left behind: its cgroups, and harness or sample processes orphaned to
# init (the load's have a live bcb above them).
leftovers() { # pid
    local groups procs
    groups=$(find /sys/fs/cgroup -maxdepth 4 -type d -name "bcb-$1-*" 2>/dev/null | wc -l)
    procs=$(ps -eo ppid=,args= | awk '$1 == 1 && /bcb_harness.py/' | wc -l)
    echo "$groups cgroups, $procs processes"
}

# CPU seconds the load's processes have used so far (their process groups' utime + stime).
load_cpu() {
    local total=0 p t
    for p in "${load_pids[@]}"; do
        for t in $(ps -o cputimes= -g "$p" 2>/dev/null); do total=$((total + t)); done
    done
    echo "$total"
}

for i in $(seq "$k"); do
    name=gt-$i cache=$out/gt-$i-cache
    rm -rf "$cache"; mkdir -p "$cache"
    load_before=$(load_cpu)
    echo "== $name: bcb evaluate --check-gt-only --subset full --parallel $parallel" >&2
    BCB_LOG=${BCB_LOG:-warn,bcb_execute::stages=debug} BCB_CACHE_DIR=$cache /usr/bin/time -f '%e %M' -o "$out/$name.time" \
        "$bcb" evaluate --check-gt-only --subset full --parallel "$parallel" "${ids[@]}" \
        >"$out/$name.out" 2>"$out/$name.err" &
    pid=$!
    wait "$pid" || true
    echo $(($(load_cpu) - load_before)) >"$out/$name.load"
    leftovers "$pid" >"$out/$name.left"
    cp "$cache"/ground-truth/*.jsonl "$out/$name.journal.jsonl"
    rm -rf "$cache"
done

for p in $(seq "$passes"); do
    dir=$out/samples-$p
    mkdir -p "$dir"
    for f in "$samples_dir"/*-sanitized_calibrated.jsonl.gz; do
        base=$(basename "$f" .gz)
        gunzip -c "$f" >"$dir/$base"
        echo "== samples pass $p: $base" >&2
        BCB_CACHE_DIR=$dir/cache "$bcb" evaluate --split complete --subset full --no-gt \
            --parallel "$parallel" "${ids[@]}" --samples "$dir/$base" \
            >"$dir/$base.out" 2>"$dir/$base.err" || true
    done
    rm -rf "$dir/cache"
done

python3 "$here/bench/census.py" compare "$out"

repeats=${ORIGINAL_REPEATS:-3}
if [ "$repeats" -gt 0 ] && [ -s "$out/differing.jsonl" ]; then
    overlay=$("$here/bench/original-overlay.sh")
    # The original asserts that every task of the subset has a sample unless it is told
    # which tasks to evaluate.
    selected=$(python3 "$here/bench/census.py" ids "$out")
    results=()
    for r in $(seq "$repeats"); do
        dir=$out/original-$r
        mkdir -p "$dir"
        cp "$out/differing.jsonl" "$dir/differing.jsonl"
        echo "== original repeat $r on the differing programs" >&2
        (cd "$dir" && gunzip -c "$DATASET" >ds.jsonl && BIGCODEBENCH_OVERRIDE_PATH=$dir/ds.jsonl PYTHONPATH=$overlay "$BCB_PYTHON" -c \
            'import sys; from bigcodebench.evaluate import main; sys.argv[0] = "bigcodebench.evaluate"; main()' \
            --split complete --subset full --samples differing.jsonl --selective_evaluate "$selected" --no_gt --execution local \
            --parallel "$parallel" </dev/null >original.log 2>&1) || true
        results+=("$dir/differing_eval_results.json")
    done
    python3 "$here/bench/census.py" original "$out" "${results[@]}"
fi
echo "(files in $out)"
