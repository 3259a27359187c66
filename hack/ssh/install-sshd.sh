#!/usr/bin/env bash
# Installs Debian's OpenSSH server for the SSH tests when it is missing. The package's own
# service is not started (a policy-rc.d refuses it for the install): the tests start their own
# sshd on loopback, with their own configuration, keys and port.
set -euo pipefail
if [ -x /usr/sbin/sshd ]; then exit 0; fi
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing OpenSSH's server (Debian package openssh-server)..." >&2
placed=
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  placed=1
fi
trap '[ -z "$placed" ] || $SUDO rm -f /usr/sbin/policy-rc.d' EXIT
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends openssh-server >/dev/null
