# Sourced by the guest scripts of bench/vm: the host's trees at their host paths (read-only),
# a user with a systemd user manager, and `as_user` / `as_delegated_user` to run as it.
# The host's paths come from /out/host.env (bench/vm/run.sh writes it).
bind_host_paths() {
    . /out/host.env
    chmod 711 /root
    for p in "$HOST_BASE_PY" "$HOST_VENV" "$HOST_REPO" "$HOST_DATA"; do
        mkdir -p "$p" && mount --bind "/host$p" "$p"
    done
    export BCB_PYTHON=$HOST_VENV/bin/python BCB_DATASET_DIR=$HOST_DATA
    export BCB_CACHE_DIR=/tmp/bcb-cache BCB=$HOST_REPO/target/debug/bcb
    mkdir -p /tmp/bcb-cache && chmod 1777 /tmp/bcb-cache
}
# The user's manager (lingering, started at boot) takes a few seconds under TCG.
wait_user_manager() {
    for _ in $(seq 120); do
        [[ -S /run/user/1000/bus ]] && return 0
        sleep 1
    done
    echo "no user manager" >&2
}
user_env() {
    echo "XDG_RUNTIME_DIR=/run/user/1000 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus HOME=/home/user BCB_PYTHON=$BCB_PYTHON BCB_DATASET_DIR=$BCB_DATASET_DIR BCB_CACHE_DIR=/tmp/bcb-cache-user"
}
# As the user in a plain session (its cgroup is not delegated to it).
as_user() { runuser -u user -- env $(user_env) "$@"; }
# As the user in a scope of its own manager with `Delegate=yes` (what docs/sandbox.md says to run).
as_delegated_user() { runuser -u user -- env $(user_env) systemd-run --user --scope --quiet -p Delegate=yes "$@"; }
# The suites re-run themselves as `nobody` with the system's `python3` (as the containers of
# bench/confinement.sh do).
ln -sf python3.11 /usr/bin/python3
