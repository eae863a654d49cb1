#!/usr/bin/env bash
# Several samples files, one run: the two real models of ../shared/real-samples evaluated in one
# `bcb evaluate --samples A B` vs two invocations, side by side (wall, CPU, peak RSS, executions
# saved), and whether each file's verdicts are the same both ways. No verdict cache (each run
# gets a fresh one), so only the shared ground truth, the one pool and dedup differ.
#
# usage: bench/many-files.sh [subset] [parallel]
# env:   BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT, BCB_BIN (default: cargo build --release),
#        BENCH_IDS=1,2,3 limits the tasks (a quick check of the script).
set -euo pipefail
subset=${1:-full}
parallel=${2:-$(nproc)}
. "$(dirname "$0")/lib.sh"
bench_python
out=${BENCH_OUT:-$(mktemp -d /tmp/bcb-bench-many.XXXXXX)}
mkdir -p "$out"/{one,separate}
bench_bcb_bin
files=()
for gz in "$BCB_DATASET_DIR"/../real-samples/*sanitized_calibrated.jsonl.gz; do
    f=$(basename "$gz" .gz)
    for d in one separate; do gunzip -c "$gz" >"$out/$d/$f"; done
    files+=("$f")
done
base=(evaluate --subset "$subset" --parallel "$parallel" -q --no-cache)
[[ -n "${BENCH_IDS:-}" ]] && base+=(--ids "$BENCH_IDS")

timed() { # label dir args...
    local label=$1 dir=$2
    shift 2
    echo "== $label" >&2
    (cd "$dir" && BCB_CACHE_DIR=$out/cache-$label /usr/bin/time -v -o "$out/$label.time" \
        "$BCB_BIN" "${base[@]}" "$@" >"$out/$label.out" 2>"$out/$label.err") ||
        { echo "$label failed; see $out/$label.err" >&2; tail -5 "$out/$label.err" >&2; }
}
timed one "$out/one" --samples "${files[@]}"
for i in "${!files[@]}"; do
    # Each invocation on its own: its own ground truth too (no shared cache).
    timed "separate-$i" "$out/separate" --samples "${files[$i]}"
done

python3 - "$out" "${files[@]}" <<'PY'
import json, os, re, sys
out, files = sys.argv[1], sys.argv[2:]
def t(label):
    s = open(os.path.join(out, label + ".time")).read()
    num = lambda k: float(re.search(re.escape(k) + r":\s*([\d.]+)", s).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", s).group(1).split(":")
    return (sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall))),
            num("User time (seconds)") + num("System time (seconds)"),
            num("Maximum resident set size (kbytes)") / 1024)
one = t("one")
sep = [t(f"separate-{i}") for i in range(len(files))]
print(f"{'run':28s} {'wall s':>8s} {'CPU s':>8s} {'peak RSS MB':>12s}")
print(f"{'one invocation, all files':28s} {one[0]:8.1f} {one[1]:8.1f} {one[2]:12.1f}")
print(f"{'separate invocations (sum)':28s} {sum(s[0] for s in sep):8.1f} {sum(s[1] for s in sep):8.1f} {max(s[2] for s in sep):12.1f}")
print(f"speed-up (wall): {sum(s[0] for s in sep) / one[0]:.2f}x")
for line in re.findall(r"executions: .*", open(os.path.join(out, "one.out")).read()):
    print("one invocation:", line)
for f in files:
    r = lambda d: {k: [x["status"] for x in v] for k, v in json.load(open(os.path.join(out, d, f.replace(".jsonl", "_eval_results.json"))))["eval"].items()}
    a, b = r("one"), r("separate")
    same = sum(1 for k in a if a[k] == b.get(k))
    print(f"{f[:60]}: {same}/{len(a)} tasks with equal verdicts")
PY
echo "files: $out" >&2
