# Guest side of bench/vm/suites.sh: in each identity of IDENTITIES, `bcb env check --json` and
# every test of the suites (/out/suites.txt: "name path regex" lines; /out/only.txt narrows
# to a regex of test names), each test alone,
# written as bench/confinement.sh writes a confinement (/out/vm-<identity>/), so that
# bench/confinement_tables.py prints the VM's columns beside the containers'.
. /out/guest-lib.sh
bind_host_paths
wait_user_manager
export BCB_REQUIRE_PYTHON=1 BCB_OFFLINE=1 BCB_ESCAPE_VISIBLE_DIR=/var/tmp/bcb-escape
TEST_TIMEOUT=${TEST_TIMEOUT:-900}
run_as() {
    case "$1" in
        root) env BCB_REQUIRE_PYTHON=1 BCB_OFFLINE=1 BCB_ESCAPE_VISIBLE_DIR=/var/tmp/bcb-escape "${@:2}" ;;
        user) as_delegated_user env BCB_REQUIRE_PYTHON=1 BCB_OFFLINE=1 BCB_ESCAPE_VISIBLE_DIR=/var/tmp/bcb-escape-user "${@:2}" ;;
        user-plain) as_user env BCB_REQUIRE_PYTHON=1 BCB_OFFLINE=1 BCB_ESCAPE_VISIBLE_DIR=/var/tmp/bcb-escape-plain "${@:2}" ;;
    esac
}
only=$(cat /out/only.txt 2>/dev/null || true)
for who in $(cat /out/identities.txt); do
    dir=/out/vm-$who
    # With a narrowing regex the earlier results stay (the tables take each test's last run).
    mkdir -p "$dir"
    [[ -n $only ]] || : >"$dir/results.txt"
    echo "[$(date +%T)] $who: env check"
    run_as "$who" "$BCB" env check --json --dataset /out/one-task.jsonl >"$dir/env-check.json" 2>"$dir/env-check.err"
    grep -h '"platform"' -A12 "$dir/env-check.json" | tr -d '\n' | head -c 600; echo
    while read -r name exe regex; do
        for t in $("$exe" --list 2>/dev/null | sed -n 's/: test$//p' | grep -E "$regex" | grep -E "${only:-.}"); do
            start=$(date +%s) rc=0
            timeout "$TEST_TIMEOUT" bash -c "$(declare -f run_as as_user as_delegated_user user_env); run_as $who $exe --exact $t --nocapture --test-threads 1" \
                >"$dir/$name--$t.log" 2>&1 || rc=$?
            echo "$name $t $rc $(( $(date +%s) - start ))" | tee -a "$dir/results.txt"
        done
    done </out/suites.txt
done
