#!/usr/bin/env bash
# Installs Debian's Slurm (22.05 on Debian 12) and MUNGE for crates/bcb-cli/tests/slurm.rs,
# which starts its own one-node cluster (no systemd, config and state in a temp dir, inside a
# private network namespace). Nothing is started or enabled here. Idempotent: a second run
# installs nothing. Prints the env var the test reads.
# Usage: .ci/setup-slurm.sh   (root, or sudo without a password)
set -euo pipefail
pkgs=(slurmctld slurmd slurm-client munge iproute2 util-linux)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "error: installing ${missing[*]} needs root (or sudo)" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "installing ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -qq >&2
  # The packages' postinst scripts try to start services; without systemd that only warns.
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
for bin in slurmctld slurmd munged; do
  [[ -x "/usr/sbin/$bin" ]] || { echo "error: /usr/sbin/$bin missing after install" >&2; exit 1; }
done
echo "BCB_SLURM_SBIN=/usr/sbin"
