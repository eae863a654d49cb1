#!/usr/bin/env bash
# Submits an N-way bcb evaluation: an array job of N shards (shard.sbatch) and a merge job
# (merge.sbatch) that starts only if every shard succeeded (afterok; with
# --kill-on-invalid-dep a failed shard cancels it instead of leaving it pending).
# Prints "ARRAY_JOB_ID MERGE_JOB_ID".
#
# usage: SAMPLES=run.jsonl examples/slurm/submit.sh N [sbatch options for both jobs...]
#   e.g. SAMPLES=$PWD/x.jsonl BCB=$HOME/bin/bcb examples/slurm/submit.sh 8 --partition=cpu
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n="${1:?usage: submit.sh N [sbatch options...]}"
shift
if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: N must be a positive number, got '$n'" >&2
  exit 2
fi
array=$(sbatch --parsable --array="0-$((n - 1))" "$@" "$here/shard.sbatch")
array="${array%%;*}" # --parsable prints "id[;cluster]"
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes "$@" "$here/merge.sbatch")
echo "${array} ${merge%%;*}"
