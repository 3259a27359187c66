#!/usr/bin/env bash
# Installs Debian's Chromium for the UI's browser tests when it is missing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing Chromium (Debian package chromium)..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
