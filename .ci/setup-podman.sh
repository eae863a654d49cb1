#!/usr/bin/env bash
# Installs Debian's podman (with runc, which image/containers.conf selects), uidmap and
# mmdebstrap for the image test (crates/bcb-cli/tests/image.rs): it builds bcb's image with
# image/build.sh from an mmdebstrap root file system (no registry needed) and runs it.
# Idempotent: a second run installs nothing. Prints the env var the test reads.
# Usage: .ci/setup-podman.sh   (root, or sudo without a password)
set -euo pipefail
# Recommends are not installed: runc is named (apt would pick crun for podman), and the
# bridge network of image builds needs netavark, aardvark-dns and iptables.
bash "$(dirname "$0")/apt-install.sh" podman runc uidmap netavark aardvark-dns iptables mmdebstrap curl
podman --version >&2
echo "BCB_PODMAN=$(command -v podman)"
