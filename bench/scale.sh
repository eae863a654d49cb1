#!/usr/bin/env bash
# How the orchestrator grows with the number of samples: plan → session → sinks with the
# scripted executor (nothing runs; bcb-eval example `scale`), one process per size, over the
# full dataset's 1,140 tasks (canonical solutions with a distinct comment: real program sizes,
# no duplicates; half pass, 40% fail with a traceback, 10% time out). Prints a table:
#
#   jobs | CPU s | CPU µs/job | wall s | read s | peak RSS MB | RSS-base / samples | samples MB |
#   results write s | results MB | journal s
#
# CPU is what the orchestrator costs (user + sys of the process, from reading the samples file
# to the result files written): it must stay flat per job. `RSS-base / samples` is the peak
# resident set above the dataset-only baseline divided by the samples file's size: it must stay
# flat too (memory grows no faster than the samples). Wall times include the disk's syncs and,
# on a shared machine, the wait for a core: the CPU column is the floor beside them.
#
# usage: bench/scale.sh [JOBS...]            (default: 10000 100000 1000000)
# env:   BCB_DATASET_DIR (folder of bigcodebench-v0.1.4.jsonl.gz; default ../shared/bigcodebench),
#        BENCH_OUT (scratch folder; the 1M samples file is ~1.7 GB, its results ~2 GB).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_out scale
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(10000 100000 1000000)
(cd "$here" && cargo build -q --release -p bcb-eval --example scale)
bin=${CARGO_TARGET_DIR:-$here/target}/release/examples/scale

printf '| jobs | CPU s | CPU µs/job | wall s | read s | peak RSS MB | RSS-base / samples | samples MB | results write s | results MB | journal s |\n'
printf '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for n in "${sizes[@]}"; do
    dir=$out/$n
    mkdir -p "$dir"
    rm -rf "$dir/gt-cache.jsonl"
    # A first run writes the samples file (not timed); the measured run reuses it.
    [[ -n "$(ls "$dir"/scale-"$n"--*.jsonl 2>/dev/null)" ]] || "$bin" "$n" "$dir" >/dev/null 2>&1
    rm -rf "$dir/gt-cache.jsonl"
    start=$(date +%s.%N)
    line=$("$bin" "$n" "$dir" 2>"$dir/stderr")
    end=$(date +%s.%N)
    # jobs read_s session_s cpu_s cpu_us_per_job peak_rss base_rss samples_mb results_s results_mb journal_s passk_s
    read -r jobs read_s session_s cpu_s cpu_us peak base samples_mb results_s results_mb journal_s _ <<<"$line"
    wall=$(echo "$end - $start" | bc -l)
    ratio=$(echo "($peak - $base) / $samples_mb" | bc -l)
    printf '| %s | %.1f | %.0f | %.1f | %.1f | %.0f | %.2f | %.0f | %.1f | %.0f | %.1f |\n' \
        "$jobs" "$cpu_s" "$cpu_us" "$wall" "$read_s" "$peak" "$ratio" "$samples_mb" "$results_s" "$results_mb" "$journal_s"
done
echo "files in $out (delete when done: the 1M run leaves ~4 GB)" >&2
