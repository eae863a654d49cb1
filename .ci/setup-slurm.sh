#!/usr/bin/env bash
# Installs Debian's Slurm (22.05 on Debian 12) and MUNGE for crates/bcb-cli/tests/slurm.rs,
# which starts its own one-node cluster (no systemd, config and state in a temp dir, inside a
# private network namespace). Nothing is started or enabled here. Idempotent: a second run
# installs nothing. Prints the env var the test reads.
# Usage: .ci/setup-slurm.sh   (root, or sudo without a password)
set -euo pipefail
# The packages' postinst scripts try to start services; without systemd that only warns.
bash "$(dirname "$0")/apt-install.sh" slurmctld slurmd slurm-client munge iproute2 util-linux
for bin in slurmctld slurmd munged; do
  [[ -x "/usr/sbin/$bin" ]] || { echo "error: /usr/sbin/$bin missing after install" >&2; exit 1; }
done
echo "BCB_SLURM_SBIN=/usr/sbin"
