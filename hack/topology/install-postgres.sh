#!/usr/bin/env bash
# Installs Debian's PostgreSQL server for the topology tests when it is missing.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then exit 0; fi
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing PostgreSQL (Debian package postgresql)..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
# The package starts a cluster on 5432; the topology runs its own, so stop that one.
$SUDO service postgresql stop >/dev/null 2>&1 || true
