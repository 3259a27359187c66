#!/usr/bin/env bash
# `make run-topology`: starts the production topology as processes (PostgreSQL, `gantry temporal`,
# two workers, `gantry server` as API tier; see hack/topology/topology.sh), runs an example
# pipeline on it, shows which worker ran each step, and stops it. KEEP=1 leaves it running
# (stop it with hack/topology/topology.sh down .gantry/topology).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${DIR:-.gantry/topology}
hack/topology/topology.sh down "$DIR" >/dev/null 2>&1 || true
rm -rf "$DIR"
hack/topology/topology.sh up "$DIR"
[ "${KEEP:-}" = 1 ] || trap 'hack/topology/topology.sh down "$DIR"' EXIT
. "$DIR/env"
status=0
bin/gantry run examples/02-build-test-deploy.yaml --address "127.0.0.1:$TEMPORAL_PORT" --data-dir "$DIR/client" "$@" || status=$?
echo
for w in worker-1 worker-2; do
  for f in $(find "$DIR/$w/logs" -name '*.log' 2>/dev/null | sort); do
    echo "$w ran $(basename "$(dirname "$f")") $(basename "$f" .log):"
    sed 's/^/    /' "$f"
  done
done
exit $status
