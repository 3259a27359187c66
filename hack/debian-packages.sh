#!/usr/bin/env bash
# Installs the Debian packages the test tools use, when missing: OpenSSH's server (not started:
# the SSH tests run their own), Chromium (the browser tests), and what the real node and
# BuildKit need (hack/node, hack/buildkit). `make test` runs it before the tools build in the
# background beside the tests, so no two apt-get runs meet.
set -euo pipefail
cd "$(dirname "$0")"
ssh/install-sshd.sh
browser/install-chromium.sh
need=()
for p in runc:/usr/sbin/runc containernetworking-plugins:/usr/lib/cni/bridge iptables:/usr/sbin/iptables \
  busybox-static:/bin/busybox bash-static:/bin/bash-static libseccomp-dev:/usr/include/seccomp.h; do
  [ -e "${p#*:}" ] || need+=("${p%%:*}")
done
[ ${#need[@]} -gt 0 ] || exit 0
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${need[@]}" >/dev/null
