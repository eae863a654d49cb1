#!/usr/bin/env bash
# A sweep of many samples per task, side by side: the original evaluator vs bcb with dedup and
# the verdict cache on, with both off, and a second "checkpoint" against the warm cache.
# Prints wall, CPU (user+sys), peak RSS (/usr/bin/time -v), executions run and saved, whether
# the bcb variants agree verdict for verdict, and their agreement with the original.
#
# The sweep: bench/make-sweep.py (hard subset, n samples per task drawn from the two real
# models in ../shared/real-samples with harmless comment variants); seed 0 is checkpoint A,
# seed 1 checkpoint B (most programs shared).
#
# usage: bench/sweep.sh [n] [parallel]
# env:   BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT (results dir), BCB_BIN (a bcb binary; default:
#        cargo build --release), BENCH_ORIGINAL=0 skips the original (~30 min on 2 cores),
#        BENCH_ORIGINAL_RESULTS=FILE uses an existing original *_eval_results.json of
#        checkpoint A instead of running it, BENCH_IDS=1,2,3 limits bcb to those tasks (a
#        quick check of the script). Run it on an otherwise idle machine.
set -euo pipefail
n=${1:-10}
parallel=${2:-$(nproc)}
. "$(dirname "$0")/lib.sh"
bench_setup sweep
name() { echo "sweep-$1--main--bigcodebench-hard-complete--bench-0-$n-sanitized_calibrated.jsonl"; }

# One directory per variant, each with its own copy of the samples (result files land beside).
make_variant() { # variant seed
    mkdir -p "$out/$1"
    python3 "$here/bench/make-sweep.py" "$out/$1/$(name "$3")" --n "$n" --seed "$2" \
        --shared "$BCB_DATASET_DIR/.." >&2
}

# timed LABEL DIR CMD...: runs CMD in DIR under /usr/bin/time -v; keeps stdout, stderr, time.
timed() {
    local label=$1 dir=$2
    shift 2
    echo "== $label" >&2
    (cd "$dir" && /usr/bin/time -v -o "$out/$label.time" "$@" >"$out/$label.out" 2>"$out/$label.err") ||
        { echo "$label failed; see $out/$label.err" >&2; tail -5 "$out/$label.err" >&2; }
}

cache=$out/cache # a fresh verdict cache: the first bcb run is cold
rm -rf "$cache"
bcb=(env BCB_CACHE_DIR="$cache" "$BCB_BIN" evaluate --no-gt --parallel "$parallel" -q)
[[ -n "${BENCH_IDS:-}" ]] && bcb+=(--ids "$BENCH_IDS")

make_variant on 0 a
make_variant plain 0 a
make_variant warm 1 b
timed bcb-on "$out/on" "${bcb[@]}" --samples "$(name a)"
timed bcb-plain "$out/plain" "${bcb[@]}" --samples "$(name a)" --no-dedup --no-cache
timed bcb-warm "$out/warm" "${bcb[@]}" --samples "$(name b)"

orig_results=${BENCH_ORIGINAL_RESULTS:-}
if [[ -z "$orig_results" && "${BENCH_ORIGINAL:-1}" != 0 ]]; then
    overlay=$("$here/bench/original-overlay.sh")
    make_variant original 0 a
    gunzip -c "$BCB_DATASET_DIR/bigcodebench-hard-v0.1.4.jsonl.gz" >"$out/original/ds.jsonl"
    timed original "$out/original" env BIGCODEBENCH_OVERRIDE_PATH="$out/original/ds.jsonl" \
        PYTHONPATH="$overlay" "$BCB_PYTHON" -c \
        'import sys; from bigcodebench.evaluate import main; sys.argv[0] = "bigcodebench.evaluate"; main()' \
        --split complete --subset hard --samples "$(name a)" --execution local --no_gt \
        --parallel "$parallel"
    orig_results=$out/original/$(name a | sed 's/\.jsonl$/_eval_results.json/')
fi

"$BCB_PYTHON" - "$out" "$(name a)" "$(name b)" "$orig_results" <<'PY'
import json, os, re, sys
out, a, b, orig = sys.argv[1:5]
res = lambda d, s: os.path.join(out, d, s.replace(".jsonl", "_eval_results.json"))

def time_of(label):
    p = os.path.join(out, label + ".time")
    if not os.path.exists(p):
        return None
    t = open(p).read()
    num = lambda key: float(re.search(re.escape(key) + r":\s*([\d.]+)", t).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", t).group(1).split(":")
    secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))
    cpu = num("User time (seconds)") + num("System time (seconds)")
    rss = num("Maximum resident set size (kbytes)") / 1024
    return secs, cpu, rss

def statuses(path):
    if not path or not os.path.exists(path):
        return None
    ev = json.load(open(path))["eval"]
    return {(t, i): (r["status"], r["solution"]) for t, rows in ev.items() for i, r in enumerate(rows)}

def executions(label):
    p = os.path.join(out, label + ".out")
    if not os.path.exists(p):
        return ""
    m = re.search(r"executions: (.*)", open(p).read())
    return m.group(1) if m else "(executions line missing)"

rows = [("original", "original"), ("bcb dedup+cache (cold)", "bcb-on"),
        ("bcb --no-dedup --no-cache", "bcb-plain"), ("bcb checkpoint B, warm cache", "bcb-warm")]
base = time_of("original")
print(f"{'run':30s} {'wall s':>8s} {'CPU s':>8s} {'peak RSS MB':>12s} {'vs original':>12s}  executions")
for title, label in rows:
    t = time_of(label)
    if t is None:
        continue
    ratio = f"{base[0] / t[0]:.2f}x" if base and label != "original" else ""
    print(f"{title:30s} {t[0]:8.1f} {t[1]:8.1f} {t[2]:12.1f} {ratio:>12s}  {executions(label)}")

on, plain, warm = statuses(res("on", a)), statuses(res("plain", a)), statuses(res("warm", b))
if on and plain:
    diff = [k for k in on if on[k][0] != plain.get(k, (None,))[0]]
    print(f"checkpoint A: dedup+cache vs plain: {len(on) - len(diff)}/{len(on)} verdicts equal"
          + (f"; differ: {sorted(diff)[:10]}" if diff else ""))
if warm and plain:
    # Checkpoint B's programs that checkpoint A also has: their plain verdicts must match.
    by_program = {(t, sol): st for (t, _), (st, sol) in plain.items()}
    shared = [(k, v) for k, v in warm.items() if (k[0], v[1]) in by_program]
    diff = [k for k, v in shared if by_program[(k[0], v[1])] != v[0]]
    print(f"checkpoint B (warm) vs A's plain verdicts of the same programs: "
          f"{len(shared) - len(diff)}/{len(shared)} equal ({len(warm) - len(shared)} programs new in B)")
orig_st = statuses(orig) if orig else None
if orig_st:
    for title, d in (("dedup+cache", on), ("plain", plain)):
        if d:
            same = sum(1 for k in d if orig_st.get(k, (None,))[0] == d[k][0])
            print(f"agreement with the original ({title}): {same}/{len(d)}")
PY
echo "files: $out" >&2
