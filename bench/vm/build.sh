#!/usr/bin/env bash
# Builds a stock Debian 12 VM disk (systemd, cgroup v2, Debian's kernel) for bench/vm/run.sh:
# the platform most users run bcb on, which this machine kind (cgroup v1) is not.
# Usage: bench/vm/build.sh DIR   (root; about 2 minutes; DIR gets disk.img, vmlinuz, initrd.img)
# Nothing of bcb is baked in: run.sh shares the host's root read-only (9p) and a script of
# the run's own, so a new build of bcb needs no new disk.
set -euo pipefail
dir=${1:?usage: build.sh DIR}
mkdir -p "$dir"
bash "$(dirname "$0")/../../.ci/apt-install.sh" qemu-system-x86 e2fsprogs mmdebstrap >&2
# The guest's one job: mount the shares, run the script of the run, power off.
hook='cat > "$1/etc/systemd/system/bcb-vm.service" <<UNIT
[Unit]
Description=run the script bench/vm/run.sh shared in
After=local-fs.target systemd-logind.service
[Service]
Type=oneshot
StandardOutput=journal+console
StandardError=journal+console
ExecStart=/bin/sh -c "mkdir -p /host /out && mount -t 9p -o trans=virtio,version=9p2000.L,ro hostroot /host && mount -t 9p -o trans=virtio,version=9p2000.L out /out && /bin/bash /out/guest.sh > /out/guest.log 2>&1; echo guest-exit=\$? >> /out/guest.log"
ExecStartPost=/bin/systemctl poweroff
[Install]
WantedBy=multi-user.target
UNIT
chroot "$1" systemctl enable bcb-vm.service
chroot "$1" systemctl mask getty@tty1.service serial-getty@ttyS0.service
chroot "$1" useradd -m -u 1000 -s /bin/bash user
chroot "$1" loginctl enable-linger user 2>/dev/null || mkdir -p "$1/var/lib/systemd/linger" && touch "$1/var/lib/systemd/linger/user"
echo bcb-vm > "$1/etc/hostname"'
mmdebstrap --variant=minbase \
  --include=systemd,systemd-sysv,linux-image-amd64,initramfs-tools,udev,dbus,dbus-user-session,libpam-systemd,procps,kmod,python3.11 \
  --customize-hook="$hook" \
  bookworm "$dir/rootfs.tar"
tree="$dir/tree"
rm -rf "$tree" && mkdir "$tree"
tar -C "$tree" -xf "$dir/rootfs.tar"
echo '/dev/vda / ext4 rw 0 1' > "$tree/etc/fstab"
cp "$tree"/boot/vmlinuz-* "$dir/vmlinuz"
cp "$tree"/boot/initrd.img-* "$dir/initrd.img"
truncate -s 3G "$dir/disk.img"
mkfs.ext4 -q -F -d "$tree" "$dir/disk.img"
rm -rf "$tree" "$dir/rootfs.tar"
echo "built $dir/disk.img" >&2
