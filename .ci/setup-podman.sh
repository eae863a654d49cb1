#!/usr/bin/env bash
# Installs Debian's podman (with runc, which image/containers.conf selects), uidmap and
# mmdebstrap for the image test (crates/bcb-cli/tests/image.rs): it builds bcb's image with
# image/build.sh from an mmdebstrap root file system (no registry needed) and runs it.
# Idempotent: a second run installs nothing. Prints the env var the test reads.
# Usage: .ci/setup-podman.sh   (root, or sudo without a password)
set -euo pipefail
# Recommends are not installed: runc is named (apt would pick crun for podman), and the
# bridge network of image builds needs netavark, aardvark-dns and iptables.
pkgs=(podman runc uidmap netavark aardvark-dns iptables mmdebstrap curl)
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
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
podman --version >&2
echo "BCB_PODMAN=$(command -v podman)"
