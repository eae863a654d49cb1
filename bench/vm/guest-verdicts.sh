# Guest side of bench/vm/verdicts.sh: the samples of /out/samples.jsonl as root and as a user in
# a delegated scope, each into /out/vm-<who>/.
. /out/guest-lib.sh
bind_host_paths
wait_user_manager
ids=$(cat /out/ids.txt)
for who in root user; do
    dir=/out/vm-$who
    mkdir -p "$dir" && cp /out/samples.jsonl "$dir/" && chown -R 1000 "$dir"
    echo "[$(date +%T)] $who"
    cmd=("$BCB" evaluate --split complete --subset hard --ids "$ids" --no-gt --no-cache --parallel 2 --samples "$dir/samples.jsonl")
    if [[ $who == root ]]; then "${cmd[@]}" >"$dir/out" 2>"$dir/err"; else as_delegated_user "${cmd[@]}" >"$dir/out" 2>"$dir/err"; fi
    echo "[$(date +%T)] $who: rc $?; $(grep -h 'wall' "$dir/err" | tail -1)"
done
# bench/leftovers.sh's mixed batch, its time limit raised for TCG (the correct answers take
# about 3 s of a host core), memory capped below the VM's 4 GB.
for who in root user; do
    dir=/out/vm-$who/batch
    mkdir -p "$dir" && cp /out/batch/batch.jsonl "$dir/s.jsonl" && chown -R 1000 /out/vm-$who
    echo "[$(date +%T)] $who: the mixed batch"
    cmd=(env BCB_LOG=bcb_execute=debug,bcb_pool=debug BIGCODEBENCH_TIMEOUT_PER_TASK=90 "$BCB" evaluate
        --dataset /out/batch/work-task.jsonl --split complete --subset full --no-gt --no-cache
        --parallel 2 --tamper-policy off --memory-limit 1024 --samples "$dir/s.jsonl")
    if [[ $who == root ]]; then "${cmd[@]}" >"$dir/out" 2>"$dir/err"; else as_delegated_user "${cmd[@]}" >"$dir/out" 2>"$dir/err"; fi
    echo "[$(date +%T)] $who: rc $?; $(grep -h 'wall' "$dir/err" | tail -1); slot cgroups left: $(find /sys/fs/cgroup -name 'bcb-[0-9]*' -type d | wc -l)"
done
# A bcb killed with SIGKILL while a sample sleeps in its slot's cgroup: what stays, and what
# the next bcb's start sweeps (root: the hierarchy's root; a user's scope is systemd's to end).
printf '%s\n' '{"task_id": "BigCodeBench/13", "solution": "import time\ndef task_func(*args, **kwargs):\n    time.sleep(600)\n"}' >/out/sleeper.jsonl
slots() { for d in "$1"/bcb-[0-9]*; do [[ -d $d ]] && echo "$(basename "$d"): $(wc -l <"$d/cgroup.procs") processes, frozen $(grep -c 'frozen 1' "$d/cgroup.events")"; done; }
echo "[$(date +%T)] root: SIGKILL of bcb"
"$BCB" evaluate --split complete --subset hard --ids 13 --no-gt --no-cache --parallel 2 --samples /out/sleeper.jsonl >/out/sigkill.out 2>&1 &
bcb_pid=$!
# The sample is in its slot's cgroup once it started (the supervisor stays out).
for _ in $(seq 300); do
    [[ -n $(slots /sys/fs/cgroup | grep -v ': 0 processes') ]] && break
    sleep 1
done
sleep 20
echo "before the kill:"; slots /sys/fs/cgroup
kill -9 "$bcb_pid"; sleep 10
echo "10 s after the kill:"; slots /sys/fs/cgroup
"$BCB" env check --dataset /out/one-task.jsonl >/dev/null 2>&1
echo "after the next bcb's start:"; slots /sys/fs/cgroup; echo "(end)"
