#!/usr/bin/env bash
# Runs hack/TOOL/SCRIPT (build.sh unless given), which builds TOOL once and caches it outside the
# repo, under a lock of its own: `make test` builds the tools in the background while the tests
# already run, and a test asking for a tool that is being built waits for that build instead of
# starting a second one. Prints what the script prints (its last line: the path built).
# Usage: hack/tool.sh TOOL [SCRIPT]
set -euo pipefail
tool=$1 script=${2:-build.sh}
locks=${XDG_CACHE_HOME:-$HOME/.cache}/gantry/locks
mkdir -p "$locks"
exec flock "$locks/$tool-$script" "$(dirname "$0")/$tool/$script"
