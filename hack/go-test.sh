#!/usr/bin/env bash
# The go-test phase of `make test`: go test -race over the module, the e2e package in a process
# of its own beside the other packages (compiled while they run). With GANTRY_E2E_SHARDS=2 the
# e2e package, most of the suite's time, runs as two shards of its tests at once: each shard a
# process with its own Temporal server, control plane and tools, the real node (one
# per machine) used by one shard only. That is for machines with cores to spare: on 2 cores
# the CPU-heavy groups of the two shards (the scale tests, the pending-list tests, the browser
# tests) starve each other and tests time out, so 1 is the default.
# Timings go to OUT/go-test.json (gotestsum), the slowest tests are listed at the end.
# Usage: hack/go-test.sh OUT
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(realpath "$1")
GO=${GO:-go}
module=$($GO list -m)
# With two shards, the node shard: the files whose tests run containers on the real node or on
# build machines, with the scale tests and other slow groups beside them, about half the
# package's time (`make test` lists the slowest tests to rebalance by); every other e2e test is
# in the other shard, where a test that reaches for the real node fails at once, naming this.
node_files="ci_test ci_build_test ci_status_test containers_test machines_test kill_test failures_test ssh_test terraform_test scale_test"
names() { for f in $node_files; do grep -ho '^func Test[A-Za-z0-9_]*' "e2e/$f.go"; done | sed 's/^func //' | paste -sd'|'; }
node="^($(names))\$"
flags=(-race -count=1 -timeout 85m)
run() { # NAME ARGS...: gotestsum into OUT/NAME.json
  local name=$1; shift
  $GO tool gotestsum --format standard-quiet --jsonfile "$out/$name.json" "$@"
}
pkgs=$($GO list ./... | grep -v "^$module/e2e\$")
run units -- "${flags[@]}" -artifacts -outputdir "$out" $pkgs & units=$!
# The e2e test binary, built while the other packages compile and run.
rc=0
if $GO test -c "${flags[@]:0:1}" -o "$out/e2e.test" ./e2e; then
  shard() { # NAME SELECTION...
    local name=$1; shift
    (cd e2e && run "e2e-$name" --raw-command -- $GO tool test2json -t -p "$module/e2e" "$out/e2e.test" \
      -test.v=test2json -test.paniconexit0 -test.count=1 -test.timeout=85m -test.artifacts -test.outputdir="$out" "$@")
  }
  if [ "${GANTRY_E2E_SHARDS:-1}" = 2 ]; then
    GANTRY_E2E_SHARD=node shard node -test.run "$node" & a=$!
    GANTRY_E2E_SHARD=rest shard rest -test.skip "$node" & b=$!
    wait $a || rc=1
    wait $b || rc=1
  else
    shard all || rc=1
  fi
else
  rc=1
fi
wait $units || rc=1
cat "$out"/units.json "$out"/e2e-*.json > "$out/go-test.json" 2>/dev/null
exit $rc
