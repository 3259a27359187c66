#!/usr/bin/env bash
# `make run-topology`: starts the production topology as processes (PostgreSQL, `gantry temporal`,
# two workers, `gantry server` as API tier; see hack/topology/topology.sh), runs an example
# pipeline on it and stops it. KEEP=1 leaves it running (stop: hack/topology/topology.sh down DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${DIR:-.gantry/topology}
hack/topology/topology.sh down "$DIR" >/dev/null 2>&1 || true
rm -rf "$DIR"
hack/topology/topology.sh up "$DIR"
[ "${KEEP:-}" = 1 ] || trap 'hack/topology/topology.sh down "$DIR"' EXIT
. "$DIR/env"
bin/gantry run examples/02-build-test-deploy.yaml --address "127.0.0.1:$TEMPORAL_PORT" --data-dir "$DIR/client" --logs "$@"
for w in worker-1 worker-2; do
  echo "$w: $(grep -c '"gantry.ShellScript"\|ShellScript' "$DIR/$w.log" 2>/dev/null || true) log lines about steps; metrics on http://127.0.0.1:$((METRICS_PORT + ${w#worker-} - 1))/metrics"
done
