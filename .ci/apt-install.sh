#!/usr/bin/env bash
# Installs the Debian packages named that are not installed yet (no recommends), as root or
# through sudo; installs nothing when all are there. What the apt setups (.ci/setup-slurm.sh,
# .ci/setup-podman.sh) share. Output goes to stderr: their stdout is for KEY=VALUE lines.
# Usage: bash .ci/apt-install.sh PACKAGE...
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "error: installing ${missing[*]} needs root (or sudo)" >&2; exit 1; }
  sudo=(sudo)
fi
echo "installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
