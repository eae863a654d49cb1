#!/usr/bin/env bash
# Verdicts on a stock Debian 12 VM (cgroup v2) against this host's, task by task: T hard tasks
# whose canonical tests take under 2 s (crates/bcb-eval/priors/gt-secs.tsv), each with its
# canonical solution and both real models' answers (../shared/real-samples), one samples file
# run by `bcb evaluate --subset hard --no-gt --no-cache` here, then in the VM as root and as a
# user in a delegated scope. Prints each run's wall and the samples whose status differs. Then,
# in the VM, bench/leftovers.sh's mixed batch (its statuses, the governor's freezes and thaws)
# and a bcb killed with SIGKILL while a sample runs (what its next start sweeps).
# Usage: [T=12] bench/vm/verdicts.sh VM_DIR [OUT]   (OUT default ../bench-out/vm-verdicts)
set -euo pipefail
cd "$(dirname "$0")/../.."
vm=${1:?usage: verdicts.sh VM_DIR [OUT]} out=${2:-$PWD/../bench-out/vm-verdicts}
mkdir -p "$out"
out=$(cd "$out" && pwd)
data=${BCB_DATASET_DIR:-$PWD/../shared/bigcodebench}
export BCB_PYTHON=${BCB_PYTHON:-$HOME/.cache/bcb/eval-env-py311/bin/python}
cargo build -q -p bcb-cli --bin bcb
python3 - "$data" "$PWD/crates/bcb-eval/priors/gt-secs.tsv" "${T:-12}" "$out/samples.jsonl" <<'PY'
import glob, gzip, json, os, sys
data, priors, t, dest = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
quick = {l.split("\t")[0] for l in open(priors) if not l.startswith("#") and float(l.split("\t")[1]) < 2}
hard = [json.loads(l)["task_id"] for l in gzip.open(os.path.join(data, "bigcodebench-hard-v0.1.4.jsonl.gz"), "rt")]
ids = [i for i in hard if i in quick][:t]
tasks = {r["task_id"]: r for r in map(json.loads, gzip.open(os.path.join(data, "bigcodebench-v0.1.4.jsonl.gz"), "rt"))}
with open(dest, "w") as out:
    for i in ids:
        out.write(json.dumps({"task_id": i, "solution": tasks[i]["complete_prompt"] + tasks[i]["canonical_solution"]}) + "\n")
    for path in sorted(glob.glob(os.path.join(data, "../real-samples/*sanitized_calibrated.jsonl.gz"))):
        for r in map(json.loads, gzip.open(path, "rt")):
            if r["task_id"] in ids:
                out.write(json.dumps({"task_id": r["task_id"], "solution": r["solution"]}) + "\n")
print(",".join(i.split("/")[1] for i in ids))
PY
ids=$(python3 -c 'import json,sys; print(",".join(sorted({json.loads(l)["task_id"].split("/")[1] for l in open(sys.argv[1])}, key=int)))' "$out/samples.jsonl")
echo "$ids" >"$out/ids.txt"
mkdir -p "$out/host"
cp "$out/samples.jsonl" "$out/host/samples.jsonl"
start=$(date +%s.%N)
BCB_CACHE_DIR="$out/host/cache" target/debug/bcb evaluate --split complete --subset hard --ids "$ids" \
    --no-gt --no-cache --parallel 2 --samples "$out/host/samples.jsonl" >"$out/host/out" 2>"$out/host/err"
echo "host: $(wc -l <"$out/samples.jsonl") samples, wall $(python3 -c "import time; print(round(time.time() - $start, 1))") s"
# The mixed batch of bench/leftovers.sh (busy loops, fork bombs, a memory bomb, answers that
# leave processes behind, correct answers): its files only, run in the VM.
BENCH_OUT="$out/batch" BCB_BIN="$PWD/target/debug/bcb" PARTS=none bash bench/leftovers.sh 0 >/dev/null
python3 - "$data/bigcodebench-v0.1.4.jsonl.gz" "$out/one-task.jsonl" <<'PY'
import gzip, sys
with gzip.open(sys.argv[1], "rt") as f, open(sys.argv[2], "w") as out:
    out.write(next(f))
PY
bash bench/vm/run.sh "$vm" "$out" bench/vm/guest-verdicts.sh
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def statuses(who):
    r = json.load(open(f"{out}/{who}/samples_eval_results.json"))["eval"]
    return {(t, i): s["status"] for t, ss in r.items() for i, s in enumerate(ss)}
host = statuses("host")
for who in ("vm-root", "vm-user"):
    try:
        vm = statuses(who)
    except OSError as e:
        print(f"{who}: no results ({e})")
        continue
    diff = [(k, host.get(k), vm.get(k)) for k in sorted(set(host) | set(vm)) if host.get(k) != vm.get(k)]
    passed = sum(s == "pass" for s in vm.values())
    print(f"{who}: {len(vm)} samples, {passed} pass (host {sum(s == 'pass' for s in host.values())}); differ: {len(diff)} {diff}")
PY
grep -h "wall" "$out"/vm-*/err | head -4
for who in vm-root vm-user; do
    [[ -f $out/$who/batch/s_eval_results.json ]] || continue
    python3 - "$out/$who/batch" "$out/batch/batch-names.json" "$who" <<'PY'
import json, sys
d, names, who = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
r = json.load(open(d + "/s_eval_results.json"))["eval"]
cells = []
for k, name in enumerate(names):
    s = r["BigCodeBench/%d" % k][0]
    why = " ".join(str(v) for v in (s.get("details") or {}).values())[:60]
    cells.append("%s %s%s" % (name, s["status"], " (%s)" % why if why else ""))
err = open(d + "/err", errors="replace").read()
print("%s batch: %s; freezes %d, thaws %d" % (who, "; ".join(cells), err.count("freezing the extra"), err.count("thawing the extra")))
PY
done
sed -n '/SIGKILL of bcb/,/(end)/p' "$out/guest.log"
