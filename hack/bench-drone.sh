#!/usr/bin/env bash
# The non-durable peer of BenchmarkShortSteps: drone-runner-exec running pipelines of 20 and
# 100 sequential `true` steps, printed as benchmark lines for hack/bench-ratios.sh.
# drone-runner-exec is built in a scratch module under ~/.cache (it is for measuring only, not
# a dependency of gantry). Usage: bench-drone.sh [RUNS_PER_COUNT] [COUNT]; bench-drone.sh --bin
# builds it if needed and prints its path (BenchmarkShortSteps runs it between its own runs).
set -euo pipefail
VERSION=v1.0.0-beta.10
RUNS=${1:-10}; COUNT=${2:-3}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/gantry/drone/$VERSION
BIN=$CACHE/drone-runner-exec
if [ ! -x "$BIN" ]; then
  mkdir -p "$CACHE/src"
  (cd "$CACHE/src" && { [ -f go.mod ] || go mod init scratch >/dev/null 2>&1; } &&
    GOFLAGS=-mod=mod go get "github.com/drone-runners/drone-runner-exec@$VERSION" >/dev/null 2>&1 &&
    GOFLAGS=-mod=mod go build -o "$BIN" github.com/drone-runners/drone-runner-exec) >&2
fi
if [ "$RUNS" = --bin ]; then echo "$BIN"; exit 0; fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/root"
for n in 20 100; do
  { printf 'kind: pipeline\ntype: exec\nname: default\nclone:\n  disable: true\n\nsteps:\n'
    for i in $(seq 1 "$n"); do printf -- '- name: s%d\n  commands:\n  - true\n' "$i"; done; } > "$WORK/p$n.yml"
  "$BIN" exec "$WORK/root" "$WORK/p$n.yml" > "$WORK/out" 2>&1 || { cat "$WORK/out" >&2; exit 1; }
  [ "$(grep -c '+ true' "$WORK/out")" = "$n" ] || { echo "drone-runner-exec did not run $n steps" >&2; cat "$WORK/out" >&2; exit 1; }
done
# As BenchmarkShortSteps: the two sizes alternate; the median run of each and the median over
# the pairs of (T100 - T20) / 80.
now() { date +%s%N; }
for c in $(seq 1 "$COUNT"); do
  : > "$WORK/times"
  for i in $(seq 1 "$RUNS"); do
    t0=$(now); "$BIN" exec "$WORK/root" "$WORK/p20.yml" > /dev/null 2>&1
    t1=$(now); "$BIN" exec "$WORK/root" "$WORK/p100.yml" > /dev/null 2>&1
    t2=$(now); echo "$((t1 - t0)) $((t2 - t1))" >> "$WORK/times"
  done
  awk -v r="$RUNS" '
    function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } return a[int((n + 1) / 2)] }
    { a[NR] = $1 / 1e6; b[NR] = $2 / 1e6; m[NR] = ($2 - $1) / 80 / 1e6 }
    END { printf "BenchmarkDroneExec-2 \t%d\t%.2f ms/run-20\t%.2f ms/run-100\t%.4f ms/step-marginal\n", r, med(a, NR), med(b, NR), med(m, NR) }' "$WORK/times"
done
