#!/usr/bin/env bash
# Client overhead of `bcb generate`: requests/s through the whole pipeline against a loopback
# stub, the client pinned to ONE core (the stub runs on another). Target: > 1,000 requests/s.
# Usage: bench/generate-overhead.sh [samples per task (default 5)]
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-5}"
: "${BCB_DATASET_DIR:?set BCB_DATASET_DIR to the folder of bigcodebench-*.jsonl.gz}"
cargo build --release -q -p bcb-generate --features testing --example overhead
BIN="${CARGO_TARGET_DIR:-target}/release/examples/overhead"
CORES=$(nproc)
SERVER_CPU=$(( CORES > 1 ? 1 : 0 ))
coproc STUB { taskset -c "$SERVER_CPU" "$BIN" serve; }
read -r URL <&"${STUB[0]}"
trap 'kill "$STUB_PID" 2>/dev/null || true' EXIT
echo "stub at $URL (cpu $SERVER_CPU); client on cpu 0"
taskset -c 0 "$BIN" client "$URL" "$N"
taskset -c 0 "$BIN" client "$URL" "$N" --fsync
