#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium (/usr/bin/chromium) for the viewer's browser tests.
# Idempotent: does nothing when /usr/bin/chromium already exists. Needs root (or sudo).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "ci-chromium: /usr/bin/chromium present ($(/usr/bin/chromium --version 2>/dev/null || echo unknown version))"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y chromium fonts-dejavu-core
/usr/bin/chromium --version
