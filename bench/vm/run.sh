#!/usr/bin/env bash
# Boots the Debian 12 VM of bench/vm/build.sh (QEMU's TCG: a KVM guest hangs at boot on this
# machine kind; `-cpu max`: the eval env's wheels use AVX2, which qemu64 lacks) and runs
# GUEST_SCRIPT in it as root, then powers it off. The host's root is shared read-only at /host
# (bcb's builds, the eval env, the dataset: bench/vm/guest-lib.sh binds them at their host
# paths), OUT read-write at /out; the guest's log is OUT/guest.log.
# Usage: bench/vm/run.sh VM_DIR OUT GUEST_SCRIPT [MEM_MB=4096]
set -euo pipefail
vm=${1:?usage: run.sh VM_DIR OUT GUEST_SCRIPT [MEM_MB]} out=${2:?OUT} script=${3:?GUEST_SCRIPT}
mem=${4:-4096}
mkdir -p "$out"
cp "$script" "$out/guest.sh"
cp "$(dirname "$0")/guest-lib.sh" "$out/guest-lib.sh"
# The host's trees the guest binds at their own paths: the eval env, the interpreter it was
# made from (pyvenv.cfg's `home`), this checkout (its builds and tests), the dataset.
venv=$(cd "$(dirname "${BCB_PYTHON:-$HOME/.cache/bcb/eval-env-py311/bin/python}")/.." && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
cat >"$out/host.env" <<ENV
HOST_VENV=$venv
HOST_BASE_PY=$(cd "$(sed -n 's/^home = //p' "$venv/pyvenv.cfg")/.." && pwd)
HOST_REPO=$repo
HOST_DATA=$(cd "${BCB_DATASET_DIR:-$repo/../shared/bigcodebench}" && pwd)
ENV
rm -f "$out/guest.log"
# The disk is the build's, copied: each run starts from the stock system.
cp --sparse=always "$vm/disk.img" "$out/disk.img"
start=$(date +%s)
timeout 3h qemu-system-x86_64 -accel tcg -cpu max -m "$mem" -smp "$(nproc)" \
    -kernel "$vm/vmlinuz" -initrd "$vm/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 quiet" \
    -drive "file=$out/disk.img,if=virtio,format=raw" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on \
    -virtfs "local,path=$out,mount_tag=out,security_model=none" \
    -nographic -no-reboot >"$out/console.log" 2>&1 || true
rm -f "$out/disk.img"
echo "vm: $(( $(date +%s) - start )) s of wall; $(tail -1 "$out/guest.log" 2>/dev/null)" >&2
