#!/usr/bin/env bash
# The sandbox's hostile-sample, escape and reward-hack suites (and the cgroup, leftovers and
# overlap tests) in a stock Debian 12 VM (systemd, cgroup v2, kernel 6.1, Landlock ABI 2): as
# root, as a user in a scope of its own with `Delegate=yes` (`systemd-run --user --scope -p
# Delegate=yes`), and as a user without a delegated cgroup; then the protection × confinement
# and attack × confinement tables of bench/confinement.sh for those columns.
# Usage: [IDENTITIES="root user user-plain"] [ONLY=REGEX] bench/vm/suites.sh VM_DIR [OUT]
#        (VM_DIR from bench/vm/build.sh; OUT default ../bench-out/vm-suites)
set -euo pipefail
cd "$(dirname "$0")/../.."
vm=${1:?usage: suites.sh VM_DIR [OUT]} out=${2:-$PWD/../bench-out/vm-suites}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cargo build -q -p bcb-cli --bin bcb
cargo test -q -p bcb-execute --test adversarial --test escapes --test reward_hacks --test leftovers --test overlap \
    -p bcb-sandbox --lib --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] != "bcb_execute":
        print(m["target"]["name"], m["executable"])' |
    sed -e 's/^bcb_sandbox \(.*\)/cgroups \1 ^cgroups::/' -e '/^cgroups /!s/$/ ./' >"$out/suites.txt"
echo "${ONLY:-}" >"$out/only.txt"
echo "${IDENTITIES:-root user user-plain}" >"$out/identities.txt"
# One task's dataset: `env check` imports only its libraries (all 139 take minutes in TCG).
python3 - "${BCB_DATASET_DIR:-$PWD/../shared/bigcodebench}/bigcodebench-v0.1.4.jsonl.gz" "$out/one-task.jsonl" <<'PY'
import gzip, sys
with gzip.open(sys.argv[1], "rt") as f, open(sys.argv[2], "w") as out:
    out.write(next(f))
PY
bash bench/vm/run.sh "$vm" "$out" bench/vm/guest-suites.sh
confs=$(for who in ${IDENTITIES:-root user user-plain}; do echo "vm-$who"; done)
python3 bench/confinement_tables.py "$out" $confs
