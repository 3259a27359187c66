#!/usr/bin/env bash
# Runs one phase of `make test` and prints how long it took, so the suite's budget is watched
# phase by phase: hack/phase.sh NAME COMMAND...
set -uo pipefail
name=$1; shift
start=$(date +%s)
"$@"
rc=$?
echo "phase ${name}: $(( $(date +%s) - start )) s (exit ${rc})"
exit $rc
