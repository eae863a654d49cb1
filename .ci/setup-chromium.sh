#!/usr/bin/env bash
# Installs headless Chromium and its WebDriver (Debian packages `chromium`, `chromium-driver`)
# for the report page test (crates/bcb-cli/tests/report_page.rs). Idempotent: does nothing
# when both binaries are already on PATH. Prints the two paths on stdout as KEY=VALUE lines.
set -euo pipefail
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends chromium chromium-driver >&2
fi
echo "BCB_CHROMIUM=$(command -v chromium)"
echo "BCB_CHROMEDRIVER=$(command -v chromedriver)"
