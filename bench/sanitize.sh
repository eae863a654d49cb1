#!/usr/bin/env bash
# Time to sanitize N (default 10,000) generated answers: bcb vs the original sanitizer
# (bigcodebench 0.2.5 sanitize.py, CPython + tree-sitter), both on one thread, same inputs.
# Also times the whole `bcb sanitize` command on the same answers as a samples file.
# Needs the dataset ($BCB_DATASET_DIR, default ../shared/bigcodebench) and PyPI access
# the first time (.ci/setup-sanitize.sh makes the original's venv).
# Usage: bench/sanitize.sh [N]      The original takes ~10-15 minutes for 10,000 answers.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-10000}"
export BCB_DATASET_DIR="${BCB_DATASET_DIR:-$(cd "$(dirname "$0")/.." && pwd)/../shared/bigcodebench}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
PY="${BCB_UPSTREAM_PYTHON:-$(.ci/setup-sanitize.sh)}"
cargo build --release -q -p bcb-sanitize --example sanitize_bench
cargo build --release -q -p bcb-cli
BIN="$CARGO_TARGET_DIR/release"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$BIN/examples/sanitize_bench" gen "$N" "$WORK/answers.jsonl"
echo "answers: $N ($(du -h "$WORK/answers.jsonl" | cut -f1)), generated from $BCB_DATASET_DIR"
ours="$("$BIN/examples/sanitize_bench" time "$WORK/answers.jsonl" 2>/dev/null)"
echo "bcb (library, 1 thread):      ${ours} s"
t0=$(date +%s.%N)
"$BIN/bcb" sanitize --samples "$WORK/answers.samples.jsonl" --parallel 1 >/dev/null
t1=$(date +%s.%N)
cli=$(python3 -c "print(f'{$t1 - $t0:.3f}')")
echo "bcb sanitize (CLI, 1 thread): ${cli} s  (includes loading the dataset and writing the file)"
theirs="$("$PY" crates/bcb-sanitize/tests/upstream_driver.py --bench "$WORK/answers.jsonl")"
echo "original (sanitize.py):       ${theirs} s"
python3 -c "print(f'speed-up: {$theirs / $ours:.0f}x (library), {$theirs / $cli:.0f}x (CLI)')"
