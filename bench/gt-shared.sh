#!/usr/bin/env bash
# Two models evaluated at once on a fresh cache (the real answers of Hermes-2-Theta and Phi-4
# in ../shared/real-samples/, on one subset), with this checkout's `bcb` and optionally with a
# baseline `bcb` binary, one pair after the other on the same machine: each run's wall, the
# pair's, how many canonical solutions each ran, the ground-truth cache's records, pass@1,
# and the floor the pair's wall is set against: max(the CPU of every job the pair executed /
# cores, the longest ground-truth job + the longest samples job: a run's samples start after
# its ground truth), from the cost line each phase prints.
#
# usage: bench/gt-shared.sh [hard|full] [parallel]
# env:   BASELINE_BCB=path/to/older/bcb (optional), BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT
set -euo pipefail
subset=${1:-hard}
parallel=${2:-$(nproc)}
. "$(dirname "$0")/lib.sh"
export BCB_ENV_DIR=${BCB_ENV_DIR:-$HOME/.cache/bcb/eval-env-py311}
bench_setup gt-shared
real=${BCB_REAL_SAMPLES_DIR:-$here/../shared/real-samples}

# The two models' answers to the subset's tasks, as samples files.
python3 - "$BCB_DATASET_DIR" "$subset" "$real" "$out" <<'PY'
import glob, gzip, json, os, sys
data, subset, real, out = sys.argv[1:]
name = "bigcodebench-hard-v0.1.4.jsonl.gz" if subset == "hard" else "bigcodebench-v0.1.4.jsonl.gz"
path = next(iter(glob.glob(os.path.join(data, "**", name), recursive=True)))
ids = {json.loads(l)["task_id"] for l in gzip.open(path, "rt")}
for model, stem in (("hermes", "NousResearch--Hermes"), ("phi", "microsoft--Phi")):
    src = next(iter(glob.glob(os.path.join(real, stem + "*_calibrated.jsonl.gz"))))
    with open(os.path.join(out, model + ".jsonl"), "w") as f:
        for line in gzip.open(src, "rt"):
            if json.loads(line)["task_id"] in ids:
                f.write(line)
PY

pair() { # name binary
    local name=$1 bin=$2 dir="$out/$1"
    rm -rf "$dir"; mkdir -p "$dir/cache"
    cp "$out/hermes.jsonl" "$out/phi.jsonl" "$dir/"
    echo "== $name: two of $bin evaluate --subset $subset --parallel $parallel at once" >&2
    local t0 t1
    head -1 /proc/stat >"$dir/stat0"
    t0=$(date +%s.%N)
    for model in hermes phi; do
        BCB_CACHE_DIR="$dir/cache" /usr/bin/time -f '%e' -o "$dir/$model.time" \
            "$bin" evaluate --split complete --subset "$subset" --parallel "$parallel" \
            --samples "$dir/$model.jsonl" >"$dir/$model.out" 2>"$dir/$model.err" &
    done
    wait
    t1=$(date +%s.%N)
    head -1 /proc/stat >"$dir/stat1"
    echo "$t0 $t1" >"$dir/pair.time"
}

[ -n "${BASELINE_BCB:-}" ] && pair baseline "$BASELINE_BCB"
pair current "$BCB_BIN"

python3 - "$out" "$parallel" <<'PY'
import glob, json, os, re, sys
out, cores = sys.argv[1], int(sys.argv[2])
cost = re.compile(r"^(ground truth|evaluate): (\d+) run, wall [\d.]+s; .* of CPU ([\d.]+)s; longest ([\d.]+)s")
walls = {}
for name in ("baseline", "current"):
    d = os.path.join(out, name)
    if not os.path.isdir(d):
        continue
    t0, t1 = map(float, open(os.path.join(d, "pair.time")).read().split())
    cpu = 0.0
    longest = {"ground truth": 0.0, "evaluate": 0.0}
    line = f"{name:9s} pair wall {t1 - t0:6.1f}s"
    for model in ("hermes", "phi"):
        err = open(os.path.join(d, model + ".err")).read().splitlines()
        gt_run = sum(int(m.group(2)) for m in map(cost.match, err) if m and m.group(1) == "ground truth")
        for m in filter(None, map(cost.match, err)):
            cpu += float(m.group(3))
            longest[m.group(1)] = max(longest[m.group(1)], float(m.group(4)))
        wall = float(open(os.path.join(d, model + ".time")).read().split()[-1])
        waited = any("waiting for it" in l for l in err)
        pk = json.load(open(os.path.join(d, model + "_pass_at_k.json")))["pass@1"]
        line += f" | {model}: wall {wall:6.1f}s, ground truth run {gt_run}{' (waited)' if waited else ''}, pass@1 {pk:.4f}"
    cache = glob.glob(os.path.join(d, "cache", "ground-truth", "*.jsonl"))
    records = sum(1 for _ in open(cache[0])) - 1 if cache else 0
    # The machine's idle share over the pair (/proc/stat's idle + iowait).
    j0, j1 = ([int(x) for x in open(os.path.join(d, f"stat{i}")).read().split()[1:9]] for i in (0, 1))
    delta = [b - a for a, b in zip(j0, j1)]
    idle = (delta[3] + delta[4]) / max(sum(delta), 1)
    line += f" | machine idle {100 * idle:.1f}%"
    chain = longest["ground truth"] + longest["evaluate"]
    floor = max(cpu / cores, chain)
    walls[name] = t1 - t0
    print(line)
    print(f"{'':9s} cache records {records}; CPU of every job executed {cpu:.1f}s ({cpu / cores:.1f}s over {cores} cores), "
          f"longest ground-truth + samples job {chain:.1f}s: floor {floor:.1f}s, pair wall / floor {(t1 - t0) / floor:.2f}")
if len(walls) == 2:
    print(f"current / baseline pair wall {walls['current'] / walls['baseline']:.3f}")
print(f"(files in {out})")
PY
